// SPDX-License-Identifier: MIT
// Pins pause-loop exiting (hypervisor/ple.h) as KVM does it: the window grows on each exit and
// resets when the vCPU is loaded again (arch/x86/kvm/x86.h, vmx.c defaults); a spin exits only
// once the guest has executed it for a whole window; and the directed yield of an exit goes only
// to a ready vCPU of the spinner's own VM (kvm_vcpu_on_spin walks kvm->vcpu_array), with
// Linux 3.10's candidate filters and yield rules (only vCPUs marked preempted, i.e. scheduled
// out while Runnable and not run since; halted and in-guest vCPUs skipped; the dy_eligible
// toggle, -ESRCH ending the scan as 3.10's bool return makes it, last_boosted_vcpu on success or
// -ESRCH), and where 5.10's scan differs (vcpu->ready, the user-mode filter, three -ESRCH tries).
//
// System: one pCPU, round robin, TSC at 1 GHz (a cycle is a nanosecond), the default 2 us
// switch-in stall and 1.5 us exit cost. Spinners are FakeGuest segments of Profile::kSpin.
// Round robin has no directed yield (yield_to answers 0), so the scan's rules are pinned with
// ScriptedYieldTo, which answers every directed yield with a fixed yield_to() value.
#include <gtest/gtest.h>

#include <limits>

#include "checking_policy.h"
#include "hypervisor/host.h"
#include "hypervisor/ple.h"
#include "test_host.h"

namespace vcpusim {
namespace {

using hv::PauseLoopExiting;
using hv::PleParams;
using test::FakeGuest;
using test::TestHost;

constexpr std::uint32_t kU32Max = std::numeric_limits<std::uint32_t>::max();

hv::HostSpec ple_host(hv::PleFlavour flavour = hv::PleFlavour::kKvm) {
  hv::HostSpec h;
  h.ple.enabled = true;
  h.ple.tsc_ghz = 1.0;
  h.ple.flavour = flavour;
  return h;
}

// A 2-vCPU VM "a" on a started host: vCPU 1 computes for good from 0, vCPU 0 spins for good
// from 100 us (returns then). a1 has run by the time a0 wakes, so once a0 takes the pCPU, a1 is
// marked preempted and a candidate of a0's exits.
TestHost::Vm start_spinner_beside_hog(TestHost& h) {
  auto a = h.add_fake(test::vm("a", 2));
  h.start();
  h.fake().set_plan(a.vcpus[1], FakeGuest::hog());
  h.fake().kick(a.vcpus[1]);
  h.run_until(sim::us(100));
  h.fake().set_plan(a.vcpus[0], FakeGuest::hog(1e6, hv::Profile::kSpin));
  h.fake().kick(a.vcpus[0]);
  return a;
}

// Round robin whose yield_to() answers `answer` to every directed yield and records the targets
// asked, in order (an undirected yield goes to round robin).
class ScriptedYieldTo : public test::CheckingPolicy {
 public:
  explicit ScriptedYieldTo(int answer, const sim::ParamValues& rr = {})
      : CheckingPolicy(TestHost::make_policy("rr", rr)), answer_(answer) {}
  std::vector<hv::VcpuId> asked;
  int yield(hv::VcpuId v, hv::VcpuId to, sim::Time now) override {
    if (to == hv::kIdle) return CheckingPolicy::yield(v, to, now);
    asked.push_back(to);
    return answer_;
  }

 private:
  int answer_;
};

// Round robin with a 100 us slice, whose yield_to() answers `answer`.
std::unique_ptr<ScriptedYieldTo> scripted_rr(int answer) {
  sim::ParamValues rr;
  rr.set("slice", 100e3);
  return std::make_unique<ScriptedYieldTo>(answer, rr);
}

// One pCPU, round robin with a 100 us slice; VM a of 5 vCPUs: a0 spins for ever, a1-a4 compute.
// a1-a4 are woken first, so each has run a slice and been preempted before a0 first runs: at
// each of a0's exits the four others are ready and marked preempted. The policy (owned by the
// host) has recorded 20 ms of exits.
// `hs` and `work` (the others' plan) vary the host and the guest mode of the others' work.
struct ScanRig {
  ScriptedYieldTo* policy = nullptr;
  TestHost::Vm a;
  std::unique_ptr<TestHost> h;
  ScanRig(int answer, std::uint32_t pcpus = 1, std::uint32_t vcpus = 5, const hv::HostSpec& hs = ple_host(),
          const FakeGuest::Plan& work = FakeGuest::hog()) {
    auto pol = scripted_rr(answer);
    policy = pol.get();
    h = std::make_unique<TestHost>(test::flat(pcpus), hs, 1, std::move(pol));
    a = h->add_fake(test::vm("a", vcpus));
    h->start();
    h->fake().set_plan(a.vcpus[0], FakeGuest::hog(1e6, hv::Profile::kSpin));
    for (std::uint32_t i = 1; i < vcpus; ++i) h->fake().set_plan(a.vcpus[i], work);
    for (std::uint32_t i = 1; i < vcpus; ++i) h->fake().kick(a.vcpus[i]);
    h->fake().kick(a.vcpus[0]);
    h->run_until(sim::ms(20));
  }
  std::uint64_t exits() const { return h->host().ple_stats(a.id).exits; }
};

TEST(PleWindow, GrowsAndShrinksAsKvm) {
  // __grow_ple_window: a modifier below the base multiplies, at or above it adds, 0 resets.
  EXPECT_EQ(hv::grow_ple_window(4096, 4096, 2, kU32Max), 8192u);
  EXPECT_EQ(hv::grow_ple_window(4096, 4096, 5000, kU32Max), 9096u);
  EXPECT_EQ(hv::grow_ple_window(16384, 4096, 0, kU32Max), 4096u);
  EXPECT_EQ(hv::grow_ple_window(3'000'000'000u, 4096, 2, kU32Max), kU32Max);  // capped at max, in 64 bits
  // __shrink_ple_window: divide, subtract, never below the base; 0 (KVM's default) resets.
  EXPECT_EQ(hv::shrink_ple_window(16384, 4096, 2, 4096), 8192u);
  EXPECT_EQ(hv::shrink_ple_window(8192, 4096, 2, 4096), 4096u);
  EXPECT_EQ(hv::shrink_ple_window(65536, 4096, 0, 4096), 4096u);
  EXPECT_EQ(hv::shrink_ple_window(10000, 4096, 5000, 4096), 5000u);
}

TEST(PleWindow, GrowsPerExitAndResetsOnSchedInWithKvmDefaults) {
  PleParams p;  // gap 128, window 4096, grow 2, shrink 0, max UINT_MAX
  PauseLoopExiting ple;
  ple.init(p, 1, 1);
  ple.grow(0);
  ple.grow(0);
  ple.grow(0);
  EXPECT_EQ(ple.window(0), 4096u * 8);
  ple.sched_in(0);
  EXPECT_EQ(ple.window(0), 4096u);
  // Xen: a fixed window.
  p.flavour = hv::PleFlavour::kXen;
  ple.init(p, 1, 1);
  ple.grow(0);
  ple.sched_in(0);
  EXPECT_EQ(ple.window(0), 4096u);
}

// A spin of 3000 ns never reaches the 4096-cycle window: no exit.
TEST(PleExit, NoExitForASpinShorterThanTheWindow) {
  TestHost h(test::flat(1), ple_host());
  auto a = h.add_fake(test::vm("a", 1));
  h.start();
  h.fake().set_plan(a.vcpus[0], FakeGuest::job(3000, 1, hv::Profile::kSpin));
  h.fake().kick(a.vcpus[0]);
  h.run_until(sim::ms(1));
  EXPECT_EQ(h.host().ple_stats(a.id).exits, 0u);
  ASSERT_EQ(h.fake().completions(a.vcpus[0]), 1u);
  EXPECT_EQ(h.fake().done_times(a.vcpus[0])[0], 2000 + 3000);  // switch-in stall, then the spin
}

// A spin of 10 us: the window (4096 ns of guest execution, counted from VM entry after the 2 us
// switch-in stall) runs out once, at 6096 ns; the exit costs 1.5 us, so the spin ends at
// 2000 + 10000 + 1500 = 13500 ns, before the second exit would come (one grown window of
// 8192 ns after re-entry at 7596 ns).
TEST(PleExit, ExitsOnlyPastTheWindowAndGrowsIt) {
  TestHost h(test::flat(1), ple_host());
  auto a = h.add_fake(test::vm("a", 1));
  h.start();
  h.fake().set_plan(a.vcpus[0], FakeGuest::job(10000, 1, hv::Profile::kSpin));
  h.fake().kick(a.vcpus[0]);
  h.run_until(sim::ms(1));
  EXPECT_EQ(h.host().ple_stats(a.id).exits, 1u);
  EXPECT_EQ(h.host().ple_stats(a.id).yields, 0u);  // a 1-vCPU VM has nobody to yield to
  EXPECT_EQ(h.host().ple_window(a.vcpus[0]), 8192u);
  ASSERT_EQ(h.fake().completions(a.vcpus[0]), 1u);
  EXPECT_EQ(h.fake().done_times(a.vcpus[0])[0], 13500);
}

// The same 10 us spin in guest user mode (CPL 3): PLE ignores it (Intel SDM 25.1.3), so no exit,
// and the spin ends at 2000 + 10000 ns.
TEST(PleExit, NoExitForASpinInGuestUserMode) {
  TestHost h(test::flat(1), ple_host());
  auto a = h.add_fake(test::vm("a", 1));
  h.start();
  FakeGuest::Plan user = FakeGuest::job(10000, 1, hv::Profile::kSpin);
  user.user_mode = true;
  h.fake().set_plan(a.vcpus[0], user);
  h.fake().kick(a.vcpus[0]);
  h.run_until(sim::ms(1));
  EXPECT_EQ(h.host().ple_stats(a.id).exits, 0u);
  EXPECT_EQ(h.host().ple_window(a.vcpus[0]), 4096u);
  ASSERT_EQ(h.fake().completions(a.vcpus[0]), 1u);
  EXPECT_EQ(h.fake().done_times(a.vcpus[0])[0], 12000);
}

// A spinner shares the pCPU with another VM's hog: the hog is ready at every exit but belongs to
// another VM, so the scan finds nobody (the spinner's sibling vCPU is halted, never preempted).
TEST(PleYield, NeverToAVcpuOfAnotherVm) {
  auto pol = std::make_unique<ScriptedYieldTo>(1);
  ScriptedYieldTo* const policy = pol.get();
  TestHost h(test::flat(1), ple_host(), 1, std::move(pol));
  auto a = h.add_fake(test::vm("a", 2));
  auto b = h.add_fake(test::vm("b", 1));
  h.start();
  h.fake().set_plan(a.vcpus[0], FakeGuest::hog(1e6, hv::Profile::kSpin));
  h.fake().set_plan(b.vcpus[0], FakeGuest::hog());
  h.fake().kick(a.vcpus[0]);
  h.fake().kick(b.vcpus[0]);
  h.run_until(sim::ms(100));
  EXPECT_GT(h.host().ple_stats(a.id).exits, 10u);  // the window doubles on each exit while a0 keeps its pCPU
  EXPECT_EQ(h.host().ple_stats(a.id).yields, 0u);
  EXPECT_TRUE(policy->asked.empty());
}

// The same, with the spinner's sibling vCPU runnable too: now exits find it and CFS's
// yield_to_task_fair boosts it (round robin, without a directed yield, would answer 0).
TEST(PleYield, ToAReadyVcpuOfTheSameVm) {
  TestHost h(test::flat(1), ple_host(), 1, "cfs");
  auto a = h.add_fake(test::vm("a", 2));
  auto b = h.add_fake(test::vm("b", 1));
  h.start();
  h.fake().set_plan(a.vcpus[0], FakeGuest::hog(1e6, hv::Profile::kSpin));
  h.fake().set_plan(a.vcpus[1], FakeGuest::hog());
  h.fake().set_plan(b.vcpus[0], FakeGuest::hog());
  for (auto v : {a.vcpus[0], a.vcpus[1], b.vcpus[0]}) h.fake().kick(v);
  h.run_until(sim::ms(100));
  EXPECT_GT(h.host().ple_stats(a.id).yields, 0u);
  EXPECT_LE(h.host().ple_stats(a.id).yields, h.host().ple_stats(a.id).exits);
  EXPECT_EQ(h.host().ple_stats(b.id).exits, 0u);  // b never spins
}

// yield_to() answering -ESRCH (both runqueues hold one task): 3.10's yield_to() and
// kvm_vcpu_yield_to() return bool, so the scan sees true. Each exit asks one candidate, records
// it as last boosted and stops, so the asks go round a1, a2, a3, a4, a1, ... with nothing boosted.
TEST(PleYield, EsrchEndsTheScanAsTrueBecause310ReturnsBool) {
  ScanRig r(-1);
  ASSERT_GT(r.exits(), 4u);
  ASSERT_EQ(r.policy->asked.size(), r.exits());
  for (std::size_t i = 0; i < r.policy->asked.size(); ++i) EXPECT_EQ(r.policy->asked[i], r.a.vcpus[1 + i % 4]);
  EXPECT_EQ(r.h->host().ple_stats(r.a.id).yields, 0u);
}

// yield_to() answering 0 (target running or blocked) does not count: every exit asks all four.
TEST(PleYield, ZeroAnswersDoNotEndTheScan) {
  ScanRig r(0);
  ASSERT_GT(r.exits(), 2u);
  EXPECT_EQ(r.policy->asked.size(), 4 * r.exits());
  EXPECT_EQ(r.h->host().ple_stats(r.a.id).yields, 0u);
}

// A successful yield stops the scan and becomes kvm->last_boosted_vcpu: the next exit starts
// after it, so the boosts go round a1, a2, a3, a4, a1, ...
TEST(PleYield, SuccessStopsTheScanAndMovesLastBoosted) {
  ScanRig r(1);
  ASSERT_GT(r.exits(), 4u);
  ASSERT_EQ(r.policy->asked.size(), r.exits());
  for (std::size_t i = 0; i < r.policy->asked.size(); ++i) EXPECT_EQ(r.policy->asked[i], r.a.vcpus[1 + i % 4]);
  EXPECT_EQ(r.h->host().ple_stats(r.a.id).yields, r.exits());
}

// 3.10's vcpu->preempted test (kvm_vcpu_on_spin's first): a vCPU that halted and has been woken
// but has not run since is not a candidate, however long it waits; once it has run and been
// preempted, it is. One pCPU, round robin with a 1 ms slice, yield_to answering 0 (so every
// exit asks every candidate), a fixed 4096-cycle window. Woken in order: a1 computes for good;
// a2 computes 100 us and halts; a0 spins for good. So a1 runs [0, 1 ms] and is preempted; a2
// runs from 1 ms and halts; a0 spins from about 1.1 ms for a slice, its exits asking a1 only.
// At 1.5 ms a2 is woken to compute for good: Runnable, not halted, not in the handler and not
// running, it passes every other test of the scan, yet a0's exits until 2 ms never ask it. It
// first runs after a1's next slice (about 3.1 ms) and is preempted at its end; a0's exits in
// its next slice then ask it.
// The rig of that story, run to 1.5 ms (a2 halted), on a host with `scan`.
struct WakeRig {
  ScriptedYieldTo* policy = nullptr;
  std::unique_ptr<TestHost> host;
  TestHost::Vm a;
  explicit WakeRig(hv::PleScan scan) {
    sim::ParamValues rr;
    rr.set("slice", 1e6);
    auto pol = std::make_unique<ScriptedYieldTo>(0, rr);
    policy = pol.get();
    hv::HostSpec hs = ple_host();
    hs.ple.grow = 0;
    hs.ple.scan = scan;
    host = std::make_unique<TestHost>(test::flat(1), hs, 1, std::move(pol));
    a = host->add_fake(test::vm("a", 3));
    host->start();
    host->fake().set_plan(a.vcpus[1], FakeGuest::hog());
    host->fake().set_plan(a.vcpus[2], FakeGuest::job(100e3, 1));
    host->fake().set_plan(a.vcpus[0], FakeGuest::hog(1e6, hv::Profile::kSpin));
    for (auto v : {a.vcpus[1], a.vcpus[2], a.vcpus[0]}) host->fake().kick(v);
    host->run_until(sim::us(1500));
  }
};

TEST(PleYield, OnlyToAVcpuThatWasPreempted) {
  WakeRig r(hv::PleScan::kLinux310);
  TestHost& h = *r.host;
  ScriptedYieldTo* const policy = r.policy;
  const auto& a = r.a;
  const hv::VcpuId a0 = a.vcpus[0], a1 = a.vcpus[1], a2 = a.vcpus[2];

  ASSERT_EQ(h.host().vcpu(a2).state, hv::Runstate::kBlocked);
  ASSERT_EQ(h.host().vcpu(a0).state, hv::Runstate::kRunning);
  EXPECT_TRUE(h.host().ple_preempted(a1));
  EXPECT_FALSE(h.host().ple_preempted(a2));  // it halted: kvm_sched_out saw TASK_INTERRUPTIBLE
  h.fake().set_plan(a2, FakeGuest::hog());
  h.fake().kick(a2);
  const std::size_t woken_at = policy->asked.size();
  const std::uint64_t exits_at_wake = h.host().ple_stats(a.id).exits;

  h.run_until(sim::ms(2));
  ASSERT_EQ(h.host().vcpu(a2).state, hv::Runstate::kRunnable);
  ASSERT_EQ(h.host().vcpu(a0).state, hv::Runstate::kRunning);
  EXPECT_FALSE(h.host().ple_preempted(a2));  // woken, not run since: still not preempted
  EXPECT_GT(h.host().ple_stats(a.id).exits, exits_at_wake + 50);  // an exit about every 5.6 us
  ASSERT_EQ(policy->asked.size() - woken_at, h.host().ple_stats(a.id).exits - exits_at_wake);
  for (std::size_t i = woken_at; i < policy->asked.size(); ++i) EXPECT_EQ(policy->asked[i], a1);

  const std::size_t before_run = policy->asked.size();
  h.run_until(sim::ms(6));
  EXPECT_GT(h.fake().preemptions(a2), 0u);  // it ran a slice and was preempted
  std::size_t asked_a2 = 0;
  for (std::size_t i = before_run; i < policy->asked.size(); ++i) asked_a2 += policy->asked[i] == a2;
  EXPECT_GT(asked_a2, 0u);
}

// A target in guest mode (PF_VCPU: running) is never handed to yield_to: with a pCPU each, the
// spinner's sibling always runs, so no exit asks anyone.
TEST(PleYield, NeverToAVcpuInGuestMode) {
  ScanRig r(1, 2, 2);
  EXPECT_GT(r.exits(), 2u);
  EXPECT_TRUE(r.policy->asked.empty());
}

// kvm_vcpu_eligible_for_directed_yield: a vCPU outside the handler is always eligible; one in
// it (a spinner descheduled by its own yield) only every other check, starting refused
// (dy_eligible starts false); leaving the handler clears both flags.
TEST(PleYield, AFellowSpinnerIsATargetEveryOtherTime) {
  PauseLoopExiting ple;
  ple.init(PleParams{}, 2, 1);
  EXPECT_TRUE(ple.eligible_for_directed_yield(1));
  EXPECT_TRUE(ple.eligible_for_directed_yield(1));
  ple.enter_handler(1);
  EXPECT_FALSE(ple.eligible_for_directed_yield(1));
  EXPECT_TRUE(ple.eligible_for_directed_yield(1));
  EXPECT_FALSE(ple.eligible_for_directed_yield(1));
  EXPECT_TRUE(ple.eligible_for_directed_yield(1));
  ple.enter_handler(1);
  EXPECT_FALSE(ple.eligible_for_directed_yield(1));  // toggled to true by this check
  ple.leave_handler(1);                              // ... and reset with the handler's end
  EXPECT_FALSE(ple.in_spin_loop(1));
  ple.enter_handler(1);
  EXPECT_FALSE(ple.eligible_for_directed_yield(1));
}

// A spinner whose exit boosted a target stays inside kvm_vcpu_on_spin while it is descheduled
// (yield_to's schedule() has not returned), and leaves it once it runs again. Sampled every
// 100 ns over 5 ms with CFS on one pCPU, a0 spinning and a1 computing: a0 is seen Runnable and
// in the handler, and never Running in it (the reschedule that follows the yield is at the
// same instant, so a sample never falls between them).
TEST(PleYield, ASpinnerStaysInTheHandlerUntilItRunsAgain) {
  hv::HostSpec hs = ple_host();
  hs.ple.grow = 0;
  TestHost h(test::flat(1), hs, 1, "cfs");
  auto a = start_spinner_beside_hog(h);
  // Running inside the handler is the exit's own cost (kvm_vcpu_on_spin up to yield_to's
  // schedule()); past it, a vCPU in the handler is one descheduled by its yield.
  std::uint64_t descheduled_in_handler = 0, handling_exit = 0, running_in_handler = 0;
  for (sim::Time t = 100; t <= sim::ms(5); t += 100) {
    h.run_until(t);
    const hv::Vcpu& v = h.host().vcpu(a.vcpus[0]);
    if (!h.host().ple_in_spin_loop(a.vcpus[0])) continue;
    if (v.state == hv::Runstate::kRunnable) ++descheduled_in_handler;
    if (v.state == hv::Runstate::kRunning) ++(t < v.stall_until ? handling_exit : running_in_handler);
  }
  EXPECT_GT(h.host().ple_stats(a.id).yields, 0u);
  EXPECT_GT(descheduled_in_handler, 0u);
  EXPECT_GT(handling_exit, 0u);
  EXPECT_EQ(running_in_handler, 0u);
  EXPECT_FALSE(h.host().ple_in_spin_loop(a.vcpus[1]));  // a1 never spins
}

// A successful directed yield deschedules the spinner only when the exit's handler is done:
// handle_pause -> kvm_vcpu_on_spin -> yield_to -> schedule() all run in the spinner's thread,
// so its pCPU switches `exit_cost` after the exit, not at the exit.
TEST(PleYield, TheSpinnerGivesUpItsPcpuAfterTheExitsCost) {
  hv::HostSpec hs = ple_host();
  hs.ple.grow = 0;
  // A 50 ms wake-up granularity: CFS always runs the boosted next buddy (pick_next_entity), so
  // every successful yield takes the spinner off its pCPU.
  sim::ParamValues cfs;
  cfs.set("wakeup_granularity", 50e6);
  TestHost h(test::flat(1), hs, 1, TestHost::make_policy("cfs", cfs));
  auto a = start_spinner_beside_hog(h);
  const sim::Duration cost = hs.ple.exit_cost;
  ASSERT_EQ(cost, sim::ns(1500));
  // The first exit after a1 has been preempted boosts it (the spinner is then its runqueue's
  // skip buddy, which a 50 ms granularity keeps off the pCPU for the rest of the run).
  sim::Time t = sim::us(100) + 100;
  for (; t <= sim::ms(50) && h.host().ple_stats(a.id).yields == 0; t += 100) h.run_until(t);
  ASSERT_EQ(h.host().ple_stats(a.id).yields, 1u);
  t -= 100;  // the boosting exit came in (t - 100, t]: in its handler until exit + cost
  EXPECT_EQ(h.host().vcpu(a.vcpus[0]).state, hv::Runstate::kRunning);
  EXPECT_TRUE(h.host().ple_in_spin_loop(a.vcpus[0]));
  h.run_until(t + cost - 100);
  EXPECT_EQ(h.host().vcpu(a.vcpus[0]).state, hv::Runstate::kRunning);
  h.run_until(t + cost);
  EXPECT_EQ(h.host().vcpu(a.vcpus[0]).state, hv::Runstate::kRunnable);
  EXPECT_EQ(h.host().pcpu(0).curr, a.vcpus[1]);
}

// Xen: every exit yields the spinner itself (vcpu_yield), and the window stays put.
TEST(PleYield, XenYieldsTheSpinnerAtEveryExit) {
  TestHost h(test::flat(1), ple_host(hv::PleFlavour::kXen));
  auto a = h.add_fake(test::vm("a", 1));
  h.start();
  h.fake().set_plan(a.vcpus[0], FakeGuest::job(50000, 1, hv::Profile::kSpin));
  h.fake().kick(a.vcpus[0]);
  h.run_until(sim::ms(1));
  const auto& st = h.host().ple_stats(a.id);
  EXPECT_GT(st.exits, 5u);
  EXPECT_EQ(st.yields, st.exits);
  EXPECT_EQ(h.host().ple_window(a.vcpus[0]), 4096u);
}

// ---------------------------------------------------------------------------------------------
// `scan: 5.10` (ple.h): kvm_vcpu_on_spin(me, true) of Linux 5.10.

hv::HostSpec ple_host_510() {
  hv::HostSpec h = ple_host();
  h.ple.scan = hv::PleScan::kLinux510;
  return h;
}

// As OnlyToAVcpuThatWasPreempted, on a 5.10 host: kvm_vcpu_wake_up() sets vcpu->ready, so once
// a2 is woken at 1.5 ms (Runnable, never run since), a0's exits ask it as well as a1, though it
// was never preempted.
TEST(PleYield510, AVcpuWokenFromAHaltIsATargetBeforeItRuns) {
  WakeRig r(hv::PleScan::kLinux510);
  TestHost& h = *r.host;
  ScriptedYieldTo* const policy = r.policy;
  const auto& a = r.a;
  const hv::VcpuId a1 = a.vcpus[1], a2 = a.vcpus[2];
  ASSERT_EQ(h.host().vcpu(a2).state, hv::Runstate::kBlocked);
  const std::size_t halted_asks = policy->asked.size();
  for (std::size_t i = 0; i < halted_asks; ++i) EXPECT_EQ(policy->asked[i], a1);  // a halted a2 is skipped
  h.fake().set_plan(a2, FakeGuest::hog());
  h.fake().kick(a2);
  const std::uint64_t exits_at_wake = h.host().ple_stats(a.id).exits;

  h.run_until(sim::ms(2));
  ASSERT_EQ(h.host().vcpu(a2).state, hv::Runstate::kRunnable);
  EXPECT_FALSE(h.host().ple_preempted(a2));  // woken, not preempted: 3.10 would skip it
  const std::uint64_t exits = h.host().ple_stats(a.id).exits - exits_at_wake;
  ASSERT_GT(exits, 50u);
  ASSERT_EQ(policy->asked.size() - halted_asks, 2 * exits);  // yield_to answers 0: each exit asks both
  std::size_t asked_a2 = 0;
  for (std::size_t i = halted_asks; i < policy->asked.size(); ++i) asked_a2 += policy->asked[i] == a2;
  EXPECT_EQ(asked_a2, exits);
}

// -ESRCH is an int in 5.10: each answer spends one of the scan's three tries, and nothing is
// recorded as boosted, so every exit asks a1, a2, a3 (of four candidates) and stops.
TEST(PleYield510, EsrchSpendsOneOfThreeTries) {
  ScanRig r(-1, 1, 5, ple_host_510());
  ASSERT_GT(r.exits(), 2u);
  ASSERT_EQ(r.policy->asked.size(), 3 * r.exits());
  for (std::size_t i = 0; i < r.policy->asked.size(); ++i) EXPECT_EQ(r.policy->asked[i], r.a.vcpus[1 + i % 3]);
  EXPECT_EQ(r.h->host().ple_stats(r.a.id).yields, 0u);
}

FakeGuest::Plan hog_in(bool user) {
  FakeGuest::Plan p = FakeGuest::hog();
  p.user_mode = user;
  return p;
}

// yield_to_kernel_mode: a vCPU preempted while its guest ran user code is skipped; the same
// vCPUs preempted in the guest kernel are asked. Four candidates that compute, a0 spinning in
// the kernel; yield_to answers 0, so a kernel-mode rig asks all four at every exit.
TEST(PleYield510, SkipsAVcpuPreemptedInGuestUserMode) {
  for (const bool user : {true, false}) {
    ScanRig r(0, 1, 5, ple_host_510(), hog_in(user));
    ASSERT_GT(r.exits(), 2u) << "user " << user;
    EXPECT_EQ(r.policy->asked.size(), user ? 0u : 4 * r.exits()) << "user " << user;
  }
}

// 3.10 has no such filter: the user-mode rig is asked at every exit there.
TEST(PleYield, ThreeTenAsksAVcpuPreemptedInGuestUserModeToo) {
  ScanRig r(0, 1, 5, ple_host(), hog_in(true));
  ASSERT_GT(r.exits(), 2u);
  EXPECT_EQ(r.policy->asked.size(), 4 * r.exits());
}

// HostSpec::kick_boost, KVM 5.3+'s KVM_HC_KICK_CPU: after waking the kicked vCPU the kicker
// yields to it if it is `ready` (kvm_sched_yield). Two pCPUs: a0 computes for good on one; a1
// ran a 10 us job and halted on the other. Then a0 kicks a1 with a new job. yield_to answers 1.
struct KickRig {
  explicit KickRig(bool boost) {
    hv::HostSpec spec;
    spec.kick_boost = boost;
    auto pol = std::make_unique<ScriptedYieldTo>(1);
    policy = pol.get();
    host = std::make_unique<TestHost>(test::flat(2), spec, 1, std::move(pol));
    a = host->add_fake(test::vm("a", 2));
    host->start();
    host->fake().set_plan(a.vcpus[0], FakeGuest::hog());
    host->fake().set_plan(a.vcpus[1], FakeGuest::job(10e3));
    host->fake().kick(a.vcpus[0]);
    host->fake().kick(a.vcpus[1]);
    host->run_until(sim::ms(1));
  }
  hv::Host& h() { return host->host(); }
  std::unique_ptr<TestHost> host;
  ScriptedYieldTo* policy = nullptr;
  TestHost::Vm a;
};

TEST(KickBoost, TheKickerYieldsToTheVcpuItWokeFromAHalt) {
  KickRig r(true);
  const hv::VcpuId a0 = r.a.vcpus[0], a1 = r.a.vcpus[1];
  ASSERT_EQ(r.h().vcpu(a1).state, hv::Runstate::kBlocked);
  ASSERT_EQ(r.h().vcpu(a0).state, hv::Runstate::kRunning);
  r.host->fake().set_plan(a1, FakeGuest::job(10e3));
  r.h().kick_cpu(a1, r.h().waker(a0));
  EXPECT_EQ(r.h().vcpu(a1).state, hv::Runstate::kRunnable);
  EXPECT_EQ(r.policy->asked, std::vector<hv::VcpuId>{a1});
  EXPECT_EQ(r.h().ple_stats(r.a.id).kick_yields, 1u);
  EXPECT_EQ(r.h().ple_stats(r.a.id).yields, 0u);  // not a pause-loop exit's yield
}

// 3.10-5.2 (kick_boost off) only wake it; and a boosting host yields to nothing that was not
// woken from a halt: a kick to a vCPU already on its pCPU finds it not `ready`.
TEST(KickBoost, NoYieldBefore53OrToAVcpuTheKickDidNotWake) {
  KickRig off(false);
  const hv::VcpuId a0 = off.a.vcpus[0], a1 = off.a.vcpus[1];
  off.host->fake().set_plan(a1, FakeGuest::job(10e3));
  off.h().kick_cpu(a1, off.h().waker(a0));
  EXPECT_EQ(off.h().vcpu(a1).state, hv::Runstate::kRunnable);  // woken all the same
  EXPECT_TRUE(off.policy->asked.empty());
  EXPECT_EQ(off.h().ple_stats(off.a.id).kick_yields, 0u);

  KickRig on(true);
  on.host->fake().set_plan(a1, FakeGuest::hog());
  on.h().kick_cpu(a1, on.h().waker(a0));  // wakes it; the kicker yields once
  on.host->run_until(sim::ms(2));         // a1 runs, so it is no longer ready
  ASSERT_EQ(on.h().vcpu(a1).state, hv::Runstate::kRunning);
  const std::size_t asked = on.policy->asked.size();
  on.h().kick_cpu(a1, on.h().waker(a0));  // running: nothing to wake, not ready
  EXPECT_EQ(on.policy->asked.size(), asked);
}

}  // namespace
}  // namespace vcpusim
