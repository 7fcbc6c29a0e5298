// SPDX-License-Identifier: MIT
// Pins the CFS balancer's PELT averages (`balance_load: pelt`, policies/cfs.cpp "PELT for the
// balancer") to the rules of the 5.x kernel's kernel/sched/pelt.c and fair.c. Expected values come
// from the averages' definition: each moves toward what it carries with a half-life of 32 x 1024
// us (LOAD_AVG_PERIOD, y^32 = 1/2), so after t of a constant target T from a start a, the average
// is T + (a - T) 2^(-t / 32.768 ms):
//   - a new task starts with its weight as load (init_entity_runnable_average) and half an idle
//     CPU's capacity as utilisation (post_init_entity_util_avg); a hog's utilisation then rises
//     from 512 toward 1024 (768 after one half-life), its load stays at its weight;
//   - a task that blocks leaves the runnable load at once (dequeue: runnable_load_avg) but its
//     utilisation stays on its CPU and halves every half-life; woken on another CPU it takes the
//     utilisation along (migrate_task_rq_fair, attach);
//   - a task runnable half the time carries half its weight as load (task_h_load);
//   - the runqueues' sums equal their entities' averages under a busy mixed load, with task
//     groups too (check_consistency, sampled), and the default `instant` mode reads weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "hypervisor/host.h"
#include "policies/cfs.h"
#include "sim/params.h"
#include "sim/sim_time.h"
#include "test_host.h"
#include "topology/topology.h"

namespace vcpusim {
namespace {

using hv::VcpuId;
using policy::Cfs;
using test::FakeGuest;
using test::TestHost;

constexpr double kHalfLifeMs = 32.768;

sim::ParamValues pelt(bool groups = false) {
  sim::ParamValues v;
  v.set("balance_load", 1.0);
  if (groups) v.set("cgroups", 1.0);
  return v;
}

Cfs& cfs_of(TestHost& h) { return static_cast<Cfs&>(h.host().policy()); }

/// T + (a - T) 2^(-t / half-life): the average after `ms` of target T from a.
double toward(double a, double target, double ms) { return target + (a - target) * std::exp2(-ms / kHalfLifeMs); }

TEST(CfsPelt, AHogStartsAtHalfCapacityAndItsUtilisationHalvesTheGapEveryHalfLife) {
  // One hog pinned to thread 0 of an idle host (exact_host: it starts running at once).
  // Expected: utilisation 512 at fork, then 1024 - 512 x 2^(-t/32.768 ms): 768 after one
  // half-life, 896 after two; the CPU's utilisation is the task's (the only one attached); the
  // runnable load is the hog's weight from the start (1024 = nice 0), and stays there.
  TestHost h(test::two_cores_ht(), test::exact_host(), 1, TestHost::make_policy("cfs", pelt()));
  const VcpuId v = h.add_fake(test::vm("hog", 1, topo::CpuSet::single(0))).vcpus[0];
  h.start();
  h.fake().set_plan(v, FakeGuest::hog());
  h.fake().kick(v);
  h.run_until(sim::us(1));
  EXPECT_NEAR(static_cast<double>(cfs_of(h).task_util(v)), 512.0, 2.0);
  for (double ms : {kHalfLifeMs, 2 * kHalfLifeMs, 200.0}) {
    h.run_until(sim::us(static_cast<std::int64_t>(ms * 1000)));
    const double want = toward(512.0, 1024.0, ms);
    EXPECT_NEAR(static_cast<double>(cfs_of(h).task_util(v)), want, 2.0) << "at " << ms << " ms";
    EXPECT_NEAR(static_cast<double>(cfs_of(h).cpu_util(0)), want, 2.0) << "at " << ms << " ms";
    EXPECT_EQ(cfs_of(h).cpu_load(0), 1024u) << "at " << ms << " ms";
    EXPECT_EQ(cfs_of(h).task_h_load(v), 1024u) << "at " << ms << " ms";
  }
  EXPECT_EQ(cfs_of(h).check_consistency(), "");
}

TEST(CfsPelt, ABlockedTasksUtilisationStaysOnItsCpuAndDecaysWhileItsLoadLeaves) {
  // A task pinned to thread 0 computes 200 ms (one segment, exact_host: it ends at 200 ms) and
  // halts; the averages are read 1 ms later and at one and two half-lives after the halt. Expected: at the halt its
  // utilisation is u0 = 1024 - 512 x 2^(-200/32.768) and the CPU's runnable load falls to 0 at
  // once; the CPU's utilisation then decays from u0 by half each half-life (u0/2 after one,
  // u0/4 after two), and so does the task's own.
  TestHost h(test::two_cores_ht(), test::exact_host(), 1, TestHost::make_policy("cfs", pelt()));
  const VcpuId v = h.add_fake(test::vm("job", 1, topo::CpuSet::single(0))).vcpus[0];
  h.start();
  h.fake().set_plan(v, FakeGuest::job(200e6));
  h.fake().kick(v);
  h.run_until(sim::ms(201));
  ASSERT_EQ(h.fake().completions(v), 1u);
  const double end_ms = static_cast<double>(h.fake().done_times(v)[0]) / 1e6;
  const double u0 = toward(512.0, 1024.0, end_ms);
  EXPECT_EQ(cfs_of(h).cpu_load(0), 0u);
  for (double after : {kHalfLifeMs, 2 * kHalfLifeMs}) {
    h.run_until(sim::us(static_cast<std::int64_t>((end_ms + after) * 1000)));
    EXPECT_NEAR(static_cast<double>(cfs_of(h).cpu_util(0)), toward(u0, 0.0, after), 2.0) << after << " ms after the halt";
    EXPECT_NEAR(static_cast<double>(cfs_of(h).task_util(v)), toward(u0, 0.0, after), 2.0) << after << " ms after the halt";
  }
  EXPECT_EQ(cfs_of(h).cpu_util(1), 0u);
  EXPECT_EQ(cfs_of(h).check_consistency(), "");
}

TEST(CfsPelt, AWakeUpOnAnotherCpuTakesTheTasksUtilisationAlong) {
  // two_cores_ht: cores 0 (threads 0, 2) and 1 (threads 1, 3). Task x (allowed on threads 0 and
  // 1) runs 100 ms on thread 0, where it forks (the lowest CPU of its affinity), and halts. A hog
  // pinned to thread 0 starts then, so x's next wake-up, 50 ms later, finds prev busy and takes
  // the idle thread 1 (select_idle_sibling: an idle core). Expected: before the wake-up thread 0
  // carries x's decayed utilisation beside the hog's; after it, thread 0 has lost exactly x's
  // part and thread 1 holds it (remove_entity_load_avg / attach_entity_load_avg).
  TestHost h(test::two_cores_ht(), test::exact_host(), 1, TestHost::make_policy("cfs", pelt()));
  const VcpuId x = h.add_fake(test::vm("x", 1, test::cpus({0, 1}))).vcpus[0];
  const VcpuId hog = h.add_fake(test::vm("hog", 1, topo::CpuSet::single(0))).vcpus[0];
  h.start();
  h.fake().set_plan(x, FakeGuest::job(100e6));
  h.fake().kick(x);
  h.run_until(sim::ms(101));
  ASSERT_EQ(h.fake().completions(x), 1u);
  ASSERT_EQ(h.host().vcpu(x).pcpu, 0u);
  h.fake().set_plan(hog, FakeGuest::hog());
  h.fake().kick(hog);
  h.run_until(sim::ms(150));
  const double ux = static_cast<double>(cfs_of(h).task_util(x));
  const double u0 = static_cast<double>(cfs_of(h).cpu_util(0));
  EXPECT_GT(ux, 100.0);
  EXPECT_NEAR(u0, ux + static_cast<double>(cfs_of(h).task_util(hog)), 2.0);
  h.fake().set_plan(x, FakeGuest::job(10e6));
  h.fake().kick(x);
  h.run_until(sim::ms(150) + sim::us(1));
  ASSERT_EQ(h.host().vcpu(x).pcpu, 1u);
  EXPECT_NEAR(static_cast<double>(cfs_of(h).cpu_util(0)), static_cast<double>(cfs_of(h).task_util(hog)), 2.0);
  EXPECT_NEAR(static_cast<double>(cfs_of(h).cpu_util(1)), ux, 2.0);
  EXPECT_EQ(cfs_of(h).check_consistency(), "");
}

TEST(CfsPelt, ATaskRunnableHalfTheTimeCarriesHalfItsWeight) {
  // A task pinned to thread 0 alternates 1 ms of work and 1 ms halted (a plan of 1 ms segments
  // re-kicked 1 ms after each ends). Its load average follows 1024 while queued and 0 while
  // halted, with a 32.768 ms half-life, so it settles near 512, ripple +-1024 x (1 - 2^(-1/32.768))
  // / 2 ~ 11. Expected after 500 ms: task_h_load within 512 +- 20; the `instant` mode reads its
  // weight, 1024.
  for (const bool with_pelt : {true, false}) {
    sim::ParamValues instant;
    instant.set("balance_load", 0.0);
    TestHost h(test::two_cores_ht(), test::exact_host(), 1, TestHost::make_policy("cfs", with_pelt ? pelt() : instant));
    const VcpuId v = h.add_fake(test::vm("half", 1, topo::CpuSet::single(0))).vcpus[0];
    h.start();
    sim::Time t = 0;
    while (t < sim::ms(500)) {
      h.fake().set_plan(v, FakeGuest::job(1e6));
      h.fake().kick(v);
      t += sim::ms(2);
      h.run_until(t);
    }
    h.fake().set_plan(v, FakeGuest::job(1e6));
    h.fake().kick(v);
    h.run_until(t + sim::us(500));
    if (with_pelt) EXPECT_NEAR(static_cast<double>(cfs_of(h).task_h_load(v)), 512.0, 20.0);
    else EXPECT_EQ(cfs_of(h).task_h_load(v), 1024u);
  }
}

void run_mix_checked(bool groups) {
  // x5570_2s, 64 vCPUs of the affinity mix (pinned and unpinned, busy and waking): wake-up
  // placement, forks, newly-idle and periodic pulls and active pushes all move tasks and their
  // averages. Expected: at every 1 ms sample over 2 s the runqueues' PELT sums equal the sums of
  // their entities' averages (check_consistency), CPU time is conserved, and the balancer moved
  // tasks (so the averages did travel).
  TestHost h(test::x5570_2s(), {}, 7, TestHost::make_policy("cfs", pelt(groups)));
  test::add_affinity_mix(h);
  h.start();
  h.run_sampled(sim::seconds(2), sim::ms(1), [&] { ASSERT_EQ(cfs_of(h).check_consistency(), "") << "at t=" << h.host().now(); });
  EXPECT_GT(cfs_of(h).wake_migrations() + cfs_of(h).newidle_pulls() + cfs_of(h).balance_migrations(), 0u);
  EXPECT_NO_THROW(h.host().check_conservation());
}

TEST(CfsPelt, RunqueueSumsEqualTheirEntitiesAveragesUnderAMixedLoad) { run_mix_checked(false); }

TEST(CfsPelt, RunqueueSumsEqualTheirEntitiesAveragesWithTaskGroups) { run_mix_checked(true); }

}  // namespace
}  // namespace vcpusim
