// SPDX-License-Identifier: MIT
// Pins the framework's checks in Host (hypervisor/host.h, dispatcher.cpp): a policy that breaks
// a rule is stopped with the rule named (hard-affinity, one-per-thread, runnable-pick,
// usable-thread), whatever policy it is -- so the bad policies here are written in this file on
// purpose; nosmt leaves exactly one usable thread per core and nothing ever runs on the others;
// the runstate accounting adds up (running + runnable + blocked = elapsed, run time = busy time)
// and shows steal when two entities share one pCPU, and SMT-shared time only beside a busy sibling.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "guest/program.h"
#include "hypervisor/host.h"
#include "hypervisor/policy_api.h"
#include "sim/sim_time.h"
#include "test_host.h"

namespace vcpusim {
namespace {

using hv::InvariantViolation;
using hv::Pick;
using hv::VcpuId;
using test::FakeGuest;
using test::TestHost;

// A policy whose answers the test scripts. It keeps no runqueue: every wake tickles every usable
// pCPU, highest id first (so pCPU 1 reschedules before pCPU 0 at the same instant), and
// pick_next / pick_cpu return whatever the test's functions say. Deliberately unchecked: the
// dispatcher is what is under test.
class ScriptedPolicy final : public hv::SchedulerPolicy {
 public:
  std::function<hv::PcpuId(VcpuId)> cpu_for = [](VcpuId) { return hv::PcpuId{0}; };
  std::function<Pick(hv::PcpuId)> pick = [](hv::PcpuId) { return Pick{}; };

  std::string_view name() const override { return "scripted"; }
  void attach(const hv::SchedContext& ctx) override {
    hv_ = &ctx.hv;
    act_ = &ctx.act;
  }
  void insert_vcpu(VcpuId) override {}
  hv::PcpuId pick_cpu(VcpuId v, sim::Time) override { return cpu_for(v); }
  void wake(VcpuId, sim::Time) override {
    const auto n = hv_->topology().num_threads();
    for (hv::PcpuId p = n; p-- > 0;)
      if (hv_->usable_pcpus().test(p)) act_->tickle(p);
  }
  void sleep(VcpuId, sim::Time) override {}
  Pick pick_next(hv::PcpuId p, sim::Time, const hv::PickFilter&) override { return pick(p); }
  void set_next(hv::PcpuId, VcpuId, sim::Time) override {}
  void put_prev(hv::PcpuId, VcpuId, sim::Time) override {}

  const hv::HypervisorView* hv_ = nullptr;
  hv::SchedActions* act_ = nullptr;
};

struct Scripted {
  ScriptedPolicy* policy;
  std::unique_ptr<TestHost> host;
};

Scripted scripted_host(const topo::TopologySpec& spec, hv::HostSpec hs = {}) {
  auto p = std::make_unique<ScriptedPolicy>();
  ScriptedPolicy* raw = p.get();
  return {raw, std::make_unique<TestHost>(spec, hs, 1, std::move(p))};
}

// Runs f and returns the InvariantViolation it throws (a failure if it throws none).
template <typename F>
InvariantViolation violation_of(F&& f) {
  try {
    f();
  } catch (const InvariantViolation& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InvariantViolation, none was thrown";
  return InvariantViolation("none", hv::kIdle, hv::kNoPcpu, 0, "");
}

TEST(HostInvariants, WellBehavedScriptRunsWithoutViolation) {
  // The control for the bad scripts below: the same harness with a legal answer (entity 0 on
  // pCPU 0 when it is runnable or current, idle elsewhere) runs cleanly.
  auto s = scripted_host(test::one_core_ht());
  auto a = s.host->add_fake(test::vm("a", 1, test::cpus({0})));
  s.policy->pick = [&](hv::PcpuId p) {
    const auto st = s.host->host().vcpu(0).state;
    if (p == 0 && st != hv::Runstate::kBlocked) return Pick{0, sim::ms(1)};
    return Pick{};
  };
  s.host->start();
  s.host->fake().set_plan(a.vcpus[0], FakeGuest::hog());
  s.host->fake().kick(a.vcpus[0]);
  EXPECT_NO_THROW(s.host->run_until(sim::ms(50)));
  EXPECT_NO_THROW(s.host->host().check_conservation());
  EXPECT_GT(s.host->fake().completions(a.vcpus[0]), 40u);
}

TEST(HostInvariants, PickOutsideHardAffinityIsStopped) {
  // Entity 0 may run only on pCPU 0; the script offers it to every pCPU. pCPU 1 reschedules
  // first (at t = 0) and picks it: rule hard-affinity, entity 0, pCPU 1, t = 0.
  auto s = scripted_host(test::one_core_ht());
  auto a = s.host->add_fake(test::vm("a", 1, test::cpus({0})));
  s.policy->pick = [](hv::PcpuId) { return Pick{0, sim::ms(1)}; };
  s.host->start();
  s.host->fake().set_plan(a.vcpus[0], FakeGuest::hog());
  s.host->fake().kick(a.vcpus[0]);
  InvariantViolation e = violation_of([&] { s.host->run_until(sim::ms(10)); });
  EXPECT_EQ(e.rule, "hard-affinity");
  EXPECT_EQ(e.vcpu, 0u);
  EXPECT_EQ(e.pcpu, 1u);
  EXPECT_EQ(e.time, 0);
}

TEST(HostInvariants, PickOfEntityRunningElsewhereIsStopped) {
  // Entity 0 may run anywhere; the script always answers "entity 0". pCPU 1 takes it first
  // (legal), then pCPU 0 picks it again while it runs on 1: rule one-per-thread on pCPU 0.
  auto s = scripted_host(test::one_core_ht());
  auto a = s.host->add_fake(test::vm("a", 1));
  s.policy->pick = [](hv::PcpuId) { return Pick{0, sim::ms(1)}; };
  s.host->start();
  s.host->fake().set_plan(a.vcpus[0], FakeGuest::hog());
  s.host->fake().kick(a.vcpus[0]);
  InvariantViolation e = violation_of([&] { s.host->run_until(sim::ms(10)); });
  EXPECT_EQ(e.rule, "one-per-thread");
  EXPECT_EQ(e.vcpu, 0u);
  EXPECT_EQ(e.pcpu, 0u);
  EXPECT_EQ(e.time, 0);
}

TEST(HostInvariants, PickOfBlockedEntityIsStopped) {
  // Entity 0 wakes; the script answers with entity 1, which was never woken (Blocked).
  auto s = scripted_host(test::one_core_ht());
  auto a = s.host->add_fake(test::vm("a", 1));
  s.host->add_fake(test::vm("b", 1));
  s.policy->pick = [](hv::PcpuId) { return Pick{1, sim::ms(1)}; };
  s.host->start();
  s.host->fake().set_plan(a.vcpus[0], FakeGuest::hog());
  s.host->fake().kick(a.vcpus[0]);
  InvariantViolation e = violation_of([&] { s.host->run_until(sim::ms(10)); });
  EXPECT_EQ(e.rule, "runnable-pick");
  EXPECT_EQ(e.vcpu, 1u);
}

TEST(HostInvariants, PickOfNonexistentEntityIsStopped) {
  auto s = scripted_host(test::one_core_ht());
  auto a = s.host->add_fake(test::vm("a", 1));
  s.policy->pick = [](hv::PcpuId) { return Pick{7, sim::ms(1)}; };
  s.host->start();
  s.host->fake().set_plan(a.vcpus[0], FakeGuest::hog());
  s.host->fake().kick(a.vcpus[0]);
  EXPECT_EQ(violation_of([&] { s.host->run_until(sim::ms(10)); }).rule, "runnable-pick");
}

TEST(HostInvariants, PickCpuOutsideHardAffinityIsStopped) {
  // pick_cpu places entity 0 (hard {0}) on pCPU 1: stopped inside the wake-up itself.
  auto s = scripted_host(test::one_core_ht());
  auto a = s.host->add_fake(test::vm("a", 1, test::cpus({0})));
  s.policy->cpu_for = [](VcpuId) { return hv::PcpuId{1}; };
  s.host->start();
  s.host->fake().set_plan(a.vcpus[0], FakeGuest::hog());
  InvariantViolation e = violation_of([&] { s.host->fake().kick(a.vcpus[0]); });
  EXPECT_EQ(e.rule, "hard-affinity");
  EXPECT_EQ(e.vcpu, 0u);
  EXPECT_EQ(e.pcpu, 1u);
}

TEST(HostInvariants, PickCpuOnDisabledSmtThreadIsStopped) {
  // nosmt on one core: only thread 0 is usable; pick_cpu answering 1 breaks usable-thread.
  hv::HostSpec hs;
  hs.smt = false;
  auto s = scripted_host(test::one_core_ht(), hs);
  auto a = s.host->add_fake(test::vm("a", 1));
  s.policy->cpu_for = [](VcpuId) { return hv::PcpuId{1}; };
  s.host->start();
  s.host->fake().set_plan(a.vcpus[0], FakeGuest::hog());
  EXPECT_EQ(violation_of([&] { s.host->fake().kick(a.vcpus[0]); }).rule, "usable-thread");
}

TEST(HostNosmt, OnlyTheFirstThreadOfEachCoreIsUsable) {
  // two_cores_ht: threads 0, 1 are the cores' first threads; 2, 3 their siblings.
  hv::HostSpec hs;
  hs.smt = false;
  TestHost h(test::two_cores_ht(), hs);
  EXPECT_EQ(h.host().usable_pcpus().count(), h.topology().num_cores());
  EXPECT_EQ(h.host().usable_pcpus(), test::cpus({0, 1}));
  EXPECT_TRUE(h.host().pcpu(0).usable);
  EXPECT_TRUE(h.host().pcpu(1).usable);
  EXPECT_FALSE(h.host().pcpu(2).usable);
  EXPECT_FALSE(h.host().pcpu(3).usable);
  EXPECT_EQ(h.host().idle_pcpus(), test::cpus({0, 1}));
}

TEST(HostNosmt, AffinityOnlyOnDisabledThreadsIsRejected) {
  hv::HostSpec hs;
  hs.smt = false;
  TestHost h(test::two_cores_ht(), hs);
  InvariantViolation e = violation_of([&] { h.add_fake(test::vm("a", 1, test::cpus({2, 3}))); });
  EXPECT_EQ(e.rule, "hard-affinity");
}

TEST(HostNosmt, NothingEverRunsOnADisabledThread) {
  // 4 hogs plus a VM whose threads compute and sleep (so wake-ups keep choosing pCPUs) on a
  // two-core machine with SMT off. Sampled every 100 us for 1 s: threads 2 and 3 stay idle and
  // every running entity is on 0 or 1. At the end they were never busy, and 0 and 1 always were
  // (4 hogs on 2 usable threads).
  hv::HostSpec hs;
  hs.smt = false;
  TestHost h(test::two_cores_ht(), hs);
  for (int i = 0; i < 4; ++i) {
    auto d = h.add_fake(test::vm("hog" + std::to_string(i), 1));
    h.fake().set_plan(d.vcpus[0], FakeGuest::hog());
  }
  h.add_vm(test::vm("web", 2),
           std::make_unique<guest::Program>(
               3, std::vector<guest::Phase>{{true, 200e3, guest::Phase::Dist::kExp, hv::Profile::kMixed, 0.3},
                                           {false, 1e6, guest::Phase::Dist::kExp, hv::Profile::kCpu, 0}}));
  h.start();
  for (VcpuId v = 0; v < 4; ++v) h.fake().kick(v);
  const sim::Time end = sim::seconds(1);
  std::uint64_t samples = 0;
  h.run_sampled(end, sim::us(100), [&] {
    ++samples;
    ASSERT_EQ(h.host().pcpu(2).curr, hv::kIdle) << "t=" << h.host().now();
    ASSERT_EQ(h.host().pcpu(3).curr, hv::kIdle) << "t=" << h.host().now();
    for (VcpuId v = 0; v < h.host().num_vcpus(); ++v) {
      if (h.host().is_running(v)) {
        ASSERT_LT(h.host().vcpu(v).pcpu, 2u) << "entity " << v;
      }
    }
  });
  EXPECT_EQ(samples, 10'000u);
  EXPECT_EQ(h.host().pcpu_busy(2), 0);
  EXPECT_EQ(h.host().pcpu_busy(3), 0);
  EXPECT_EQ(h.host().pcpu_busy(0), end);
  EXPECT_EQ(h.host().pcpu_busy(1), end);
  EXPECT_NO_THROW(h.host().check_conservation());
}

TEST(HostAccounting, RunstatesAddUpToElapsedTimeInAMixedRun) {
  // A mixed host: cpu, memory and sleeping VMs plus a pinned hog, 1.5x overcommit on 4 threads,
  // with a 100 ms warm-up. At every sampled instant, for every entity, running + runnable +
  // blocked equals the measured time exactly (integer ns), and the entities' run time equals the
  // pCPUs' busy time. At the end check_conservation() passes.
  hv::HostSpec hs;
  hs.warmup = sim::ms(100);
  TestHost h(test::two_cores_ht(), hs);
  h.add_vm(test::vm("cpu", 2), test::workload("sysbench-cpu", {{"threads", 3}, {"event_cv", 0.1}}));
  h.add_vm(test::vm("mem", 1), test::workload("sysbench-memory", {{"threads", 1}}));
  h.add_vm(test::vm("web", 2),
           std::make_unique<guest::Program>(
               4, std::vector<guest::Phase>{{true, 300e3, guest::Phase::Dist::kExp, hv::Profile::kMixed, 0.3},
                                           {false, 700e3, guest::Phase::Dist::kExp, hv::Profile::kCpu, 0}}));
  auto hog = h.add_fake(test::vm("hog", 1, test::cpus({0})));
  h.start();
  h.fake().set_plan(hog.vcpus[0], FakeGuest::hog(250e3));
  h.fake().kick(hog.vcpus[0]);
  ASSERT_EQ(h.host().num_vcpus(), 6u);
  auto check = [&] {
    const sim::Duration meas = h.host().measured();
    sim::Duration run = 0, busy = 0;
    for (VcpuId v = 0; v < h.host().num_vcpus(); ++v) {
      const hv::VcpuStats s = h.host().vcpu_stats(v);
      ASSERT_EQ(s.running + s.runnable + s.blocked, meas) << "entity " << v << " t=" << h.host().now();
      ASSERT_GE(s.running, 0);
      ASSERT_GE(s.runnable, 0);
      ASSERT_GE(s.blocked, 0);
      run += s.running;
    }
    for (hv::PcpuId p = 0; p < h.topology().num_threads(); ++p) busy += h.host().pcpu_busy(p);
    ASSERT_EQ(run, busy) << "t=" << h.host().now();
  };
  h.run_sampled(sim::ms(1500), sim::us(997), check);  // a step that does not divide the slices
  EXPECT_EQ(h.host().measured(), h.host().now() - sim::ms(100));
  EXPECT_NO_THROW(h.host().check_conservation());
  // The mix really was mixed: someone waited, someone slept.
  sim::Duration runnable = 0, blocked = 0;
  for (VcpuId v = 0; v < h.host().num_vcpus(); ++v) {
    runnable += h.host().vcpu_stats(v).runnable;
    blocked += h.host().vcpu_stats(v).blocked;
  }
  EXPECT_GT(runnable, 0);
  EXPECT_GT(blocked, 0);
}

TEST(HostAccounting, TwoEntitiesOnOnePcpuEachStealAboutHalf) {
  // Two hogs pinned to pCPU 0 (its sibling idles) under rr with a 30 ms slice: they alternate
  // slices, so over T each runs T/2 and waits (steal, runnable) T/2, to within half a slice;
  // neither ever blocks and pCPU 0 is never idle.
  const sim::Duration slice = sim::ms(30), T = sim::seconds(3);
  TestHost h(test::one_core_ht());
  auto a = h.add_fake(test::vm("a", 1, test::cpus({0})));
  auto b = h.add_fake(test::vm("b", 1, test::cpus({0})));
  h.start();
  for (VcpuId v : {a.vcpus[0], b.vcpus[0]}) {
    h.fake().set_plan(v, FakeGuest::hog());
    h.fake().kick(v);
  }
  h.run_until(T);
  for (VcpuId v : {a.vcpus[0], b.vcpus[0]}) {
    const hv::VcpuStats s = h.host().vcpu_stats(v);
    EXPECT_EQ(s.blocked, 0) << v;
    EXPECT_EQ(s.running + s.runnable, T) << v;
    EXPECT_NEAR(static_cast<double>(s.runnable), T / 2.0, slice / 2.0) << v;
    EXPECT_NEAR(static_cast<double>(s.running), T / 2.0, slice / 2.0) << v;
    // One switch-in per slice it got: about T / (2 slice) = 50.
    EXPECT_NEAR(static_cast<double>(s.context_switches), T / (2.0 * slice), 1.0) << v;
    // Time-sharing one thread is not SMT sharing: the sibling never runs anything.
    EXPECT_EQ(s.smt_shared, 0) << v;
  }
  EXPECT_EQ(h.host().pcpu_busy(0), T);
  EXPECT_EQ(h.host().pcpu_busy(1), 0);
  EXPECT_NO_THROW(h.host().check_conservation());
}

TEST(HostAccounting, SmtSharedTimeIsRunningTimeBesideABusySibling) {
  // One core, two threads. A hog on thread 0 throughout; a job on thread 1 of 105 ms of cpu
  // work, which beside the hog runs at the cpu/cpu co-run factor 0.525 (exec_model.cpp), so for
  // 200 ms of wall time (plus its switch-in), then halts. Each was beside a busy sibling exactly while the job ran:
  // the hog for the job's running time, the job for all of its own; after that the hog runs
  // alone and its shared time stops growing.
  TestHost h(test::one_core_ht());
  auto a = h.add_fake(test::vm("a", 1, test::cpus({0})));
  auto b = h.add_fake(test::vm("b", 1, test::cpus({1})));
  h.start();
  h.fake().set_plan(a.vcpus[0], FakeGuest::hog());
  h.fake().set_plan(b.vcpus[0], FakeGuest::job(105e6));
  h.fake().kick(a.vcpus[0]);
  h.fake().kick(b.vcpus[0]);
  h.run_until(sim::ms(100));
  EXPECT_EQ(h.host().vcpu_stats(a.vcpus[0]).smt_shared, sim::ms(100));  // the open stretch counts
  h.run_until(sim::seconds(1));
  const hv::VcpuStats sa = h.host().vcpu_stats(a.vcpus[0]), sb = h.host().vcpu_stats(b.vcpus[0]);
  ASSERT_EQ(h.fake().completions(b.vcpus[0]), 1u);
  // Its running time is the work at 0.525 plus the switch-in stall before it starts.
  EXPECT_EQ(sb.running, static_cast<sim::Duration>(105e6 / 0.525) + hv::ExecParams{}.context_switch);
  EXPECT_EQ(sb.smt_shared, sb.running);
  EXPECT_EQ(sa.smt_shared, sb.running);
  EXPECT_EQ(sa.running, sim::seconds(1));
}

}  // namespace
}  // namespace vcpusim
