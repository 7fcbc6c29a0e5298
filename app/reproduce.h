// SPDX-License-Identifier: MIT
// This file defines reproductions: a published table and the scenario that answers it, as data
// in configs/reproduce/NAME.yaml, and `vcpusim reproduce NAME`, which runs the sweep (or reads
// finished records) and prints the model beside the publication through the compare code, with
// the per-cell difference and a summary: cells within tolerance, direction agreement of the %
// changes against the baseline, and the mean absolute error of those changes in points.
//
// File format:
//   source: "the mail it answers (subject, author, ../shared/calibration/FILE)"
//   description: "..."
//   metric: vm.cpu.throughput       # the record metric the published number measures
//   higher_is_better: true
//   rows: case                      # the swept field whose values are the published rows
//   baseline: {row: Alone}          # or {column: HT}: what the % changes are against
//   tolerance_pct: 5                # a cell is within tolerance when |model/published - 1| <= this
//   scenario: {...}                 # a scenario with sweep: (and columns:, when the table has them)
//   published:
//     - {row: Alone, column: null, value: 1306.90, stddev: 0.94}
//   explain: [remote_memory, vm.db.spin_pct]  # optional: metrics printed per cell, the model's
//       # reasons: a bare name is a per-VM metric (vm.*.NAME) averaged over the cell's VMs and
//       # repetitions; a dotted name is one record metric averaged over repetitions
// With a baseline column and exactly two columns (base / patched tables, as mailing lists print
// them), the output also has the published and the model improvement side by side: base,
// stdev, patched, stdev, % improvement, whether the published change exceeds its noise
// (|patched - base| > sqrt(sd_base^2 + sd_patched^2)) and whether the model's sign agrees.
#pragma once

#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/command_line_sets.h"
#include "app/sweep.h"

namespace vcpusim::app {

struct PublishedCell {
  std::string row, column, note;
  double value = 0, stddev = -1;  ///< stddev < 0: not published
};

struct Reproduction {
  std::string name, file, source, description, metric, rows;
  bool higher_is_better = true;
  /// The model mean set beside the published value: the publication's own statistic (`mean:`
  /// arithmetic or harmonic; default harmonic for higher-is-better metrics, as mmtests' Hmean,
  /// else arithmetic).
  bool harmonic = true;
  std::string baseline_row, baseline_column;  ///< one of the two is set
  double tolerance_pct = 10;
  std::vector<PublishedCell> published;
  std::vector<std::string> explain;  ///< per-VM metric names, or full record metric names
  SweepPlan plan;
};

/// Names of configs/reproduce/*.yaml.
std::vector<std::string> list_reproductions();
/// One `--row-set ROW PATH=VALUE`: an override for one published row's runs only.
struct RowOverride {
  std::string row, path, value;
};

/// Loads configs/reproduce/NAME.yaml (or a path). `overrides` (path=value) apply to the scenario;
/// each of `row_overrides` is added to its row's entry under `sweep: ROWS:` (a key beside the
/// row's own, so only that row's runs see it, as if the file said so). A row that is no entry of
/// that sweep field, or a field whose rows are bare values, is a ConfigError naming `--row-set`.
Reproduction load_reproduction(const std::string& name_or_path, const std::vector<CommandLineSet>& overrides,
                               const std::vector<RowOverride>& row_overrides = {});

/// Narrows `r` to the published rows in `rows` and its baseline row, if it has one (the %
/// changes need it): the other published cells are dropped. A name that is no published row is
/// a ConfigError naming `--row`. Empty `rows`: no change.
void select_rows(Reproduction& r, const std::vector<std::string>& rows);
/// Whether the run is one of `r`'s published rows (after select_rows: one of those selected).
bool runs_published_row(const Reproduction& r, const SweepRun& run);

struct CellResult {
  PublishedCell pub;
  double model = 0, model_stddev = 0;
  std::size_t samples = 0;
  double diff_pct = 0;
  bool within = false;
  std::vector<double> explain;  ///< by Reproduction::explain; NaN where no record has it
};

struct ReproductionResult {
  std::vector<CellResult> cells;
  std::size_t within = 0;
  std::size_t direction_total = 0, direction_agree = 0;
  double mae_pp = 0;          ///< mean |model % change - published % change|, in points
  double mean_abs_diff = 0;   ///< mean |diff_pct| over cells with model data
  std::size_t without_data = 0;  ///< cells no record gave a model value (an unfinished --from)
  /// Two-column tables: rows whose published change exceeds its noise, and how many of those
  /// the model gets the sign of, by a change beyond its own noise (hypot of its two stddevs).
  std::size_t significant = 0, significant_agree = 0;
  /// The published ordering of the rows within each column: over every pair of rows of one
  /// column with model data, whether the model orders them as the publication does (a pair the
  /// publication ties, or whose difference is within both published stddevs, is skipped; a pair
  /// the model separates by no more than both its stddevs counts as a tie, which disagrees).
  std::size_t order_total = 0, order_agree = 0;
  std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> order_by_column;  ///< column -> (agree, total)
};

/// Two-column tables with a baseline column: (baseline cell, other cell) per row; else empty.
std::vector<std::pair<const CellResult*, const CellResult*>> column_pairs(const Reproduction& r,
                                                                          const ReproductionResult& res);
/// The sign of the model's change from `base` to `other`: +1 or -1, 0 when the change is within
/// the model's own spread (hypot of the two cells' stddevs).
int model_sign(const CellResult& base, const CellResult& other);
ReproductionResult evaluate(const Reproduction& r, const std::vector<nlohmann::json>& records);
void write_reproduction(std::ostream& os, const Reproduction& r, const std::vector<nlohmann::json>& records,
                        const ReproductionResult& res);
nlohmann::json reproduction_json(const Reproduction& r, const ReproductionResult& res);
/// The builds (`vcpusim_build`) that wrote `records`, sorted, "(none)" for records without one.
std::set<std::string> record_builds(const std::vector<nlohmann::json>& records);
/// What a reader of `records` (read with --from, as they are) should know: one line each when they
/// come from another scenario document than `r` as loaded, or from another build than this one.
std::vector<std::string> provenance_notes(const Reproduction& r, const std::vector<nlohmann::json>& records);

}  // namespace vcpusim::app
