// SPDX-License-Identifier: MIT
// This file defines `vcpusim sweep`: run every (column, point, repetition) of a SweepPlan on a
// pool of threads, appending one record per finished run to DIR/records.jsonl. Re-running the
// same command resumes: finished records are skipped, so a killed sweep loses at most the runs
// in flight. Records are identical for any number of jobs (only their order differs).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/records.h"
#include "app/scenario.h"
#include "app/sweep.h"

namespace vcpusim::app {

struct SweepOptions {
  std::string out_dir;
  unsigned jobs = 0;                 ///< 0: every core
  std::uint64_t max_records = 0;     ///< stop after this many new records (0: no limit); tests use it as a kill
  bool progress_bar = false;         ///< a redrawn bar (stderr is a terminal) instead of periodic lines
  /// Run only shard K of N (1 <= K <= N): the (point, repetition) pairs whose task index i
  /// (column-major, repetition fastest, over the whole plan) has i mod N == K - 1. The shards
  /// of one N partition the sweep exactly, whatever each has finished already.
  std::uint32_t shard = 1, shards = 1;
  /// Run only the plan's runs this accepts (every run when empty). Task indices, seeds and
  /// records stay those of the whole plan, so a later run without the filter resumes them.
  std::function<bool(const SweepRun&)> only{};
};

struct SweepSummary {
  std::size_t total = 0, skipped = 0, written = 0;
  std::string records_path;
};

SweepSummary run_sweep(const SweepPlan& plan, const SweepOptions& options, std::ostream& progress);

// ---- the parts shared by run_sweep and the MPI sweep (app/mpi_sweep.h) ----

/// The work of one sweep invocation: the tasks of this shard not yet finished, in plan order.
struct SweepWork {
  SweepSummary summary;                ///< total and skipped filled in; records_path set
  std::vector<std::size_t> todo;       ///< task indices (run * repetitions + repetition), max_records applied
};

/// Creates the output directory, reads the finished records (refusing another scenario's, or
/// ones whose column_index or point_index disagree with their labels or the plan: a ConfigError)
/// and lists the tasks left for shard `options.shard` of `options.shards`.
SweepWork plan_sweep_work(const SweepPlan& plan, const SweepOptions& options);

/// Loads (and so validates) the scenario of every run of the plan.
std::vector<ScenarioSpec> load_sweep_specs(const SweepPlan& plan);

/// Runs task `task_index` (run = index / repetitions, repetition = index % repetitions) with
/// `spec` (that run's loaded scenario) and returns its record (README "Sweep records").
nlohmann::json run_sweep_task(const SweepPlan& plan, const ScenarioSpec& spec, std::size_t task_index);

/// Progress on a stream: a redrawn bar, or a plain line every 5 s, and warnings; thread-safe.
class SweepProgress {
 public:
  SweepProgress(std::ostream& os, bool bar, std::size_t total);
  void done_one();
  /// Prints `line` on a line of its own (a warning), between bar redraws.
  void note(const std::string& line);
  /// Until release(), runs are counted but not drawn: what a warning about the start-up (note())
  /// says comes before any progress. release() draws what was counted meanwhile.
  void hold();
  void release();

 private:
  using clock = std::chrono::steady_clock;
  void draw(clock::time_point now);  // with mu_ held
  std::ostream& os_;
  bool bar_, held_ = false;
  std::size_t total_, done_ = 0;
  clock::time_point t0_, last_;
  std::mutex mu_;
};

}  // namespace vcpusim::app
