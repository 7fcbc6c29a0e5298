// SPDX-License-Identifier: MIT
#include "app/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Core>

namespace vcpusim::app {

double t_quantile_975(double df) {
  // Exact table for small df (two-sided 95%), then the Cornish-Fisher expansion, which is within
  // 1e-4 of the true quantile from df = 30 on.
  static const double table[] = {0, 12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622,
                                 2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930,
                                 2.0860, 2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452};
  if (df < 1) return std::numeric_limits<double>::quiet_NaN();
  if (df < 30 && df == std::floor(df)) return table[static_cast<int>(df)];
  const double z = 1.959963984540054, z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
  return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df * df) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df * df * df);
}

Summary summarize(const std::vector<double>& xs) {
  Summary s;
  s.n = xs.size();
  if (xs.empty()) return s;
  const Eigen::Map<const Eigen::ArrayXd> a(xs.data(), static_cast<Eigen::Index>(xs.size()));
  const double n = static_cast<double>(s.n);
  s.amean = a.mean();
  s.min = a.minCoeff();
  s.max = a.maxCoeff();
  // Harmonic and geometric means are defined for positive values only (mmtests' Hmean is for
  // rates); with a zero or negative value they are reported as 0.
  if (s.min > 0) {
    s.hmean = n / a.inverse().sum();
    s.gmean = std::exp(a.log().mean());
  }
  if (s.n > 1) {
    s.stddev = std::sqrt((a - s.amean).square().sum() / (n - 1));
    const double half = t_quantile_975(n - 1) * s.stddev / std::sqrt(n);
    s.ci95_lo = s.amean - half;
    s.ci95_hi = s.amean + half;
  } else {
    s.ci95_lo = s.ci95_hi = s.amean;
  }
  s.coeffvar = s.amean != 0 ? 100.0 * s.stddev / s.amean : 0.0;
  return s;
}

}  // namespace vcpusim::app
