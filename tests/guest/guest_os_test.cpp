// SPDX-License-Identifier: MIT
// Pins the guest OS model (guest/guest_os.h) as the host sees it: a vCPU with no runnable thread
// halts (Blocked on the host); a thread's wake-up kicks its halted vCPU; threads sharing vCPUs
// rotate every guest slice of work, so equal threads progress equally; bare metal maps thread i
// to entity i; and a program's block phases show up as the expected blocked share.
// Expected values are computed by hand from the rules in guest_os.h, the host's context-switch
// cost (cs: 2 us per switch-in, during which the pCPU is busy but no work progresses) and the
// guest's (gcs: 2 us each time a vCPU switches to a thread, from another or from idle).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "guest/guest_os.h"
#include "guest/program.h"
#include "guest/spinlock.h"
#include "guest/workload.h"
#include "hypervisor/host.h"
#include "hypervisor/policy_api.h"
#include "sim/sim_time.h"
#include "long_holder.h"
#include "test_host.h"

namespace vcpusim {
namespace {

using guest::Phase;
using test::CountingWorkload;
using test::TestHost;

constexpr sim::Duration kCs = sim::us(2);
constexpr sim::Duration kGuestCs = guest::GuestParams{}.context_switch;  // a switch to a thread

std::unique_ptr<guest::Program> program(std::uint32_t threads, std::vector<Phase> phases) {
  return std::make_unique<guest::Program>(threads, std::move(phases));
}
Phase compute(double ns) { return Phase{true, ns, Phase::Dist::kConst, hv::Profile::kCpu, 0}; }
Phase block(double ns) { return Phase{false, ns, Phase::Dist::kConst, hv::Profile::kCpu, 0}; }

TEST(GuestOs, VcpuWithNoRunnableThreadHalts) {
  // One thread computes 1 ms then blocks 10 ms. Switched in at t = 0, the vCPU stalls cs, the
  // guest switches to the thread (gcs), which computes until 1 ms + cs + gcs and blocks: the vCPU
  // has nothing to run and halts, so at 2 ms it is Blocked on the host and its pCPU idles.
  TestHost h(test::one_core_ht());
  auto vm = h.add_vm(test::vm("a", 1, test::cpus({0})), program(1, {compute(1e6), block(10e6)}));
  h.start();
  h.run_until(sim::ms(2));
  const hv::VcpuId v = vm.vcpus[0];
  EXPECT_TRUE(h.host().is_blocked(v));
  EXPECT_EQ(h.host().pcpu(0).curr, hv::kIdle);
  EXPECT_EQ(h.host().vcpu_stats(v).running, sim::ms(1) + kCs + kGuestCs);
  EXPECT_EQ(h.host().vcpu_stats(v).blocked, sim::ms(2) - (sim::ms(1) + kCs + kGuestCs));
}

TEST(GuestOs, StartJitterDelaysEachThreadWithinTheWindowFromItsOwnStream) {
  // Four 1-thread VMs with start_jitter 10 ms, each vCPU on its own thread: a vCPU stays halted
  // until its thread's delay U(0, 10 ms) ends, then runs to the end: its blocked time is that
  // delay, inside [0, 10 ms), different between VMs (their own streams), the same for the same
  // seed. Without jitter every vCPU runs from 0.
  auto delays = [](std::uint64_t seed, sim::Duration jitter) {
    TestHost h(test::two_cores_ht(), {}, seed);
    std::vector<TestHost::Vm> vms;
    for (int i = 0; i < 4; ++i)
      vms.push_back(h.add_vm(test::vm("v" + std::to_string(i), 1), test::workload("sysbench-cpu", {{"threads", 1}}),
                             guest::GuestParams{sim::ms(3), jitter}));
    h.start();
    h.run_until(sim::ms(50));
    std::vector<sim::Duration> out;
    for (auto& vm : vms) out.push_back(h.host().vcpu_stats(vm.vcpus[0]).blocked);
    return out;
  };
  const auto a = delays(1, sim::ms(10)), b = delays(1, sim::ms(10)), c = delays(2, sim::ms(10));
  for (sim::Duration d : a) {
    EXPECT_GE(d, 0);
    EXPECT_LT(d, sim::ms(10));
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a[0], a[1]);
  for (sim::Duration d : delays(1, 0)) EXPECT_EQ(d, 0);
}

TEST(GuestOs, VcpuWithoutAnyThreadStaysHaltedThroughout) {
  // One sysbench thread on a 2-vCPU VM: thread 0 goes to vCPU 0; vCPU 1 never has a thread, so it
  // is never woken: blocked for the whole run.
  TestHost h(test::two_cores_ht());
  auto vm = h.add_vm(test::vm("a", 2), test::workload("sysbench-cpu", {{"threads", 1}}));
  h.start();
  h.run_until(sim::ms(500));
  EXPECT_EQ(h.host().vcpu_stats(vm.vcpus[1]).blocked, sim::ms(500));
  EXPECT_EQ(h.host().vcpu_stats(vm.vcpus[1]).wakeups, 0u);
  EXPECT_EQ(h.host().vcpu_stats(vm.vcpus[0]).running, sim::ms(500));
}

TEST(GuestOs, ThreadWakeupKicksItsHaltedVcpu) {
  // Same program: the block ends at 1 ms + cs + gcs + 10 ms = 11.004 ms; the guest timer wakes
  // the thread, which kicks its halted vCPU: the host wakes it (second wake-up) and runs it at
  // once on the idle pCPU; after another cs + gcs and 1 ms of work it halts again at 12.008 ms.
  TestHost h(test::one_core_ht());
  auto vm = h.add_vm(test::vm("a", 1, test::cpus({0})), program(1, {compute(1e6), block(10e6)}));
  h.start();
  const hv::VcpuId v = vm.vcpus[0];
  h.run_until(sim::ms(11));
  EXPECT_TRUE(h.host().is_blocked(v));
  EXPECT_EQ(h.host().vcpu_stats(v).wakeups, 1u);
  h.run_until(sim::ms(11) + sim::us(500));
  EXPECT_TRUE(h.host().is_running(v));
  EXPECT_EQ(h.host().vcpu_stats(v).wakeups, 2u);
  EXPECT_EQ(h.host().vcpu_stats(v).runnable, 0);  // the idle pCPU took it at the instant of the kick
  h.run_until(sim::ms(13));
  EXPECT_TRUE(h.host().is_blocked(v));
  EXPECT_EQ(h.host().vcpu_stats(v).running, 2 * (sim::ms(1) + kCs + kGuestCs));
}

TEST(GuestOs, ThreadsSharingVcpusProgressEvenly) {
  // 4 sysbench-cpu threads on 2 vCPUs pinned to different cores (siblings idle: rate 1). Threads
  // 0 and 2 share vCPU 0, 1 and 3 vCPU 1; each vCPU runs all the time and rotates its two
  // threads every 3 ms guest slice of work, each rotation costing the guest's switch gcs (as
  // does the first switch, from idle). Over T = 3 s each vCPU rotates
  // n = floor((T - cs - gcs) / (slice + gcs)) times and does W = T - cs - (n + 1) gcs of work,
  // so each thread does W / 2 to within half a slice, i.e. completes
  //   W / (2 E) events, +- (slice / 2 + E) / E   (E = one event; one may be part-done).
  const sim::Duration T = sim::seconds(3), slice = sim::ms(3);
  const double E = 1e9 / 1306.90;
  TestHost h(test::two_cores_ht());
  auto counting = std::make_unique<CountingWorkload>(
      test::workload("sysbench-cpu", {{"threads", 4}, {"events_per_step", 1}}));
  CountingWorkload* cw = counting.get();
  auto vm = h.add_vm(test::vm_pinned_each("a", {0, 1}), std::move(counting));
  h.start();
  h.run_until(T);
  const double n = std::floor(static_cast<double>(T - kCs - kGuestCs) / static_cast<double>(slice + kGuestCs));
  const double W = static_cast<double>(T - kCs) - (n + 1) * static_cast<double>(kGuestCs);
  const double per_thread = W / (2 * E);
  double total = 0;
  for (std::uint32_t t = 0; t < 4; ++t) {
    EXPECT_NEAR(cw->results(t), per_thread, (slice / 2.0 + E) / E) << "thread " << t;
    total += cw->results(t);
  }
  // All of it: each vCPU's two threads may each hold one part-done event at the end.
  EXPECT_LE(total, 2 * W / E);
  EXPECT_GE(total, 2 * W / E - 4);
  EXPECT_DOUBLE_EQ(vm.os->results().results, total);
}

// A workload whose thread i computes work[i] ns once and then sleeps for good: which entity
// ran which thread, and when, shows in the entities' run times.
class OnceWorkload final : public guest::Workload {
 public:
  explicit OnceWorkload(std::vector<double> work) : work_(std::move(work)), done_(work_.size(), false) {}
  std::string_view kind() const override { return "once"; }
  std::uint32_t threads() const override { return static_cast<std::uint32_t>(work_.size()); }
  guest::Step next(std::uint32_t t, sim::RngStream&) override {
    if (!done_[t]) {
      done_[t] = true;
      return guest::Step{guest::Step::Kind::kCompute, work_[t], hv::Profile::kCpu, 0, 0, 1};
    }
    return guest::Step{guest::Step::Kind::kBlock, 0, hv::Profile::kCpu, 0, sim::seconds(1000), 0};
  }
  std::string_view unit() const override { return "steps/s"; }

 private:
  std::vector<double> work_;
  std::vector<bool> done_;
};

/// cfs, recording what HypervisorView::wake_source() says at every pick_cpu.
class WakeSourceSpy final : public hv::SchedulerPolicy {
 public:
  struct Seen {
    hv::VcpuId v;
    hv::WakeSource src;
  };
  WakeSourceSpy() : inner_(TestHost::make_policy("cfs")) {}
  std::vector<Seen>* seen = nullptr;
  std::string_view name() const override { return inner_->name(); }
  void attach(const hv::SchedContext& ctx) override {
    hv_ = &ctx.hv;
    inner_->attach(ctx);
  }
  void insert_vcpu(hv::VcpuId v) override { inner_->insert_vcpu(v); }
  hv::PcpuId pick_cpu(hv::VcpuId v, sim::Time now) override {
    seen->push_back(Seen{v, hv_->wake_source()});
    return inner_->pick_cpu(v, now);
  }
  void wake(hv::VcpuId v, sim::Time now) override { inner_->wake(v, now); }
  void sleep(hv::VcpuId v, sim::Time now) override { inner_->sleep(v, now); }
  int yield(hv::VcpuId v, hv::VcpuId to, sim::Time now) override { return inner_->yield(v, to, now); }
  hv::Pick pick_next(hv::PcpuId p, sim::Time now, const hv::PickFilter& f) override { return inner_->pick_next(p, now, f); }
  void set_next(hv::PcpuId p, hv::VcpuId v, sim::Time now) override { inner_->set_next(p, v, now); }
  void put_prev(hv::PcpuId p, hv::VcpuId v, sim::Time now) override { inner_->put_prev(p, v, now); }
  double core_priority(hv::PcpuId p, hv::VcpuId v, hv::CorePrio how) const override { return inner_->core_priority(p, v, how); }
  void on_timer(hv::TimerId t, sim::Time now) override { inner_->on_timer(t, now); }

 private:
  std::unique_ptr<hv::SchedulerPolicy> inner_;
  const hv::HypervisorView* hv_ = nullptr;
};

/// Request/reply over two channels: thread 0 computes 50 us, sends a request on channel 0 and
/// waits for the reply on channel 1; thread 1 waits for a request, computes 10 us and replies.
class RequestReply final : public guest::Workload {
 public:
  std::string_view kind() const override { return "request-reply"; }
  std::uint32_t threads() const override { return 2; }
  std::uint32_t channels() const override { return 2; }
  guest::Step next(std::uint32_t t, sim::RngStream&) override {
    guest::Step s;
    if ((step_[t]++ % 2 == 0) == (t == 0)) {  // client: even steps send; server: odd steps reply
      s.work_ns = t == 0 ? 50e3 : 10e3;
      s.send_to = t == 0 ? 0 : 1;
    } else {
      s.kind = guest::Step::Kind::kReceive;
      s.channel = t == 0 ? 1 : 0;
      s.result = t == 0 ? 1 : 0;
    }
    return s;
  }
  std::string_view unit() const override { return "replies/s"; }

 private:
  std::uint32_t step_[2] = {0, 0};
};

TEST(GuestOs, WakeUpsNameTheirWakerAndSocketSendsAreSync) {
  // Bare metal: every wake-up of the server is the client's send and every wake-up of the
  // client the server's reply: each names the sender, as WF_SYNC (sock_def_readable). In a VM,
  // a thread woken by a mutex hand-off on another vCPU wakes its halted vCPU through the
  // reschedule IPI, which names the releasing vCPU and is not sync (kvm_vcpu_kick). The first
  // wake-up of each entity (its fork) names nobody.
  {
    std::vector<WakeSourceSpy::Seen> seen;
    auto spy = std::make_unique<WakeSourceSpy>();
    spy->seen = &seen;
    TestHost h(test::flat(2), {}, 1, std::move(spy));
    hv::DomainSpec d = test::vm("rr", 2);
    d.bare_metal = true;
    auto rr = h.add_vm(d, std::make_unique<RequestReply>());
    h.start();
    h.run_until(sim::ms(20));
    ASSERT_GT(rr.os->results().results, 100.0);
    std::uint32_t named = 0;
    for (std::size_t i = 2; i < seen.size(); ++i) {  // the two forks first
      const hv::VcpuId other = seen[i].v == rr.vcpus[0] ? rr.vcpus[1] : rr.vcpus[0];
      EXPECT_EQ(seen[i].src.by.vcpu, other) << "wake-up " << i;
      EXPECT_TRUE(seen[i].src.sync) << "wake-up " << i;
      named += seen[i].src.by.vcpu == other;
    }
    EXPECT_GT(named, 100u);
    EXPECT_EQ(seen[0].src.by.vcpu, hv::kIdle);
  }
  {
    std::vector<WakeSourceSpy::Seen> seen;
    auto spy = std::make_unique<WakeSourceSpy>();
    spy->seen = &seen;
    TestHost h(test::flat(2), {}, 1, std::move(spy));
    guest::LockParams mutex;
    mutex.kind = guest::LockKind::kMutex;  // thread 1 sleeps through each 1 ms hold, its vCPU halted
    auto vm = h.add_vm(test::vm_pinned_each("vm", {0, 1}), std::make_unique<test::LongHolder>(mutex, 1e6));
    h.start();
    h.run_until(sim::ms(20));
    std::uint32_t by_ipi = 0;
    for (const auto& x : seen)
      if (x.src.by.vcpu != hv::kIdle) {
        EXPECT_NE(x.src.by.vcpu, x.v);
        EXPECT_TRUE(x.src.by.vcpu == vm.vcpus[0] || x.src.by.vcpu == vm.vcpus[1]);
        EXPECT_FALSE(x.src.sync);
        ++by_ipi;
      }
    EXPECT_GT(by_ipi, 5u);
  }
}

TEST(GuestOs, IdleVcpuPullsAWaitingThread) {
  // 3 threads on 2 vCPUs (pinned to two cores): threads 0 and 2 start on vCPU 0, thread 1 on
  // vCPU 1. Thread 0 computes 2 ms, threads 1 and 2 1 ms each, then all sleep for good. At
  // 1 ms + cs + gcs thread 1 sleeps; vCPU 1 has nothing of its own and, before halting, steals
  // thread 2 from vCPU 0's queue (newidle balance), a switch from thread 1 to thread 2 (gcs). So
  // by 2 ms + cs + 2 gcs all three are done, vCPU 1 having run 2 ms + cs + 2 gcs; without the
  // steal thread 2 would wait for vCPU 0 until 2 ms + cs + gcs and then run 1 ms more.
  TestHost h(test::flat(2));
  auto vm = h.add_vm(test::vm_pinned_each("a", {0, 1}),
                     std::make_unique<OnceWorkload>(std::vector<double>{2e6, 1e6, 1e6}));
  h.start();
  h.run_until(sim::ms(2) + kCs + 2 * kGuestCs);
  EXPECT_EQ(vm.os->results().steps, 3u);
  EXPECT_TRUE(h.host().is_blocked(vm.vcpus[0]));
  EXPECT_TRUE(h.host().is_blocked(vm.vcpus[1]));
  EXPECT_EQ(h.host().vcpu_stats(vm.vcpus[0]).running, sim::ms(2) + kCs + kGuestCs);
  EXPECT_EQ(h.host().vcpu_stats(vm.vcpus[1]).running, sim::ms(2) + kCs + 2 * kGuestCs);
}

TEST(GuestOs, EverySwitchToAThreadCostsTheGuestsSwitchButResumingOneDoesNot) {
  // Exact host (no switch-in cost). One vCPU, threads 0 and 1 of 1 ms each, then both sleep for
  // good: the guest switches to thread 0 (gcs of no progress: from idle, at the start), which is
  // done at 1 ms + gcs, then to thread 1 (gcs), done at 2 ms + 2 gcs; the vCPU then halts. With
  // context_switch 0 it is done at 2 ms. Both switches are counted either way.
  for (const sim::Duration gcs : {sim::Duration{0}, kGuestCs, sim::us(10)}) {
    guest::GuestParams gp;
    gp.context_switch = gcs;
    TestHost h(test::flat(1), test::exact_host());
    auto vm = h.add_vm(test::vm("a", 1), std::make_unique<OnceWorkload>(std::vector<double>{1e6, 1e6}), gp);
    h.start();
    h.run_until(sim::ms(2) + 2 * gcs - 1);
    EXPECT_EQ(vm.os->results().steps, 1u) << gcs;
    h.run_until(sim::ms(3));
    EXPECT_EQ(vm.os->results().steps, 2u) << gcs;
    EXPECT_EQ(h.host().vcpu_stats(vm.vcpus[0]).running, sim::ms(2) + 2 * gcs) << gcs;
    EXPECT_EQ(vm.os->results().thread_switches, 2u) << gcs;
  }
  // A thread that blocks and is woken later finds its vCPU halted: leaving the idle loop for it
  // costs the guest its switch again. One thread, 1 ms of work, a 10 ms sleep, 1 ms more:
  // 2 ms + 2 gcs of running.
  {
    TestHost h(test::flat(1), test::exact_host());
    auto vm = h.add_vm(test::vm("a", 1), program(1, {compute(1e6), block(10e6)}));
    h.start();
    h.run_until(sim::ms(12) + sim::us(500));
    EXPECT_EQ(h.host().vcpu_stats(vm.vcpus[0]).running, sim::ms(2) + 2 * kGuestCs);
    EXPECT_TRUE(h.host().is_blocked(vm.vcpus[0]));
    EXPECT_EQ(vm.os->results().thread_switches, 2u);
  }
  // A vCPU the host preempts resumes the thread it was running: no guest switch. Two 1-vCPU
  // VMs of one busy thread each share one pCPU; the host switches between them many times, the
  // guests each switch once, to their thread at the start.
  TestHost h(test::flat(1), test::exact_host());
  auto a = h.add_vm(test::vm("a", 1), test::workload("sysbench-cpu", {{"threads", 1}}));
  auto b = h.add_vm(test::vm("b", 1), test::workload("sysbench-cpu", {{"threads", 1}}));
  h.start();
  h.run_until(sim::ms(200));
  EXPECT_GT(h.host().vcpu_stats(a.vcpus[0]).context_switches, 3u);
  EXPECT_EQ(a.os->results().thread_switches, 1u);
  EXPECT_EQ(b.os->results().thread_switches, 1u);
}

TEST(GuestOs, BareMetalMapsThreadIToEntityI) {
  // Bare metal: no guest scheduler, thread i is entity i. Thread i computes (i + 1) ms once; on a
  // 4-core machine without SMT each runs alone at rate 1: entity i runs cs + (i + 1) ms, halts.
  TestHost h(test::flat(4));
  hv::DomainSpec d = test::vm("tasks", 3);
  d.bare_metal = true;
  auto bm = h.add_vm(d, std::make_unique<OnceWorkload>(std::vector<double>{1e6, 2e6, 3e6}));
  h.start();
  h.run_until(sim::ms(10));
  for (std::uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(h.host().vcpu_stats(bm.vcpus[i]).running, kCs + sim::ms(i + 1)) << "entity " << i;
    EXPECT_TRUE(h.host().is_blocked(bm.vcpus[i]));
  }
  EXPECT_TRUE(h.host().domain(bm.id).bare_metal);
}

TEST(GuestOs, BareMetalNeedsOneEntityPerThread) {
  TestHost h(test::flat(4));
  hv::DomainSpec d = test::vm("tasks", 2);
  d.bare_metal = true;
  EXPECT_THROW(h.add_vm(d, std::make_unique<OnceWorkload>(std::vector<double>{1e6, 2e6, 3e6})), std::invalid_argument);
}

TEST(GuestOs, ProgramBlockPhasesGiveTheExpectedBlockedShare) {
  // compute 1 ms / block 1 ms (constant), one thread alone on a core. One loop: switch-in (cs),
  // 1 ms of work, halt, 1 ms blocked, wake at once onto the idle pCPU. Loop length L = 2 ms + cs,
  // blocked 1 ms of it: share 1 / 2.002 = 49.95%. Over T = 1 s the part-done last loop moves the
  // share by at most L / T.
  const sim::Duration T = sim::seconds(1);
  const double L = 2e6 + static_cast<double>(kCs);
  TestHost h(test::one_core_ht());
  auto vm = h.add_vm(test::vm("a", 1, test::cpus({0})), program(1, {compute(1e6), block(1e6)}));
  h.start();
  h.run_until(T);
  const auto s = h.host().vcpu_stats(vm.vcpus[0]);
  const double share = static_cast<double>(s.blocked) / static_cast<double>(T);
  EXPECT_NEAR(share, 1e6 / L, L / static_cast<double>(T));
  EXPECT_EQ(s.runnable, 0);
  // Loops completed (one result per loop): T / L, the last one possibly unfinished.
  EXPECT_NEAR(vm.os->results().results, static_cast<double>(T) / L, 1.0);
}

TEST(GuestOs, ResultsCountOnlyAfterWarmup) {
  // One sysbench-cpu thread alone (rate 1, one event per step) with a 100 ms warm-up, run to
  // 1.1 s: events complete at cs + k E; only those at or after 100 ms count, i.e. (1 s) / E of
  // them to within one event, and the throughput divides by the measured 1 s, not the 1.1 s run.
  hv::HostSpec hs;
  hs.warmup = sim::ms(100);
  const double E = 1e9 / 1306.90;
  TestHost h(test::one_core_ht(), hs);
  auto vm = h.add_vm(test::vm("a", 1, test::cpus({0})),
                     test::workload("sysbench-cpu", {{"threads", 1}, {"events_per_step", 1}}));
  h.start();
  h.run_until(sim::ms(1100));
  EXPECT_EQ(h.host().measured(), sim::seconds(1));
  const guest::GuestResults r = vm.os->results();
  EXPECT_NEAR(r.results, 1e9 / E, 1.0);
  EXPECT_NEAR(r.throughput, 1306.90, 1.0);
  EXPECT_NEAR(static_cast<double>(r.steps), (1.1e9 - static_cast<double>(kCs)) / E, 1.0);  // all time
}

}  // namespace
}  // namespace vcpusim
