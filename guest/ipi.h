// SPDX-License-Identifier: MIT
// This file defines synchronous cross-vCPU calls (IPIs) inside a guest: a TLB shootdown or
// smp_call_function_many(), where the sender interrupts every target vCPU and spins until each
// has run the handler. It exists because a preempted or halted target stalls the sender exactly
// as a preempted lock holder stalls a waiter (../shared/reference/spinlocks-and-workloads.md
// section 2, "IPI/TLB-shootdown waiter": "spins (at CPL0, so PLE applies) for acknowledgements
// from preempted vCPUs"; ebizzy's munmap is the typical trigger).
//
// CallFunctionIpis is only the bookkeeping: which sender waits for which target, and when a
// target's acknowledgement is due. GuestOs drives the vCPUs (guest_os.h, "IPIs"):
//  - the sender's thread spins (one Profile::kSpin segment, as a lock waiter does) until its
//    last target acknowledges; its vCPU's CPU time across the wait is the IPI spin burned;
//  - a target on a pCPU acknowledges `latency` after the send (or after it is next put on a
//    pCPU, if it was preempted or halted then): the delivery and the handler;
//  - a halted target is woken by the IPI (a host kick) unless it polls an event channel for a
//    PV lock kick (Xen flavour), which only that kick ends; it acknowledges once it runs;
//  - a call that finds any target off its pCPU, and waits for it, counts one "IPI stall".
// MODEL: the handler's CPU time on the target is not charged to the target's own work (a few
// hundred ns against its 3 us of delivery latency); the sends are parallel, not one ICR write
// after another. A KVM PV TLB flush (GuestParams::pv_tlb_flush, 4.16+ guests) sends nothing to a
// target the host preempted: it flushes at its next entry, and the sender does not wait for it.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/sim_time.h"

namespace vcpusim::guest {

/// Per VM, over the measured interval.
struct IpiStats {
  std::uint64_t sent = 0;    ///< calls made (one per shootdown, whatever the number of targets)
  std::uint64_t stalls = 0;  ///< calls that found a target vCPU preempted or halted, and waited for it
  std::uint64_t deferred = 0;  ///< targets a PV TLB flush skipped (preempted: flushed at their next entry)
  double spin_ns = 0;        ///< CPU time senders burned waiting for acknowledgements
  double wait_ns = 0;        ///< wall time from the send to the last acknowledgement
  IpiStats& operator+=(const IpiStats& o);
};

class CallFunctionIpis {
 public:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  void init(std::uint32_t vcpus, std::uint32_t threads);
  /// Sender thread `sender` asks target vCPU `target` to run the handler; it is due once the
  /// target runs (arm()).
  void send(std::uint32_t sender, std::uint32_t target, sim::Duration latency);
  /// The target runs at `now`: every request to it not yet due becomes due at now + its latency.
  /// Returns the latest such instant, or sim::kNever if nothing was newly armed.
  sim::Time arm(std::uint32_t target, sim::Time now);
  /// Whether target has requests that are not due yet (it has not run since they were sent).
  bool owes(std::uint32_t target) const { return unarmed_[target] > 0; }
  /// Retires the requests to `target` due at or before now; appends to `finished` each sender
  /// whose last outstanding request this was.
  void acknowledge(std::uint32_t target, sim::Time now, std::vector<std::uint32_t>& finished);
  std::uint32_t outstanding(std::uint32_t sender) const { return outstanding_[sender]; }

 private:
  struct Request {
    std::uint32_t sender;
    sim::Duration latency;
    sim::Time due;  ///< sim::kNever until the target runs
  };
  std::vector<std::vector<Request>> pending_;  ///< per target vCPU
  std::vector<std::uint32_t> unarmed_;         ///< per target: requests with due == kNever
  std::vector<std::uint32_t> outstanding_;     ///< per sender thread
};

}  // namespace vcpusim::guest
