// SPDX-License-Identifier: MIT
#include "sim/rng.h"

#include <cmath>
#include <numbers>

namespace vcpusim::sim {

double RngStream::exponential(double mean) { return -mean * std::log1p(-uniform()); }

double RngStream::normal(double mean, double stddev) {
  double u1 = 1.0 - uniform();  // (0, 1]
  double u2 = uniform();
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace vcpusim::sim
