// SPDX-License-Identifier: MIT
// Pins determinism: the same scenario and seed give identical results (every metric, and the
// JSON apart from its `timing` key); different seeds give different results; a repetition's
// result does not depend on how many repetitions run.
#include <gtest/gtest.h>

#include "app/report.h"
#include "app/runner.h"
#include "app/scenario.h"
#include "short_run.h"

namespace vcpusim::app {
namespace {

ScenarioSpec short_default() { return test::shortened(load_default_scenario(), sim::seconds(2), sim::ms(200)); }

}  // namespace

TEST(Determinism, SameSeedGivesIdenticalMetrics) {
  const ScenarioSpec s = short_default();
  const RunResult a = run_scenario(s, 7), b = run_scenario(s, 7);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.metrics(), b.metrics());  // exact: doubles compared bit for bit via operator==
}

TEST(Determinism, JsonIsIdenticalApartFromTiming) {
  ScenarioSpec s = short_default();
  s.repetitions = 2;
  std::vector<RunResult> a{run_scenario(s, repetition_seed(s.seed, 0)), run_scenario(s, repetition_seed(s.seed, 1))};
  std::vector<RunResult> b{run_scenario(s, repetition_seed(s.seed, 0)), run_scenario(s, repetition_seed(s.seed, 1))};
  auto ja = to_json(s, a), jb = to_json(s, b);
  ASSERT_TRUE(ja.contains("timing"));
  ja.erase("timing");
  jb.erase("timing");
  EXPECT_EQ(ja.dump(), jb.dump());
}

TEST(Determinism, DifferentSeedsDiffer) {
  const ScenarioSpec s = short_default();
  const RunResult a = run_scenario(s, 1), b = run_scenario(s, 2);
  // The default scenario's web VM draws exponential compute and sleep times.
  EXPECT_NE(a.metrics().at("vm.web.throughput"), b.metrics().at("vm.web.throughput"));
}

TEST(Determinism, RepetitionSeedsAreDerivedAndDistinct) {
  EXPECT_NE(repetition_seed(1, 0), repetition_seed(1, 1));
  EXPECT_NE(repetition_seed(1, 0), repetition_seed(2, 0));
  EXPECT_EQ(repetition_seed(5, 3), repetition_seed(5, 3));
}

}  // namespace vcpusim::app
