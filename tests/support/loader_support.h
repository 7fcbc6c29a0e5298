// SPDX-License-Identifier: MIT
// Scenario files in tests: load one from inline YAML (named "t.yaml" in errors), or get the
// ConfigError text a bad one gives ("no error" if it loads).
#pragma once

#include <string>

#include "app/scenario.h"
#include "app/yaml_reader.h"

namespace vcpusim::test {

inline app::ScenarioSpec load(const std::string& text) {
  return app::load_scenario(app::YamlReader::load_string(text, "t.yaml"));
}

inline std::string error_of(const std::string& text) {
  try {
    load(text);
  } catch (const app::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace vcpusim::test
