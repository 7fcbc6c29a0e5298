// SPDX-License-Identifier: MIT
// This file defines ScenarioSpec, everything a run needs, as plain structs: the machine, the
// host (SMT, scheduler policy and its parameters, execution-model constants), and the groups of
// VMs and bare-metal tasks with their resolved affinities, memory placement and workloads.
// load_scenario() fills it from YAML and validates it completely, so that building and running
// a scenario can only fail on a model invariant, never on input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/yaml_reader.h"
#include "guest/guest_os.h"
#include "guest/program.h"
#include "hypervisor/host.h"
#include "sim/params.h"
#include "topology/topology_spec.h"

namespace vcpusim::app {

struct WorkloadSpec {
  std::string kind;                 ///< a guest::workloads() kind, or "program"
  sim::ParamValues params;          ///< validated against the workload's ParamSpecs
  std::uint32_t threads = 1;
  std::vector<guest::Phase> phases; ///< program only
};

/// `count` identical VMs (or one group of bare-metal tasks), resolved per instance.
struct GroupSpec {
  std::string name;
  bool bare_metal = false;
  std::uint32_t count = 1;
  std::uint32_t vcpus = 1;           ///< per instance (bare metal: = workload threads)
  std::uint32_t weight = 256;
  std::uint32_t cap_pct = 0;
  std::string hard_text = "all", soft_text = "all", placement_text = "auto";  ///< as written
  std::uint64_t memory_bytes = 0;
  WorkloadSpec workload;
  std::vector<hv::DomainSpec> instances;  ///< resolved: names, affinities, memory per node
};

/// The bounds of a scenario's `duration:` (and `warmup:`, and a program's phases) and
/// `repetitions:`. The command line's --duration, --repetitions and --set take the same ones, so
/// a value refused in the file is never let through another way (an unbounded --duration started
/// a 31-year run that never ended).
inline constexpr sim::Duration kMinRunDuration = sim::us(1);
inline constexpr sim::Duration kMaxRunDuration = sim::seconds(100000);
inline constexpr std::int64_t kMaxRepetitions = 10000;

struct ScenarioSpec {
  std::string name;
  std::string file;                  ///< where it was read from ("<built-in>" for the default)
  std::uint64_t seed = 1;
  sim::Duration duration = sim::seconds(10);
  sim::Duration warmup = 0;
  std::uint32_t repetitions = 1;
  topo::TopologySpec topology;
  /// The topology files loading it read (topology_file() in app/topology_loader.h): the base's,
  /// unless `topology:` is a mapping, then those of the runs of its sweep: and columns: that it
  /// checks (expand_sweep_sample: each value of each axis). Inputs of the command, which no
  /// output may replace.
  std::vector<std::string> topology_files;
  hv::HostSpec host;
  std::string policy = "rr";
  sim::ParamValues policy_params;
  guest::GuestParams guest;
  std::vector<GroupSpec> groups;     ///< VMs first (in file order), then bare-metal groups
};

/// Reads and validates a scenario; every problem is a ConfigError with file:line:col and field.
/// Its sweep: and columns:, which a run ignores, are checked as `vcpusim sweep` checks them, on
/// a sample of their runs (expand_sweep_sample in app/sweep.h).
ScenarioSpec load_scenario(const YamlReader& root);
/// Fails at the first key of `root` that no scenario has.
void check_scenario_keys(const YamlReader& root);
ScenarioSpec load_scenario_file(const std::string& path);
/// The built-in default scenario (configs/scenarios/default.yaml, compiled in).
ScenarioSpec load_default_scenario();
const char* default_scenario_text();

}  // namespace vcpusim::app
