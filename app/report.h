// SPDX-License-Identifier: MIT
// This file defines the reports of `vcpusim run`: a readable table for people, JSON and CSV for
// machines. Everything but the wall-clock figures is a pure function of the scenario and seed;
// those live under one `timing` key in the JSON (and on one `timing:` line in the table), so
// two runs' JSON compare equal once `timing` is removed.
#pragma once

#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/runner.h"
#include "app/scenario.h"

namespace vcpusim::app {

void write_table(std::ostream& os, const ScenarioSpec& spec, const std::vector<RunResult>& runs);
nlohmann::json to_json(const ScenarioSpec& spec, const std::vector<RunResult>& runs);
void write_csv(std::ostream& os, const std::vector<RunResult>& runs);

}  // namespace vcpusim::app
