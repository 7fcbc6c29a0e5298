// SPDX-License-Identifier: MIT
// Pins the rr reference policy (policies/round_robin.cpp) against what every policy must do
// (STYLE.md 2.8, conformance): honour hard affinity on every decision, even at 4x overcommit on a
// 2-socket machine with pinned and unpinned VMs; share one pCPU equally between equal hogs to
// within one slice; stay work-conserving (no usable pCPU idles while an entity that may run
// there waits); and steal a queued entity onto a pCPU that goes idle -- never one pinned
// elsewhere. Plus its own promise: the slice is the configured one.
//
// The dispatcher itself checks every pick (a violation throws hv::InvariantViolation and fails the
// test), so the checks here are a second, independent look: a wrapper that inspects every
// decision the policy makes, and sampling of the host state.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "guest/program.h"
#include "hypervisor/host.h"
#include "hypervisor/policy_api.h"
#include "policies/registry.h"
#include "policies/round_robin.h"
#include "sim/sim_time.h"
#include "checking_policy.h"
#include "test_host.h"

namespace vcpusim {
namespace {

using hv::Pick;
using hv::VcpuId;
using test::FakeGuest;
using test::TestHost;
using test::compute_sleep;

// The policy behind a decorator that checks every placing answer (tests/support/checking_policy.h).
using AffinityChecker = test::CheckingPolicy;


TEST(RoundRobin, HonoursHardAffinityOnEveryDecisionAt4xOvercommit) {
  // System: 2 sockets x 4 cores x 2 threads (16 threads), 64 vCPUs = 4x overcommit:
  //   4 VMs x 4 vCPUs pinned to one node each (sysbench-cpu),
  //   4 VMs x 4 vCPUs each vCPU pinned to one thread (compute/sleep: frequent wake-ups),
  //   4 VMs x 4 vCPUs unpinned (sysbench-memory),
  //   4 VMs x 4 vCPUs unpinned (compute/sleep, 6 threads: guest-level queueing too).
  // Expectations over 10 s: every pick_cpu / pick_next / set_next of rr is inside the entity's
  // hard affinity (the wrapper), and at every 100 us sample every running entity is on a pCPU of
  // its hard set and every runnable one is assigned inside it.
  auto checker = std::make_unique<AffinityChecker>(TestHost::make_policy("rr"));
  AffinityChecker* chk = checker.get();
  TestHost h(test::x5570_2s(), {}, 7, std::move(checker));
  test::add_affinity_mix(h);
  ASSERT_EQ(h.host().num_vcpus(), 64u);
  h.start();
  std::uint64_t running_seen = 0;
  h.run_sampled(sim::seconds(10), sim::us(100), [&] {
    for (VcpuId v = 0; v < h.host().num_vcpus(); ++v) {
      const hv::Vcpu& e = h.host().vcpu(v);
      if (e.state == hv::Runstate::kBlocked) continue;
      ASSERT_TRUE(e.hard.test(e.pcpu)) << "entity " << v << " " << hv::runstate_name(e.state) << " on pCPU "
                                       << e.pcpu << " at t=" << h.host().now();
      if (e.state == hv::Runstate::kRunning) {
        ++running_seen;
        ASSERT_EQ(h.host().pcpu(e.pcpu).curr, v);
      }
    }
  });
  EXPECT_EQ(chk->affinity_violations, 0u) << chk->first_violation;
  // Not vacuous: many decisions were made and all 16 threads were busy most of the time.
  EXPECT_GT(chk->decisions, 10'000u);
  EXPECT_GT(running_seen, 100'000u * 16 * 9 / 10);
  EXPECT_NO_THROW(h.host().check_conservation());
}

TEST(RoundRobin, EqualHogsShareOnePcpuEqually) {
  // Two sysbench-cpu VMs pinned to pCPU 0 (sibling idle, so both run at rate 1). rr alternates
  // 30 ms slices, so at any instant their run times differ by at most one slice: over T = 6 s
  // each gets T/2 to within 30 ms (0.5%), and pCPU 0 never idles. Their sysbench results follow:
  // events = work / event time, so they differ by at most (slice + one step) / event time.
  const sim::Duration slice = sim::ms(30), T = sim::seconds(6);
  const double event_ns = 1e9 / 1306.90;
  TestHost h(test::one_core_ht());
  auto a = h.add_vm(test::vm("a", 1, test::cpus({0})),
                    test::workload("sysbench-cpu", {{"threads", 1}, {"events_per_step", 1}}));
  auto b = h.add_vm(test::vm("b", 1, test::cpus({0})),
                    test::workload("sysbench-cpu", {{"threads", 1}, {"events_per_step", 1}}));
  h.start();
  h.run_until(T);
  const auto sa = h.host().vcpu_stats(a.vcpus[0]), sb = h.host().vcpu_stats(b.vcpus[0]);
  EXPECT_LE(std::abs(sa.running - sb.running), slice);
  EXPECT_NEAR(static_cast<double>(sa.running), T / 2.0, static_cast<double>(slice));
  EXPECT_NEAR(static_cast<double>(sb.running), T / 2.0, static_cast<double>(slice));
  EXPECT_EQ(sa.running + sb.running, T);
  const double ra = a.os->results().results, rb = b.os->results().results;
  EXPECT_NEAR(ra, rb, (slice + event_ns) / event_ns + 1);
  // Each got about half of 1306.90 events/s.
  EXPECT_NEAR(ra / sim::to_seconds(T), 1306.90 / 2, 1306.90 * slice / static_cast<double>(T));
}

TEST(RoundRobin, SliceIsTheConfiguredOne) {
  // Two FakeGuest hogs pinned to one pCPU with slice = 10 ms: they alternate every 10 ms, so over
  // 1 s pCPU 0 switches 100 times (the first switch-in at t = 0 included) and each entity is
  // switched in 50 times.
  sim::ParamValues pv;
  pv.set("slice", 10e6);
  TestHost h(test::one_core_ht(), {}, 1, "rr", pv);
  auto a = h.add_fake(test::vm("a", 1, test::cpus({0})));
  auto b = h.add_fake(test::vm("b", 1, test::cpus({0})));
  h.start();
  for (VcpuId v : {a.vcpus[0], b.vcpus[0]}) {
    h.fake().set_plan(v, FakeGuest::hog(3e6));
    h.fake().kick(v);
  }
  h.run_until(sim::seconds(1) - 1);  // just before the 101st switch at t = 1 s
  EXPECT_EQ(h.host().pcpu(0).switches, 100u);
  EXPECT_EQ(h.host().vcpu_stats(a.vcpus[0]).context_switches, 50u);
  EXPECT_EQ(h.host().vcpu_stats(b.vcpus[0]).context_switches, 50u);
  auto* rr = dynamic_cast<policy::RoundRobin*>(&h.host().policy());
  ASSERT_NE(rr, nullptr);
  EXPECT_EQ(rr->slice(), sim::ms(10));
}

TEST(RoundRobin, IsWorkConserving) {
  // System: x5570_2s (16 threads), 28 entities that compute and sleep about half the time
  // (exponential 500 us / 500 us), some pinned to a node, some to single threads, some free, plus
  // two hogs pinned to thread 0: the load hovers around the thread count, so idle pCPUs and
  // waiting entities coexist all the time.
  // Expectation, at every 100 us sample over 3 s: no Runnable entity has an idle usable pCPU in
  // its hard affinity (rr tickles an idle pCPU on every enqueue and steals before idling).
  TestHost h(test::x5570_2s(), {}, 3);
  for (std::uint32_t i = 0; i < 8; ++i) h.add_vm(test::vm("free" + std::to_string(i), 2), compute_sleep(2, 500e3, 500e3));
  for (std::uint32_t i = 0; i < 4; ++i)
    h.add_vm(test::vm("node" + std::to_string(i), 2, test::x5570_node_threads(i % 2)), compute_sleep(2, 500e3, 500e3));
  for (std::uint32_t i = 0; i < 2; ++i) {
    hv::DomainSpec d = test::vm("pin" + std::to_string(i), 2);
    for (std::uint32_t k = 0; k < 2; ++k) d.hard.push_back(topo::CpuSet::single(1 + 7 * i + 2 * k));
    h.add_vm(d, compute_sleep(2, 500e3, 500e3));
  }
  auto hogs = h.add_fake(test::vm("hogs", 2, test::cpus({0})));
  h.start();
  for (VcpuId v : hogs.vcpus) {
    h.fake().set_plan(v, FakeGuest::hog());
    h.fake().kick(v);
  }
  std::uint64_t contested = 0;  // samples with an idle pCPU and a waiting entity at once
  h.run_sampled(sim::seconds(3), sim::us(100), [&] {
    const topo::CpuSet idle = h.host().idle_pcpus();
    bool waiting = false;
    for (VcpuId v = 0; v < h.host().num_vcpus(); ++v) {
      const hv::Vcpu& e = h.host().vcpu(v);
      if (e.state != hv::Runstate::kRunnable) continue;
      waiting = true;
      ASSERT_FALSE(e.hard.intersects(idle)) << "entity " << v << " waits on pCPU " << e.pcpu << " while pCPU "
                                            << (e.hard & idle).first() << " idles, t=" << h.host().now();
    }
    if (waiting && idle.any()) ++contested;
  });
  // Not vacuous: the hogs pinned to thread 0 wait while other threads idle in many samples.
  EXPECT_GT(contested, 1000u);
}

TEST(RoundRobin, IdleStealingMovesAQueuedEntityToAnIdlePcpu) {
  // flat(2): two cores, no SMT. At t = 0: x (pinned to pCPU 1, one 5 ms job) takes pCPU 1; hog a
  // takes pCPU 0; hog b finds no idle pCPU and queues behind a on pCPU 0 (shortest queue, lowest
  // id). When x halts at 5 ms + cs, pCPU 1 would idle: it steals b instead. So b runs on pCPU 1
  // from t = 5 ms + cs, having waited exactly that long, not until a's slice ends at 30 ms.
  TestHost h(test::flat(2));
  auto x = h.add_fake(test::vm("x", 1, test::cpus({1})));
  auto a = h.add_fake(test::vm("a", 1));
  auto b = h.add_fake(test::vm("b", 1));
  h.start();
  const VcpuId vx = x.vcpus[0], va = a.vcpus[0], vb = b.vcpus[0];
  h.fake().set_plan(vx, FakeGuest::job(5e6));
  h.fake().set_plan(va, FakeGuest::hog());
  h.fake().set_plan(vb, FakeGuest::hog());
  for (VcpuId v : {vx, va, vb}) h.fake().kick(v);
  h.run_until(sim::ms(1));
  auto* rr = dynamic_cast<policy::RoundRobin*>(&h.host().policy());
  ASSERT_NE(rr, nullptr);
  ASSERT_EQ(h.host().vcpu(vb).state, hv::Runstate::kRunnable);
  ASSERT_EQ(rr->queue_length(0), 1u) << "b should wait in pCPU 0's queue";
  h.run_until(sim::ms(6));
  EXPECT_TRUE(h.host().is_blocked(vx));
  EXPECT_TRUE(h.host().is_running(vb));
  EXPECT_EQ(h.host().vcpu(vb).pcpu, 1u);
  EXPECT_EQ(h.host().vcpu_stats(vb).runnable, sim::ms(5) + sim::us(2));
  EXPECT_EQ(rr->queue_length(0), 0u);
  EXPECT_TRUE(h.host().is_running(va));
  EXPECT_EQ(h.host().vcpu(va).pcpu, 0u);
}

TEST(RoundRobin, IdleStealingLeavesEntitiesPinnedElsewhere) {
  // The same, but b is pinned to pCPU 0: pCPU 1 may not take it and idles; b waits for a's
  // slice to end at 30 ms and then runs on pCPU 0.
  TestHost h(test::flat(2));
  auto x = h.add_fake(test::vm("x", 1, test::cpus({1})));
  auto a = h.add_fake(test::vm("a", 1, test::cpus({0})));
  auto b = h.add_fake(test::vm("b", 1, test::cpus({0})));
  h.start();
  const VcpuId vx = x.vcpus[0], va = a.vcpus[0], vb = b.vcpus[0];
  h.fake().set_plan(vx, FakeGuest::job(5e6));
  h.fake().set_plan(va, FakeGuest::hog());
  h.fake().set_plan(vb, FakeGuest::hog());
  for (VcpuId v : {vx, va, vb}) h.fake().kick(v);
  h.run_until(sim::ms(6));
  EXPECT_EQ(h.host().pcpu(1).curr, hv::kIdle);
  EXPECT_EQ(h.host().vcpu(vb).state, hv::Runstate::kRunnable);
  h.run_until(sim::ms(31));
  EXPECT_TRUE(h.host().is_running(vb));
  EXPECT_EQ(h.host().vcpu(vb).pcpu, 0u);
  EXPECT_EQ(h.host().vcpu_stats(vb).runnable, sim::ms(30));
  EXPECT_EQ(h.host().vcpu(va).state, hv::Runstate::kRunnable);
}

}  // namespace
}  // namespace vcpusim
