// SPDX-License-Identifier: MIT
// This file defines `vcpusim bench`: the speed of the engine's own loop (event-queue pop and
// push at several queue sizes) and of whole scenarios (the default one and a large EPYC host),
// as medians over repeats with the spread, because these machines are shared and noisy.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vcpusim::app {

struct BenchOptions {
  int repeats = 5;
  bool quick = false;  ///< shorter runs (for smoke tests)
};

nlohmann::json run_bench(const BenchOptions& o, std::ostream& progress);

/// The shipped scenario files run_bench() reads (those that exist), which its --json may not name.
std::vector<std::string> bench_scenario_files();

}  // namespace vcpusim::app
