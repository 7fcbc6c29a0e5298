// SPDX-License-Identifier: MIT
// Pins the CFS model's task groups (`cgroups: per-domain`, policies/cfs.cpp: CONFIG_FAIR_GROUP_SCHED
// with one cgroup per VM under the root, as libvirt's machine.slice scopes) to the rules of the
// 5.x kernel's kernel/sched/fair.c (../shared/reference/linux-core-scheduling.md section 1.1):
//   - a group's cpu.shares are split over the CPUs its tasks are runnable on, in proportion to
//     its load there (calc_group_shares), so a VM's share of a contended CPU does not grow with
//     its vCPU count: two VMs on one CPU share it 1:1 whatever their sizes, 2:1 by shares;
//   - inside a group, its tasks share the group's time by their own weights;
//   - a group entity that comes back after its group slept on a CPU is placed as a waking
//     entity, so a VM that runs little is not starved by a busy one (its share grows instead);
//   - groups off, the same runs give the figures of a flat runqueue.
// Every test also checks the policy's own consistency (check_consistency) as it runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include "guest/program.h"
#include "hypervisor/core_sched.h"
#include "hypervisor/host.h"
#include "policies/cfs.h"
#include "sim/params.h"
#include "sim/rng.h"
#include "sim/sim_time.h"
#include "test_host.h"
#include "topology/topology.h"

namespace vcpusim {
namespace {

using hv::VcpuId;
using policy::Cfs;
using test::FakeGuest;
using test::TestHost;
using test::compute_sleep;

sim::ParamValues groups(bool on) {
  sim::ParamValues v;
  v.set("cgroups", on ? 1.0 : 0.0);
  return v;
}

Cfs& cfs_of(TestHost& h) { return static_cast<Cfs&>(h.host().policy()); }

double share(TestHost& h, VcpuId v, sim::Time over) {
  return static_cast<double>(h.host().vcpu_stats(v).running) / static_cast<double>(over);
}

/// Runs h to `end`, checking the policy's consistency every `step`.
void run_checked(TestHost& h, sim::Time end, sim::Duration step = sim::us(250)) {
  h.run_sampled(end, step, [&] { ASSERT_EQ(cfs_of(h).check_consistency(), "") << "at t=" << h.host().now(); });
}

/// The CPU share of each of `vs` over `over`, summed.
double shares(TestHost& h, const std::vector<VcpuId>& vs, sim::Time over) {
  double s = 0;
  for (VcpuId v : vs) s += share(h, v, over);
  return s;
}

TEST(CfsGroups, TwoVmsShareACpuEquallyWhateverTheirVcpuCounts) {
  // One CPU, a VM of four busy vCPUs against a VM of one. Flat, each of the five tasks gets a
  // fifth; in groups each group entity carries its group's whole shares (all its load is on this
  // CPU: 1024 * 4096 / 4096 and 1024 * 1024 / 1024), so the VMs split the CPU 1:1 and the big
  // VM's vCPUs an eighth each. Tolerance 1%: a share is off by at most a slice or two (6 ms
  // latency on one CPU) over 5 s.
  for (const bool on : {false, true}) {
    TestHost h(test::flat(1), test::exact_host(), 1, "cfs", groups(on));
    auto big = h.add_fake(test::vm("big", 4));
    auto one = h.add_fake(test::vm("one", 1));
    std::vector<VcpuId> all = big.vcpus;
    all.push_back(one.vcpus[0]);
    h.start();
    for (VcpuId v : all) {
      h.fake().set_plan(v, FakeGuest::hog());
      h.fake().kick(v);
    }
    run_checked(h, sim::seconds(5));
    const double small = share(h, one.vcpus[0], sim::seconds(5));
    EXPECT_NEAR(small, on ? 0.5 : 0.2, 0.01) << (on ? "groups" : "flat");
    for (VcpuId v : big.vcpus) EXPECT_NEAR(share(h, v, sim::seconds(5)), on ? 0.125 : 0.2, 0.01);
  }
}

TEST(CfsGroups, SharesSetTheVmsRatioAndTasksShareTheirGroupsTime) {
  // One CPU: VM a with weight 512 (cpu.shares 2048) and two busy vCPUs, VM b with weight 256
  // (1024) and two. The groups split the CPU 2:1, and inside each group its two nice-0 vCPUs
  // split the group's time 1:1: 1/3 each for a's, 1/6 each for b's (within 1%).
  TestHost h(test::flat(1), test::exact_host(), 1, "cfs", groups(true));
  hv::DomainSpec da = test::vm("a", 2);
  da.weight = 512;
  auto a = h.add_fake(da);
  auto b = h.add_fake(test::vm("b", 2));
  h.start();
  for (const auto* vm : {&a, &b})
    for (VcpuId v : vm->vcpus) {
      h.fake().set_plan(v, FakeGuest::hog());
      h.fake().kick(v);
    }
  run_checked(h, sim::seconds(6));
  for (VcpuId v : a.vcpus) EXPECT_NEAR(share(h, v, sim::seconds(6)), 1.0 / 3, 0.01);
  for (VcpuId v : b.vcpus) EXPECT_NEAR(share(h, v, sim::seconds(6)), 1.0 / 6, 0.01);
  EXPECT_EQ(cfs_of(h).weight(a.vcpus[0]), 1024u);  // nice 0 inside the group
}

TEST(CfsGroups, AGroupsSharesSplitOverTheCpusItsTasksRunOn) {
  // Two CPUs: VM a has a busy vCPU pinned on each, VM b one busy vCPU pinned on CPU 0. Group a's
  // load is half on each CPU, so its entity on CPU 0 weighs 1024 * 1024 / 2048 = 512 against b's
  // 1024 (calc_group_shares once the load averages have settled): b gets 2/3 of CPU 0, a's vCPU
  // there 1/3, and a's other vCPU all of CPU 1. Flat, CPU 0 would be split 1:1. Measured after
  // one second, when the averages (32 ms half-life) are within 1e-9 of their limits; 1%.
  TestHost h(test::flat(2), test::exact_host(), 1, "cfs", groups(true));
  auto a = h.add_fake([] {
    hv::DomainSpec d = test::vm("a", 2);
    d.hard = {topo::CpuSet::single(0), topo::CpuSet::single(1)};
    return d;
  }());
  auto b = h.add_fake(test::vm("b", 1, topo::CpuSet::single(0)));
  h.start();
  for (VcpuId v : {a.vcpus[0], a.vcpus[1], b.vcpus[0]}) {
    h.fake().set_plan(v, FakeGuest::hog());
    h.fake().kick(v);
  }
  run_checked(h, sim::seconds(1));
  const auto before = [&](VcpuId v) { return h.host().vcpu_stats(v).running; };
  const sim::Time b0 = before(b.vcpus[0]), a0 = before(a.vcpus[0]), a1 = before(a.vcpus[1]);
  run_checked(h, sim::seconds(6));
  const double over = static_cast<double>(sim::seconds(5));
  EXPECT_NEAR(static_cast<double>(before(b.vcpus[0]) - b0) / over, 2.0 / 3, 0.01);
  EXPECT_NEAR(static_cast<double>(before(a.vcpus[0]) - a0) / over, 1.0 / 3, 0.01);
  EXPECT_NEAR(static_cast<double>(before(a.vcpus[1]) - a1) / over, 1.0, 0.001);
  EXPECT_EQ(cfs_of(h).group_weight(a.vcpus[0], 0), 512u);
  EXPECT_EQ(cfs_of(h).group_weight(b.vcpus[0], 0), 1024u);
}

TEST(CfsGroups, EachProcessOfABareMetalProgramIsItsOwnGroup) {
  // One CPU, a bare-metal program of three busy tasks in two processes (one task in process 0,
  // two in process 1, as memcached and its clients are): two groups of equal shares, so the lone
  // task gets half the CPU and the other two a quarter each; flat, a third each (within 1%).
  for (const bool on : {false, true}) {
    TestHost h(test::flat(1), test::exact_host(), 1, "cfs", groups(on));
    hv::DomainSpec d = test::vm("bm", 3);
    d.bare_metal = true;
    d.processes = {0, 1, 1};
    auto bm = h.add_fake(d);
    h.start();
    for (VcpuId v : bm.vcpus) {
      h.fake().set_plan(v, FakeGuest::hog());
      h.fake().kick(v);
    }
    run_checked(h, sim::seconds(4));
    EXPECT_NEAR(share(h, bm.vcpus[0], sim::seconds(4)), on ? 0.5 : 1.0 / 3, 0.01) << (on ? "groups" : "flat");
    for (VcpuId v : {bm.vcpus[1], bm.vcpus[2]}) EXPECT_NEAR(share(h, v, sim::seconds(4)), on ? 0.25 : 1.0 / 3, 0.01);
  }
}

TEST(CfsGroups, NewVcpusArriveWithTheirWeightAsTheirLoadAverage) {
  // init_entity_runnable_average() (4.20-5.x) starts a task's load average at its weight, "to be
  // seen as heavy tasks until they get a chance to stabilize", and the fork attaches it to its
  // group runqueue. Four new busy vCPUs of one VM on four CPUs therefore split the VM's shares
  // from the start: 1024 * 1024 / (4 * 1024) = 256 each once every CPU has refreshed its group
  // entity (at an enqueue or its next tick, update_cfs_group). Started at 0 (the model until
  // 2026-12-03) the four weights at 20 ms were 1024, 947, 881 and 823: each CPU's own queued
  // weight counted whole against its neighbours' young averages.
  TestHost h(test::flat(4), test::exact_host(), 1, "cfs", groups(true));
  auto a = h.add_fake(test::vm("a", 4));
  h.start();
  for (VcpuId v : a.vcpus) {
    h.fake().set_plan(v, FakeGuest::hog());
    h.fake().kick(v);
  }
  h.run_until(sim::ms(20));
  Cfs& c = cfs_of(h);
  for (VcpuId v : a.vcpus) {
    const hv::PcpuId p = h.host().vcpu(v).pcpu;
    EXPECT_NEAR(c.group_avg(v, p), 1024.0, 1.0) << "vCPU " << v << " on CPU " << p;
    EXPECT_EQ(c.group_weight(v, p), 256u) << "vCPU " << v << " on CPU " << p;
  }
}

TEST(CfsGroups, ABurstyVmWhoseVcpusLookHeavyCannotPreemptABusyVm) {
  // Four CPUs: a VM of four busy vCPUs against a VM of four vCPUs whose eight threads compute
  // 200 us and sleep 1 ms (exponential), so the bursty VM asks for 8 * 200 / 1200 = 1.33 CPUs.
  // Flat, each waking vCPU is a nice-0 task: its sleeper credit (latency / 2 = 9 ms) beats the
  // wake-up granularity (3 ms) and it preempts; it gets its demand (within 5%, the run's spread).
  // In groups its entity weighs shares * its CPU's load over the group's: the vCPUs start heavy
  // (init_entity_runnable_average), so they wait queued, and a queued vCPU's average stays near
  // its weight, so each CPU holds about a quarter of the shares. Below 1024 * 3 / 9 = 341 the
  // granularity scaled by 1024 / weight exceeds the credit, so no wake-up preempts the busy VM:
  // the bursty VM runs only at the busy vCPUs' slice ends and gets far less than its demand (its
  // threads wait out those slices: under half of it). Real: calc_group_shares and
  // wakeup_preempt_entity's wakeup_gran(se) of the waking group entity. Where the averages had
  // started at 0 this set-up was two-state (it preempted in some seeds, not in others).
  const double demand = 8 * 200.0 / 1200;
  for (const std::uint64_t seed : {1, 2, 3}) {
    for (const bool on : {false, true}) {
      sim::ParamValues params = groups(on);
      params.set("balance_load", 0.0);  // instant: the balancer's loads are weights (README, "What the balancer reads")
      TestHost h(test::flat(4), test::exact_host(), seed, "cfs", params);
      auto busy = h.add_vm(test::vm("busy", 4), test::workload("sysbench-cpu", {{"threads", 4}}), test::exact_guest());
      auto web = h.add_vm(test::vm("web", 4), compute_sleep(8, 200e3, 1e6), test::exact_guest());
      h.start();
      Cfs& c = cfs_of(h);
      const double threshold = 1024.0 * static_cast<double>(c.wakeup_granularity()) / static_cast<double>(c.sched_latency() / 2);
      std::uint32_t heaviest = 0;
      h.run_sampled(sim::seconds(4), sim::ms(1), [&] {
        ASSERT_EQ(c.check_consistency(), "");
        if (!on || h.host().now() < sim::ms(500)) return;
        for (VcpuId v : web.vcpus)
          if (h.host().vcpu(v).pcpu != hv::kNoPcpu) heaviest = std::max(heaviest, c.group_weight(v, h.host().vcpu(v).pcpu));
      });
      const double got = shares(h, web.vcpus, sim::seconds(4));
      if (!on) {
        EXPECT_NEAR(got, demand, demand * 0.05) << "flat, seed " << seed;
        continue;
      }
      EXPECT_LT(heaviest, threshold) << "seed " << seed;
      EXPECT_LT(got, demand / 2) << "seed " << seed;
      EXPECT_NEAR(shares(h, busy.vcpus, sim::seconds(4)), 4 - got, 0.01) << "every CPU stays busy, seed " << seed;
    }
  }
}

TEST(CfsGroups, CorePriorityComparesRootEntitiesOrLeafLags) {
  // Under core scheduling the candidates of two siblings are compared (core_priority): raw and
  // core-wide at the root level, where tasks of different VMs meet as their group entities
  // (Aaron Lu's comparison, Tim Chen's and mainline's); RFC v3's leaf normalisation by the
  // task's own (group) runqueue.
  TestHost h(test::flat(1), test::exact_host(), 1, "cfs", groups(true));
  auto a = h.add_fake(test::vm("a", 2));
  auto b = h.add_fake(test::vm("b", 1));
  h.start();
  for (VcpuId v : {a.vcpus[0], a.vcpus[1], b.vcpus[0]}) {
    h.fake().set_plan(v, FakeGuest::hog());
    h.fake().kick(v);
  }
  run_checked(h, sim::ms(203));
  Cfs& c = cfs_of(h);
  for (VcpuId v : {a.vcpus[0], a.vcpus[1], b.vcpus[0]}) {
    EXPECT_EQ(c.core_priority(0, v, hv::CorePrio::kLeaf), -static_cast<double>(c.vruntime(v) - c.leaf_min_vruntime(v)));
    // Core-wide: the root-level value, normalised by the root's floor.
    EXPECT_EQ(c.core_priority(0, v, hv::CorePrio::kCore),
              c.core_priority(0, v, hv::CorePrio::kRaw) + static_cast<double>(c.min_vruntime(0)));
  }
  // Both of a's vCPUs stand for the same root entity; b's one task is its group's only one, so
  // its group runqueue's floor follows it (leaf lag 0 while it runs or waits alone there).
  EXPECT_EQ(c.core_priority(0, a.vcpus[0], hv::CorePrio::kRaw), c.core_priority(0, a.vcpus[1], hv::CorePrio::kRaw));
  EXPECT_EQ(c.core_priority(0, a.vcpus[0], hv::CorePrio::kCore), c.core_priority(0, a.vcpus[1], hv::CorePrio::kCore));
  EXPECT_EQ(c.core_priority(0, b.vcpus[0], hv::CorePrio::kLeaf), 0.0);
  // The tasks' own vruntimes run at nice 0 inside groups of weight 1024 each: after 203 ms the
  // three have run 203 ms between them, b's group half of it.
  EXPECT_NEAR(static_cast<double>(h.host().vcpu_stats(b.vcpus[0]).running), 101.5e6, 6e6);
}

TEST(CfsGroups, AMigratingTaskTakesItsLoadAverageAlong) {
  // A (alone in its VM's group) runs 200 ms on its CPU, so its load average nears its weight
  // (1 - 2^-(200/32.8) of 1024), and sleeps; H, pinned there, takes the CPU; A's wake-up finds
  // its prev busy and the other CPU idle (select_idle_sibling) and moves. migrate_task_rq_fair /
  // attach_entity_load_avg move A's average with it: the old CPU's group runqueue keeps none of
  // it and the new one has it at once, so the group's shares there are whole (load = max(weight,
  // average) over a group sum that is that load alone). A ghost left behind would halve them.
  TestHost h(test::flat(2), test::exact_host(), 1, "cfs", groups(true));
  const VcpuId a = h.add_fake(test::vm("a", 1)).vcpus[0];
  const hv::PcpuId from = 0;
  const VcpuId hog = h.add_fake(test::vm("h", 1, topo::CpuSet::single(from))).vcpus[0];
  h.start();
  h.fake().set_plan(a, FakeGuest::job(200e6));
  h.fake().kick(a);
  h.run_until(sim::ms(1));
  ASSERT_EQ(h.host().vcpu(a).pcpu, from) << "the fork goes to the first idle CPU";
  run_checked(h, sim::ms(202));
  ASSERT_TRUE(h.host().is_blocked(a));
  h.fake().set_plan(hog, FakeGuest::hog());
  h.fake().kick(hog);
  h.run_until(sim::ms(203));
  Cfs& c = cfs_of(h);
  const double before = c.group_avg(a, from);
  EXPECT_GT(before, 900.0) << "A's 200 ms should have left its group's average near 1024";
  h.fake().set_plan(a, FakeGuest::hog());
  h.fake().kick(a);
  const hv::PcpuId to = h.host().vcpu(a).pcpu;
  ASSERT_NE(to, from);
  EXPECT_LT(c.group_avg(a, from), 1.0);
  // A's average as it blocked (the runqueue's as of then, A alone on it) decayed over the 3 ms
  // it slept, at PELT's 32 x 1024 us half-life; the blocking instant is known to a few us.
  EXPECT_NEAR(c.group_avg(a, to), before * std::exp2(-3.0 / 32.768), 2.0);
  EXPECT_EQ(c.group_weight(a, to), 1024u);
  run_checked(h, sim::ms(300));
}

TEST(CfsGroups, ConsistentThroughWakeupsBalancingAndAffinity) {
  // Two sockets of 4 cores x 2 threads, 64 vCPUs in 16 VMs: pinned to a node, pinned per vCPU,
  // free hogs and free compute/sleep VMs. Wake placement, forks, newly-idle, periodic and active
  // balancing move grouped tasks between runqueues; the policy's structures (every group
  // runqueue, group entity, load sum, buddy and mask) stay consistent at every sample, every
  // decision stays in hard affinity (the dispatcher checks), and the sixteen threads are busy.
  TestHost h(test::x5570_2s(), {}, 7, "cfs", groups(true));
  test::add_affinity_mix(h);
  h.start();
  run_checked(h, sim::seconds(3), sim::us(400));
  sim::Duration busy = 0;
  for (VcpuId v = 0; v < h.host().num_vcpus(); ++v) busy += h.host().vcpu_stats(v).running;
  EXPECT_GT(static_cast<double>(busy) / sim::seconds(3), 16 * 0.9);
  EXPECT_GT(cfs_of(h).balance_migrations() + cfs_of(h).newidle_pulls() + cfs_of(h).wake_migrations(), 100u);
}

TEST(CfsGroups, UnderCoreSchedulingASwitchWithinAVmRestartsTheVmsSlice) {
  // One core, both VMs pinned to its thread 0, HZ=1000 (two threads: 12 ms latency; at the
  // root two group entities of weight 1024, 6 ms each; A's two vCPUs 3 ms each). B runs alone
  // for 100 ms; A's vCPUs start and A's group entity, placed half a latency behind B's, preempts
  // it at once. a1 runs to the tick where it has run more than 3 ms (104 ms), then a0. Without
  // core scheduling pick_next_task_fair's smart path keeps A's root slice going across that
  // switch, so at the 107 ms tick A has run 6.95 ms > 6 at the root: a reschedule, and the root
  // pick takes B's entity, now leftmost. Core scheduling's pick_next_task ends every switch in
  // set_next_task(rq, next), set_next_entity at every level, so A's root slice restarts at
  // 104 ms; at 107 neither level has run more than its ideal (3 <= 6, 3 <= 3), and a0's check
  // fires one tick later, at 108. So A's turn is one tick longer (sampled every 50 us).
  const auto turn_of_a = [](bool core_sched) {
    hv::HostSpec hs = test::exact_host();
    if (core_sched) hs.core_sched = *hv::core_sched_preset("mainline");
    sim::ParamValues pv = groups(true);
    pv.set("hz", 1000.0);
    TestHost h(test::one_core_ht(), hs, 1, "cfs", pv);
    hv::DomainSpec da = test::vm("a", 2);
    da.hard.assign(2, topo::CpuSet::single(0));
    da.cookie = 1;
    hv::DomainSpec db = test::vm("b", 1);
    db.hard.assign(1, topo::CpuSet::single(0));
    db.cookie = 1;
    auto a = h.add_fake(da);
    auto b = h.add_fake(db);
    h.start();
    h.fake().set_plan(b.vcpus[0], FakeGuest::hog());
    h.fake().kick(b.vcpus[0]);
    h.run_until(sim::ms(100));
    for (VcpuId v : a.vcpus) {
      h.fake().set_plan(v, FakeGuest::hog());
      h.fake().kick(v);
    }
    sim::Time a_began = sim::kNever, b_again = sim::kNever;
    h.run_sampled(sim::ms(130), sim::us(50), [&] {
      const VcpuId c = h.host().pcpu(0).curr;
      if (a_began == sim::kNever && (c == a.vcpus[0] || c == a.vcpus[1])) a_began = h.host().now();
      if (a_began != sim::kNever && b_again == sim::kNever && c == b.vcpus[0]) b_again = h.host().now();
    });
    EXPECT_EQ(a_began, sim::ms(100) + sim::us(50)) << "A did not preempt B at once";
    return b_again - a_began;
  };
  EXPECT_EQ(turn_of_a(false), sim::ms(7) - sim::us(50));
  EXPECT_EQ(turn_of_a(true), sim::ms(8) - sim::us(50));
}

TEST(CfsGroups, RandomHostsStayConsistentUnderEveryCoreSchedulingVariant) {
  // Random mixes of VMs (1-8 vCPUs, busy, bursty or pinned, weights 128-1024) on the two-socket
  // SMT host, with core scheduling off and under each variant preset (cookie filters, forced
  // idle, cookie steals, the three core_priority levels): the group structures stay consistent
  // at every sample, and no run stops on a framework invariant (the dispatcher checks affinity,
  // one entity per thread and cookie compatibility on every switch).
  const std::vector<std::string> variants = {"", "csc", "aaron-full", "tim", "csc-tim", "v4", "v5", "mainline"};
  for (std::uint64_t seed = 1; seed <= 4; ++seed)
    for (const std::string& variant : variants) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " variant '" + variant + "'");
      hv::HostSpec hs;
      if (!variant.empty()) hs.core_sched = *hv::core_sched_preset(variant);
      TestHost h(test::x5570_2s(), hs, seed, "cfs", groups(true));
      sim::RngStream rng(seed, "cfs-groups-random");
      const std::uint32_t vms = 4 + static_cast<std::uint32_t>(rng.uniform() * 8);
      for (std::uint32_t i = 0; i < vms; ++i) {
        const auto n = 1 + static_cast<std::uint32_t>(rng.uniform() * 8);
        hv::DomainSpec d = test::vm("vm" + std::to_string(i), n);
        d.weight = 128u << static_cast<std::uint32_t>(rng.uniform() * 4);
        d.cookie = 1 + i;
        const double kind = rng.uniform();
        if (kind < 0.2)
          for (std::uint32_t k = 0; k < n; ++k) d.hard.push_back(topo::CpuSet::single((3 * i + 5 * k) % 16));
        if (kind < 0.5) h.add_vm(d, compute_sleep(2 * n, 100e3 + 400e3 * rng.uniform(), 200e3 + 800e3 * rng.uniform()));
        else h.add_vm(d, test::workload("sysbench-cpu", {{"threads", static_cast<double>(n)}}));
      }
      h.start();
      run_checked(h, sim::ms(400), sim::us(500));
    }
}

}  // namespace
}  // namespace vcpusim
