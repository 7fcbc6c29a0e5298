// SPDX-License-Identifier: MIT
// Xen core-granular co-scheduling (hypervisor/sched_unit.h, sched-gran=core): a unit's vCPUs
// start and stop together, a core never holds two units, idle and absent vCPUs leave their
// threads idle (never to another VM), credit is per unit, and every core decision costs the
// running vCPUs the rendezvous (reference ../shared/reference/xen-credit2.md section 8).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "guest/guest_os.h"
#include "guest/program.h"
#include "hypervisor/host.h"
#include "hypervisor/sched_unit.h"
#include "hypervisor/trace_sink.h"
#include "sim/sim_time.h"
#include "test_host.h"

namespace vcpusim {
namespace {

using hv::VcpuId;
using test::FakeGuest;
using test::TestHost;

hv::HostSpec units(sim::Duration rendezvous = sim::us(2)) {
  hv::HostSpec h;
  h.sched_gran.core = true;
  h.sched_gran.rendezvous = rendezvous;
  return h;
}

/// Records every run_begin / run_end as (time, vCPU), for whole-run checks.
class SwitchLog final : public hv::TraceSink {
 public:
  using hv::TraceSink::instant;
  std::vector<std::tuple<sim::Time, VcpuId, bool>> events;  // (t, v, begin)
  void run_begin(hv::PcpuId, VcpuId v, sim::Time t) override { events.emplace_back(t, v, true); }
  void run_end(hv::PcpuId, VcpuId v, sim::Time t) override { events.emplace_back(t, v, false); }
  void instant(std::string_view, VcpuId, hv::PcpuId, sim::Time) override {}
};

/// Checks, now, that every core runs vCPUs of one unit only.
void expect_one_unit_per_core(hv::Host& h, const topo::Topology& t) {
  const hv::UnitView& u = *h.units();
  for (hv::PcpuId p = 0; p < t.num_threads(); ++p) {
    const VcpuId a = h.pcpu(p).curr;
    if (a == hv::kIdle) continue;
    for (hv::PcpuId s : t.smt_list(p)) {
      const VcpuId b = h.pcpu(s).curr;
      if (b != hv::kIdle) {
        ASSERT_EQ(u.unit_of(a), u.unit_of(b)) << "core of pCPU " << p << " at " << h.now();
        ASSERT_EQ(h.vcpu(a).domain, h.vcpu(b).domain);
      }
    }
  }
}

// Hogs never block, so every vCPU of a unit is runnable all the time: each switch of one of them
// must be a switch of all of them at the same instant. 3 VMs of 2 vCPUs and one of 4 on two
// cores (2x overcommit), credit2, 2 s; every run_begin and run_end is checked.
TEST(SchedUnit, VcpusOfAUnitStartAndStopTogether) {
  TestHost h(test::two_cores_ht(), units(), 1, "credit2");
  std::vector<TestHost::Vm> vms;
  for (std::uint32_t i = 0; i < 3; ++i) vms.push_back(h.add_fake(test::vm("v" + std::to_string(i), 2)));
  vms.push_back(h.add_fake(test::vm("w", 4)));
  SwitchLog log;
  h.host().set_trace(&log);
  h.start();
  for (auto& vm : vms)
    for (VcpuId v : vm.vcpus) {
      h.fake().set_plan(v, FakeGuest::hog());
      h.fake().kick(v);
    }
  h.run_sampled(sim::seconds(2), sim::ms(1), [&] { expect_one_unit_per_core(h.host(), h.topology()); });
  h.host().check_conservation();

  const hv::UnitView& u = *h.host().units();
  EXPECT_EQ(u.num_units(), 5u);
  // Per (instant, unit, begin/end): the vCPUs that switched.
  std::map<std::tuple<sim::Time, VcpuId, bool>, std::set<VcpuId>> by_unit;
  for (const auto& [t, v, begin] : log.events) by_unit[{t, u.unit_of(v), begin}].insert(v);
  std::size_t switches = 0;
  for (const auto& [key, vs] : by_unit) {
    const VcpuId unit = std::get<1>(key);
    EXPECT_EQ(vs.size(), 2u) << "unit " << unit << (std::get<2>(key) ? " started" : " stopped") << " at "
                             << std::get<0>(key) << " with only part of its vCPUs";
    ++switches;
  }
  EXPECT_GT(switches, 200u) << "the units must actually time-share the cores";
}

// Mixed blocking workloads at 2x overcommit on the 4-core desktop for 20 s: checked every
// millisecond here, and by the framework's one-unit-per-core / unit-together invariants after
// every core decision and thread-local switch (a violation throws).
TEST(SchedUnit, ACoreNeverHoldsTwoUnits) {
  hv::HostSpec hs = units();
  topo::TopologySpec desk = test::two_cores_ht();
  desk.cores_per_socket = 4;
  TestHost h(desk, hs, 3, "credit2");
  for (int i = 0; i < 4; ++i) h.add_vm(test::vm("cpu" + std::to_string(i), 3), test::workload("sysbench-cpu", {{"threads", 3}}));
  for (int i = 0; i < 2; ++i) h.add_vm(test::vm("mem" + std::to_string(i), 2), test::workload("sysbench-memory", {{"threads", 1}}));
  h.start();
  h.run_sampled(sim::seconds(20), sim::ms(1), [&] { expect_one_unit_per_core(h.host(), h.topology()); });
  h.host().check_conservation();
  EXPECT_GT(h.host().rendezvous(), 10'000u);
  // The 3-vCPU VMs have a half-empty second unit, and the 2-vCPU ones a blocked vCPU: threads
  // idle in units.
  for (hv::DomainId d = 0; d < 6; ++d) EXPECT_GT(h.host().domain_forced_idle(d), 0) << d;
}

// One VM of 3 hog vCPUs alone on one core: units {0,1} and {2, none} take turns, each about half
// the time (equal credit per unit), and while the second runs thread 1 idles in the unit, so the
// VM's idle-in-unit time is half the run.
TEST(SchedUnit, OddVcpuCountLeavesTheLastUnitsSecondThreadIdle) {
  TestHost h(test::one_core_ht(), units(), 1, "credit2");
  auto a = h.add_fake(test::vm("a", 3));
  h.start();
  for (VcpuId v : a.vcpus) {
    h.fake().set_plan(v, FakeGuest::hog());
    h.fake().kick(v);
  }
  h.run_until(sim::seconds(2));
  hv::Host& host = h.host();
  const double T = static_cast<double>(host.measured());
  ASSERT_EQ(host.units()->num_units(), 2u);
  for (VcpuId v : a.vcpus) EXPECT_NEAR(static_cast<double>(host.vcpu_stats(v).running) / T, 0.5, 0.02) << v;
  EXPECT_NEAR(static_cast<double>(host.domain_forced_idle(a.id)) / T, 0.5, 0.02);
  EXPECT_NEAR(static_cast<double>(host.pcpu_forced_idle(1)) / T, 0.5, 0.02);
  EXPECT_EQ(host.pcpu_forced_idle(0), 0);
  host.check_conservation();
}

// VM a: one hog and one vCPU that stays halted; VM b: two hogs. Per vCPU (gran=cpu) b's hogs
// would fill a's idle thread; per core, a's blocked vCPU keeps its thread idle while a's unit
// runs, so the core alternates between a (one thread busy) and b (two).
TEST(SchedUnit, ABlockedVcpuLeavesItsThreadIdleNotToAnotherVm) {
  for (bool core : {false, true}) {
    TestHost h(test::one_core_ht(), core ? units() : hv::HostSpec{}, 1, "credit2");
    auto a = h.add_fake(test::vm("a", 2));
    auto b = h.add_fake(test::vm("b", 2));
    h.start();
    h.fake().set_plan(a.vcpus[0], FakeGuest::hog());
    h.fake().kick(a.vcpus[0]);
    for (VcpuId v : b.vcpus) {
      h.fake().set_plan(v, FakeGuest::hog());
      h.fake().kick(v);
    }
    h.run_until(sim::seconds(2));
    hv::Host& host = h.host();
    const double T = static_cast<double>(host.measured());
    const double busy = static_cast<double>(host.pcpu_busy(0) + host.pcpu_busy(1)) / T;
    if (core) {
      EXPECT_NEAR(busy, 1.5, 0.05) << "a's unit holds the whole core half the time";
      EXPECT_NEAR(static_cast<double>(host.domain_forced_idle(a.id)) / T, 0.5, 0.03);
      EXPECT_EQ(host.domain_forced_idle(b.id), 0);
    } else {
      EXPECT_NEAR(busy, 2.0, 0.01) << "per vCPU, b fills the thread a leaves";
      EXPECT_EQ(host.domain_forced_idle(a.id), 0);
    }
    host.check_conservation();
  }
}

// Credit is per unit (what csched2 sees): a VM of 2 hog vCPUs (one unit) against one of 4 (two
// units), equal weights, one core: 1/3 of the core against 2/3, as three equal entities share.
TEST(SchedUnit, TheUnitIsWhatCredit2Sees) {
  TestHost h(test::one_core_ht(), units(), 1, "credit2");
  auto a = h.add_fake(test::vm("a", 2));
  auto b = h.add_fake(test::vm("b", 4));
  h.start();
  for (auto* vm : {&a, &b})
    for (VcpuId v : vm->vcpus) {
      h.fake().set_plan(v, FakeGuest::hog());
      h.fake().kick(v);
    }
  h.run_until(sim::seconds(3));
  hv::Host& host = h.host();
  EXPECT_EQ(host.units()->num_vcpus(), 3u) << "the policy's entities are the units";
  EXPECT_EQ(host.units()->domain(b.id).vcpus.size(), 2u);
  const double T = static_cast<double>(host.measured());
  EXPECT_NEAR(static_cast<double>(host.vcpu_stats(a.vcpus[0]).running) / T, 1.0 / 3, 0.02);
  for (VcpuId v : b.vcpus) EXPECT_NEAR(static_cast<double>(host.vcpu_stats(v).running) / T, 1.0 / 3, 0.02);
}

// Xen keeps a unit's soft affinity as the toolstack gave it (sched_set_affinity). When it misses
// the hard affinity it is not effective (has_soft_affinity()), and runq_tickle()'s "in new's soft
// affinity, just take it" and tickle_score()'s bonus, which test the raw mask, find no pCPU of the
// unit's in it. The unit's mask stays outside its hard one, as a vCPU's does at sched-gran=cpu
// (until 2026-12-03 it became the hard mask, so every pCPU of the unit counted as soft).
TEST(SchedUnit, ASoftAffinityThatMissesTheHardOneStaysOutsideIt) {
  TestHost h(test::two_cores_ht(), units(), 1, "credit2");
  hv::DomainSpec d = test::vm("a", 2, test::cpus({0, 2}));  // core 0
  d.soft.assign(2, test::cpus({1, 3}));                      // core 1
  auto a = h.add_fake(d);
  h.start();
  const hv::Vcpu& u = h.host().units()->vcpu(0);
  EXPECT_TRUE(u.hard.test(0));
  EXPECT_TRUE(u.soft.test(1)) << "the given soft mask, at the master thread";
  EXPECT_FALSE(u.soft.intersects(u.hard));
  for (VcpuId v : a.vcpus) {
    EXPECT_FALSE(h.host().vcpu(v).soft.test(0));
    EXPECT_FALSE(h.host().vcpu(v).soft.test(2));
  }
}

// Every core decision is a rendezvous in which the unit's running vCPUs make no progress. A hog
// shares its unit with a vCPU that wakes every millisecond, works 100 us and blocks (each block
// reschedules the core). The hog's work lost to a 20 us rendezvous is 20 us per decision.
double hog_work(sim::Duration rendezvous, std::uint64_t* decisions) {
  TestHost h(test::one_core_ht(), units(rendezvous), 1, "credit2");
  auto a = h.add_fake(test::vm("a", 2));
  h.start();
  const VcpuId hog = a.vcpus[0], blip = a.vcpus[1];
  h.fake().set_plan(hog, FakeGuest::hog(10e3));  // 10 us segments: completions resolve the loss
  h.fake().kick(hog);
  for (sim::Time t = sim::ms(1); t <= sim::seconds(1); t += sim::ms(1)) {
    h.run_until(t);
    h.fake().set_plan(blip, FakeGuest::job(100e3, 1));
    h.fake().kick(blip);
  }
  h.run_until(sim::seconds(1) + sim::us(500));
  *decisions = h.host().rendezvous();
  return static_cast<double>(h.fake().completions(hog)) * 10e3;
}

TEST(SchedUnit, EveryCoreDecisionCostsTheRendezvous) {
  std::uint64_t n0 = 0, n1 = 0;
  const double w0 = hog_work(0, &n0), w1 = hog_work(sim::us(20), &n1);
  EXPECT_GE(n1, 1000u) << "at least one decision per block";
  EXPECT_NEAR(n1, n0, n0 * 0.05);
  const double lost = w0 - w1;
  EXPECT_NEAR(lost, 20e3 * static_cast<double>(n1), 0.1 * 20e3 * static_cast<double>(n1));
}

// A thread idle inside a running unit halts: Xen's sched_guest_idle() keeps deep C-states away
// so that the thread joins the next rendezvous quickly. vCPU 1 of a unit whose vCPU 0 hogs the
// core takes a 10 us job every 2 ms. Without units the governor learns the 2 ms pattern and its
// thread sleeps in C6 (50 us exits); in the unit every wake-up leaves C1 (3 us).
TEST(SchedUnit, AThreadIdleInARunningUnitHaltsInsteadOfDeepSleep) {
  for (bool core : {false, true}) {
    hv::HostSpec spec = core ? units() : hv::HostSpec{};
    spec.cpuidle.states = {{"C1", sim::us(3), sim::us(6)}, {"C6", sim::us(50), sim::us(400)}};
    TestHost h(test::one_core_ht(), spec, 1, "credit2");
    auto a = h.add_fake(test::vm("a", 2));
    h.start();
    h.fake().set_plan(a.vcpus[0], FakeGuest::hog());
    h.fake().kick(a.vcpus[0]);
    for (int i = 1; i <= 30; ++i) {
      h.run_until(sim::ms(2) * i);
      h.fake().set_plan(a.vcpus[1], FakeGuest::job(10e3, 1));
      h.fake().kick(a.vcpus[1]);
    }
    h.run_until(sim::ms(62));
    ASSERT_GE(h.fake().completions(a.vcpus[1]), 30u);
    const hv::CpuidleStats st = h.host().cpuidle_stats();
    ASSERT_GE(st.exits, 30u);
    if (core) EXPECT_EQ(st.exit_ns, static_cast<sim::Duration>(st.exits) * sim::us(3)) << "every exit from C1";
    else EXPECT_GT(st.exit_ns, static_cast<sim::Duration>(st.exits) * sim::us(25)) << "menu learnt C6";
    h.host().check_conservation();
  }
}

// A run with units is a pure function of its inputs: the same seed twice gives the same
// accounting for every vCPU, to the nanosecond.
std::vector<std::int64_t> unit_run_figures(std::uint64_t seed) {
  topo::TopologySpec desk = test::two_cores_ht();
  desk.cores_per_socket = 4;
  TestHost h(desk, units(), seed, "credit2");
  for (int i = 0; i < 3; ++i) {
    auto prog = std::make_unique<guest::Program>(
        3, std::vector<guest::Phase>{{true, 300e3, guest::Phase::Dist::kExp, hv::Profile::kMixed, 0.2},
                                     {false, 400e3, guest::Phase::Dist::kExp, hv::Profile::kCpu, 0}});
    h.add_vm(test::vm("p" + std::to_string(i), 3), std::move(prog));
  }
  h.add_vm(test::vm("c", 2), test::workload("sysbench-cpu", {{"threads", 2}}));
  h.start();
  h.run_until(sim::seconds(2));
  std::vector<std::int64_t> out;
  for (VcpuId v = 0; v < h.host().num_vcpus(); ++v) {
    const hv::VcpuStats st = h.host().vcpu_stats(v);
    out.insert(out.end(), {st.running, st.runnable, st.blocked, static_cast<std::int64_t>(st.context_switches)});
  }
  for (hv::DomainId d = 0; d < h.host().num_domains(); ++d) out.push_back(h.host().domain_forced_idle(d));
  out.push_back(static_cast<std::int64_t>(h.host().rendezvous()));
  return out;
}

TEST(SchedUnit, SameSeedSameRun) {
  const auto a = unit_run_figures(11), b = unit_run_figures(11), c = unit_run_figures(12);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c) << "the seed must reach the guests' random phases";
}

// Xen PLE (a pause exit yields the spinner's unit) under units: a waiter's window must count from
// VM entry after the rendezvous, when its lock holder on the sibling thread starts running too.
// Counting it from before the rendezvous let every waiter exit before its holder ran a single
// instruction (the 2 us rendezvous outlasts the 1.6 us window at 2.5 GHz): ebizzy made no
// progress at all. Three 4-vCPU ebizzy VMs (ticket locks) and a 3-vCPU dbench VM (so the units
// time-share: without it the livelock does not arise) on the 4-core desktop, 300 ms: each
// exit now costs a rendezvous and a switch (about 4 us) per window of progress (1.6 us), so a VM
// keeps at least 1.6 / (1.6 + 4) of its no-PLE records, less lock-holder preemption: a tenth is
// far below what a working model gives and far above the livelock's zero.
TEST(SchedUnit, PleWindowCountsFromEntryAfterTheRendezvous) {
  auto records = [](bool ple) {
    hv::HostSpec hs = units();
    hs.ple.enabled = ple;
    hs.ple.flavour = hv::PleFlavour::kXen;
    topo::TopologySpec desk = test::two_cores_ht();
    desk.cores_per_socket = 4;
    TestHost h(desk, hs, 1, "credit2");
    std::vector<TestHost::Vm> vms;
    for (int i = 0; i < 3; ++i)
      vms.push_back(h.add_vm(test::vm("eb" + std::to_string(i), 4), test::workload("ebizzy", {{"threads", 8}})));
    h.add_vm(test::vm("db", 3), test::workload("dbench", {{"threads", 6}}));
    h.start();
    h.run_until(sim::ms(300));
    double least = 1e300;
    for (auto& vm : vms) least = std::min(least, vm.os->results().throughput);
    return least;
  };
  const double without = records(false), with = records(true);
  ASSERT_GT(without, 0.0);
  EXPECT_GT(with, 0.1 * without) << "PLE under units must not livelock the spinners' holders";
}

}  // namespace
}  // namespace vcpusim
