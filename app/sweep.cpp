// SPDX-License-Identifier: MIT
#include "app/sweep.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "app/affinity.h"
#include "app/scenario.h"
#include "app/text.h"
#include "app/topology_loader.h"
#include "sim/rng.h"

namespace vcpusim::app {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    const std::size_t dot = path.find('.', pos);
    parts.push_back(path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos));
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return parts;
}

}  // namespace

void check_dotted_path(const std::string& path, const YamlReader& at) {
  const auto parts = split_path(path);
  for (const auto& p : parts) {
    if (p.empty()) at.fail("'" + path + "' is not a dotted path such as vms.db.count");
    // vms[0].count made a new top-level key `vms[0]`, which the loader then refused as if the
    // scenario file had it (errors write list elements so).
    if (p.find_first_of("[]") != std::string::npos)
      at.fail("'" + p + "' is not a key: a dotted path walks a list by index or by name (vms.0.count, vms.db.count)");
  }
  // A document is at most 64 levels deep (yaml_reader.cpp); 20,000 parts crashed a sweep.
  if (parts.size() > 64) at.fail("a dotted path of " + std::to_string(parts.size()) + " parts; at most 64");
}

namespace {

bool parse_index(const std::string& s, std::size_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

// One override: a dotted path, the value to put there, and where it was written (for errors).
struct Override {
  std::string path;
  YAML::Node value;
  YamlReader where;
};

// One axis of the cross product: its values, and how each applies.
struct Axis {
  std::vector<std::string> fields;               // dotted paths (or the axis name, for labelled)
  bool labelled = false;
  std::vector<nlohmann::json> labels;            // per value: the point entry(ies)
  std::vector<std::vector<Override>> overrides;  // per value
  std::vector<YamlReader> where;                 // per value, for errors
  // Labelled axes only, per value (label): `only:` restricts other axes at this label (axis
  // name -> allowed values, as JSON), `columns:` adds overrides to named columns at this label.
  std::vector<std::vector<std::pair<std::string, std::vector<nlohmann::json>>>> only;
  std::vector<std::vector<std::pair<std::string, std::vector<Override>>>> column_overrides;
};

}  // namespace

nlohmann::json yaml_to_json(const YAML::Node& n) {
  using nlohmann::json;
  if (!n || n.IsNull()) return nullptr;
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (n.Tag() == "!") return s;  // quoted in the document: keep it a string
    std::int64_t i = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
    if (ec == std::errc() && p == s.data() + s.size() && !s.empty()) return i;
    // Digits past 64 bits are text: read as a double, 99999999999999999999 and ...98 were both
    // 1e+20, one point and one seed for two values (a VM named so, say). No field takes a whole
    // number that large, so its loader refuses the run anyway when the field is numeric.
    if (ec == std::errc::result_out_of_range && p == s.data() + s.size()) return s;
    double d = 0;
    auto [q, ec2] = std::from_chars(s.data(), s.data() + s.size(), d);
    // Finite only: from_chars also reads "nan", "inf" and "infinity", which JSON cannot hold and
    // dumps as null. A VM named inf, or a sweep `name: [nan, inf]`, then had points that all
    // read {"name": null}: one seed for every point, and compare refusing the sweep's own
    // records ("point {name=null} has point_index 1 here and 0"). YAML's own spellings
    // (.nan, .inf) are text here too; no field reads a non-finite number.
    if (ec2 == std::errc() && q == s.data() + s.size() && !s.empty() && std::isfinite(d)) return d;
    if (s == "true" || s == "on" || s == "yes") return true;
    if (s == "false" || s == "off" || s == "no") return false;
    return s;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (const auto& e : n) a.push_back(yaml_to_json(e));
    return a;
  }
  json o = json::object();
  for (const auto& kv : n) o[kv.first.Scalar()] = yaml_to_json(kv.second);
  return o;
}

YAML::Node copy_without_marks(const YAML::Node& n) {
  // Built through the Node API, whose nodes carry the null mark. (YAML::Clone's carry line 0,
  // column 0, which reads as "1:1": an error there would point at the top of the file.)
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      YAML::Node m(YAML::NodeType::Map);
      for (const auto& kv : n) m[copy_without_marks(kv.first)] = copy_without_marks(kv.second);
      return m;
    }
    case YAML::NodeType::Sequence: {
      YAML::Node s(YAML::NodeType::Sequence);
      for (const auto& e : n) s.push_back(copy_without_marks(e));
      return s;
    }
    case YAML::NodeType::Scalar: {
      YAML::Node x(n.Scalar());
      x.SetTag(n.Tag());  // "!" marks a quoted scalar, which yaml_to_json keeps a string
      return x;
    }
    case YAML::NodeType::Null: return YAML::Node(YAML::NodeType::Null);
    default: return YAML::Node();
  }
}

YAML::Node shallow_copy(const YAML::Node& n) {
  // Fresh container nodes whose slots share the children's data: the children keep their
  // source marks (so errors still name the line they came from), and nothing here mutates a
  // shared child. (yaml-cpp's Clone would lose every mark.)
  if (n.IsMap()) {
    // force_insert appends without looking the key up (its keys are already unique): m[key]
    // searched the copy for each key, so copying a mapping of k keys cost k^2 comparisons, each
    // leaving nodes in yaml-cpp's pool, and 400 --set options adding keys to one mapping took
    // 4 s and 730 MB (1000 ran out of memory).
    // Each value goes into a fresh slot node that shares the original's data: inserting the
    // original's node itself made the copy's slot that very node, so writing a slot of the copy
    // (yaml-cpp assigns by re-pointing the node's data) wrote the original as well.
    YAML::Node m(YAML::NodeType::Map);
    for (const auto& kv : n) {
      YAML::Node slot(YAML::NodeType::Null);
      m.force_insert(kv.first, slot);
      slot = kv.second;
    }
    return m;
  }
  if (n.IsSequence()) {
    YAML::Node s(YAML::NodeType::Sequence);
    for (std::size_t i = 0; i < n.size(); ++i) {
      s.push_back(YAML::Node());
      s[i] = n[i];
    }
    return s;
  }
  return n;
}

void apply_override(YAML::Node doc, const std::string& path, const YAML::Node& value, const YamlReader& at,
                    OverrideCopies* copies, std::string* field) {
  // Copy-on-write along the path: every container on the way is replaced in its parent by a
  // shallow copy before it is changed, so documents of other runs that share it are untouched.
  // Cursors move with reset(): yaml-cpp's Node::operator= would re-point the node itself.
  check_dotted_path(path, at);
  if (field) field->clear();
  const auto parts = split_path(path);
  YAML::Node cur;
  cur.reset(doc);
  std::string resolved;  // the path so far, list elements by index: one key however spelt
  // The batch's record of `cur` (nullptr without a batch): the document itself is at "".
  OverrideCopy* cur_copy = nullptr;
  if (copies) {
    cur_copy = &(*copies)[""];
    if (!cur_copy->node.is(doc)) *cur_copy = OverrideCopy{doc, {}, false};
  }
  // The node that holds `key`'s value in mapping `cur`, made (null) when it has none, as
  // cur[key] finds or makes it. In a batch, through the copy's index of its keys: cur[key]
  // compares the key with each key in turn. Every key a batch adds to a copy goes through here,
  // so the index stays whole; nothing else in the batch looks a key up in a copy non-const, which
  // would add a key the index does not hold.
  auto slot_of = [&](const std::string& key) {
    if (!cur_copy) return YAML::Node(cur[key]);
    if (!cur_copy->indexed) {
      for (const auto& kv : cur)
        if (kv.first.IsScalar()) cur_copy->slots.try_emplace(kv.first.Scalar(), kv.second);  // the first of a key, as cur[key]
      cur_copy->indexed = true;
    }
    auto [it, added] = cur_copy->slots.try_emplace(key);
    if (added) {
      YAML::Node slot(YAML::NodeType::Null);
      cur.force_insert(key, slot);  // appended, as cur[key] appends it
      it->second = slot;
    }
    return it->second;
  };
  // Moves `cur` into the container held by `slot` (a node of `cur`), first copying it there.
  auto enter = [&](const YAML::Node& slot) {
    // A container this batch copied already is its own: written in place. (Each copy merged
    // yaml-cpp's whole node pool into the new node's, so 3000 --set options of one mapping
    // took 9 s and 1.2 GB.)
    if (copies) {
      auto it = copies->find(resolved);
      if (it != copies->end()) {
        cur.reset(it->second.node);
        cur_copy = &it->second;
        return;
      }
    }
    YAML::Node copy;
    if (!slot || slot.IsNull()) copy.reset(YAML::Node(YAML::NodeType::Map));
    else copy.reset(shallow_copy(slot));
    YAML::Node write = slot;  // assigning re-points the wrapper too: a throwaway one
    write = copy;
    cur.reset(slot);
    if (copies) cur_copy = &copies->insert_or_assign(resolved, OverrideCopy{cur, {}, false}).first->second;
  };
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string& key = parts[i];
    if (cur.IsSequence()) {
      std::size_t idx = 0;
      bool found = false;
      if (parse_index(key, idx)) {
        found = idx < cur.size();
      } else {
        for (std::size_t j = 0; j < cur.size() && !found; ++j) {
          const YAML::Node element = cur[j];  // const: a non-const ["name"] adds the key to an element without one
          if (element.IsMap() && element["name"] && element["name"].Scalar() == key) {
            idx = j;
            found = true;
          }
        }
      }
      if (!found) at.fail("'" + path + "': no element '" + key + "' in the list '" + (i ? parts[i - 1] : "") + "'");
      resolved += "\n" + std::to_string(idx);
      if (field) *field += "[" + std::to_string(idx) + "]";
      enter(cur[idx]);
      continue;
    }
    if (!cur.IsMap()) at.fail("'" + path + "': '" + (i ? parts[i - 1] : "") + "' is not a mapping");
    resolved += "\n" + key;
    if (field) *field += (field->empty() ? "" : ".") + key;
    enter(slot_of(key));
  }
  const std::string& leaf = parts.back();
  // The value replaces whatever this batch copied at or below the leaf: a later override inside
  // it must copy the value, not write into a container no longer in the document.
  if (copies) {
    std::size_t idx = 0;
    const std::string at_leaf = resolved + "\n" + (cur.IsSequence() && parse_index(leaf, idx) ? std::to_string(idx) : leaf);
    for (auto it = copies->lower_bound(at_leaf); it != copies->end() && it->first.compare(0, at_leaf.size(), at_leaf) == 0;)
      it = (it->first.size() == at_leaf.size() || it->first[at_leaf.size()] == '\n') ? copies->erase(it) : std::next(it);
  }
  if (cur.IsSequence()) {
    std::size_t idx = 0;
    if (!parse_index(leaf, idx) || idx >= cur.size()) at.fail("'" + path + "': cannot set element '" + leaf + "' of a list");
    if (field) *field += "[" + std::to_string(idx) + "]";
    cur[idx] = value;
    return;
  }
  if (!cur.IsMap()) at.fail("'" + path + "': the parent is not a mapping");
  if (field) *field += (field->empty() ? "" : ".") + leaf;
  YAML::Node write = slot_of(leaf);
  write = value;
}

namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// The child of a mapping by key, or of a list by index or element `name:` (its index in
// `index`); an invalid node if none. Only const access: yaml-cpp's non-const operator[] would
// insert the key into the scenario every run shares.
YAML::Node child_of(const YAML::Node& n, const std::string& key, std::size_t* index = nullptr) {
  if (n.IsMap()) {
    for (const auto& kv : n)
      if (kv.first.IsScalar() && kv.first.Scalar() == key) return kv.second;
  } else if (n.IsSequence()) {
    std::size_t idx = 0;
    const bool numeric = parse_index(key, idx);
    std::size_t j = 0;
    for (const auto& e : n) {
      bool match = numeric ? j == idx : false;
      if (!numeric && e.IsMap())
        for (const auto& kv : e)
          if (kv.first.IsScalar() && kv.first.Scalar() == "name" && kv.second.IsScalar() && kv.second.Scalar() == key)
            match = true;
      if (match) {
        if (index) *index = j;
        return e;
      }
      ++j;
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

}  // namespace

bool field_within(const std::string& inner, const std::string& outer) {
  return outer.empty() || inner == outer || starts_with(inner, outer + ".") || starts_with(inner, outer + "[");
}

std::string override_field(const YAML::Node& base, const std::string& path) {
  std::string out;
  YAML::Node cur(base);
  bool inside = true;
  for (const std::string& part : split_path(path)) {
    std::size_t idx = 0;
    const YAML::Node next = inside ? child_of(cur, part, &idx) : YAML::Node(YAML::NodeType::Undefined);
    if (inside && next.IsDefined() && cur.IsSequence()) out += "[" + std::to_string(idx) + "]";
    else out += (out.empty() ? "" : ".") + part;
    inside = next.IsDefined();
    if (inside) cur.reset(next);
  }
  return out;
}

namespace {

// The node of `base` at a loader field ("vms[0].workload"), or the deepest one on the way that
// has a line; `complete` tells which.
YAML::Node node_at(const YAML::Node& base, const std::string& field, bool& complete) {
  YAML::Node cur = base, best = base;
  complete = true;
  std::size_t i = 0;
  while (i < field.size()) {
    std::string key;
    if (field[i] == '[') {
      const std::size_t close = field.find(']', i);
      key = field.substr(i + 1, close - i - 1);
      i = close == std::string::npos ? field.size() : close + 1;
    } else {
      if (field[i] == '.') ++i;
      const std::size_t end = field.find_first_of(".[", i);
      key = field.substr(i, end == std::string::npos ? std::string::npos : end - i);
      i = end == std::string::npos ? field.size() : end;
    }
    YAML::Node next = child_of(cur, key);
    if (!next.IsDefined()) {
      complete = false;
      return best;
    }
    cur.reset(next);
    if (!cur.Mark().is_null()) best.reset(cur);
  }
  return cur;
}

}  // namespace

bool has_field(const YAML::Node& base, const std::string& field) {
  bool complete = false;
  node_at(base, field, complete);
  return complete;
}

ConfigError locate_in_sweep(const SweepPlan& plan, const SweepRun& run, const ConfigError& e) {
  if (e.line() > 0 || !plan.base) return e;
  const std::string& f = e.field();
  const std::string run_name = "the sweep's run " + run.point_key + (run.column.empty() ? "" : ", column " + run.column);
  const std::string in_run = " (in " + run_name + ")";
  // About the whole scenario ("no vms"): no one override is to blame; the run's point says why.
  if (f.empty()) return ConfigError(e.file(), 0, 0, f, e.message() + in_run);
  auto at_override = [&](const std::pair<std::string, YamlReader>& src) {
    const YAML::Node& n = src.second.node();
    // An override without a line was written on the command line (`--set columns.b={...}`):
    // named by its place in the sweep, so that blame_command_line_sets() finds the option.
    const std::string field = n.Mark().is_null() && !src.second.path().empty() ? src.second.path() : f;
    return ConfigError(e.file(), n.Mark().is_null() ? 0 : n.Mark().line + 1, n.Mark().is_null() ? 0 : n.Mark().column + 1,
                       field, e.message() + " (from '" + src.first + "'" + (n.Mark().is_null() ? "" : " here") + ", in " + run_name + ")");
  };
  // 1. Inside a value an override set: that override (the last one applied wins).
  for (auto it = run.sources.rbegin(); it != run.sources.rend(); ++it)
    if (field_within(f, override_field(plan.base, it->first))) return at_override(*it);
  // 2. A field of the base document (a container the sweep copied on its way to a change).
  bool complete = false;
  const YAML::Node n = node_at(plan.base, f, complete);
  if (complete && !n.Mark().is_null())
    return ConfigError(e.file(), n.Mark().line + 1, n.Mark().column + 1, f, e.message() + in_run);
  // 3. A field an override created on its way (a misspelt mapping in its path).
  for (auto it = run.sources.rbegin(); it != run.sources.rend(); ++it)
    if (field_within(override_field(plan.base, it->first), f)) return at_override(*it);
  // 4. A field no line holds: a --set's value, valid in the base but not in this run (`vcpusim
  // run FILE --set host.core_scheduling=cookie` where a column sets host.smt: off). Without the
  // run, the message blamed the --set for a rule the base it runs keeps.
  if (n.Mark().is_null()) return ConfigError(e.file(), 0, 0, f, e.message() + in_run);
  return ConfigError(e.file(), n.Mark().line + 1, n.Mark().column + 1, f, e.message() + in_run);
}

std::uint64_t point_seed(std::uint64_t master, const std::string& point_key, std::uint32_t rep) {
  return sim::derive_seed(master, "point/" + point_key + "/repetition/" + std::to_string(rep));
}

namespace {

struct Column {
  std::string label;
  std::vector<Override> overrides;
};

// A sweep read and checked but not multiplied out: expand_sweep makes every run of it,
// expand_sweep_sample only some.
struct ParsedSweep {
  std::vector<Axis> axes;
  std::vector<Column> columns;
  YAML::Node base;           // the document less sweep: and columns:
  std::uint64_t points = 1;  // the cross product's size, before `only:` leaves points out
};

// a x b, or the largest std::uint64_t when that overflows (a plan of 80 axes of 10 values).
std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b) {
  std::uint64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? std::numeric_limits<std::uint64_t>::max() : out;
}

// Labels name columns, axes and the values of labelled axes in records, in compare's tables and
// in --baseline and --by. A blank one was shown as "(none)", compare's word for "no columns",
// and one holding a control character (a newline) split a table's header row. `key` is the
// label's key in the mapping `map`; the field quotes it, as it may be empty or hold a newline.
void check_label(const YamlReader& map, const YAML::Node& key, const std::string& what) {
  const std::string label = key.IsScalar() ? key.Scalar() : std::string();
  const auto fail = [&](const std::string& message) {
    const bool at = !key.Mark().is_null();
    throw ConfigError(map.file(), at ? key.Mark().line + 1 : 0, at ? key.Mark().column + 1 : 0,
                      map.path() + "." + nlohmann::json(label).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                      message);
  };
  if (label.find_first_not_of(" \t") == std::string::npos) fail(what + " is not blank (it is what the tables show)");
  // A merge key is refused elsewhere in a file (unknown_key_message), but here it was read as a
  // name: `columns: {<<: {host.smt: off}}` ran a column labelled "<<", exit 0.
  if (key.Scalar() == "<<" && key.Tag() != "!")
    fail("YAML merge keys (<<) are not read here: write the entries out ('<<' would be " + what + ")");
  for (const char ch : label)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      fail(what + " holds no control character (a newline or a tab would break the lines of the tables that name it)");
}

// A swept value is what the tables show too, as an operation of compare and a point in the
// records: a tab in one (a topology file's name, which YAML's printable text allows) split a
// compare row, and the records' readers refuse such a point. Checked here, at the value's line.
void check_printable_value(const YAML::Node& n, const YamlReader& at) {
  const auto fail_at = [&](const YAML::Node& where, const std::string& text) {
    const bool marked = !where.Mark().is_null();
    throw ConfigError(at.file(), marked ? where.Mark().line + 1 : 0, marked ? where.Mark().column + 1 : 0, at.path(),
                      nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                          ": a swept value holds no control character (a newline or a tab would break the lines of the "
                          "tables that show it)");
  };
  if (n.IsScalar() && has_control_character(n.Scalar())) fail_at(n, n.Scalar());
  if (n.IsSequence())
    for (const auto& e : n) check_printable_value(e, at);
  if (n.IsMap())
    for (const auto& kv : n) {
      if (kv.first.IsScalar() && has_control_character(kv.first.Scalar())) fail_at(kv.first, kv.first.Scalar());
      check_printable_value(kv.second, at);
    }
}

const Axis* axis_named(const std::vector<Axis>& axes, const std::string& name) {
  for (const auto& ax : axes)
    if (ax.fields.size() == 1 && ax.fields.front() == name) return &ax;
  return nullptr;
}

// Whether an override path is an affinity expression: `...affinity.hard` or `.soft`, or a
// per-vCPU one (`...affinity.per_vcpu.N.hard`).
bool is_affinity_expression(const std::string& path) {
  const auto parts = split_path(path);
  const auto at = [&](std::size_t back) { return parts.size() > back ? parts[parts.size() - 1 - back] : std::string(); };
  return (at(0) == "hard" || at(0) == "soft") && (at(1) == "affinity" || (at(2) == "per_vcpu" && at(3) == "affinity"));
}

// An affinity value in one spelling of its CPU set: canonical_affinity of the text the loader
// reads from it ('cpus:[0,1]', 'cpus:0-1', [1, 0] and {cpus: [0, 1]} are one set). A value
// that is no affinity comes back as its label, for the loader to refuse.
std::string affinity_setting_text(const nlohmann::json& v) {
  const auto list = [](const nlohmann::json& a) {
    std::string s;
    for (const auto& e : a) s += (s.empty() ? "" : ",") + value_label(e);
    return "[" + s + "]";
  };
  if (v.is_string()) return canonical_affinity(v.get<std::string>());
  if (v.is_array()) return canonical_affinity("cpus:" + list(v));
  if (v.is_object() && v.size() == 1) {
    const auto it = v.begin();
    return canonical_affinity(it.key() + ":" + (it.value().is_array() ? list(it.value()) : value_label(it.value())));
  }
  return value_label(v);
}

// A swept value as the runs read it and the tables print it, set at `path`: 4 and "4" are one
// row of a table, and 1s and 1000ms, 1GiB, 1024MiB and 1073741824 (bytes need no unit) one
// setting, as are on, 'on', yes and true (YamlReader::as_bool reads the text), and an
// affinity's CPU list however it is written. Inside a mapping or a list the same holds for
// every entry: {slice: 30ms} and {slice: 30000us} are one scheduler.
std::string setting_text(const nlohmann::json& v, const std::string& path) {
  if (is_affinity_expression(path)) return "affinity " + affinity_setting_text(v);
  if (v.is_object()) {
    std::string out = "{";
    for (const auto& [k, e] : v.items()) out += k + ": " + setting_text(e, path + "." + k) + ", ";
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += setting_text(v[i], path + "." + std::to_string(i)) + ", ";
    return out + "]";
  }
  std::string text = value_label(v);
  const bool unit = std::any_of(text.begin(), text.end(), [](unsigned char c) { return std::isalpha(c); });
  // A number as the loader reads it, quoted or not: "02" and 2, "0.50" and 0.5, 2.0 and 2 are
  // one setting (each pair ran its point twice). Whole numbers by value, others as doubles.
  // from_chars reads the whole text or fails, so "1e" or "2x" is no number; a leading '+' it
  // refuses, and the loader reads "+2" as 2.
  const std::string_view t = text.size() > 1 && text[0] == '+' && text[1] != '-' ? std::string_view(text).substr(1) : text;
  const char* const end = t.data() + t.size();
  std::int64_t n = 0;
  double d = 0;
  if (const auto [p, ec] = std::from_chars(t.data(), end, n); p == end) {
    // Digits past 64 bits stay text, each its own value, as the loader keeps them apart.
    if (ec == std::errc()) text = std::to_string(n);
  } else if (const auto [q, ed] = std::from_chars(t.data(), end, d); ed == std::errc() && q == end && std::isfinite(d)) {
    if (d == std::trunc(d) && std::fabs(d) < 9.0e15) text = std::to_string(static_cast<std::int64_t>(d));
    else text = fmt::format("{:.17g}", d);
  }
  if (text == "on" || text == "yes") text = "true";
  else if (text == "off" || text == "no") text = "false";
  else if (unit && v.is_string()) {
    if (const auto ns = parse_duration(text)) text = std::to_string(*ns) + "ns";
    else if (const auto bytes = parse_bytes(text)) text = std::to_string(*bytes);
  }
  // Quoted, so that a string holding "{", ", " or "]" cannot pass for the text of a mapping.
  return nlohmann::json(text).dump();
}

// A swept `topology:` value as the runs read it: the file the loader finds for it, by canonical
// path, so box.yaml, ./box.yaml, a link to it, and a preset name and the file it resolves to
// (topologies/NAME.yaml) are one machine; each ran its point twice with the same seeds. A
// mapping, or a value that names no file, is compared as setting_text reads it, for the loader
// to refuse at its run.
std::string topology_setting_text(const nlohmann::json& v, const Override& o) {
  if (!o.value.IsScalar()) return setting_text(v, o.path);
  std::string file;
  try {
    file = topology_file(o.where);
  } catch (const ConfigError&) {
    return setting_text(v, o.path);
  }
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(file, ec);
  return ec ? setting_text(v, o.path) : "topology file " + nlohmann::json(canonical.string()).dump();
}

// Fills `plan`, all but its runs, and returns the sweep read from `root`. Every check of a sweep
// is here, so that expand_sweep and expand_sweep_sample refuse the same files.
ParsedSweep parse_sweep(const YamlReader& root, SweepPlan& plan) {
  root.require_map();
  plan.file = root.file();
  plan.name = root.get_string("name", "");
  plan.seed = static_cast<std::uint64_t>(root.get_int("seed", 1, 0, std::numeric_limits<std::int64_t>::max()));
  plan.repetitions = static_cast<std::uint32_t>(root.get_int("repetitions", 1, 1, kMaxRepetitions));
  {
    YAML::Emitter e;
    e << root.node();
    plan.scenario_hash = std::to_string(sim::stable_hash(e.c_str()));
  }
  // Here, where the keys still have their lines: no override can take a key of the base away,
  // and in the runs' copies an unknown one had no line and, when it was "", no field either.
  check_scenario_keys(root);

  ParsedSweep s;
  s.base = YAML::Node(YAML::NodeType::Map);
  for (const auto& kv : root.node())
    if (kv.first.Scalar() != "sweep" && kv.first.Scalar() != "columns") s.base[kv.first] = kv.second;
  plan.base = root.node();

  std::vector<Axis>& axes = s.axes;
  // Every override's path and where it is written, checked once the plan's size is known.
  std::vector<std::pair<std::string, YamlReader>> settings;
  if (root.has("sweep")) {
    const YamlReader sw = root.at("sweep");
    sw.require_map();
    // Empty, it swept nothing: the base ran alone, as if the file had no sweep:. Refused as an
    // empty columns: is.
    if (sw.size() == 0) sw.fail("an empty mapping: give at least one swept field (or leave sweep: out)");
    for (const auto& entry : sw.node()) {
      const std::string key = entry.first.Scalar();
      const YamlReader v = sw.at(key);
      if (key == "zip") {
        v.require_sequence();
        // No group added no axis: the sweep ran without the fields meant to move together.
        if (v.size() == 0) v.fail("an empty list: give at least one group");
        for (std::size_t g = 0; g < v.size(); ++g) {
          const YamlReader group = v.at(g);
          group.require_map();
          // An empty group multiplied the sweep by nothing: 0 runs, status 0.
          if (group.size() == 0) group.fail("a zip group needs at least one field");
          Axis ax;
          std::size_t len = 0;
          for (const std::string& f : group.keys()) {
            const YamlReader vals = group.at(f);
            settings.emplace_back(f, vals);
            vals.require_sequence();
            if (vals.size() == 0) vals.fail("an empty list of values");
            if (ax.fields.empty()) len = vals.size();
            else if (vals.size() != len)
              vals.fail("zip fields move together: " + std::to_string(vals.size()) + " values here, " + std::to_string(len) + " in '" + ax.fields.front() + "'");
            ax.fields.push_back(f);
          }
          for (std::size_t i = 0; i < len; ++i) {
            nlohmann::json lab = nlohmann::json::object();
            std::vector<Override> ov;
            for (const std::string& f : ax.fields) {
              const YamlReader val = group.at(f).at(i);
              check_printable_value(val.node(), val);
              lab[f] = yaml_to_json(val.node());
              ov.push_back(Override{f, val.node(), val});
            }
            ax.labels.push_back(lab);
            ax.overrides.push_back(ov);
            ax.where.push_back(group);
          }
          ax.only.resize(ax.labels.size());
          ax.column_overrides.resize(ax.labels.size());
          axes.push_back(std::move(ax));
        }
        continue;
      }
      Axis ax;
      ax.fields.push_back(key);
      // {values: [...], paths: [...]} is told from a labelled axis by a list under either key
      // (a label's overrides are a mapping): an extra key, or a missing one, read as a labelled
      // axis was reported as "sweep.t.values: expected a mapping".
      const auto list_at = [&](const char* k) { return v.has(k) && v.at(k).is_sequence(); };
      if (v.is_map() && (list_at("values") || list_at("paths"))) {
        // One named field set at several paths (the same knob in every setup's group).
        check_label(sw, entry.first, "an axis's name");
        v.only({"values", "paths"});
        const YamlReader vals = v.at("values"), paths = v.at("paths");
        vals.require_sequence();
        paths.require_sequence();
        if (vals.size() == 0) vals.fail("an empty list of values");
        if (paths.size() == 0) paths.fail("an empty list of paths");
        // Checked here, where each path is written: a bad one was reported at values[0].
        for (std::size_t j = 0; j < paths.size(); ++j) {
          check_dotted_path(paths.at(j).as_string(), paths.at(j));
          settings.emplace_back(paths.at(j).as_string(), paths.at(j));
        }
        for (std::size_t i = 0; i < vals.size(); ++i) {
          check_printable_value(vals.node()[i], vals.at(i));
          ax.labels.push_back(nlohmann::json{{key, yaml_to_json(vals.node()[i])}});
          std::vector<Override> ov;
          for (std::size_t j = 0; j < paths.size(); ++j) ov.push_back(Override{paths.at(j).as_string(), vals.node()[i], vals.at(i)});
          ax.overrides.push_back(ov);
          ax.where.push_back(vals.at(i));
        }
        ax.only.resize(ax.labels.size());
        ax.column_overrides.resize(ax.labels.size());
        axes.push_back(std::move(ax));
        continue;
      }
      if (v.is_sequence()) {
        settings.emplace_back(key, v);
        if (v.size() == 0) v.fail("an empty list of values");
        for (std::size_t i = 0; i < v.size(); ++i) {
          check_printable_value(v.node()[i], v.at(i));
          ax.labels.push_back(nlohmann::json{{key, yaml_to_json(v.node()[i])}});
          ax.overrides.push_back({Override{key, v.node()[i], v.at(i)}});
          ax.where.push_back(v.at(i));
        }
      } else if (v.is_map()) {
        ax.labelled = true;
        check_label(sw, entry.first, "an axis's name");
        if (v.size() == 0) v.fail("a labelled axis needs at least one label");
        for (const auto& labelled : v.node()) {
          check_label(v, labelled.first, "an axis's label");
          const std::string label = labelled.first.Scalar();
          const YamlReader ovs = v.at(label);
          std::vector<Override> ov;
          std::vector<std::pair<std::string, std::vector<nlohmann::json>>> only;
          std::vector<std::pair<std::string, std::vector<Override>>> cols;
          if (!ovs.is_null()) {
            ovs.require_map();
            for (const std::string& f : ovs.keys()) {
              if (f == "only") {
                // only: {axis: [values]}: at this label, that axis takes only these values.
                const YamlReader o = ovs.at(f);
                o.require_map();
                // Empty, it restricted nothing: every point ran, as without it.
                if (o.size() == 0) o.fail("an empty mapping: name at least one axis and its values (or leave only: out)");
                for (const std::string& other : o.keys()) {
                  const YamlReader list = o.at(other);
                  list.require_sequence();
                  if (list.size() == 0) list.fail("an empty list of values");
                  std::vector<nlohmann::json> allowed;
                  for (std::size_t i = 0; i < list.size(); ++i) allowed.push_back(yaml_to_json(list.node()[i]));
                  only.emplace_back(other, allowed);
                }
              } else if (f == "columns") {
                // columns: {column: {path: value}}: overrides applied after that column's own.
                const YamlReader c = ovs.at(f);
                c.require_map();
                // Empty, they changed nothing at this label, as without them.
                if (c.size() == 0) c.fail("an empty mapping: name at least one column and its overrides (or leave columns: out)");
                for (const std::string& col : c.keys()) {
                  const YamlReader co = c.at(col);
                  co.require_map();
                  std::vector<Override> list;
                  for (const std::string& path : co.keys()) {
                    settings.emplace_back(path, co.at(path));
                    list.push_back(Override{path, co.at(path).node(), co.at(path)});
                  }
                  cols.emplace_back(col, list);
                }
              } else {
                settings.emplace_back(f, ovs.at(f));
                ov.push_back(Override{f, ovs.at(f).node(), ovs.at(f)});
              }
            }
          }
          ax.labels.push_back(nlohmann::json{{key, label}});
          ax.overrides.push_back(ov);
          ax.where.push_back(ovs);
          ax.only.push_back(only);
          ax.column_overrides.push_back(cols);
        }
      } else {
        v.fail("a swept field takes a list of values, a mapping label -> overrides, or {values: [...], paths: [...]}");
      }
      ax.only.resize(ax.labels.size());
      ax.column_overrides.resize(ax.labels.size());
      axes.push_back(std::move(ax));
    }
  }
  for (const auto& ax : axes)
    for (const auto& f : ax.fields) plan.axes.push_back(f);

  std::vector<Column>& columns = s.columns;
  if (root.has("columns")) {
    const YamlReader cols = root.at("columns");
    cols.require_map();
    if (cols.size() == 0) cols.fail("columns: at least one column");
    for (const auto& entry : cols.node()) {
      check_label(cols, entry.first, "a column's label");
      const std::string label = entry.first.Scalar();
      const YamlReader c = cols.at(label);
      Column col{label, {}};
      if (!c.is_null()) {
        c.require_map();
        for (const std::string& f : c.keys()) {
          settings.emplace_back(f, c.at(f));
          col.overrides.push_back(Override{f, c.at(f).node(), c.at(f)});
        }
      }
      columns.push_back(std::move(col));
    }
  } else {
    columns.push_back(Column{"", {}});
  }
  for (const auto& c : columns) plan.columns.push_back(c.label);

  // The size, before anything is multiplied out: a plan of 10^8 points was expanded until memory
  // ran out, with no word said.
  for (const auto& ax : axes) s.points = saturating_product(s.points, ax.labels.size());
  const std::uint64_t runs = saturating_product(saturating_product(s.points, columns.size()), plan.repetitions);
  if (runs > kMaxSweepRuns) {
    const auto count = [](std::uint64_t n) {
      return n == std::numeric_limits<std::uint64_t>::max() ? "more than " + std::to_string(n) : std::to_string(n);
    };
    (root.has("sweep") ? root.at("sweep") : root.at("columns"))
        .fail(count(s.points) + " points x " + std::to_string(columns.size()) + " column(s) x " +
              std::to_string(plan.repetitions) + " repetition(s) = " + count(runs) + " runs; a sweep has at most " +
              std::to_string(kMaxSweepRuns) + " (split it into several files)");
  }
  // A value given twice ran its point twice, with the same seeds, and compare counted its
  // samples twice (a smaller stddev from nothing). Labels of a labelled axis are distinct keys.
  // Values are compared as setting_text reads them (a topology file by its canonical path);
  // node:N and the like stay as they are in an affinity, since their sets depend on the machine.
  const auto same_setting = [](const nlohmann::json& label, const std::vector<Override>& overrides) {
    std::string key;
    for (const auto& [field, v] : label.items()) {
      // At every path the value goes to: itself in a zip group or a plain axis, each of the
      // axis's `paths:` for a named field.
      key += field + "=";
      for (const Override& o : overrides)
        if (label.size() == 1 || o.path == field)
          key += (o.path == "topology" ? topology_setting_text(v, o) : setting_text(v, o.path)) + "; ";
      key += "\n";
    }
    return key;
  };
  for (const Axis& ax : axes) {
    if (ax.labelled) continue;
    std::map<std::string, std::size_t> first;
    for (std::size_t i = 0; i < ax.labels.size(); ++i)
      if (const auto [it, fresh] = first.emplace(same_setting(ax.labels[i], ax.overrides[i]), i); !fresh)
        ax.where[i].fail("this value is given twice (values[" + std::to_string(it->second) + "] is the same): " +
                         "its point would run twice with the same seeds and be counted twice");
  }

  for (const auto& [path, at] : settings) check_run_setting(path, at);

  // An override applied after another that covers its field (the same one, `vms.0.count` for
  // `vms.web.count`, or a whole `vms.web`) makes the earlier value vanish while the point still
  // names it: two zip groups on one field ran the second's values under the first's labels, and
  // pairs of points shared keys and so seeds. Axes apply in order, then the column; a later
  // override inside an earlier one's field (a column setting workload.lock of a swept workload)
  // refines it and is fine.
  {
    struct Setter {
      std::string field;  // as the loader names it
      std::string path;
      const YamlReader* where;
      std::string owner;  // for the message
    };
    std::vector<std::vector<Setter>> by_stage;  // axes in order
    auto lost = [](const Setter& earlier, const Setter& later) { return field_within(earlier.field, later.field); };
    for (const Axis& ax : axes) {
      // One setter per path: whether two overlap depends on their paths only, and an axis of
      // 10^5 values compared each value with every other.
      std::vector<Setter> st;
      std::set<std::string> seen;
      for (std::size_t i = 0; i < ax.overrides.size(); ++i)
        for (const Override& o : ax.overrides[i])
          if (seen.insert(o.path).second)
            st.push_back(Setter{override_field(root.node(), o.path), o.path, &o.where, "the axis '" + ax.fields.front() + "'"});
      // Within one point of the axis its fields are set together, so any overlap drops one of
      // them: every field of a zip group is set at every point; a labelled entry's paths only
      // at its own label (two labels setting `vms.web` and `vms.web.vcpus` are two points).
      const auto overlap = [&](const std::vector<Setter>& group, const std::string& what) {
        for (std::size_t i = 0; i < group.size(); ++i)
          for (std::size_t j = 0; j < group.size(); ++j)
            if (i != j && group[i].path != group[j].path && lost(group[i], group[j]))
              group[j].where->fail("'" + group[j].path + "' covers '" + group[i].path + "', which " + what +
                                   " sets: one value would be lost");
      };
      if (!ax.labelled) {
        overlap(st, "the same zip group");
      } else {
        for (std::size_t i = 0; i < ax.overrides.size(); ++i) {
          std::vector<Setter> entry;
          for (const Override& o : ax.overrides[i])
            entry.push_back(Setter{override_field(root.node(), o.path), o.path, &o.where, ""});
          overlap(entry, "the same labelled entry");
        }
      }
      by_stage.push_back(std::move(st));
    }
    for (std::size_t b = 0; b < by_stage.size(); ++b) {
      for (std::size_t a = 0; a < b; ++a)
        for (const Setter& e : by_stage[a])
          for (const Setter& l : by_stage[b])
            if (lost(e, l))
              l.where->fail("'" + l.path + "' covers '" + e.path + "', which " + e.owner +
                            " sets first: the runs would not have the values their points name");
    }
    for (const Column& col : columns)
      for (const Override& o : col.overrides) {
        const std::string field = override_field(root.node(), o.path);
        for (const auto& stage : by_stage)
          for (const Setter& e : stage)
            if (field_within(e.field, field))
              o.where.fail("'" + o.path + "' covers '" + e.path + "', which " + e.owner +
                           " sweeps: the column would overwrite the values the points name");
      }
    // A labelled entry's `columns:` apply after every axis, as a column's own overrides do: one
    // over another axis's field ran every value of that axis with its own (exit 0, records
    // naming values their runs did not have). Over its own axis's fields it refines its label.
    for (std::size_t b = 0; b < axes.size(); ++b)
      for (const auto& per_label : axes[b].column_overrides)
        for (const auto& [col, list] : per_label)
          for (const Override& o : list) {
            const std::string field = override_field(root.node(), o.path);
            for (std::size_t a = 0; a < by_stage.size(); ++a)
              for (const Setter& e : by_stage[a])
                if (a != b && field_within(e.field, field))
                  o.where.fail("'" + o.path + "' covers '" + e.path + "', which " + e.owner +
                               " sweeps: this column's runs at this label would not have the values their points name");
          }
  }

  // `only:` and `columns:` of labelled entries must name axes, values and columns that exist.
  for (const auto& ax : axes)
    for (std::size_t i = 0; i < ax.labels.size(); ++i) {
      for (const auto& [other, allowed] : ax.only[i]) {
        const Axis* o = axis_named(axes, other);
        if (!o || o == &ax) ax.where[i].at("only").at(other).fail("'" + other + "' is not another axis of this sweep");
        for (const auto& val : allowed) {
          bool found = false;
          for (const auto& lab : o->labels) found = found || lab.at(other) == val;
          if (!found)
            ax.where[i].at("only").at(other).fail("'" + value_label(val) +
                                                  "' is not a value of the axis '" + other + "'");
        }
      }
      for (const auto& [col, list] : ax.column_overrides[i]) {
        bool found = false;
        for (const auto& c : columns) found = found || c.label == col;
        if (!found) ax.where[i].at("columns").at(col).fail("no column '" + col + "' in columns:");
      }
    }
  return s;
}

// Point k of the cross product: the value each axis takes (the last axis fastest).
std::vector<std::size_t> pick_of(const ParsedSweep& s, std::uint64_t k) {
  std::vector<std::size_t> pick(s.axes.size());
  for (std::size_t a = s.axes.size(); a-- > 0;) {
    pick[a] = static_cast<std::size_t>(k % s.axes[a].labels.size());
    k /= s.axes[a].labels.size();
  }
  return pick;
}

// Whether an `only:` of one of the point's labels leaves the point out.
bool left_out(const ParsedSweep& s, const std::vector<std::size_t>& pick) {
  for (std::size_t a = 0; a < s.axes.size(); ++a)
    for (const auto& [other, values] : s.axes[a].only[pick[a]]) {
      const Axis* o = axis_named(s.axes, other);
      const nlohmann::json& v = o->labels[pick[static_cast<std::size_t>(o - s.axes.data())]].at(other);
      if (std::find(values.begin(), values.end(), v) == values.end()) return true;
    }
  return false;
}

// The run of column `c` at the point `pick` (its point_index is the caller's to set).
SweepRun run_of(const ParsedSweep& s, std::size_t c, const std::vector<std::size_t>& pick) {
  const Column& col = s.columns[c];
  SweepRun run;
  run.column = col.label;
  run.point = nlohmann::json::object();
  // Each run's document is a private deep copy, and so is every value put into it. Sharing
  // nodes between documents made yaml-cpp merge their node pools at every assignment, which
  // grew with the runs made so far: 900 points took 6.8 s to expand, 1600 took 26 s. Copies
  // have no lines; locate_in_sweep() places errors in them, from `sources` and the base.
  run.document = copy_without_marks(s.base);
  OverrideCopies copies;
  auto apply = [&](const Override& o) {
    apply_override(run.document, o.path, copy_without_marks(o.value), o.where, &copies);
    run.sources.emplace_back(o.path, o.where);
  };
  for (std::size_t a = 0; a < s.axes.size(); ++a) {
    const Axis& ax = s.axes[a];
    for (const auto& [f, v] : ax.labels[pick[a]].items()) run.point[f] = v;
    for (const Override& o : ax.overrides[pick[a]]) apply(o);
  }
  for (const Override& o : col.overrides) apply(o);
  for (std::size_t a = 0; a < s.axes.size(); ++a)
    for (const auto& [name, list] : s.axes[a].column_overrides[pick[a]])
      if (name == col.label)
        for (const Override& o : list) apply(o);
  run.point_key = run.point.dump();
  run.column_index = static_cast<std::uint32_t>(c);
  return run;
}

// Every run of the sweep into `plan`: the cross product, last axis fastest; points an `only:`
// excludes are left out, and the kept points are numbered densely.
void add_every_run(const ParsedSweep& s, SweepPlan& plan) {
  // A value that `only:` rules leave out of every point ran nowhere, exit 0, and rules that left
  // out every point ran nothing ("0 records written").
  std::vector<std::vector<bool>> used(s.axes.size());
  for (std::size_t a = 0; a < s.axes.size(); ++a) used[a].assign(s.axes[a].labels.size(), false);
  for (std::uint64_t k = 0; k < s.points; ++k) {
    const std::vector<std::size_t> pick = pick_of(s, k);
    if (left_out(s, pick)) continue;
    for (std::size_t a = 0; a < s.axes.size(); ++a) used[a][pick[a]] = true;
  }
  for (std::size_t a = 0; a < s.axes.size(); ++a)
    for (std::size_t i = 0; i < used[a].size(); ++i)
      if (!used[a][i])
        s.axes[a].where[i].fail("the only: rules leave this value out of every point of the sweep, so it would never run");
  for (std::size_t c = 0; c < s.columns.size(); ++c) {
    std::uint32_t kept = 0;
    for (std::uint64_t k = 0; k < s.points; ++k) {
      const std::vector<std::size_t> pick = pick_of(s, k);
      if (left_out(s, pick)) continue;
      SweepRun run = run_of(s, c, pick);
      run.point_index = kept++;
      plan.runs.push_back(std::move(run));
    }
  }
}

}  // namespace

// An override sets a field of one run, so its path must lead to one a run reads. The sweep reads
// these once, from the file: a swept `sweep.x` or a column's `columns.b` made points that named
// a value no run had, and a swept seed or repetitions was ignored by every run (each run's seed
// is derived from the file's seed and its point; every point runs the file's repetitions).
void check_run_setting(const std::string& path, const YamlReader& at) {
  const std::string top = path.substr(0, path.find('.'));
  if (top == "sweep" || top == "columns")
    at.fail("'" + path + "' is not a setting of a run: sweep: and columns: are read once, to make the runs");
  if (top == "seed")
    at.fail("'" + path + "' is not a setting of a run: each run's seed is derived from the file's seed and the run's point");
  if (top == "repetitions")
    at.fail("'" + path + "' is not a setting of a run: every point runs the file's repetitions");
}

SweepPlan expand_sweep(const YamlReader& root) {
  SweepPlan plan;
  add_every_run(parse_sweep(root, plan), plan);
  // The topology files the runs read are part of the scenario: hashing the document alone, a
  // sweep of `topology: box.yaml` resumed after box.yaml was edited took the records of the old
  // machine as finished runs of the new one and printed both in one table, exit 0.
  // Hashed as the document is, so that a comment or a file's place (a source tree, an install)
  // changes nothing.
  std::string files;
  for (const std::string& f : topology_files(plan)) {
    try {
      YAML::Emitter e;
      e << YamlReader::load_file(f).node();
      files += std::string(e.c_str()) + '\0';
    } catch (const ConfigError&) {  // the run's loading says so, with the run named
    }
  }
  if (!files.empty()) plan.scenario_hash = std::to_string(sim::stable_hash(plan.scenario_hash + '\0' + files));
  return plan;
}

std::vector<std::string> topology_files(const SweepPlan& plan) {
  std::vector<std::string> files;
  std::set<std::string> values;  // a value resolves alike in every run: all are read as plan.file
  for (const SweepRun& run : plan.runs) {
    const YamlReader doc(run.document, plan.file, "");
    if (!doc.is_map() || !doc.has("topology")) continue;
    const YamlReader t = doc.at("topology");
    if (t.is_scalar() && !values.insert(t.as_string()).second) continue;
    try {
      if (std::string f = topology_file(t); !f.empty() && std::find(files.begin(), files.end(), f) == files.end())
        files.push_back(std::move(f));
    } catch (const ConfigError&) {  // the run's loading says so, with the run named
    }
  }
  return files;
}

SweepPlan expand_sweep_sample(const YamlReader& root) {
  SweepPlan plan;
  const ParsedSweep s = parse_sweep(root, plan);
  if (s.points * s.columns.size() <= kSampleEveryRunUpTo) {  // points is at most kMaxSweepRuns
    add_every_run(s, plan);
    return plan;
  }
  // Point i of the sample takes value i mod n of each axis of n values, so that each value of
  // each axis is in one; the last point (every axis at its last value) joins them.
  std::size_t widest = 0;
  for (const auto& ax : s.axes) widest = std::max(widest, ax.labels.size());
  std::set<std::vector<std::size_t>> picks;
  for (std::size_t i = 0; i < widest; ++i) {
    std::vector<std::size_t> pick;
    for (const auto& ax : s.axes) pick.push_back(i % ax.labels.size());
    picks.insert(pick);
  }
  picks.insert(pick_of(s, s.points - 1));
  for (std::size_t c = 0; c < s.columns.size(); ++c)
    for (const auto& pick : picks)
      if (!left_out(s, pick)) plan.runs.push_back(run_of(s, c, pick));
  return plan;
}

}  // namespace vcpusim::app
