// SPDX-License-Identifier: MIT
// Pins the host's idle states (hypervisor/cpuidle.h): the menu governor's pattern detector as
// get_typical_interval() computes it (the average of the last 8 idle periods when they repeat,
// the largest dropped while at least 3/4 remain), the correction factor on the next timer,
// menu_select()'s choice of the deepest state the prediction pays for, and the Host glue: an entity switched in on an
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

// A governor that has seen these idle periods, each left from a state of exit latency 0 (so the
// intervals hold them as given).
MenuGovernor with(std::initializer_list<std::int64_t> idle_us) {
  MenuGovernor g;
  for (std::int64_t us : idle_us) g.record(sim::us(us), 0);
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
  EXPECT_EQ(g.predicted(), sim::us(15));
  EXPECT_EQ(g.select(nehalem()), 0u);  // C1 (residency 6 us); C1E needs 20 us
  // A spread within 20 us (variance <= 400 us^2) is still a pattern: 10 and 40 us, stddev 15.
  EXPECT_EQ(with({10, 40, 10, 40, 10, 40, 10, 40}).typical_interval(), sim::us(25));
}

TEST(MenuGovernor, AnOutlierIsDroppedWhileThreeQuartersRemain) {
  // 100 us seven times and one 5 ms: the first pass's variance is too large; without the 5 ms,
  // 7 of 8 samples agree exactly.
  const MenuGovernor g = with({100, 100, 100, 5000, 100, 100, 100, 100});
  EXPECT_EQ(g.typical_interval(), sim::us(100));
  EXPECT_EQ(g.select(nehalem()), 2u);  // C3 (80 us); C6 needs 800 us
  // Three outliers leave only 5 of 8 (< 3/4): no pattern.
  EXPECT_FALSE(with({100, 100, 5000, 100, 9000, 100, 7000, 100}).typical_interval());
}

// With no pattern the corrected next timer decides. next_timer is 50 ms away every time (MODEL),
// so the correction factor, starting at unity, decays toward the mean measured idle / 50 ms:
// long idle periods keep the prediction long, short ones bring it down within a few wake-ups.
TEST(MenuGovernor, WithoutAPatternTheCorrectionFactorPredictsTheDecayingMean) {
  EXPECT_EQ(MenuGovernor().predicted(), sim::us(0));  // zeroed intervals: a "pattern" of 0 us
  EXPECT_EQ(MenuGovernor().select(nehalem()), 0u);     // the shallowest physical state, not POLL
  // Scattered periods of 2-10 ms: no pattern; the factor after 8 updates is 1 - (7/8)^8 of the
  // way from unity (50 ms) to their mean, so still deep: C6.
  const MenuGovernor scattered = with({2000, 9000, 3000, 10000, 2500, 8000, 4000, 6000});
  EXPECT_FALSE(scattered.typical_interval());
  EXPECT_GT(scattered.predicted(), sim::ms(5));
  EXPECT_EQ(scattered.select(nehalem()), 3u);
  // Many scattered short periods (5-150 us, too spread for a pattern even without the two
  // largest) bring the factor down to their mean, 55 us: C1E (residency 20 us, exit 10 us) but
  // not C3 (80 us).
  MenuGovernor g;
  for (int i = 0; i < 100; ++i)
    for (std::int64_t us : {5, 150, 12, 90, 30, 8, 120, 25}) g.record(sim::us(us), 0);
  EXPECT_FALSE(g.typical_interval());
  EXPECT_GT(g.predicted(), sim::us(40));
  EXPECT_LT(g.predicted(), sim::us(70));
  EXPECT_EQ(g.select(nehalem()), 1u);
}

TEST(MenuGovernor, ExitLatencyIsDeductedFromTheMeasuredResidency) {
  // A 150 us idle left from C6 (200 us exit): the kernel measured 350 us, not more than twice the
  // exit, so it halved it (175 us); a 500 us one measured 700 us and had the 200 us deducted.
  MenuGovernor g;
  for (int i = 0; i < 8; ++i) g.record(sim::us(150), sim::us(200));
  EXPECT_EQ(g.typical_interval(), sim::us(175));
  for (int i = 0; i < 8; ++i) g.record(sim::us(500), sim::us(200));
  EXPECT_EQ(g.typical_interval(), sim::us(500));
}

hv::HostSpec idle_host() {
  hv::HostSpec h;
  h.cpuidle.states = {{"C1", sim::us(3), sim::us(6)}, {"C6", sim::us(50), sim::us(400)}};
  return h;
}

// vCPU 0 of a one-vCPU VM on one pCPU runs a 10 us job from 0 (switched in at 0: the pCPU has not
// idled yet, so only the 2 us switch-in: done at 12 us) and, kicked at 20 us, a second one. The
// pCPU idled 12-20 us with a zeroed history, so menu chose the shallowest state (C1, exit 3 us):
// the second job is done at 20 + 2 + 3 + 10 us, not at 32 us as without idle states.
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
    EXPECT_EQ(h.fake().done_times(v)[1], on ? sim::us(35) : sim::us(32));
    EXPECT_EQ(h.host().cpuidle_stats().exits, on ? 1u : 0u);
    EXPECT_EQ(h.host().cpuidle_stats().exit_ns, on ? sim::us(3) : 0);
    h.host().check_conservation();  // the exit is charged to the entity's run time, as a switch-in
  }
}

// Woken every 2 ms after a 10 us job, the pCPU learns the 2 ms pattern once the ring holds no
// zero of its start (get_typical_interval() drops the largest samples first, so one 0 us sample
// left is a "pattern" of 0 us): from the ninth idle period on, menu picks the deep state (C6,
// 400 us residency, 50 us exit) and every job ends 2 + 50 + 10 us after its kick; before, C1.
TEST(CpuIdle, ALearntLongIdlePatternTakesTheDeepState) {
  TestHost h(test::flat(1), idle_host(), 1, "cfs");
  const auto a = h.add_fake(test::vm("a", 1));
  h.start();
  const hv::VcpuId v = a.vcpus[0];
  for (int i = 0; i < 12; ++i) {
    h.run_until(sim::ms(2) * i);
    h.fake().set_plan(v, FakeGuest::job(10e3, 1));
    h.fake().kick(v);
  }
  h.run_until(sim::ms(30));
  ASSERT_EQ(h.fake().completions(v), 12u);
  for (int i = 1; i < 9; ++i) EXPECT_EQ(h.fake().done_times(v)[i], sim::ms(2) * i + sim::us(15)) << i;
  for (int i = 9; i < 12; ++i) EXPECT_EQ(h.fake().done_times(v)[i], sim::ms(2) * i + sim::us(62)) << i;
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
