// SPDX-License-Identifier: MIT
#include "app/command_line_sets.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "app/sweep.h"

namespace vcpusim::app {

std::pair<std::string, std::string> split_path_value(const std::string& option, const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("<command line>", 0, 0, option, "'" + text + "' is not PATH=VALUE");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

CommandLineSet parse_command_line_set(const std::string& option, const std::string& text) {
  auto [path, value_text] = split_path_value(option, text);
  CommandLineSet s{option, std::move(path), {}};
  check_dotted_path(s.path, YamlReader(YAML::Node(), "<command line>", option));
  // Inside a column's or a sweep entry's overrides the keys are dotted paths themselves, which a
  // dotted --set path cannot name: columns.smt-on.host.smt=off made a new `host: {smt: off}` and
  // dropped the column's scheduler. Whole entries only.
  const auto first = s.path.substr(0, s.path.find('.'));
  if ((first == "sweep" || first == "columns") && std::count(s.path.begin(), s.path.end(), '.') > 1)
    throw ConfigError("<command line>", 0, 0, option + " " + s.path,
                      "a path may go no deeper than " + first + ".ENTRY: inside, the keys are dotted paths, which a "
                      "dotted path cannot name; give the whole entry, e.g. --set '" + first + ".ENTRY={host.smt: off}'");
  try {
    // Through the same checks as a file (repeated keys, a second document, UTF-8, alias depth
    // and size: a self-containing alias here crashed the run), then without marks: the value's
    // own would say line 1, col 1, which an error would then place in the scenario file.
    s.value = copy_without_marks(YamlReader::load_string(value_text, "<command line>").node());
  } catch (const ConfigError& e) {
    const std::string inside = e.field().empty() ? "" : " (at " + e.field() + ")";
    throw ConfigError("<command line>", 0, 0, option + " " + s.path, e.message() + inside);
  }
  return s;
}

std::vector<CommandLineSet> parse_command_line_sets(const std::string& option, const std::vector<std::string>& texts) {
  std::vector<CommandLineSet> out;
  std::set<std::string> paths;
  for (const auto& t : texts) {
    out.push_back(parse_command_line_set(option, t));
    // The last one won, silently (`--set duration=10ms --set duration=20ms` ran 20 ms).
    if (!paths.insert(out.back().path).second)
      throw ConfigError("<command line>", 0, 0, option + " " + out.back().path, "given twice");
  }
  return out;
}

namespace {

// Applies one set to `doc` (one batch's copies shared) and gives the field it set, as
// override_field names it in the document the sets before it left: the one resolution that
// applying and blaming both use.
std::string apply_set(YAML::Node doc, const CommandLineSet& s, OverrideCopies& copies) {
  std::string field;
  apply_override(doc, s.path, s.value, YamlReader(s.value, "<command line>", s.option + " " + s.path), &copies, &field);
  return field;
}

}  // namespace

YamlReader apply_command_line_sets(const YamlReader& root, const std::vector<CommandLineSet>& sets) {
  if (sets.empty()) return root;
  // A set of a field that an earlier set's field lies within (the same field spelt another way,
  // vms.2.count after vms.web.count, or one around it, host={...} after host.smt=off) replaced
  // the earlier value, which was dropped without a word (exit 0). A later set inside an earlier
  // one's field refines it and is fine (host={...} then host.smt=off).
  // Each field is resolved once, by applying its set to the document as the sets before it left
  // it: resolving in the pair loop walked the document n^2 times, and resolving in the original
  // missed a VM named by an earlier set (vms.0.name=b then vms.b.name=c set vms[0].name twice,
  // and b was dropped). A set is applied before it is checked; a refused one's copy is dropped.
  std::vector<std::string> fields;
  fields.reserve(sets.size());
  YAML::Node doc = shallow_copy(root.node());
  OverrideCopies copies;  // one copy of each container on the sets' paths
  // The earlier fields by name, each with its first set: those within a later field are the
  // field itself and the ones under "field." or "field[", found by range, not by pairs (10,000
  // options took 3 s).
  std::map<std::string, std::size_t> earlier_fields;
  for (std::size_t j = 0; j < sets.size(); ++j) {
    const CommandLineSet& s = sets[j];
    fields.push_back(apply_set(doc, s, copies));
    const std::string& later = fields[j];
    std::size_t first = j;  // the earliest set whose field lies within `later`
    if (later.empty()) {
      if (j > 0) first = 0;
    } else {
      for (const char sep : {'.', '['}) {
        const std::string from = later + sep, to = later + static_cast<char>(sep + 1);
        for (auto it = earlier_fields.lower_bound(from); it != earlier_fields.end() && it->first < to; ++it)
          first = std::min(first, it->second);
      }
      if (auto it = earlier_fields.find(later); it != earlier_fields.end()) first = std::min(first, it->second);
    }
    earlier_fields.try_emplace(later, j);
    if (const std::size_t i = first; i < j) {
      const std::string& earlier = fields[i];
      throw ConfigError("<command line>", 0, 0, s.option + " " + s.path,
                        earlier == later ? "sets the same field as " + sets[i].option + " " + sets[i].path +
                                               ", given before it: one of the two would be dropped"
                                         : "covers " + sets[i].option + " " + sets[i].path +
                                               ", given before it, whose value would be dropped; give the field "
                                               "inside this value instead");
    }
  }
  return YamlReader(doc, root.file(), root.path());
}

namespace {

// A field with its JSON-quoted keys read back: a label the sweep refuses is named quoted
// (`columns." "`, `columns."<<"`), where a --set's path has it as written.
std::string unquoted_field(const std::string& field) {
  std::string out;
  for (std::size_t i = 0; i < field.size();) {
    if (field[i] == '"' && (i == 0 || field[i - 1] == '.')) {
      std::size_t end = i + 1;
      while (end < field.size() && field[end] != '"') end += field[end] == '\\' ? 2 : 1;
      if (end < field.size()) {
        try {
          out += nlohmann::json::parse(field.substr(i, end + 1 - i)).get<std::string>();
          i = end + 1;
          continue;
        } catch (const nlohmann::json::exception&) {
        }
      }
    }
    out += field[i++];
  }
  return out;
}

}  // namespace

ConfigError blame_command_line_sets(const std::vector<CommandLineSet>& sets, const YAML::Node& base,
                                    const ConfigError& e) {
  if (e.line() > 0) return e;
  if (e.field().empty()) return e;  // about the whole scenario: no one option is to blame
  const std::string e_field = unquoted_field(e.field());
  // Each set's field as apply_command_line_sets resolved it: in the document as the sets before
  // it left it (vms.b.vcpus=0 after vms.0.name=b is vms[0].vcpus; read in `base` it was no field
  // of the error's, which was then put in the scenario file). From a set that cannot be applied
  // on (its own error is the one being blamed), in `base`.
  std::vector<std::string> fields;
  {
    YAML::Node doc = shallow_copy(base);
    OverrideCopies copies;
    bool applying = true;
    for (const CommandLineSet& s : sets) {
      std::string field;
      if (applying) {
        try {
          // With a copy of the value: applying the sets merged each value's node pool into that
          // document's, which here was merged again, whole, into this one's, once for each set
          // (10,000 sets into one mapping, refused, took 30 s).
          field = apply_set(doc, CommandLineSet{s.option, s.path, copy_without_marks(s.value)}, copies);
        } catch (const ConfigError&) {
          applying = false;
        }
      }
      fields.push_back(applying ? field : override_field(base, s.path));
    }
  }
  for (std::size_t k = sets.size(); k-- > 0;) {  // the last set of a field is the one in force
    const auto it = sets.begin() + static_cast<std::ptrdiff_t>(k);
    const std::string& field = fields[k];
    // In a value the option gave, or a mapping it created on its way (hsot.smt=off makes `hsot`).
    const bool in_value = field_within(e_field, field);
    const bool created = field_within(field, e_field) && !has_field(base, e_field);
    if (!in_value && !created) continue;
    const std::string at = e_field == field ? "" : " (at " + e.field() + ")";
    return ConfigError("<command line>", 0, 0, it->option + " " + it->path, e.message() + at);
  }
  return e;
}

void check_sets_reach_a_run(const std::vector<CommandLineSet>& sets, const SweepPlan& plan,
                            const std::function<bool(const SweepRun&)>& among) {
  for (const CommandLineSet& set : sets) {
    const std::string field = override_field(plan.base, set.path);
    // A run that keeps the value: one of `among` where no other override covers the field (an
    // override of exactly this path is the set itself, for a --row-set).
    const bool overridden_everywhere = std::none_of(plan.runs.begin(), plan.runs.end(), [&](const SweepRun& run) {
      if (among && !among(run)) return false;
      return std::none_of(run.sources.begin(), run.sources.end(), [&](const auto& src) {
        const bool itself = among && src.first == set.path && src.second.node().is(set.value);
        return !itself && field_within(field, override_field(plan.base, src.first));
      });
    });
    if (overridden_everywhere)
      throw ConfigError("<command line>", 0, 0, set.option + " " + set.path,
                        "the sweep or a column sets this field in every run, so this value would never be used; "
                        "change the sweep instead");
  }
}

}  // namespace vcpusim::app
