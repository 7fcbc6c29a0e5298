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

// get_typical_interval() of menu.c (5.4), in whole microseconds as the kernel computes it:
//   thresh = INT_MAX; again: average the samples <= thresh (max, sum, divisor);
//   variance of those samples;
//   if ((avg*avg > variance*36 && divisor*4 >= INTERVALS*3) || variance <= 400) return avg;
//   if (divisor*4 <= INTERVALS*3) return UINT_MAX;
//   thresh = max - 1; goto again;
// (5.4 returns UINT_MAX early when the smallest sample is not below the prediction: its result
// would lose to the prediction anyway, so predicted() gets the same minimum without it.)
std::optional<sim::Duration> MenuGovernor::typical_interval() const {
  std::uint64_t thresh = std::numeric_limits<std::uint64_t>::max();
  for (;;) {
    std::uint64_t sum = 0, max = 0, divisor = 0;
    for (std::uint64_t v : intervals_)
      if (v <= thresh) {
        sum += v;
        ++divisor;
        if (v > max) max = v;
      }
    const std::uint64_t avg = sum / divisor;
    std::uint64_t variance = 0;
    for (std::uint64_t v : intervals_)
      if (v <= thresh) {
        const std::int64_t diff = static_cast<std::int64_t>(v) - static_cast<std::int64_t>(avg);
        variance += static_cast<std::uint64_t>(diff * diff);
      }
    variance /= divisor;
    if (variance <= std::numeric_limits<std::uint64_t>::max() / 36 &&
        ((avg * avg > variance * 36 && divisor * 4 >= kIntervals * 3) || variance <= 400))
      return sim::us(static_cast<std::int64_t>(avg));
    if (divisor * 4 <= kIntervals * 3) return std::nullopt;
    thresh = max - 1;
  }
}

// menu_select(): "predicted_us = div_u64(next_timer_ns * correction_factor[bucket] +
// (RESOLUTION * DECAY * NSEC_PER_USEC) / 2, RESOLUTION * DECAY * NSEC_PER_USEC)", then the
// minimum with the typical interval.
sim::Duration MenuGovernor::predicted() const {
  const auto next_us = static_cast<std::uint64_t>(kNextTimer / 1000);
  const std::uint64_t corrected = (next_us * correction_ + kResolution * kDecay / 2) / (kResolution * kDecay);
  sim::Duration p = sim::us(static_cast<std::int64_t>(corrected));
  if (const auto typical = typical_interval(); typical && *typical < p) p = *typical;
  return p;
}

// menu_select()'s loop with the tick running and no iowait: latency_req = predicted; the first
// state is taken even when the prediction is shorter than its residency (a physical state, not
// polling, as no timer is due soon); each deeper one while its residency and exit latency fit.
std::size_t MenuGovernor::select(const std::vector<IdleState>& states) const {
  const sim::Duration p = predicted();
  std::size_t idx = 0;
  for (std::size_t i = 1; i < states.size(); ++i) {
    if (states[i].target_residency > p || states[i].exit_latency > p) break;
    idx = i;
  }
  return idx;
}

// menu_update(): the residency the kernel measures runs from entry to after the exit, so it is
// `idle + exit`; "if (measured_ns > 2 * target->exit_latency_ns) measured_ns -= exit_latency_ns;
// else measured_ns /= 2;" then capped at next_timer, and "new_factor -= new_factor / DECAY;
// new_factor += RESOLUTION * measured_ns / next_timer_ns" (a measured 50 ms or more counts as a
// perfect prediction: + RESOLUTION); "intervals[interval_ptr++] = ktime_to_us(measured_ns)".
void MenuGovernor::record(sim::Duration idle, sim::Duration exit) {
  sim::Duration measured = idle + exit;
  if (measured > 2 * exit) measured -= exit;
  else measured /= 2;
  if (measured > kNextTimer) measured = kNextTimer;
  correction_ -= correction_ / kDecay;
  if (measured < kNextTimer)
    correction_ += kResolution * static_cast<std::uint64_t>(measured) / static_cast<std::uint64_t>(kNextTimer);
  else
    correction_ += kResolution;
  intervals_[next_] = static_cast<std::uint64_t>(measured / 1000);
  next_ = (next_ + 1) % kIntervals;
}

}  // namespace vcpusim::hv
