// SPDX-License-Identifier: MIT
// Smoke-runs every shipped config: each topology preset builds, and each scenario under
// configs/scenarios and configs/bench loads and runs for a short simulated time with the
// framework's invariant checks on; the studies in configs/studies expand as the issue names them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "app/runner.h"
#include "app/scenario.h"
#include "app/sweep.h"
#include "app/topology_loader.h"
#include "short_run.h"

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

namespace {

// Every shipped scenario file (studies: the base scenario of the sweep).
std::vector<std::filesystem::path> shipped_scenarios() {
  std::vector<std::filesystem::path> files = yaml_files("scenarios");
  for (const auto& f : yaml_files("bench")) files.push_back(f);
  for (const auto& f : yaml_files("studies")) files.push_back(f);
  return files;
}

// The scenario in `f`, cut to 100 ms with 10 ms of warm-up.
ScenarioSpec brief(const std::filesystem::path& f) {
  return test::shortened(load_scenario_file(f.string()), sim::ms(100), sim::ms(10));
}

}  // namespace

TEST(Configs, EveryScenarioLoadsAndRunsBriefly) {
  const std::vector<std::filesystem::path> files = shipped_scenarios();
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    const ScenarioSpec s = brief(f);
    const RunResult r = run_scenario(s, s.seed);
    EXPECT_GT(r.events, 0u);
    for (const auto& d : r.domains) EXPECT_GE(d.throughput, 0.0) << d.name;
  }
}

// Reproductions check the metric names they use before anything runs, against metric_names:
// those must be the names a run gives. A run may leave out the IPI figures (its workload can send
// IPIs but this run sent none), and nothing else.
TEST(Configs, MetricNamesKnownBeforeARunAreTheNamesItGives) {
  for (const auto& f : shipped_scenarios()) {
    SCOPED_TRACE(f.string());
    const ScenarioSpec s = brief(f);
    const std::set<std::string> known = metric_names(s);
    const auto given = run_scenario(s, s.seed).metrics();
    for (const auto& [name, value] : given) EXPECT_TRUE(known.count(name)) << name << " is given but not known";
    for (const auto& name : known) {
      if (!given.count(name)) {
        EXPECT_NE(name.find(".ipi"), std::string::npos) << name << " is known but not given";
      }
    }
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

namespace vcpusim::app {

// The two unseen-result studies (configs/studies/): they expand to exactly the points and
// columns the issue names, and one point of each runs briefly.
TEST(Configs, CoreschedMutilateStudyExpandsAsSpecified) {
  const SweepPlan p = expand_sweep(YamlReader::load_file((configs_dir() / "studies" / "coresched-mutilate.yaml").string()));
  EXPECT_EQ(p.columns, (std::vector<std::string>{"vanilla-HT", "vanilla-noHT", "HT", "noHT", "csc", "csc-stallfix",
                                                 "csc-tim", "csc-vruntime"}));
  std::map<std::string, std::vector<int>> threads;
  for (const auto& r : p.runs)
    if (r.column == "vanilla-HT") threads[r.point.at("setup")].push_back(r.point.at("mutilate.threads"));
  EXPECT_EQ(threads["BM"], (std::vector<int>{1, 3, 5, 7, 8}));
  EXPECT_EQ(threads["VM"], (std::vector<int>{1, 3, 5, 7, 8}));
  EXPECT_EQ(threads["VMx2"], (std::vector<int>{1, 3, 5, 7, 8}));
  EXPECT_EQ(threads["VM-v4"], (std::vector<int>{1, 3, 4}));
  for (const auto& r : p.runs) {
    const ScenarioSpec s = load_scenario(YamlReader(r.document, p.file, ""));
    const std::string setup = r.point.at("setup");
    EXPECT_EQ(s.host.core_sched.enabled, r.column.rfind("csc", 0) == 0);
    std::uint32_t vms = 0, bm = 0;
    for (const auto& g : s.groups) (g.bare_metal ? bm : vms) += g.count;
    EXPECT_EQ(vms, setup == "BM" ? 0u : setup == "VMx2" ? 2u : 1u) << setup;
    EXPECT_EQ(bm, setup == "BM" ? 1u : 0u) << setup;
  }
}

TEST(Configs, CoreschedV4OvercommitStudyExpandsAsSpecified) {
  const SweepPlan p =
      expand_sweep(YamlReader::load_file((configs_dir() / "studies" / "coresched-v4-overcommit.yaml").string()));
  EXPECT_EQ(p.columns, (std::vector<std::string>{"HT", "HT-coresched", "noHT"}));
  EXPECT_EQ(p.axes, (std::vector<std::string>{"overcommit", "benchmark"}));
  EXPECT_EQ(p.runs.size(), 3u * 3u * 4u);
  for (const auto& r : p.runs) {
    const ScenarioSpec s = load_scenario(YamlReader(r.document, p.file, ""));
    std::uint32_t vcpus = 0;
    for (const auto& g : s.groups) vcpus += g.count * g.vcpus;
    // total vCPUs over the HT host's 80 hardware threads
    EXPECT_DOUBLE_EQ(vcpus / 80.0, std::stod(r.point.at("overcommit").get<std::string>()));
    EXPECT_EQ(s.host.smt, r.column != "noHT");
    EXPECT_EQ(s.host.core_sched.enabled, r.column == "HT-coresched");
    for (const auto& g : s.groups) EXPECT_EQ(g.workload.kind, r.point.at("benchmark").get<std::string>());
  }
}

TEST(Configs, OnePointOfEachStudyRunsBriefly) {
  for (const char* f : {"coresched-mutilate.yaml", "coresched-v4-overcommit.yaml"}) {
    SCOPED_TRACE(f);
    const SweepPlan p = expand_sweep(YamlReader::load_file((configs_dir() / "studies" / f).string()));
    // The last run: a core-scheduling column at the heaviest point.
    ScenarioSpec s = load_scenario(YamlReader(p.runs.back().document, p.file, ""));
    s.duration = sim::ms(100);
    s.warmup = sim::ms(10);
    s.host.warmup = s.warmup;
    const RunResult r = run_scenario(s, s.seed);
    const auto m = r.metrics();
    const std::string metric = std::string(f) == "coresched-mutilate.yaml" ? "ops_per_sec" : "throughput";
    ASSERT_TRUE(m.count(metric));
    EXPECT_GT(m.at(metric), 0.0);
  }
}

}  // namespace vcpusim::app
