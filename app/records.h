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
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace vcpusim::app {

/// Identity of a record: (column, point key, repetition).
using RecordKey = std::tuple<std::string, std::string, std::uint32_t>;

RecordKey key_of(const nlohmann::json& record);

/// The swept fields a record's point names ("a, b"), as read_records compares them.
std::string point_fields(const nlohmann::json& point);

/// Where a record was read: its file and line (line 0 for one that is no line of a file, such
/// as the runs a scenario plans). The checks across records name both places, so that a user
/// can open the two lines that disagree.
struct RecordPlace {
  std::string file;
  int line = 0;
  /// This place as a message about the record at `here` names it: "at line 3 of F", "at line 3
  /// of this file" (here's file), or "in F" when it has no line.
  std::string named_from(const RecordPlace& here) const;
};

/// Checks that every record given to it, from any file, names the same swept fields; else a
/// ConfigError naming `at` and the first record's place. (read_records checks this within one file.)
class SweptFields {
 public:
  void check(const nlohmann::json& record, const RecordPlace& at);

 private:
  std::string fields_;
  RecordPlace from_;
  bool first_ = true;
};

/// Checks that the records given to it, from any file, give each column one column_index and each
/// index one column, and each point (as tables print it) one point_index and each index one
/// point; else a ConfigError naming `at` and the place of the other record.
class SweepIndices {
 public:
  void check(const nlohmann::json& record, const RecordPlace& at);

 private:
  class OneToOne {
   public:
    /// `field`: the record's index field; `noun`: what it numbers, as messages name it
    /// ("column", "point"); `quote`: whether a label is quoted in them.
    OneToOne(std::string field, std::string noun, bool quote)
        : field_(std::move(field)), noun_(std::move(noun)), quote_(quote) {}
    void check(const std::string& label, std::uint64_t index, const RecordPlace& at);

   private:
    std::string field_, noun_;
    bool quote_;
    std::map<std::uint64_t, std::pair<std::string, RecordPlace>> label_of_;  // index -> label, its first place
    std::map<std::string, std::pair<std::uint64_t, RecordPlace>> index_of_;  // label -> index, its first place
  };
  OneToOne columns_{"column_index", "column", true}, points_{"point_index", "point", false};
};

/// A record's point as tables print it ({field=value, ...}, values by value_label: 2 and 2.0,
/// 4 and "4" are one row).
std::string point_label(const nlohmann::json& point);
/// key_of with the point as tables print it: the identity compare, plot and merge count by.
RecordKey table_key_of(const nlohmann::json& record);

/// A record whose key the record at `kept_from` already holds is a copy of the same run
/// (overlapping shards, a repeated line) only if its seed and metrics are the same; else one of
/// two different runs would be dropped, so this throws ConfigError naming `at` and `kept_from`.
void check_same_run(const nlohmann::json& kept, const RecordPlace& kept_from, const nlohmann::json& again,
                    const RecordPlace& at);

/// Reads every complete record of a records.jsonl (a torn last line, from a killed run, is
/// ignored). Throws ConfigError for a malformed complete line. With `lines`, it also gives each
/// record's line number (1-based, blank lines counted), in the same order.
std::vector<nlohmann::json> read_records(const std::string& path, std::vector<int>* lines = nullptr);

/// A record and where it was read.
struct PlacedRecord {
  nlohmann::json record;
  RecordPlace place;
};

/// read_records, each record with its file and line, for checks across records that name both.
std::vector<PlacedRecord> read_placed_records(const std::string& path);

/// Checks that records are of one sweep: the scenario_hash and vcpusim_build of the first one
/// checked. Records of two scenarios (or of two builds, maybe two models) were mixed without a
/// word in one table, as a merge of them would have been.
class OneSweep {
 public:
  /// `command` ("merge", "compare") ends the message: "refusing to merge".
  explicit OneSweep(std::string command) : command_(std::move(command)) {}
  /// ConfigError naming `at`, where `record` is from, when it is another sweep's.
  void check(const nlohmann::json& record, const RecordPlace& at);

 private:
  std::string command_, hash_, build_;
  RecordPlace first_from_;
  bool first_ = true;
};

/// The checks every reader of several sweep outputs (compare, plot, merge) makes of each record,
/// in this order: one sweep (OneSweep), one set of swept fields (SweptFields), one index for each
/// column and point (SweepIndices).
class SweepRecordChecks {
 public:
  explicit SweepRecordChecks(std::string command) : one_(std::move(command)) {}
  void check(const nlohmann::json& record, const RecordPlace& at) {
    one_.check(record, at);
    fields_.check(record, at);  // read_records checks it within a file; this, across files
    indices_.check(record, at);
  }

 private:
  OneSweep one_;
  SweptFields fields_;
  SweepIndices indices_;
};

/// The records file an output argument names: DIR/records.jsonl for a directory, else the file.
std::string records_file_of(const std::string& dir_or_file);

/// The records of sweep outputs (directories, or records.jsonl files) that `command` reads as
/// one: ConfigError for an input with no records file, for two inputs that name one records file
/// (however spelt: `A`, `A/`, `A/records.jsonl`, a link), for records of two sweeps (OneSweep) and
/// for no record at all, naming the inputs.
std::vector<nlohmann::json> read_sweep_outputs(const std::vector<std::string>& inputs, const std::string& command);

/// The records in one fixed order, by (column, point key, repetition), whatever order the runs
/// finished and were appended in: sums and means taken in this order are the same to the last
/// bit for any --jobs, shard split or resume.
std::vector<const nlohmann::json*> canonical_order(const std::vector<nlohmann::json>& records);

/// The column labels in sweep order (column_index; "" for a sweep without columns). ConfigError
/// when one index carries two labels or one label two indices: records of edited or mixed sweeps,
/// which would drop a column's runs from a table or draw them twice.
std::vector<std::string> columns_in_order(const std::vector<nlohmann::json>& records);

/// The names in `metrics` that share `wanted`'s prefix up to its last dot (vm.web.throughput for
/// vm.web.throughptu: a slip in the last part is the likely one); none when it has no dot.
std::vector<std::string> metric_names_near(const std::set<std::string>& metrics, const std::string& wanted);

/// The metric names to offer for `wanted` (a name the records lack, or "" when none was given):
/// those under its prefix (vm.web. for vm.web.throughptu) when there are any, else all, at most
/// 40 with a count of the rest (a large sweep's records have thousands: the message was 20 KB).
std::string metric_names_hint(const std::set<std::string>& metrics, const std::string& wanted);

/// The records a table or figure leaves out because they lack its metric (a per-VM metric such as
/// vm.web-3.throughput exists only at points with that VM), counted by where they would have gone
/// ("2 / new-B"; "HT at vms.web.count=1"), in the order first met. They were left out unsaid.
class LackingMetric {
 public:
  void count(const std::string& where);
  bool empty() const { return counts_.empty(); }
  /// "3 record(s) have no metric 'M' and are left out: 2 / new-B (1), 3 / HT (2)"; "" when none.
  std::string note(const std::string& metric) const;

 private:
  std::vector<std::pair<std::string, std::size_t>> counts_;  ///< in the order first met
  std::map<std::string, std::size_t> slot_;                  ///< where -> index in counts_
  std::size_t total_ = 0;
};

/// Appends records to a file, one line each, flushed before append() returns; thread-safe.
class RecordWriter {
 public:
  /// Opens (creating) `path`, first cutting a torn last line left by a killed run.
  explicit RecordWriter(const std::string& path);
  /// Appends one line and flushes it; a std::runtime_error naming the file when that fails (a
  /// full disk), so that the sweep stops instead of counting records it lost. Every append after
  /// a failure throws that first failure's message again.
  void append(const nlohmann::json& record);

 private:
  std::mutex mu_;
  std::ofstream out_;
  std::string path_;
  std::string failure_;  // the first failed append's message; empty while every write worked
};

}  // namespace vcpusim::app
