// SPDX-License-Identifier: MIT
// This file defines TraceSink, the observer of what the host did: which entity ran on which
// pCPU when, and the instants that explain it (wake-ups, migrations, halts, preemptions). The
// dispatcher calls it when one is attached (Host::set_trace); with none attached the cost is a
// null check. Observers never change the run: the same scenario and seed give the same results
// traced or not.
#pragma once

#include <string_view>

#include "hypervisor/ids.h"
#include "sim/sim_time.h"

namespace vcpusim::hv {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  /// Entity v occupies pCPU p from t (the switch cost included).
  virtual void run_begin(PcpuId p, VcpuId v, sim::Time t) = 0;
  /// ... until t.
  virtual void run_end(PcpuId p, VcpuId v, sim::Time t) = 0;
  /// A moment worth a mark: "wake", "migrate", "halt", "preempt", and later mechanisms' own
  /// ("forced-idle", "lhp", "pv-halt", "pv-kick", "kick-yield", "ipi-defer", "ple-exit",
  /// "idle-exit": v waits for p to leave an idle state).
  virtual void instant(std::string_view what, VcpuId v, PcpuId p, sim::Time t) = 0;
  /// The same mark with one detail worth keeping beside it (for "idle-exit", the name of the
  /// idle state left). A sink that keeps no details need not override it.
  virtual void instant(std::string_view what, VcpuId v, PcpuId p, sim::Time t, std::string_view detail) {
    (void)detail;
    instant(what, v, p, t);
  }
};

}  // namespace vcpusim::hv
