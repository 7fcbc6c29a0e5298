// SPDX-License-Identifier: MIT
// Pins the reproduce summary arithmetic on a hand-made case, and that the shipped
// reproduction loads and names a swept field.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/config_error.h"
#include "app/reproduce.h"
#include "cli_support.h"

namespace vcpusim::app {
namespace {

nlohmann::json rec(const std::string& row, double v, int rep) {
  return {{"scenario", "r"}, {"column", nullptr}, {"point", {{"case", row}}}, {"repetition", rep},
          {"metrics", {{"m", v}}}};
}

// A reproduction of metric m over rows of the field `case` (the records rec() makes), with these
// published cells and, if given, that baseline row; the default tolerance of 10%.
Reproduction of_cases(std::vector<PublishedCell> published, const std::string& baseline_row = "") {
  Reproduction r;
  r.name = "t";
  r.metric = "m";
  r.rows = "case";
  r.baseline_row = baseline_row;
  r.published = std::move(published);
  return r;
}

// A reproduction that loads: bare-metal sysbench cpu beside sysbench memory on one SMT core, two
// rows and two columns. Each error test below changes one thing in it, so its line numbers are
// those of this text (line 1 is `source:`).
const char* kRepro = R"(source: "a test"
metric: bm.cpu.throughput
rows: case
baseline: {row: Alone}
scenario:
  name: t
  duration: 200ms
  topology: one-core-ht
  host: {smt: on, scheduler: {policy: rr}}
  baremetal:
    - {name: cpu, affinity: {hard: 'cpus:[0]'}, workload: {kind: sysbench-cpu, threads: 1}}
    - {name: mem, affinity: {hard: 'cpus:[1]'}, workload: {kind: sysbench-memory, threads: 1}}
  sweep:
    case:
      Alone: {baremetal.mem.count: 0}
      no-tag: {}
  columns:
    HT: {}
    noHT: {host.smt: off, baremetal.mem.affinity.hard: 'cpus:[0]'}
published:
  - {row: Alone, column: HT, value: 1306.90, stddev: 0.94}
  - {row: no-tag, column: HT, value: 852.50, stddev: 4.11}
  - {row: Alone, column: noHT, value: 1306.90}
  - {row: no-tag, column: noHT, value: 649.95}
explain: [bm.cpu.steal_pct]
)";

/// Where the test reproduction `name` is written (the file its errors name).
std::string repro_path(const std::string& name) {
  return (test::scratch() / ("vcpusim-reproduce-test-" + name + ".yaml")).string();
}

/// The ConfigError text loading `name_or_path` with these options gives; "no error" if it loads.
std::string error_loading(const std::string& name_or_path, const std::vector<CommandLineSet>& sets = {},
                          const std::vector<RowOverride>& rows = {}) {
  try {
    load_reproduction(name_or_path, sets, rows);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

/// The ConfigError text of kRepro with `from` replaced by `to`, written as repro_path(name);
/// "no error" if it loads.
std::string load_error(const std::string& name, const std::string& from, const std::string& to) {
  std::string yaml = kRepro;
  const auto at = yaml.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) yaml.replace(at, from.size(), to);
  const std::string path = repro_path(name);
  std::ofstream(path) << yaml;
  const std::string error = error_loading(path);
  std::filesystem::remove(path);
  return error;
}

}  // namespace

// Published: base 100, up 150, down 80. Model: base {100, 100} -> 100; up {140, 140} -> 140;
// down {90, 90} -> 90. diff%: 0, -6.67, +12.5. Tolerance 10%: 2 of 3 within.
// % changes against base: published up +50, down -20; model up +40, down -10: directions agree
// 2/2; MAE = (|40 - 50| + |-10 - -20|) / 2 = 10 points. Mean |diff| = (0 + 6.667 + 12.5) / 3.
TEST(Reproduce, SummaryArithmetic) {
  const Reproduction r = of_cases({{"base", "", "", 100, -1}, {"up", "", "", 150, -1}, {"down", "", "", 80, -1}}, "base");
  const std::vector<nlohmann::json> recs = {rec("base", 100, 0), rec("base", 100, 1), rec("up", 140, 0),
                                            rec("up", 140, 1),   rec("down", 90, 0),  rec("down", 90, 1)};
  const ReproductionResult res = evaluate(r, recs);
  ASSERT_EQ(res.cells.size(), 3u);
  EXPECT_NEAR(res.cells[1].diff_pct, -6.6667, 1e-3);
  EXPECT_NEAR(res.cells[2].diff_pct, 12.5, 1e-9);
  EXPECT_EQ(res.within, 2u);
  EXPECT_EQ(res.direction_total, 2u);
  EXPECT_EQ(res.direction_agree, 2u);
  EXPECT_NEAR(res.mae_pp, 10.0, 1e-9);
  EXPECT_NEAR(res.mean_abs_diff, (0 + 20.0 / 3.0 + 12.5) / 3.0, 1e-9);
  const auto j = reproduction_json(r, res);
  EXPECT_EQ(j["cells"].size(), 3u);
  EXPECT_EQ(j["cells"][2]["within_tolerance"], false);
  EXPECT_EQ(j["summary"]["within_tolerance"], 2);
}

// Without a baseline the summary read "against column  agrees in 0/0".
TEST(Reproduce, SummaryWithoutABaselineSaysThereAreNoChanges) {
  const Reproduction r = of_cases({{"a", "", "", 100, -1}});
  const std::vector<nlohmann::json> recs = {rec("a", 100, 0)};
  std::ostringstream os;
  write_reproduction(os, r, recs, evaluate(r, recs));
  EXPECT_NE(os.str().find("summary: 1/1 cells within 10%; mean |diff| 0.00%; no baseline:, so no % changes"), std::string::npos)
      << os.str();
}

TEST(Reproduce, DisagreeingDirectionIsCounted) {
  const Reproduction r = of_cases({{"base", "", "", 100, -1}, {"up", "", "", 110, -1}}, "base");
  const ReproductionResult res = evaluate(r, {rec("base", 100, 0), rec("up", 95, 0)});
  EXPECT_EQ(res.direction_total, 1u);
  EXPECT_EQ(res.direction_agree, 0u);
  EXPECT_NEAR(res.mae_pp, 15.0, 1e-9);
}

TEST(Reproduce, ExplainAveragesPerVmMetricsOverVmsAndRepetitions) {
  // Two repetitions of one cell, two VMs each: steal 10, 30 and 20, 40 -> mean 25. A group-level
  // key with a deeper path (vm.db.x.steal_pct) and another metric are not counted; a metric no
  // record has is NaN (printed "-", JSON null).
  Reproduction r;
  r.metric = "m";
  r.rows = "case";
  r.baseline_row = "base";
  r.explain = {"steal_pct", "absent"};
  r.published = {{"base", "", "", 100, -1}};
  auto with = [](int rep, double a, double b) {
    nlohmann::json j = rec("base", 100, rep);
    j["metrics"]["vm.db-0.steal_pct"] = a;
    j["metrics"]["vm.db-1.steal_pct"] = b;
    j["metrics"]["vm.db.x.steal_pct"] = 1000.0;
    j["metrics"]["vm.db-0.cpu"] = 7.0;
    return j;
  };
  const ReproductionResult res = evaluate(r, {with(0, 10, 30), with(1, 20, 40)});
  ASSERT_EQ(res.cells.size(), 1u);
  ASSERT_EQ(res.cells[0].explain.size(), 2u);
  EXPECT_DOUBLE_EQ(res.cells[0].explain[0], 25.0);
  EXPECT_TRUE(std::isnan(res.cells[0].explain[1]));
  const auto j = reproduction_json(r, res);
  EXPECT_EQ(j["cells"][0]["explain"]["steal_pct"], 25.0);
  EXPECT_TRUE(j["cells"][0]["explain"]["absent"].is_null());
}

// Two columns against a baseline column (base / patched tables): row r1's published change
// (+50) is above its noise (hypot(10, 10) = 14.1), row r2's (+10) is not (hypot(30, 30) = 42.4).
// The model gets r1's sign right (+20) and r2's wrong (-5): 1 significant change, 1 agreeing.
TEST(Reproduce, PublishedChangesAboveNoiseAndTheModelsSign) {
  auto crec = [](const std::string& row, const std::string& col, double v) {
    return nlohmann::json{{"scenario", "r"}, {"column", col}, {"point", {{"case", row}}}, {"repetition", 0},
                          {"metrics", {{"m", v}}}};
  };
  Reproduction r;
  r.metric = "m";
  r.rows = "case";
  r.baseline_column = "base";
  r.plan.columns = {"base", "patched"};
  r.published = {{"r1", "base", "", 100, 10}, {"r1", "patched", "", 150, 10},
                 {"r2", "base", "", 100, 30}, {"r2", "patched", "", 110, 30}};
  const ReproductionResult res = evaluate(
      r, {crec("r1", "base", 100), crec("r1", "patched", 120), crec("r2", "base", 100), crec("r2", "patched", 95)});
  EXPECT_EQ(column_pairs(r, res).size(), 2u);
  EXPECT_EQ(res.significant, 1u);
  EXPECT_EQ(res.significant_agree, 1u);
}

// A published change above its noise counts as reproduced only when the model's change is above
// the model's own noise too (hypot of its two stddevs, the published side's rule): r1's model
// runs move +2 with stddevs of 10 (no), r2's +30 with the same stddevs (yes).
TEST(Reproduce, AModelChangeWithinItsOwnNoiseDoesNotReproduceAPublishedOne) {
  auto crec = [](const std::string& row, const std::string& col, double v, int rep) {
    return nlohmann::json{{"scenario", "r"},       {"column", col},        {"column_index", col == "base" ? 0 : 1},
                          {"point", {{"case", row}}}, {"point_index", row == "r1" ? 0 : 1},
                          {"repetition", rep},        {"metrics", {{"m", v}}}};
  };
  Reproduction r;
  r.metric = "m";
  r.rows = "case";
  r.baseline_column = "base";
  r.harmonic = false;
  r.plan.columns = {"base", "patched"};
  r.published = {{"r1", "base", "", 100, 10}, {"r1", "patched", "", 150, 10},
                 {"r2", "base", "", 100, 10}, {"r2", "patched", "", 150, 10}};
  std::vector<nlohmann::json> recs;
  for (int i = 0; i < 2; ++i) {
    const double dev = i == 0 ? -10 : 10;  // stddev 14.1 over two runs (n - 1)
    recs.push_back(crec("r1", "base", 100 + dev, i));
    recs.push_back(crec("r1", "patched", 102 + dev, i));
    recs.push_back(crec("r2", "base", 100 + dev, i));
    recs.push_back(crec("r2", "patched", 130 + dev, i));
  }
  const ReproductionResult res = evaluate(r, recs);
  ASSERT_EQ(res.cells.size(), 4u);
  EXPECT_EQ(res.significant, 2u);
  EXPECT_EQ(res.significant_agree, 1u);
  EXPECT_EQ(model_sign(res.cells[0], res.cells[1]), 0);
  EXPECT_EQ(model_sign(res.cells[2], res.cells[3]), 1);
  std::ostringstream os;
  write_reproduction(os, r, recs, res);
  EXPECT_NE(os.str().find("not resolved (model within its noise)"), std::string::npos) << os.str();
}

// A higher-is-better cell of runs {50, 150}: Hmean 75 by default, Amean 100 when the
// publication's "Average" is arithmetic (mean: arithmetic).
TEST(Reproduce, ModelMeanIsThePublicationsStatistic) {
  Reproduction r;
  r.metric = "m";
  r.rows = "case";
  r.baseline_row = "A";
  r.published = {{"A", "", "", 100, -1}};
  const std::vector<nlohmann::json> recs = {rec("A", 50, 0), rec("A", 150, 1)};
  EXPECT_NEAR(evaluate(r, recs).cells[0].model, 75.0, 1e-9);
  r.harmonic = false;
  EXPECT_NEAR(evaluate(r, recs).cells[0].model, 100.0, 1e-9);
}

TEST(Reproduce, UnknownMeanIsAConfigErrorAtItsLine) {
  const Reproduction shipped = load_reproduction("coresched-sysbench", {});
  std::ifstream in(shipped.file);
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  const std::string from = "mean: arithmetic";
  ASSERT_NE(yaml.find(from), std::string::npos);
  yaml.replace(yaml.find(from), from.size(), "mean: geometric");
  const auto path = test::scratch() / "reproduce-bad-mean.yaml";
  std::ofstream(path) << yaml;
  try {
    load_reproduction(path.string(), {});
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "mean");
    EXPECT_GT(e.line(), 0);
    EXPECT_NE(std::string(e.what()).find("geometric"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(Reproduce, TheTestReproductionLoads) {
  EXPECT_EQ(load_error("good", "", ""), "no error");
}

// The model is set beside a published figure as a % difference from it: a 0 was reported as a
// perfect match ("+0.00%, within yes"), and the throughputs and times published are positive.
TEST(Reproduce, PublishedValueThatIsNotPositiveIsAnError) {
  EXPECT_EQ(load_error("zero", "value: 852.50", "value: 0"),
            repro_path("zero") + ":22:38: published[1].value: expected a positive figure "
                                 "(the model's difference is a percentage of it), got 0");
  EXPECT_EQ(load_error("neg", "value: 852.50", "value: -1"),
            repro_path("neg") + ":22:38: published[1].value: expected a positive figure "
                                "(the model's difference is a percentage of it), got -1");
  EXPECT_EQ(load_error("inf", "value: 852.50", "value: .inf"),
            repro_path("inf") + ":22:38: published[1].value: expected a number, got '.inf'");
  // Positive but subnormal: the difference was +inf%.
  EXPECT_EQ(load_error("tiny", "value: 852.50", "value: 1e-320"),
            repro_path("tiny") + ":22:38: published[1].value: expected a positive figure "
                                 "(the model's difference is a percentage of it), got 1e-320");
}

// The scenario's copy has no lines, so its shape is checked where it is written.
TEST(Reproduce, ScenarioThatIsNotAMappingIsAnErrorAtItsLine) {
  const std::string path = repro_path("scen-list");
  std::ofstream(path) << "source: a test\nmetric: bm.cpu.throughput\nrows: case\nscenario:\n  - name: t\n"
                         "published:\n  - {row: Alone, value: 1}\n";
  EXPECT_EQ(error_loading(path), path + ":5:3: scenario: expected a mapping");
}

// The error of loading coresched-sysbench with one --row-set on its `Alone` row.
std::string error_of_row_set(const std::string& path, const std::string& value) {
  return error_loading("coresched-sysbench", {}, {RowOverride{"Alone", path, value}});
}

// A --row-set goes through the --set checks, among its row's runs only; `only` and `columns`
// are the entry's reserved keys. Each was dropped or misread with exit 0.
TEST(Reproduce, RowSetThatItsRowNeverKeepsOrThatNamesAReservedKeyIsAnError) {
  // Every column sets the cookies, so the row's value would be overwritten: said of the option
  // (the sweep's own check blamed the file's column line), naming the first such column.
  EXPECT_EQ(error_of_row_set("baremetal.cpu.cookie", "1"),
            "<command line>: --row-set 'Alone' baremetal.cpu.cookie: column 'no-tag' sets 'baremetal.cpu.cookie' in its "
            "runs, which would overwrite this row's value; change the column instead");
  EXPECT_NE(error_of_row_set("baremetal.cpu.cookie.x", "1").find("column 'no-tag' sets 'baremetal.cpu.cookie'"),
            std::string::npos);
  EXPECT_EQ(error_of_row_set("only", "{case: [nosmt]}"),
            "<command line>: --row-set 'Alone' only: 'only' is a sweep entry's reserved key, not a path into the scenario");
  EXPECT_EQ(error_of_row_set("baremetal..count", "1"),
            "<command line>: --row-set 'Alone': 'baremetal..count' is not a dotted path such as vms.db.count");
  EXPECT_EQ(error_of_row_set("guest.hz", "1000"), "no error");
  // The second replaced the first, which was then reported as a field the sweep sets everywhere.
  EXPECT_EQ(error_loading("coresched-sysbench", {},
                          {RowOverride{"Alone", "guest.hz", "1000"}, RowOverride{"Alone", "guest.hz", "250"}}),
            "<command line>: --row-set 'Alone' guest.hz: given twice for this row; give it once");
}

// A --row-set of seed, repetitions, sweep or columns is no setting of a run: the sweep's own
// check refused it, but named the reproduction's file (no line, a field under its sweep entry),
// as if the published file were wrong.
TEST(Reproduce, RowSetOfWhatNoRunReadsIsBlamedOnTheOption) {
  EXPECT_EQ(error_of_row_set("repetitions", "3"),
            "<command line>: --row-set 'Alone' repetitions: 'repetitions' is not a setting of a run: every point runs "
            "the file's repetitions");
  EXPECT_EQ(error_of_row_set("seed", "5"),
            "<command line>: --row-set 'Alone' seed: 'seed' is not a setting of a run: each run's seed is derived from "
            "the file's seed and the run's point");
  EXPECT_EQ(error_of_row_set("sweep.case", "{}"),
            "<command line>: --row-set 'Alone' sweep.case: 'sweep.case' is not a setting of a run: sweep: and columns: "
            "are read once, to make the runs");
  EXPECT_EQ(error_of_row_set("columns", "{}"),
            "<command line>: --row-set 'Alone' columns: 'columns' is a sweep entry's reserved key, not a path into the "
            "scenario");
}

// The sweep reads a reproduction's scenario as its field `scenario`, so what its own checks find
// is named under "scenario.", where a --set's path starts inside the scenario: a top-level key
// made by --set foo=1 or --set sweep.x=[1], a --set name= or --set columns={}, and a --row-set
// foo=1 were each blamed on the reproduction's file (scenario.foo, no line), as if the published
// file were wrong.
TEST(Reproduce, SetOrRowSetThatTheSweepsOwnChecksRefuseIsBlamedOnTheOption) {
  const auto error_of_set = [](const std::string& set) {
    return error_loading("coresched-sysbench", parse_command_line_sets("--set", {set}));
  };
  const std::string keys =
      "unknown key (allowed here: name, seed, duration, warmup, repetitions, topology, host, guest, vms, baremetal, "
      "sweep, columns)";
  EXPECT_EQ(error_of_set("foo=1"), "<command line>: --set foo: " + keys);
  EXPECT_EQ(error_of_set("name="), "<command line>: --set name: expected a string");
  EXPECT_EQ(error_of_set("columns={}"), "<command line>: --set columns: columns: at least one column");
  EXPECT_EQ(error_of_set("sweep.x=[1]"), "<command line>: --set sweep.x: " + keys +
                                             " (from 'x', in the sweep's run {\"case\":\"Alone\",\"x\":1}, column "
                                             "no-tag) (at sweep.x[0])");
  EXPECT_EQ(error_of_row_set("foo", "1"),
            "<command line>: --row-set 'Alone' foo: " + keys + " (from 'foo', in the sweep's run {\"case\":\"Alone\"}, "
            "column no-tag)");
}

// Rows swept as {values: [...], paths: [...]} are values: --row-set offered `values` and
// `paths` as the rows, and --row-set values ... broke the sweep with no line.
TEST(Reproduce, RowSetOnRowsOfAValuesAndPathsAxisIsRefusedAsOnValues) {
  std::string yaml = kRepro;
  const std::string labelled = "    case:\n      Alone: {baremetal.mem.count: 0}\n      no-tag: {}\n";
  yaml.replace(yaml.find(labelled), labelled.size(), "    case:\n      values: [0, 1]\n      paths: [baremetal.mem.count]\n");
  for (const auto& [from, to] : {std::pair{"row: Alone", "row: '0'"}, {"row: no-tag", "row: '1'"}})
    for (std::size_t at; (at = yaml.find(from)) != std::string::npos;) yaml.replace(at, std::string(from).size(), to);
  const std::string path = repro_path("values-rows");
  std::ofstream(path) << yaml;
  ASSERT_EQ(error_loading(path), "no error");
  for (const char* row : {"0", "values"})
    EXPECT_EQ(error_loading(path, {}, {RowOverride{row, "guest.hz", "1000"}}),
              "<command line>: --row-set: the rows of vcpusim-reproduce-test-values-rows ('case') are values, not "
              "entries that can take a key; use --set")
        << row;
  std::filesystem::remove(path);
}

// A --set whose field the sweep sets in every run was dropped unread (exit 0).
TEST(Reproduce, SetThatEverySweepPointOverridesIsAnError) {
  EXPECT_EQ(error_loading("credit2-affinity", parse_command_line_sets("--set", {"vms.db.count=3"})),
            "<command line>: --set vms.db.count: the sweep or a column sets this field in every run, so this "
            "value would never be used; change the sweep instead");
  EXPECT_NO_THROW(load_reproduction("credit2-affinity", parse_command_line_sets("--set", {"vms.db.vcpus=2"})));
}

TEST(Reproduce, PublishedStddevThatIsNegativeOrNotFiniteIsAnError) {
  EXPECT_EQ(load_error("sd-neg", "stddev: 4.11", "stddev: -4.11"),
            repro_path("sd-neg") + ":22:54: published[1].stddev: -4.11 is out of range [0, 1e+15]");
  EXPECT_EQ(load_error("sd-nan", "stddev: 4.11", "stddev: .nan"),
            repro_path("sd-nan") + ":22:54: published[1].stddev: expected a number, got '.nan'");
}

// With no published cell, the whole sweep ran to compare nothing ("summary: 0/0 cells within
// 5%", status 0).
TEST(Reproduce, NoPublishedCellIsAnError) {
  const std::string cells = kRepro;
  const auto from = cells.find("published:\n"), to = cells.find("explain:");
  ASSERT_NE(from, std::string::npos);
  EXPECT_EQ(load_error("no-cells", cells.substr(from, to - from), "published: []\n"),
            repro_path("no-cells") + ":20:12: published: no published cells: a reproduction compares at least one");
}

// A cell given twice was judged twice: counted twice in the summary, and ordered against itself.
TEST(Reproduce, PublishedCellGivenTwiceIsAnError) {
  EXPECT_EQ(load_error("twice", "{row: no-tag, column: noHT, value: 649.95}", "{row: Alone, column: HT, value: 1300}"),
            repro_path("twice") + ":24:5: published[3]: the cell of row 'Alone', column 'HT' is given twice (first at "
                                  "published[0])");
  EXPECT_EQ(load_error("twice-other-column", "{row: no-tag, column: noHT, value: 649.95}", "{row: Alone, column: noHT, value: 1}"),
            repro_path("twice-other-column") + ":24:5: published[3]: the cell of row 'Alone', column 'noHT' is given "
                                               "twice (first at published[2])");
}

// A published cell's row and column are names the sweep must make: a cell naming neither is
// never run, and was shown as "no data" with status 0.
TEST(Reproduce, PublishedRowThatNoSweepPointMakesIsAnError) {
  EXPECT_EQ(load_error("row", "{row: no-tag, column: HT", "{row: nosmt, column: HT"),
            repro_path("row") + ":22:11: published[1].row: 'nosmt' is not a row of the sweep field 'case' "
                                "(rows: Alone, no-tag)");
}

TEST(Reproduce, PublishedColumnThatTheScenarioHasNotIsAnError) {
  EXPECT_EQ(load_error("col", "no-tag, column: HT", "no-tag, column: HTT"),
            repro_path("col") + ":22:27: published[1].column: 'HTT' is not a column of the scenario "
                                "(columns: HT, noHT)");
  EXPECT_EQ(load_error("no-col", "{row: no-tag, column: HT, value", "{row: no-tag, value"),
            repro_path("no-col") + ":22:5: published[1]: the scenario has columns (HT, noHT): name the cell's column");
}

// The % changes are against the baseline: a row or column that does not exist left them empty.
TEST(Reproduce, BaselineRowThatIsNoPublishedRowIsAnError) {
  EXPECT_EQ(load_error("base-row", "baseline: {row: Alone}", "baseline: {row: Alnoe}"),
            repro_path("base-row") + ":4:17: baseline.row: 'Alnoe' is not a published row (rows: Alone, no-tag)");
}

// Checked when the file is loaded, at its line: it was found only after the whole sweep ran, by
// the compare code, which blamed a `--baseline` option nobody had given.
TEST(Reproduce, BaselineColumnThatTheScenarioHasNotIsAnError) {
  EXPECT_EQ(load_error("base-col", "baseline: {row: Alone}", "baseline: {column: HTT}"),
            repro_path("base-col") + ":4:20: baseline.column: 'HTT' is not a column of the scenario (columns: HT, noHT)");
}

TEST(Reproduce, BaselineNamesEitherARowOrAColumn) {
  EXPECT_EQ(load_error("base-both", "baseline: {row: Alone}", "baseline: {row: Alone, column: HT}"),
            repro_path("base-both") + ":4:11: baseline: give either row: or column: (the % changes are against one of them)");
  EXPECT_EQ(load_error("base-none", "baseline: {row: Alone}", "baseline: {}"),
            repro_path("base-none") + ":4:11: baseline: give either row: or column: (the % changes are against one of them)");
}

// Checked when the file is loaded, against the names its runs give, at its line: it was found
// only after the whole sweep ran, by the compare code, which blamed a `--metric` option nobody
// had given.
TEST(Reproduce, MetricThatNoRunGivesIsAnError) {
  EXPECT_EQ(load_error("metric", "metric: bm.cpu.throughput", "metric: bm.cpu.throughptu"),
            repro_path("metric") + ":2:9: metric: no run of the scenario gives metric 'bm.cpu.throughptu' (under "
                                   "bm.cpu the runs give: bm.cpu.blocked_pct, bm.cpu.cpu, bm.cpu.migrations_per_s, "
                                   "bm.cpu.remote_memory, bm.cpu.smt_shared_pct, bm.cpu.steal_pct, "
                                   "bm.cpu.switches_per_s, bm.cpu.throughput)");
}

// A published cell whose own runs never give the metric (here the Alone row switches off the
// group it names) was shown as "no data", counted as a 0% difference, and exited 0.
TEST(Reproduce, PublishedCellWhoseRunsLackTheMetricIsAnError) {
  EXPECT_EQ(load_error("cell-metric", "metric: bm.cpu.throughput", "metric: bm.mem.throughput"),
            repro_path("cell-metric") + ":21:5: published[0]: the runs of row 'Alone' column 'HT' give no metric "
                                        "'bm.mem.throughput' (another row's runs do): this cell would have no model value");
}

// Records read --from an unfinished sweep leave cells without data: they are left out of the
// mean |diff| (they counted as 0%) and counted.
TEST(Reproduce, CellsWithoutDataAreLeftOutOfTheMeanDifference) {
  const Reproduction r = of_cases({{"base", "", "", 100, -1}, {"up", "", "", 150, -1}});
  const ReproductionResult res = evaluate(r, {rec("up", 120, 0)});
  EXPECT_EQ(res.without_data, 1u);
  EXPECT_NEAR(res.mean_abs_diff, 20.0, 1e-9);
  EXPECT_EQ(reproduction_json(r, res)["summary"]["cells_without_data"], 1);
}

// Accepted until now: an empty source, a figure printed as 309 digits, an empty explain table
// and an explain column printed twice.
TEST(Reproduce, EmptySourceHugeFigureAndEmptyOrRepeatedExplainAreErrors) {
  EXPECT_EQ(load_error("src", "source: \"a test\"", "source: \"\""),
            repro_path("src") + ":1:9: source: is empty: name the publication the cells come from (a mail, a paper, a commit)");
  EXPECT_EQ(load_error("huge", "value: 852.50", "value: 1e308"),
            repro_path("huge") + ":22:38: published[1].value: 1e308 is larger than any published figure this compares (at "
                                 "most 1e15)");
  EXPECT_EQ(load_error("ex-empty", "explain: [bm.cpu.steal_pct]", "explain: []"),
            repro_path("ex-empty") + ":25:10: explain: an empty list: name at least one metric (or leave explain: out)");
  EXPECT_EQ(load_error("ex-twice", "explain: [bm.cpu.steal_pct]", "explain: [bm.cpu.steal_pct, bm.cpu.steal_pct]"),
            repro_path("ex-twice") + ":25:29: explain[1]: 'bm.cpu.steal_pct' is given twice");
}

// A published stddev had no bound but a double's: 1e300 was printed beside its cell as a number
// of 301 digits. It is bounded as the value is.
TEST(Reproduce, AStddevLargerThanAnyPublishedFigureIsAnError) {
  EXPECT_EQ(load_error("huge-sd", "stddev: 4.11", "stddev: 1e300"),
            repro_path("huge-sd") + ":22:54: published[1].stddev: 1e300 is out of range [0, 1e+15]");
}

// An explain: name no run gives was printed as a column of "-" with status 0. A bare name is a
// per-VM metric (vm.VM.NAME), which a scenario of bare-metal domains has none of.
TEST(Reproduce, ExplainMetricThatNoRunGivesIsAnError) {
  EXPECT_EQ(load_error("explain", "explain: [bm.cpu.steal_pct]", "explain: [bm.cpu.steal_pct, vm.nosuch.metric]"),
            repro_path("explain") + ":25:29: explain[1]: no run of the scenario gives metric 'vm.nosuch.metric' "
                                    "(the runs give: bm.cpu.blocked_pct, bm.cpu.cpu, bm.cpu.migrations_per_s, "
                                    "bm.cpu.remote_memory, bm.cpu.smt_shared_pct, bm.cpu.steal_pct, "
                                    "bm.cpu.switches_per_s, bm.cpu.throughput, bm.mem.blocked_pct, bm.mem.cpu, "
                                    "bm.mem.migrations_per_s, bm.mem.remote_memory, "
                                    "bm.mem.smt_shared_pct, bm.mem.steal_pct, bm.mem.switches_per_s, "
                                    "bm.mem.throughput, events, events_stale, host_utilisation)");
  EXPECT_EQ(load_error("explain-bare", "explain: [bm.cpu.steal_pct]", "explain: [steal_pct]"),
            repro_path("explain-bare") + ":25:11: explain[0]: no run of the scenario has a VM, so no per-VM "
                                         "metric 'steal_pct' (a bare name stands for vm.VM.steal_pct): name a "
                                         "record metric in full");
}

// `--row X --row X` was taken silently, as if X were given once; a --set given twice is refused.
TEST(Reproduce, ARowGivenTwiceIsAnError) {
  const auto error_selecting = [](const std::vector<std::string>& rows) {
    Reproduction r = load_reproduction("smt-corun-sysbench", {});
    try {
      select_rows(r, rows);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_selecting({"nosmt", "nosmt"}), "<command line>: --row 'nosmt': given twice");
  EXPECT_EQ(error_selecting({"nosmt", "Alone", "nosmt"}), "<command line>: --row 'nosmt': given twice");
  // The baseline row is kept anyway, but naming it twice is still naming it twice.
  EXPECT_EQ(error_selecting({"Alone", "Alone"}), "<command line>: --row 'Alone': given twice");
  EXPECT_EQ(error_selecting({"nosmt", "Alone"}), "no error");
}

TEST(Reproduce, ShippedReproductionsLoad) {
  const auto names = list_reproductions();
  ASSERT_FALSE(names.empty());
  for (const auto& n : names) {
    const Reproduction r = load_reproduction(n, {});
    EXPECT_FALSE(r.source.empty()) << n;
    EXPECT_FALSE(r.published.empty()) << n;
    EXPECT_FALSE(r.plan.runs.empty()) << n;
  }
}

// Ordering within a column. Published (stddev): A 100 (1), B 90 (1), C 89.5 (1), D 50 (-).
// Pairs resolved beyond both stddevs: A-B, A-C, A-D, B-D, C-D (B-C's gap 0.5 is within 2).
// Model: A 100, B 80, C 95, D 50: A-B, A-C, A-D, B-D, C-D all in published order -> 5/5;
// then C's model tied with D (50): C-D disagrees -> 4/5; and a model gap within the model's own
// stddevs is a tie too.
TEST(Reproduce, RowOrderingWithinAColumnSkipsPairsWithinTheStddevs) {
  Reproduction r;
  r.metric = "m";
  r.rows = "case";
  r.baseline_row = "A";
  r.published = {{"A", "", "", 100, 1}, {"B", "", "", 90, 1}, {"C", "", "", 89.5, 1}, {"D", "", "", 50, -1}};
  ReproductionResult res = evaluate(r, {rec("A", 100, 0), rec("B", 80, 0), rec("C", 95, 0), rec("D", 50, 0)});
  EXPECT_EQ(res.order_total, 5u);
  EXPECT_EQ(res.order_agree, 5u);
  res = evaluate(r, {rec("A", 100, 0), rec("B", 80, 0), rec("C", 50, 0), rec("D", 50, 0)});
  EXPECT_EQ(res.order_total, 5u);
  EXPECT_EQ(res.order_agree, 4u);
  // B's two runs, 95 and 105 (stddev 7.07), put it within the model's spread of A (100): a tie.
  res = evaluate(r, {rec("A", 100, 0), rec("B", 95, 0), rec("B", 105, 1), rec("C", 95, 0), rec("D", 50, 0)});
  EXPECT_EQ(res.order_total, 5u);
  EXPECT_EQ(res.order_agree, 4u);
}

}  // namespace vcpusim::app
