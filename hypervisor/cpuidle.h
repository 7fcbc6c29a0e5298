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
// or a list given in the scenario.
//
// Governor: menu (drivers/cpuidle/governors/menu.c of 5.4, the default with a periodic tick):
//  - next_timer: the time to the pCPU's next timer event, tick_nohz_get_sleep_length(). MODEL:
//    the model has no host timers but the scheduler's, and NO_HZ idle stops the tick on an idle
//    pCPU, so next_timer is taken as MAX_INTERESTING (50 ms) every time: one bucket of the
//    correction factor is used, and the prediction it gives is the decaying mean of the measured
//    idle periods (below).
//  - predicted = next_timer x correction_factor / (RESOLUTION x DECAY) (RESOLUTION 1024, DECAY
//    8, the factor starting at unity), then min(predicted, get_typical_interval()): the average
//    of the last INTERVALS = 8 idle periods when they repeat (variance <= 400 us^2, or average >
//    6 standard deviations with at least 3/4 of the samples), the largest dropped and the test
//    repeated down to 3/4 of the samples, none otherwise.
//  - latency limit: predicted / performance_multiplier (1 + 10 x iowaiters; MODEL: no iowait
//    is tracked per pCPU, so 1), and no PM QoS limit, as on a default host.
//  - the choice: the deepest state whose target residency is at most the prediction and whose
//    exit latency is at most the limit; when not even the shallowest state's residency is
//    reached, that physical state rather than polling, "unless a timer is going to trigger soon
//    enough", which with next_timer 50 ms away it never is. So x86's POLL state (state 0) is not
//    chosen here.
//  - MODEL: with a prediction below the tick period and the tick kept, 5.4 also steps down to a
//    state whose residency ends before the next tick (delta_tick); the model has no tick phase
//    on an idle pCPU, so this step is left out.
//  - menu_update(): the measured residency includes the exit latency, which is deducted (halved
//    instead when it is not more than twice the exit latency), capped at next_timer; it feeds the
//    correction factor (factor -= factor / DECAY; factor += RESOLUTION x measured / next_timer)
//    and the ring of 8 intervals.
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

/// menu's per-CPU state (struct menu_device): the correction factor and the last 8 idle periods.
class MenuGovernor {
 public:
  static constexpr std::size_t kIntervals = 8;              ///< INTERVALS (INTERVAL_SHIFT 3)
  static constexpr std::uint64_t kResolution = 1024;         ///< RESOLUTION
  static constexpr std::uint64_t kDecay = 8;                 ///< DECAY
  static constexpr sim::Duration kNextTimer = sim::ms(50);   ///< MAX_INTERESTING (MODEL above)

  /// get_typical_interval(): the repeating idle duration, or nullopt when there is none.
  std::optional<sim::Duration> typical_interval() const;
  /// The expected idle duration: the corrected next_timer, or the typical interval if shorter.
  sim::Duration predicted() const;
  /// menu_select(): the index of the state to enter for the next idle (states not empty).
  std::size_t select(const std::vector<IdleState>& states) const;
  /// menu_update(): an idle period of `idle` ns in a state whose exit latency is `exit`.
  void record(sim::Duration idle, sim::Duration exit);

 private:
  std::uint64_t correction_ = kResolution * kDecay;  ///< unity, as menu_enable_device() sets it
  std::array<std::uint64_t, kIntervals> intervals_{};  ///< us; 0: not yet measured (zeroed at start)
  std::size_t next_ = 0;
};

/// Host-wide, over the measured interval.
struct CpuidleStats {
  std::uint64_t exits = 0;     ///< wake-ups of an idle pCPU, each leaving an idle state
  sim::Duration exit_ns = 0;   ///< their exit latencies, summed
};

}  // namespace vcpusim::hv
