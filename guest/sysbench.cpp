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

SysbenchMemory::SysbenchMemory(std::uint32_t threads, double block_bytes, double thread_mbps, double mem_intensity,
                               double events_per_step_param, Version version, double cs_frac, double event_cv)
    : threads_(threads), block_mib_(block_bytes / (1024.0 * 1024.0)),
      block_ns_(block_bytes / (thread_mbps * 1024.0 * 1024.0) * 1e9), mem_(mem_intensity), version_(version),
      cs_frac_(cs_frac), cv_(event_cv),
      per_step_(version == Version::k10 || events_per_step_param >= 1
                    ? vcpusim::guest::events_per_step(events_per_step_param, block_ns_)
                    // 0.4: the fewest events making 50 us (see sysbench.h)
                    : static_cast<std::uint32_t>(std::max(1.0, std::ceil(50e3 / block_ns_)))),
      second_(threads, 0) {}

std::vector<LockSpec> SysbenchMemory::locks() const {
  if (version_ == Version::k10) return {};
  LockParams p;
  p.kind = LockKind::kMutex;
  p.barging = true;     // glibc's default pthread mutex
  p.user_space = true;  // sysbench's own mutexes: the guest may preempt their holder
  return {LockSpec{"sb_globals.exec_mutex", p}, LockSpec{"oper_mutex", p}};
}

std::vector<ParamSpec> SysbenchMemory::param_specs() {
  return {
      {"threads", ParamSpec::Kind::kInt, 1, 1, 4096, {}, "--threads (sysbench default 1)"},
      ParamSpec{"block_size", ParamSpec::Kind::kInt, 1024.0 * 1024.0, 1024, 1 << 30, {},
                "--memory-block-size in bytes (1 MiB: the DRAM-bandwidth configuration)"}.in_bytes(),
      {"thread_bandwidth", ParamSpec::Kind::kDouble, 6000, 1, 1e6, {},
       "MiB/s one thread writes alone on an idle machine with local memory, at this block_size [E]: "
       "Nehalem-EP single-thread sequential write; the per-study calibration constant (an event costs "
       "block_size / thread_bandwidth, with no per-event overhead, so block_size alone does not change MiB/s)"},
      {"mem_intensity", ParamSpec::Kind::kDouble, 0.8, 0.0, 1.0, {},
       "share of its time stalled on memory, scales the NUMA penalty [E]"},
      kEventsPerStep,
      {"version", ParamSpec::Kind::kChoice, 0, 0, 2, {"1.0", "0.4", "0.5"},
       "sysbench version: 1.0 (no lock per event) or 0.4 / 0.5 (the same memory test: two global pthread "
       "mutexes per event; see sysbench.h)"},
      ParamSpec{"cs_frac", ParamSpec::Kind::kDouble, 0.4, 0.0, 0.95, {},
       "share of an event's CPU time under the two mutexes (note: 30-50% at 1 KiB -> 0.4)"}.acting_only_with("version", {"0.4", "0.5"}),
      {"event_cv", ParamSpec::Kind::kDouble, 0.0, 0.0, 1.0, {},
       "coefficient of variation of the event time (0: every event alike; see sysbench.h on phase locking)"},
  };
}

std::unique_ptr<Workload> SysbenchMemory::make(const sim::ParamValues& v) {
  return std::make_unique<SysbenchMemory>(static_cast<std::uint32_t>(v.get("threads", 1)),
                                          v.get("block_size", 1024.0 * 1024.0),
                                          v.get("thread_bandwidth", 6000), v.get("mem_intensity", 0.8),
                                          v.get("events_per_step", 0),
                                          v.get("version", 0) >= 1 ? Version::k04 : Version::k10,
                                          v.get("cs_frac", 0.4), v.get("event_cv", 0.0));
}

double SysbenchMemory::step_factor(sim::RngStream& rng) const {
  if (cv_ <= 0) return 1.0;  // no draw: a jitter-free run keeps its random streams as before
  // A step is per_step_ independent events, so its time has the event's mean and cv / sqrt(n)
  // (one draw for the sum; SysbenchCpu draws per event, its steps hold few). Floored as there.
  return std::max(0.05, rng.normal(1.0, cv_ / std::sqrt(static_cast<double>(per_step_))));
}

Step SysbenchMemory::next(std::uint32_t thread, sim::RngStream& rng) {
  const double f = step_factor(rng);
  if (version_ == Version::k04) {
    // An event's CPU time is block_ns_; cs_frac of it is held, half under each mutex.
    const double held = cs_frac_ * block_ns_ * per_step_ / 2 * f;
    Step s;
    s.profile = hv::Profile::kMixed;
    s.mem_intensity = mem_;
    s.hold_ns = held;
    if (!second_[thread]) {
      s.work_ns = 0;  // the loop top: straight into memory_get_request()'s mutex
      s.lock = 0;
    } else {
      s.work_ns = (1 - cs_frac_) * block_ns_ * per_step_ * f;  // the writes and the event timers
      s.lock = 1;
      s.result = block_mib_ * per_step_;
    }
    second_[thread] ^= 1;
    return s;
  }
  // It draws what it writes: block bytes per block time, in MB/s (1 MiB/s = 1.048576 MB/s).
  const double mbps = block_mib_ * 1.048576 / (block_ns_ * 1e-9);
  return Step{Step::Kind::kCompute, block_ns_ * per_step_ * f, hv::Profile::kMemory, mem_, 0, block_mib_ * per_step_,
              mbps};
}

}  // namespace vcpusim::guest
