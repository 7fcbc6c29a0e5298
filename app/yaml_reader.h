// SPDX-License-Identifier: MIT
// This file defines YamlReader, the checked view of a YAML document that every loader in app/
// reads through. It exists so that every way input can be wrong (an unknown key, a wrong type, a
// value out of range, a missing file) ends the same way: a ConfigError naming file, line, column
// and the dotted field. app/ is the only layer that sees yaml-cpp.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "app/config_error.h"
#include "sim/sim_time.h"

namespace vcpusim::app {

class YamlReader {
 public:
  /// Parses a file; a missing file or a syntax error is a ConfigError.
  static YamlReader load_file(const std::string& path);
  /// Parses text held in memory; `name` stands for the file in messages.
  static YamlReader load_string(const std::string& text, const std::string& name);

  YamlReader(YAML::Node node, std::string file, std::string path)
      : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {}
  /// A reader is a view of one node: assigning one reader to another rebinds it. (YAML::Node's
  /// own operator= writes the other node's content INTO the viewed node, in the document: the
  /// loader's `hard_at = a.at("hard")` once turned a VM's whole mapping into its hard-affinity
  /// text, and every key read from that VM afterwards, such as `cookie:` or `memory:`, vanished.)
  YamlReader(const YamlReader&) = default;
  YamlReader& operator=(const YamlReader& o) {
    if (this != &o) {
      node_.reset(o.node_);
      file_ = o.file_;
      path_ = o.path_;
    }
    return *this;
  }

  const YAML::Node& node() const { return node_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }  ///< dotted field path of this node
  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool is_null() const { return !node_ || node_.IsNull(); }

  bool has(std::string_view key) const;
  /// The child under key; throws if absent.
  YamlReader at(std::string_view key) const;
  /// The i-th element of a sequence.
  YamlReader at(std::size_t i) const;
  std::size_t size() const { return node_.size(); }
  /// Map keys in document order.
  std::vector<std::string> keys() const;

  /// Fails on any key not in `allowed` (naming the first unknown one).
  void only(std::initializer_list<std::string_view> allowed) const;
  void require_map() const;
  void require_sequence() const;

  // Scalars of this node.
  std::string as_string() const;
  double as_double() const;
  std::int64_t as_int() const;
  bool as_bool() const;
  /// "30s", "200ms", "1.5us", "100ns", "2m"; 0 may stand alone.
  sim::Duration as_duration() const;
  /// "1GiB", "512MiB", "4KiB", "1GB", plain integers as bytes.
  std::uint64_t as_bytes() const;

  // Keyed getters with defaults and range checks.
  std::string get_string(std::string_view key, const std::string& def) const;
  std::string get_enum(std::string_view key, const std::string& def,
                       std::initializer_list<std::string_view> choices) const;
  double get_double(std::string_view key, double def, double lo, double hi) const;
  std::int64_t get_int(std::string_view key, std::int64_t def, std::int64_t lo, std::int64_t hi) const;
  bool get_bool(std::string_view key, bool def) const;
  sim::Duration get_duration(std::string_view key, sim::Duration def, sim::Duration lo,
                             sim::Duration hi) const;
  std::uint64_t get_bytes(std::string_view key, std::uint64_t def) const;

  /// A ConfigError at this node.
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string child_path(std::string_view key) const;
  YAML::Node node_;
  std::string file_;
  std::string path_;
};

/// A mapping key as an error's field shows it: as written, or JSON-quoted when it is empty or
/// holds a control character (a NUL cut the message short, a newline split it), as sweep labels are.
std::string shown_key(const std::string& key);
/// What a key not allowed in a mapping is told: "unknown key (allowed here: ...)", and why for
/// the keys that are no name at all: YAML's merge key `<<` (not read), a null or a list key.
std::string unknown_key_message(const YAML::Node& key, const std::string& allowed);

/// Parses a duration string such as "30s" or "1.5ms"; nullopt if malformed.
std::optional<sim::Duration> parse_duration(std::string_view text);
/// Parses a byte size such as "1GiB"; nullopt if malformed.
std::optional<std::uint64_t> parse_bytes(std::string_view text);

/// What a value outside its bounds is told, in a file and on the command line alike:
/// "V is out of range [LO, HI]" for an integer, "'TEXT' is out of range [1us, 100000s]" for a
/// duration (TEXT as written).
std::string out_of_range(std::int64_t v, std::int64_t lo, std::int64_t hi);
std::string duration_out_of_range(std::string_view text, sim::Duration lo, sim::Duration hi);
/// A duration in the largest unit (s, ms, us, ns) that holds it whole, as a scenario would write
/// it: 100000000000000 ns is "100000s", 1e9 "1s", 1500 "1500ns".
std::string duration_text(double ns);

}  // namespace vcpusim::app
