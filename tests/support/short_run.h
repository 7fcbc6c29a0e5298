// SPDX-License-Identifier: MIT
// Tests run scenarios for short simulated times: `shortened` cuts one to `duration` with
// `warmup` of warm-up (the host's copy of the warm-up too, which the loader keeps in step).
#pragma once

#include "app/scenario.h"
#include "sim/sim_time.h"

namespace vcpusim::test {

inline app::ScenarioSpec shortened(app::ScenarioSpec s, sim::Duration duration, sim::Duration warmup) {
  s.duration = duration;
  s.warmup = warmup;
  s.host.warmup = warmup;
  return s;
}

}  // namespace vcpusim::test
