// SPDX-License-Identifier: MIT
// Pins sweep expansion: the cross product in document order (last axis fastest), zip, labelled
// axes, columns (overrides kept out of the point), dotted paths into maps and named list
// elements, copy-on-write documents, seeds that depend only on the point, and errors that name
// the bad path and the line it is on; and that the record writer keeps its first failure.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "app/command_line_sets.h"
#include "app/scenario.h"
#include "app/sweep.h"
#include "app/records.h"
#include "app/sweep_runner.h"
#include "cli_support.h"

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

// As `vcpusim sweep` loads the runs: errors in a run's document are placed by locate_in_sweep.
std::string error_of(const std::string& extra) {
  try {
    const SweepPlan p = plan(extra);
    for (std::size_t i = 0; i < p.runs.size(); ++i) {
      try {
        spec_of(p, i);
      } catch (const ConfigError& e) {
        throw locate_in_sweep(p, p.runs[i], e);
      }
    }
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

// Overrides applied in a row share their copies (each container on their paths copied once):
// the shared original stays untouched, a list element is one copy however it is named, and a
// value set around earlier overrides replaces them; one set inside it afterwards copies it.
TEST(Sweep, OverridesOfOneBatchCopyEachContainerOnceAndLeaveTheOriginal) {
  const YamlReader root = YamlReader::load_string(kBase, "s.yaml");
  const YamlReader at(root.node(), "s.yaml", "");
  auto node = [](const char* yaml) { return YAML::Load(yaml); };
  YAML::Node doc = shallow_copy(root.node());
  OverrideCopies copies;
  apply_override(doc, "vms.a.vcpus", node("4"), at, &copies);
  apply_override(doc, "vms.0.workload.threads", node("4"), at, &copies);
  apply_override(doc, "vms.a.workload.kind", node("sysbench-memory"), at, &copies);
  EXPECT_EQ(doc["vms"][0]["vcpus"].as<int>(), 4);
  EXPECT_EQ(doc["vms"][0]["workload"]["threads"].as<int>(), 4);
  EXPECT_EQ(doc["vms"][0]["workload"]["kind"].as<std::string>(), "sysbench-memory");
  EXPECT_EQ(root.node()["vms"][0]["vcpus"].as<int>(), 2);
  EXPECT_EQ(root.node()["vms"][0]["workload"]["threads"].as<int>(), 2);
  EXPECT_EQ(root.node()["vms"][0]["workload"]["kind"].as<std::string>(), "sysbench-cpu");

  const YAML::Node around = node("{kind: sysbench-cpu, threads: 8}");
  apply_override(doc, "vms.a.workload", around, at, &copies);
  apply_override(doc, "vms.0.workload.threads", node("3"), at, &copies);
  EXPECT_EQ(doc["vms"][0]["workload"]["threads"].as<int>(), 3);
  EXPECT_EQ(doc["vms"][0]["workload"]["kind"].as<std::string>(), "sysbench-cpu");
  EXPECT_EQ(around["threads"].as<int>(), 8);  // the value given was copied, not written into
  EXPECT_EQ(doc["vms"][1]["vcpus"].as<int>(), 1);
}

// A batch finds a copied mapping's keys by an index built once (yaml-cpp compares a key with
// each key in turn: 10,000 overrides of one mapping made 50 million comparisons). Overrides in
// a batch give the document that the same overrides give one at a time without a batch, key
// order included: new keys appended, a key set again in its place, keys of the document itself,
// a mapping made on the way, and a list element found by a name an override gave it.
TEST(Sweep, ManyOverridesOfOneMappingInABatchGiveTheDocumentOfOneAtATime) {
  const std::string text = std::string(kBase) + "extra: [{x: 1}, {y: 2}]\n";
  const YamlReader root = YamlReader::load_string(text, "s.yaml");
  const YamlReader at(root.node(), "s.yaml", "");
  std::vector<std::pair<std::string, std::string>> overrides{{"vms.a.workload.threads", "3"}, {"extra.0.x", "3"}};
  for (int i = 0; i < 100; ++i) overrides.emplace_back("vms.a.workload.k" + std::to_string(i), std::to_string(i));
  overrides.insert(overrides.end(), {{"vms.a.workload.k7", "again"}, {"vms.a.workload.threads", "4"},
                                     {"vms.a.workload.made.sub", "made"}, {"vms.a.workload.made.other", "too"},
                                     {"top", "1"}, {"duration", "20ms"}, {"top", "2"},
                                     {"extra.0.name", "first"}, {"extra.first.x", "5"}, {"vms.b.workload.new", "b"}});
  YAML::Node batch = shallow_copy(root.node());
  OverrideCopies copies;
  std::vector<std::string> batch_fields;
  for (const auto& [path, value] : overrides) {
    std::string field;
    apply_override(batch, path, YAML::Load(value), at, &copies, &field);
    batch_fields.push_back(field);
  }
  std::vector<std::string> single_fields;
  YAML::Node single = shallow_copy(root.node());
  for (const auto& [path, value] : overrides) {
    std::string field;
    apply_override(single, path, YAML::Load(value), at, nullptr, &field);
    single_fields.push_back(field);
  }
  EXPECT_EQ(YAML::Dump(batch), YAML::Dump(single));
  EXPECT_EQ(batch_fields, single_fields);
  EXPECT_EQ(batch["vms"][0]["workload"].size(), 2u + 100u + 1u);
  EXPECT_EQ(batch["vms"][0]["workload"]["k7"].as<std::string>(), "again");
  EXPECT_EQ(batch["vms"][0]["workload"]["made"]["other"].as<std::string>(), "too");
  EXPECT_EQ(batch["extra"][0]["x"].as<int>(), 5);
  EXPECT_EQ(batch["top"].as<int>(), 2);
  EXPECT_EQ(YAML::Dump(root.node()), YAML::Dump(YamlReader::load_string(text, "s.yaml").node()));  // untouched
  // A probe for an element's name: leaves no key behind that a later override would add twice.
  EXPECT_THROW(apply_override(batch, "extra.second.x", YAML::Load("1"), at, &copies), ConfigError);
  apply_override(batch, "extra.1.name", YAML::Load("second"), at, &copies);
  apply_override(batch, "extra.second.y", YAML::Load("6"), at, &copies);
  EXPECT_EQ(YAML::Dump(batch["extra"][1]), "y: 6\nname: second");
}

// Many --set options into one mapping (applied through the batch's index, and again when an
// error is blamed) give every key, and the error in the first of them is that option's.
TEST(Sweep, ManySetsIntoOneMappingGiveEveryKeyAndBlameTheFirstBadOne) {
  const YamlReader root = YamlReader::load_string(kBase, "s.yaml");
  std::vector<std::string> texts{"vms.a.workload.threads=3"};
  for (int i = 0; i < 3000; ++i) texts.push_back("vms.a.workload.k" + std::to_string(i) + "=" + std::to_string(i));
  const std::vector<CommandLineSet> sets = parse_command_line_sets("--set", texts);
  const YamlReader applied = apply_command_line_sets(root, sets);
  const nlohmann::json workload = yaml_to_json(applied.node()["vms"][0]["workload"]);
  ASSERT_EQ(workload.size(), 2u + 3000u);
  EXPECT_EQ(workload.at("threads"), 3);
  EXPECT_EQ(workload.at("k2999"), 2999);
  EXPECT_FALSE(root.node()["vms"][0]["workload"]["k0"]);  // the file's document is untouched
  std::string error = "no error";
  try {
    load_scenario(applied);
  } catch (const ConfigError& e) {
    error = blame_command_line_sets(sets, root.node(), e).what();
  }
  EXPECT_EQ(error.find("<command line>: --set vms.a.workload.k0: unknown key (allowed here: "), 0u) << error;
  std::vector<std::string> twice = texts;
  twice.push_back("vms.a.workload.k17=1");
  try {
    parse_command_line_sets("--set", twice);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "<command line>: --set vms.a.workload.k17: given twice");
  }
}

// `vcpusim run FILE --set ...` checks the file's columns too; a --set the base takes but a
// column cannot (cookies without SMT) names that column, or the refusal reads as a rule the
// base it runs breaks.
TEST(Sweep, ASetThatOnlyAColumnCannotTakeNamesTheColumn) {
  const YamlReader root = YamlReader::load_string(
      std::string(kBase) + "columns:\n  HT: {host.smt: on}\n  noHT: {host.smt: off}\n", "s.yaml");
  const std::vector<CommandLineSet> sets = parse_command_line_sets("--set", {"host.core_scheduling=cookie"});
  std::string error = "no error";
  try {
    load_scenario(apply_command_line_sets(root, sets));
  } catch (const ConfigError& e) {
    error = blame_command_line_sets(sets, root.node(), e).what();
  }
  EXPECT_EQ(error.find("<command line>: --set host.core_scheduling: 'cookie' needs host.smt: on"), 0u) << error;
  EXPECT_NE(error.find("(in the sweep's run {}, column noHT)"), std::string::npos) << error;
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

namespace vcpusim::app {

// A named field set at several paths: {values: [...], paths: [...]} (the same knob in every
// setup's group, e.g. mutilate.threads in a VM and on bare metal).
TEST(Sweep, OneFieldSetAtSeveralPaths) {
  const SweepPlan p = plan(
      "sweep:\n"
      "  both.threads: {values: [1, 3], paths: [vms.a.workload.threads, vms.b.workload.threads]}\n");
  ASSERT_EQ(p.runs.size(), 2u);
  EXPECT_EQ(p.runs[1].point, (nlohmann::json{{"both.threads", 3}}));
  const ScenarioSpec s = spec_of(p, 1);
  EXPECT_EQ(s.groups[0].workload.threads, 3u);
  EXPECT_EQ(s.groups[1].workload.threads, 3u);
}

// `only:` in a labelled entry restricts another axis at that label; kept points are numbered
// densely.
TEST(Sweep, LabelledEntryRestrictsAnotherAxis) {
  const SweepPlan p = plan(
      "sweep:\n"
      "  setup:\n"
      "    X: {only: {vms.a.count: [1, 3]}}\n"
      "    Y: {vms.b.count: 0, only: {vms.a.count: [2]}}\n"
      "  vms.a.count: [1, 2, 3]\n");
  ASSERT_EQ(p.runs.size(), 3u);
  EXPECT_EQ(p.runs[0].point, (nlohmann::json{{"setup", "X"}, {"vms.a.count", 1}}));
  EXPECT_EQ(p.runs[1].point, (nlohmann::json{{"setup", "X"}, {"vms.a.count", 3}}));
  EXPECT_EQ(p.runs[2].point, (nlohmann::json{{"setup", "Y"}, {"vms.a.count", 2}}));
  for (std::uint32_t i = 0; i < 3; ++i) EXPECT_EQ(p.runs[i].point_index, i);
  EXPECT_EQ(spec_of(p, 2).groups[1].count, 0u);
}

// `columns:` in a labelled entry overrides a column at that label only, after the column's own.
TEST(Sweep, LabelledEntryOverridesAColumnAtThatLabel) {
  const SweepPlan p = plan(
      "sweep:\n"
      "  setup:\n"
      "    X: {}\n"
      "    Y: {columns: {two: {vms.a.vcpus: 4}}}\n"
      "columns:\n"
      "  one: {}\n"
      "  two: {vms.a.vcpus: 3}\n");
  ASSERT_EQ(p.runs.size(), 4u);  // column-major: one/X, one/Y, two/X, two/Y
  EXPECT_EQ(spec_of(p, 1).groups[0].vcpus, 2u);
  EXPECT_EQ(spec_of(p, 2).groups[0].vcpus, 3u);
  EXPECT_EQ(spec_of(p, 3).groups[0].vcpus, 4u);
  EXPECT_EQ(p.runs[3].point, (nlohmann::json{{"setup", "Y"}}));
}

// `only:` rules that together leave a value out of every point ran the rest and said nothing;
// rules that left out every point wrote 0 records, exit 0.
TEST(Sweep, OnlyRulesThatLeaveAValueNowhereAreErrors) {
  EXPECT_EQ(error_of("sweep:\n  setup:\n    X: {only: {vms.a.count: [1]}}\n    Y: {only: {vms.a.count: [1]}}\n"
                          "  vms.a.count: [1, 2]\n"),
            "s.yaml:10:20: sweep.vms.a.count[1]: the only: rules leave this value out of every point of the sweep, so "
            "it would never run");
  EXPECT_NE(error_of("sweep:\n  setup:\n    A: {only: {sec: [C]}}\n    B: {only: {sec: [D]}}\n  sec:\n"
                          "    C: {only: {setup: [B]}}\n    D: {only: {setup: [A]}}\n")
                .find("s.yaml:8:8: sweep.setup.A: the only: rules leave this value out of every point"),
            std::string::npos);
}

// Two labels of one axis are two points: one may replace a whole VM and the other set a field
// of it. Refused as if they were one zip group; only paths within one entry can lose a value.
TEST(Sweep, LabelledEntriesMaySetNestedPathsOfOneField) {
  const SweepPlan p = plan(
      "sweep:\n  setup:\n"
      "    one: {vms.a.workload: {kind: sysbench-memory, threads: 3}}\n"
      "    two: {vms.a.workload.threads: 4}\n");
  ASSERT_EQ(p.runs.size(), 2u);
  EXPECT_EQ(spec_of(p, 0).groups[0].workload.kind, "sysbench-memory");
  EXPECT_EQ(spec_of(p, 0).groups[0].workload.threads, 3u);
  EXPECT_EQ(spec_of(p, 1).groups[0].workload.kind, "sysbench-cpu");
  EXPECT_EQ(spec_of(p, 1).groups[0].workload.threads, 4u);
  EXPECT_EQ(error_of("sweep:\n  setup:\n"
                     "    one: {vms.a.workload: {kind: sysbench-memory}, vms.a.workload.threads: 4}\n"),
            "s.yaml:8:27: sweep.setup.one.vms.a.workload: 'vms.a.workload' covers 'vms.a.workload.threads', which the "
            "same labelled entry sets: one value would be lost");
}

TEST(Sweep, OnlyAndColumnsNamingWhatDoesNotExistAreErrors) {
  EXPECT_NE(error_of("sweep:\n  setup:\n    X: {only: {nope: [1]}}\n").find("'nope' is not another axis"), std::string::npos);
  EXPECT_NE(error_of("sweep:\n  setup:\n    X: {only: {vms.a.count: [7]}}\n  vms.a.count: [1]\n")
                .find("'7' is not a value of the axis 'vms.a.count'"),
            std::string::npos);
  // A label as written, not as JSON ('"Z"').
  EXPECT_NE(error_of("sweep:\n  setup:\n    X: {only: {sec: [Z]}}\n  sec:\n    C: {}\n")
                .find("'Z' is not a value of the axis 'sec'"),
            std::string::npos);
  EXPECT_NE(error_of("sweep:\n  setup:\n    X: {columns: {nope: {}}}\ncolumns:\n  one: {}\n").find("no column 'nope'"),
            std::string::npos);
}

}  // namespace vcpusim::app

namespace vcpusim::app {
namespace {

// Loads every run as `vcpusim sweep` does before any work starts.
std::string sweep_error_of(const std::string& text) {
  try {
    load_sweep_specs(expand_sweep(YamlReader::load_string(text, "s.yaml")));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

const char* kOneVm = "name: s\ntopology: desktop-4c8t\nvms:\n  - {name: a, vcpus: 2, workload: {kind: sysbench-cpu, threads: 2}}\n";

// A misspelt mapping on an override's way (hsot.smt) is created by the sweep, so it had no line.
TEST(Sweep, MisspeltMappingInAnOverridePathIsReportedAtTheOverride) {
  EXPECT_EQ(sweep_error_of(std::string(kOneVm) + "columns:\n  on: {host.smt: on}\n  off: {hsot.smt: off}\n"),
            "s.yaml:7:19: hsot: unknown key (allowed here: name, seed, duration, warmup, repetitions, topology, host, "
            "guest, vms, baremetal, sweep, columns) (from 'hsot.smt' here, in the sweep's run {}, column off)");
}

// The sweep copies every container on an override's way; an error in one (here the base's own
// misspelt `Kind`) is reported at the base's line, as `vcpusim run` reports it.
TEST(Sweep, ErrorInAContainerTheSweepCopiedKeepsTheBaseLine) {
  EXPECT_EQ(sweep_error_of("name: s\ntopology: desktop-4c8t\nvms:\n  - name: a\n    vcpus: 2\n"
                           "    workload: {Kind: sysbench-cpu, threads: 2}\nsweep:\n  vms.a.workload.threads: [1, 2]\n"),
            "s.yaml:6:15: vms[0].workload: missing required key 'kind' (in the sweep's run {\"vms.a.workload.threads\":1})");
}

TEST(Sweep, PathsOfAMultiPathFieldAreCheckedWhereWritten) {
  EXPECT_EQ(sweep_error_of(std::string(kOneVm) + "sweep:\n  t:\n    values: [1, 2]\n    paths: [vms.a.workload.threads, \"a..b\"]\n"),
            "s.yaml:8:37: sweep.t.paths[1]: 'a..b' is not a dotted path such as vms.db.count");
}

TEST(Sweep, RunLeftWithoutVmsNamesItsPoint) {
  EXPECT_EQ(sweep_error_of(std::string(kOneVm) + "sweep:\n  vms.a.count: [1, 0]\n"),
            "s.yaml: the scenario has no vms and no baremetal tasks (or every count is 0) "
            "(in the sweep's run {\"vms.a.count\":0})");
}

}  // namespace
}  // namespace vcpusim::app

namespace vcpusim::app {
namespace {

// An override that covers a field an earlier one set makes the earlier value vanish while the
// point still names it (two zip groups on one field ran the second's values under the first's
// labels, with repeated point keys and so repeated seeds).
TEST(Sweep, OverridesThatOverwriteAnotherAxisOrColumnAreErrors) {
  const std::string base = "name: s\ntopology: desktop-4c8t\nvms:\n  - {name: a, vcpus: 2, workload: {kind: sysbench-cpu}}\n";
  EXPECT_NE(sweep_error_of(base + "sweep:\n  zip:\n    - {vms.a.count: [1, 2]}\n    - {vms.a.count: [3, 4]}\n")
                .find("'vms.a.count' covers 'vms.a.count', which the axis 'vms.a.count' sets first"),
            std::string::npos);
  EXPECT_NE(sweep_error_of(base + "sweep:\n  zip:\n    - {vms.a.count: [1, 2], vms.0.count: [3, 4]}\n")
                .find("'vms.0.count' covers 'vms.a.count', which the same zip group sets"),
            std::string::npos);
  EXPECT_NE(sweep_error_of(base + "sweep:\n  vms.a.count: [1, 2]\ncolumns:\n  x: {vms.a: {name: a, vcpus: 1, workload: {kind: sysbench-cpu}}}\n")
                .find("'vms.a' covers 'vms.a.count', which the axis 'vms.a.count' sweeps"),
            std::string::npos);
  // A later override inside an earlier one's field refines it.
  EXPECT_EQ(sweep_error_of(base + "sweep:\n  vms.a.workload: [{kind: sysbench-cpu}, {kind: sysbench-memory}]\n"
                                  "columns:\n  x: {vms.a.workload.threads: 2}\n"),
            "no error");
}

}  // namespace
}  // namespace vcpusim::app

namespace vcpusim::app {
namespace {

// The ConfigError text expand_sweep gives for kBase plus `extra` (checks made before any run is
// loaded); "no error" if it expands.
std::string plan_error_of(const std::string& extra) {
  try {
    plan(extra);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

// A zip group with no field multiplied the sweep by nothing: 0 runs, status 0.
TEST(Sweep, ZipGroupWithoutAFieldIsRefused) {
  EXPECT_EQ(plan_error_of("sweep:\n  zip:\n    - {}\n"), "s.yaml:8:7: sweep.zip[0]: a zip group needs at least one field");
  EXPECT_EQ(plan_error_of("sweep:\n  zip:\n    - {vms.a.count: [1, 2]}\n    - {}\n"),
            "s.yaml:9:7: sweep.zip[1]: a zip group needs at least one field");
}

// An empty zip list, or an empty sweep:, added no axis: the base ran alone, status 0, as if the
// file had no sweep. In a labelled entry an empty only: restricted nothing and an empty columns:
// changed nothing. Each is refused at its line, as an empty zip group and an empty columns: are;
// an entry's or a column's empty overrides ({}) still mean the base.
TEST(Sweep, EmptyZipListEmptySweepAndEmptyOnlyOrColumnsOfAnEntryAreRefused) {
  EXPECT_EQ(plan_error_of("sweep: {zip: []}\n"), "s.yaml:6:14: sweep.zip: an empty list: give at least one group");
  EXPECT_EQ(plan_error_of("sweep:\n  vms.a.count: [1, 2]\n  zip: []\n"),
            "s.yaml:8:8: sweep.zip: an empty list: give at least one group");
  EXPECT_EQ(plan_error_of("sweep: {}\n"),
            "s.yaml:6:8: sweep: an empty mapping: give at least one swept field (or leave sweep: out)");
  EXPECT_EQ(plan_error_of("sweep: {}\ncolumns: {x: {}, y: {host.smt: off}}\n"),
            "s.yaml:6:8: sweep: an empty mapping: give at least one swept field (or leave sweep: out)");
  EXPECT_EQ(plan_error_of("sweep:\n  setup:\n    X: {only: {}}\n  vms.a.count: [1, 2]\n"),
            "s.yaml:8:15: sweep.setup.X.only: an empty mapping: name at least one axis and its values (or leave only: out)");
  EXPECT_EQ(plan_error_of("sweep:\n  setup:\n    X: {columns: {}}\ncolumns: {x: {}, y: {host.smt: off}}\n"),
            "s.yaml:8:18: sweep.setup.X.columns: an empty mapping: name at least one column and its overrides (or leave "
            "columns: out)");
  EXPECT_EQ(plan_error_of("columns: {}\n"), "s.yaml:6:10: columns: columns: at least one column");
  // Empty overrides have a meaning: this label, this column, runs the base.
  EXPECT_EQ(plan("sweep:\n  setup: {X: {}, Y: {vms.a.vcpus: 1}}\ncolumns: {x: {}, y: {host.smt: off}}\n").runs.size(), 4u);
  EXPECT_EQ(plan("sweep:\n  setup: {X: {columns: {x: {}}}, Y: {}}\ncolumns: {x: {}, y: {host.smt: off}}\n").runs.size(), 4u);
}

// {values: [...], paths: [...]} is told from a labelled axis by a list under either key. With an
// extra key or without one of the two it was read as a labelled axis, and the message blamed
// the right key ("sweep.t.values: expected a mapping").
TEST(Sweep, ValuesAndPathsEntryNamesAnExtraOrAMissingKey) {
  EXPECT_EQ(plan_error_of("sweep:\n  t:\n    values: [1, 2]\n    paths: [vms.a.count]\n    extra: 1\n"),
            "s.yaml:10:5: sweep.t.extra: unknown key (allowed here: values, paths)");
  EXPECT_EQ(plan_error_of("sweep:\n  t:\n    paths: [vms.a.count]\n"), "s.yaml:8:5: sweep.t: missing required key 'values'");
  EXPECT_EQ(plan_error_of("sweep:\n  t: {values: [1, 2]}\n"), "s.yaml:7:6: sweep.t: missing required key 'paths'");
  EXPECT_EQ(plan_error_of("sweep:\n  t: {values: [1, 2], paths: vms.a.count}\n"), "s.yaml:7:30: sweep.t.paths: expected a list");
  // Labels that happen to be called values and paths still make a labelled axis.
  const SweepPlan p = plan("sweep:\n  t:\n    values: {vms.a.count: 2}\n    paths: {}\n");
  ASSERT_EQ(p.runs.size(), 2u);
  EXPECT_EQ(p.runs[0].point, (nlohmann::json{{"t", "values"}}));
}

// Column labels, axis names and the labels of labelled axes are what compare's tables show: ""
// was shown as "(none)", the text for "no columns", and a newline split the header row.
TEST(Sweep, BlankLabelsAndLabelsHoldingControlCharactersAreRefused) {
  EXPECT_EQ(plan_error_of("columns:\n  \"\": {host.smt: on}\n"),
            "s.yaml:7:3: columns.\"\": a column's label is not blank (it is what the tables show)");
  EXPECT_EQ(plan_error_of("columns:\n  \" \": {}\n"),
            "s.yaml:7:3: columns.\" \": a column's label is not blank (it is what the tables show)");
  const std::string control = " holds no control character (a newline or a tab would break the lines of the tables that name it)";
  EXPECT_EQ(plan_error_of("columns:\n  a: {}\n  \"c\\nd|e\": {host.smt: off}\n"),
            "s.yaml:8:3: columns.\"c\\nd|e\": a column's label" + control);
  EXPECT_EQ(plan_error_of("sweep:\n  setup:\n    \"a\\tb\": {}\n"), "s.yaml:8:5: sweep.setup.\"a\\tb\": an axis's label" + control);
  // A NUL is refused where the file is read, as any control character but a tab or line break.
  EXPECT_EQ(plan_error_of("sweep:\n  setup:\n    \"a\\0b\": {}\n"),
            "s.yaml:8:5: sweep.setup.\"a\\u0000b\": a control character (byte 0x0) at character 2 of this value; YAML "
            "text is printable");
  EXPECT_EQ(plan_error_of("sweep:\n  \"\": {X: {}}\n"), "s.yaml:7:3: sweep.\"\": an axis's name is not blank (it is what the tables show)");
  EXPECT_EQ(plan_error_of("sweep:\n  \"t\\n\": {values: [1], paths: [vms.a.count]}\n"), "s.yaml:7:3: sweep.\"t\\n\": an axis's name" + control);
  EXPECT_EQ(plan_error_of("sweep:\n  setup: {\"a b\": {}, \"c-d|e\": {}}\ncolumns:\n  \"HT on\": {}\n"), "no error");
}

// A merge key is refused everywhere else in a file; as a column's label, an axis's name or a
// labelled axis's label it was read as a name: `columns: {<<: {host.smt: off}}` ran a column
// labelled "<<". Quoted, it is a name like any other.
TEST(Sweep, AMergeKeyWhereALabelIsExpectedIsRefused) {
  const std::string merge = ": YAML merge keys (<<) are not read here: write the entries out ('<<' would be ";
  EXPECT_EQ(plan_error_of("columns:\n  <<: {host.smt: off}\n"), "s.yaml:7:3: columns.\"<<\"" + merge + "a column's label)");
  EXPECT_EQ(plan_error_of("columns:\n  a: &c {host.smt: on}\n  <<: {b: *c}\n"),
            "s.yaml:8:3: columns.\"<<\"" + merge + "a column's label)");
  EXPECT_EQ(plan_error_of("sweep:\n  <<: {vms.a.count: [1, 2]}\n"), "s.yaml:7:3: sweep.\"<<\"" + merge + "an axis's name)");
  EXPECT_EQ(plan_error_of("sweep:\n  setup:\n    <<: {x: {host.smt: on}}\n"),
            "s.yaml:8:5: sweep.setup.\"<<\"" + merge + "an axis's label)");
  EXPECT_EQ(plan_error_of("columns:\n  '<<': {host.smt: off}\n"), "no error");
}

// sweep:, columns:, seed and repetitions are read once, by the sweep, and never by a run: a
// swept `sweep.x` gave two points ({"sweep.x": 1}, {"sweep.x": 2}) of one and the same run, and
// a swept seed or repetitions was ignored by every run.
TEST(Sweep, OverrideOfAKeyThatNoRunReadsIsRefused) {
  EXPECT_EQ(plan_error_of("sweep:\n  sweep.x: [1, 2]\n"),
            "s.yaml:7:12: sweep.sweep.x: 'sweep.x' is not a setting of a run: sweep: and columns: are read once, "
            "to make the runs");
  EXPECT_EQ(plan_error_of("columns:\n  a: {columns.b: {}}\n"),
            "s.yaml:7:18: columns.a.columns.b: 'columns.b' is not a setting of a run: sweep: and columns: are read "
            "once, to make the runs");
  EXPECT_EQ(plan_error_of("sweep:\n  seed: [1, 2]\n"),
            "s.yaml:7:9: sweep.seed: 'seed' is not a setting of a run: each run's seed is derived from the file's "
            "seed and the run's point");
  EXPECT_EQ(plan_error_of("sweep:\n  setup:\n    X: {repetitions: 3}\n"),
            "s.yaml:8:22: sweep.setup.X.repetitions: 'repetitions' is not a setting of a run: every point runs the "
            "file's repetitions");
  EXPECT_NE(plan_error_of("sweep:\n  zip:\n    - {vms.a.count: [1], sweep: [{}]}\n").find("sweep.zip[0].sweep: 'sweep' is not"),
            std::string::npos);
  EXPECT_NE(plan_error_of("sweep:\n  t: {values: [1], paths: [vms.a.count, columns.x]}\n")
                .find("sweep.t.paths[1]: 'columns.x' is not"),
            std::string::npos);
  EXPECT_NE(plan_error_of("sweep:\n  setup:\n    X: {columns: {c: {seed: 2}}}\ncolumns:\n  c: {}\n")
                .find("sweep.setup.X.columns.c.seed: 'seed' is not"),
            std::string::npos);
  // A field of the same name deeper in the scenario is a setting like any other.
  EXPECT_EQ(plan_error_of("sweep:\n  vms.a.workload.seed: [1]\n"), "no error");
}

// A value given twice ran its point twice with the same seeds, and compare counted the samples
// twice (a smaller stddev from nothing); in a zip group, the same combination twice.
TEST(Sweep, AValueGivenTwiceIsRefused) {
  EXPECT_EQ(plan_error_of("sweep:\n  vms.a.count: [1, 2, 1]\n"),
            "s.yaml:7:23: sweep.vms.a.count[2]: this value is given twice (values[0] is the same): its point would "
            "run twice with the same seeds and be counted twice");
  EXPECT_NE(plan_error_of("sweep:\n  zip:\n    - {vms.a.count: [1, 2, 1], vms.a.vcpus: [1, 2, 1]}\n")
                .find("this value is given twice"),
            std::string::npos);
  EXPECT_EQ(plan_error_of("sweep:\n  zip:\n    - {vms.a.count: [1, 2, 1], vms.a.vcpus: [1, 2, 2]}\n"), "no error");
  // The same setting spelt two ways: one row of a table (4 and "4"), or one value as the loader
  // reads it (1s and 1000ms, 1GiB and 1024MiB). Each ran twice and was counted twice.
  EXPECT_EQ(plan_error_of("sweep:\n  vms.a.count: [4, \"4\"]\n"),
            "s.yaml:7:20: sweep.vms.a.count[1]: this value is given twice (values[0] is the same): its point would "
            "run twice with the same seeds and be counted twice");
  EXPECT_NE(plan_error_of("sweep:\n  duration: [1s, 1000ms]\n").find("sweep.duration[1]: this value is given twice"),
            std::string::npos);
  EXPECT_NE(plan_error_of("sweep:\n  vms.a.memory.size: [1GiB, 1024MiB]\n").find("this value is given twice"),
            std::string::npos);
  EXPECT_EQ(plan_error_of("sweep:\n  duration: [1s, 100ms]\n"), "no error");
  // 2 and 2.0 are one row of a compare table; 0.1234561 and 0.1234562 are two.
  EXPECT_NE(plan_error_of("sweep:\n  host.smt_interference.mixed.mixed: [1, 1.0]\n").find("this value is given twice"),
            std::string::npos);
  EXPECT_EQ(plan_error_of("sweep:\n  host.smt_interference.mixed.mixed: [0.1234561, 0.1234562]\n"), "no error");
  // A number quoted with another spelling is the number the loader reads: "02" is 2 and "0.50"
  // is 0.5 (each pair ran its point twice, as two rows of one setting).
  EXPECT_NE(plan_error_of("sweep:\n  vms.a.count: [2, \"02\"]\n").find("sweep.vms.a.count[1]: this value is given twice"),
            std::string::npos);
  EXPECT_NE(plan_error_of("sweep:\n  vms.a.count: [\"+2\", 2]\n").find("this value is given twice"), std::string::npos);
  EXPECT_NE(plan_error_of("sweep:\n  host.smt_interference.mixed.mixed: [0.5, \"0.50\"]\n").find("this value is given twice"),
            std::string::npos);
  EXPECT_EQ(plan_error_of("sweep:\n  vms.a.count: [2, \"20\", 200]\n"), "no error");
  EXPECT_EQ(plan_error_of("sweep:\n  host.smt_interference.mixed.mixed: [0.5, \"0.05\"]\n"), "no error");
  // A byte count needs no unit, and on, 'on', yes and true are one switch: each pair ran twice.
  EXPECT_NE(plan_error_of("sweep:\n  vms.a.memory.size: [1GiB, 1073741824]\n").find("this value is given twice"),
            std::string::npos);
  EXPECT_NE(plan_error_of("sweep:\n  host.smt: [on, 'on']\n").find("this value is given twice"), std::string::npos);
  EXPECT_NE(plan_error_of("sweep:\n  host.smt: [true, yes]\n").find("this value is given twice"), std::string::npos);
  EXPECT_EQ(plan_error_of("sweep:\n  host.smt: [on, off]\n"), "no error");
}

// One CPU list spelt two ways in an affinity axis (cpus:[0,1] and cpus:0-1, [1, 0], cpus:[0, 1],
// {cpus: [0, 1]}) ran its point twice with the same seeds, and compare counted it twice. node:N,
// socket:N and the like stay apart from any cpus: list: their sets depend on the machine.
TEST(Sweep, AnAffinityValueSpeltTwoWaysIsGivenTwice) {
  const std::string twice = "this value is given twice";
  for (const char* other : {"'cpus:[0-1]'", "'cpus:0-1'", "'cpus:[1,0]'", "'cpus:[0, 1]'", "[0, 1]", "[1, 0]",
                            "{cpus: [0, 1]}", "{cpus: 0-1}", "'cpus:[0,0-1]'"}) {
    SCOPED_TRACE(other);
    EXPECT_EQ(plan_error_of(std::string("sweep:\n  vms.a.affinity.hard: ['cpus:[0,1]', ") + other + "]\n"),
              "s.yaml:7:39: sweep.vms.a.affinity.hard[1]: this value is given twice (values[0] is the same): its point "
              "would run twice with the same seeds and be counted twice");
  }
  EXPECT_NE(plan_error_of("sweep:\n  vms.a.affinity.soft: ['cpus:[0-3,5]', 'cpus:[5,3,2,0,1]']\n").find(twice),
            std::string::npos);
  EXPECT_NE(plan_error_of("sweep:\n  vms.a.affinity.hard: ['node:0', 'node: 00']\n").find(twice), std::string::npos);
  EXPECT_NE(plan_error_of("sweep:\n  zip:\n    - {vms.a.affinity.hard: ['cpus:[0,1]', 'cpus:0-1'], vms.a.count: [1, 1]}\n")
                .find(twice),
            std::string::npos);
  EXPECT_NE(plan_error_of("sweep:\n  pin: {values: ['cpus:[0,1]', 'cpus:0-1'], paths: [vms.a.affinity.hard, "
                          "vms.b.affinity.hard]}\n")
                .find(twice),
            std::string::npos);
  EXPECT_NE(plan_error_of("sweep:\n  vms.a.affinity: [{hard: 'cpus:[0,1]'}, {hard: 'cpus:0-1'}]\n").find(twice),
            std::string::npos);
  EXPECT_NE(plan_error_of("sweep:\n  vms.a.affinity.per_vcpu.1.hard: ['cpus:[2,3]', 'cpus:2-3']\n").find(twice),
            std::string::npos);
  // Different sets, and expressions whose set depends on the machine, are different values.
  EXPECT_EQ(plan_error_of("sweep:\n  vms.a.affinity.hard: ['cpus:[0,1]', 'cpus:[0,2]', 'cpus:0-2', 'cpus:[1]']\n"),
            "no error");
  EXPECT_EQ(plan_error_of("sweep:\n  vms.a.affinity.hard: ['node:0', 'cpus:[0-7]', all, 'socket:0', 'core:0', "
                          "'cpus:[0,4]']\n"),
            "no error");
  // Only an affinity's value is read as one: elsewhere 'cpus:[0,1]' is a string like any other.
  EXPECT_EQ(plan_error_of("sweep:\n  name: ['cpus:[0,1]', 'cpus:0-1']\n"), "no error");
}

// A swept mapping (a whole scheduler, workload, memory or VM) compared its entries as written:
// {slice: 30ms} and {slice: 30000us}, {threads: 2} and {threads: '2'}, {smt: on} and
// {smt: 'on'} each ran one setting twice with the same seeds. Its entries are read as a value of
// the field itself is.
TEST(Sweep, AMappingOrListValueSpeltTwoWaysIsGivenTwice) {
  const std::string twice = "this value is given twice";
  EXPECT_EQ(plan_error_of("sweep:\n  host.scheduler: [{policy: rr, slice: 30ms}, {slice: 30000us, policy: rr}]\n"),
            "s.yaml:7:47: sweep.host.scheduler[1]: this value is given twice (values[0] is the same): its point would "
            "run twice with the same seeds and be counted twice");
  for (const char* values : {
           "vms.a.memory: [{size: 1GiB}, {size: 1024MiB}]",
           "vms.a.workload: [{kind: sysbench-cpu, threads: 2}, {kind: sysbench-cpu, threads: '2'}]",
           "host: [{scheduler: {policy: rr}, smt: on}, {scheduler: {policy: rr}, smt: 'on'}]",
           "vms.a.workload: [{kind: program, phases: [{compute: 1ms}]}, {kind: program, phases: [{compute: 1000us}]}]",
           "vms.a: [{name: a, vcpus: 2, affinity: {hard: 'cpus:0-1'}, workload: {kind: sysbench-cpu}}, "
           "{name: a, vcpus: 2, affinity: {hard: 'cpus:[1,0]'}, workload: {kind: sysbench-cpu}}]",
       }) {
    SCOPED_TRACE(values);
    EXPECT_NE(plan_error_of(std::string("sweep:\n  ") + values + "\n").find(twice), std::string::npos);
  }
  EXPECT_EQ(plan_error_of("sweep:\n  host.scheduler: [{policy: rr, slice: 30ms}, {policy: rr, slice: 20ms}]\n"),
            "no error");
  EXPECT_EQ(plan_error_of("sweep:\n  vms.a.workload: [{kind: sysbench-cpu, threads: 2}, {kind: sysbench-cpu}]\n"),
            "no error");
  // A string that reads like a mapping's text is a string: '{a: 1}' is not {a: 1}.
  EXPECT_EQ(plan_error_of("sweep:\n  vms.a.workload.kind: ['{a: 1}', {a: 1}]\n"), "no error");
}

// One topology file named two ways on an axis (box.yaml and ./box.yaml, a link to it, a preset
// name and the file it resolves to) made two points that were one machine, run with the same
// seeds and counted twice. Files are compared by canonical path; two files are two values.
TEST(Sweep, ATopologyFileNamedTwoWaysIsGivenTwice) {
  namespace fs = std::filesystem;
  const fs::path dir = test::fresh_dir("sweep-topology");
  fs::create_directories(dir / "sub");
  const std::string machine = "sockets: 1\ncores_per_socket: 4\nthreads_per_core: 2\nnodes: 1\n";
  std::ofstream(dir / "box.yaml") << machine;
  std::ofstream(dir / "other.yaml") << machine;
  fs::create_symlink("box.yaml", dir / "link.yaml");
  const std::string scenario = (dir / "s.yaml").string();
  const auto error_of_sweep = [&](const std::string& sweep) {
    try {
      expand_sweep(YamlReader::load_string(std::string(kBase) + "sweep:\n  " + sweep + "\n", scenario));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of_sweep("topology: [box.yaml, ./box.yaml]"),
            scenario + ":7:24: sweep.topology[1]: this value is given twice (values[0] is the same): its point would "
                       "run twice with the same seeds and be counted twice");
  const std::string twice = "this value is given twice";
  for (const std::string& other : {std::string("link.yaml"), std::string("sub/../box.yaml"), (dir / "box.yaml").string()}) {
    SCOPED_TRACE(other);
    EXPECT_NE(error_of_sweep("topology: [box.yaml, '" + other + "']").find("sweep.topology[1]: " + twice),
              std::string::npos);
  }
  EXPECT_NE(error_of_sweep("topology: [desktop-4c8t, topologies/desktop-4c8t.yaml]").find("sweep.topology[1]: " + twice),
            std::string::npos);
  EXPECT_NE(error_of_sweep("zip:\n    - {topology: [box.yaml, link.yaml], vms.a.count: [1, 1]}").find(twice),
            std::string::npos);
  // Two files of the same text are two machines as far as a sweep knows, and a preset is a file.
  EXPECT_EQ(error_of_sweep("topology: [box.yaml, other.yaml, desktop-4c8t, one-core-ht]"), "no error");
  fs::remove_all(dir);
}

// A labelled entry's `columns:` apply after every axis: one over another axis's field ran every
// value of that axis with its own value in that column, exit 0, under points naming the values
// (setup X, column two: vms.a.count 1 and 2 both ran with 3). Over its own axis's fields it
// refines its label, as above.
TEST(Sweep, AnEntrysColumnOverrideOfAnotherAxisFieldIsRefused) {
  EXPECT_EQ(plan_error_of("sweep:\n  vms.a.count: [1, 2]\n  setup:\n    X: {columns: {two: {vms.a.count: 3}}}\n    Y: {}\n"
                          "columns:\n  one: {}\n  two: {host.smt: off}\n"),
            "s.yaml:9:38: sweep.setup.X.columns.two.vms.a.count: 'vms.a.count' covers 'vms.a.count', which the axis "
            "'vms.a.count' sweeps: this column's runs at this label would not have the values their points name");
  EXPECT_NE(plan_error_of("sweep:\n  setup:\n    X: {columns: {two: {vms.a: {name: a, vcpus: 1, workload: {kind: "
                          "sysbench-cpu}}}}}\n    Y: {}\n  vms.a.workload.threads: [1, 2]\n"
                          "columns:\n  one: {}\n  two: {host.smt: off}\n")
                .find("'vms.a' covers 'vms.a.workload.threads', which the axis 'vms.a.workload.threads' sweeps"),
            std::string::npos);
  EXPECT_EQ(plan_error_of("sweep:\n  vms.a.count: [1, 2]\n  setup:\n    X: {vms.a.vcpus: 1, columns: {two: {vms.a.vcpus: 3}}}\n"
                          "    Y: {}\ncolumns:\n  one: {}\n  two: {host.smt: off}\n"),
            "no error");
}

// Runs are counted before any is made: a plan of 10^8 points was expanded until memory ran out,
// with no word said. Repetitions count (11 points of 10,000 repetitions are too many, 10 are
// not), and a count past 2^64 does not wrap around (16 axes of 16 values are 2^64 points, which
// a std::size_t product makes 0).
TEST(Sweep, PlanOfMoreRunsThanTheLimitIsRefusedBeforeAnyRunIsMade) {
  static_assert(kMaxSweepRuns == 100'000, "the counts below");
  const std::string kTenOnes = "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1]";  // too many before it is a repeat
  EXPECT_EQ(plan_error_of("repetitions: 10000\nsweep:\n  vms.a.count: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"), "no error");
  EXPECT_EQ(plan_error_of("repetitions: 10000\nsweep:\n  vms.a.count: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"),
            "s.yaml:8:3: sweep: 11 points x 1 column(s) x 10000 repetition(s) = 110000 runs; a sweep has at most "
            "100000 (split it into several files)");
  EXPECT_EQ(plan_error_of("sweep:\n  vms.a.count: " + kTenOnes + "\n  vms.b.count: " + kTenOnes +
                          "\ncolumns:\n  x: {}\n  y: {}\nrepetitions: 501\n"),
            "s.yaml:7:3: sweep: 100 points x 2 column(s) x 501 repetition(s) = 100200 runs; a sweep has at most "
            "100000 (split it into several files)");
  std::string sixteen = "[1";
  for (int i = 1; i < 16; ++i) sixteen += ", 1";
  std::string huge = "sweep:\n";
  for (int i = 0; i < 16; ++i) huge += "  vms.a.workload.x" + std::to_string(i) + ": " + sixteen + "]\n";
  EXPECT_NE(plan_error_of(huge).find("sweep: more than 18446744073709551615 points x 1 column(s) x 1 repetition(s) = "
                                     "more than 18446744073709551615 runs"),
            std::string::npos)
      << plan_error_of(huge);
}

// An unknown key of the base is reported where `vcpusim run` reports it. The runs' copies of the
// base have no lines, and an empty key had no field either: the message named only the file.
TEST(Sweep, UnknownKeyOfTheBaseIsReportedAtItsLineAsARunReportsIt) {
  const std::string text = std::string(kBase) + "\"\": 1\nsweep:\n  vms.a.count: [1, 2]\n";
  std::string run_error = "no error";
  try {
    load_scenario(YamlReader::load_string(text, "s.yaml"));
  } catch (const ConfigError& e) {
    run_error = e.what();
  }
  EXPECT_EQ(run_error.rfind("s.yaml:6:1: ", 0), 0u) << run_error;
  EXPECT_NE(run_error.find("unknown key (allowed here: name, seed,"), std::string::npos) << run_error;
  EXPECT_EQ(sweep_error_of(text), run_error);
  EXPECT_EQ(sweep_error_of(std::string(kBase) + "hots: {smt: on}\nsweep:\n  vms.a.count: [1, 2]\n").rfind("s.yaml:6:1: hots: unknown key", 0), 0u);
}

// `vcpusim run` loads a sample of a file's sweep to check it (every run of a large sweep took
// longer to expand than the base took to run): a small plan's every run; of a larger one, per
// column, points that give each axis each of its values, and the last point.
TEST(Sweep, SampleHasEveryRunOfASmallPlanAndEveryValueOfEveryAxisOfALargeOne) {
  const auto sample = [](const std::string& extra) {
    return expand_sweep_sample(YamlReader::load_string(std::string(kBase) + extra, "s.yaml"));
  };
  const std::string columns = "columns:\n  x: {}\n  y: {guest.hz: 100}\n";
  const SweepPlan small = sample("sweep:\n  vms.a.count: [1, 2, 3]\n  vms.b.count: [1, 2]\n" + columns);
  EXPECT_EQ(small.runs.size(), 12u);
  std::string counts, vcpus;
  for (int i = 0; i < 20; ++i) counts += (i ? ", " : "") + std::to_string(i + 1);
  for (int i = 0; i < 7; ++i) vcpus += (i ? ", " : "") + std::to_string(i + 1);
  static_assert(kSampleEveryRunUpTo < 20 * 7 * 2, "the plan below is sampled");
  const SweepPlan large = sample("sweep:\n  vms.a.count: [" + counts + "]\n  vms.b.vcpus: [" + vcpus + "]\n" + columns);
  EXPECT_EQ(large.runs.size(), 2u * 21u);  // 20 points each giving a count, and the last point (20, 7)
  for (const std::string column : {"x", "y"}) {
    std::set<int> a, b;
    for (const SweepRun& r : large.runs)
      if (r.column == column) {
        a.insert(r.point.at("vms.a.count").get<int>());
        b.insert(r.point.at("vms.b.vcpus").get<int>());
      }
    EXPECT_EQ(a.size(), 20u) << column;
    EXPECT_EQ(b.size(), 7u) << column;
  }
  EXPECT_EQ(large.runs.back().point, (nlohmann::json{{"vms.a.count", 20}, {"vms.b.vcpus", 7}}));
  // What a run of the file checks: a value only the sample's eighth point takes, at its line.
  std::string run_error = "no error";
  try {
    load_scenario(YamlReader::load_string(std::string(kBase) + "sweep:\n  vms.a.count: [" + counts + "]\n  vms.b.vcpus: [" +
                                              vcpus + ", 0]\n" + columns, "s.yaml"));
  } catch (const ConfigError& e) {
    run_error = e.what();
  }
  EXPECT_EQ(run_error, "s.yaml:8:38: vms[1].vcpus: 0 is out of range [1, 4096] (from 'vms.b.vcpus' here, in the sweep's "
                       "run {\"vms.a.count\":8,\"vms.b.vcpus\":0}, column x)");
}

// With --jobs 2 the worker waiting on the writer's lock found the stream already failed by the
// other's write, errno untouched, and threw the same words without "File too large"; whichever
// worker stored its error first was the one the user saw. A later append gives the first failure.
TEST(RecordWriter, EveryAppendAfterAFailedWriteGivesTheFirstFailure) {
  const std::string path = (test::scratch() / "writer-full.jsonl").string();
  std::filesystem::remove(path);
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &before), 0);
  rlimit small = before;
  small.rlim_cur = 4096;  // a full disk after a few records, as `ulimit -f 4` makes it
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string first, second;
  {
    RecordWriter writer(path);
    const nlohmann::json record = {{"column", "c"}, {"point", "p"}, {"repetition", 0}, {"pad", std::string(1000, 'x')}};
    for (int i = 0; i < 10 && first.empty(); ++i) {
      try {
        writer.append(record);
      } catch (const std::runtime_error& e) {
        first = e.what();
      }
    }
    try {
      writer.append(record);
    } catch (const std::runtime_error& e) {
      second = e.what();
    }
  }
  setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, old_handler);
  std::filesystem::remove(path);
  EXPECT_NE(first.find(path + ": writing a record failed: File too large; the records before it are kept"),
            std::string::npos)
      << first;
  EXPECT_EQ(second, first);
}

// Threads a sweep starts work at once, so a warning about starting them (--jobs past the
// system's limit) could print after "12/12 runs done". Progress is held until the pool is
// built: runs counted meanwhile are drawn at the release, after the warning.
TEST(SweepProgress, AWarningDuringTheHoldComesBeforeTheProgressItHeld) {
  std::ostringstream os;
  SweepProgress prog(os, false, 3);
  prog.hold();
  prog.done_one();
  prog.done_one();
  prog.done_one();
  EXPECT_EQ(os.str(), "");
  prog.note("vcpusim: a warning");
  prog.release();
  const std::string out = os.str();
  EXPECT_EQ(out.rfind("vcpusim: a warning\nsweep: 3/3 runs done, ", 0), 0u) << out;
  // Released before the last run, a plain line waits for the usual rhythm (or the last run).
  std::ostringstream os2;
  SweepProgress two(os2, false, 3);
  two.hold();
  two.done_one();
  two.release();
  EXPECT_EQ(os2.str(), "");
  two.done_one();
  two.done_one();
  EXPECT_EQ(os2.str().rfind("sweep: 3/3 runs done, ", 0), 0u) << os2.str();
}

}  // namespace vcpusim::app
