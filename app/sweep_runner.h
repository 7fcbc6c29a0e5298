// SPDX-License-Identifier: MIT
// This file defines `vcpusim sweep`: run every (column, point, repetition) of a SweepPlan on a
// pool of threads, appending one record per finished run to DIR/records.jsonl. Re-running the
// same command resumes: finished records are skipped, so a killed sweep loses at most the runs
// in flight. Records are identical for any number of jobs (only their order differs).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

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
};

struct SweepSummary {
  std::size_t total = 0, skipped = 0, written = 0;
  std::string records_path;
};

SweepSummary run_sweep(const SweepPlan& plan, const SweepOptions& options, std::ostream& progress);

}  // namespace vcpusim::app
