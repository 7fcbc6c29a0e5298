// SPDX-License-Identifier: MIT
// This file defines sweeps: a scenario's `sweep:` and `columns:` blocks expanded into the list of
// (column, point) runs, each a full scenario document with its overrides applied. A sweep is
//   sweep:
//     vms.db.count: [2, 6, 10]         # a dotted path into the scenario and its values
//     zip:                             # groups of paths that move together (equal lengths)
//       - {host.smt: [on, off], vms.db.vcpus: [2, 1]}
//     setup:                           # a labelled axis: label -> overrides (dotted path: value)
//       BM: {vms.client.count: 0}
//       VM: {...}
//   columns:                           # label -> overrides; the first is the natural baseline
//     HT: {host.smt: on}
//     noHT: {host.smt: off}
// Axes combine as a cross product in document order (the last varies fastest). A dotted path
// walks maps by key and lists by the `name:` of their elements (vms.db.count) or by index
// (vms.0.count). Every point is run `repetitions` times with seeds derived from the master seed
// and the point's identity (not its column: columns share seeds, common random numbers), so a
// point's results do not depend on which other points exist or the order they run in.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "app/yaml_reader.h"

namespace vcpusim::app {

struct SweepRun {
  std::string column;      ///< column label, "" when the scenario has no columns
  nlohmann::json point;    ///< swept field -> value (labelled axes: axis -> label); {} if none
  std::string point_key;   ///< canonical text of `point` (its identity)
  std::uint32_t column_index = 0;  ///< position of its column in the sweep (for ordering tables)
  std::uint32_t point_index = 0;   ///< position of its point in the cross product
  YAML::Node document;     ///< the scenario with every override applied (no sweep/columns)
  /// Each override's dotted path and where it was written, in the order applied: a node the
  /// sweep built has no line of its own, so errors found in it are reported here.
  std::vector<std::pair<std::string, YamlReader>> sources;
};

struct SweepPlan {
  std::string name;                 ///< scenario name
  std::string file;
  std::uint64_t seed = 1;
  std::uint32_t repetitions = 1;
  std::vector<std::string> columns; ///< in document order ("" alone when none)
  std::vector<std::string> axes;    ///< swept fields / axis names, in order
  std::vector<SweepRun> runs;       ///< columns x points, column-major
  std::string scenario_hash;        ///< hash of the whole scenario document (records carry it)
  YAML::Node base;                  ///< the scenario less sweep and columns, with its lines
};

/// The most runs (column x point x repetition, before `only:` leaves points out) a sweep may
/// have: a plan of 10^8 points was expanded until memory ran out, with no word said. Every
/// (column, point) holds its own document and loaded scenario (about 24 KB) before the first run
/// starts, so 10^5 of them take 2.4 GB and 30 s to set up (measured, one VM); the largest study
/// here has 576 runs, and 10^5 runs of even 0.1 s are 3 hours of CPU.
inline constexpr std::uint64_t kMaxSweepRuns = 100'000;

/// Expands a scenario document (with optional sweep and columns). Bad paths, unequal zip
/// lengths, a plan of more than kMaxSweepRuns runs and the like are ConfigErrors naming the
/// field.
SweepPlan expand_sweep(const YamlReader& root);

/// Up to this many (column, point) runs, expand_sweep_sample makes every one.
inline constexpr std::uint64_t kSampleEveryRunUpTo = 256;

/// expand_sweep's checks, and some of its runs: every run of a plan of at most
/// kSampleEveryRunUpTo, else for each column the points that give each axis each of its values
/// at least once, and the last point (their point_index is 0). What `vcpusim run` loads to check
/// a file's sweep: expanding every run of a large sweep took longer than running the base.
SweepPlan expand_sweep_sample(const YamlReader& root);

/// The topology files the runs of `plan` read (topology_file() in app/topology_loader.h), each
/// once, in the order of the runs: inputs of the command, which no output may replace. A value
/// that names no file is left out: loading that run reports it, in its place.
std::vector<std::string> topology_files(const SweepPlan& plan);

/// A dotted override path as the loader names fields, walking `base` ("vms.a.count" is
/// "vms[0].count" when VM a is the first element of vms:); past the base's end the rest of the
/// path is joined by dots.
std::string override_field(const YAML::Node& base, const std::string& path);
/// Whether loader field `inner` is `outer` or inside it ("vms[0].vcpus" is inside "vms[0]"; every
/// field is inside "").
bool field_within(const std::string& inner, const std::string& outer);

/// Whether `base` has a node at loader field `field` ("vms[0].workload").
bool has_field(const YAML::Node& base, const std::string& field);

/// A ConfigError raised while loading `run`'s document, placed where the user wrote the cause
/// when it names a node the sweep built (line 0): an overridden value's own line, else the base
/// document's node at that field, else the override that created the field; the message then
/// names the run. Other errors are returned unchanged.
ConfigError locate_in_sweep(const SweepPlan& plan, const SweepRun& run, const ConfigError& e);

/// The seed of repetition `rep` at a point: derived from the master seed and the point's
/// identity (and nothing else).
std::uint64_t point_seed(std::uint64_t master, const std::string& point_key, std::uint32_t rep);

/// A container one batch of overrides has copied into its document, with its keys' value slots
/// once an override has looked a key up in it (a mapping's only).
struct OverrideCopy {
  YAML::Node node;
  /// Scalar key -> the node that holds its value in `node`, built on the first look-up: yaml-cpp
  /// finds a key by comparing it with every key in turn, so 10,000 --set options of one mapping
  /// made 50 million comparisons.
  std::unordered_map<std::string, YAML::Node> slots;
  bool indexed = false;  ///< whether `slots` holds every key of `node`
};

/// The containers one batch of overrides has already copied into its document, by resolved
/// path (list elements by index; the document itself at ""): a later override of the batch
/// writes into them in place.
using OverrideCopies = std::map<std::string, OverrideCopy>;

/// Applies `value` at dotted `path` in `doc` (a shallow_copy made by the caller), copying on
/// write so that documents sharing parts with `doc` are untouched. `at` locates the override
/// for error messages. Overrides applied to one document in a row may share `copies`, so that
/// each container on their paths is copied once, not once per override (n overrides of one
/// mapping cost n^2 otherwise), and each key of a copied mapping is looked up once, by an index
/// (n overrides into one mapping compared n^2 keys otherwise); between the overrides of a batch,
/// the caller reads `doc` through const nodes only, since a non-const look-up of a missing key
/// adds it out of the index's sight. `field`, if given, receives the field set, as override_field
/// names it in `doc` before the change ("vms[0].name" for vms.web.name).
void apply_override(YAML::Node doc, const std::string& path, const YAML::Node& value, const YamlReader& at,
                    OverrideCopies* copies = nullptr, std::string* field = nullptr);

/// A deep copy sharing nothing with `n` (so no node pool with it), every node without a line.
YAML::Node copy_without_marks(const YAML::Node& n);

/// Fails at `at` unless `path` is a dotted path: no empty part, at most 64 parts.
void check_dotted_path(const std::string& path, const YamlReader& at);

/// Fails at `at` unless `path` leads to a setting of one run: not sweep:, columns:, seed or
/// repetitions, which the sweep reads once from the file.
void check_run_setting(const std::string& path, const YamlReader& at);

/// A new container whose entries share the originals (marks kept); see apply_override.
YAML::Node shallow_copy(const YAML::Node& n);

/// A YAML node as JSON: integers, numbers and booleans typed, other scalars as strings.
nlohmann::json yaml_to_json(const YAML::Node& n);

}  // namespace vcpusim::app
