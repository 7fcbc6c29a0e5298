// SPDX-License-Identifier: MIT
// Pins the loader's core-scheduling keys: host.core_scheduling (none | cookie | core), the
// host.core_sched variant presets and switches, group cookies, host.sched_gran, and that every
// bad value is refused naming file, line, column and field (the CLI turns it into exit 2).
#include <gtest/gtest.h>

#include <string>

#include "app/scenario.h"
#include "app/yaml_reader.h"
#include "loader_support.h"

namespace vcpusim::app {
namespace {

using test::error_of;
using test::load;

// Line 1 topology, 2-4 host (4: the key under test), then two groups.
std::string scenario(const std::string& host_extra, const std::string& topology = "desktop-4c8t",
                     const std::string& group_extra = "", const std::string& policy = "credit2") {
  return "topology: " + topology + "\nhost:\n  scheduler: {policy: " + policy + "}\n" + host_extra +
         "vms:\n  - {name: a, vcpus: 2" + group_extra + ", workload: {kind: sysbench-cpu, threads: 2}}\n"
         "  - {name: b, vcpus: 3, workload: {kind: sysbench-cpu, threads: 3}}\n";
}

using CS = hv::CoreSchedParams;

}  // namespace

TEST(CoreSchedulingLoader, NoneIsTheDefault) {
  const ScenarioSpec s = load(scenario(""));
  EXPECT_FALSE(s.host.core_sched.enabled);
  EXPECT_FALSE(s.host.sched_gran.core);
  EXPECT_EQ(load(scenario("  core_scheduling: none\n")).host.core_sched.enabled, false);
}

TEST(CoreSchedulingLoader, CookieTakesThePresetAndEverySwitch) {
  ScenarioSpec s = load(scenario("  core_scheduling: cookie\n"));
  EXPECT_TRUE(s.host.core_sched.enabled);
  EXPECT_EQ(s.host.core_sched.compare, CS::Compare::kFiSnapshot) << "mainline by default";
  s = load(scenario("  core_scheduling: cookie\n  core_sched: {variant: aaron-full}\n"));
  EXPECT_EQ(s.host.core_sched.compare, CS::Compare::kNaive);
  EXPECT_EQ(s.host.core_sched.tick, CS::Tick::kFullSlice);
  s = load(scenario("  core_scheduling: cookie\n  core_sched: {variant: csc, compare: fi_budget, tie: prefer_max, "
                    "tick: half_slice, fi_slice: 12ms, fi_allowance: 3ms, wake: cookie_aware, balance: refuse}\n"));
  EXPECT_EQ(s.host.core_sched.compare, CS::Compare::kFiBudget);
  EXPECT_EQ(s.host.core_sched.tie, CS::Tie::kPreferMax);
  EXPECT_EQ(s.host.core_sched.tick, CS::Tick::kHalfSlice);
  EXPECT_EQ(s.host.core_sched.fi_slice, sim::ms(12));
  EXPECT_EQ(s.host.core_sched.fi_allowance, sim::ms(3));
  EXPECT_TRUE(s.host.core_sched.wake_cookie_aware);
  EXPECT_EQ(s.host.core_sched.balance, CS::Balance::kRefuse);
}

TEST(CoreSchedulingLoader, CookiesPerVmPerTaskNoneAndGroupOverrides) {
  ScenarioSpec s = load(scenario("  core_scheduling: cookie\n"));
  EXPECT_EQ(s.groups[0].instances[0].cookie, 1u);
  EXPECT_EQ(s.groups[1].instances[0].cookie, 2u);
  s = load(scenario("  core_scheduling: cookie\n  core_sched: {cookies: none}\n"));
  EXPECT_EQ(s.groups[0].instances[0].cookie, 0u);
  EXPECT_EQ(s.groups[1].instances[0].cookie, 0u);
  // A group's cookie: overrides the assignment (0 = untagged). This once was lost silently.
  s = load(scenario("  core_scheduling: cookie\n", "desktop-4c8t", ", cookie: 0"));
  EXPECT_EQ(s.groups[0].instances[0].cookie, 0u);
  EXPECT_EQ(s.groups[1].instances[0].cookie, 1u);
  s = load(scenario("  core_scheduling: cookie\n", "desktop-4c8t", ", cookie: 7"));
  EXPECT_EQ(s.groups[0].instances[0].cookie, 7u);
  // per-task gives each bare-metal task its own cookie.
  s = load("topology: one-core-ht\nhost:\n  core_scheduling: cookie\n  core_sched: {cookies: per-task}\n"
           "baremetal:\n  - {name: t, workload: {kind: sysbench-cpu, threads: 2}}\n");
  ASSERT_EQ(s.groups[0].instances[0].cookies.size(), 2u);
  EXPECT_NE(s.groups[0].instances[0].cookies[0], s.groups[0].instances[0].cookies[1]);
}

TEST(CoreSchedulingLoader, BareMetalProgramsOfSeveralProcessesNameEachTasksProcess) {
  // mutilate on bare metal runs memcached (4 server threads) and the clients (T threads) as two
  // processes: every task carries its process, with or without core scheduling, and cfs task
  // groups follow it (each process its own cgroup). A VM's and a one-process program's tasks
  // carry none.
  const ScenarioSpec s = load("topology: desktop-4c8t\nhost: {scheduler: {policy: cfs, cgroups: per-domain}}\n"
                              "vms:\n  - {name: vm, vcpus: 2, workload: {kind: mutilate, threads: 2}}\n"
                              "baremetal:\n  - {name: bm, workload: {kind: mutilate, threads: 3}}\n"
                              "  - {name: cpu, workload: {kind: sysbench-cpu, threads: 2}}\n");
  EXPECT_TRUE(s.groups[0].instances[0].processes.empty());
  EXPECT_EQ(s.groups[1].instances[0].processes, (std::vector<std::uint32_t>{0, 0, 0, 0, 1, 1, 1}));
  EXPECT_TRUE(s.groups[2].instances[0].processes.empty());
}

TEST(CoreSchedulingLoader, CookieBadValuesNameTheirLineAndField) {
  EXPECT_NE(error_of(scenario("  core_scheduling: cookies\n")).find("t.yaml:4:20: host.core_scheduling:"), std::string::npos)
      << error_of(scenario("  core_scheduling: cookies\n"));
  const std::string var = error_of(scenario("  core_scheduling: cookie\n  core_sched: {variant: aaron-4th}\n"));
  EXPECT_NE(var.find("t.yaml:5:25: host.core_sched.variant: unknown core scheduling variant 'aaron-4th'"), std::string::npos) << var;
  for (const char* bad : {"compare: fair", "tie: prefer_none", "tick: always", "wake: eager", "balance: hard",
                          "cookies: per-thread", "fi_slice: 10us", "fi_allowance: 20s", "stallfix: on"}) {
    const std::string e = error_of(scenario(std::string("  core_scheduling: cookie\n  core_sched: {") + bad + "}\n"));
    const std::string key = std::string(bad).substr(0, std::string(bad).find(':'));
    EXPECT_NE(e.find("t.yaml:5:"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("host.core_sched." + key), std::string::npos) << bad << ": " << e;
  }
  const std::string no_cookie = error_of(scenario("  core_sched: {variant: csc}\n"));
  EXPECT_NE(no_cookie.find("t.yaml:4:15: host.core_sched: host.core_sched needs host.core_scheduling: cookie"), std::string::npos)
      << no_cookie;
  // One reason for one mistake, whatever the value: cookie: -1 said "out of range", 5 "unknown key".
  for (const char* value : {"1", "-1"}) {
    const std::string group = error_of(scenario("", "desktop-4c8t", std::string(", cookie: ") + value));
    EXPECT_NE(group.find("t.yaml:5:"), std::string::npos) << group;
    EXPECT_NE(group.find("vms[0].cookie: a cookie needs host.core_scheduling: cookie"), std::string::npos) << group;
  }
}

// Each of these was accepted and then ran as if not given: a cookie on a host where no core has
// two threads (Linux's PR_SCHED_CORE answers -ENODEV there), and a core_sched length under a
// variant without the mechanism it sizes.
TEST(CoreSchedulingLoader, SettingsWithNothingToActOnAreRefused) {
  struct Case {
    std::string text, where, what;
  };
  const std::vector<Case> cases{
      {scenario("  smt: off\n  core_scheduling: cookie\n"), "t.yaml:5:20: host.core_scheduling:", "needs host.smt: on"},
      {scenario("  core_scheduling: cookie\n", "{sockets: 1, cores_per_socket: 4, threads_per_core: 1, nodes: 1}"),
       "t.yaml:4:20: host.core_scheduling:", "one thread per core"},
      // csc (v3 as benchmarked) has no tick fix, so nothing counts a slice.
      {scenario("  core_scheduling: cookie\n  core_sched: {variant: csc, fi_slice: 12ms}\n"),
       "t.yaml:5:40: host.core_sched.fi_slice:", "has no effect with tick: none"},
      {scenario("  core_scheduling: cookie\n  core_sched: {variant: aaron-3rd, tick: none, fi_slice: 12ms}\n"),
       "t.yaml:5:58: host.core_sched.fi_slice:", "has no effect with tick: none"},
      // Under cfs the tick fixes count the task's own sched_slice (Cfs::forced_idle_tick).
      {scenario("  core_scheduling: cookie\n  core_sched: {variant: aaron-3rd, fi_slice: 12ms}\n", "desktop-4c8t", "",
                "cfs"),
       "t.yaml:5:46: host.core_sched.fi_slice:", "has no effect under policy cfs"},
      // Only Tim's second patch (csc-tim: fi_budget) has an idle allowance.
      {scenario("  core_scheduling: cookie\n  core_sched: {variant: tim, fi_allowance: 3ms}\n"),
       "t.yaml:5:44: host.core_sched.fi_allowance:", "has no effect with compare: fi_time"},
      {scenario("  core_scheduling: cookie\n  core_sched: {fi_allowance: 3ms}\n"),
       "t.yaml:5:30: host.core_sched.fi_allowance:", "has no effect with compare: fi_snapshot"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.where), std::string::npos) << c.text << "\n-> " << e;
    EXPECT_NE(e.find(c.what), std::string::npos) << c.text << "\n-> " << e;
  }
  // Where the mechanism is there, the lengths are taken.
  EXPECT_EQ(load(scenario("  core_scheduling: cookie\n  core_sched: {variant: aaron-3rd, fi_slice: 12ms}\n"))
                .host.core_sched.fi_slice,
            sim::ms(12));
  EXPECT_EQ(load(scenario("  core_scheduling: cookie\n  core_sched: {variant: csc-tim, fi_allowance: 3ms}\n"))
                .host.core_sched.fi_allowance,
            sim::ms(3));
  // smt: off alone (a nosmt column beside cookie columns) stays valid: only the pair is refused.
  EXPECT_NO_THROW(load(scenario("  smt: off\n")));
}

TEST(CoreSchedulingLoader, CoreTakesTheRendezvous) {
  ScenarioSpec s = load(scenario("  core_scheduling: core\n"));
  EXPECT_TRUE(s.host.sched_gran.core);
  EXPECT_FALSE(s.host.core_sched.enabled);
  EXPECT_EQ(s.host.sched_gran.rendezvous, sim::us(2));
  s = load(scenario("  core_scheduling: core\n  sched_gran: {rendezvous: 5us}\n"));
  EXPECT_EQ(s.host.sched_gran.rendezvous, sim::us(5));
  EXPECT_TRUE(load(scenario("  core_scheduling: core\n", "desktop-4c8t", "", "rr")).host.sched_gran.core);
}

TEST(CoreSchedulingLoader, CoreBadValuesNameTheirLineAndField) {
  struct Case {
    std::string text, where, what;
  };
  const std::vector<Case> cases{
      {scenario("  core_scheduling: core\n", "desktop-4c8t", "", "cfs"), "t.yaml:4:20: host.core_scheduling:",
       "needs a Xen-style policy"},
      {scenario("  smt: off\n  core_scheduling: core\n"), "t.yaml:5:20: host.core_scheduling:", "needs host.smt: on"},
      {scenario("  core_scheduling: core\n", "{sockets: 1, cores_per_socket: 4, threads_per_core: 1, nodes: 1}"),
       "t.yaml:4:20: host.core_scheduling:", "one thread per core"},
      {scenario("  sched_gran: {rendezvous: 1us}\n"), "t.yaml:4:15: host.sched_gran:", "needs host.core_scheduling: core"},
      {scenario("  core_scheduling: core\n  sched_gran: {rendezvous: 2ms}\n"), "t.yaml:5:28: host.sched_gran.rendezvous:",
       "out of range"},
      {scenario("  core_scheduling: core\n  sched_gran: {rendevous: 1us}\n"), "t.yaml:5:16: host.sched_gran.rendevous:",
       "unknown key"},
      {scenario("  core_scheduling: core\n  core_sched: {variant: csc}\n"), "t.yaml:5:15: host.core_sched:",
       "needs host.core_scheduling: cookie"},
      // desktop-4c8t: thread 4 is core 0's second thread; a unit's affinity is read at first threads.
      {scenario("  core_scheduling: core\n", "desktop-4c8t", ", affinity: {hard: 'cpus:[4-7]'}"), "t.yaml:6:",
       "share no core's first thread"},
      // Xen keeps one affinity per unit, the last vCPU's: pinning vCPU 0 to core 0 and vCPU 1 to
      // core 1 ran the unit where the two masks meet (nowhere, refused) or, in Xen, on core 1.
      {scenario("  core_scheduling: core\n", "desktop-4c8t",
                ", affinity: {per_vcpu: [{hard: 'cpus:[0-1]'}, {hard: 'cpus:[1-2]'}]}"),
       "t.yaml:6:", "vCPUs 0-1 of a form one unit, which Xen gives one affinity"},
      {scenario("  core_scheduling: core\n", "desktop-4c8t",
                ", affinity: {per_vcpu: [{soft: 'cpus:[0]'}, {soft: 'cpus:[1]'}]}"),
       "t.yaml:6:", "vCPUs 0 and 1 differ at the cores' first threads"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.where), std::string::npos) << c.text << "\n-> " << e;
    EXPECT_NE(e.find(c.what), std::string::npos) << c.text << "\n-> " << e;
  }
  // A master thread names its whole core: pinning to thread 0 is a unit on core 0.
  EXPECT_NO_THROW(load(scenario("  core_scheduling: core\n", "desktop-4c8t", ", affinity: {hard: 'cpus:[0]'}")));
  // The same core named by either thread is the same unit affinity.
  EXPECT_NO_THROW(load(scenario("  core_scheduling: core\n", "desktop-4c8t",
                                ", affinity: {per_vcpu: [{hard: 'cpus:[0]'}, {hard: 'cpus:[0,4]'}]}")));
}

// Keys after an `affinity: {hard: ...}` are read: a reader assignment once overwrote the VM's
// mapping with its hard-affinity text, so `memory:` and `cookie:` behind it were lost.
TEST(CoreSchedulingLoader, KeysAfterAHardAffinityAreRead) {
  const ScenarioSpec s = load(
      "topology: xeon-x5570-2s\nhost:\n  core_scheduling: cookie\nvms:\n"
      "  - {name: a, vcpus: 1, affinity: {hard: 'cpus:[0]'}, memory: {placement: node:1}, cookie: 5, "
      "workload: {kind: sysbench-cpu}}\n");
  EXPECT_DOUBLE_EQ(s.groups[0].instances[0].memory_on_node[1], 1.0);
  EXPECT_EQ(s.groups[0].instances[0].cookie, 5u);
}

}  // namespace vcpusim::app
