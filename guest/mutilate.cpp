// SPDX-License-Identifier: MIT
#include "guest/mutilate.h"

#include <algorithm>

namespace vcpusim::guest {

using sim::ParamSpec;

std::vector<ParamSpec> Mutilate::param_specs() {
  const Params d;
  return {
      {"threads", ParamSpec::Kind::kInt, 1, 1, 4096, {},
       "mutilate -T client threads, one connection each, depth 1 (mmtests: 1..NUMCPUS)"},
      {"server_threads", ParamSpec::Kind::kInt, static_cast<double>(d.server_threads), 1, 1024, {},
       "memcached -t worker threads (memcached's default 4, which mmtests keeps)"},
      ParamSpec{"value_size", ParamSpec::Kind::kInt, d.value_bytes, 1, 1 << 30, {},
                "bytes per GET value (mmtests: mutilate -V 16384)"}.in_bytes(),
      {"client_time", ParamSpec::Kind::kDuration, d.client_ns, 100, 1e9, {},
       "client CPU per request without the value copy [E]: a write and a read syscall in libevent"},
      {"server_time", ParamSpec::Kind::kDuration, d.server_ns, 100, 1e9, {},
       "memcached CPU per GET without the value copy (note 3: 5-15 us including the kernel) [E]"},
      {"copy_bandwidth", ParamSpec::Kind::kDouble, d.copy_gbps, 0.1, 1000, {},
       "GB/s of one core copying the value into or out of a socket [E] (README: ~10 GB/s refill)"},
      {"mem_intensity", ParamSpec::Kind::kDouble, d.mem_intensity, 0.0, 1.0, {},
       "memory-stall share (note 3: moderate, hash table plus slabs) [E]"},
      ParamSpec{"cache_footprint", ParamSpec::Kind::kInt, d.footprint_bytes, 1024, 1 << 30, {},
                "bytes a thread touches between sleeps, refilled after a move to another core [E]: a 16 KiB "
                "value copied (source and destination) plus ~32 KiB of kernel, libevent code and stack"}.in_bytes(),
  };
}

std::unique_ptr<Workload> Mutilate::make(const sim::ParamValues& v) {
  Params p;
  p.clients = static_cast<std::uint32_t>(v.get("threads", 1));
  p.server_threads = static_cast<std::uint32_t>(v.get("server_threads", p.server_threads));
  p.value_bytes = v.get("value_size", p.value_bytes);
  p.client_ns = v.get("client_time", p.client_ns);
  p.server_ns = v.get("server_time", p.server_ns);
  p.copy_gbps = v.get("copy_bandwidth", p.copy_gbps);
  p.mem_intensity = v.get("mem_intensity", p.mem_intensity);
  p.footprint_bytes = v.get("cache_footprint", p.footprint_bytes);
  return std::make_unique<Mutilate>(p);
}

Mutilate::Mutilate(const Params& p)
    : p_(p),
      // Each side copies the value once: memcached into its socket, mutilate out of its own
      // (loopback TCP: bytes / (GB/s) = ns).
      client_step_ns_(p.client_ns + p.value_bytes / p.copy_gbps),
      server_step_ns_(p.server_ns + p.value_bytes / p.copy_gbps),
      sending_(p.server_threads + p.clients, 0),
      serving_(p.server_threads, 0),
      sent_at_(p.clients, 0) {
  // Clients start by sending; workers start asleep in epoll.
  std::fill(sending_.begin() + p.server_threads, sending_.end(), 1);
}

Step Mutilate::next(std::uint32_t thread, sim::RngStream& rng) {
  Step s;
  s.profile = hv::Profile::kMixed;  // note 3: SMT 0.65-0.75 (the matrix's mixed/mixed 0.65)
  // A request's time is mostly the loopback TCP stack: the 16 KiB copies and the send and
  // receive system calls run in the kernel.
  s.user_mode = false;
  s.mem_intensity = p_.mem_intensity;
  if (!sending_[thread]) {
    // Sleep on its own channel: a worker's connections, a client's reply.
    sending_[thread] = 1;
    s.kind = Step::Kind::kReceive;
    s.channel = static_cast<std::int32_t>(thread);
    s.result = is_server(thread) ? 0.0 : 1.0;  // a reply is one completed op
    return s;
  }
  sending_[thread] = 0;
  // Note 3: "Burst: Exponential, mean about 10 us"; the copy is fixed by the value size.
  if (is_server(thread)) {
    s.work_ns = std::max(1.0, rng.exponential(p_.server_ns)) + p_.value_bytes / p_.copy_gbps;
    s.send_to = static_cast<std::int32_t>(p_.server_threads + serving_[thread]);
    s.payload = serving_[thread];
  } else {
    const std::uint32_t c = thread - p_.server_threads;
    s.work_ns = std::max(1.0, rng.exponential(p_.client_ns)) + p_.value_bytes / p_.copy_gbps;
    s.send_to = static_cast<std::int32_t>(c % p_.server_threads);
    s.payload = c;
  }
  return s;
}

void Mutilate::on_message(std::uint32_t thread, const Message& m, sim::Time now, bool measuring) {
  if (is_server(thread)) {
    const auto c = static_cast<std::uint32_t>(m.payload);
    serving_[thread] = c;
    sent_at_[c] = m.sent_at;
    return;
  }
  if (measuring) latency_.add(now - sent_at_[thread - p_.server_threads]);
}

std::vector<std::pair<std::string, double>> Mutilate::figures() const {
  return {{"latency_avg_us", latency_.mean_ns() / 1e3},
          {"latency_p50_us", latency_.quantile_ns(0.50) / 1e3},
          {"latency_p95_us", latency_.quantile_ns(0.95) / 1e3},
          {"latency_p99_us", latency_.quantile_ns(0.99) / 1e3}};
}

}  // namespace vcpusim::guest
