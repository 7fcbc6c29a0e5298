// SPDX-License-Identifier: MIT
// Pins the sysbench memory 0.4 model (guest/sysbench.h) and the barging mutex it runs on
// (guest/mutex.h): glibc's unlock frees the lock and wakes one waiter, who retries and may lose
// to a running thread; FIFO hand-off is the other discipline. A 0.4 event takes both global
// mutexes once; the 1.0 model takes none.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "guest/guest_os.h"
#include "guest/mutex.h"
#include "guest/sysbench.h"
#include "hypervisor/host.h"
#include "sim/sim_time.h"
#include "test_host.h"

namespace vcpusim {
namespace {

using guest::Mutex;
using guest::SysbenchMemory;
using test::TestHost;

TEST(Mutex, FifoHandsTheLockToTheFirstWaiter) {
  Mutex m;
  ASSERT_TRUE(m.lock(0));
  EXPECT_FALSE(m.lock(1));
  EXPECT_FALSE(m.lock(2));
  EXPECT_EQ(m.unlock(), 1u);
  EXPECT_EQ(m.owner(), 1u);   // handed over: nobody can barge in
  EXPECT_FALSE(m.lock(3));    // queued behind 2
  EXPECT_EQ(m.unlock(), 2u);
  EXPECT_EQ(m.unlock(), 3u);
}

TEST(Mutex, BargingUnlockFreesTheLockAndWakesOneWaiter) {
  Mutex m(true);
  ASSERT_TRUE(m.lock(0));
  EXPECT_FALSE(m.lock(1));
  EXPECT_FALSE(m.lock(2));
  EXPECT_EQ(m.unlock(), 1u);        // 1 is woken...
  EXPECT_EQ(m.owner(), Mutex::kNone);  // ...but does not own it
  EXPECT_TRUE(m.lock(3));           // a running thread barges in, sleepers queued or not
  EXPECT_FALSE(m.lock(1));          // 1's retry loses: back to sleep, behind 2
  EXPECT_EQ(m.unlock(), 2u);
  EXPECT_TRUE(m.lock(2));           // 2's retry wins
  EXPECT_EQ(m.unlock(), 1u);
  EXPECT_TRUE(m.lock(1));
  EXPECT_EQ(m.unlock(), Mutex::kNone);
}

/// One VM of `vcpus` vCPUs on as many dedicated pCPUs, `threads` sysbench memory threads with
/// 1 KiB blocks, no NUMA stalls, for `ms`.
guest::GuestResults run_memory(std::uint32_t vcpus, double threads, double thread_bandwidth, int version, int ms,
                               double cs_frac = 0.4) {
  TestHost h(test::flat(vcpus));
  auto g = h.add_vm(test::vm("a", vcpus),
                    test::workload("sysbench-memory", {{"threads", threads},
                                                       {"block_size", 1024},
                                                       {"mem_intensity", 0},
                                                       {"thread_bandwidth", thread_bandwidth},
                                                       {"version", version},
                                                       {"cs_frac", cs_frac}}));
  h.start();
  h.run_until(sim::ms(ms));
  return g.os->results();
}

TEST(SysbenchMemory04, EveryEventTakesBothGlobalMutexesOnce) {
  // One 2-vCPU VM on 2 dedicated pCPUs, 4 threads, 1 KiB blocks at 1 MiB/s per thread alone
  // (976.6 us per event: events_per_step 1). Per event: exec_mutex once, oper_mutex once.
  const auto r = run_memory(2, 4, 1, 1, 200);
  ASSERT_EQ(r.per_lock.size(), 2u);
  const double events = r.throughput * 0.2 * 1024;  // MiB/s over 0.2 s, 1 KiB per event
  // Counted at release; events in flight at either end of the interval: at most one per thread.
  EXPECT_NEAR(static_cast<double>(r.per_lock[0].acquisitions), events, 4.5);
  EXPECT_NEAR(static_cast<double>(r.per_lock[1].acquisitions), events, 4.5);
  EXPECT_EQ(r.locks.spin_ns, 0.0);  // sleeping locks never spin
}

TEST(SysbenchMemory04, TwoBusyVcpusGiveTwiceTheThreadRateWhenLocksAreNotSaturated) {
  // cs_frac 0.4 split over two locks: each lock is held 0.2 of an event, so two vCPUs load each
  // to 40%; contention costs only the waiters' retries (40 ns hand-off segments), so the VM runs
  // at nearly 2 x thread_bandwidth. 1.0 runs at exactly 2 x (no locks).
  for (int version : {0, 1}) {
    const auto r = run_memory(2, 4, 200, version, 300);
    EXPECT_GT(r.throughput, 0.95 * 400) << "version " << version;
    EXPECT_LT(r.throughput, 1.01 * 400) << "version " << version;
    if (version == 1) {
      EXPECT_GT(r.locks.contended, 0u);
    }
  }
}

TEST(SysbenchMemory04, SaturatedLockCapsTheVmAtOneHolderAtATime) {
  // cs_frac 0.9: each event holds the two locks 0.45 of its time each. The two mutex sections
  // of a VM can overlap (different locks) but each lock serialises: throughput <= 1 / 0.45 events
  // per event-time, i.e. 2.22 x thread_bandwidth, and the 2 vCPUs cannot both stay busy. Below
  // the cap by the hand-offs: a sleeping waiter takes the lock only after its wake-up and the
  // guest's switch to it (2 us, and the vCPU's 2 us switch-in and 2.8 us IPI when it had halted)
  // against a 22 us step under the lock (five 9.8 us events at 0.45): 0.76-0.92 of the cap.
  const double tp = run_memory(4, 8, 100, 1, 300, 0.9).throughput;
  EXPECT_LT(tp, 100 / 0.45 * 1.01);
  EXPECT_GT(tp, 100 / 0.45 * 0.75);
}

TEST(SysbenchMemory, EventCvSpreadsStepTimesAroundTheMean) {
  // 1.0, 1 KiB at 1 MiB/s: 976.6 us per event, 4 per step. With event_cv 0.2 a step (the sum of
  // 4 events) keeps its mean and has cv 0.2 / sqrt(4) = 0.1; over 20000 steps the sample mean is
  // within 4 standard errors (0.1 / sqrt(20000) = 0.07%) and the sample cv within 3% of 0.1.
  const double event_ns = 1e9 / 1024.0;
  SysbenchMemory jittered(1, 1024, 1.0, 0.0, 4, SysbenchMemory::Version::k10, 0.4, 0.2);
  sim::RngStream rng(7);
  double sum = 0, sq = 0;
  constexpr int kSteps = 20000;
  for (int i = 0; i < kSteps; ++i) {
    const double w = jittered.next(0, rng).work_ns / (4 * event_ns);
    sum += w;
    sq += w * w;
  }
  const double mean = sum / kSteps, cv = std::sqrt(sq / kSteps - mean * mean) / mean;
  EXPECT_NEAR(mean, 1.0, 4 * 0.1 / std::sqrt(kSteps));
  EXPECT_NEAR(cv, 0.1, 0.003);
  // event_cv 0: every step alike, and no draw, so a run's other random streams do not shift.
  SysbenchMemory flat(1, 1024, 1.0, 0.0, 4, SysbenchMemory::Version::k04, 0.4, 0.0);
  sim::RngStream a(7), b(7);
  for (int i = 0; i < 10; ++i) {
    const auto s = flat.next(0, a);
    EXPECT_DOUBLE_EQ(s.hold_ns, 0.4 * 4 * event_ns / 2);
  }
  EXPECT_EQ(a.next_u64(), b.next_u64());
}

}  // namespace
}  // namespace vcpusim
