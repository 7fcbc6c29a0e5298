// SPDX-License-Identifier: MIT
// Smoke-runs every shipped config: each topology preset builds, and each scenario under
// configs/scenarios and configs/bench loads and runs for a short simulated time with the
// framework's invariant checks on.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "app/runner.h"
#include "app/scenario.h"
#include "app/topology_loader.h"

namespace vcpusim::app {
namespace {

std::filesystem::path configs_dir() {
  const char* root = std::getenv("VCPUSIM_SOURCE_ROOT");
  return std::filesystem::path(root ? root : ".") / "configs";
}

std::vector<std::filesystem::path> yaml_files(const std::string& sub) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(configs_dir() / sub))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(Configs, EveryTopologyPresetBuilds) {
  const auto files = yaml_files("topologies");
  ASSERT_GE(files.size(), 6u);
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    const topo::Topology t = load_topology(YamlReader::load_file(f.string()));
    EXPECT_EQ(t.name(), f.stem().string());
    EXPECT_GT(t.num_threads(), 0u);
  }
}

TEST(Configs, EveryScenarioLoadsAndRunsBriefly) {
  std::vector<std::filesystem::path> files = yaml_files("scenarios");
  for (const auto& f : yaml_files("bench")) files.push_back(f);
  for (const auto& f : yaml_files("studies")) files.push_back(f);  // sweeps: the base scenario runs
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    ScenarioSpec s = load_scenario_file(f.string());
    s.duration = sim::ms(100);
    s.warmup = sim::ms(10);
    s.host.warmup = s.warmup;
    const RunResult r = run_scenario(s, s.seed);
    EXPECT_GT(r.events, 0u);
    for (const auto& d : r.domains) EXPECT_GE(d.throughput, 0.0) << d.name;
  }
}

TEST(Configs, BuiltInDefaultMatchesTheShippedFile) {
  const ScenarioSpec a = load_default_scenario();
  const ScenarioSpec b = load_scenario_file((configs_dir() / "scenarios" / "default.yaml").string());
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.groups.size(), b.groups.size());
  EXPECT_EQ(a.duration, b.duration);
}

}  // namespace vcpusim::app
