// SPDX-License-Identifier: MIT
#include "guest/cassandra.h"

#include <algorithm>

namespace vcpusim::guest {

using sim::ParamSpec;

std::vector<ParamSpec> Cassandra::param_specs() {
  const Params d;
  return {
      {"threads", ParamSpec::Kind::kInt, static_cast<double>(d.requests), 1, 128, {},
       "request threads, one driver connection each (note 3 [S]: native transport at most 128)"},
      {"concurrent_reads", ParamSpec::Kind::kInt, static_cast<double>(d.readers), 1, 4096, {}, "read-stage threads (note 3 [S]: 32)"},
      {"concurrent_writes", ParamSpec::Kind::kInt, static_cast<double>(d.writers), 1, 4096, {}, "write-stage threads (note 3 [S]: 32)"},
      {"read_ratio", ParamSpec::Kind::kDouble, d.read_ratio, 0.0, 1.0, {}, "share of reads in the driver's mix [E]"},
      {"hop_time", ParamSpec::Kind::kDuration, d.hop_ns, 1e3, 1e9, {},
       "mean CPU per stage hop (note 3: 20-200 us per stage hop) [E]"},
      {"net_rtt", ParamSpec::Kind::kDuration, d.net_rtt_ns, 0, 1e9, {},
       "the driver's round trip between a response and the next request on a connection [E]"},
      {"read_io_frac", ParamSpec::Kind::kDouble, d.read_io_frac, 0.0, 1.0, {},
       "share of reads that wait on SSTable I/O (note 3: 5-30% I/O wait) [E]"},
      {"io_time", ParamSpec::Kind::kDuration, d.io_ns, 0, 1e9, {}, "mean SSTable read wait [E]"},
      {"mem_intensity", ParamSpec::Kind::kDouble, d.mem_intensity, 0.0, 1.0, {},
       "memory-stall share (note 3: high, heap and GC) [E]"},
  };
}

std::unique_ptr<Workload> Cassandra::make(const sim::ParamValues& v) {
  Params p;
  p.requests = static_cast<std::uint32_t>(v.get("threads", p.requests));
  p.readers = static_cast<std::uint32_t>(v.get("concurrent_reads", p.readers));
  p.writers = static_cast<std::uint32_t>(v.get("concurrent_writes", p.writers));
  p.read_ratio = v.get("read_ratio", p.read_ratio);
  p.hop_ns = v.get("hop_time", p.hop_ns);
  p.net_rtt_ns = v.get("net_rtt", p.net_rtt_ns);
  p.read_io_frac = v.get("read_io_frac", p.read_io_frac);
  p.io_ns = v.get("io_time", p.io_ns);
  p.mem_intensity = v.get("mem_intensity", p.mem_intensity);
  return std::make_unique<Cassandra>(p);
}

Cassandra::Cassandra(const Params& p)
    : p_(p), phase_(threads(), Phase::kWaitRequest), job_(threads(), 0) {
  for (std::uint32_t t = p_.requests; t < threads(); ++t) phase_[t] = Phase::kTake;
}

Step Cassandra::compute(double mean_ns, sim::RngStream& rng) const {
  Step s;
  s.work_ns = std::max(1.0, rng.exponential(mean_ns));
  s.profile = hv::Profile::kMixed;
  s.mem_intensity = p_.mem_intensity;
  return s;
}

Step Cassandra::next(std::uint32_t thread, sim::RngStream& rng) {
  Phase& ph = phase_[thread];
  Step s;
  switch (ph) {
    // --- request threads ---
    case Phase::kWaitRequest: {
      ph = Phase::kCoordinate;
      const double rtt = p_.net_rtt_ns > 0 ? rng.exponential(p_.net_rtt_ns) : 0.0;
      if (rtt >= 1.0) {
        s.kind = Step::Kind::kBlock;
        s.block = static_cast<sim::Duration>(rtt);
        return s;
      }
      [[fallthrough]];
    }
    case Phase::kCoordinate:
      ph = Phase::kWaitStage;
      s = compute(p_.hop_ns, rng);
      s.send_to = rng.uniform() < p_.read_ratio ? kReadStage : kWriteStage;
      s.payload = thread;
      return s;
    case Phase::kWaitStage:
      ph = Phase::kRespond;
      s.kind = Step::Kind::kReceive;
      s.channel = static_cast<std::int32_t>(2 + thread);
      return s;
    case Phase::kRespond:
      ph = Phase::kWaitRequest;
      s = compute(p_.hop_ns, rng);
      s.result = 1.0;  // the response is sent: one op
      return s;
    // --- stage threads ---
    case Phase::kTake:
      ph = Phase::kWork;
      s.kind = Step::Kind::kReceive;
      s.channel = thread < p_.requests + p_.readers ? kReadStage : kWriteStage;
      return s;
    case Phase::kWork:
      if (thread < p_.requests + p_.readers && rng.uniform() < p_.read_io_frac) {
        // A read that misses the caches: half the hop, the SSTable wait, the other half.
        ph = Phase::kIo;
        return compute(p_.hop_ns / 2, rng);
      }
      ph = Phase::kTake;
      s = compute(p_.hop_ns, rng);
      s.send_to = static_cast<std::int32_t>(2 + job_[thread]);
      s.payload = job_[thread];
      return s;
    case Phase::kIo:
      ph = Phase::kReply;
      s.kind = Step::Kind::kBlock;
      s.block = std::max<sim::Duration>(1, static_cast<sim::Duration>(rng.exponential(p_.io_ns)));
      return s;
    case Phase::kReply:
      ph = Phase::kTake;
      s = compute(p_.hop_ns / 2, rng);
      s.send_to = static_cast<std::int32_t>(2 + job_[thread]);
      s.payload = job_[thread];
      return s;
  }
  return s;
}

void Cassandra::on_message(std::uint32_t thread, const Message& m, sim::Time, bool) {
  if (thread < p_.requests) return;  // a stage's reply: nothing to remember
  job_[thread] = static_cast<std::uint32_t>(m.payload);
}

}  // namespace vcpusim::guest
