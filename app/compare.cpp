// SPDX-License-Identifier: MIT
#include "app/compare.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "app/config_error.h"
#include "app/records.h"
#include "app/statistics.h"
#include "app/text.h"

namespace vcpusim::app {
namespace {

constexpr int kField = 12, kPrecision = 2;  // mmtests Summarise FieldLength and Precision

// A column as tables name it: the label, or "(none)" for a sweep without columns.
std::string col_name(const std::string& c) { return c.empty() ? std::string("(none)") : c; }

// A cell as notes name it: "op / column".
std::string cell_name(const std::string& op, const std::string& col) { return op + " / " + col_name(col); }

// The samples of column `col` at operation `op`, or nullptr when it has none: the one test of
// whether a cell has anything to show, compare with or note.
const std::vector<double>* samples_at(const Grouped& g, const std::string& col, const std::string& op) {
  const auto it = g.samples.find({col, op});
  return it == g.samples.end() || it->second.empty() ? nullptr : &it->second;
}

}  // namespace

double pdiff(double now, double base) {
  if (now == base || now == 0) return 0;
  if (base == 0) return 100;
  return 100.0 * now / base - 100.0;
}

double pndiff(double now, double base) {
  if (now == base) return 0;
  if (now == 0) return 100;
  if (base == 0) return -99;
  return 100.0 - 100.0 * now / base;
}

bool significant(const std::vector<double>& base, const std::vector<double>& now, bool higher, SignificanceRule rule) {
  const Summary b = summarize(base), n = summarize(now);
  const double mb = higher ? b.hmean : b.amean, mn = higher ? n.hmean : n.amean;
  if (rule == SignificanceRule::kTTest) {
    // Compare::_significanceTest (mmtests f0b33946): t on the displayed mean with the
    // arithmetic stddev, df = n_b + n_n - 2, significant iff p < 0.10.
    if (b.stddev == 0 && n.stddev == 0) return mb != mn;
    const double df = static_cast<double>(b.n + n.n) - 2;
    if (df <= 0) return false;
    const double t = std::fabs(mb - mn) /
                     std::sqrt(b.stddev * b.stddev / static_cast<double>(b.n) + n.stddev * n.stddev / static_cast<double>(n.n));
    return student_t_two_sided_p(t, df) < 0.10;
  }
  // Current mmtests (8cd087ae): CI = mean +- 1.96 SD (SD not divided by sqrt(n); HStddev for
  // higher-is-better), significant iff the intervals do not touch.
  const double sb = higher ? harmonic_stddev(base) : b.stddev, sn = higher ? harmonic_stddev(now) : n.stddev;
  const double q = 1.959963984540054 * (sb + sn);
  return q == 0 ? std::fabs(mn - mb) > 1 : std::fabs(mn - mb) > q;
}

Grouped group_records(const std::vector<nlohmann::json>& records, const CompareOptions& o) {
  if (records.empty()) throw ConfigError("<records>", 0, 0, "", "no records to compare");
  Grouped g;
  g.scenario = records.front().value("scenario", "");
  // Columns in sweep order (column_index), fields as swept.
  std::set<std::string> metrics;
  std::vector<std::string> fields;
  // In canonical order, so that fields, sums and means do not depend on the order the runs
  // finished in (--jobs).
  const std::vector<const nlohmann::json*> in_order = canonical_order(records);
  for (const nlohmann::json* rp : in_order) {
    const auto& r = *rp;
    for (const auto& [k, v] : r.at("metrics").items()) metrics.insert(k);
    for (const auto& [k, v] : r.at("point").items())
      if (std::find(fields.begin(), fields.end(), k) == fields.end()) fields.push_back(k);
  }
  g.metric = o.metric;
  if (g.metric.empty()) {
    std::vector<std::string> tp;
    for (const auto& m : metrics)
      if (m == "ops_per_sec" || (m.size() > 11 && m.compare(m.size() - 11, 11, ".throughput") == 0 && std::count(m.begin(), m.end(), '.') == 2 && m.find('-') == std::string::npos))
        tp.push_back(m);
    // Several throughputs: those are the choice; none: any metric is.
    if (tp.size() > 1)
      throw ConfigError("<command line>", 0, 0, "--metric", "choose a metric, such as one of the throughputs: " + comma_join(tp));
    if (tp.empty()) throw ConfigError("<command line>", 0, 0, "--metric", "choose a metric: " + metric_names_hint(metrics, ""));
    g.metric = tp.front();
  } else if (!metrics.count(g.metric)) {
    throw ConfigError("<command line>", 0, 0, "--metric", "no metric '" + g.metric + "' in the records (have: " + metric_names_hint(metrics, g.metric) + ")");
  }
  g.columns = columns_in_order(records);
  if (!o.baseline.empty()) {
    // A sweep without columns: "no column 'x' (have: )" named nothing to choose from.
    if (g.columns.size() == 1 && g.columns.front().empty())
      throw ConfigError("<command line>", 0, 0, "--baseline",
                        "the records have no columns (their sweep has no columns:), so there is no baseline '" + o.baseline + "' to choose");
    auto it = std::find(g.columns.begin(), g.columns.end(), o.baseline);
    if (it == g.columns.end()) throw ConfigError("<command line>", 0, 0, "--baseline", "no column '" + o.baseline + "' (have: " + comma_join(g.columns) + ")");
    std::rotate(g.columns.begin(), it, it + 1);
  }
  g.by = o.by;
  if (g.by.empty() && fields.size() == 1) g.by = fields.front();
  if (!g.by.empty() && std::find(fields.begin(), fields.end(), g.by) == fields.end())
    throw ConfigError("<command line>", 0, 0, "--by", "no swept field '" + g.by + "' (have: " + comma_join(fields) + ")");

  // Operations: the --by value, with any other swept fields appended; ordered by point_index.
  std::map<std::uint64_t, std::string> op_by_index;  // 64 bits, as the record readers take it
  for (const nlohmann::json* rp : in_order) {
    const auto& r = *rp;
    const auto& p = r.at("point");
    std::string op = g.by.empty() ? "" : value_label(p.at(g.by));
    for (const auto& f : fields)
      if (f != g.by && p.contains(f)) op += (op.empty() ? "" : ",") + f + "=" + value_label(p.at(f));
    if (op.empty()) op = "-";
    op_by_index.emplace(r.value("point_index", std::uint64_t{0}), op);
    const auto& m = r.at("metrics");
    const auto& c = r.at("column");
    const std::string col = c.is_null() ? "" : c.get<std::string>();
    if (!m.contains(g.metric)) {
      g.lacking.count(cell_name(op, col));
      continue;
    }
    g.samples[{col, op}].push_back(m.at(g.metric).get<double>());
  }
  for (const auto& [i, op] : op_by_index)
    if (std::find(g.ops.begin(), g.ops.end(), op) == g.ops.end()) g.ops.push_back(op);
  return g;
}

std::vector<CompareCell> compare_cells(const Grouped& g, const CompareOptions& o) {
  const bool hi = o.higher_is_better;
  const std::string mean = hi ? "Hmean" : "Amean";
  struct Row {
    std::string label;
    double (*stat)(const std::vector<double>&, bool);
    bool spread;  // Stddev/CoeffVar rows always compare with pndiff
  };
  std::vector<Row> rows;
  rows.push_back({"Min", [](const std::vector<double>& x, bool) { return summarize(x).min; }, false});
  rows.push_back({mean, [](const std::vector<double>& x, bool h) { auto s = summarize(x); return h ? s.hmean : s.amean; }, false});
  if (o.rule == SignificanceRule::kTTest || !hi) {
    rows.push_back({"Stddev", [](const std::vector<double>& x, bool) { return summarize(x).stddev; }, true});
    rows.push_back({"CoeffVar", [](const std::vector<double>& x, bool) { return summarize(x).coeffvar; }, true});
  } else {
    rows.push_back({"HStddev", [](const std::vector<double>& x, bool) { return harmonic_stddev(x); }, true});
    rows.push_back({"HCoeffVar", [](const std::vector<double>& x, bool) {
                      const double h = summarize(x).hmean;
                      return h > 0 ? 100.0 * harmonic_stddev(x) / h : 0.0; }, true});
  }
  rows.push_back({"Max", [](const std::vector<double>& x, bool) { return summarize(x).max; }, false});
  const std::string b = hi ? "BHmean" : "BAmean";
  if (o.rule == SignificanceRule::kTTest) {
    rows.push_back({b + "-50", [](const std::vector<double>& x, bool h) { return best_mean(x, 50, h); }, false});
    rows.push_back({b + "-95", [](const std::vector<double>& x, bool h) { return best_mean(x, 95, h); }, false});
    rows.push_back({b + "-99", [](const std::vector<double>& x, bool h) { return best_mean(x, 99, h); }, false});
  } else {
    rows.push_back({b + ".95", [](const std::vector<double>& x, bool h) { return best_mean(x, 95, h); }, false});
  }
  std::vector<CompareCell> cells;
  const std::string& base_col = g.columns.front();
  for (const Row& row : rows)
    for (const std::string& op : g.ops) {
      // An operation where every record lacks the metric had no row at all, which read as a
      // point that was not run: it gets empty cells (the note counts its records).
      const bool none = std::none_of(g.columns.begin(), g.columns.end(),
                                     [&](const std::string& col) { return samples_at(g, col, op) != nullptr; });
      if (none) {
        for (const std::string& col : g.columns) cells.push_back({row.label, op, col, std::nullopt, std::nullopt, false});
        continue;
      }
      const std::vector<double>* base_samples = samples_at(g, base_col, op);
      for (const std::string& col : g.columns) {
        const std::vector<double>* samples = samples_at(g, col, op);
        if (!samples) continue;
        CompareCell c{row.label, op, col, row.stat(*samples, hi), std::nullopt, false};
        if (base_samples) {
          const double base = row.stat(*base_samples, hi);
          c.pct = (row.spread || !hi) ? pndiff(*c.value, base) : pdiff(*c.value, base);
          if (row.label == mean && col != base_col) c.significant = significant(*base_samples, *samples, hi, o.rule);
        }
        cells.push_back(c);
      }
    }
  return cells;
}

std::vector<std::string> nonpositive_cells(const Grouped& g, const CompareOptions& o) {
  std::vector<std::string> out;
  if (!o.higher_is_better) return out;
  for (const std::string& op : g.ops)
    for (const std::string& col : g.columns) {
      const std::vector<double>* samples = samples_at(g, col, op);
      if (samples && summarize(*samples).min <= 0) out.push_back(cell_name(op, col));
    }
  return out;
}

std::vector<std::string> cells_without_baseline(const Grouped& g) {
  std::vector<std::string> out;
  for (const std::string& op : g.ops) {
    if (samples_at(g, g.columns.front(), op)) continue;
    for (const std::string& col : g.columns)
      if (samples_at(g, col, op)) out.push_back(cell_name(op, col));
  }
  return out;
}

void write_compare(std::ostream& os, const Grouped& g, const std::vector<CompareCell>& cells, const CompareOptions& o) {
  // A harmonic mean is defined for positive samples only; a cell with a sample <= 0 shows Hmean
  // 0, which read as a measured zero with nothing said.
  std::vector<std::string> notes;
  const std::vector<std::string> nonpositive = nonpositive_cells(g, o);
  if (!nonpositive.empty())
    notes.push_back("Hmean, HStddev and BHmean are defined for positive samples only; shown as 0 where a sample is 0 or less: " +
                    comma_join(nonpositive) + " (use --lower-is-better for the arithmetic mean)");
  if (!g.lacking.empty()) notes.push_back(g.lacking.note(g.metric));
  // A cell whose baseline has no sample at its operation has nothing to be compared with: it
  // showed ( 0.00%), which read as "no change" with nothing said.
  const std::vector<std::string> unbased = cells_without_baseline(g);
  if (!unbased.empty())
    notes.push_back("the baseline " + col_name(g.columns.front()) +
                    " has no sample at these cells' operations, so they have no percentage: " + comma_join(unbased));
  const std::string rule = o.rule == SignificanceRule::kTTest
                               ? "two-sample t-test on the mean row, p < 0.10 (mmtests 2018-2024)"
                               : "interval test on the mean row, |diff| > 1.96 x (SD_base + SD_new) (mmtests since 2024-11)";
  const std::string direction = o.higher_is_better ? "higher is better, Hmean" : "lower is better, Amean";
  if (o.format == "json") {
    nlohmann::json j;
    j["scenario"] = g.scenario;
    j["metric"] = g.metric;
    j["by"] = g.by;
    j["baseline"] = col_name(g.columns.front());
    j["higher_is_better"] = o.higher_is_better;
    j["significance_rule"] = o.rule == SignificanceRule::kTTest ? "ttest" : "interval";
    j["cells"] = nlohmann::json::array();
    for (const auto& c : cells)
      j["cells"].push_back({{"stat", c.stat}, {"op", c.op}, {"column", col_name(c.column)},
                            {"value", c.value ? nlohmann::json(*c.value) : nlohmann::json()},
                            {"pct", c.pct ? nlohmann::json(*c.pct) : nlohmann::json()}, {"significant", c.significant}});
    if (!notes.empty()) {  // one line per note
      std::string note;
      for (const std::string& n : notes) note += (note.empty() ? "" : "\n") + n;
      j["note"] = note;
    }
    os << j.dump(2) << "\n";
    return;
  }
  if (o.format == "csv") {
    // RFC 4180: a field holding a comma or a quote is quoted, quotes doubled (an operation
    // label joins several swept fields with commas: "3,setup=BM").
    auto field = [](const std::string& f) {
      if (f.find_first_of(",\"\n") == std::string::npos) return f;
      std::string q = "\"";
      for (char ch : f) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      return q + "\"";
    };
    os << "stat,op,column,value,pct,significant\n";
    for (const auto& c : cells)
      fmt::print(os, "{},{},{},{},{},{}\n", field(c.stat), field(c.op), field(col_name(c.column)),
                 c.value ? fmt::format("{:.6g}", *c.value) : "",
                 c.pct ? fmt::format("{:.4f}", *c.pct) : "", c.significant ? 1 : 0);
    for (const std::string& n : notes) std::cerr << "vcpusim compare: note: " << n << "\n";  // CSV rows stay rows
    return;
  }
  // Group the cells into rows (stat, op) keeping order.
  std::vector<std::pair<std::string, std::string>> rows;
  std::map<std::pair<std::string, std::string>, std::map<std::string, const CompareCell*>> at;
  for (const auto& c : cells) {
    const auto key = std::make_pair(c.stat, c.op);
    if (!at.count(key)) rows.push_back(key);
    at[key][c.column] = &c;
  }
  auto cell_text = [&](const CompareCell* c) {
    if (!c || !c->value) return fmt::format("{:>{}} {:>10}", "-", kField, "");
    if (!c->pct) return fmt::format("{:>{}.{}f} {:>10}", *c->value, kField, kPrecision, "");
    const char* l = c->significant ? "*" : "(";
    const char* r = c->significant ? "*" : ")";
    return fmt::format("{:>{}.{}f} {}{:7.2f}%{}", *c->value, kField, kPrecision, l, *c->pct, r);
  };
  if (o.format == "markdown") {
    fmt::print(os, "**{}**: metric `{}` ({}), baseline `{}`; significance: {}\n\n", g.scenario, g.metric, direction,
               col_name(g.columns.front()), rule);
    os << "| stat | " << (g.by.empty() ? "op" : g.by) << " |";
    for (const auto& c : g.columns) os << " " << col_name(c) << " |";
    os << "\n|---|---|";
    for (std::size_t i = 0; i < g.columns.size(); ++i) os << "---:|";
    os << "\n";
    for (const auto& key : rows) {
      os << "| " << key.first << " | " << key.second << " |";
      for (const auto& col : g.columns) {
        auto it = at[key].find(col);
        if (it == at[key].end() || !it->second->value) { os << " - |"; continue; }
        const CompareCell* c = it->second;
        if (!c->pct) { os << fmt::format(" {:.2f} |", *c->value); continue; }
        os << fmt::format(" {:.2f} {}{:.2f}%{} |", *c->value, c->significant ? "*" : "(", *c->pct, c->significant ? "*" : ")");
      }
      os << "\n";
    }
    for (const std::string& n : notes) os << "\nNote: " << n << "\n";
    return;
  }
  // text: mmtests layout. Two header rows: each column label split at its first '-'.
  fmt::print(os, "# {}: metric {} ({}), baseline {}\n# significance: {}\n", g.scenario, g.metric, direction,
             col_name(g.columns.front()), rule);
  std::size_t wl = 6, wo = 2;
  for (const auto& key : rows) {
    wl = std::max(wl, key.first.size());
    wo = std::max(wo, key.second.size());
  }
  const int cw = kField + 7 + 4;
  std::string h1 = std::string(wl + wo + 1, ' '), h2 = h1;
  for (const auto& c : g.columns) {
    const std::string n = col_name(c);
    const auto dash = n.find('-');
    h1 += fmt::format("{:>{}}", dash == std::string::npos ? n : n.substr(0, dash), cw);
    h2 += fmt::format("{:>{}}", dash == std::string::npos ? "" : n.substr(dash + 1), cw);
  }
  os << h1 << "\n" << h2 << "\n";
  for (const auto& key : rows) {
    os << fmt::format("{:<{}} {:<{}}", key.first, wl, key.second, wo);
    for (const auto& col : g.columns) {
      auto it = at[key].find(col);
      os << " " << cell_text(it == at[key].end() ? nullptr : it->second);
    }
    os << "\n";
  }
  for (const std::string& n : notes) os << "# note: " << n << "\n";
}

}  // namespace vcpusim::app
