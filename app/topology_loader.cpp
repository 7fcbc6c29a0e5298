// SPDX-License-Identifier: MIT
// This file implements the topology loader (see topology_loader.h): it resolves a preset name or
// a path to a file, reads the mapping through YamlReader so every bad key, type or value names its
// line, and, in load_topology(), maps a TopologyError from build_topology() back to the YAML node
// of the field (or matrix element) it names. Keeping the reader of the mapping next to the spot
// the spec came from is what lets that error land in the right file.
#include "app/topology_loader.h"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "app/config_paths.h"
#include "app/text.h"

namespace vcpusim::app {
namespace {
namespace fs = std::filesystem;

// Shape limits. A CpuSet holds 512 threads, so no count can usefully exceed it; build_topology()
// checks the product. 8 threads per core is build_topology()'s limit too (POWER8 SMT8).
constexpr std::int64_t kMaxCount = topo::CpuSet::kCapacity;
constexpr std::int64_t kMaxThreadsPerCore = 8;
// A sanity bound, not a machine: 1e9 MB/s (1 PB/s) is far above any node's memory bandwidth.
constexpr double kMaxBandwidthMbps = 1e9;

// The spec and the mapping it was read from (the inline value, or a topology file's root), so an
// error found later can be reported at the right node of the right file.
struct Source {
  topo::TopologySpec spec;
  YamlReader map;
};

std::string join(const std::vector<std::string>& xs, const char* sep) {
  std::string s;
  for (const auto& x : xs) s += (s.empty() ? "" : sep) + x;
  return s;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool is_preset_name(const std::string& s) {
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  return !s.empty() && s.front() != '.';
}

bool looks_like_path(const std::string& s) {
  auto ends_with = [&](const std::string& suf) {
    return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
  };
  return s.find('/') != std::string::npos || ends_with(".yaml") || ends_with(".yml");
}

std::string searched_dirs() {
  std::vector<std::string> dirs = config_search_dirs();
  return dirs.empty() ? "no config directory is known; set VCPUSIM_CONFIG_DIR" : "searched " + join(dirs, ", ");
}

// The file a scalar `topology:` value names.
std::string locate(const YamlReader& r, const std::string& value) {
  if (!looks_like_path(value)) {
    if (!is_preset_name(value)) r.fail("'" + value + "' is neither a preset name nor a path to a .yaml file");
    ConfigMiss miss;
    std::string p = find_config("topologies/" + value + ".yaml", &miss);
    if (p.empty()) {
      // A preset that is there but cannot be reached (a loop of symbolic links) is named with
      // the system's reason, as a topology path is below.
      if (!miss.reason.empty()) r.fail("topology preset '" + value + "' (" + miss.path + "): " + miss.reason);
      std::vector<std::string> known = list_topology_presets();
      r.fail("unknown topology preset '" + value + "' (" +
             (known.empty() ? searched_dirs() : "known: " + join(known, ", ")) + ")");
    }
    return p;
  }
  fs::path p(value);
  if (p.is_absolute()) {
    if (is_file(p)) return p.string();
    std::error_code ec;
    if (fs::exists(p, ec)) r.fail("'" + value + "' is not a regular file (a topology file is a .yaml file)");
    // exists() clears ec for a name that is simply not there; what is left is why nothing can be
    // read at it: a loop of symbolic links, a directory that may not be searched ("not found"
    // sent one looking for a typo in a name that was right).
    if (ec) r.fail("topology file '" + value + "': " + ec.message());
    r.fail("topology file '" + value + "' not found");
  }
  // Relative to the file that names it, as an #include would be; then relative to a config
  // directory, so a scenario may write `topologies/xeon-x5570-2s.yaml` from anywhere.
  fs::path beside = fs::path(r.file()).parent_path() / p;
  if (is_file(beside)) return beside.string();
  ConfigMiss miss;
  std::string in_configs = find_config(value, &miss);
  if (!in_configs.empty() && is_file(in_configs)) return in_configs;
  // Something is there, but no file: say so, as for an absolute path ("not found" sent one
  // looking for a typo in a name that was right).
  std::error_code ec;
  if (fs::exists(beside, ec) || !in_configs.empty())
    r.fail("'" + value + "' is not a regular file (a topology file is a .yaml file)");
  if (ec)
    r.fail("topology file '" + value + "'" + (beside == p ? "" : " (" + beside.string() + ")") + ": " + ec.message());
  if (!miss.reason.empty()) r.fail("topology file '" + value + "' (" + miss.path + "): " + miss.reason);
  r.fail("topology file '" + value + "' not found (looked beside " + r.file() + "; " + searched_dirs() + ")");
}

std::uint32_t get_count(const YamlReader& m, std::string_view key, std::int64_t hi) {
  m.at(key);  // required: a machine's shape is never guessed
  return static_cast<std::uint32_t>(m.get_int(key, 0, 1, hi));
}

// A nodes x nodes list of lists of positive numbers, flattened row-major. The SLIT rules are
// build_topology()'s checks (mapped back to the element by load_topology()).
std::vector<double> get_matrix(const YamlReader& m, std::string_view key, std::size_t nodes) {
  if (!m.has(key)) return {};
  YamlReader mat = m.at(key);
  if (!mat.is_sequence()) mat.fail("expected a list of rows, e.g. [[10, 21], [21, 10]]");
  const std::size_t n = mat.size();
  if (n != nodes)
    mat.fail("has " + std::to_string(n) + " rows, expected one per node (" + std::to_string(nodes) + ")");
  std::vector<double> out;
  out.reserve(n * n);
  for (std::size_t i = 0; i < n; ++i) {
    YamlReader row = mat.at(i);
    if (!row.is_sequence()) row.fail("expected a row (a list of numbers)");
    if (row.size() != n)
      row.fail("has " + std::to_string(row.size()) + " values, expected one per node (" + std::to_string(n) + ")");
    for (std::size_t j = 0; j < n; ++j) {
      YamlReader e = row.at(j);
      double v = e.as_double();
      if (!(v > 0)) e.fail("must be positive");
      // A SLIT entry is a byte: 20.5 was taken and the NUMA factor came out between 20's and 21's.
      if (key == "distances" && v != std::floor(v)) e.fail("a SLIT distance is a whole number (one byte)");
      // 1e-300 ns and 1e308 ns were taken: no memory answers in under a nanosecond or after a
      // millisecond (DRAM is 50-150 ns, a remote hop adds at most a few hundred).
      if (key == "latency_ns" && (v < 1 || v > 1e6))
        e.fail(e.as_string() + " is out of range [1, 1000000] (ns)");
      out.push_back(v);
    }
  }
  return out;
}

topo::TopologySpec spec_from_map(const YamlReader& m, const std::string& default_name) {
  m.require_map();
  m.only({"name", "sockets", "cores_per_socket", "threads_per_core", "nodes", "distances", "latency_ns",
          "node_bandwidth_mbps", "remote_bandwidth_ratio", "cores_per_llc"});
  topo::TopologySpec s;
  s.name = m.get_string("name", default_name);
  // Without `name:` the name is the file's (see the scenario's in scenario_loader.cpp).
  if (s.name.find_first_not_of(" \t") == std::string::npos)
    (m.has("name") ? m.at("name") : m)
        .fail(std::string("a topology's name is not blank (reports print it)") +
              (m.has("name") ? "" : "; without name: it is the file's name, here blank: give name:"));
  if (has_control_character(s.name))
    (m.has("name") ? m.at("name") : m).fail("a topology's name holds no control character (reports print it)");
  s.sockets = get_count(m, "sockets", kMaxCount);
  s.cores_per_socket = get_count(m, "cores_per_socket", kMaxCount);
  s.threads_per_core = get_count(m, "threads_per_core", kMaxThreadsPerCore);
  s.nodes = get_count(m, "nodes", kMaxCount);
  // Optional: without it, one LLC per node within a socket (topology_spec.h).
  if (m.has("cores_per_llc")) s.cores_per_llc = static_cast<std::uint32_t>(m.get_int("cores_per_llc", 0, 1, kMaxCount));
  s.distances = get_matrix(m, "distances", s.nodes);
  s.latency_ns = get_matrix(m, "latency_ns", s.nodes);
  s.node_bandwidth_mbps = m.get_double("node_bandwidth_mbps", 0.0, 0.0, kMaxBandwidthMbps);
  // 1e-9 MB/s ran, its memory-bound threads all but stopped: a typo (a unit slip) that reports
  // looked like a result. No memory moves less than 1 MB/s.
  if (s.node_bandwidth_mbps > 0 && s.node_bandwidth_mbps < 1)
    m.at("node_bandwidth_mbps").fail("is 0 (unlimited) or at least 1 MB/s; no node's memory is slower");
  s.remote_bandwidth_ratio = m.get_double("remote_bandwidth_ratio", s.remote_bandwidth_ratio, 0.0, 1.0);
  // No remote bandwidth at all would make remote memory unusable, and 1e-300 ran with remote
  // threads at 0.00 MiB/s: the floor is 1% of local (measured ratios are 0.2-0.9, note 5).
  if (s.remote_bandwidth_ratio < 0.01)
    m.at("remote_bandwidth_ratio").fail("is at least 0.01 (1% of the local bandwidth); no interconnect is slower");
  return s;
}

Source resolve(const YamlReader& r) {
  if (r.is_map()) return {spec_from_map(r, "inline"), r};
  const std::string path = topology_file(r);
  YamlReader file = YamlReader::load_file(path);
  if (!file.is_map()) file.fail("a topology file holds a mapping (sockets, cores_per_socket, ...)");
  return {spec_from_map(file, fs::path(path).stem().string()), file};
}

}  // namespace

std::string topology_file(const YamlReader& r) {
  if (r.is_map()) return "";
  if (!r.is_scalar() || r.is_null())
    r.fail("expected a preset name, a path to a topology file, or a mapping");
  return locate(r, r.as_string());
}

topo::TopologySpec load_topology_spec(const YamlReader& r) { return resolve(r).spec; }

topo::Topology load_topology(const YamlReader& r) {
  Source src = resolve(r);
  try {
    return topo::build_topology(src.spec);
  } catch (const topo::TopologyError& e) {
    if (src.map.has(e.field)) {
      YamlReader node = src.map.at(e.field);
      // A matrix element: the loader flattened a square n x n list, so index / n is the row.
      if (e.index >= 0 && node.is_sequence() && node.size() > 0) {
        const std::size_t n = node.size(), i = static_cast<std::size_t>(e.index);
        if (i < n * n) node.at(i / n).at(i % n).fail(e.what());
      }
      node.fail(e.what());
    }
    // The field was left out (a default made the spec inconsistent): report at the value that
    // named the machine, saying which file it came from if not this one.
    std::string what = e.what();
    if (src.map.file() != r.file()) what += " (topology file " + src.map.file() + ")";
    const YAML::Mark mark = r.node() ? r.node().Mark() : YAML::Mark::null_mark();
    const std::string field = r.path().empty() ? e.field : r.path() + "." + e.field;
    throw ConfigError(r.file(), mark.line + 1, mark.column + 1, field, what);
  }
}

}  // namespace vcpusim::app
