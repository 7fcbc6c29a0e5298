// SPDX-License-Identifier: MIT
// This file defines simulated time: an integer count of nanoseconds, because floating-point
// clocks make runs depend on summation order and force epsilons into every test (SimGrid's
// lesson). Durations and instants share one type; names carry the unit where it matters.
#pragma once

#include <cstdint>
#include <limits>

namespace vcpusim::sim {

using Time = std::int64_t;      ///< nanoseconds since the start of the run
using Duration = std::int64_t;  ///< nanoseconds

inline constexpr Time kNever = std::numeric_limits<Time>::max();

constexpr Duration ns(std::int64_t v) { return v; }
constexpr Duration us(std::int64_t v) { return v * 1'000; }
constexpr Duration ms(std::int64_t v) { return v * 1'000'000; }
constexpr Duration seconds(std::int64_t v) { return v * 1'000'000'000; }

// Divided, not multiplied by 1e-9 (not exact in binary): 60 s printed as 60.00000000000001.
constexpr double to_seconds(Duration d) { return static_cast<double>(d) / 1e9; }

}  // namespace vcpusim::sim
