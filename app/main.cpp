// SPDX-License-Identifier: MIT
// vcpusim's command line. Exit status: 0 success; 2 bad input (a scenario or an argument: the
// message names file:line:col: field); 3 a model invariant was violated (the message names the
// rule, entity, pCPU and time); 1 anything else.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "app/bench.h"
#include "app/config_error.h"
#include "app/report.h"
#include "app/runner.h"
#include "app/scenario.h"
#include "app/yaml_reader.h"
#include "guest/workload.h"
#include "hypervisor/host.h"
#include "policies/registry.h"

using namespace vcpusim;

namespace {

// Replaces `path` whole, so an interrupted run leaves the previous complete file, never half of one.
void write_atomically(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text;
    std::cout.flush();
    return;
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) throw app::ConfigError(path, 0, 0, "", "cannot write file");
    f << text;
    if (!f.flush()) throw app::ConfigError(path, 0, 0, "", "cannot write file");
  }
  std::filesystem::rename(tmp, path);
}

std::string list_plugins() {
  std::string s = "Scheduler policies (host.scheduler.policy):\n";
  for (const auto& p : policy::policies()) {
    s += "  " + std::string(p.name) + ": " + std::string(p.description) + "\n";
    for (const auto& q : p.params) s += "      " + q.name + ": " + q.help + "\n";
  }
  s += "Workloads (workload.kind):\n  program: phases of compute and block, looped (loops/s)\n";
  for (const auto& w : guest::workloads()) {
    s += "  " + std::string(w.kind) + ": " + std::string(w.description) + " (" + std::string(w.unit) + ")\n";
    for (const auto& q : w.params) s += "      " + q.name + ": " + q.help + "\n";
  }
  return s;
}

int cmd_run(const std::string& file, const std::optional<std::uint64_t>& seed, const std::string& duration,
            const std::optional<std::uint32_t>& reps, const std::string& json_path, const std::string& csv_path,
            bool quiet) {
  app::ScenarioSpec spec = file.empty() ? app::load_default_scenario() : app::load_scenario_file(file);
  if (seed) spec.seed = *seed;
  if (!duration.empty()) {
    auto d = app::parse_duration(duration);
    if (!d || *d <= 0) throw app::ConfigError("<command line>", 0, 0, "--duration", "'" + duration + "' is not a positive duration such as 10s");
    if (*d <= spec.warmup) throw app::ConfigError("<command line>", 0, 0, "--duration", "must be longer than the scenario's warm-up");
    spec.duration = *d;
  }
  if (reps) spec.repetitions = *reps;
  std::vector<app::RunResult> runs;
  for (std::uint32_t i = 0; i < spec.repetitions; ++i) {
    runs.push_back(app::run_scenario(spec, app::repetition_seed(spec.seed, i)));
    // Results of every finished repetition are on disk before the next one starts.
    if (!json_path.empty()) write_atomically(json_path, app::to_json(spec, runs).dump(2) + "\n");
    if (!csv_path.empty()) {
      std::ostringstream os;
      app::write_csv(os, runs);
      write_atomically(csv_path, os.str());
    }
  }
  if (!quiet && json_path != "-" && csv_path != "-") app::write_table(std::cout, spec, runs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"vcpusim: a discrete-event model of hypervisor vCPU scheduling (Xen credit2-like and KVM/CFS hosts,\n"
               "NUMA and SMT topologies, guest workloads). Exit status: 0 ok, 2 bad input, 3 model invariant violated."};
  cli.set_version_flag("--version", std::string("vcpusim ") + VCPUSIM_VERSION);
  cli.require_subcommand(1);
  cli.footer("Run 'vcpusim SUBCOMMAND --help' for each command's options. Scenario schema: README.md.");

  auto* run = cli.add_subcommand("run", "Run a scenario (the built-in default when no file is given) and print a table");
  std::string file, duration, json_path, csv_path;
  std::optional<std::uint64_t> seed;
  std::optional<std::uint32_t> reps;
  bool quiet = false, list = false;
  run->add_option("SCENARIO", file, "scenario YAML file (default: the built-in default scenario)");
  run->add_option("--seed", seed, "master seed (overrides the scenario's seed:)");
  run->add_option("--duration", duration, "simulated time, e.g. 10s or 500ms (overrides duration:)");
  run->add_option("--repetitions", reps, "number of seeds to run (overrides repetitions:)")->check(CLI::Range(1, 100000));
  run->add_option("--json", json_path, "write results as JSON to FILE ('-': stdout); rewritten after each repetition");
  run->add_option("--csv", csv_path, "write one CSV row per domain and repetition to FILE ('-': stdout)");
  run->add_flag("--quiet", quiet, "print no table");
  run->add_flag("--list", list, "list the scheduler policies and workload models with their parameters, and exit");

  auto* bench = cli.add_subcommand("bench", "Measure the engine's and whole scenarios' speed (medians over repeats)");
  app::BenchOptions bo;
  std::string bench_json;
  bench->add_option("--repeats", bo.repeats, "repeats per measurement (default 5)")->check(CLI::Range(1, 1000));
  bench->add_flag("--quick", bo.quick, "short runs, for a smoke test");
  bench->add_option("--json", bench_json, "also write the figures as JSON to FILE");

  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = cli.exit(e);
    return rc == 0 ? 0 : 2;
  }

  try {
    if (*run) {
      if (list) {
        std::cout << list_plugins();
        return 0;
      }
      return cmd_run(file, seed, duration, reps, json_path, csv_path, quiet);
    }
    if (*bench) {
      const auto j = app::run_bench(bo, std::cout);
      if (!bench_json.empty()) write_atomically(bench_json, j.dump(2) + "\n");
      return 0;
    }
  } catch (const app::ConfigError& e) {
    std::cerr << "vcpusim: " << e.what() << "\n";
    return 2;
  } catch (const hv::InvariantViolation& e) {
    std::cerr << "vcpusim: model error: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "vcpusim: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
