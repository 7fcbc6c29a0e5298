// SPDX-License-Identifier: MIT
#include "app/command_line_sets.h"

#include <algorithm>

#include "app/sweep.h"

namespace vcpusim::app {

CommandLineSet parse_command_line_set(const std::string& option, const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("<command line>", 0, 0, option, "'" + text + "' is not PATH=VALUE");
  CommandLineSet s{option, text.substr(0, eq), {}};
  try {
    // Without marks: YAML::Load's would say line 1, col 1, which an error would then place in
    // the scenario file.
    s.value = copy_without_marks(YAML::Load(text.substr(eq + 1)));
  } catch (const YAML::Exception& e) {
    throw ConfigError("<command line>", 0, 0, option + " " + s.path, "not YAML: " + e.msg);
  }
  return s;
}

std::vector<CommandLineSet> parse_command_line_sets(const std::string& option, const std::vector<std::string>& texts) {
  std::vector<CommandLineSet> out;
  for (const auto& t : texts) out.push_back(parse_command_line_set(option, t));
  return out;
}

YamlReader apply_command_line_sets(const YamlReader& root, const std::vector<CommandLineSet>& sets) {
  if (sets.empty()) return root;
  YAML::Node doc = shallow_copy(root.node());
  for (const CommandLineSet& s : sets)
    apply_override(doc, s.path, s.value, YamlReader(s.value, "<command line>", s.option + " " + s.path));
  return YamlReader(doc, root.file(), root.path());
}

ConfigError blame_command_line_sets(const std::vector<CommandLineSet>& sets, const YAML::Node& base,
                                    const ConfigError& e) {
  if (e.line() > 0) return e;
  if (e.field().empty()) return e;  // about the whole scenario: no one option is to blame
  for (auto it = sets.rbegin(); it != sets.rend(); ++it) {  // the last set of a field is the one in force
    const std::string field = override_field(base, it->path);
    // In a value the option gave, or a mapping it created on its way (hsot.smt=off makes `hsot`).
    const bool in_value = field_within(e.field(), field);
    const bool created = field_within(field, e.field()) && !has_field(base, e.field());
    if (!in_value && !created) continue;
    const std::string at = e.field() == field ? "" : " (at " + e.field() + ")";
    return ConfigError("<command line>", 0, 0, it->option + " " + it->path, e.message() + at);
  }
  return e;
}

void check_sets_reach_a_run(const std::vector<CommandLineSet>& sets, const SweepPlan& plan) {
  for (const CommandLineSet& set : sets) {
    const std::string field = override_field(plan.base, set.path);
    const bool overridden_everywhere =
        !plan.runs.empty() && std::all_of(plan.runs.begin(), plan.runs.end(), [&](const SweepRun& run) {
          return std::any_of(run.sources.begin(), run.sources.end(), [&](const auto& src) {
            return field_within(field, override_field(plan.base, src.first));
          });
        });
    if (overridden_everywhere)
      throw ConfigError("<command line>", 0, 0, set.option + " " + set.path,
                        "the sweep or a column sets this field in every run, so this value would never be used; "
                        "change the sweep instead");
  }
}

}  // namespace vcpusim::app
