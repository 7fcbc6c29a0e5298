// SPDX-License-Identifier: MIT
// This file defines the summary statistics of repeated runs, with mmtests' definitions
// (../shared/reference/mmtests-format.md section 1): arithmetic, harmonic and geometric means,
// the sample standard deviation (n - 1), the coefficient of variation in percent, extremes, and
// a 95% confidence interval of the mean from Student's t.
#pragma once

#include <vector>

namespace vcpusim::app {

struct Summary {
  std::size_t n = 0;
  double amean = 0, hmean = 0, gmean = 0, stddev = 0, coeffvar = 0, min = 0, max = 0;
  double ci95_lo = 0, ci95_hi = 0;  ///< amean -/+ t(0.975, n-1) * stddev / sqrt(n)
};

Summary summarize(const std::vector<double>& xs);

/// mmtests' "best P%" mean: the Hmean (higher-is-better) or Amean of the k = max(1, n*P/100)
/// best samples.
double best_mean(std::vector<double> xs, double percent, bool higher_is_better);
/// mmtests' HStddev (current code): H^2 * sqrt(sum((1/x - 1/H)^2) / n), the delta-method spread
/// of a harmonic mean.
double harmonic_stddev(const std::vector<double>& xs);
/// Two-sided p-value of Student's t with df degrees of freedom: P(|T| >= t).
double student_t_two_sided_p(double t, double df);
/// Regularized incomplete beta I_x(a, b).
double incomplete_beta(double a, double b, double x);
/// Two-sided Student t quantile t(1 - alpha/2, df) for alpha = 0.05.
double t_quantile_975(double df);

}  // namespace vcpusim::app
