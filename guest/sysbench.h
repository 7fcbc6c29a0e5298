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
  static std::vector<sim::ParamSpec> param_specs();
  static std::unique_ptr<Workload> make(const sim::ParamValues& v);
  SysbenchMemory(std::uint32_t threads, double block_bytes, double thread_mbps, double mem_intensity,
                 double events_per_step_param = 0)
      : threads_(threads), block_mib_(block_bytes / (1024.0 * 1024.0)),
        block_ns_(block_bytes / (thread_mbps * 1024.0 * 1024.0) * 1e9), mem_(mem_intensity),
        per_step_(events_per_step(events_per_step_param, block_ns_)) {}
  std::string_view kind() const override { return "sysbench-memory"; }
  std::uint32_t threads() const override { return threads_; }
  Step next(std::uint32_t thread, sim::RngStream& rng) override;
  std::string_view unit() const override { return "MiB/s"; }

 private:
  std::uint32_t threads_;
  double block_mib_, block_ns_, mem_;
  std::uint32_t per_step_;
};

}  // namespace vcpusim::guest
