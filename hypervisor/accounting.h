// SPDX-License-Identifier: MIT
// This file defines RunstateClock, the per-entity record of time spent running, runnable (steal:
// ready but not on a pCPU) and blocked, as Xen's vcpu_runstate_info. Time is charged on every
// state change, so the three add up to the elapsed time exactly (a checked invariant).
#pragma once

#include <array>

#include "sim/sim_time.h"

namespace vcpusim::hv {

struct RunstateClock {
  std::array<sim::Duration, 3> in_state{};  ///< indexed by Runstate
  sim::Time since = 0;                      ///< when the current state began
  std::uint8_t state = 2;                   ///< current Runstate (blocked at creation)

  void enter(std::uint8_t next, sim::Time now) {
    in_state[state] += now - since;
    state = next;
    since = now;
  }
  /// The time in state s, counting the current stretch up to now.
  sim::Duration total(std::uint8_t s, sim::Time now) const {
    return in_state[s] + (s == state ? now - since : 0);
  }
};

}  // namespace vcpusim::hv
