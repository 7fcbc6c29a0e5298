// SPDX-License-Identifier: MIT
// This file defines LatencyHistogram, the fixed-size log-bucketed histogram request/reply
// workloads record their request latencies in, so that percentiles cost no allocation per
// request: buckets grow by 2% from 100 ns to about 100 s, so a percentile is exact to 1%.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/sim_time.h"

namespace vcpusim::guest {

class LatencyHistogram {
 public:
  LatencyHistogram();
  void add(sim::Duration d);
  std::uint64_t count() const { return count_; }
  double mean_ns() const { return count_ ? sum_ns_ / static_cast<double>(count_) : 0.0; }
  /// The latency below which a fraction `q` (0..1) of the samples lie (bucket midpoint); 0 if empty.
  double quantile_ns(double q) const;

 private:
  static constexpr double kMinNs = 100.0, kGrowth = 1.02;
  std::vector<std::uint64_t> buckets_;  ///< sized once; bucket i holds [kMinNs*g^i, kMinNs*g^(i+1))
  std::uint64_t count_ = 0;
  double sum_ns_ = 0;
};

}  // namespace vcpusim::guest
