// SPDX-License-Identifier: MIT
// This file defines the `mutilate` workload: a memcached server and mutilate load-generator
// clients in the same OS instance, talking over localhost, as mmtests runs them
// (../shared/reference/mmtests-format.md section 5: memcached with its default 4 worker
// threads, `mutilate -s 127.0.0.1 -T T -V 16384`, everything else at mutilate's defaults: one
// connection per client thread, pipeline depth 1, 100% GETs, peak QPS). Numbers cite
// ../shared/reference/spinlocks-and-workloads.md section 3, "mutilate + memcached" ("note");
// [E] marks the note's own estimates or this model's. docs/workloads/mutilate.md has the
// reasoning behind each parameter and what the model leaves out.
//
// A closed loop per client thread over Channels (channel.h):
//  - client c (threads server_threads .. server_threads+T-1, process 1 "mutilate"): a send
//    step (client_time of CPU: mutilate's write + libevent loop + read and parse of the
//    previous reply, plus copying that 16 KiB reply out of the socket), which sends the request
//    to memcached worker c mod server_threads (connections go to workers round robin:
//    memcached thread.c dispatch_conn_new, `tid = (last_thread + 1) % settings.num_threads`),
//    then sleeps until the reply arrives on its own connection (depth 1: one request
//    outstanding), which counts one op;
//  - worker w (threads 0 .. server_threads-1, process 0 "memcached"): sleeps in epoll until a
//    request is queued on one of its connections, processes the GET (server_time of CPU plus
//    copying the value into the socket) and replies, waking the client; requests on its
//    connections are served in arrival order.
// Result: `ops/s`, mutilate's "Total QPS" (study metric `ops_per_sec`), and the request
// latency (from the client's send to the reply's arrival) as latency_avg_us / _p50_us /
// _p95_us / _p99_us.
#pragma once

#include "guest/latency_histogram.h"
#include "guest/workload.h"

namespace vcpusim::guest {

class Mutilate final : public Workload {
 public:
  struct Params {
    std::uint32_t clients = 1;         ///< mutilate -T, one connection each
    std::uint32_t server_threads = 4;  ///< memcached -t
    double value_bytes = 16384;        ///< mutilate -V
    double client_ns = 5e3;            ///< client CPU per request, without the value copy
    double server_ns = 10e3;           ///< memcached CPU per GET, without the value copy
    double copy_gbps = 10.0;           ///< GB/s of one core copying the value
    double mem_intensity = 0.3;
    double footprint_bytes = 64 * 1024;  ///< cache a thread refills after a migration [E]
  };
  static std::vector<sim::ParamSpec> param_specs();
  static std::unique_ptr<Workload> make(const sim::ParamValues& v);
  explicit Mutilate(const Params& p);

  std::string_view kind() const override { return "mutilate"; }
  std::uint32_t threads() const override { return p_.server_threads + p_.clients; }
  Step next(std::uint32_t thread, sim::RngStream& rng) override;
  std::string_view unit() const override { return "ops/s"; }
  std::uint32_t channels() const override { return p_.server_threads + p_.clients; }
  void on_message(std::uint32_t thread, const Message& m, sim::Time now, bool measuring) override;
  std::uint32_t process_of(std::uint32_t thread) const override { return thread < p_.server_threads ? 0 : 1; }
  std::vector<std::pair<std::string, double>> figures() const override;
  std::string_view study_metric() const override { return "ops_per_sec"; }
  double cache_footprint_bytes() const override { return p_.footprint_bytes; }

  /// The CPU of one request alone (client + server, copies included): with one client thread
  /// and nothing else running, QPS cannot exceed 1e9 / round_trip_ns().
  double round_trip_ns() const { return client_step_ns_ + server_step_ns_; }
  const LatencyHistogram& latency() const { return latency_; }

 private:
  bool is_server(std::uint32_t t) const { return t < p_.server_threads; }
  Params p_;
  double client_step_ns_, server_step_ns_;
  std::vector<std::uint8_t> sending_;   ///< per thread: its next step is the send/serve step
  std::vector<std::uint32_t> serving_;  ///< per worker: the client whose request it holds
  std::vector<sim::Time> sent_at_;      ///< per client: when its outstanding request was sent
  LatencyHistogram latency_;
};

}  // namespace vcpusim::guest
