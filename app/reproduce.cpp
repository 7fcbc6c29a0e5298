// SPDX-License-Identifier: MIT
#include "app/reproduce.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "app/build_id.h"
#include "app/compare.h"
#include "app/config_paths.h"
#include "app/records.h"
#include "app/runner.h"
#include "app/statistics.h"
#include "app/sweep_runner.h"
#include "app/text.h"

namespace vcpusim::app {

std::vector<std::string> list_reproductions() {
  std::vector<std::string> names;
  for (const std::string& dir : config_search_dirs()) {
    const auto d = std::filesystem::path(dir) / "reproduce";
    if (!std::filesystem::is_directory(d)) continue;
    for (const auto& e : std::filesystem::directory_iterator(d))
      if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
    break;
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

std::string cell_op(const nlohmann::json& point, const std::string& field) { return value_label(point.at(field)); }

/// The rows of `r`'s table: the values (labels, for a labelled axis) its `rows:` field takes in
/// the sweep, in sweep order, as a published cell's `row:` names them.
std::vector<std::string> sweep_rows(const Reproduction& r) {
  std::vector<std::string> rows;
  for (const SweepRun& run : r.plan.runs) {
    if (!run.point.contains(r.rows)) continue;
    const std::string row = cell_op(run.point, r.rows);
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
  }
  return rows;
}

/// `column`, named at `at`, must be one of the scenario's `columns:`.
void check_column(const YamlReader& at, const std::string& column, const SweepPlan& plan) {
  if (std::find(plan.columns.begin(), plan.columns.end(), column) != plan.columns.end()) return;
  if (plan.columns == std::vector<std::string>{""})
    at.fail("'" + column + "' is not a column of the scenario (it has no columns:)");
  at.fail("'" + column + "' is not a column of the scenario (columns: " + comma_join(plan.columns) + ")");
}

/// Every published cell names a row the sweep makes and a column the scenario has: a cell that
/// does not is never run, and was shown as "no data" with status 0.
void check_published(const Reproduction& r, const YamlReader& pub) {
  const std::vector<std::string> rows = sweep_rows(r);
  for (std::size_t i = 0; i < r.published.size(); ++i) {
    const PublishedCell& p = r.published[i];
    const YamlReader c = pub.at(i);
    if (std::find(rows.begin(), rows.end(), p.row) == rows.end())
      c.at("row").fail("'" + p.row + "' is not a row of the sweep field '" + r.rows + "' (rows: " + comma_join(rows) + ")");
    if (!p.column.empty()) check_column(c.at("column"), p.column, r.plan);
    else if (r.plan.columns != std::vector<std::string>{""})
      (c.has("column") ? c.at("column") : c)
          .fail("the scenario has columns (" + comma_join(r.plan.columns) + "): name the cell's column");
  }
}

/// The % changes are against the baseline, so it names a published row or a column of the
/// scenario; one that does not left them empty, or failed only after the whole sweep had run.
void check_baseline(const Reproduction& r, const YamlReader& root) {
  if (!root.has("baseline")) return;
  const YamlReader b = root.at("baseline");
  if (!r.baseline_row.empty()) {
    std::vector<std::string> rows;
    for (const PublishedCell& c : r.published)
      if (std::find(rows.begin(), rows.end(), c.row) == rows.end()) rows.push_back(c.row);
    if (std::find(rows.begin(), rows.end(), r.baseline_row) == rows.end())
      b.at("row").fail("'" + r.baseline_row + "' is not a published row (rows: " + comma_join(rows) + ")");
  }
  if (!r.baseline_column.empty()) check_column(b.at("column"), r.baseline_column, r.plan);
}

/// The per-VM metric a key is, as a bare explain name says it: SUFFIX of vm.VM.SUFFIX (one dot
/// in neither part); nullopt for any other key.
std::optional<std::string> vm_metric_suffix(const std::string& key) {
  if (key.rfind("vm.", 0) != 0) return std::nullopt;
  const auto dot = key.find('.', 3);
  if (dot == std::string::npos || dot == 3 || dot + 1 == key.size() || key.find('.', dot + 1) != std::string::npos)
    return std::nullopt;
  return key.substr(dot + 1);
}

/// Every metric name a run of `r`'s sweep can give (metric_names over the runs' scenarios), and
/// per published cell (row, column) the names its own runs give.
struct SweepMetricNames {
  std::set<std::string> all;
  std::map<std::pair<std::string, std::string>, std::set<std::string>> by_cell;
};
SweepMetricNames sweep_metric_names(const Reproduction& r) {
  SweepMetricNames names;
  const std::vector<ScenarioSpec> specs = load_sweep_specs(r.plan);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    std::set<std::string> run_names = metric_names(specs[i]);
    const SweepRun& run = r.plan.runs[i];
    if (run.point.contains(r.rows)) names.by_cell[{cell_op(run.point, r.rows), run.column}].insert(run_names.begin(), run_names.end());
    names.all.merge(run_names);
  }
  return names;
}

/// A metric name no run gives fails at `at`, listing the names under its prefix (bm.cpu for
/// bm.cpu.throughptu: a slip in the last part is the likely one), or else every name.
void check_metric_name(const YamlReader& at, const std::string& name, const std::set<std::string>& names) {
  if (names.count(name)) return;
  const std::vector<std::string> near = metric_names_near(names, name);
  const std::string listed = near.empty() ? "the runs give: " + comma_join(std::vector<std::string>(names.begin(), names.end()))
                                          : "under " + name.substr(0, name.rfind('.')) + " the runs give: " + comma_join(near);
  at.fail("no run of the scenario gives metric '" + name + "' (" + listed + ")");
}

/// A bare explain name is a per-VM metric (vm.VM.NAME, averaged over the cell's VMs): some run
/// must have a VM that gives it.
void check_vm_metric_name(const YamlReader& at, const std::string& name, const std::set<std::string>& names) {
  std::vector<std::string> suffixes;
  for (const std::string& n : names) {
    const auto s = vm_metric_suffix(n);
    if (!s) continue;
    if (*s == name) return;
    if (std::find(suffixes.begin(), suffixes.end(), *s) == suffixes.end()) suffixes.push_back(*s);
  }
  if (suffixes.empty())
    at.fail("no run of the scenario has a VM, so no per-VM metric '" + name + "' (a bare name stands for vm.VM." +
            name + "): name a record metric in full");
  std::sort(suffixes.begin(), suffixes.end());
  at.fail("no VM of the scenario's runs gives metric '" + name + "' (a bare name stands for vm.VM." + name +
          "; the VMs give: " + comma_join(suffixes) + ")");
}

/// The metric and the explain: names are names the runs give: checked before any run, since a
/// bad metric failed only after the whole sweep (blaming a --metric option nobody gave), and a
/// bad explain name was printed as a column of "-".
void check_metrics(const Reproduction& r, const YamlReader& root, const YamlReader& pub) {
  const SweepMetricNames by = sweep_metric_names(r);
  const std::set<std::string>& names = by.all;
  check_metric_name(root.at("metric"), r.metric, names);
  // A cell whose own runs lack the metric (a row that switches off the group it names) printed
  // "no data" and counted as a 0% difference in the summary, exit 0.
  for (std::size_t i = 0; i < r.published.size(); ++i) {
    const PublishedCell& p = r.published[i];
    const auto it = by.by_cell.find({p.row, p.column});
    if (it != by.by_cell.end() && it->second.count(r.metric)) continue;
    pub.at(i).fail("the runs of row '" + p.row + "'" + (p.column.empty() ? "" : " column '" + p.column + "'") +
                   " give no metric '" + r.metric + "' (another row's runs do): this cell would have no model value");
  }
  for (std::size_t i = 0; i < r.explain.size(); ++i) {
    const YamlReader at = root.at("explain").at(i);
    if (r.explain[i].find('.') == std::string::npos) check_vm_metric_name(at, r.explain[i], names);
    else check_metric_name(at, r.explain[i], names);
  }
}

}  // namespace

Reproduction load_reproduction(const std::string& name_or_path, const std::vector<CommandLineSet>& overrides,
                               const std::vector<RowOverride>& row_overrides) {
  std::string path = name_or_path;
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  // A loop of symbolic links made the query throw (exit 1).
  if (ec.value() == ELOOP) throw ConfigError("<command line>", 0, 0, "NAME", "'" + path + "' is a loop of symbolic links");
  if (!exists) {
    ConfigMiss miss;
    path = find_config("reproduce/" + name_or_path + ".yaml", &miss);
    if (path.empty()) {
      // There, but not to be read (a loop of symbolic links): it was "no reproduction 'x'
      // (known: x)", the listing naming the file the lookup had skipped.
      if (!miss.reason.empty())
        throw ConfigError("<command line>", 0, 0, "NAME", "reproduction '" + name_or_path + "' (" + miss.path + "): " + miss.reason);
      std::string all;
      for (const auto& n : list_reproductions()) all += (all.empty() ? "" : ", ") + n;
      throw ConfigError("<command line>", 0, 0, "NAME", "no reproduction '" + name_or_path + "' (known: " + all + ")");
    }
  }
  const YamlReader root = YamlReader::load_file(path);
  root.only({"source", "description", "metric", "higher_is_better", "mean", "rows", "baseline", "tolerance_pct",
             "scenario", "published", "explain"});
  Reproduction r;
  r.file = path;
  r.name = std::filesystem::path(path).stem().string();
  r.source = root.at("source").as_string();
  // What the published cells are from is the point of the file.
  if (r.source.find_first_not_of(" \t") == std::string::npos)
    root.at("source").fail("is empty: name the publication the cells come from (a mail, a paper, a commit)");
  r.description = root.get_string("description", "");
  r.metric = root.at("metric").as_string();
  r.higher_is_better = root.get_bool("higher_is_better", true);
  r.harmonic = r.higher_is_better;
  if (root.has("mean")) {
    const YamlReader m = root.at("mean");
    const std::string v = m.as_string();
    if (v != "arithmetic" && v != "harmonic") m.fail("expected arithmetic or harmonic, got '" + v + "'");
    r.harmonic = v == "harmonic";
  }
  r.rows = root.at("rows").as_string();
  r.tolerance_pct = root.get_double("tolerance_pct", 10, 0, 1000);
  if (root.has("baseline")) {
    const YamlReader b = root.at("baseline");
    b.only({"row", "column"});
    r.baseline_row = b.get_string("row", "");
    r.baseline_column = b.get_string("column", "");
    // The % changes are against one baseline: a row (changes down each column) or a column
    // (changes along each row), not both and not neither.
    if (r.baseline_row.empty() == r.baseline_column.empty())
      b.fail("give either row: or column: (the % changes are against one of them)");
  }
  const YamlReader pub = root.at("published");
  pub.require_sequence();
  // With no cell, the whole sweep ran to compare nothing ("0/0 cells within 5%", status 0).
  if (pub.size() == 0) pub.fail("no published cells: a reproduction compares at least one");
  for (std::size_t i = 0; i < pub.size(); ++i) {
    const YamlReader c = pub.at(i);
    c.only({"row", "column", "value", "stddev", "note"});
    PublishedCell p;
    p.row = c.at("row").as_string();
    p.column = c.has("column") && !c.at("column").is_null() ? c.at("column").as_string() : "";
    // A cell given twice was judged twice (counted twice in the summary, and ordered against
    // itself); the two values cannot both be what was published.
    for (std::size_t j = 0; j < r.published.size(); ++j)
      if (r.published[j].row == p.row && r.published[j].column == p.column)
        c.fail("the cell of row '" + p.row + "'" + (p.column.empty() ? "" : ", column '" + p.column + "'") +
               " is given twice (first at published[" + std::to_string(j) + "])");
    const YamlReader value = c.at("value");
    p.value = value.as_double();
    // The model is set beside it as a % difference, which a 0 cannot divide (it was shown as a
    // perfect match); and the throughputs and times that publications print are positive.
    // A subnormal one (1e-320) divides into +inf%.
    if (p.value <= 0 || !std::isnormal(p.value))
      value.fail(fmt::format("expected a positive figure (the model's difference is a percentage of it), got {}",
                             value.node().Scalar()));
    // The tables print it in fixed point: 1e308 came out as a number of 309 digits.
    constexpr double kLargestFigure = 1e15;
    if (p.value > kLargestFigure)
      value.fail(fmt::format("{} is larger than any published figure this compares (at most 1e15)", value.node().Scalar()));
    // Bounded as the value is, for the same reason: a stddev of 1e300 was printed in the model-
    // beside-published table as a number of 301 digits.
    p.stddev = c.get_double("stddev", -1, 0, kLargestFigure);
    p.note = c.get_string("note", "");
    r.published.push_back(p);
  }
  if (root.has("explain")) {
    const YamlReader ex = root.at("explain");
    ex.require_sequence();
    // An empty list printed an empty table, and a name given twice printed its column twice.
    if (ex.size() == 0) ex.fail("an empty list: name at least one metric (or leave explain: out)");
    for (std::size_t i = 0; i < ex.size(); ++i) {
      const std::string name = ex.at(i).as_string();
      if (std::find(r.explain.begin(), r.explain.end(), name) != r.explain.end())
        ex.at(i).fail("'" + name + "' is given twice");
      r.explain.push_back(name);
    }
  }
  root.at("scenario").require_map();  // here, at its line: the copy below has none
  YAML::Node scen = apply_command_line_sets(root.at("scenario"), overrides).node();
  // Every option that put a value in the scenario, to blame an error found in one on it.
  std::vector<CommandLineSet> blame = overrides, row_blame;
  if (!row_overrides.empty()) {
    // The rows' entries are copied before they change: `scen` shares them with the loaded file.
    const YAML::Node sweep = scen["sweep"];
    const YAML::Node field = sweep && sweep.IsMap() ? sweep[r.rows] : YAML::Node();
    // {values: [...], paths: [...]} is a list of values too (sweep.cpp tells it from labelled
    // entries by a list under either key): its keys were offered as rows.
    const auto list_under = [&](const char* k) { return field && field.IsMap() && field[k] && field[k].IsSequence(); };
    if (!field || !field.IsMap() || list_under("values") || list_under("paths"))
      throw ConfigError("<command line>", 0, 0, "--row-set",
                        "the rows of " + r.name + " ('" + r.rows + "') are values, not entries that can take a key; use --set");
    YAML::Node rows_copy = shallow_copy(field);
    std::set<std::pair<std::string, std::string>> given;
    for (const RowOverride& o : row_overrides) {
      // The second replaced the first, which then reached no run: reported as if the sweep set it.
      if (!given.emplace(o.row, o.path).second)
        throw ConfigError("<command line>", 0, 0, "--row-set '" + o.row + "' " + o.path,
                          "given twice for this row; give it once");
      const YAML::Node& lookup = rows_copy;  // a const lookup adds no entry for a missing row
      if (!lookup[o.row]) {
        std::string all;
        for (const auto& e : rows_copy) all += (all.empty() ? "" : ", ") + e.first.as<std::string>();
        throw ConfigError("<command line>", 0, 0, "--row-set", "'" + o.row + "' is not a row of " + r.name + " (rows: " + all + ")");
      }
      YAML::Node entry = lookup[o.row].IsMap() ? shallow_copy(lookup[o.row]) : YAML::Node(YAML::NodeType::Map);
      const CommandLineSet set = parse_command_line_set("--row-set '" + o.row + "'", o.path + "=" + o.value);
      // Beside the row's own keys these two are the entry's reserved words (sweep.h), not paths.
      if (o.path == "only" || o.path == "columns")
        throw ConfigError("<command line>", 0, 0, set.option + " " + o.path,
                          "'" + o.path + "' is a sweep entry's reserved key, not a path into the scenario");
      // The sweep's own check found these in the row's entry and blamed the reproduction's file
      // (no line: the key was made here), as if the published file were wrong.
      check_run_setting(o.path, YamlReader(YAML::Node(), "<command line>", set.option + " " + o.path));
      // A column that sets the same field, or one around it, overwrites the row's value in every
      // run (one inside it refines it); the sweep's own check blamed the file's column line.
      const YAML::Node columns = scen["columns"];
      if (columns && columns.IsMap())
        for (const auto& col : columns) {
          if (!col.second.IsMap()) continue;
          for (const auto& kv : col.second) {
            const std::string k = kv.first.Scalar();
            if (field_within(override_field(scen, o.path), override_field(scen, k)))
              throw ConfigError("<command line>", 0, 0, set.option + " " + o.path,
                                "column '" + col.first.Scalar() + "' sets '" + k +
                                    "' in its runs, which would overwrite this row's value; change the column instead");
          }
        }
      entry[o.path] = set.value;
      blame.push_back(set);
      row_blame.push_back(set);
      rows_copy[o.row] = entry;
    }
    YAML::Node sweep_copy = shallow_copy(sweep);
    sweep_copy[r.rows] = rows_copy;
    scen["sweep"] = sweep_copy;
  }
  try {
    r.plan = expand_sweep(YamlReader(scen, path, "scenario"));
    check_sets_reach_a_run(overrides, r.plan);
    for (std::size_t i = 0; i < row_overrides.size(); ++i)  // each among its own row's runs
      check_sets_reach_a_run({row_blame[i]}, r.plan, [&](const SweepRun& run) {
        return run.point.contains(r.rows) && run.point.at(r.rows) == row_overrides[i].row;
      });
    if (std::find(r.plan.axes.begin(), r.plan.axes.end(), r.rows) == r.plan.axes.end())
      root.at("rows").fail("'" + r.rows + "' is not a swept field of the scenario");
    check_published(r, pub);
    check_baseline(r, root);
    check_metrics(r, root, pub);
  } catch (const ConfigError& e) {
    // The sweep reads the scenario as the field `scenario`, so its own checks name fields under
    // "scenario.", where the sets' paths start inside it: --set foo=1, --set name= or --set
    // sweep.x=[1] were blamed on the reproduction's file (scenario.foo, no line), as if the
    // published file were wrong. (The runs' loading names fields from the scenario's top.)
    const std::string prefix = "scenario.";
    if (e.line() == 0 && e.field().rfind(prefix, 0) == 0) {
      const ConfigError inside(e.file(), 0, 0, e.field().substr(prefix.size()), e.message());
      const ConfigError blamed = blame_command_line_sets(blame, root.at("scenario").node(), inside);
      if (blamed.file() == "<command line>") throw blamed;
      // A --row-set is a key of its row's sweep entry (a row's name may hold dots, so by text).
      for (std::size_t i = 0; i < row_overrides.size(); ++i) {
        const std::string at = "sweep." + r.rows + "." + row_overrides[i].row + "." + row_overrides[i].path;
        if (field_within(inside.field(), at))
          throw ConfigError("<command line>", 0, 0, row_blame[i].option + " " + row_overrides[i].path,
                            e.message() + (inside.field() == at ? "" : " (at " + inside.field() + ")"));
      }
    }
    throw blame_command_line_sets(blame, root.at("scenario").node(), e);
  }
  return r;
}

namespace {

/// Adds every per-VM value of `vm.*.suffix` in `metrics` to sum/count; a dotted name is one
/// record metric, taken as it is.
void add_vm_metric(const nlohmann::json& metrics, const std::string& suffix, double& sum, std::size_t& n) {
  if (suffix.find('.') != std::string::npos) {
    if (metrics.contains(suffix) && metrics.at(suffix).is_number()) {
      sum += metrics.at(suffix).get<double>();
      ++n;
    }
    return;
  }
  for (const auto& [k, v] : metrics.items())
    if (vm_metric_suffix(k) == suffix && v.is_number()) {
      sum += v.get<double>();
      ++n;
    }
}

}  // namespace

void select_rows(Reproduction& r, const std::vector<std::string>& rows) {
  if (rows.empty()) return;
  std::set<std::string> known, keep;
  std::string all;
  for (const PublishedCell& c : r.published)
    if (known.insert(c.row).second) all += (all.empty() ? "" : ", ") + c.row;
  for (const std::string& row : rows) {
    if (!known.count(row))
      throw ConfigError("<command line>", 0, 0, "--row", "'" + row + "' is not a published row of " + r.name + " (rows: " + all + ")");
    // Refused as a --set given twice is: `--row X --row X` was taken silently, as if once.
    if (!keep.insert(row).second) throw ConfigError("<command line>", 0, 0, "--row '" + row + "'", "given twice");
  }
  if (!r.baseline_row.empty()) keep.insert(r.baseline_row);
  std::erase_if(r.published, [&](const PublishedCell& c) { return !keep.count(c.row); });
}

bool runs_published_row(const Reproduction& r, const SweepRun& run) {
  if (!run.point.contains(r.rows)) return false;
  const std::string row = cell_op(run.point, r.rows);
  return std::any_of(r.published.begin(), r.published.end(), [&](const PublishedCell& c) { return c.row == row; });
}

// The sign of the model's change from `base` to `other` (+1, -1), or 0 when the change is within
// the model's own run-to-run spread (hypot of the two stddevs, the published side's rule).
int model_sign(const CellResult& base, const CellResult& other) {
  const double change = other.model - base.model;
  const auto sd = [](double s) { return std::isnan(s) ? 0.0 : s; };
  if (std::fabs(change) <= std::hypot(sd(base.model_stddev), sd(other.model_stddev))) return 0;
  return change > 0 ? 1 : -1;
}

std::vector<std::pair<const CellResult*, const CellResult*>> column_pairs(const Reproduction& r,
                                                                          const ReproductionResult& res) {
  std::vector<std::pair<const CellResult*, const CellResult*>> pairs;
  if (r.baseline_column.empty() || r.plan.columns.size() != 2) return pairs;
  for (const CellResult& b : res.cells) {
    if (b.pub.column != r.baseline_column) continue;
    for (const CellResult& o : res.cells)
      if (o.pub.row == b.pub.row && o.pub.column != r.baseline_column) pairs.emplace_back(&b, &o);
  }
  return pairs;
}

ReproductionResult evaluate(const Reproduction& r, const std::vector<nlohmann::json>& records) {
  ReproductionResult res;
  std::map<std::pair<std::string, std::string>, std::vector<double>> samples;  // (row, column)
  // (row, column) -> per explain metric: (sum, count) over VMs and repetitions
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, std::size_t>>> reasons;
  // In canonical order: the sums below are then the same to the last bit for any --jobs.
  for (const nlohmann::json* rp : canonical_order(records)) {
    const auto& rec = *rp;
    const auto& m = rec.at("metrics");
    if (!m.contains(r.metric) || !rec.at("point").contains(r.rows)) continue;
    const auto& c = rec.at("column");
    const std::pair<std::string, std::string> key{cell_op(rec.at("point"), r.rows), c.is_null() ? "" : c.get<std::string>()};
    samples[key].push_back(m.at(r.metric).get<double>());
    auto& why = reasons[key];
    why.resize(r.explain.size());
    for (std::size_t i = 0; i < r.explain.size(); ++i) add_vm_metric(m, r.explain[i], why[i].first, why[i].second);
  }
  auto mean_of = [&](const std::vector<double>& xs) {
    const Summary s = summarize(xs);
    return r.harmonic ? s.hmean : s.amean;
  };
  for (const PublishedCell& p : r.published) {
    CellResult c;
    c.pub = p;
    auto it = samples.find({p.row, p.column});
    if (it != samples.end()) {
      c.samples = it->second.size();
      c.model = mean_of(it->second);
      c.model_stddev = summarize(it->second).stddev;
      c.diff_pct = p.value != 0 ? 100.0 * (c.model / p.value - 1.0) : 0.0;
      c.within = std::fabs(c.diff_pct) <= r.tolerance_pct;
      for (const auto& [sum, n] : reasons[{p.row, p.column}])
        c.explain.push_back(n ? sum / static_cast<double>(n) : std::nan(""));
    }
    if (c.within) ++res.within;
    // A cell without runs (records read --from an unfinished sweep) has no difference: it
    // counted as 0% and flattered the mean.
    if (c.samples) res.mean_abs_diff += std::fabs(c.diff_pct);
    else ++res.without_data;
    res.cells.push_back(c);
  }
  if (res.cells.size() > res.without_data)
    res.mean_abs_diff /= static_cast<double>(res.cells.size() - res.without_data);
  // % changes against the baseline cell (same column for a baseline row, same row for a column).
  double err = 0;
  for (const CellResult& c : res.cells) {
    const CellResult* base = nullptr;
    for (const CellResult& b : res.cells) {
      const bool is_base = !r.baseline_row.empty() ? (b.pub.row == r.baseline_row && b.pub.column == c.pub.column)
                                                   : (b.pub.column == r.baseline_column && b.pub.row == c.pub.row);
      if (is_base) base = &b;
    }
    if (!base || base == &c || base->samples == 0 || c.samples == 0) continue;
    const double pub_change = pdiff(c.pub.value, base->pub.value);
    const double model_change = pdiff(c.model, base->model);
    ++res.direction_total;
    if ((pub_change > 0) == (model_change > 0) && (pub_change < 0) == (model_change < 0)) ++res.direction_agree;
    err += std::fabs(model_change - pub_change);
  }
  if (res.direction_total) res.mae_pp = err / static_cast<double>(res.direction_total);
  for (const auto& [base, other] : column_pairs(r, res)) {
    if (base->pub.stddev < 0 || other->pub.stddev < 0) continue;
    const double change = other->pub.value - base->pub.value;
    if (std::fabs(change) <= std::hypot(base->pub.stddev, other->pub.stddev)) continue;
    ++res.significant;
    // The model must resolve the change by the same rule: beyond its own run-to-run spread, or
    // a difference of noise would count as the published effect reproduced.
    if (base->samples && other->samples && model_sign(*base, *other) == (change > 0 ? 1 : -1)) ++res.significant_agree;
  }
  // Ordering of rows within each column (in published-cell order of first appearance).
  for (const CellResult& c : res.cells) {
    auto it = std::find_if(res.order_by_column.begin(), res.order_by_column.end(),
                           [&](const auto& e) { return e.first == c.pub.column; });
    if (it == res.order_by_column.end()) res.order_by_column.push_back({c.pub.column, {0, 0}});
  }
  for (auto& [col, counts] : res.order_by_column) {
    for (std::size_t i = 0; i < res.cells.size(); ++i)
      for (std::size_t j = i + 1; j < res.cells.size(); ++j) {
        const CellResult& a = res.cells[i];
        const CellResult& b = res.cells[j];
        if (a.pub.column != col || b.pub.column != col || a.samples == 0 || b.samples == 0) continue;
        const double gap = a.pub.value - b.pub.value;
        const double noise = std::max(a.pub.stddev, 0.0) + std::max(b.pub.stddev, 0.0);
        if (gap == 0 || std::fabs(gap) <= noise) continue;  // not an ordering the publication resolves
        ++counts.second;
        // The model must resolve the pair too: a gap within its own run-to-run spread is a tie,
        // and a tie disagrees.
        const double mgap = a.model - b.model;
        const double mnoise = (std::isnan(a.model_stddev) ? 0.0 : a.model_stddev) + (std::isnan(b.model_stddev) ? 0.0 : b.model_stddev);
        if (std::fabs(mgap) > mnoise && (gap > 0) == (mgap > 0)) ++counts.first;
      }
    res.order_total += counts.second;
    res.order_agree += counts.first;
  }
  return res;
}

void write_reproduction(std::ostream& os, const Reproduction& r, const std::vector<nlohmann::json>& records,
                        const ReproductionResult& res) {
  fmt::print(os, "reproduction {}: {}\nsource: {}\n", r.name, r.description, r.source);
  std::string built;  // the model(s) that wrote the records shown
  for (const auto& b : record_builds(records)) built += (built.empty() ? "" : ", ") + b;
  fmt::print(os, "records written by vcpusim build {}\n", built.empty() ? std::string("-") : built);
  fmt::print(os, "metric {} ({}, model {} beside published), rows = {}, tolerance {:g}%\n\n", r.metric,
             r.higher_is_better ? "higher is better" : "lower is better", r.harmonic ? "Hmean" : "Amean", r.rows,
             r.tolerance_pct);
  CompareOptions o;
  o.metric = r.metric;
  o.by = r.rows;
  o.higher_is_better = r.higher_is_better;
  if (!r.baseline_column.empty()) o.baseline = r.baseline_column;
  const Grouped g = group_records(records, o);
  os << "model (vcpusim compare):\n";
  write_compare(os, g, compare_cells(g, o), o);
  os << "\nmodel beside published:\n";
  fmt::print(os, "{:<28} {:<14} {:>12} {:>9} {:>12} {:>9} {:>3} {:>9}  {}\n", "row", "column", "published", "stddev",
             "model", "stddev", "n", "diff%", "within");
  for (const CellResult& c : res.cells) {
    fmt::print(os, "{:<28} {:<14} {:>12.2f} {:>9} {:>12.2f} {:>9.2f} {:>3} {:>+8.2f}%  {}\n", c.pub.row,
               c.pub.column.empty() ? "-" : c.pub.column, c.pub.value,
               c.pub.stddev >= 0 ? fmt::format("{:.2f}", c.pub.stddev) : "-", c.model, c.model_stddev, c.samples,
               c.diff_pct, c.samples == 0 ? "no data" : c.within ? "yes" : "NO");
  }
  const auto pairs = column_pairs(r, res);
  if (!pairs.empty()) {
    const std::string other = pairs.front().second->pub.column;
    fmt::print(os, "\n{} against {}, published beside model:\n", other, r.baseline_column);
    fmt::print(os, "{:<16} | {:>10} {:>8} {:>10} {:>8} {:>7} {:<5} | {:>10} {:>8} {:>10} {:>8} {:>7} {}\n", "row", "base",
               "stdev", other, "stdev", "%impr", "noise", "base", "stdev", other, "stdev", "%impr", "sign");
    for (const auto& [b, o] : pairs) {
      const double pub = pdiff(o->pub.value, b->pub.value), mod = pdiff(o->model, b->model);
      const bool sig = b->pub.stddev >= 0 && o->pub.stddev >= 0 &&
                       std::fabs(o->pub.value - b->pub.value) > std::hypot(b->pub.stddev, o->pub.stddev);
      const int msign = model_sign(*b, *o);
      const char* verdict = !sig ? ((mod > 0) == (pub > 0) ? "agrees" : "differs (published within noise)")
                            : msign == 0 ? "not resolved (model within its noise)"
                            : (msign > 0) == (pub > 0) ? "agrees" : "DIFFERS";
      fmt::print(os, "{:<16} | {:>10.2f} {:>8.2f} {:>10.2f} {:>8.2f} {:>+7.2f} {:<5} | {:>10.2f} {:>8.2f} {:>10.2f} {:>8.2f} {:>+7.2f} {}\n",
                 b->pub.row, b->pub.value, b->pub.stddev, o->pub.value, o->pub.stddev, pub, sig ? "above" : "below",
                 b->model, b->model_stddev, o->model, o->model_stddev, mod, verdict);
    }
  }
  if (!r.explain.empty()) {
    os << "\nwhat the model did (per VM, mean over the cell's VMs and repetitions):\n";
    fmt::print(os, "{:<28} {:<14}", "row", "column");
    for (const std::string& e : r.explain) fmt::print(os, " {:>16}", e);
    os << "\n";
    for (const CellResult& c : res.cells) {
      fmt::print(os, "{:<28} {:<14}", c.pub.row, c.pub.column.empty() ? "-" : c.pub.column);
      for (std::size_t i = 0; i < r.explain.size(); ++i)
        fmt::print(os, " {:>16}", i < c.explain.size() && !std::isnan(c.explain[i]) ? fmt::format("{:.3f}", c.explain[i]) : "-");
      os << "\n";
    }
  }
  if (r.baseline_row.empty() && r.baseline_column.empty())  // no % changes to compare
    fmt::print(os, "\nsummary: {}/{} cells within {:g}%; mean |diff| {:.2f}%; no baseline:, so no % changes\n",
               res.within, res.cells.size(), r.tolerance_pct, res.mean_abs_diff);
  else
    fmt::print(os, "\nsummary: {}/{} cells within {:g}%; mean |diff| {:.2f}%; direction of the % changes against {} "
                   "agrees in {}/{}; mean absolute error of those changes {:.2f} points\n",
               res.within, res.cells.size(), r.tolerance_pct, res.mean_abs_diff,
               !r.baseline_row.empty() ? "row " + r.baseline_row : "column " + r.baseline_column, res.direction_agree,
               res.direction_total, res.mae_pp);
  if (res.without_data)
    fmt::print(os, "{} of the {} cells have no model data (no record of their runs) and are left out of mean |diff|\n",
               res.without_data, res.cells.size());
  if (!pairs.empty())
    fmt::print(os, "published changes above their noise: {}; the model's sign agrees in {}\n", res.significant,
               res.significant_agree);
  if (res.order_total) {
    fmt::print(os, "ordering of the rows within each column (pairs the publication resolves beyond both stddevs): "
                   "{}/{} as published", res.order_agree, res.order_total);
    for (const auto& [col, counts] : res.order_by_column)
      if (counts.second) fmt::print(os, "; {} {}/{}", col.empty() ? "-" : col, counts.first, counts.second);
    os << "\n";
  }
}

std::set<std::string> record_builds(const std::vector<nlohmann::json>& records) {
  std::set<std::string> builds;
  for (const auto& rec : records) builds.insert(rec.value("vcpusim_build", std::string("(none)")));
  return builds;
}

std::vector<std::string> provenance_notes(const Reproduction& r, const std::vector<nlohmann::json>& records) {
  std::vector<std::string> notes;
  std::set<std::string> hashes;
  for (const auto& rec : records) hashes.insert(rec.value("scenario_hash", std::string()));
  if (hashes.size() > 1 || (hashes.size() == 1 && *hashes.begin() != r.plan.scenario_hash))
    notes.push_back("they come from another scenario document than " + r.name +
                    " as loaded here (other --set values, or an edited file)");
  for (const auto& b : record_builds(records))
    if (b != VCPUSIM_BUILD)
      notes.push_back("some were written by vcpusim build " + b + ", not by this one (" + VCPUSIM_BUILD +
                      "); its model may give other figures");
  return notes;
}

nlohmann::json reproduction_json(const Reproduction& r, const ReproductionResult& res) {
  nlohmann::json j;
  j["reproduction"] = r.name;
  j["source"] = r.source;
  j["metric"] = r.metric;
  j["tolerance_pct"] = r.tolerance_pct;
  j["cells"] = nlohmann::json::array();
  for (const CellResult& c : res.cells) {
    nlohmann::json why = nlohmann::json::object();
    for (std::size_t i = 0; i < r.explain.size() && i < c.explain.size(); ++i)
      why[r.explain[i]] = std::isnan(c.explain[i]) ? nlohmann::json(nullptr) : nlohmann::json(c.explain[i]);
    j["cells"].push_back({{"row", c.pub.row},
                          {"column", c.pub.column.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.pub.column)},
                          {"published", c.pub.value},
                          {"published_stddev", c.pub.stddev >= 0 ? nlohmann::json(c.pub.stddev) : nlohmann::json(nullptr)},
                          {"model", c.model},
                          {"model_stddev", c.model_stddev},
                          {"samples", c.samples},
                          {"diff_pct", c.diff_pct},
                          {"within_tolerance", c.within},
                          {"explain", why}});
  }
  j["summary"] = {{"cells", res.cells.size()},
                  {"within_tolerance", res.within},
                  {"mean_abs_diff_pct", res.mean_abs_diff},
                  {"cells_without_data", res.without_data},
                  {"direction_agree", res.direction_agree},
                  {"direction_total", res.direction_total},
                  {"mae_pp", res.mae_pp},
                  {"significant_changes", res.significant},
                  {"significant_sign_agree", res.significant_agree},
                  {"order_agree", res.order_agree},
                  {"order_total", res.order_total}};
  return j;
}

}  // namespace vcpusim::app
