// SPDX-License-Identifier: MIT
// Pins `vcpusim plot` and `vcpusim reproduce --plot`: real PNG and SVG figures come out of
// gnuplot, and bad input is exit 2. Runs the real binary ($VCPUSIM, set by meson); skipped,
// saying so, when gnuplot is not installed (Debian package gnuplot-nox, scripts/setup.sh).
#include <gtest/gtest.h>

#include "cli_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace {

using namespace vcpusim::test;

bool have_gnuplot() { return shell("command -v gnuplot").status == 0; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The PNG signature: \x89 P N G \r \n \x1a \n.
bool is_png(const std::string& bytes) { return bytes.size() > 8 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0; }

const std::string kSweep = small_sweep("pl", 3);

// One sweep for the whole file.
const std::string& sweep_dir() {
  static const std::string d = [] {
    const std::string dir = fresh_dir("sweep");
    const Outcome o = run("sweep " + write_temp("plot.yaml", kSweep) + " --out " + dir + " --jobs 2");
    EXPECT_EQ(o.status, 0) << o.output;
    return dir;
  }();
  return d;
}

#define SKIP_WITHOUT_GNUPLOT() \
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox): figures not tested"

}  // namespace

TEST(CliPlot, SweepPlotWritesAPng) {
  SKIP_WITHOUT_GNUPLOT();
  const std::string fig = (scratch() / "fig.png").string();
  const Outcome o = run("plot " + sweep_dir() + " --x vms.web.count --y vm.web.throughput --by column --out " + fig +
                        " --title 'web throughput'");
  ASSERT_EQ(o.status, 0) << o.output;
  const std::string png = slurp(fig);
  EXPECT_TRUE(is_png(png)) << "not a PNG: " << fig;
  EXPECT_GT(png.size(), 1024u);
}

TEST(CliPlot, ARecordThatSpellsItsPointsValueAsAStringIsDrawnAtThatPoint) {
  // The readers take {"vms.web.count": "3"} and {"vms.web.count": 3} under one point index for
  // one point, as the tables print them. The plot looked the later record's x up by its own
  // spelling, found none, and read past the end of its x values (exit 1, or a sample drawn at an
  // x of its own). Every point keeps its 3 repetitions: the title says n = 3.
  SKIP_WITHOUT_GNUPLOT();
  const std::string d = fresh_dir("string-x");
  std::vector<std::string> lines;
  {
    std::ifstream in(std::filesystem::path(sweep_dir()) / "records.jsonl");
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  const std::string num = "\"point\":{\"vms.web.count\":3}";
  std::size_t last = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find(num) != std::string::npos) last = i;
  ASSERT_LT(last, lines.size()) << "no record of point 3";
  lines[last].replace(lines[last].find(num), num.size(), "\"point\":{\"vms.web.count\":\"3\"}");
  std::filesystem::create_directories(d);
  {
    std::ofstream out(std::filesystem::path(d) / "records.jsonl");
    for (const auto& l : lines) out << l << "\n";
  }
  const std::string fig = (scratch() / "string-x.svg").string();
  const Outcome o = run("plot " + d + " --x vms.web.count --y vm.web.throughput --out " + fig);
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_NE(slurp(fig).find("n = 3)"), std::string::npos) << "a sample was dropped or misplaced: " << fig;
}

TEST(CliPlot, SweepPlotWritesAnSvgWithTheLegendAndErrorBarNote) {
  SKIP_WITHOUT_GNUPLOT();
  const std::string fig = (scratch() / "fig.svg").string();
  const Outcome o = run("plot " + sweep_dir() + " --x vms.web.count --y vm.web.steal_pct --out " + fig);
  ASSERT_EQ(o.status, 0) << o.output;
  const std::string svg = slurp(fig);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  for (const char* s : {"HT", "noHT", "stddev", "vms.web.count", "vm.web.steal_pct"})
    EXPECT_NE(svg.find(s), std::string::npos) << s;
}

// Labels and titles went to gnuplot double-quoted, where it runs any `command` in backquotes:
// a column label in a records file (say, a shard from elsewhere) ran a shell command on the
// machine that drew it. They now go single-quoted and print as written.
TEST(CliPlot, BackquotesInTitlesAndLabelsArePrintedNotRun) {
  SKIP_WITHOUT_GNUPLOT();
  const std::string marker = (scratch() / "ran-a-command").string();
  std::filesystem::remove(marker);
  std::string records = slurp(sweep_dir() + "/records.jsonl");
  for (std::size_t at; (at = records.find("\"column\":\"noHT\"")) != std::string::npos;)
    records.replace(at, 15, "\"column\":\"no`touch " + marker + "`HT\"");
  const std::string edited = write_temp("bq-records.jsonl", records);
  const std::string fig = (scratch() / "bq.svg").string();
  const Outcome o = run("plot " + edited + " --x vms.web.count --y vm.web.throughput --out " + fig + " --title 'it'\\''s `touch " +
                        marker + "`'");  // the shell passes it as written: it's `touch ...`
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "gnuplot ran a backquoted command";
  const std::string svg = slurp(fig);
  EXPECT_NE(svg.find("no`touch"), std::string::npos) << "the column label, as written";
  EXPECT_NE(svg.find("it's `touch"), std::string::npos) << "the title, as written";
}

// A control character in a column label (a hand-edited record) or in --title made an SVG that
// no XML parser reads, and a raw byte in a CSV cell. Checked before gnuplot runs.
TEST(CliPlot, ControlCharactersInLabelsAndTitlesAreRefused) {
  std::string records = slurp(sweep_dir() + "/records.jsonl");
  for (std::size_t at; (at = records.find("\"column\":\"noHT\"")) != std::string::npos;)
    records.replace(at, 15, "\"column\":\"no\\u0001HT\"");
  const std::string edited = write_temp("ctl-records.jsonl", records);
  const std::string fig = (scratch() / "ctl.svg").string();
  for (const std::string& cmd : {"plot " + edited + " --x vms.web.count --y vm.web.throughput --out " + fig,
                                "compare " + edited + " --format csv"}) {
    const Outcome o = run(cmd);
    EXPECT_EQ(o.status, 2) << cmd << o.output;
    EXPECT_NE(o.output.find("column: \"no\\u0001HT\" holds a control character"), std::string::npos) << cmd << o.output;
  }
  const Outcome t = run("plot " + sweep_dir() + " --x vms.web.count --y vm.web.throughput --out " + fig + " --title \"$(printf 'x\\001y')\"");
  EXPECT_EQ(t.status, 2) << t.output;
  EXPECT_NE(t.output.find("holds a control character; a title is one printable line"), std::string::npos) << t.output;
  EXPECT_FALSE(std::filesystem::exists(fig));
}

// A --title of bytes that are not UTF-8 passed the control-character check, and gnuplot wrote
// it into an SVG that no XML parser reads (exit 0). Refused before gnuplot runs.
TEST(CliPlot, ATitleThatIsNotUtf8IsRefused) {
  const std::string fig = (scratch() / "utf8.svg").string();
  const Outcome o =
      run("plot " + sweep_dir() + " --x vms.web.count --y vm.web.throughput --out " + fig + " --title \"$(printf 'a\\377b')\"");
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find("--title: is not UTF-8 text; a title is one printable line"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(fig));
  EXPECT_EQ(run("plot " + sweep_dir() + " --x vms.web.count --y vm.web.throughput --out " + fig + " --title 'caf\xc3\xa9'").status, 0);
}

// --title '' was read as no title given: the figure got the default title, exit 0, as
// --json '' once wrote nothing. Refused as plot's other empty options are.
TEST(CliPlot, AnEmptyTitleIsExitTwoNotTheDefault) {
  const std::string fig = (scratch() / "empty-title.svg").string();
  const Outcome o = run("plot " + sweep_dir() + " --x vms.web.count --y vm.web.throughput --out " + fig + " --title ''");
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find("--title: is empty"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(fig));
}

TEST(CliPlot, DefaultOutputGoesIntoTheSweepDirectory) {
  SKIP_WITHOUT_GNUPLOT();
  std::filesystem::remove(sweep_dir() + "/plot.png");
  const Outcome o = run("plot " + sweep_dir() + " --x vms.web.count --y vm.web.throughput");
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_TRUE(is_png(slurp(sweep_dir() + "/plot.png")));
}

// A record without the plotted metric was left out of its point with nothing said: plot names
// how many, by line and x value.
TEST(CliPlot, RecordsWithoutTheMetricAreCountedInANote) {
  SKIP_WITHOUT_GNUPLOT();
  const std::string d = fresh_dir("plot-lacking");
  std::filesystem::create_directories(d);
  {
    std::ofstream f(d + "/records.jsonl");
    int rep = 0;
    for (int ci = 0; ci < 2; ++ci)
      for (int x = 1; x <= 2; ++x)
        for (rep = 0; rep < 2; ++rep) {
          const bool lacks = ci == 1 && x == 1 && rep == 1;
          f << "{\"scenario\":\"pl\",\"column\":\"" << (ci ? "noHT" : "HT") << "\",\"column_index\":" << ci
            << ",\"point\":{\"x\":" << x << "},\"point_index\":" << x - 1 << ",\"repetition\":" << rep
            << ",\"metrics\":{" << (lacks ? "" : "\"m\":" + std::to_string(10 * x + rep)) << "}}\n";
        }
  }
  const Outcome o = run("plot " + d + " --x x --y m --out " + d + "/fig.svg");
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_NE(o.output.find("plot: note: 1 record(s) have no metric 'm' and are left out: noHT at x=1 (1)"), std::string::npos)
      << o.output;
}

TEST(CliPlot, UnknownMetricFieldOrFormatIsExitTwo) {
  // Checked before gnuplot runs, so these hold with or without it.
  const Outcome m = run("plot " + sweep_dir() + " --x vms.web.count --y vm.web.nope --out " + (scratch() / "x.png").string());
  EXPECT_EQ(m.status, 2) << m.output;
  EXPECT_NE(m.output.find("--y: no metric 'vm.web.nope'"), std::string::npos) << m.output;
  const Outcome x = run("plot " + sweep_dir() + " --x vms.nope --y vm.web.throughput");
  EXPECT_EQ(x.status, 2) << x.output;
  EXPECT_NE(x.output.find("--x: no swept field 'vms.nope' (have: vms.web.count)"), std::string::npos) << x.output;
  const Outcome b = run("plot " + sweep_dir() + " --x vms.web.count --y vm.web.throughput --by host.smt");
  EXPECT_EQ(b.status, 2) << b.output;
  const Outcome f = run("plot " + sweep_dir() + " --x vms.web.count --y vm.web.throughput --out fig.pdf");
  EXPECT_EQ(f.status, 2) << f.output;
  EXPECT_NE(f.output.find(".png or .svg"), std::string::npos) << f.output;
  EXPECT_EQ(run("plot " + fresh_dir("none") + " --x a --y b").status, 2);
}

TEST(CliPlot, ReproducePlotWithAnUnknownFormatIsRefusedBeforeAnyRun) {
  // Not after the sweep: a figure name that can never be drawn costs no runs and writes no records.
  const std::string d = fresh_dir("rep-bmp");
  const Outcome o = run("reproduce smt-corun-sysbench --set duration=2s --out " + d + " --plot fig.bmp");
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find("--plot: 'fig.bmp': the figure's extension picks the format: .png or .svg"), std::string::npos)
      << o.output;
  EXPECT_FALSE(std::filesystem::exists(d + "/records.jsonl")) << o.output;
}

// The script written for gnuplot stays behind only when gnuplot ran and failed, named in the
// message; a gnuplot that is not there left it in the temporary directory unsaid, one per call.
TEST(CliPlot, MissingGnuplotIsAClearErrorNotACrashAndLeavesNoScript) {
  namespace fs = std::filesystem;
  const fs::path tmp = fresh_dir("no-gnuplot-tmp");
  fs::create_directories(tmp);
  const Outcome o = shell("TMPDIR=" + tmp.string() + " VCPUSIM_GNUPLOT=/nonexistent/gnuplot timeout 120 " + binary() +
                          " plot " + sweep_dir() + " --x vms.web.count --y vm.web.throughput --out " +
                          (scratch() / "none.png").string());
  EXPECT_EQ(o.status, 1) << o.output;
  EXPECT_NE(o.output.find("gnuplot is not installed"), std::string::npos) << o.output;
  EXPECT_TRUE(fs::is_empty(tmp)) << fs::directory_iterator(tmp)->path();
}

// gnuplot drew into the figure's file itself, removed first: a failing gnuplot (here `false`) lost
// the previous figure, a full disk left an empty one, and a symbolic link given as --out was
// replaced by a file. It draws into a temporary file now, renamed over the link's target.
TEST(CliPlot, AFigureIsReplacedWholeAndALinkStaysALink) {
  SKIP_WITHOUT_GNUPLOT();
  namespace fs = std::filesystem;
  const fs::path dir = fresh_dir("fig-atomic");
  fs::create_directories(dir);
  const std::string kept = (dir / "kept.svg").string(), args = " --x vms.web.count --y vm.web.throughput --out ";
  { std::ofstream(kept) << "<svg>previous</svg>"; }
  const Outcome failed = shell("VCPUSIM_GNUPLOT=false timeout 120 " + binary() + " plot " + sweep_dir() + args + kept);
  EXPECT_EQ(failed.status, 1) << failed.output;
  EXPECT_EQ(slurp(kept), "<svg>previous</svg>");
  // A gnuplot that ran and failed keeps its script, named in the message; this test removes it.
  const std::string mark = "script kept: ";
  const auto at = failed.output.find(mark);
  ASSERT_NE(at, std::string::npos) << failed.output;
  const std::string script = failed.output.substr(at + mark.size(), failed.output.find(')', at) - at - mark.size());
  EXPECT_TRUE(fs::remove(script)) << script;
  const fs::path target = dir / "target.svg", link = dir / "link.svg";
  { std::ofstream(target) << "<svg>previous</svg>"; }
  fs::create_symlink("target.svg", link);
  const Outcome o = run("plot " + sweep_dir() + args + link.string());
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_NE(slurp(target.string()).find("<svg"), std::string::npos);
  EXPECT_NE(slurp(target.string()), "<svg>previous</svg>");
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().extension() == ".tmp" ? 100 : 1;
  EXPECT_EQ(files, 3u);  // kept, target, link; no temporary file left
}

TEST(CliPlot, ReproducePlotWritesAPng) {
  SKIP_WITHOUT_GNUPLOT();
  const std::string fig = (scratch() / "rep.png").string(), d = fresh_dir("rep");
  const Outcome o = run("reproduce smt-corun-sysbench --set duration=2s --set repetitions=2 --out " + d + " --plot " + fig);
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_NE(o.output.find("model beside published"), std::string::npos) << o.output;
  const std::string png = slurp(fig);
  EXPECT_TRUE(is_png(png)) << "not a PNG: " << fig;
  EXPECT_GT(png.size(), 1024u);
  // The same figure from finished records, as SVG, names every published row.
  const std::string svg_path = (scratch() / "rep.svg").string();
  ASSERT_EQ(run("reproduce smt-corun-sysbench --from " + d + " --plot " + svg_path).status, 0);
  const std::string svg = slurp(svg_path);
  for (const char* s : {"Alone", "nosmt", "no-tag", "published", "model"}) EXPECT_NE(svg.find(s), std::string::npos) << s;
}
