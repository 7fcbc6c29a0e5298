// SPDX-License-Identifier: MIT
// Pins the compare table: mmtests' pdiff/pndiff with their edge cases, the two significance
// rules on cases worked by hand, and the rendered text table against a golden file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "app/compare.h"
#include "app/config_error.h"
#include "app/plot.h"
#include "app/statistics.h"
#include "app/text.h"

namespace vcpusim::app {
namespace {

nlohmann::json record(const std::string& col, int col_index, int op, double v, int rep) {
  return {{"scenario", "golden"}, {"column", col}, {"column_index", col_index}, {"point", {{"vms.x.count", op}}},
          {"point_index", op}, {"repetition", rep}, {"metrics", {{"vm.x.throughput", v}}}};
}

// Column A at op 1: {100, 200, 400}; column B at op 1: {200, 200, 200};
// op 2: A {10, 12, 14}, B {16, 18, 20}.
std::vector<nlohmann::json> golden_records() {
  std::vector<nlohmann::json> r;
  const double a1[] = {100, 200, 400}, b1[] = {200, 200, 200}, a2[] = {10, 12, 14}, b2[] = {16, 18, 20};
  for (int i = 0; i < 3; ++i) {
    r.push_back(record("base-A", 0, 1, a1[i], i));
    r.push_back(record("new-B", 1, 1, b1[i], i));
    r.push_back(record("base-A", 0, 2, a2[i], i));
    r.push_back(record("new-B", 1, 2, b2[i], i));
  }
  return r;
}

std::string golden_path(const std::string& name) {
  const char* root = std::getenv("VCPUSIM_SOURCE_ROOT");
  return std::string(root ? root : ".") + "/tests/app/golden/" + name;
}

}  // namespace

TEST(Compare, PercentDifferencesFollowMmtests) {
  EXPECT_NEAR(pdiff(131084.79, 149695.40), -12.43, 0.005);  // the reference note's example
  EXPECT_DOUBLE_EQ(pdiff(5, 5), 0);
  EXPECT_DOUBLE_EQ(pdiff(0, 5), 0);
  EXPECT_DOUBLE_EQ(pdiff(5, 0), 100);
  EXPECT_DOUBLE_EQ(pndiff(8, 10), 20);  // lower is better: 20% less is +20%
  EXPECT_DOUBLE_EQ(pndiff(0, 10), 100);
  EXPECT_DOUBLE_EQ(pndiff(10, 0), -99);
  EXPECT_DOUBLE_EQ(pndiff(3, 3), 0);
}

// Worked by hand, lower-is-better (Amean): base {10, 12, 14}: mean 12, sd 2; new {16, 18, 20}:
// mean 18, sd 2. t = 6 / sqrt(4/3 + 4/3) = 3.6742, df = 4, two-sided p = 0.02131 (numerical
// integration of the t density) < 0.10: significant. Interval rule: |18 - 12| = 6 <
// 1.96 x (2 + 2) = 7.84: not significant.
TEST(Compare, TTestAndIntervalRulesOnAWorkedCase) {
  EXPECT_NEAR(student_t_two_sided_p(6.0 / std::sqrt(8.0 / 3.0), 4), 0.021312, 1e-5);
  EXPECT_TRUE(significant({10, 12, 14}, {16, 18, 20}, false, SignificanceRule::kTTest));
  EXPECT_FALSE(significant({10, 12, 14}, {16, 18, 20}, false, SignificanceRule::kInterval));
  // Both spreads zero: any difference is significant under the t-test rule (mmtests).
  EXPECT_TRUE(significant({5, 5}, {6, 6}, true, SignificanceRule::kTTest));
  EXPECT_FALSE(significant({5, 5}, {5, 5}, true, SignificanceRule::kTTest));
}

TEST(Compare, StudentTMatchesTableQuantiles) {
  // Two-sided 5% and 10% points from the t table.
  EXPECT_NEAR(student_t_two_sided_p(2.776, 4), 0.05, 1e-4);
  EXPECT_NEAR(student_t_two_sided_p(2.132, 4), 0.10, 1e-4);
  EXPECT_NEAR(student_t_two_sided_p(1.96, 1e6), 0.05, 1e-4);
}

TEST(Compare, BestMeansAndHarmonicSpread) {
  // BHmean-50 of {100, 200, 400}: k = max(1, int(3*0.5)) = 1: the best sample, 400.
  EXPECT_DOUBLE_EQ(best_mean({100, 200, 400}, 50, true), 400);
  // BHmean-95: k = int(2.85) = 2: Hmean of {400, 200} = 2 / (1/400 + 1/200) = 266.67.
  EXPECT_NEAR(best_mean({100, 200, 400}, 95, true), 800.0 / 3.0, 1e-9);
  // HStddev of {100, 200, 400}: H = 171.4286, 1/H = 0.0058333; sum((1/x - 1/H)^2) =
  // 1.7361e-5 + 6.944e-7 + 1.1111e-5 = 2.9167e-5; sqrt(2.9167e-5 / 3) = 3.1180e-3;
  // H^2 = 29387.76; HStddev = 29387.76 x 3.1180e-3 = 91.63.
  EXPECT_NEAR(harmonic_stddev({100, 200, 400}), 91.63, 0.01);
}

TEST(Compare, GroupsByColumnAndOperationWithTheBaselineFirst) {
  CompareOptions o;
  o.baseline = "new-B";
  const Grouped g = group_records(golden_records(), o);
  EXPECT_EQ(g.metric, "vm.x.throughput");
  EXPECT_EQ(g.by, "vms.x.count");
  EXPECT_EQ(g.columns, (std::vector<std::string>{"new-B", "base-A"}));
  EXPECT_EQ(g.ops, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(g.samples.at({"base-A", "1"}).size(), 3u);
}

// Values that differ past %g's six digits are two points: they were one row, their samples
// pooled (a stddev made of two settings). 2.0 and 2 print alike, as the sweep takes them.
TEST(Compare, FloatValuesThatDifferInTheSeventhDigitAreTwoRows) {
  std::vector<nlohmann::json> r;
  const double values[] = {0.1234561, 0.1234562};
  for (int op = 0; op < 2; ++op)
    for (int rep = 0; rep < 2; ++rep)
      r.push_back({{"scenario", "floats"}, {"column", nullptr}, {"column_index", 0}, {"point", {{"x.cv", values[op]}}},
                   {"point_index", op}, {"repetition", rep}, {"metrics", {{"vm.x.throughput", 100.0 * (op + 1)}}}});
  const Grouped g = group_records(r, CompareOptions{});
  EXPECT_EQ(g.ops, (std::vector<std::string>{"0.1234561", "0.1234562"}));
  EXPECT_EQ(g.samples.at({"", "0.1234561"}), (std::vector<double>{100, 100}));
  EXPECT_EQ(value_label(nlohmann::json(2.0)), "2");
  EXPECT_EQ(value_label(nlohmann::json(2.5e-9)), "2.5e-09");
}

TEST(Compare, UnknownNamesAreConfigErrors) {
  CompareOptions o;
  o.baseline = "nope";
  EXPECT_THROW(group_records(golden_records(), o), ConfigError);
  o.baseline = "";
  o.metric = "vm.y.throughput";
  EXPECT_THROW(group_records(golden_records(), o), ConfigError);
}

// A sweep without columns: --baseline said "no column 'x' (have: )", naming nothing.
TEST(Compare, ABaselineOnRecordsWithoutColumnsSaysTheyHaveNone) {
  std::vector<nlohmann::json> recs;
  for (int rep = 0; rep < 2; ++rep) {
    nlohmann::json r = record("", 0, 1, 10.0 + rep, rep);
    r["column"] = nullptr;
    recs.push_back(r);
  }
  CompareOptions o;
  EXPECT_NO_THROW(group_records(recs, o));
  o.baseline = "base-A";
  try {
    group_records(recs, o);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "--baseline");
    EXPECT_NE(std::string(e.what()).find("the records have no columns"), std::string::npos) << e.what();
  }
}

// Hmean is defined for positive samples only: a cell with a 0 sample shows Hmean 0, and every
// format says so, naming the cell; lower-is-better (Amean) needs no note.
TEST(Compare, AnHmeanOverANonPositiveSampleIsNotedNamingItsCell) {
  std::vector<nlohmann::json> recs = golden_records();
  recs.push_back(record("new-B", 1, 2, 0.0, 3));
  CompareOptions o;
  const Grouped g = group_records(recs, o);
  ASSERT_EQ(nonpositive_cells(g, o), std::vector<std::string>{"2 / new-B"});
  for (const char* fmt : {"text", "json", "markdown"}) {
    o.format = fmt;
    std::ostringstream os;
    write_compare(os, g, compare_cells(g, o), o);
    EXPECT_NE(os.str().find("positive samples only"), std::string::npos) << fmt;
    EXPECT_NE(os.str().find("2 / new-B"), std::string::npos) << fmt;
  }
  o.format = "text";
  std::ostringstream clean;
  const Grouped pos = group_records(golden_records(), o);
  write_compare(clean, pos, compare_cells(pos, o), o);
  EXPECT_EQ(clean.str().find("positive samples only"), std::string::npos);
  o.higher_is_better = false;
  EXPECT_TRUE(nonpositive_cells(g, o).empty());
}

// A cell whose baseline column has no sample at its operation has nothing to be compared with:
// it showed ( 0.00%), read as "no change". It shows no percentage (blank in text and markdown,
// an empty field in CSV, null in JSON), and every format notes the cells, naming them; a cell
// whose baseline has samples keeps its percentage.
TEST(Compare, ACellWhoseBaselineHasNoSampleHasNoPercentageAndIsNoted) {
  std::vector<nlohmann::json> recs;
  for (const nlohmann::json& r : golden_records())
    if (!(r.at("column") == "base-A" && r.at("point_index") == 2)) recs.push_back(r);  // base-A has no op 2
  CompareOptions o;
  const Grouped g = group_records(recs, o);
  const auto cells = compare_cells(g, o);
  auto lines_of = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  };
  const std::string note = "no sample at these cells' operations, so they have no percentage: 2 / new-B";

  o.format = "text";
  std::ostringstream text;
  write_compare(text, g, cells, o);
  int op2_rows = 0;
  for (const std::string& l : lines_of(text.str())) {
    std::istringstream words(l);
    std::string stat, op;
    words >> stat >> op;
    if (stat.empty() || stat.front() == '#' || op != "2") continue;
    ++op2_rows;
    EXPECT_EQ(l.find('%'), std::string::npos) << l;
  }
  EXPECT_EQ(op2_rows, 8) << text.str();  // Min, Hmean, Stddev, CoeffVar, Max, BHmean-50/95/99
  EXPECT_NE(text.str().find("(  16.67%)"), std::string::npos) << text.str();  // op 1 keeps its percentages
  EXPECT_NE(text.str().find("# note: the baseline base-A has " + note), std::string::npos) << text.str();

  o.format = "markdown";
  std::ostringstream md;
  write_compare(md, g, cells, o);
  EXPECT_NE(md.str().find("| Hmean | 2 | - | 17.85 |\n"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("Note: the baseline base-A has " + note), std::string::npos) << md.str();

  o.format = "csv";
  std::ostringstream csv;
  testing::internal::CaptureStderr();
  write_compare(csv, g, cells, o);
  const std::string csv_err = testing::internal::GetCapturedStderr();
  EXPECT_NE(csv.str().find("\nHmean,2,new-B,17.8512,,0\n"), std::string::npos) << csv.str();
  EXPECT_NE(csv.str().find("\nHmean,1,new-B,200,16.6667,0\n"), std::string::npos) << csv.str();
  EXPECT_NE(csv_err.find("vcpusim compare: note: the baseline base-A has " + note), std::string::npos) << csv_err;

  o.format = "json";
  std::ostringstream js;
  write_compare(js, g, cells, o);
  const nlohmann::json j = nlohmann::json::parse(js.str());
  int op2_cells = 0;
  for (const auto& c : j.at("cells")) {
    if (c.at("op") == "2") {
      ++op2_cells;
      EXPECT_TRUE(c.at("pct").is_null()) << c.dump();
    } else {
      EXPECT_TRUE(c.at("pct").is_number()) << c.dump();
    }
  }
  EXPECT_EQ(op2_cells, 8);
  EXPECT_NE(j.at("note").get<std::string>().find(note), std::string::npos) << j.dump();
}

// A record without the compared metric (a per-VM metric exists only at points with that VM) was
// left out of its cell with nothing said: the table ends with a note counting them by cell.
TEST(Compare, RecordsWithoutTheMetricAreCountedInANoteByCell) {
  std::vector<nlohmann::json> recs = golden_records();
  for (auto& r : recs)
    if ((r.at("column") == "base-A" && r.at("point_index") == 1 && r.at("repetition") == 0) ||
        (r.at("column") == "new-B" && r.at("point_index") == 2 && r.at("repetition") != 2))
      r["metrics"] = {{"vm.y.throughput", 1.0}};
  CompareOptions o;
  o.metric = "vm.x.throughput";
  const Grouped g = group_records(recs, o);
  const std::string note = "3 record(s) have no metric 'vm.x.throughput' and are left out: 1 / base-A (1), 2 / new-B (2)";
  o.format = "text";
  std::ostringstream text;
  write_compare(text, g, compare_cells(g, o), o);
  EXPECT_NE(text.str().find("# note: " + note + "\n"), std::string::npos) << text.str();
  o.format = "json";
  std::ostringstream js;
  write_compare(js, g, compare_cells(g, o), o);
  EXPECT_NE(nlohmann::json::parse(js.str()).at("note").get<std::string>().find(note), std::string::npos) << js.str();
  std::ostringstream clean;
  const Grouped all = group_records(golden_records(), o);
  write_compare(clean, all, compare_cells(all, o), o);
  EXPECT_EQ(clean.str().find("left out"), std::string::npos) << clean.str();
}

// An operation where every record lacks the compared metric (a per-VM metric at a point without
// that VM) had no row at all, which read as a point that was not run. Its rows are shown with
// empty cells, as a cell without a sample is ("-" in text and markdown, an empty value in CSV,
// null in JSON), in operation order, and the note still counts its records.
TEST(Compare, AnOperationWhoseRecordsAllLackTheMetricKeepsItsRowsWithEmptyCells) {
  std::vector<nlohmann::json> recs = golden_records();
  for (auto& r : recs)
    if (r.at("point_index") == 1) r["metrics"] = {{"vm.y.throughput", 1.0}};
  CompareOptions o;
  o.metric = "vm.x.throughput";
  const Grouped g = group_records(recs, o);
  const std::string note = "6 record(s) have no metric 'vm.x.throughput' and are left out: 1 / base-A (3), 1 / new-B (3)";
  auto render = [&](const char* format) {
    o.format = format;
    std::ostringstream os;
    write_compare(os, g, compare_cells(g, o), o);
    return os.str();
  };
  const std::string text = render("text");
  const std::string empty = std::string(11, ' ') + "-" + std::string(11, ' ');  // a "-" value, no percentage
  EXPECT_NE(text.find("Hmean     1  " + empty + " " + empty + "\nHmean     2 "), std::string::npos) << text;
  EXPECT_NE(text.find("# note: " + note + "\n"), std::string::npos) << text;
  const std::string md = render("markdown");
  EXPECT_NE(md.find("| Hmean | 1 | - | - |\n| Hmean | 2 |"), std::string::npos) << md;
  const std::string csv = render("csv");
  EXPECT_NE(csv.find("\nHmean,1,base-A,,,0\nHmean,1,new-B,,,0\nHmean,2,base-A,"), std::string::npos) << csv;
  const nlohmann::json j = nlohmann::json::parse(render("json"));
  std::size_t nulls = 0;
  for (const auto& c : j.at("cells"))
    if (c.at("op") == "1") {
      EXPECT_TRUE(c.at("value").is_null()) << c.dump();
      EXPECT_TRUE(c.at("pct").is_null()) << c.dump();
      ++nulls;
    }
  EXPECT_EQ(nulls, 2u * 8u) << j.dump();  // both columns, each of the 8 statistic rows
  EXPECT_NE(j.at("note").get<std::string>().find(note), std::string::npos) << j.dump();
}

// A large sweep's records hold thousands of metric names, all of which a wrong --metric listed
// (20 KB): the names under its prefix are listed, else at most 40 of all.
TEST(Compare, AnUnknownMetricListsTheNamesUnderItsPrefixAndAtMostForty) {
  std::vector<nlohmann::json> recs = golden_records();
  for (int i = 0; i < 100; ++i) recs.front()["metrics"]["vm.g" + std::to_string(100 + i) + ".cpu"] = 1.0;
  CompareOptions o;
  o.metric = "vm.x.throughputt";
  try {
    group_records(recs, o);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "<command line>: --metric: no metric 'vm.x.throughputt' in the records (have: vm.x.throughput)");
  }
  o.metric = "nope";
  try {
    group_records(recs, o);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(", vm.g139.cpu, ... (101 in all))"), std::string::npos) << e.what();
  }
}

// Golden: base-A vs new-B, higher is better. Hand-checked cells: Hmean op 1: A = 3 / (1/100 +
// 1/200 + 1/400) = 171.43, B = 200, pdiff = 100 * 200 / 171.43 - 100 = 16.67%; t = 28.57 /
// sqrt(152.75^2 / 3) = 0.324 -> p = 0.77, no star. Op 2: A = 3 / (1/10 + 1/12 + 1/14) = 11.78,
// B = 3 / (1/16 + 1/18 + 1/20) = 17.85 (+51.59%), t = 6.075 / sqrt(4/3 + 4/3) = 3.72 -> p = 0.02
// -> starred. Stddev op 1: B has 0 -> pndiff(0, x) = 100%. BHmean-95 op 1: the best two of A,
// {400, 200}, give 266.67.
TEST(Compare, TextTableMatchesTheGoldenFile) {
  CompareOptions o;
  const Grouped g = group_records(golden_records(), o);
  std::ostringstream os;
  write_compare(os, g, compare_cells(g, o), o);
  std::ifstream f(golden_path("compare_ttest.txt"));
  ASSERT_TRUE(f) << "missing golden file";
  const std::string want((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(os.str(), want) << "if the change is intended, regenerate with VCPUSIM_UPDATE_GOLDEN=1";
  if (std::getenv("VCPUSIM_UPDATE_GOLDEN")) std::ofstream(golden_path("compare_ttest.txt")) << os.str();
}

TEST(Compare, OtherFormatsCarryTheSameCells) {
  CompareOptions o;
  const Grouped g = group_records(golden_records(), o);
  const auto cells = compare_cells(g, o);
  for (const char* fmt : {"csv", "json", "markdown"}) {
    o.format = fmt;
    std::ostringstream os;
    write_compare(os, g, cells, o);
    EXPECT_NE(os.str().find("17.85"), std::string::npos) << fmt;
    EXPECT_NE(os.str().find("51.59"), std::string::npos) << fmt;
  }
}

// An operation label joins the other swept fields with commas ("3,setup=BM"): in CSV it is
// quoted (RFC 4180), so every row still has six fields.
TEST(Compare, CsvQuotesOperationLabelsHoldingCommas) {
  CompareOptions o;
  o.format = "csv";
  Grouped g;
  g.columns = {"HT"};
  const std::vector<CompareCell> cells{{"Hmean", "3,setup=BM", "HT", 1.5, 0, false}};
  std::ostringstream os;
  write_compare(os, g, cells, o);
  EXPECT_NE(os.str().find("\nHmean,\"3,setup=BM\",HT,1.5,0.0000,0\n"), std::string::npos) << os.str();
}

// Records carry point_index as a 64-bit count, as every record reader takes it; compare and
// plot read it as an int, so an index past 2^32 wrapped onto a smaller one and that point's row vanished.
TEST(Compare, PointIndicesPastThirtyTwoBitsKeepTheirRowsAndPlotPoints) {
  std::vector<nlohmann::json> recs = golden_records();
  CompareOptions o;
  o.metric = "vm.x.throughput";
  const std::vector<std::string> ops = group_records(recs, o).ops;
  ASSERT_GE(ops.size(), 2u);
  std::uint64_t first = UINT64_MAX, last = 0;
  for (const auto& r : recs) {
    first = std::min(first, r.at("point_index").get<std::uint64_t>());
    last = std::max(last, r.at("point_index").get<std::uint64_t>());
  }
  for (auto& r : recs)  // the last point's index wraps, as an int, onto the first one's
    if (r.at("point_index") == last) r["point_index"] = (std::uint64_t{1} << 32) + first;
  EXPECT_EQ(group_records(recs, o).ops, ops);
  // plot read both indices the same way: the wrapped point lost its x value.
  PlotOptions p;
  p.x = "vms.x.count";
  p.metric = o.metric;
  p.out = "fig.png";
  EXPECT_EQ(sweep_plot_script(recs, p), sweep_plot_script(golden_records(), p));
}

// On a numeric x axis the range was autoscaled to the points drawn, so an x at an end of the axis
// whose records all lack the metric (the note counts them) lost its tick and its place: gnuplot
// warned "difficulty making room for xtic labels". The range spans every swept x.
TEST(Plot, ANumericAxisSpansAnXWhoseRecordsAllLackTheMetric) {
  std::vector<nlohmann::json> recs;
  for (int x = 1; x <= 3; ++x)
    for (int rep = 0; rep < 2; ++rep) {
      nlohmann::json metrics = nlohmann::json::object();
      if (x < 3) metrics["m"] = 10 * x + rep;
      recs.push_back({{"scenario", "ax"}, {"column", nullptr}, {"point", {{"x", x}}}, {"point_index", x - 1},
                      {"repetition", rep}, {"metrics", metrics}});
    }
  PlotOptions p;
  p.x = "x";
  p.metric = "m";
  p.out = "fig.svg";
  std::string note;
  const std::string script = sweep_plot_script(recs, p, &note);
  EXPECT_NE(script.find("set xrange [0.92000000000000004:3.0800000000000001]"), std::string::npos) << script;
  EXPECT_NE(script.find("set xtics ('1' 1, '2' 2, '3' 3)"), std::string::npos) << script;  // its tick
  EXPECT_NE(note.find("x=3 (2)"), std::string::npos) << note;
}

}  // namespace vcpusim::app
