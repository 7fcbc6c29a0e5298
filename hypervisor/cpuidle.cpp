// SPDX-License-Identifier: MIT
// This file holds the idle-state tables of intel_idle.c and the menu governor's pattern
// detector and state choice (cpuidle.h); the Host glue is in dispatcher.cpp (switch_in).
#include "hypervisor/cpuidle.h"

#include <cstdint>
#include <limits>

namespace vcpusim::hv {

namespace {

IdleState st(const char* name, std::int64_t exit_us, std::int64_t residency_us) {
  return IdleState{name, sim::us(exit_us), sim::us(residency_us)};
}

}  // namespace

std::optional<std::vector<IdleState>> idle_state_table(std::string_view name) {
  // drivers/idle/intel_idle.c: nehalem_cstates, skx_cstates, skl_cstates (exit_latency,
  // target_residency in us).
  if (name == "nehalem") return std::vector<IdleState>{st("C1", 3, 6), st("C1E", 10, 20), st("C3", 20, 80), st("C6", 200, 800)};
  if (name == "skx") return std::vector<IdleState>{st("C1", 2, 2), st("C1E", 10, 20), st("C6", 133, 600)};
  if (name == "skl")
    return std::vector<IdleState>{st("C1", 2, 2),      st("C1E", 10, 20),    st("C3", 70, 100),  st("C6", 85, 200),
                                  st("C7s", 124, 800), st("C8", 200, 800),   st("C9", 480, 5000), st("C10", 890, 5000)};
  return std::nullopt;
}

std::vector<std::string_view> idle_state_tables() { return {"nehalem", "skx", "skl"}; }

// get_typical_interval() of menu.c (4.x-5.x), in whole microseconds as the kernel computes it:
//   thresh = INT_MAX; again: average the samples <= thresh (min, max, sum, divisor);
//   if (!max) return UINT_MAX;
//   variance of those samples;
//   if ((avg*avg > variance*36 && divisor*4 >= INTERVALS*3) || variance <= 400) return avg;
//   if (divisor*4 <= INTERVALS*3) return UINT_MAX;
//   thresh = max - 1; goto again;
std::optional<sim::Duration> MenuGovernor::typical_interval() const {
  std::uint64_t thresh = std::numeric_limits<std::uint64_t>::max();
  for (;;) {
    std::uint64_t sum = 0, max = 0, divisor = 0;
    for (sim::Duration d : intervals_) {
      const auto v = static_cast<std::uint64_t>(d / 1000);
      if (v <= thresh) {
        sum += v;
        ++divisor;
        if (v > max) max = v;
      }
    }
    if (max == 0) return std::nullopt;
    const std::uint64_t avg = sum / divisor;
    std::uint64_t variance = 0;
    for (sim::Duration d : intervals_) {
      const auto v = static_cast<std::int64_t>(d / 1000);
      if (static_cast<std::uint64_t>(v) <= thresh) {
        const std::int64_t diff = v - static_cast<std::int64_t>(avg);
        variance += static_cast<std::uint64_t>(diff * diff);
      }
    }
    variance /= divisor;
    if (variance <= std::numeric_limits<std::uint64_t>::max() / 36 &&
        ((avg * avg > variance * 36 && divisor * 4 >= kIntervals * 3) || variance <= 400))
      return sim::us(static_cast<std::int64_t>(avg));
    if (divisor * 4 <= kIntervals * 3) return std::nullopt;
    thresh = max - 1;
  }
}

// menu_select(): the deepest state whose target residency the predicted idle reaches; none
// (poll) when even the shallowest one's is not reached. No PM QoS latency limit is set.
int MenuGovernor::select(const std::vector<IdleState>& states) const {
  const std::optional<sim::Duration> predicted = typical_interval();
  int chosen = -1;
  for (std::size_t i = 0; i < states.size(); ++i)
    if (!predicted || states[i].target_residency <= *predicted) chosen = static_cast<int>(i);
  return chosen;
}

// menu_update(): "data->intervals[data->interval_ptr++] = measured_us" (a ring of 8).
void MenuGovernor::record(sim::Duration idle) {
  intervals_[next_] = idle;
  next_ = (next_ + 1) % kIntervals;
}

}  // namespace vcpusim::hv
