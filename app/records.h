// SPDX-License-Identifier: MIT
// This file defines the sweep record file, DIR/records.jsonl: a public contract other tools
// read (README "Sweep records"). One JSON object per line, appended and flushed as each
// (point, repetition) finishes:
//   scenario, scenario_hash, column (label or null), point (swept field -> value), repetition,
//   seed, metrics (name -> number), resolved (the full resolved scenario), timing (wall clock).
// Everything but `timing` is a pure function of the scenario, the point and the repetition.
#pragma once

#include <cstdint>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace vcpusim::app {

/// Identity of a record: (column, point key, repetition).
using RecordKey = std::tuple<std::string, std::string, std::uint32_t>;

RecordKey key_of(const nlohmann::json& record);

/// Reads every complete record of a records.jsonl (a torn last line, from a killed run, is
/// ignored). Throws ConfigError for a malformed complete line.
std::vector<nlohmann::json> read_records(const std::string& path);

/// The records in one fixed order, by (column, point key, repetition), whatever order the runs
/// finished and were appended in: sums and means taken in this order are the same to the last
/// bit for any --jobs, shard split or resume.
std::vector<const nlohmann::json*> canonical_order(const std::vector<nlohmann::json>& records);

/// Appends records to a file, one line each, flushed before append() returns; thread-safe.
class RecordWriter {
 public:
  /// Opens (creating) `path`, first cutting a torn last line left by a killed run.
  explicit RecordWriter(const std::string& path);
  void append(const nlohmann::json& record);

 private:
  std::mutex mu_;
  std::ofstream out_;
};

}  // namespace vcpusim::app
