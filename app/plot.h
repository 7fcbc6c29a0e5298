// SPDX-License-Identifier: MIT
// This file defines figures drawn with gnuplot (Debian package gnuplot-nox):
//   - `vcpusim plot DIR --x FIELD --y METRIC [--by FIELD|column]`: from sweep records, one line
//     per value of --by (default: per column), x = the swept field's values (a numeric axis when
//     every value is a number, else categorical), y = the metric's arithmetic mean over the
//     repetitions with error bars of +/- one sample standard deviation (n - 1), as the key says;
//   - `vcpusim reproduce NAME --plot FIG`: per published row (categorical x) and column, the
//     published value (with its stddev where published) beside the model's mean and stddev.
// The data and the script go to one temporary gnuplot file, run with `gnuplot FILE` (or
// $VCPUSIM_GNUPLOT); the terminal follows the output's extension: .png (pngcairo, else png) or
// .svg. Unknown fields, metrics or extensions are ConfigErrors (exit 2); a missing or failing
// gnuplot is a std::runtime_error (exit 1).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/reproduce.h"

namespace vcpusim::app {

struct PlotOptions {
  std::string x;       ///< swept field on the x axis (required)
  std::string metric;  ///< record metric on the y axis (required)
  std::string by;      ///< "column" (or empty: the columns), or another swept field: one line per value
  std::string out;     ///< FIG.png or FIG.svg
  std::string title;   ///< empty: "SCENARIO: METRIC by X"
};

/// Checks that a figure path names a format (.png or .svg, any case) before anything runs;
/// ConfigError naming `option` (the flag the path came from) otherwise.
void check_figure_path(const std::string& out, const std::string& option);

/// The gnuplot script (data included as datablocks) for a sweep plot. ConfigError for an
/// unknown field or metric, naming the ones that exist.
/// With `note`, it also says there which records lacked the metric and were left out ("" if none).
std::string sweep_plot_script(const std::vector<nlohmann::json>& records, const PlotOptions& o, std::string* note = nullptr);

/// The gnuplot script drawing a reproduction's model beside its published cells.
std::string reproduction_plot_script(const Reproduction& r, const ReproductionResult& res, const std::string& out,
                                     const std::string& title);

/// Runs gnuplot on `script`, which writes `out`: drawn into a temporary file beside it and renamed
/// over it, as write_atomically writes results (a link stays a link; a failure keeps the previous
/// figure). Throws std::runtime_error when gnuplot is missing, fails, or writes nothing.
void run_gnuplot(const std::string& script, const std::string& out);

/// sweep_plot_script + run_gnuplot.
void plot_records(const std::vector<nlohmann::json>& records, const PlotOptions& o);
/// reproduction_plot_script + run_gnuplot.
void plot_reproduction(const Reproduction& r, const ReproductionResult& res, const std::string& out,
                       const std::string& title = "");

}  // namespace vcpusim::app
