// SPDX-License-Identifier: MIT
// This file defines CommandLineSet, one `--set PATH=VALUE` (or `--row-set ROW PATH=VALUE`) given
// to run, trace, sweep or reproduce: a scenario field overridden from the command line. It
// exists so that every command reads, applies and blames these the same way: VALUE is YAML, a
// value that is not is an error naming the option, and an error the scenario loader later finds
// in an overridden field is reported as the option's, not at a line of the file the option
// never was in.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "app/config_error.h"
#include "app/yaml_reader.h"

namespace vcpusim::app {

struct CommandLineSet {
  std::string option;  ///< "--set" or "--row-set ROW": what the user typed, for messages
  std::string path;    ///< dotted path into the scenario (sweep.h's rules)
  YAML::Node value;    ///< parsed VALUE; its nodes have no line (they are in no file)
};

/// Splits "PATH=VALUE" given to `option` at its first '='; a missing '=' or PATH is a
/// ConfigError on the command line naming the option.
std::pair<std::string, std::string> split_path_value(const std::string& option, const std::string& text);

/// Parses "PATH=VALUE" given to `option`. A missing '=' or PATH, or a VALUE that is not YAML, is a
/// ConfigError on the command line naming the option.
CommandLineSet parse_command_line_set(const std::string& option, const std::string& text);
std::vector<CommandLineSet> parse_command_line_sets(const std::string& option, const std::vector<std::string>& texts);

/// `root` with every set applied (copy on write: `root`'s document is unchanged).
YamlReader apply_command_line_sets(const YamlReader& root, const std::vector<CommandLineSet>& sets);

/// `e` as the command line's error when it has no line and its field is one a set overrode (or
/// inside one), so that `--set duration=-5s` is blamed on `--set duration`; else `e`. `base` is
/// the document the sets were applied to (paths name list elements by `name:`, fields by index).
ConfigError blame_command_line_sets(const std::vector<CommandLineSet>& sets, const YAML::Node& base,
                                    const ConfigError& e);

struct SweepPlan;
struct SweepRun;

/// Refuses a set that no run of `plan` keeps: one whose field every run's sweep or column
/// overrides (`--set vms.web.count=abc` on a sweep of vms.web.count was dropped unread, exit 0).
/// With `among`, only those runs count (a --row-set's row).
void check_sets_reach_a_run(const std::vector<CommandLineSet>& sets, const SweepPlan& plan,
                            const std::function<bool(const SweepRun&)>& among = {});

}  // namespace vcpusim::app
