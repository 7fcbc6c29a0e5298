// SPDX-License-Identifier: MIT
// This file defines `vcpusim compare`: sweep records read as the kernel and Xen lists read
// benchmarks, in mmtests compare tables (../shared/reference/mmtests-format.md). Rows are
// statistics by operation (the `--by` field's values), columns the sweep's columns with the
// baseline first; each cell is `value ( x.xx%)`, the percentage against the baseline with
// positive meaning better; the mean row of a significantly different column is marked
// `* x.xx%*`. Significance: the old mmtests two-sample t-test (p < 0.10, the default) or the
// current interval rule (|difference| > 1.96 x (SD_base + SD_new)), named in the header.
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/records.h"

namespace vcpusim::app {

enum class SignificanceRule { kTTest, kInterval };

struct CompareOptions {
  std::string metric;                ///< a metric name in the records (empty: chosen when unambiguous)
  std::string baseline;              ///< column label (empty: the first column)
  std::string by;                    ///< point field that names the operations (empty: chosen)
  bool higher_is_better = true;      ///< Hmean rows when true, Amean when false (mmtests)
  SignificanceRule rule = SignificanceRule::kTTest;
  std::string format = "text";       ///< text | csv | json | markdown
};

/// Samples of one metric grouped for a table: columns in order, operations in order.
struct Grouped {
  std::string scenario, metric, by;
  std::vector<std::string> columns;                        ///< baseline first
  std::vector<std::string> ops;                            ///< operation labels in order
  std::map<std::pair<std::string, std::string>, std::vector<double>> samples;  ///< (column, op)
  LackingMetric lacking;                                   ///< records without the metric, by "op / column"
};

/// Groups records (from one scenario) for `metric`. ConfigError for an unknown metric, column
/// or field, naming the ones that exist.
Grouped group_records(const std::vector<nlohmann::json>& records, const CompareOptions& o);

/// One rendered cell of a compare table.
struct CompareCell {
  std::string stat, op, column;
  /// None at an operation where no column has a sample (every record there lacks the metric):
  /// its row is shown with empty cells, so that the table has one row per operation.
  std::optional<double> value;
  /// Against the baseline's cell of the same row; none where the baseline has no sample at this
  /// operation (there is nothing to compare with: it showed 0.00%, read as "no change").
  std::optional<double> pct;
  bool significant = false;   ///< only on the mean row of non-baseline columns
};

std::vector<CompareCell> compare_cells(const Grouped& g, const CompareOptions& o);
/// The "op / column" cells whose samples include one <= 0, where the Hmean rows are 0 (empty
/// when lower is better: Amean rows).
std::vector<std::string> nonpositive_cells(const Grouped& g, const CompareOptions& o);
/// The "op / column" cells that have samples where the baseline column has none at that
/// operation: cells without a percentage.
std::vector<std::string> cells_without_baseline(const Grouped& g);

void write_compare(std::ostream& os, const Grouped& g, const std::vector<CompareCell>& cells, const CompareOptions& o);

/// mmtests Stat.pm pdiff (higher-is-better) and pndiff (lower-is-better), with their edge cases.
double pdiff(double now, double base);
double pndiff(double now, double base);
/// Whether `now` differs from `base` significantly by the rule (see the file comment).
bool significant(const std::vector<double>& base, const std::vector<double>& now, bool higher_is_better,
                 SignificanceRule rule);

}  // namespace vcpusim::app
