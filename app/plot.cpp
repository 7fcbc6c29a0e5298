// SPDX-License-Identifier: MIT
#include "app/plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "app/config_error.h"
#include "app/output_paths.h"
#include "app/records.h"
#include "app/statistics.h"
#include "app/text.h"

namespace vcpusim::app {
namespace {


// A gnuplot string for text from records, scenarios and the command line: single-quoted, the
// one form in which gnuplot runs no backquoted command (`...` in a double-quoted label ran a
// shell command) and expands no escape; a ' is doubled. A line break becomes "\n" between
// single-quoted pieces, joined by gnuplot's string concatenation, so `text` may span lines
// only where gnuplot takes a string expression (set title, set xlabel, set output); labels of
// tics and keys pass through flat().
std::string quote(const std::string& s) {
  std::string q = "'";
  for (const char c : s) {
    if (c == '\n') {
      q += "' . \"\\n\" . '";
      continue;
    }
    if (c == '\'') q += '\'';
    q += c;
  }
  return q + "'";
}

// A label as one line (a tic or key label is a plain string, not an expression).
std::string flat(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return quote(s);
}

std::string extension_of(const std::string& out) {
  std::string ext = std::filesystem::path(out).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

}  // namespace

void check_figure_path(const std::string& out, const std::string& option) {
  const std::string ext = extension_of(out);
  if (ext != ".png" && ext != ".svg")
    throw ConfigError("<command line>", 0, 0, option,
                      "'" + out + "': the figure's extension picks the format: .png or .svg");
  // gnuplot makes the file; its directory is made here, as run_gnuplot would, and the file must
  // be writable (gnuplot's own failure came after the runs, as exit 1).
  const auto parent = std::filesystem::path(out).parent_path();
  if (!parent.empty()) ensure_output_dir(parent.string(), option);
  check_output_file(out, option);
}

namespace {

// The terminal lines for the output's extension: pngcairo when this gnuplot has it, else png.
// `vcpusim plot` reaches here unchecked, so the check runs again (reproduce --plot ran it first,
// naming its own flag).
std::string terminal(const std::string& out, int width, int height) {
  check_figure_path(out, "--out");
  const std::string ext = extension_of(out);
  std::string t;
  if (ext == ".png")
    t = fmt::format("if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {{\n"
                    "  set terminal pngcairo size {0},{1} noenhanced font \"sans,11\"\n"
                    "}} else {{\n"
                    "  set terminal png size {0},{1} noenhanced\n"
                    "}}\n",
                    width, height);
  else
    t = fmt::format("set terminal svg size {},{} noenhanced dynamic font \"sans,12\" background \"white\"\n", width, height);
  return t + "set output " + quote(out) + "\n";
}

// Seven distinguishable colours (Okabe-Ito), cycled.
std::string colour(std::size_t i) {
  static const std::array<const char*, 7> c = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"};
  return c[i % c.size()];
}

struct Series {
  std::string label;
  std::map<std::size_t, std::vector<double>> samples;  // x position -> samples
};

}  // namespace

std::string sweep_plot_script(const std::vector<nlohmann::json>& records, const PlotOptions& o, std::string* note) {
  if (records.empty()) throw ConfigError("<records>", 0, 0, "", "no records to plot");
  const std::string scenario = records.front().value("scenario", "");
  std::vector<std::string> fields;
  std::set<std::string> metrics;
  for (const auto& r : records) {
    for (const auto& [k, v] : r.at("point").items())
      if (std::find(fields.begin(), fields.end(), k) == fields.end()) fields.push_back(k);
    for (const auto& [k, v] : r.at("metrics").items()) metrics.insert(k);
  }
  const std::vector<std::string> columns = columns_in_order(records);
  const bool has_columns = !(columns.size() == 1 && columns.front().empty());

  if (fields.empty()) throw ConfigError("<command line>", 0, 0, "--x", "the records have no swept field to put on the x axis");
  if (std::find(fields.begin(), fields.end(), o.x) == fields.end())
    throw ConfigError("<command line>", 0, 0, "--x", "no swept field '" + o.x + "' (have: " + comma_join(fields) + ")");
  if (!metrics.count(o.metric))
    throw ConfigError("<command line>", 0, 0, "--y", "no metric '" + o.metric + "' in the records (have: " +
                                                         metric_names_hint(metrics, o.metric) + ")");
  const bool by_column = o.by.empty() || o.by == "column";
  if (!by_column) {
    if (o.by == o.x) throw ConfigError("<command line>", 0, 0, "--by", "'" + o.by + "' is already the x axis");
    if (std::find(fields.begin(), fields.end(), o.by) == fields.end())
      throw ConfigError("<command line>", 0, 0, "--by", "no swept field '" + o.by + "' (have: column, " + comma_join(fields) + ")");
  }

  // x values in point order; numeric axis when every value is a number.
  std::map<std::uint64_t, nlohmann::json> x_by_point;  // 64 bits, as the record readers take the index
  for (const auto& r : records) x_by_point.emplace(r.value("point_index", std::uint64_t{0}), r.at("point").at(o.x));
  std::vector<nlohmann::json> xs;
  for (const auto& [i, v] : x_by_point)
    if (std::find(xs.begin(), xs.end(), v) == xs.end()) xs.push_back(v);
  const bool numeric = std::all_of(xs.begin(), xs.end(), [](const nlohmann::json& v) { return v.is_number(); });
  if (numeric)
    std::stable_sort(xs.begin(), xs.end(), [](const nlohmann::json& a, const nlohmann::json& b) { return a.get<double>() < b.get<double>(); });

  // Series: the --by value (or the column), plus any other swept field, in the order met
  // (records sorted by column and point first, so the order follows the sweep).
  std::vector<nlohmann::json> sorted = records;
  std::stable_sort(sorted.begin(), sorted.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    const auto key = [](const nlohmann::json& r) {
      return std::make_pair(r.value("column_index", std::uint64_t{0}), r.value("point_index", std::uint64_t{0}));
    };
    return key(a) < key(b);
  });
  std::vector<Series> series;
  LackingMetric lacking;  // records without the metric: left out, and said so
  for (const auto& r : sorted) {
    const auto& p = r.at("point");
    const auto& c = r.at("column");
    const std::string col = c.is_null() ? "" : c.get<std::string>();
    std::string label;
    if (by_column) {
      label = col;
    } else {
      label = o.by + "=" + value_label(p.at(o.by));
      if (has_columns) label = col + ", " + label;
    }
    for (const auto& f : fields)
      if (f != o.x && (by_column || f != o.by) && p.contains(f)) label += (label.empty() ? "" : ", ") + f + "=" + value_label(p.at(f));
    const auto& m = r.at("metrics");
    if (!m.contains(o.metric)) {
      lacking.count((label.empty() ? "" : label + " at ") + o.x + "=" + value_label(p.at(o.x)));
      continue;
    }
    if (label.empty()) label = o.metric;
    auto it = std::find_if(series.begin(), series.end(), [&](const Series& s) { return s.label == label; });
    if (it == series.end()) it = series.insert(series.end(), Series{label, {}});
    // By the record's point index, as x_by_point was built: the readers take 1 and "1" (or 2
    // and 2.0) for one point, as tables print them, and searching xs for this record's own
    // spelling found nothing when another record of the point came first: xs was read past its end.
    const nlohmann::json& x = x_by_point.at(r.value("point_index", std::uint64_t{0}));
    const auto xi = static_cast<std::size_t>(std::find(xs.begin(), xs.end(), x) - xs.begin());
    it->samples[xi].push_back(m.at(o.metric).get<double>());
  }

  if (note) *note = lacking.note(o.metric);
  std::string s = "# vcpusim plot: " + o.metric + " by " + o.x + "\n";
  std::size_t nmin = SIZE_MAX, nmax = 0;
  bool nonnegative = true;
  for (std::size_t k = 0; k < series.size(); ++k) {
    s += fmt::format("$s{} << EOD\n", k);
    // Categorical x: small offsets keep the error bars of different lines apart.
    const double offset = numeric ? 0.0 : (static_cast<double>(k) - (static_cast<double>(series.size()) - 1) / 2) * 0.05;
    for (const auto& [xi, v] : series[k].samples) {
      const Summary sm = summarize(v);
      nmin = std::min(nmin, sm.n);
      nmax = std::max(nmax, sm.n);
      if (sm.amean - sm.stddev < 0) nonnegative = false;
      const double x = numeric ? xs[xi].get<double>() : static_cast<double>(xi) + offset;
      s += fmt::format("{:.17g} {:.17g} {:.17g} {}\n", x, sm.amean, sm.stddev, sm.n);
    }
    s += "EOD\n";
  }
  const std::string reps = nmin == nmax ? fmt::format("n = {}", nmin) : fmt::format("n = {}..{}", nmin, nmax);
  const std::string title = o.title.empty() ? (scenario.empty() ? "" : scenario + ": ") + o.metric + " by " + o.x : o.title;
  s += terminal(o.out, 960, 600);
  s += "set title " + quote(title + "\nmean over repetitions, error bars +/- 1 sample stddev (" + reps + ")") + "\n";
  s += "set xlabel " + flat(o.x) + "\nset ylabel " + flat(o.metric + " (mean)") + "\n";
  s += "set grid ytics lc rgb \"#dddddd\"\nset key outside right top box opaque\nset border 3\nset tics nomirror\n";
  s += "set bars small\n";
  if (nonnegative) s += "set yrange [0:*]\n";
  if (numeric && !xs.empty()) {
    // The range spans every swept x, drawn or not: autoscaled, it ended at the last x with a
    // sample, so an x whose records all lack the metric (counted in the note) at an end of the
    // axis lost its tick and its place. 4% of the span each side, as the offsets gave before.
    const double lo = xs.front().get<double>(), hi = xs.back().get<double>();
    const double pad = hi > lo ? (hi - lo) * 0.04 : std::max(std::abs(lo) * 0.04, 0.5);
    s += fmt::format("set xrange [{:.17g}:{:.17g}]\n", lo - pad, hi + pad);
    s += "set xtics (";
    for (std::size_t i = 0; i < xs.size(); ++i) s += fmt::format("{}{} {:.17g}", i ? ", " : "", flat(value_label(xs[i])), xs[i].get<double>());
    s += ")\n";
  } else {
    s += fmt::format("set xrange [-0.5:{}]\nset xtics (", static_cast<double>(xs.size()) - 0.5);
    for (std::size_t i = 0; i < xs.size(); ++i) s += fmt::format("{}{} {}", i ? ", " : "", flat(value_label(xs[i])), i);
    s += ")\n";
  }
  s += "plot ";
  for (std::size_t k = 0; k < series.size(); ++k)
    s += fmt::format("{}$s{} using 1:2:3 with yerrorlines lw 2 pt 7 ps 1.2 lc rgb \"{}\" title {}", k ? ", \\\n     " : "", k,
                     colour(k), flat(series[k].label));
  return s + "\n";
}

std::string reproduction_plot_script(const Reproduction& r, const ReproductionResult& res, const std::string& out,
                                     const std::string& title) {
  std::vector<std::string> rows, columns;
  for (const CellResult& c : res.cells) {
    if (std::find(rows.begin(), rows.end(), c.pub.row) == rows.end()) rows.push_back(c.pub.row);
    if (std::find(columns.begin(), columns.end(), c.pub.column) == columns.end()) columns.push_back(c.pub.column);
  }
  if (rows.empty()) throw ConfigError(r.file, 0, 0, "published", "no published cells to plot");
  // Two boxes per column (published, model) side by side in each row's slot.
  const std::size_t boxes = 2 * columns.size();
  const double width = 0.8 / static_cast<double>(boxes);
  std::string s = "# vcpusim reproduce " + r.name + " --plot\n";
  std::vector<std::string> plots;
  std::size_t nmin = SIZE_MAX, nmax = 0;
  for (std::size_t ci = 0; ci < columns.size(); ++ci)
    for (int model = 0; model < 2; ++model) {
      const std::size_t k = 2 * ci + static_cast<std::size_t>(model);
      const double offset = (static_cast<double>(k) - (static_cast<double>(boxes) - 1) / 2) * width;
      std::string data;
      for (const CellResult& c : res.cells) {
        if (c.pub.column != columns[ci]) continue;
        if (model && c.samples == 0) continue;  // no model data for this cell
        const auto xi = static_cast<std::size_t>(std::find(rows.begin(), rows.end(), c.pub.row) - rows.begin());
        const double v = model ? c.model : c.pub.value;
        const double sd = model ? c.model_stddev : std::max(0.0, c.pub.stddev);
        if (model) {
          nmin = std::min(nmin, c.samples);
          nmax = std::max(nmax, c.samples);
        }
        data += fmt::format("{:.17g} {:.17g} {:.17g}\n", static_cast<double>(xi) + offset, v, sd);
      }
      if (data.empty()) continue;
      s += fmt::format("$b{} << EOD\n{}EOD\n", k, data);
      const std::string who = model ? "model (vcpusim)" : "published";
      const std::string label = columns[ci].empty() ? who : columns[ci] + ": " + who;
      // Published boxes solid, model boxes hatched, in the column's colour.
      plots.push_back(fmt::format("$b{0} using 1:2:3 with boxerrorbars lc rgb \"{1}\" lw 1.5 fs {2} title {3}, \\\n"
                                  "     $b{0} using 1:($2+$3):(sprintf(\"%.1f\", $2)) with labels offset 0,0.8 font \",9\" notitle",
                                  k, colour(ci), model ? "pattern 4 border" : "solid 0.55 border", flat(label)));
    }
  const std::string reps = nmax == 0 ? "no model runs" : nmin == nmax ? fmt::format("n = {}", nmin) : fmt::format("n = {}..{}", nmin, nmax);
  const std::string t = title.empty() ? "reproduction " + r.name + ": model beside published" : title;
  s += terminal(out, 960, 600);
  s += "set title " + quote(t + "\n" + r.metric + "; error bars +/- 1 stddev (published where given; model " + reps + ")") + "\n";
  s += "set xlabel " + flat(r.rows) + "\nset ylabel " + flat(r.metric) + "\n";
  s += "set grid ytics lc rgb \"#dddddd\"\nset key outside right top box opaque\nset border 3\nset tics nomirror\n";
  s += fmt::format("set boxwidth {:.6g} absolute\nset yrange [0:*]\nset offsets 0, 0, graph 0.08, 0\n", width);
  s += fmt::format("set xrange [-0.5:{}]\nset xtics (", static_cast<double>(rows.size()) - 0.5);
  for (std::size_t i = 0; i < rows.size(); ++i) s += fmt::format("{}{} {}", i ? ", " : "", flat(rows[i]), i);
  s += ")\nplot ";
  for (std::size_t i = 0; i < plots.size(); ++i) s += (i ? ", \\\n     " : "") + plots[i];
  return s + "\n";
}

void run_gnuplot(const std::string& plot_script, const std::string& out) {
  std::string script = plot_script;
  const auto parent = std::filesystem::path(out).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::string tmpl = (std::filesystem::temp_directory_path() / "vcpusim-plot-XXXXXX.gp").string();
  const int fd = ::mkstemps(tmpl.data(), 3);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file for gnuplot in " + std::filesystem::temp_directory_path().string());
  ::close(fd);
  // gnuplot draws into the temporary file write_atomically would use, renamed over the figure's
  // file once drawn, as every result is written: it drew into the figure itself, removed first,
  // so a failed or interrupted plot lost the previous figure (a full disk left an empty one), and
  // a symbolic link given as --out was replaced by a file.
  const AtomicTarget target = atomic_target(out);
  const std::string set_output = "set output " + quote(out) + "\n";
  const auto at = script.find(set_output);
  if (at == std::string::npos) throw std::logic_error("plot script without its output line");
  script.replace(at, set_output.size(), "set output " + quote(target.temp) + "\n");
  {
    std::ofstream f(tmpl, std::ios::trunc);
    f << script;
    if (!f.flush()) throw std::runtime_error("cannot write " + tmpl);
  }
  const char* env = std::getenv("VCPUSIM_GNUPLOT");
  const std::string program = env && *env ? env : "gnuplot";
  std::error_code ec;
  const std::string cmd = program + " '" + tmpl + "' 2>&1";
  std::string output;
  int status = -1;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    std::array<char, 4096> buf{};
    while (const std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) output.append(buf.data(), n);
    status = ::pclose(p);
  }
  const int code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != 0) std::filesystem::remove(target.temp, ec);
  // The script is kept for a gnuplot that ran and failed, to be read beside its output; one that
  // never ran has nothing to show, and the script was left in the temporary directory unsaid.
  if (code == 127) std::filesystem::remove(tmpl, ec);
  if (code == 127)
    throw std::runtime_error("cannot run '" + program + "': gnuplot is not installed (Debian: apt-get install gnuplot-nox; "
                             "scripts/setup.sh installs it) or not on PATH");
  if (code != 0) throw std::runtime_error("gnuplot failed (script kept: " + tmpl + "):\n" + output);
  std::filesystem::remove(tmpl, ec);
  if (!output.empty()) std::cerr << "gnuplot: " << output;
  if (!std::filesystem::exists(target.temp, ec) || std::filesystem::file_size(target.temp, ec) == 0) {
    std::filesystem::remove(target.temp, ec);
    throw std::runtime_error("gnuplot wrote nothing to " + out);
  }
  std::filesystem::rename(target.temp, target.file, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(target.temp, ec);
    throw std::runtime_error("cannot write " + out + ": " + why);
  }
}

void plot_records(const std::vector<nlohmann::json>& records, const PlotOptions& o) {
  std::string note;
  run_gnuplot(sweep_plot_script(records, o, &note), o.out);
  if (!note.empty()) std::cerr << "plot: note: " << note << "\n";
}

void plot_reproduction(const Reproduction& r, const ReproductionResult& res, const std::string& out, const std::string& title) {
  run_gnuplot(reproduction_plot_script(r, res, out, title), out);
}

}  // namespace vcpusim::app
