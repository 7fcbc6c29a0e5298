// SPDX-License-Identifier: MIT
// This file defines the `cassandra` workload: an Apache Cassandra node under a closed-loop
// driver (cassandra-stress or YCSB on another machine), as staged thread pools with blocking
// hand-offs. Numbers cite ../shared/reference/spinlocks-and-workloads.md section 3
// "Cassandra" ("note"); [S] values are Cassandra's `cassandra.yaml` defaults as the note gives
// them, [E] are estimates. docs/workloads/cassandra.md has the reasoning and the omissions.
//
// Threads (one Java process):
//  - `threads` request threads (native-transport requests; note [S]: at most 128): each owns
//    one driver connection with one request outstanding. Loop: wait for the next request
//    (net_rtt: the driver's round trip, a block), a coordinator hop (parse, route), hand the
//    operation to the read or the write stage (read_ratio) and sleep until the stage replies,
//    then a second hop (serialise and send the response), which counts one op;
//  - `concurrent_reads` read-stage and `concurrent_writes` write-stage threads (note [S]: 32
//    each), each stage one shared queue (a thread-pool work queue): take an operation, one hop
//    of work, reads blocking on SSTable I/O with probability read_io_frac, reply.
// Every hop is exponential with mean hop_time (note: "20-200 us per stage hop"; the hand-offs
// are futex sleeps and wake-ups, the blocked-waiter wake-up problem of note section 2).
// Profile `mixed` with a memory share (note: heap and GC; SMT 0.65-0.75, the mixed/mixed 0.65).
#pragma once

#include "guest/workload.h"

namespace vcpusim::guest {

class Cassandra final : public Workload {
 public:
  struct Params {
    std::uint32_t requests = 16;   ///< request threads = driver connections
    std::uint32_t readers = 32;    ///< concurrent_reads
    std::uint32_t writers = 32;    ///< concurrent_writes
    double read_ratio = 0.5;
    double hop_ns = 100e3;
    double net_rtt_ns = 100e3;
    double read_io_frac = 0.3;
    double io_ns = 200e3;
    double mem_intensity = 0.4;
  };
  static std::vector<sim::ParamSpec> param_specs();
  static std::unique_ptr<Workload> make(const sim::ParamValues& v);
  explicit Cassandra(const Params& p);

  std::string_view kind() const override { return "cassandra"; }
  std::uint32_t threads() const override { return p_.requests + p_.readers + p_.writers; }
  Step next(std::uint32_t thread, sim::RngStream& rng) override;
  std::string_view unit() const override { return "ops/s"; }
  std::uint32_t channels() const override { return 2 + p_.requests; }
  void on_message(std::uint32_t thread, const Message& m, sim::Time now, bool measuring) override;
  std::string_view study_metric() const override { return "throughput"; }

 private:
  static constexpr std::int32_t kReadStage = 0, kWriteStage = 1;
  // Where each thread is in its loop.
  enum class Phase : std::uint8_t { kWaitRequest, kCoordinate, kWaitStage, kRespond,  // request threads
                                    kTake, kWork, kIo, kReply };                        // stage threads
  Step compute(double mean_ns, sim::RngStream& rng) const;
  Params p_;
  std::vector<Phase> phase_;
  std::vector<std::uint32_t> job_;  ///< stage thread: the request thread it serves
};

}  // namespace vcpusim::guest
