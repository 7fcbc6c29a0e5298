// SPDX-License-Identifier: MIT
// Pins synchronous cross-vCPU calls (guest/ipi.h): the sender of a TLB shootdown spins until
// every target vCPU has run the handler, so a target the host has preempted stalls it until the
// host runs that target again; a running target answers after the delivery latency.
//
// System: two pCPUs under round robin with 10 ms slices. VM "a" has vCPU 0 alone on pCPU 0 and
// vCPU 1 on pCPU 1, which it shares with a CPU hog of VM "hog": vCPU 1 is on its pCPU half the
// time, in 10 ms turns. Thread 0 (on vCPU 0) does 100 us of work and a shootdown, over and over;
// thread 1 (on vCPU 1) computes. A shootdown sent while vCPU 1 runs waits exactly the latency
// (3 us); one sent while it is preempted waits for the rest of the hog's turn (up to 10 ms plus
// the switch), and counts as a stall.
#include <gtest/gtest.h>

#include "guest/guest_os.h"
#include "guest/ipi.h"
#include "guest/workload.h"
#include "hypervisor/host.h"
#include "test_host.h"

namespace vcpusim {
namespace {

using test::FakeGuest;
using test::TestHost;

class ShootdownLoop final : public guest::Workload {
 public:
  std::string_view kind() const override { return "shootdown-loop"; }
  std::uint32_t threads() const override { return 2; }
  guest::Step next(std::uint32_t thread, sim::RngStream&) override {
    guest::Step s;
    s.work_ns = thread == 0 ? 100e3 : 1e6;
    s.result = thread == 0 ? 1.0 : 0.0;
    s.shootdown_ns = thread == 0 ? 3000.0 : 0.0;
    return s;
  }
  std::string_view unit() const override { return "calls/s"; }
};

// Thread 0 (vCPU 0) computes 100 us and sends a shootdown; thread 1 (vCPU 1) computes 10 us
// and holds lock 0, a ticket spinlock nobody else takes, for 1 ms. Both vCPUs always run.
class CallerAndHolder final : public guest::Workload {
 public:
  explicit CallerAndHolder(bool irqs_off) { lock_.irqs_off = irqs_off; }
  std::string_view kind() const override { return "caller-and-holder"; }
  std::uint32_t threads() const override { return 2; }
  guest::Step next(std::uint32_t thread, sim::RngStream&) override {
    guest::Step s;
    s.result = 1.0;
    if (thread == 0) {
      s.work_ns = 100e3;
      s.shootdown_ns = 3000.0;
    } else {
      s.work_ns = 10e3;
      s.lock = 0;
      s.hold_ns = 1e6;
    }
    return s;
  }
  std::string_view unit() const override { return "steps/s"; }
  std::vector<guest::LockSpec> locks() const override { return {guest::LockSpec{"lru_lock", lock_}}; }

 private:
  guest::LockParams lock_;
};

TEST(CallFunctionIpis, AcknowledgesOnlyOnceDueAndFinishesTheSenderOnItsLast) {
  guest::CallFunctionIpis ipis;
  ipis.init(3, 2);
  ipis.send(0, 1, 3000);
  ipis.send(0, 2, 3000);
  EXPECT_EQ(ipis.outstanding(0), 2u);
  EXPECT_TRUE(ipis.owes(1));
  EXPECT_EQ(ipis.arm(1, 100), 3100);
  EXPECT_FALSE(ipis.owes(1));
  std::vector<std::uint32_t> done;
  ipis.acknowledge(1, 3099, done);  // not due yet
  EXPECT_EQ(ipis.outstanding(0), 2u);
  ipis.acknowledge(1, 3100, done);
  EXPECT_TRUE(done.empty());
  EXPECT_EQ(ipis.outstanding(0), 1u);
  EXPECT_EQ(ipis.arm(2, 5000), 8000);
  ipis.acknowledge(2, 8000, done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], 0u);
}

TEST(IpiShootdown, PreemptedTargetStallsTheSenderUntilTheHostRunsIt) {
  sim::ParamValues rr;
  rr.set("slice", static_cast<double>(sim::ms(10)));
  TestHost h(test::flat(2), {}, 1, "rr", rr);
  auto a = h.add_vm(test::vm_pinned_each("a", {0, 1}), std::make_unique<ShootdownLoop>());
  auto hog = h.add_fake(test::vm("hog", 1, test::cpus({1})));
  h.start();
  h.fake().set_plan(hog.vcpus[0], FakeGuest::hog());
  h.fake().kick(hog.vcpus[0]);
  h.run_until(sim::seconds(1));
  const guest::IpiStats st = a.os->results().ipis;
  ASSERT_GT(st.sent, 100u);
  // Some calls found vCPU 1 preempted, some found it running.
  EXPECT_GT(st.stalls, 0u);
  EXPECT_LT(st.stalls, st.sent);
  // A stalled call lasts until vCPU 1's next turn: at most the hog's 10 ms slice, the switch
  // (2 us) and the latency. Calls to a running target take the 3 us latency exactly.
  const double stalled_wait = st.wait_ns - 3000.0 * static_cast<double>(st.sent - st.stalls);
  EXPECT_GT(stalled_wait / static_cast<double>(st.stalls), 100e3);
  EXPECT_LE(stalled_wait / static_cast<double>(st.stalls), 10e6 + 2e3 + 3e3);
  // A stall is the sender's vCPU spinning the whole time: it burned about the wait.
  EXPECT_NEAR(st.spin_ns, st.wait_ns, 0.01 * st.wait_ns);
}

// The same with a KVM PV TLB flush (guest.pv_tlb_flush, 4.16+ guests): a call that finds
// vCPU 1 preempted by the hog leaves it a flush for its next entry and waits for nobody, so no
// call stalls and every call takes at most the 3 us latency; the ones that found vCPU 1
// preempted take none. The host is cfs (the PV flush is KVM's; its reading of the steal-time
// flag is the host's `vcpu->preempted`); its slices are shorter than rr's 10 ms, which changes
// nothing here. Without the flag the same host stalls calls. The hog comes after vCPU 1 first
// ran: KVM flags only a vCPU taken off its pCPU still Runnable, and one never run was not.
TEST(IpiShootdown, PvTlbFlushSkipsAPreemptedTargetAndWaitsForNobody) {
  auto run = [](bool pv) {
    TestHost h(test::flat(2), {}, 1, "cfs");
    guest::GuestParams gp;
    gp.pv_tlb_flush = pv;
    auto a = h.add_vm(test::vm_pinned_each("a", {0, 1}), std::make_unique<ShootdownLoop>(), gp);
    auto hog = h.add_fake(test::vm("hog", 1, test::cpus({1})));
    h.start();
    h.run_until(sim::ms(1));  // vCPU 1 has run before the hog comes (a vCPU never run is not flagged)
    h.fake().set_plan(hog.vcpus[0], FakeGuest::hog());
    h.fake().kick(hog.vcpus[0]);
    h.run_until(sim::seconds(1));
    return a.os->results().ipis;
  };
  const guest::IpiStats native = run(false), pv = run(true);
  ASSERT_GT(native.sent, 100u);
  EXPECT_GT(native.stalls, 0u);
  EXPECT_EQ(native.deferred, 0u);
  ASSERT_GT(pv.sent, 100u);
  EXPECT_EQ(pv.stalls, 0u);
  EXPECT_GT(pv.deferred, 0u);
  EXPECT_LT(pv.deferred, pv.sent);  // some calls found vCPU 1 running and waited the latency
  EXPECT_NEAR(pv.wait_ns, 3000.0 * static_cast<double>(pv.sent - pv.deferred), 1.0);
  // With no stall, thread 0 sends faster.
  EXPECT_GT(pv.sent, native.sent);
}

TEST(IpiShootdown, TargetHoldingALockWithInterruptsOffTakesTheCallOnlyAtItsUnlock) {
  // With the lock taken by spin_lock (interrupts on) the running target answers after the 3 us
  // latency. Taken by spin_lock_irqsave, the call stays pending until spin_unlock_irqrestore.
  // A call ends 3 us after a release; the holder takes the lock again 10 us after the release,
  // and the caller sends its next call 100 us after the last one ended, so 93 us into that hold:
  // it waits the 907 us left of the hold and the latency, 910 us (the first call, 913 us).
  for (const bool irqs_off : {false, true}) {
    TestHost h(test::flat(2), {}, 1, "rr", {});
    auto a = h.add_vm(test::vm_pinned_each("a", {0, 1}), std::make_unique<CallerAndHolder>(irqs_off));
    h.start();
    h.run_until(sim::ms(200));
    const guest::IpiStats st = a.os->results().ipis;
    ASSERT_GT(st.sent, 100u) << "irqs_off " << irqs_off;
    EXPECT_EQ(st.stalls, 0u);  // the target is always on its pCPU
    const double mean_wait = st.wait_ns / static_cast<double>(st.sent);
    if (irqs_off)
      EXPECT_NEAR(mean_wait, 910e3, 1e3);
    else
      EXPECT_NEAR(mean_wait, 3000.0, 1.0);
  }
}

}  // namespace
}  // namespace vcpusim
