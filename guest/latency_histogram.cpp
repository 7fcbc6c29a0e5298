// SPDX-License-Identifier: MIT
#include "guest/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace vcpusim::guest {

namespace {
// 100 ns x 1.02^1400 = 1.1e14 ns: past any simulated run.
constexpr std::size_t kBuckets = 1400;
}  // namespace

LatencyHistogram::LatencyHistogram() : buckets_(kBuckets, 0) {}

void LatencyHistogram::add(sim::Duration d) {
  const double ns = static_cast<double>(d);
  std::size_t i = 0;
  if (ns > kMinNs) i = std::min(kBuckets - 1, static_cast<std::size_t>(std::log(ns / kMinNs) / std::log(kGrowth)));
  ++buckets_[i];
  ++count_;
  sum_ns_ += ns;
}

double LatencyHistogram::quantile_ns(double q) const {
  if (count_ == 0) return 0.0;
  const auto want = static_cast<std::uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(count_)));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= std::max<std::uint64_t>(1, want)) return kMinNs * std::pow(kGrowth, static_cast<double>(i) + 0.5);
  }
  return kMinNs * std::pow(kGrowth, static_cast<double>(kBuckets));
}

}  // namespace vcpusim::guest
