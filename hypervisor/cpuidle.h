// SPDX-License-Identifier: MIT
// This file defines the host's CPU idle states and the governor that picks one, a mechanism of
// the host (Linux cpuidle under KVM, Xen's cpu_idle under credit2), not of a policy: a pCPU
// with nothing to run enters an idle state, and the entity that next runs on it first waits
// for the state's exit latency. A deep state saves power and costs a wake-up up to hundreds of
// microseconds; a request-response workload whose threads sleep between requests pays it on
// every request, a busy host never.
//
// States: the tables of drivers/idle/intel_idle.c (Linux 3.10-6.x; [S] each figure below),
// name, exit_latency and target_residency in us:
//   nehalem  (NHM, NHM-EP: Xeon X5570; NHM-EX: Xeon X7560)  C1 3/6, C1E 10/20, C3 20/80, C6 200/800
//   skx      (Skylake-SP: Xeon Gold)                          C1 2/2, C1E 10/20, C6 133/600
//   skl      (Skylake client: a 4-core desktop)               C1 2/2, C1E 10/20, C3 70/100,
//            C6 85/200, C7s 124/800, C8 200/800, C9 480/5000, C10 890/5000
// or a list given in the scenario. Below the shallowest state's target residency x86's cpuidle
// polls (state 0, POLL: no exit latency), as cpuidle_poll_state_init() provides.
//
// Governor: menu (drivers/cpuidle/governors/menu.c, the default with a periodic tick), its
// repeating-pattern detector get_typical_interval() as in 4.x-5.x: the last INTERVALS = 8 idle
// durations of the pCPU; their average is the prediction when the variance is at most 400 us^2
// or the average exceeds 6 standard deviations (with at least 3/4 of the samples kept);
// otherwise the largest sample is dropped and the test repeated, down to 3/4 of the samples;
// with no pattern there is no prediction. menu_select() then takes the deepest state whose
// target residency is at most the prediction (and whose exit latency is at most the PM QoS
// limit; none is set here, as on a default host).
// MODEL: menu's other input, the time to the pCPU's next timer event (scaled by its correction
// factor), is not known here: the model has no host timers but the scheduler's, and NO_HZ idle
// stops the tick on an idle pCPU. So with no repeating pattern the prediction is unbounded and
// the deepest state is taken, as menu does when the next timer is far off. The time a pCPU
// spends idle is what the pattern sees (menu_update: the measured residency).
// MODEL: the exit latency delays the incoming entity like the switch-in (ExecParams::
// context_switch, which it adds to), charged to its run time; a sibling thread's idle state does
// not change its co-runner's speed.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/sim_time.h"

namespace vcpusim::hv {

struct IdleState {
  std::string name;
  sim::Duration exit_latency = 0;      ///< time from the wake-up to the pCPU running
  sim::Duration target_residency = 0;  ///< the shortest idle that the state is worth entering for
};

struct CpuidleParams {
  /// The states, shallowest first (exit latency and target residency not decreasing); empty:
  /// no idle states (the default: a pCPU wakes at once, as with idle=poll).
  std::vector<IdleState> states;

  bool enabled() const { return !states.empty(); }
};

/// The named table of intel_idle.c (above), or nullopt for an unknown name.
std::optional<std::vector<IdleState>> idle_state_table(std::string_view name);
/// The names idle_state_table() knows, for error messages.
std::vector<std::string_view> idle_state_tables();

/// menu's per-CPU state: the last 8 idle durations and the state each wake-up left.
class MenuGovernor {
 public:
  static constexpr std::size_t kIntervals = 8;  ///< INTERVALS (menu.c: INTERVAL_SHIFT 3)

  /// get_typical_interval(): the repeating idle duration, or nullopt when there is none.
  std::optional<sim::Duration> typical_interval() const;
  /// menu_select(): the index of the state to enter for the next idle, -1 for polling.
  int select(const std::vector<IdleState>& states) const;
  /// menu_update(): a finished idle period of `idle` ns.
  void record(sim::Duration idle);

 private:
  std::array<sim::Duration, kIntervals> intervals_{};  ///< 0: not yet measured (menu starts at 0)
  std::size_t next_ = 0;
};

/// Host-wide, over the measured interval.
struct CpuidleStats {
  std::uint64_t exits = 0;     ///< wake-ups of an idle pCPU that left an idle state (not polling)
  sim::Duration exit_ns = 0;   ///< their exit latencies, summed
};

}  // namespace vcpusim::hv
