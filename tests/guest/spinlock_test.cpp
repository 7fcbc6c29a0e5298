// SPDX-License-Identifier: MIT
// Pins the guest locks (guest/spinlock.h, guest/mutex.h) as GuestOs runs them (guest_os.h,
// "Locks"): ticket locks hand over in ticket order, always; lock-holder preemption stretches the
// hold and makes waiters burn spin time; a next waiter whose vCPU is preempted leaves the lock
// unusable and is counted as LWP; PV ticket locks halt after SPIN_THRESHOLD and are always kicked
// (the framework's lost-kick check fires when a kick is dropped); a mutex never spins; ebizzy
// and dbench run and report in their units.
#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "guest/guest_os.h"
#include "guest/lock_workloads.h"
#include "guest/spinlock.h"
#include "guest/workload.h"
#include "hypervisor/host.h"
#include "sim/params.h"
#include "sim/sim_time.h"
#include "long_holder.h"
#include "test_host.h"

namespace vcpusim {
namespace {

using guest::LockKind;
using guest::LockParams;
using test::TestHost;

/// Every thread loops: `pre` ns of work, then lock 0 held for `hold` ns (constant, by hand).
class LockLoop final : public guest::Workload {
 public:
  LockLoop(std::uint32_t threads, double pre, double hold, LockParams p) : n_(threads), pre_(pre), hold_(hold), p_(p) {}
  std::string_view kind() const override { return "lock-loop"; }
  std::uint32_t threads() const override { return n_; }
  guest::Step next(std::uint32_t, sim::RngStream&) override {
    guest::Step s;
    s.work_ns = pre_;
    s.result = 1;
    s.lock = 0;
    s.hold_ns = hold_;
    return s;
  }
  std::string_view unit() const override { return "loops/s"; }
  std::vector<guest::LockSpec> locks() const override { return {guest::LockSpec{"l", p_}}; }

 private:
  std::uint32_t n_;
  double pre_, hold_;
  LockParams p_;
};

LockParams kind(LockKind k) {
  LockParams p;
  p.kind = k;
  return p;
}

/// Records requests, acquisitions and releases; checks mutual exclusion as it goes.
struct Recorder final : guest::LockObserver {
  std::vector<std::uint32_t> requests, acquires;
  std::vector<sim::Time> acquire_t, release_t;
  std::uint32_t holder = ~0u;
  bool overlap = false;
  void requested(std::uint32_t, std::uint32_t t, sim::Time) override { requests.push_back(t); }
  void acquired(std::uint32_t, std::uint32_t t, sim::Time at) override {
    if (holder != ~0u) overlap = true;
    holder = t;
    acquires.push_back(t);
    acquire_t.push_back(at);
  }
  void released(std::uint32_t, std::uint32_t t, sim::Time at) override {
    if (holder != t) overlap = true;
    holder = ~0u;
    release_t.push_back(at);
  }
};

/// Runs workload `w` in VM `d` on `h` for `t`, checking mutual exclusion throughout, and returns
/// the guest's results.
guest::GuestResults run_checked(TestHost& h, hv::DomainSpec d, std::unique_ptr<guest::Workload> w, sim::Duration t) {
  auto g = h.add_vm(std::move(d), std::move(w));
  Recorder rec;
  g.os->set_lock_observer(&rec);
  h.start();
  h.run_until(t);
  EXPECT_FALSE(rec.overlap);
  return g.os->results();
}

sim::ParamValues rr_slice(double ns) {
  sim::ParamValues v;
  v.set("slice", ns);
  return v;
}

TEST(Spinlock, TicketLockHandsOverInTicketOrder) {
  // Four vCPUs on two pCPUs (rr, 100 us slices), four threads hammering one ticket lock: every
  // acquisition follows the order of the requests, and no two threads ever hold it together.
  TestHost h(test::flat(2), {}, 1, "rr", rr_slice(100e3));
  auto g = h.add_vm(test::vm("a", 4), std::make_unique<LockLoop>(4, 20e3, 20e3, kind(LockKind::kTicket)));
  Recorder rec;
  g.os->set_lock_observer(&rec);
  h.start();
  h.run_until(sim::ms(50));
  ASSERT_GT(rec.acquires.size(), 100u);
  EXPECT_FALSE(rec.overlap);
  ASSERT_LE(rec.acquires.size(), rec.requests.size());
  for (std::size_t i = 0; i < rec.acquires.size(); ++i) ASSERT_EQ(rec.acquires[i], rec.requests[i]) << "at " << i;
}

TEST(Spinlock, HolderPreemptionStretchesHoldAndBurnsSpin) {
  // Two vCPUs of one VM share one pCPU (rr, 100 us slices); each thread holds the lock for
  // 500 us of work after 10 us outside it. The holder's vCPU is preempted several times per
  // hold, and while it is off the other vCPU runs only to spin: the hold's wall time about
  // doubles, and about half of the VM's CPU time is spin.
  TestHost h(test::flat(1), {}, 1, "rr", rr_slice(100e3));
  auto g = h.add_vm(test::vm("a", 2), std::make_unique<LockLoop>(2, 10e3, 500e3, kind(LockKind::kTicket)));
  h.start();
  h.run_until(sim::ms(100));
  const guest::GuestResults r = g.os->results();
  const guest::LockStats& s = r.locks;
  ASSERT_GT(s.acquisitions, 20u);
  EXPECT_GT(s.lhp, s.acquisitions);  // several preemptions per hold with a waiter spinning
  const double mean_hold = s.hold_ns / static_cast<double>(s.acquisitions);
  EXPECT_GT(mean_hold, 1.6 * 500e3);
  double run = 0;
  for (auto v : g.vcpus) run += static_cast<double>(h.host().vcpu_stats(v).running);
  EXPECT_GT(s.spin_ns / run, 0.3);
  EXPECT_LT(s.spin_ns / run, 0.6);
  EXPECT_EQ(s.halts, 0u);
}

TEST(Spinlock, SpinTimeCountsOnlyInsideTheMeasuredInterval) {
  // Two threads on two vCPUs, each on its own pCPU, holding the lock 30 ms after 1 us outside
  // it: one thread always spins while the other holds. Spins run 0-30, 30-60 and 60-90 ms (the
  // one from 90 ms has not ended at 100 ms, so it is not counted yet). With a 20 ms warm-up the
  // first spin counts only its last 10 ms: 70 ms in all, not 90, so that spin_ns over the
  // measured run time (here 2 x 80 ms) is a share that cannot pass 100%.
  hv::HostSpec hs;
  hs.warmup = sim::ms(20);
  TestHost h(test::flat(2), hs, 1, "rr", rr_slice(100e3));
  auto g = h.add_vm(test::vm("a", 2), std::make_unique<LockLoop>(2, 1e3, 30e6, kind(LockKind::kTicket)));
  h.start();
  h.run_until(sim::ms(100));
  EXPECT_NEAR(g.os->results().locks.spin_ns, 70e6, 0.05e6);
}

TEST(Spinlock, NoContentionNoSpinNoPreemptionEvents) {
  // One vCPU per pCPU: nobody is ever preempted, so no LHP or LWP, whatever the contention.
  TestHost h(test::flat(4), {}, 1, "rr", rr_slice(100e3));
  auto g = h.add_vm(test::vm("a", 4), std::make_unique<LockLoop>(4, 20e3, 5e3, kind(LockKind::kTicket)));
  h.start();
  h.run_until(sim::ms(50));
  const guest::LockStats s = g.os->results().locks;
  EXPECT_GT(s.acquisitions, 1000u);
  EXPECT_EQ(s.lhp, 0u);
  EXPECT_EQ(s.lwp, 0u);
}

TEST(Spinlock, PreemptedNextWaiterLeavesLockFreeAndCountsLwp) {
  // Four vCPUs on two pCPUs with short holds: releases often go to a waiter whose vCPU is
  // waiting for a pCPU. The lock then sits unusable for up to a host slice: some gap from a
  // release to the next acquisition, with waiters queued, is far longer than the hand-over.
  TestHost h(test::flat(2), {}, 1, "rr", rr_slice(100e3));
  auto g = h.add_vm(test::vm("a", 4), std::make_unique<LockLoop>(4, 20e3, 10e3, kind(LockKind::kTicket)));
  Recorder rec;
  g.os->set_lock_observer(&rec);
  h.start();
  h.run_until(sim::ms(100));
  const guest::LockStats s = g.os->results().locks;
  EXPECT_GT(s.lwp, 5u);
  sim::Duration longest = 0;
  for (std::size_t i = 0; i + 1 < rec.acquire_t.size() && i < rec.release_t.size(); ++i)
    longest = std::max(longest, rec.acquire_t[i + 1] - rec.release_t[i]);
  EXPECT_GT(longest, sim::us(50));
  EXPECT_FALSE(rec.overlap);
}

class PvFlavours : public ::testing::TestWithParam<guest::PvFlavour> {};

TEST_P(PvFlavours, HaltAfterThresholdAndNeverLoseAKick) {
  // PV ticket lock with a 1000-loop threshold (5 us), 4 vCPUs on 2 pCPUs: waiters halt, the
  // unlocker kicks each halted next waiter, nobody is left halted with its ticket served.
  LockParams p = kind(LockKind::kPvTicket);
  p.spin_threshold = 1000;
  p.flavour = GetParam();
  TestHost h(test::flat(2), {}, 1, "rr", rr_slice(100e3));
  auto g = h.add_vm(test::vm("a", 4), std::make_unique<LockLoop>(4, 20e3, 10e3, p));
  Recorder rec;
  g.os->set_lock_observer(&rec);
  h.start();
  for (int i = 1; i <= 50; ++i) {
    h.run_until(sim::ms(2 * i));
    ASSERT_NO_THROW(g.os->check_lost_kicks());
  }
  const guest::LockStats s = g.os->results().locks;
  EXPECT_GT(s.halts, 10u);
  EXPECT_GT(s.kicks, 10u);
  EXPECT_LE(s.kicks, s.halts);
  EXPECT_GT(s.acquisitions, 500u);
  EXPECT_FALSE(rec.overlap);
  for (std::size_t i = 0; i < rec.acquires.size(); ++i) ASSERT_EQ(rec.acquires[i], rec.requests[i]);
  // A spin never outlasts the threshold: at most 5 us of spin per halt or acquisition.
  EXPECT_LE(s.spin_ns, (static_cast<double>(s.halts + s.contended) + 8) * p.spin_threshold_ns() + 1);
}

INSTANTIATE_TEST_SUITE_P(Spinlock, PvFlavours, ::testing::Values(guest::PvFlavour::kKvm, guest::PvFlavour::kXen));

TEST(Spinlock, PvBeatsTicketUnderOvercommit) {
  // The point of PV locks: under 2x overcommit with long holds, halting instead of spinning
  // through a preempted holder's absence gives the CPU back, so more loops complete.
  auto run = [](LockKind k) {
    LockParams p = kind(k);
    p.spin_threshold = 1000;
    TestHost h(test::flat(1), {}, 1, "rr", rr_slice(100e3));
    auto g = h.add_vm(test::vm("a", 2), std::make_unique<LockLoop>(2, 10e3, 200e3, p));
    h.start();
    h.run_until(sim::ms(200));
    return g.os->results();
  };
  const auto ticket = run(LockKind::kTicket), pv = run(LockKind::kPvTicket);
  EXPECT_GT(pv.throughput, 1.3 * ticket.throughput);
  EXPECT_LT(pv.locks.spin_ns, 0.2 * ticket.locks.spin_ns);
}

TEST(Spinlock, DroppedKickIsCaughtAsLostKick) {
  LockParams p = kind(LockKind::kPvTicket);
  p.spin_threshold = 1000;
  p.drop_kicks_for_test = true;
  TestHost h(test::flat(2), {}, 1, "rr", rr_slice(100e3));
  h.add_vm(test::vm("a", 4), std::make_unique<LockLoop>(4, 20e3, 10e3, p));
  h.start();
  try {
    h.run_until(sim::ms(100));
    FAIL() << "a dropped kick went unnoticed";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("lost kick"), std::string::npos) << e.what();
  }
}

/// Thread 0 holds lock 0 for 2 ms at a time, thread 1 takes it briefly (so it waits, and halts
/// past SPIN_THRESHOLD), thread 2 computes 50 us and sends a shootdown, over and over.
class HaltedWaiterUnderShootdowns final : public guest::Workload {
 public:
  explicit HaltedWaiterUnderShootdowns(LockParams p) : p_(p) {}
  std::string_view kind() const override { return "halted-waiter"; }
  std::uint32_t threads() const override { return 3; }
  guest::Step next(std::uint32_t thread, sim::RngStream&) override {
    guest::Step s;
    s.work_ns = thread == 2 ? 50e3 : 10e3;
    s.result = 1;
    if (thread < 2) {
      s.lock = 0;
      s.hold_ns = thread == 0 ? 2e6 : 10e3;
    } else {
      s.shootdown_ns = 3000;
    }
    return s;
  }
  std::string_view unit() const override { return "steps/s"; }
  std::vector<guest::LockSpec> locks() const override { return {guest::LockSpec{"l", p_}}; }

 private:
  LockParams p_;
};

TEST(Spinlock, KvmWaiterHaltedWithIrqsOffWakesOnlyForItsKick) {
  // Three vCPUs, each alone on its pCPU. The PV waiter on vCPU 1 halts for most of thread 0's
  // 2 ms holds while vCPU 2 sends a shootdown every ~50 us. With IRQs on (safe_halt) each one
  // wakes it: a spurious wake-up, another threshold of spinning, another halt. Taken with IRQs
  // off (halt()), the lock's waiter sleeps through them until its kick, and the calls to it
  // wait for that: longer shootdowns, no spurious wake-ups.
  auto run = [](bool irqs_off) {
    TestHost h(test::flat(3), {}, 1, "rr", rr_slice(100e3));
    LockParams p = kind(LockKind::kPvTicket);
    p.irqs_off = irqs_off;
    auto g = h.add_vm(test::vm_pinned_each("a", {0, 1, 2}), std::make_unique<HaltedWaiterUnderShootdowns>(p));
    h.start();
    h.run_until(sim::ms(100));
    return g.os->results();
  };
  const guest::GuestResults on = run(false), off = run(true);
  ASSERT_GT(on.locks.halts, 20u);
  ASSERT_GT(off.locks.halts, 20u);
  EXPECT_GT(on.locks.spurious_wakeups, 100u);  // ~2 ms / (50 us + 164 us) per hold, 40 holds
  EXPECT_EQ(off.locks.spurious_wakeups, 0u);
  // Each waiter halts once per hold with IRQs off (then the kick), many times with them on.
  EXPECT_LE(off.locks.halts, off.locks.kicks + 1);
  const double wait_on = on.ipis.wait_ns / static_cast<double>(on.ipis.sent);
  const double wait_off = off.ipis.wait_ns / static_cast<double>(off.ipis.sent);
  EXPECT_GT(wait_off, 5 * wait_on);
}

TEST(Spinlock, KvmWaiterHaltedWithIrqsOnWakesAtItsTick) {
  // Each vCPU alone on its pCPU, no IPIs: the only thing that can end the waiter's safe_halt
  // before its kick is its vCPU's scheduler tick. It wakes at every tick of the ~5 ms it waits,
  // spins another 5 us threshold and halts again: about 5 spurious wake-ups per hold at
  // HZ=1000, 1.25 at 250, none without a tick, and none when it halted with interrupts off.
  auto run = [](std::uint32_t hz, bool irqs_off) {
    TestHost h(test::flat(2), {}, 1, "rr", rr_slice(100e3));
    LockParams p = kind(LockKind::kPvTicket);
    p.spin_threshold = 1000;
    p.irqs_off = irqs_off;
    guest::GuestParams gp;
    gp.hz = hz;
    auto g = h.add_vm(test::vm_pinned_each("a", {0, 1}), std::make_unique<test::LongHolder>(p, 5e6), gp);  // 5 ms holds
    h.start();
    h.run_until(sim::ms(200));
    EXPECT_NO_THROW(g.os->check_lost_kicks());
    return g.os->results().locks;
  };
  const guest::LockStats k1000 = run(1000, false), k250 = run(250, false), none = run(0, false),
                         off = run(1000, true);
  const double holds = static_cast<double>(k1000.kicks);  // one kick per long hold it waited out
  ASSERT_GT(holds, 20.0);
  EXPECT_NEAR(static_cast<double>(k1000.spurious_wakeups) / holds, 5.0, 1.0);
  EXPECT_NEAR(static_cast<double>(k250.spurious_wakeups) / static_cast<double>(k250.kicks), 1.25, 0.5);
  EXPECT_EQ(none.spurious_wakeups, 0u);
  EXPECT_EQ(off.spurious_wakeups, 0u);
  // Every wake-up is followed by another halt, so the halts count them too.
  EXPECT_EQ(k1000.halts, k1000.kicks + k1000.spurious_wakeups);
}

/// Never blocks, never locks: keeps its vCPU busy.
class Hog final : public guest::Workload {
 public:
  std::string_view kind() const override { return "hog"; }
  std::uint32_t threads() const override { return 1; }
  guest::Step next(std::uint32_t, sim::RngStream&) override {
    guest::Step s;
    s.work_ns = 1e6;
    s.result = 1;
    return s;
  }
  std::string_view unit() const override { return "steps/s"; }
};

TEST(Spinlock, KickWaitRunsFromHandOffToTheWaitersNextRun) {
  // Two threads on two vCPUs take turns holding the lock 2.5 ms at a time; the other waits past
  // its 5 us threshold and halts, and each release kicks it. Alone on its pCPU a waiter runs
  // one kick_latency after the hand-off (the wait ends as the host switches its vCPU in). When
  // vCPU 1 shares its pCPU with a hog of another VM under rr (no wake-up preemption, 1 ms
  // slices), its kicks wait for the hog's slice to end too.
  auto run = [](bool shared) {
    TestHost h(test::flat(2), {}, 1, "rr", rr_slice(1e6));
    LockParams p = kind(LockKind::kPvTicket);
    p.spin_threshold = 1000;
    auto g = h.add_vm(test::vm_pinned_each("a", {0, 1}), std::make_unique<LockLoop>(2, 10e3, 2.5e6, p));
    if (shared) h.add_vm(test::vm_pinned_each("hog", {1}), std::make_unique<Hog>());
    h.start();
    h.run_until(sim::ms(200));
    return g.os->results();
  };
  const guest::GuestResults alone_r = run(false), shared_r = run(true);
  const guest::LockStats &alone = alone_r.locks, &shared = shared_r.locks;
  ASSERT_GT(alone.kicked_runs, 20u);
  ASSERT_GT(shared.kicked_runs, 20u);
  EXPECT_LE(alone.kicked_runs, alone.kicks);
  const double kick_latency = static_cast<double>(LockParams{}.kick_latency);
  const double wait_alone = alone.kick_wait_ns / static_cast<double>(alone.kicked_runs);
  EXPECT_GE(wait_alone, kick_latency);
  EXPECT_LE(wait_alone, kick_latency + static_cast<double>(sim::us(10)));
  // Half the kicks go to vCPU 1, whose pCPU the hog then holds for the rest of its slice (the
  // 2.5 ms holds put the release half a slice into it; 2 ms would land on a slice boundary).
  EXPECT_GT(shared.kick_wait_ns / static_cast<double>(shared.kicked_runs), 20 * wait_alone);
  // The tail, to the histogram's 2% buckets: alone, every wait is the kick latency; shared, the
  // slowest waits are vCPU 1's, each the half slice the hog has left after the kick.
  EXPECT_NEAR(alone_r.kick_wait_p99_ns, wait_alone, 0.03 * wait_alone + static_cast<double>(sim::us(10)));
  const double half_slice = static_cast<double>(sim::us(500)) + kick_latency;
  EXPECT_NEAR(shared_r.kick_wait_p99_ns, half_slice, 0.03 * half_slice + static_cast<double>(sim::us(10)));
}

// A KVM PV unlock kicks by KVM_HC_KICK_CPU, which a 5.3+ host (host.kick_boost) follows with
// the kicker's yield to the kicked vCPU; a Xen-flavour unlock sends an event channel, which
// yields nothing. The rig above under cfs, vCPU 1 sharing its pCPU with a hog of another VM:
// every kick wakes a halted waiter, so every boosted kick finds it ready.
TEST(Spinlock, KickBoostYieldsToTheKickedVcpuOnlyForKvmKicks) {
  auto run = [](bool boost, guest::PvFlavour flavour) {
    hv::HostSpec spec;
    spec.kick_boost = boost;
    TestHost h(test::flat(2), spec, 1, "cfs");
    LockParams p = kind(LockKind::kPvTicket);
    p.spin_threshold = 1000;
    p.flavour = flavour;
    auto g = h.add_vm(test::vm_pinned_each("a", {0, 1}), std::make_unique<LockLoop>(2, 10e3, 2.5e6, p));
    h.add_vm(test::vm_pinned_each("hog", {1}), std::make_unique<Hog>());
    h.start();
    h.run_until(sim::ms(200));
    return std::make_pair(g.os->results().locks, h.host().ple_stats(g.id).kick_yields);
  };
  const auto [plain, plain_yields] = run(false, guest::PvFlavour::kKvm);
  const auto [boosted, boosted_yields] = run(true, guest::PvFlavour::kKvm);
  const auto [xen, xen_yields] = run(true, guest::PvFlavour::kXen);
  ASSERT_GT(plain.kicked_runs, 20u);
  ASSERT_GT(boosted.kicked_runs, 20u);
  ASSERT_GT(xen.kicks, 20u);
  EXPECT_EQ(plain_yields, 0u);
  EXPECT_EQ(xen_yields, 0u);
  EXPECT_GT(boosted_yields, 0u);
  EXPECT_EQ(boosted_yields, boosted.kicks);
}

TEST(Spinlock, MutexNeverSpins) {
  TestHost h(test::flat(2), {}, 1, "rr", rr_slice(100e3));
  auto g = h.add_vm(test::vm("a", 4), std::make_unique<LockLoop>(4, 20e3, 10e3, kind(LockKind::kMutex)));
  Recorder rec;
  g.os->set_lock_observer(&rec);
  h.start();
  h.run_until(sim::ms(50));
  const guest::LockStats s = g.os->results().locks;
  EXPECT_GT(s.acquisitions, 500u);
  EXPECT_GT(s.contended, 0u);
  EXPECT_EQ(s.spin_ns, 0.0);
  EXPECT_EQ(s.lhp, 0u);
  EXPECT_EQ(s.halts, 0u);
  EXPECT_FALSE(rec.overlap);
}

TEST(Spinlock, MutexWaitersLetOtherThreadsRun) {
  // Two threads on ONE vCPU pair... one vCPU only: a thread waiting for the mutex sleeps, so the
  // holder (on the same vCPU) runs and the pair completes as if serial. With a spinlock this
  // could not even happen (a spinner never yields its vCPU); here it must not deadlock.
  TestHost h(test::flat(1), {}, 1, "rr", rr_slice(100e3));
  auto g = h.add_vm(test::vm("a", 1), std::make_unique<LockLoop>(2, 20e3, 10e3, kind(LockKind::kMutex)));
  h.start();
  h.run_until(sim::ms(30));
  // 30 ms of one CPU at 30 us per loop: about 1000 loops, at least 900.
  EXPECT_GT(g.os->results().steps, 900u);
}

TEST(Spinlock, UserSpaceMutexHolderIsPreemptedAtItsSliceAndKeepsTheLock) {
  // Two threads on ONE vCPU, each 10 us outside and 10 ms inside the mutex: the hold is longer
  // than the guest slice (3 ms). A kernel mutex holder is never rotated out, so the waiter sleeps
  // and the holder runs its section through: nothing else is ever scheduled inside it. A
  // user-space mutex (pthread) holder is preempted at its slice like any thread; the other
  // thread then runs, finds the mutex held, sleeps, and the holder resumes: the waiter's
  // contended attempts (one per preemption inside a hold) show it.
  auto run = [](bool user_space) {
    TestHost h(test::flat(1), {}, 1, "rr", rr_slice(100e3));
    LockParams p = kind(LockKind::kMutex);
    p.barging = true;
    p.user_space = user_space;
    return run_checked(h, test::vm("a", 1), std::make_unique<LockLoop>(2, 10e3, 10e6, p), sim::ms(200));
  };
  const guest::GuestResults kernel = run(false), user = run(true);
  // 200 ms of one CPU at 10.01 ms per loop: 19-20 loops either way (the mutex serialises them).
  EXPECT_GE(kernel.steps, 18u);
  EXPECT_GE(user.steps, 18u);
  // Kernel: the waiter runs only between holds and always finds the mutex free. User: 3 ms
  // into each hold the holder is rotated out, the waiter runs, fails and sleeps (then nothing
  // waits for the vCPU, so the holder finishes its section): one contended attempt per hold.
  EXPECT_EQ(kernel.locks.contended, 0u);
  EXPECT_GE(user.locks.contended, 15u);
}

TEST(Spinlock, AdaptiveWaiterSpinsItsBoundThenSleeps) {
  // Two threads on two vCPUs, each on its own pCPU; each holds the lock 500 us after 10 us
  // outside it. A waiter spins spin_wait_ns (4500 loops x 5 ns = 22.5 us: InnoDB's 30 rounds)
  // and then sleeps; the hold is far longer, so every contended acquisition burns exactly one
  // spin bound, and the waiter's vCPU, with nothing else to run, halts while it sleeps.
  TestHost h(test::flat(2), {}, 1, "rr", rr_slice(100e3));
  const LockParams p = kind(LockKind::kAdaptive);
  auto g = h.add_vm(test::vm("a", 2), std::make_unique<LockLoop>(2, 10e3, 500e3, p));
  Recorder rec;
  g.os->set_lock_observer(&rec);
  h.start();
  h.run_until(sim::ms(50));
  const guest::LockStats s = g.os->results().locks;
  EXPECT_FALSE(rec.overlap);
  ASSERT_GT(s.contended, 40u);
  // Every spin burns the bound; the window's end may fall between a spin and the acquisition
  // it leads to, so the spins number the contended acquisitions or one more.
  const double spins = s.spin_ns / p.spin_wait_ns();
  EXPECT_NEAR(spins, std::round(spins), 1e-6);
  EXPECT_GE(spins, static_cast<double>(s.contended) - 1e-6);
  EXPECT_LE(spins, static_cast<double>(s.contended) + 1 + 1e-6);
  double blocked = 0;
  for (auto v : g.vcpus) blocked += static_cast<double>(h.host().vcpu_stats(v).blocked);
  EXPECT_GT(blocked, 0.5 * sim::ms(50));  // one of the two vCPUs sleeps through most holds
  EXPECT_EQ(s.halts, 0u);                 // no PV slow path
}

TEST(Spinlock, AdaptiveLockGoesToARunningSpinnerSoPreemptedWaitersDoNotStallIt) {
  // Four vCPUs on two pCPUs (rr, 100 us slices), four threads, 20 us outside and 10 us inside
  // the lock. A ticket lock is handed to the next ticket even when its vCPU waits for a pCPU
  // (lock-waiter preemption: the lock sits unused for up to a slice); the adaptive lock is taken
  // by whichever waiter is running. So it never counts an LWP and gets far more work done.
  auto run = [](LockKind k) {
    TestHost h(test::flat(2), {}, 1, "rr", rr_slice(100e3));
    return run_checked(h, test::vm("a", 4), std::make_unique<LockLoop>(4, 20e3, 10e3, kind(k)), sim::ms(100));
  };
  const guest::GuestResults ticket = run(LockKind::kTicket), adaptive = run(LockKind::kAdaptive);
  EXPECT_GT(ticket.locks.lwp, 0u);
  EXPECT_EQ(adaptive.locks.lwp, 0u);
  EXPECT_GT(adaptive.results, 1.5 * ticket.results);
}

TEST(LockWorkloads, EbizzyReportsRecordsPerSecond) {
  // 4 threads on 4 dedicated vCPUs/pCPUs: a record is 100 us of user work + 4 x 6.25 us held
  // (125 us alone), so at most 4 / 125 us = 32000 records/s; the shared mmap_lock (20% held)
  // costs a little.
  TestHost h(test::flat(4));
  auto g = h.add_vm(test::vm("a", 4), test::workload("ebizzy", {{"threads", 4}}));
  h.start();
  h.run_until(sim::ms(200));
  EXPECT_EQ(g.os->workload().unit(), "records/s");
  const double tp = g.os->results().throughput;
  EXPECT_GT(tp, 0.75 * 32000);
  EXPECT_LT(tp, 1.02 * 32000);
}

TEST(LockWorkloads, DbenchReportsMegabytesPerSecond) {
  // 8 clients on 8 dedicated vCPUs: 10 us per op, 4.7 KB per op: at most 8 x 470 MB/s.
  TestHost h(test::flat(8));
  auto g = h.add_vm(test::vm("a", 8), test::workload("dbench", {{"threads", 8}, {"lock", 1}}));
  h.start();
  h.run_until(sim::ms(100));
  EXPECT_EQ(g.os->workload().unit(), "MB/s");
  const double tp = g.os->results().throughput;
  EXPECT_GT(tp, 0.6 * 8 * 470);
  EXPECT_LT(tp, 1.02 * 8 * 470);
}

TEST(LockWorkloads, SpinningLeavesNoCompletionsBeyondTheHorizonQueued) {
  // Ticket spins are unbounded segments (done in 11 days), each replaced long before: with the
  // run's end promised (set_horizon), their completions are not queued, so the queue stays as
  // long at 3 s as at 1 s. Without it, every spin left one event behind for good, until a vCPU's
  // completions came to replace each other in the queue (keyed events, sim/event_queue.h): now
  // neither way leaks.
  auto pending = [](bool horizon, sim::Time at) {
    TestHost h(test::flat(4));
    auto g = h.add_vm(test::vm("e", 4), test::workload("ebizzy", {{"threads", 8}}));
    h.add_vm(test::vm("hog", 3), test::workload("sysbench-cpu", {{"threads", 3}}));
    if (horizon) h.host().set_horizon(at);
    h.start();
    h.run_until(at);
    EXPECT_GT(g.os->results().locks.spin_ns, 0.0);
    return h.host().events_pending();
  };
  const std::size_t one = pending(true, sim::seconds(1)), three = pending(true, sim::seconds(3));
  EXPECT_LT(three, one + 64) << one << " events pending at 1 s";
  const std::size_t open_one = pending(false, sim::seconds(1)), open_three = pending(false, sim::seconds(3));
  EXPECT_LT(open_three, open_one + 64) << open_one << " events pending at 1 s without a horizon";
  TestHost h(test::flat(1));
  h.host().set_horizon(sim::ms(1));
  EXPECT_THROW(h.run_until(sim::ms(2)), std::logic_error);
}

TEST(LockWorkloads, OvercommitMakesEbizzySpin) {
  // A 4-vCPU ebizzy VM (8 threads, ticket lock) alone on 4 pCPUs, then beside a 3-vCPU CPU hog
  // (rr, 30 ms slices, so the VMs' vCPUs are descheduled out of step): lock-holder and waiter
  // preemptions appear, the spin share of its CPU time rises, and each CPU-second it gets yields
  // fewer records than alone.
  auto run = [](bool hog, double& spin_share, double& cpu) {
    TestHost h(test::flat(4));
    auto g = h.add_vm(test::vm("e", 4), test::workload("ebizzy", {{"threads", 8}}));
    if (hog) h.add_vm(test::vm("hog", 3), test::workload("sysbench-cpu", {{"threads", 3}}));
    h.start();
    h.run_until(sim::ms(500));
    double run = 0;
    for (auto v : g.vcpus) run += static_cast<double>(h.host().vcpu_stats(v).running);
    const guest::GuestResults r = g.os->results();
    spin_share = r.locks.spin_ns / run;
    cpu = run / 5e8;
    return r;
  };
  double spin_alone = 0, spin_over = 0, cpu_alone = 0, cpu_over = 0;
  const auto alone = run(false, spin_alone, cpu_alone);
  const auto over = run(true, spin_over, cpu_over);
  EXPECT_EQ(alone.locks.lhp + alone.locks.lwp, 0u);
  EXPECT_GT(over.locks.lhp + over.locks.lwp, 0u);
  EXPECT_GT(spin_over, 1.5 * spin_alone);
  EXPECT_LT(over.throughput / cpu_over, 0.95 * alone.throughput / cpu_alone);
}

}  // namespace
}  // namespace vcpusim
