// SPDX-License-Identifier: MIT
// Pins the summary statistics against values worked by hand (mmtests' definitions).
#include <gtest/gtest.h>

#include <cmath>

#include "app/statistics.h"

namespace vcpusim::app {

// Worked by hand for xs = {1, 2, 4}:
//   Amean = 7/3 = 2.333333
//   Hmean = 3 / (1/1 + 1/2 + 1/4) = 3 / 1.75 = 1.714286
//   Gmean = (1*2*4)^(1/3) = 2
//   Stddev = sqrt(((1-7/3)^2 + (2-7/3)^2 + (4-7/3)^2) / 2) = sqrt((16/9 + 1/9 + 25/9) / 2)
//          = sqrt(42/18) = 1.527525
//   CoeffVar = 100 * 1.527525 / 2.333333 = 65.4654 %
//   CI95 = Amean -/+ t(0.975, 2) * Stddev / sqrt(3) = 2.333333 -/+ 4.3027 * 0.881917
//        = 2.333333 -/+ 3.794626
TEST(Statistics, WorkedExample) {
  const Summary s = summarize({1, 2, 4});
  EXPECT_EQ(s.n, 3u);
  EXPECT_NEAR(s.amean, 7.0 / 3.0, 1e-12);
  EXPECT_NEAR(s.hmean, 3.0 / 1.75, 1e-12);
  EXPECT_NEAR(s.gmean, 2.0, 1e-12);
  EXPECT_NEAR(s.stddev, std::sqrt(42.0 / 18.0), 1e-12);
  EXPECT_NEAR(s.coeffvar, 65.4654, 1e-4);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 4.0);
  EXPECT_NEAR(s.ci95_lo, 7.0 / 3.0 - 3.794626, 1e-5);
  EXPECT_NEAR(s.ci95_hi, 7.0 / 3.0 + 3.794626, 1e-5);
}

TEST(Statistics, SingleSampleHasNoSpread) {
  const Summary s = summarize({5});
  EXPECT_DOUBLE_EQ(s.amean, 5);
  EXPECT_DOUBLE_EQ(s.hmean, 5);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_DOUBLE_EQ(s.ci95_lo, 5);
}

TEST(Statistics, HarmonicMeanNeedsPositiveValues) {
  const Summary s = summarize({0, 2});
  EXPECT_DOUBLE_EQ(s.hmean, 0);
  EXPECT_DOUBLE_EQ(s.amean, 1);
}

TEST(Statistics, TQuantileMatchesTables) {
  EXPECT_NEAR(t_quantile_975(1), 12.7062, 1e-4);
  EXPECT_NEAR(t_quantile_975(9), 2.2622, 1e-4);
  EXPECT_NEAR(t_quantile_975(30), 2.0423, 2e-4);   // table value
  EXPECT_NEAR(t_quantile_975(120), 1.9799, 2e-4);  // table value
}

}  // namespace vcpusim::app
