// SPDX-License-Identifier: MIT
// Pins the execution-rate model (hypervisor/exec_model.h, execution.cpp) through the Host: work
// in reference ns completes at rate 1 alone on a core after one context switch; a busy SMT
// sibling sets the rate to the interference-matrix entry of the two profiles; remote memory
// divides it by 1 + mem_intensity * (latency ratio - 1); a rate change part-way re-times the
// completion so that work done = sum of rate x time over the pieces; and a move to another core
// runs cache-cold (cold_rate) for cold_duration (x cold_cross_node_factor when it leaves the LLC).
//
// Every expected instant is computed by hand from those rules. A completion is scheduled at
// start + ceil(remaining / rate), so an expected instant holds to within 1 ns per re-timing.
#include <gtest/gtest.h>

#include <cmath>

#include "hypervisor/host.h"
#include "sim/sim_time.h"
#include "test_host.h"

namespace vcpusim {
namespace {

using hv::Profile;
using test::FakeGuest;
using test::TestHost;

constexpr double kCs = 2000.0;  // ExecParams::context_switch default, 2 us
// The default interference entries (exec_model.cpp): cpu beside cpu 0.525 (midpoint of the
// 0.50-0.55 range), cpu beside memory CALIBRATED 852.50 / 1306.90 (calibration/001), memory
// beside cpu 0.875 (midpoint of 0.80-0.95).
constexpr double kCpuCpu = 0.525;
constexpr double kCpuMem = 852.50 / 1306.90;
constexpr double kMemCpu = 0.875;

TEST(ExecModel, DefaultContextSwitchIsTwoMicroseconds) {
  // The constant the expected instants below are built from.
  EXPECT_EQ(hv::ExecParams{}.context_switch, sim::us(2));
  EXPECT_DOUBLE_EQ(hv::ExecParams{}.smt[0][0], kCpuCpu);
  EXPECT_DOUBLE_EQ(hv::ExecParams{}.smt[0][1], kCpuMem);
  EXPECT_DOUBLE_EQ(hv::ExecParams{}.smt[1][0], kMemCpu);
}

TEST(ExecModel, LoneThreadOnIdleCoreRunsAtRateOne) {
  // One cpu entity on a 2-thread core whose sibling idles: switched in at t = 0, it stalls for
  // the context switch, then does W ns of work in W ns. Done at W + cs.
  for (double w : {1.0e3, 1.0e6, 123'456'789.0}) {
    TestHost h(test::one_core_ht());
    auto a = h.add_fake(test::vm("a", 1, test::cpus({0})));
    h.start();
    h.fake().set_plan(a.vcpus[0], FakeGuest::job(w));
    h.fake().kick(a.vcpus[0]);
    h.run_until(sim::seconds(1));
    ASSERT_EQ(h.fake().completions(a.vcpus[0]), 1u);
    EXPECT_NEAR(static_cast<double>(h.fake().done_times(a.vcpus[0])[0]), w + kCs, 1.0) << "W = " << w;
  }
}

TEST(ExecModel, ContextSwitchCostIsTheConfiguredOne) {
  hv::HostSpec hs;
  hs.exec.context_switch = sim::us(7);
  TestHost h(test::one_core_ht(), hs);
  auto a = h.add_fake(test::vm("a", 1, test::cpus({0})));
  h.start();
  h.fake().set_plan(a.vcpus[0], FakeGuest::job(1e6));
  h.fake().kick(a.vcpus[0]);
  h.run_until(sim::ms(10));
  ASSERT_EQ(h.fake().completions(a.vcpus[0]), 1u);
  EXPECT_NEAR(static_cast<double>(h.fake().done_times(a.vcpus[0])[0]), 1e6 + 7000.0, 1.0);
}

// Two entities pinned to the two siblings of one core, both switched in at t = 0 with one
// segment of work each. Returns their completion instants.
std::pair<double, double> sibling_pair(double wa, Profile pa, double wb, Profile pb, hv::HostSpec hs = {}) {
  TestHost h(test::one_core_ht(), hs);
  auto a = h.add_fake(test::vm("a", 1, test::cpus({0})));
  auto b = h.add_fake(test::vm("b", 1, test::cpus({1})));
  h.start();
  h.fake().set_plan(a.vcpus[0], FakeGuest::job(wa, 1, pa));
  h.fake().set_plan(b.vcpus[0], FakeGuest::job(wb, 1, pb));
  h.fake().kick(a.vcpus[0]);
  h.fake().kick(b.vcpus[0]);
  h.run_until(sim::seconds(1));
  EXPECT_EQ(h.fake().completions(a.vcpus[0]), 1u);
  EXPECT_EQ(h.fake().completions(b.vcpus[0]), 1u);
  return {static_cast<double>(h.fake().done_times(a.vcpus[0]).at(0)),
          static_cast<double>(h.fake().done_times(b.vcpus[0]).at(0))};
}

TEST(ExecModel, CpuBesideCpuSiblingRunsAtMatrixEntry) {
  // Both start at t = 0 and stall until cs; from then both run at smt[cpu][cpu] = 0.525 until
  // the first finishes. Equal work: both finish at cs + W / 0.525.
  const double w = 1e6;
  auto [ta, tb] = sibling_pair(w, Profile::kCpu, w, Profile::kCpu);
  EXPECT_NEAR(ta, kCs + w / kCpuCpu, 1.0);
  EXPECT_NEAR(tb, kCs + w / kCpuCpu, 1.0);
}

TEST(ExecModel, CpuBesideMemorySiblingRunsAtCalibratedRates) {
  // cpu beside memory: the cpu thread at 852.50/1306.90 = 0.6523, the memory thread at 0.875.
  // The work is sized so the memory thread finishes second: W_mem / 0.875 > W_cpu / 0.6523.
  const double w_cpu = 1e6, w_mem = 2e6;
  auto [t_cpu, t_mem] = sibling_pair(w_cpu, Profile::kCpu, w_mem, Profile::kMemory);
  const double cpu_done = kCs + w_cpu / kCpuMem;
  EXPECT_NEAR(t_cpu, cpu_done, 1.0);
  // Memory: 0.875 until the cpu thread halts, then alone at rate 1 for the rest.
  const double mem_left = w_mem - kMemCpu * (cpu_done - kCs);
  EXPECT_NEAR(t_mem, cpu_done + mem_left, 2.0);
}

TEST(ExecModel, SmtRateFollowsAConfiguredMatrix) {
  hv::HostSpec hs;
  hs.exec.smt[0][0] = 0.6;
  const double w = 3e6;
  auto [ta, tb] = sibling_pair(w, Profile::kCpu, w, Profile::kCpu, hs);
  EXPECT_NEAR(ta, kCs + w / 0.6, 1.0);
  EXPECT_NEAR(tb, kCs + w / 0.6, 1.0);
}

// One entity with memory intensity m pinned to `pcpu` of a 2-node machine (one core per node,
// no SMT: thread 0 is node 0, thread 1 node 1), its domain's memory placed per `mem`.
double numa_run(double ratio, double m, std::vector<double> mem, topo::ThreadId pcpu, double w) {
  TestHost h(test::two_nodes(1, 1, ratio));
  hv::DomainSpec d = test::vm("a", 1, test::cpus({pcpu}));
  d.memory_on_node = std::move(mem);
  auto a = h.add_fake(d);
  h.start();
  h.fake().set_plan(a.vcpus[0], FakeGuest::job(w, 1, Profile::kMemory, m));
  h.fake().kick(a.vcpus[0]);
  h.run_until(sim::seconds(10));
  EXPECT_EQ(h.fake().completions(a.vcpus[0]), 1u);
  return static_cast<double>(h.fake().done_times(a.vcpus[0]).at(0));
}

TEST(ExecModel, RemoteMemorySlowsByIntensityTimesLatencyExcess) {
  // rate = 1 / (1 + m * sum_j frac_j * (r_j - 1)); done = cs + W / rate = cs + W * (1 + m * excess).
  const double w = 1e6;
  // All memory remote, r = 1.5, m = 0.5: rate 1 / 1.25 = 0.8.
  EXPECT_NEAR(numa_run(1.5, 0.5, {0.0, 1.0}, 0, w), kCs + w * 1.25, 1.0);
  // All memory remote, r = 2, m = 1: every stall doubles, rate 0.5.
  EXPECT_NEAR(numa_run(2.0, 1.0, {0.0, 1.0}, 0, w), kCs + w * 2.0, 1.0);
  // Half remote, r = 1.5, m = 0.8: excess 0.5 * 0.5 = 0.25, rate 1 / 1.2.
  EXPECT_NEAR(numa_run(1.5, 0.8, {0.5, 0.5}, 0, w), kCs + w * 1.2, 1.0);
  // The same entity on the node that holds its memory runs at rate 1.
  EXPECT_NEAR(numa_run(1.5, 0.5, {0.0, 1.0}, 1, w), kCs + w, 1.0);
  // m = 0 (pure cpu) is never slowed by distance.
  EXPECT_NEAR(numa_run(2.0, 0.0, {0.0, 1.0}, 0, w), kCs + w, 1.0);
}

TEST(ExecModel, SiblingStartAndStopRetimeTheCompletion) {
  // a (cpu, W = 10 ms) runs alone from t = 0 on thread 0. At T1 = 3 ms b (cpu, 1 ms) is woken
  // on the sibling thread 1; b counts as a busy sibling from the instant it is switched in, so
  // a drops to 0.525 at T1; b stalls for cs then runs at 0.525, done at
  //   Tb = T1 + cs + 1 ms / 0.525,
  // and halts, which puts a back to rate 1. Work done by a = sum of rate x time:
  //   1 * (T1 - cs) + 0.525 * (Tb - T1) + 1 * (Ta - Tb) = W.
  const double w = 10e6, wb = 1e6;
  const sim::Time t1 = sim::ms(3);
  TestHost h(test::one_core_ht());
  auto a = h.add_fake(test::vm("a", 1, test::cpus({0})));
  auto b = h.add_fake(test::vm("b", 1, test::cpus({1})));
  h.start();
  h.fake().set_plan(a.vcpus[0], FakeGuest::job(w));
  h.fake().kick(a.vcpus[0]);
  h.run_until(t1);
  h.fake().set_plan(b.vcpus[0], FakeGuest::job(wb));
  h.fake().kick(b.vcpus[0]);
  h.run_until(sim::ms(100));
  ASSERT_EQ(h.fake().completions(a.vcpus[0]), 1u);
  ASSERT_EQ(h.fake().completions(b.vcpus[0]), 1u);
  const double T1 = static_cast<double>(t1);
  const double tb = static_cast<double>(h.fake().done_times(b.vcpus[0])[0]);
  EXPECT_NEAR(tb, T1 + kCs + wb / kCpuCpu, 1.0);
  const double ta_expected = tb + (w - (T1 - kCs) - kCpuCpu * (tb - T1));
  EXPECT_NEAR(static_cast<double>(h.fake().done_times(a.vcpus[0])[0]), ta_expected, 2.0);
  // Without b, a would have finished at W + cs: the sibling cost a exactly (1 - 0.525) of b's
  // residence time.
  EXPECT_NEAR(ta_expected - (w + kCs), (1.0 - kCpuCpu) * (tb - T1), 1.0);
}

// Runs `a` (hard affinity `a_hard`) for 1 ms and halts it; starts a hog `b` pinned to a's pCPU;
// then at t = 3 ms wakes a with W2 of work, which the rr policy places on an idle pCPU of a's
// affinity (another core, or the sibling when that is all a may use). Returns a.
hv::VcpuId wake_beside_a_hog(TestHost& h, topo::CpuSet a_hard, double w2, double footprint = 0) {
  hv::DomainSpec da = test::vm("a", 1, a_hard);
  da.cache_footprint = footprint;
  auto a = h.add_fake(da);
  auto b = h.add_fake(test::vm("b", 1, test::cpus({0})));
  h.start();
  const hv::VcpuId va = a.vcpus[0], vb = b.vcpus[0];
  h.fake().set_plan(va, FakeGuest::job(1e6));
  h.fake().kick(va);
  h.run_until(sim::ms(2));
  EXPECT_EQ(h.host().vcpu(va).last_ran, 0u) << "a should have run first on thread 0";
  EXPECT_TRUE(h.host().is_blocked(va));
  h.fake().set_plan(vb, FakeGuest::hog());
  h.fake().kick(vb);
  h.run_until(sim::ms(3));
  h.fake().set_plan(va, FakeGuest::job(w2));
  h.fake().kick(va);
  return va;
}

// wake_beside_a_hog, run to its end. Returns (done instant, a's migrations, where it ran).
struct MoveResult {
  double done;
  std::uint64_t migrations;
  topo::ThreadId ran_on;
};
MoveResult move_and_run(const topo::TopologySpec& spec, topo::CpuSet a_hard, double w2, double footprint = 0) {
  TestHost h(spec);
  const hv::VcpuId va = wake_beside_a_hog(h, a_hard, w2, footprint);
  h.run_until(sim::ms(3) + sim::us(1));
  const topo::ThreadId on = h.host().vcpu(va).pcpu;
  h.run_until(sim::ms(20));
  EXPECT_EQ(h.fake().completions(va), 2u);
  return {static_cast<double>(h.fake().done_times(va).at(1)), h.host().vcpu_stats(va).migrations, on};
}

TEST(ExecModel, CrossCoreMigrationRunsColdForTheColdWindow) {
  // flat(2): two cores, no SMT, one node. a woken at T = 3 ms lands on thread 1 (another core):
  // after the cs stall it runs at cold_rate 0.5 for cold_duration 100 us (50 us of work), then at
  // rate 1. Done = T + cs + 100 us + (W2 - 50 us) = T + cs + W2 + 50 us.
  const double w2 = 1e6;
  MoveResult r = move_and_run(test::flat(2), test::cpus({0, 1}), w2);
  EXPECT_EQ(r.ran_on, 1u);
  EXPECT_EQ(r.migrations, 1u);
  EXPECT_NEAR(r.done, 3e6 + kCs + w2 + 50e3, 2.0);
}

TEST(ExecModel, SmallCacheFootprintShortensTheColdWindow) {
  // The same move for a domain whose workload touches 64 KiB (1/16 of the 1 MiB the default
  // window refills): the window is 100 us / 16 = 6.25 us at rate 0.5, 3.125 us of work lost.
  // A footprint above 1 MiB keeps the default window (an L2 holds no more).
  const double w2 = 1e6;
  MoveResult r = move_and_run(test::flat(2), test::cpus({0, 1}), w2, 64 * 1024);
  EXPECT_EQ(r.migrations, 1u);
  EXPECT_NEAR(r.done, 3e6 + kCs + w2 + 3125, 2.0);
  MoveResult big = move_and_run(test::flat(2), test::cpus({0, 1}), w2, 8 * 1024 * 1024);
  EXPECT_NEAR(big.done, 3e6 + kCs + w2 + 50e3, 2.0);
}

TEST(ExecModel, CrossNodeMigrationStretchesTheColdWindow) {
  // Two nodes, one core each: the move crosses nodes, so the window is 100 us x 3 = 300 us at
  // rate 0.5: 150 us of work in it, 150 us lost. (mem_intensity 0: no NUMA penalty here.)
  const double w2 = 1e6;
  MoveResult r = move_and_run(test::two_nodes(1, 1, 1.5), test::cpus({0, 1}), w2);
  EXPECT_EQ(r.ran_on, 1u);
  EXPECT_EQ(r.migrations, 1u);
  EXPECT_NEAR(r.done, 3e6 + kCs + w2 + 150e3, 2.0);
}

TEST(ExecModel, MoveAcrossLastLevelCachesWithinANodeStretchesTheColdWindow) {
  // One node, two cores, each with an LLC of its own (a Zen CCX of one core): the move leaves
  // the LLC without leaving the node, so the window is the cross-LLC one, 150 us lost, as in
  // CrossNodeMigrationStretchesTheColdWindow; flat(2) (one LLC) loses 50 us, as above.
  const double w2 = 1e6;
  topo::TopologySpec ccx = test::flat(2);
  ccx.cores_per_llc = 1;
  MoveResult r = move_and_run(ccx, test::cpus({0, 1}), w2);
  EXPECT_EQ(r.ran_on, 1u);
  EXPECT_EQ(r.migrations, 1u);
  EXPECT_NEAR(r.done, 3e6 + kCs + w2 + 150e3, 2.0);
  MoveResult shared = move_and_run(test::flat(2), test::cpus({0, 1}), w2);
  EXPECT_NEAR(shared.done, 3e6 + kCs + w2 + 50e3, 2.0);
}

TEST(ExecModel, AColdWindowLeftEarlyStillEndsOnTime) {
  // flat(2), as CrossCoreMigrationRunsColdForTheColdWindow: woken at T = 3 ms while b hogs
  // thread 0, a moves to thread 1 and its cold window ends at C = T + cs + 100 us. A first job of
  // 10 us takes 20 us at rate 0.5, and a blocks inside the window. Woken again at
  // T2 = T + cs + 30 us, it returns to thread 1 (idle, the same core: no new window) and runs at
  // 0.5 until C, then at rate 1: 0.5 x (C - (T2 + cs)) = 0.5 x (70 us - cs) of work before C,
  // the rest after it.
  TestHost h(test::flat(2));
  const hv::VcpuId va = wake_beside_a_hog(h, test::cpus({0, 1}), 10e3);
  const double t = 3e6, cold_end = t + kCs + 100e3, t2 = t + kCs + 30e3;
  h.run_until(static_cast<sim::Time>(t2));
  ASSERT_EQ(h.fake().completions(va), 2u);
  EXPECT_NEAR(static_cast<double>(h.fake().done_times(va)[1]), t + kCs + 20e3, 1.0);
  ASSERT_TRUE(h.host().is_blocked(va));
  const double w3 = 1e6;
  h.fake().set_plan(va, FakeGuest::job(w3));
  h.fake().kick(va);
  h.run_until(sim::ms(10));
  ASSERT_EQ(h.fake().completions(va), 3u);
  EXPECT_EQ(h.host().vcpu(va).last_ran, 1u);
  EXPECT_EQ(h.host().vcpu_stats(va).migrations, 1u);
  const double cold_work = 0.5 * (cold_end - (t2 + kCs));
  EXPECT_NEAR(static_cast<double>(h.fake().done_times(va)[2]), cold_end + (w3 - cold_work), 2.0);
}

TEST(ExecModel, MoveToSiblingThreadIsNotCold) {
  // two_cores_ht: threads 0 and 2 share core 0. a may use only {0, 2}; woken while b hogs 0 it
  // goes to 2: counted as a migration but the core's caches are shared, so no cold window; it
  // runs beside b's cpu work at 0.525. Done = T + cs + W2 / 0.525.
  const double w2 = 1e6;
  MoveResult r = move_and_run(test::two_cores_ht(), test::cpus({0, 2}), w2);
  EXPECT_EQ(r.ran_on, 2u);
  EXPECT_EQ(r.migrations, 1u);
  EXPECT_NEAR(r.done, 3e6 + kCs + w2 / kCpuCpu, 2.0);
}

TEST(ExecModel, ReturningToTheSamePcpuIsNotCold) {
  // The control: a wakes with its last pCPU idle, so it stays there: no migration, rate 1.
  TestHost h(test::flat(2));
  auto a = h.add_fake(test::vm("a", 1));
  h.start();
  const hv::VcpuId va = a.vcpus[0];
  h.fake().set_plan(va, FakeGuest::job(1e6));
  h.fake().kick(va);
  h.run_until(sim::ms(3));
  h.fake().set_plan(va, FakeGuest::job(1e6));
  h.fake().kick(va);
  h.run_until(sim::ms(10));
  ASSERT_EQ(h.fake().completions(va), 2u);
  EXPECT_EQ(h.host().vcpu_stats(va).migrations, 0u);
  EXPECT_NEAR(static_cast<double>(h.fake().done_times(va)[1]), 3e6 + kCs + 1e6, 1.0);
}

}  // namespace
}  // namespace vcpusim
