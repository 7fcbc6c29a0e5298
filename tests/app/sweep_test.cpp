// SPDX-License-Identifier: MIT
// Pins sweep expansion: the cross product in document order (last axis fastest), zip, labelled
// axes, columns (overrides kept out of the point), dotted paths into maps and named list
// elements, copy-on-write documents, seeds that depend only on the point, and errors that name
// the bad path and the line it is on.
#include <gtest/gtest.h>

#include "app/scenario.h"
#include "app/sweep.h"

namespace vcpusim::app {
namespace {

const char* kBase =
    "name: s\n"
    "topology: desktop-4c8t\n"
    "vms:\n"
    "  - {name: a, vcpus: 2, workload: {kind: sysbench-cpu, threads: 2}}\n"
    "  - {name: b, vcpus: 1, workload: {kind: sysbench-cpu}}\n";

SweepPlan plan(const std::string& extra) { return expand_sweep(YamlReader::load_string(std::string(kBase) + extra, "s.yaml")); }

ScenarioSpec spec_of(const SweepPlan& p, std::size_t i) { return load_scenario(YamlReader(p.runs[i].document, p.file, "")); }

std::string error_of(const std::string& extra) {
  try {
    const SweepPlan p = plan(extra);
    for (std::size_t i = 0; i < p.runs.size(); ++i) spec_of(p, i);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(Sweep, NoSweepIsOneRun) {
  const SweepPlan p = plan("");
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0].point, nlohmann::json::object());
  EXPECT_EQ(p.runs[0].column, "");
}

TEST(Sweep, CrossProductLastAxisFastest) {
  const SweepPlan p = plan("sweep:\n  vms.a.count: [1, 2]\n  vms.b.vcpus: [1, 2, 3]\n");
  ASSERT_EQ(p.runs.size(), 6u);
  EXPECT_EQ(p.axes, (std::vector<std::string>{"vms.a.count", "vms.b.vcpus"}));
  EXPECT_EQ(p.runs[0].point, (nlohmann::json{{"vms.a.count", 1}, {"vms.b.vcpus", 1}}));
  EXPECT_EQ(p.runs[1].point, (nlohmann::json{{"vms.a.count", 1}, {"vms.b.vcpus", 2}}));
  EXPECT_EQ(p.runs[5].point, (nlohmann::json{{"vms.a.count", 2}, {"vms.b.vcpus", 3}}));
  const ScenarioSpec s = spec_of(p, 5);
  EXPECT_EQ(s.groups[0].count, 2u);
  EXPECT_EQ(s.groups[1].vcpus, 3u);
  EXPECT_EQ(spec_of(p, 0).groups[0].count, 1u);
}

TEST(Sweep, ZipFieldsMoveTogether) {
  const SweepPlan p = plan("sweep:\n  zip:\n    - {host.smt: [on, off], vms.a.vcpus: [2, 1]}\n");
  ASSERT_EQ(p.runs.size(), 2u);
  EXPECT_TRUE(spec_of(p, 0).host.smt);
  EXPECT_EQ(spec_of(p, 0).groups[0].vcpus, 2u);
  EXPECT_FALSE(spec_of(p, 1).host.smt);  // host: did not exist; it is created
  EXPECT_EQ(spec_of(p, 1).groups[0].vcpus, 1u);
  EXPECT_EQ(p.runs[1].point, (nlohmann::json{{"host.smt", false}, {"vms.a.vcpus", 1}}));
}

TEST(Sweep, LabelledAxisAppliesItsOverrides) {
  const SweepPlan p = plan("sweep:\n  setup:\n    small: {vms.a.vcpus: 1}\n    big: {vms.a.vcpus: 4, vms.a.count: 2}\n");
  ASSERT_EQ(p.runs.size(), 2u);
  EXPECT_EQ(p.runs[0].point, (nlohmann::json{{"setup", "small"}}));
  EXPECT_EQ(spec_of(p, 1).groups[0].vcpus, 4u);
  EXPECT_EQ(spec_of(p, 1).groups[0].count, 2u);
}

TEST(Sweep, ColumnsOverrideButStayOutOfThePoint) {
  const SweepPlan p = plan("sweep:\n  vms.a.count: [1, 2]\ncolumns:\n  HT: {host.smt: on}\n  noHT: {host.smt: off}\n");
  ASSERT_EQ(p.runs.size(), 4u);
  EXPECT_EQ(p.columns, (std::vector<std::string>{"HT", "noHT"}));
  EXPECT_EQ(p.runs[2].column, "noHT");
  EXPECT_EQ(p.runs[2].point, (nlohmann::json{{"vms.a.count", 1}}));
  EXPECT_EQ(p.runs[0].point_key, p.runs[2].point_key);
  EXPECT_FALSE(spec_of(p, 2).host.smt);
  EXPECT_TRUE(spec_of(p, 0).host.smt);
}

TEST(Sweep, OverridesDoNotLeakBetweenRuns) {
  const SweepPlan p = plan("sweep:\n  vms.b.workload.threads: [1, 3]\n");
  EXPECT_EQ(spec_of(p, 0).groups[1].workload.threads, 1u);
  EXPECT_EQ(spec_of(p, 1).groups[1].workload.threads, 3u);
  EXPECT_EQ(spec_of(p, 0).groups[1].workload.threads, 1u);  // still, after the second was built
}

TEST(Sweep, ListElementsByIndex) {
  const SweepPlan p = plan("sweep:\n  vms.1.vcpus: [5]\n");
  EXPECT_EQ(spec_of(p, 0).groups[1].vcpus, 5u);
}

TEST(Sweep, SeedsDependOnlyOnThePoint) {
  const SweepPlan small = plan("sweep:\n  vms.a.count: [2]\n");
  const SweepPlan large = plan("sweep:\n  vms.a.count: [1, 2, 3]\n");
  EXPECT_EQ(small.runs[0].point_key, large.runs[1].point_key);
  EXPECT_EQ(point_seed(1, small.runs[0].point_key, 0), point_seed(1, large.runs[1].point_key, 0));
  EXPECT_NE(point_seed(1, large.runs[0].point_key, 0), point_seed(1, large.runs[1].point_key, 0));
  EXPECT_NE(point_seed(1, small.runs[0].point_key, 0), point_seed(1, small.runs[0].point_key, 1));
}

TEST(Sweep, BadPathIsNamed) {
  const std::string e = error_of("sweep:\n  vms.nosuch.count: [1]\n");
  EXPECT_NE(e.find("s.yaml:7:"), std::string::npos) << e;
  EXPECT_NE(e.find("vms.nosuch.count"), std::string::npos) << e;
}

TEST(Sweep, UnknownLeafIsRejectedByTheLoaderAtTheSweepLine) {
  const std::string e = error_of("sweep:\n  host.smtt: [on]\n");
  EXPECT_NE(e.find("s.yaml:7:"), std::string::npos) << e;
  EXPECT_NE(e.find("host.smtt: unknown key"), std::string::npos) << e;
}

TEST(Sweep, BadValueKeepsItsSourceLine) {
  const std::string e = error_of("sweep:\n  vms.a.vcpus: [2, 0]\n");
  EXPECT_NE(e.find("s.yaml:7:20: vms[0].vcpus: 0 is out of range"), std::string::npos) << e;
}

TEST(Sweep, UnequalZipIsRefused) {
  const std::string e = error_of("sweep:\n  zip:\n    - {vms.a.count: [1, 2], vms.b.count: [1]}\n");
  EXPECT_NE(e.find("zip fields move together"), std::string::npos) << e;
}

}  // namespace vcpusim::app
