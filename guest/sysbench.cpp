// SPDX-License-Identifier: MIT
#include "guest/sysbench.h"

#include <algorithm>
#include <cmath>

namespace vcpusim::guest {

using sim::ParamSpec;

std::uint32_t events_per_step(double requested, double event_ns) {
  if (requested >= 1) return static_cast<std::uint32_t>(requested);
  constexpr double kStepNs = 1e6;  // 1 ms: far below any scheduler slice or guest timeslice
  return static_cast<std::uint32_t>(std::max(1.0, std::ceil(kStepNs / event_ns)));
}

namespace {
const ParamSpec kEventsPerStep{"events_per_step", ParamSpec::Kind::kInt, 0, 0, 1'000'000, {},
                               "events executed as one compute step (0: the fewest making 1 ms; see sysbench.h)"};
}  // namespace

std::vector<ParamSpec> SysbenchCpu::param_specs() {
  return {
      {"threads", ParamSpec::Kind::kInt, 1, 1, 4096, {}, "--threads (sysbench default 1)"},
      {"event_time", ParamSpec::Kind::kDuration, 1e9 / kCalibratedEventsPerSec, 1e3, 1e9, {},
       "reference time of one event alone on a core (calibrated: 1e9/1306.90 ns, ../shared/calibration/001)"},
      {"event_cv", ParamSpec::Kind::kDouble, 0.0, 0.0, 1.0, {},
       "coefficient of variation of the event time (0: every event alike)"},
      kEventsPerStep,
  };
}

std::unique_ptr<Workload> SysbenchCpu::make(const sim::ParamValues& v) {
  const double event_ns = v.get("event_time", 1e9 / kCalibratedEventsPerSec);
  return std::make_unique<SysbenchCpu>(static_cast<std::uint32_t>(v.get("threads", 1)), event_ns,
                                       v.get("event_cv", 0.0), events_per_step(v.get("events_per_step", 0), event_ns));
}

Step SysbenchCpu::next(std::uint32_t, sim::RngStream& rng) {
  double w = 0;
  for (std::uint32_t i = 0; i < per_step_; ++i)
    w += cv_ > 0 ? std::max(0.05 * event_ns_, rng.normal(event_ns_, cv_ * event_ns_)) : event_ns_;
  return Step{Step::Kind::kCompute, w, hv::Profile::kCpu, 0.0, 0, static_cast<double>(per_step_)};
}

std::vector<ParamSpec> SysbenchMemory::param_specs() {
  return {
      {"threads", ParamSpec::Kind::kInt, 1, 1, 4096, {}, "--threads (sysbench default 1)"},
      {"block_size", ParamSpec::Kind::kInt, 1024.0 * 1024.0, 1024, 1 << 30, {},
       "--memory-block-size in bytes (1 MiB: the DRAM-bandwidth configuration)"},
      {"thread_bandwidth", ParamSpec::Kind::kDouble, 6000, 1, 1e6, {},
       "MiB/s one thread writes alone on an idle machine with local memory [E]: Nehalem-EP "
       "single-thread sequential write; the per-study calibration constant"},
      {"mem_intensity", ParamSpec::Kind::kDouble, 0.8, 0.0, 1.0, {},
       "share of its time stalled on memory, scales the NUMA penalty [E]"},
      kEventsPerStep,
  };
}

std::unique_ptr<Workload> SysbenchMemory::make(const sim::ParamValues& v) {
  return std::make_unique<SysbenchMemory>(static_cast<std::uint32_t>(v.get("threads", 1)),
                                          v.get("block_size", 1024.0 * 1024.0),
                                          v.get("thread_bandwidth", 6000), v.get("mem_intensity", 0.8),
                                          v.get("events_per_step", 0));
}

Step SysbenchMemory::next(std::uint32_t, sim::RngStream&) {
  // It draws what it writes: block bytes per block time, in MB/s (1 MiB/s = 1.048576 MB/s).
  const double mbps = block_mib_ * 1.048576 / (block_ns_ * 1e-9);
  return Step{Step::Kind::kCompute, block_ns_ * per_step_, hv::Profile::kMemory, mem_, 0, block_mib_ * per_step_, mbps};
}

}  // namespace vcpusim::guest
