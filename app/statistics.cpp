// SPDX-License-Identifier: MIT
#include "app/statistics.h"

#include <algorithm>
#include <functional>
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

double best_mean(std::vector<double> xs, double percent, bool higher_is_better) {
  if (xs.empty()) return 0;
  if (higher_is_better) std::sort(xs.begin(), xs.end(), std::greater<>());
  else std::sort(xs.begin(), xs.end());
  const std::size_t k = std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(xs.size()) * percent / 100.0));
  xs.resize(k);
  const Summary s = summarize(xs);
  return higher_is_better ? s.hmean : s.amean;
}

double harmonic_stddev(const std::vector<double>& xs) {
  const Summary s = summarize(xs);
  if (s.hmean <= 0 || xs.empty()) return 0;
  double acc = 0;
  for (double x : xs) acc += (1.0 / x - 1.0 / s.hmean) * (1.0 / x - 1.0 / s.hmean);
  return s.hmean * s.hmean * std::sqrt(acc / static_cast<double>(xs.size()));
}

namespace {

// Continued fraction for the incomplete beta (modified Lentz), as in Numerical Recipes 6.4.
double beta_cf(double a, double b, double x) {
  constexpr int kMaxIter = 300;
  constexpr double kEps = 1e-15, kTiny = 1e-300;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= kMaxIter; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) break;
  }
  return h;
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double lbt = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double bt = std::exp(lbt);
  if (x < (a + 1) / (a + b + 2)) return bt * beta_cf(a, b, x) / a;
  return 1 - bt * beta_cf(b, a, 1 - x) / b;
}

double student_t_two_sided_p(double t, double df) {
  if (!(df > 0)) return std::numeric_limits<double>::quiet_NaN();
  t = std::fabs(t);
  return incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

}  // namespace vcpusim::app
