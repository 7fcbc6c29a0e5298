// SPDX-License-Identifier: MIT
// This file defines PerfettoTrace, the writer of `vcpusim trace`: what the scheduler did, as
// Chrome trace-event JSON that ui.perfetto.dev and chrome://tracing open. Tracks:
//  - one per hardware thread, grouped by node into processes and sorted by socket, core and
//    thread, holding a slice per vCPU run (named after its VM, so slices are coloured by VM);
//  - one per vCPU, grouped by VM, holding a slice per guest thread it runs;
//  - instant events on the pCPU tracks: wake, migrate, preempt, halt (and the later
//    mechanisms' marks: forced idle, lock-holder preemption, PV halts and kicks, PLE exits).
// Only the window [from, to] is kept; slices crossing its ends are clipped. Events are written
// sorted by track and time.
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>
#include <string>
#include <vector>

#include "app/runner.h"
#include "guest/guest_trace.h"
#include "hypervisor/trace_sink.h"

namespace vcpusim::app {

class PerfettoTrace final : public RunObserver, public hv::TraceSink, public guest::GuestTraceSink {
 public:
  PerfettoTrace(sim::Time from, sim::Time to) : from_(from), to_(to) {}

  // RunObserver
  void attach(hv::Host& host, const std::vector<guest::GuestOs*>& guests) override;
  void finish(hv::Host& host) override;
  // hv::TraceSink
  void run_begin(hv::PcpuId p, hv::VcpuId v, sim::Time t) override;
  void run_end(hv::PcpuId p, hv::VcpuId v, sim::Time t) override;
  void instant(std::string_view what, hv::VcpuId v, hv::PcpuId p, sim::Time t) override;
  /// The detail becomes the instant's "state" argument (the only detail sent today: the idle
  /// state an "idle-exit" left).
  void instant(std::string_view what, hv::VcpuId v, hv::PcpuId p, sim::Time t, std::string_view detail) override;
  // guest::GuestTraceSink
  void thread_on(hv::VcpuId v, std::uint32_t thread, sim::Time t) override;
  void thread_off(hv::VcpuId v, std::uint32_t thread, sim::Time t) override;

  /// The JSON document ({"traceEvents": [...], ...}).
  void write(std::ostream& os) const;
  std::size_t events() const { return events_.size(); }
  static constexpr std::size_t kMaxEvents = 5'000'000;

 private:
  // One event in 40 bytes: names and arguments are written from the tables below at write(),
  // not kept as text per event (three strings an event made a 5 M event window 1.2 GB).
  enum class Kind : std::uint8_t { kRun, kInstant, kThread };
  struct Ev {
    sim::Time ts, dur;     // dur < 0: an instant
    std::int32_t pid, tid;
    std::uint32_t who;     // kRun, kInstant: the entity; kThread: the guest thread
    std::uint16_t what;    // kInstant: index into what_
    std::uint16_t detail;  // kInstant: 1 + index into what_ of the "state" argument, 0 none
    Kind kind;
  };
  /// Appends one event, clipped to the window; past kMaxEvents, a ConfigError on --window (a
  /// 100000 s window grew to 2.5 GB and ended in std::bad_alloc; no viewer opens a trace of
  /// millions of events anyway).
  void push(Ev&& ev);
  std::uint16_t intern(std::string_view s);
  int pcpu_pid(hv::PcpuId p) const;
  int vcpu_pid(hv::VcpuId v) const;
  std::string vcpu_label(hv::VcpuId v) const;

  sim::Time from_, to_;
  const hv::Host* host_ = nullptr;
  std::vector<sim::Time> pcpu_open_;    // run_begin time per pCPU (kNever: none)
  std::vector<hv::VcpuId> pcpu_who_;
  std::vector<sim::Time> vcpu_open_;    // thread_on time per vCPU
  std::vector<std::uint32_t> vcpu_thread_;
  std::vector<Ev> events_;
  std::vector<std::string> meta_;       // process/thread name records, already JSON
  // What write() names events with, taken at attach() (the host is gone by then).
  std::vector<std::string> domain_name_;   // quoted
  std::vector<std::uint32_t> vcpu_domain_, vcpu_index_;
  std::vector<std::string> vcpu_label_;    // quoted
  std::vector<std::string> what_;          // instants' names and details, quoted
};

}  // namespace vcpusim::app
