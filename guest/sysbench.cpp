// SPDX-License-Identifier: MIT
#include "guest/sysbench.h"

#include <algorithm>

namespace vcpusim::guest {

using sim::ParamSpec;

std::vector<ParamSpec> SysbenchCpu::param_specs() {
  return {
      {"threads", ParamSpec::Kind::kInt, 1, 1, 4096, {}, "--threads (sysbench default 1)"},
      {"event_time", ParamSpec::Kind::kDuration, 1e9 / kCalibratedEventsPerSec, 1e3, 1e9, {},
       "reference time of one event alone on a core (calibrated: 1e9/1306.90 ns, ../shared/calibration/001)"},
      {"event_cv", ParamSpec::Kind::kDouble, 0.0, 0.0, 1.0, {},
       "coefficient of variation of the event time (0: every event alike)"},
  };
}

std::unique_ptr<Workload> SysbenchCpu::make(const sim::ParamValues& v) {
  return std::make_unique<SysbenchCpu>(static_cast<std::uint32_t>(v.get("threads", 1)),
                                       v.get("event_time", 1e9 / kCalibratedEventsPerSec),
                                       v.get("event_cv", 0.0));
}

Step SysbenchCpu::next(std::uint32_t, sim::RngStream& rng) {
  double w = event_ns_;
  if (cv_ > 0) w = std::max(0.05 * event_ns_, rng.normal(event_ns_, cv_ * event_ns_));
  return Step{Step::Kind::kCompute, w, hv::Profile::kCpu, 0.0, 0, 1.0};
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
  };
}

std::unique_ptr<Workload> SysbenchMemory::make(const sim::ParamValues& v) {
  return std::make_unique<SysbenchMemory>(static_cast<std::uint32_t>(v.get("threads", 1)),
                                          v.get("block_size", 1024.0 * 1024.0),
                                          v.get("thread_bandwidth", 6000), v.get("mem_intensity", 0.8));
}

Step SysbenchMemory::next(std::uint32_t, sim::RngStream&) {
  return Step{Step::Kind::kCompute, block_ns_, hv::Profile::kMemory, mem_, 0, block_mib_};
}

}  // namespace vcpusim::guest
