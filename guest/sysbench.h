// SPDX-License-Identifier: MIT
// This file defines the sysbench workload models, `sysbench-cpu` and `sysbench-memory`
// (sysbench 1.0; reference: ../shared/reference/spinlocks-and-workloads.md section 3).
//
// sysbench cpu: each thread loops over events; one event tests the integers up to
// cpu-max-prime by trial division: pure CPU, L1-resident, no locks, no sleeping. Its reference
// event time is CALIBRATED from ../shared/calibration/001 (the "Alone" row: 1306.90 events/s
// for one thread alone on a core, so one event = 1e9 / 1306.90 ns = 765.2 us).
//
// sysbench memory: each thread writes blocks of --memory-block-size sequentially from its own
// quota, no lock (1.0's thread-local event counting), nothing sleeps. With 1 MiB blocks (the
// bandwidth configuration) it is DRAM-bandwidth bound. Result: MiB/s written, as sysbench
// prints "MiB transferred (X MiB/sec)".
//
// MODEL: nothing a scheduler can see happens between two sysbench events (no lock, no sleep, no
// system call), so a thread executes `events_per_step` events as one compute step, by default
// the fewest that make 1 ms of reference work. Results are credited when a step completes; the
// partial steps cut by the ends of the measured interval bias the result by at most one step
// per thread over the interval (under 0.01% for 1 ms steps over 10 s).
//
// sysbench memory `version: "0.4"` (0.4/0.5, the version distributions shipped until 2016):
// every event takes TWO global pthread mutexes (akopytov/sysbench 0.4 sources):
//   memory_get_request(): SB_THREAD_MUTEX_LOCK(); total_ops++; total_bytes += block; UNLOCK
//   memory_execute_request(): the block writes between LOG_EVENT_START/STOP, and the STOP's
//     oper_handler_process(): pthread_mutex_lock(&oper_mutex); operations[ncell]++; unlock
// Both are glibc default mutexes: contention sleeps on a futex, the unlock wakes one waiter who
// retries (a barging mutex, mutex.h), so a VM's threads block and its vCPUs halt and wake: the
// event is lock- and wake-up-bound, not DRAM-bound (reference note, "sysbench memory": "Only the
// 0.4/0.5 mutex version turns contention into futex sleeps, wake-ups and HLT exits";
// "CS frac ... 0.4/0.5: 30-50% at 1 KiB"). MODEL: one event is `event CPU time` (from
// thread_bandwidth: block / thread_bandwidth) of which cs_frac is held, half under each mutex;
// profile mixed (L1-resident writes, system calls, lock cachelines). A step is
// `events_per_step` events' worth of one mutex section (default: the fewest making 50 us of
// work, far below the hypervisor's 1 ms rate limit and the guest slice): a thread alternates a
// claim step (mutex 0) and a write + statistics step (mutex 1), credited after the second.
//
// `event_cv` (both memory versions, default 0 as in sysbench cpu) spreads each step's time.
// Leave it at 0 only with batched steps: with one event per step and every event alike, a
// barging mutex can phase-lock. A futex-woken waiter then retries a fixed time after the unlock,
// which on every cycle falls inside the lock holder's next hold. It loses, sleeps, and is woken
// again, and its VM runs on one thread. No real loop repeats to the nanosecond. On credit2 with
// 6 VMs of 2 vCPUs on xeon-x5570-2s, 1 KiB steps of one event gave four VMs at 135 MiB/s and two
// at 335. With event_cv 0.1 all six VMs ran at 313, and the batched steps gave 319
// (docs/reproductions/credit2-affinity.md).
#pragma once

#include "guest/workload.h"

namespace vcpusim::guest {

class SysbenchCpu final : public Workload {
 public:
  static constexpr double kCalibratedEventsPerSec = 1306.90;  // ../shared/calibration/001, "Alone"
  static std::vector<sim::ParamSpec> param_specs();
  static std::unique_ptr<Workload> make(const sim::ParamValues& v);
  SysbenchCpu(std::uint32_t threads, double event_ns, double event_cv, std::uint32_t events_per_step = 1)
      : threads_(threads), event_ns_(event_ns), cv_(event_cv), per_step_(events_per_step) {}
  std::string_view kind() const override { return "sysbench-cpu"; }
  std::uint32_t threads() const override { return threads_; }
  Step next(std::uint32_t thread, sim::RngStream& rng) override;
  std::string_view unit() const override { return "events/s"; }

 private:
  std::uint32_t threads_;
  double event_ns_, cv_;
  std::uint32_t per_step_;
};

/// Events per compute step: `requested`, or when 0 the fewest making >= 1 ms of work.
std::uint32_t events_per_step(double requested, double event_ns);

class SysbenchMemory final : public Workload {
 public:
  enum class Version : std::uint8_t { k10 = 0, k04 = 1 };
  static std::vector<sim::ParamSpec> param_specs();
  static std::unique_ptr<Workload> make(const sim::ParamValues& v);
  SysbenchMemory(std::uint32_t threads, double block_bytes, double thread_mbps, double mem_intensity,
                 double events_per_step_param = 0, Version version = Version::k10, double cs_frac = 0.4,
                 double event_cv = 0.0);
  std::string_view kind() const override { return "sysbench-memory"; }
  std::uint32_t threads() const override { return threads_; }
  Step next(std::uint32_t thread, sim::RngStream& rng) override;
  std::string_view unit() const override { return "MiB/s"; }
  std::vector<LockSpec> locks() const override;
  std::uint32_t events_per_step() const { return per_step_; }

 private:
  /// The step's time over its mean: 1 with event_cv 0, else N(1, event_cv / sqrt(events)).
  double step_factor(sim::RngStream& rng) const;

  std::uint32_t threads_;
  double block_mib_, block_ns_, mem_;
  Version version_;
  double cs_frac_, cv_;
  std::uint32_t per_step_;
  std::vector<std::uint8_t> second_;  ///< 0.4: the thread's next step is the write + stats step
};

}  // namespace vcpusim::guest
