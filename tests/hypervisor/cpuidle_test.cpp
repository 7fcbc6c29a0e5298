// SPDX-License-Identifier: MIT
// Pins the host's idle states (hypervisor/cpuidle.h): the menu governor's pattern detector as
// get_typical_interval() computes it (the average of the last 8 idle periods when they repeat,
// the largest dropped while at least 3/4 remain, no prediction otherwise), menu_select()'s choice
// of the deepest state the prediction pays for, and the Host glue: an entity switched in on an
// idle pCPU first waits for the chosen state's exit latency, a switch with no idle period pays
// none, and the exits are counted.
#include <gtest/gtest.h>

#include "hypervisor/cpuidle.h"
#include "hypervisor/host.h"
#include "test_host.h"

namespace vcpusim {
namespace {

using hv::MenuGovernor;
using test::FakeGuest;
using test::TestHost;

std::vector<hv::IdleState> nehalem() { return *hv::idle_state_table("nehalem"); }

MenuGovernor with(std::initializer_list<std::int64_t> idle_us) {
  MenuGovernor g;
  for (std::int64_t us : idle_us) g.record(sim::us(us));
  return g;
}

TEST(IdleStates, TablesAreIntelIdlesShallowestFirst) {
  const auto n = nehalem();
  ASSERT_EQ(n.size(), 4u);
  EXPECT_EQ(n[0].name, "C1");
  EXPECT_EQ(n[0].exit_latency, sim::us(3));
  EXPECT_EQ(n[0].target_residency, sim::us(6));
  EXPECT_EQ(n[3].name, "C6");
  EXPECT_EQ(n[3].exit_latency, sim::us(200));
  EXPECT_EQ(n[3].target_residency, sim::us(800));
  EXPECT_EQ(hv::idle_state_table("skx")->back().exit_latency, sim::us(133));
  EXPECT_EQ(hv::idle_state_table("skl")->size(), 8u);
  EXPECT_FALSE(hv::idle_state_table("haswell"));
  for (auto name : hv::idle_state_tables()) {
    const auto t = *hv::idle_state_table(name);
    for (std::size_t i = 1; i < t.size(); ++i) {
      EXPECT_GE(t[i].exit_latency, t[i - 1].exit_latency) << name;
      EXPECT_GE(t[i].target_residency, t[i - 1].target_residency) << name;
    }
  }
}

TEST(MenuGovernor, RepeatingIdlePeriodsPredictTheirAverage) {
  const MenuGovernor g = with({15, 15, 15, 15, 15, 15, 15, 15});
  EXPECT_EQ(g.typical_interval(), sim::us(15));
  EXPECT_EQ(g.select(nehalem()), 0);  // C1 (residency 6 us); C1E needs 20 us
  // A spread within 20 us (variance <= 400 us^2) is still a pattern: 10 and 40 us, stddev 15.
  EXPECT_EQ(with({10, 40, 10, 40, 10, 40, 10, 40}).typical_interval(), sim::us(25));
}

TEST(MenuGovernor, AnOutlierIsDroppedWhileThreeQuartersRemain) {
  // 100 us seven times and one 5 ms: the first pass's variance is too large; without the 5 ms,
  // 7 of 8 samples agree exactly.
  const MenuGovernor g = with({100, 100, 100, 5000, 100, 100, 100, 100});
  EXPECT_EQ(g.typical_interval(), sim::us(100));
  EXPECT_EQ(g.select(nehalem()), 2);  // C3 (80 us); C6 needs 800 us
  // Three outliers leave only 5 of 8 (< 3/4): no pattern.
  EXPECT_FALSE(with({100, 100, 5000, 100, 9000, 100, 7000, 100}).typical_interval());
}

TEST(MenuGovernor, NoPatternTakesTheDeepestStateAndShortPatternsPoll) {
  const MenuGovernor scattered = with({1, 1000, 5, 300, 50, 2000, 7, 90});
  EXPECT_FALSE(scattered.typical_interval());
  EXPECT_EQ(scattered.select(nehalem()), 3);  // C6: no prediction bounds it (cpuidle.h, MODEL)
  EXPECT_EQ(MenuGovernor().select(nehalem()), 3);  // nothing measured yet: menu's zeroed history
  EXPECT_EQ(with({3, 3, 3, 3, 3, 3, 3, 3}).select(nehalem()), -1);  // below C1's 6 us: poll
  // The ring keeps the last 8: eight 3 us periods after eight 15 us ones predict 3 us.
  MenuGovernor g = with({15, 15, 15, 15, 15, 15, 15, 15});
  for (int i = 0; i < 8; ++i) g.record(sim::us(3));
  EXPECT_EQ(g.typical_interval(), sim::us(3));
}

hv::HostSpec idle_host() {
  hv::HostSpec h;
  h.cpuidle.states = {{"C1", sim::us(3), sim::us(6)}, {"C6", sim::us(50), sim::us(400)}};
  return h;
}

// vCPU 0 of a one-vCPU VM on one pCPU runs a 10 us job from 0 (switched in at 0: the pCPU has not
// idled yet, so only the 2 us switch-in: done at 12 us) and, kicked at 20 us, a second one. The
// pCPU idled 12-20 us with no history, so menu chose the deepest state (C6, exit 50 us): the
// second job is done at 20 + 2 + 50 + 10 us, not at 32 us as without idle states.
TEST(CpuIdle, AnEntityWokenOnAnIdlePcpuWaitsForTheStatesExit) {
  for (const bool on : {false, true}) {
    TestHost h(test::flat(1), on ? idle_host() : hv::HostSpec{}, 1, "cfs");
    const auto a = h.add_fake(test::vm("a", 1));
    h.start();
    const hv::VcpuId v = a.vcpus[0];
    h.fake().set_plan(v, FakeGuest::job(10e3, 1));
    h.fake().kick(v);
    h.run_until(sim::us(20));
    h.fake().set_plan(v, FakeGuest::job(10e3, 1));
    h.fake().kick(v);
    h.run_until(sim::us(200));
    ASSERT_EQ(h.fake().completions(v), 2u);
    EXPECT_EQ(h.fake().done_times(v)[0], sim::us(12));
    EXPECT_EQ(h.fake().done_times(v)[1], on ? sim::us(82) : sim::us(32));
    EXPECT_EQ(h.host().cpuidle_stats().exits, on ? 1u : 0u);
    EXPECT_EQ(h.host().cpuidle_stats().exit_ns, on ? sim::us(50) : 0);
    h.host().check_conservation();  // the exit is charged to the entity's run time, as a switch-in
  }
}

// Two busy vCPUs sharing one pCPU switch from one to the other with no idle period between:
// no exit latency, whatever the governor would choose.
TEST(CpuIdle, ASwitchWithNoIdlePeriodPaysNoExit) {
  TestHost h(test::flat(1), idle_host(), 1, "cfs");
  const auto a = h.add_fake(test::vm("a", 2));
  h.start();
  for (hv::VcpuId v : a.vcpus) {
    h.fake().set_plan(v, FakeGuest::job(1e9, 1));
    h.fake().kick(v);
  }
  h.run_until(sim::ms(100));
  EXPECT_GT(h.host().vcpu(a.vcpus[0]).context_switches + h.host().vcpu(a.vcpus[1]).context_switches, 4u);
  EXPECT_EQ(h.host().cpuidle_stats().exits, 0u);
}

}  // namespace
}  // namespace vcpusim
