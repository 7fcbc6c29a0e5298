// SPDX-License-Identifier: MIT
// This file defines `vcpusim merge`: joining the records.jsonl of several sweep outputs (the
// shards of one sweep run under a batch system) into one directory. It refuses records of a
// different scenario (their scenario_hash differs), keeps one of any duplicated record and
// reports it, and reports the tasks no input holds.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace vcpusim::app {

struct MergeReport {
  std::size_t records = 0;                 ///< written to the output
  std::size_t duplicates = 0;              ///< identical keys seen more than once (one kept)
  std::vector<std::size_t> missing;        ///< task indices of the sweep no input holds
  std::size_t tasks_total = 0;
  std::string out_path;
};

/// Records already in `out_dir` are read as one more input. Throws ConfigError naming the input
/// whose records belong to another scenario (out_dir's own included, which then stay as they were).
MergeReport merge_records(const std::vector<std::string>& inputs, const std::string& out_dir);

}  // namespace vcpusim::app
