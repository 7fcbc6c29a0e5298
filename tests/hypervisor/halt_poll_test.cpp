// SPDX-License-Identifier: MIT
// Pins KVM halt polling (hypervisor/halt_poll.h) as kvm_vcpu_block() of Linux 5.4-5.10 does it:
// the per-vCPU window starts at 0, grows from grow_start by grow after a short block and resets
// after one longer than halt_poll_ns; a halted vCPU polls on its pCPU while nothing else is on
// its runqueue; a wake-up inside the window resumes the guest on the spot, with no switch-in;
// the poll burns its pCPU's time; and it stops when its window runs out or another task joins the
// runqueue.
//
// System: one pCPU under cfs (the KVM host), a VM driven by FakeGuest, the default 2 us
// switch-in stall, halt polling with the kvm module defaults (200 us, grow 2, grow_start 10 us,
// shrink 0).
#include <gtest/gtest.h>

#include "hypervisor/halt_poll.h"
#include "hypervisor/host.h"
#include "test_host.h"

namespace vcpusim {
namespace {

using hv::HaltPollParams;
using test::FakeGuest;
using test::TestHost;

hv::HostSpec poll_host() {
  hv::HostSpec h;
  h.halt_poll.enabled = true;
  return h;
}

// vCPU 0 of a one-vCPU VM on one pCPU has halted twice: a 10 us job from 0 (switched in at 0,
// done at 12 us), a block until its kick at 20 us (8 us: the window grows from 0 to grow_start),
// then a second 10 us job (done at 32 us). At 32 us it halts with a 10 us window and polls.
struct PollRig {
  std::unique_ptr<TestHost> h;
  TestHost::Vm a;
  explicit PollRig(std::uint32_t vcpus = 1) {
    h = std::make_unique<TestHost>(test::flat(1), poll_host(), 1, "cfs");
    a = h->add_fake(test::vm("a", vcpus));
    h->start();
    job(0);
    h->run_until(sim::us(20));
    job(0);
    h->run_until(sim::us(32));
  }
  hv::VcpuId v(std::uint32_t i = 0) const { return a.vcpus[i]; }
  const hv::Vcpu& vcpu(std::uint32_t i = 0) const { return h->host().vcpu(v(i)); }
  void job(std::uint32_t i) {
    h->fake().set_plan(v(i), FakeGuest::job(10e3, 1));
    h->fake().kick(v(i));
  }
};

TEST(HaltPollWindow, GrowsFromGrowStartAndResetsAsKvm) {
  const HaltPollParams p;  // 200 us, grow 2, grow_start 10 us, shrink 0
  EXPECT_EQ(hv::grow_halt_poll(0, p), sim::us(10));               // 0 x 2 < grow_start
  EXPECT_EQ(hv::grow_halt_poll(sim::us(10), p), sim::us(20));
  EXPECT_EQ(hv::grow_halt_poll(sim::us(160), p), sim::us(200));   // capped at halt_poll_ns
  EXPECT_EQ(hv::shrink_halt_poll(sim::us(160), p), 0);            // shrink 0: reset
  HaltPollParams halves = p;
  halves.shrink = 2;
  EXPECT_EQ(hv::shrink_halt_poll(sim::us(160), halves), sim::us(80));
  HaltPollParams frozen = p;
  frozen.grow = 0;
  EXPECT_EQ(hv::grow_halt_poll(sim::us(40), frozen), sim::us(40));
  // kvm_vcpu_block()'s rule: a block the window covered changes nothing; a short one grows it;
  // one past halt_poll_ns shrinks it; a window of 0 stays 0 after a long block.
  EXPECT_EQ(hv::adjust_halt_poll(sim::us(40), sim::us(30), p), sim::us(40));
  EXPECT_EQ(hv::adjust_halt_poll(sim::us(40), sim::us(50), p), sim::us(80));
  EXPECT_EQ(hv::adjust_halt_poll(sim::us(40), sim::us(250), p), 0);
  EXPECT_EQ(hv::adjust_halt_poll(0, sim::us(250), p), 0);
  EXPECT_EQ(hv::adjust_halt_poll(sim::us(200), sim::us(200), p), sim::us(200));
}

TEST(HaltPoll, TheFirstHaltBlocksAndAShortBlockGrowsTheWindow) {
  PollRig r;
  // The second job waited for its switch-in: kick at 20 us, 2 us stall, 10 us of work.
  ASSERT_EQ(r.h->fake().completions(r.v()), 2u);
  EXPECT_EQ(r.h->fake().done_times(r.v())[1], sim::us(32));
  EXPECT_EQ(r.vcpu().poll_window, sim::us(10));  // block of 8 us < 200 us: 0 -> grow_start
  EXPECT_TRUE(r.vcpu().polling);
  EXPECT_TRUE(r.h->host().is_blocked(r.v()));   // halted, to its guest
  EXPECT_FALSE(r.h->host().is_running(r.v()));
  EXPECT_EQ(r.vcpu().state, hv::Runstate::kRunning);  // its thread still holds the pCPU
}

TEST(HaltPoll, AWakeUpInsideTheWindowResumesTheGuestWithoutASwitch) {
  PollRig r;
  r.h->run_until(sim::us(35));
  r.job(0);  // 3 us into a 10 us poll
  r.h->run_until(sim::us(100));
  ASSERT_EQ(r.h->fake().completions(r.v()), 3u);
  EXPECT_EQ(r.h->fake().done_times(r.v())[2], sim::us(45));  // 35 + 10: no 2 us switch-in
  const hv::HaltPollStats& st = r.h->host().halt_poll_stats(r.a.id);
  EXPECT_EQ(st.successes, 1u);
  EXPECT_EQ(r.h->host().vcpu_stats(r.v()).context_switches, 2u);  // switched in at 0 and 20 us only
  EXPECT_EQ(r.vcpu().poll_window, sim::us(10));  // a 3 us block the window covered
}

TEST(HaltPoll, APollNobodyEndsBurnsItsWindowThenBlocksAndALongBlockResetsIt) {
  PollRig r;
  r.h->run_until(sim::us(100));
  EXPECT_FALSE(r.vcpu().polling);
  EXPECT_EQ(r.vcpu().state, hv::Runstate::kBlocked);  // at 42 us, its window out
  const hv::HaltPollStats& st = r.h->host().halt_poll_stats(r.a.id);
  EXPECT_EQ(st.polls, 1u);
  EXPECT_EQ(st.successes, 0u);
  EXPECT_DOUBLE_EQ(st.poll_ns, 10e3);
  // The poll is the vCPU thread's CPU time: 12 + 12 us of jobs (stalls included) and 10 us of poll.
  EXPECT_EQ(r.h->host().vcpu_stats(r.v()).running, sim::us(34));
  EXPECT_EQ(r.h->host().pcpu_busy(0), sim::us(34));
  // Woken at 500 us, it has been blocked 468 us since its halt, more than halt_poll_ns: the
  // window resets (shrink 0), and its next halt blocks at once.
  r.h->run_until(sim::us(500));
  r.job(0);
  r.h->run_until(sim::us(600));
  EXPECT_EQ(r.vcpu().poll_window, 0);
  EXPECT_EQ(r.vcpu().state, hv::Runstate::kBlocked);
  EXPECT_EQ(st.polls, 1u);
}

TEST(HaltPoll, AnotherTaskOnThePcpuStopsThePollAtOnce) {
  PollRig r(2);  // vCPU 1 has never run
  r.h->run_until(sim::us(33));
  ASSERT_TRUE(r.vcpu(0).polling);
  r.job(1);  // the only pCPU: vCPU 1 joins vCPU 0's runqueue
  r.h->run_until(sim::us(33));
  EXPECT_FALSE(r.vcpu(0).polling);
  EXPECT_EQ(r.vcpu(0).state, hv::Runstate::kBlocked);  // single_task_running() failed
  EXPECT_EQ(r.vcpu(1).state, hv::Runstate::kRunning);
  EXPECT_DOUBLE_EQ(r.h->host().halt_poll_stats(r.a.id).poll_ns, 1e3);
  r.h->run_until(sim::us(100));
  ASSERT_EQ(r.h->fake().completions(r.v(1)), 1u);
  EXPECT_EQ(r.h->fake().done_times(r.v(1))[0], sim::us(45));  // 33 + 2 us switch-in + 10 us
}

TEST(HaltPoll, OffByDefaultTheHaltBlocksAtOnce) {
  TestHost h(test::flat(1), hv::HostSpec{}, 1, "cfs");
  auto a = h.add_fake(test::vm("a", 1));
  h.start();
  for (int i = 0; i < 3; ++i) {
    h.fake().set_plan(a.vcpus[0], FakeGuest::job(10e3, 1));
    h.fake().kick(a.vcpus[0]);
    h.run_until(h.host().now() + sim::us(20));
    EXPECT_EQ(h.host().vcpu(a.vcpus[0]).state, hv::Runstate::kBlocked);
    EXPECT_FALSE(h.host().vcpu(a.vcpus[0]).polling);
  }
  EXPECT_EQ(h.host().halt_poll_stats(a.id).polls, 0u);
}

}  // namespace
}  // namespace vcpusim
