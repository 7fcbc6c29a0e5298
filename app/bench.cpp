// SPDX-License-Identifier: MIT
#include "app/bench.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "app/config_paths.h"
#include "app/runner.h"
#include "app/scenario.h"
#include "app/sweep.h"
#include "app/sweep_runner.h"
#include "sim/event_queue.h"
#include "sim/rng.h"

namespace vcpusim::app {
namespace {

// The shipped scenarios measured beside the default one: label, and file under configs/.
struct BenchScenario {
  const char* label;
  const char* file;
};
constexpr BenchScenario kBenchScenarios[] = {
    {"epyc-2s-64c rr 256 vCPUs", "bench/epyc-large.yaml"},
    {"epyc-2s-64c credit2 512 vCPUs", "bench/epyc-credit2-4x.yaml"},
    {"epyc-2s-64c cfs groups 512 vCPUs", "bench/epyc-cfs-groups-4x.yaml"},
};

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

// The engine's own loop: a hold model (pop the earliest, push a successor at a random later
// time), the classic priority-queue benchmark, at a steady queue size.
double engine_events_per_sec(std::size_t pending, std::uint64_t ops) {
  sim::EventQueue q;
  q.reserve(pending + 1);
  sim::RngStream rng(42);
  for (std::size_t i = 0; i < pending; ++i)
    q.push(static_cast<sim::Time>(rng.next_u64() % 1'000'000), sim::Phase::kGuest, 0, static_cast<std::uint32_t>(i), 0);
  std::uint64_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < ops; ++i) {
    const sim::Event e = q.pop();
    sink += e.target;
    q.push(e.time + 1 + static_cast<sim::Time>(rng.next_u64() % 1'000'000), e.phase(), e.kind, e.target, e.gen + 1);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (sink == 42) fmt::print("");  // keep the loop observable
  return static_cast<double>(ops) / s;
}

// A sweep's set-up before its first run: expand an n x n grid and load every point's scenario,
// as `vcpusim sweep` does. Returns points per second. (It once grew with the square of the
// points: yaml-cpp merged the node pools of documents that shared nodes.)
double sweep_points_per_sec(int n) {
  std::string values;
  for (int i = 1; i <= n; ++i) values += (i > 1 ? ", " : "") + std::to_string(i);
  const std::string text = "name: grid\ntopology: desktop-4c8t\nvms:\n"
                           "  - {name: a, vcpus: 2, workload: {kind: sysbench-cpu, threads: 1}}\n"
                           "sweep:\n  vms.a.count: [" + values + "]\n  vms.a.workload.threads: [" + values + "]\n";
  const auto t0 = std::chrono::steady_clock::now();
  const SweepPlan plan = expand_sweep(YamlReader::load_string(text, "grid.yaml"));
  const std::vector<ScenarioSpec> specs = load_sweep_specs(plan);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(specs.size()) / s;
}

}  // namespace

std::vector<std::string> bench_scenario_files() {
  std::vector<std::string> files;
  for (const auto& b : kBenchScenarios)
    if (std::string path = find_config(b.file); !path.empty()) files.push_back(std::move(path));
  return files;
}

nlohmann::json run_bench(const BenchOptions& o, std::ostream& progress) {
  using nlohmann::json;
  json out;
  json engine = json::array();
  for (std::size_t pending : {std::size_t{64}, std::size_t{1024}, std::size_t{16384}}) {
    std::vector<double> rates;
    for (int r = 0; r < o.repeats; ++r) rates.push_back(engine_events_per_sec(pending, o.quick ? 200'000 : 5'000'000));
    const double med = median(rates);
    fmt::print(progress, "engine loop, {:>5} pending: median {:.2f} M events/s (min {:.2f}, max {:.2f}) = {:.1f} ns/event\n",
               pending, med / 1e6, *std::min_element(rates.begin(), rates.end()) / 1e6,
               *std::max_element(rates.begin(), rates.end()) / 1e6, 1e9 / med);
    engine.push_back({{"pending", pending}, {"median_events_per_sec", med}, {"samples", rates}});
  }
  out["engine"] = engine;

  {
    const int n = o.quick ? 10 : 40;
    std::vector<double> rates;
    for (int r = 0; r < o.repeats; ++r) rates.push_back(sweep_points_per_sec(n));
    const double med = median(rates);
    fmt::print(progress, "sweep set-up, {}x{} points: median {:.0f} points/s ({:.3f} s)\n", n, n, med, n * n / med);
    out["sweep_setup"] = {{"points", n * n}, {"median_points_per_sec", med}, {"samples", rates}};
  }

  json scen = json::array();
  struct Case { std::string label; ScenarioSpec spec; };
  std::vector<Case> cases;
  cases.push_back({"default", load_default_scenario()});
  for (const auto& b : kBenchScenarios) {
    ConfigMiss miss;
    const std::string path = find_config(b.file, &miss);
    if (path.empty())
      throw std::runtime_error(std::string("bench: configs/") + b.file +
                               (miss.reason.empty() ? " not found" : " (" + miss.path + "): " + miss.reason));
    cases.push_back({b.label, load_scenario_file(path)});
  }
  for (auto& c : cases) {
    if (o.quick) {
      c.spec.duration = sim::ms(500);
      c.spec.warmup = sim::ms(100);
      c.spec.host.warmup = c.spec.warmup;
    }
    std::vector<double> eps, ratio;
    std::uint64_t events = 0, stale = 0;
    const int reps = std::max(1, o.quick ? 1 : std::min(o.repeats, 3));
    for (int r = 0; r < reps; ++r) {
      const RunResult res = run_scenario(c.spec, c.spec.seed);
      eps.push_back(res.timing.events_per_second);
      ratio.push_back(res.timing.sim_to_wall);
      events = res.events;
      stale = res.stale_events;
    }
    // Events per second count every popped event, and a superseded one (lazy cancellation) costs
    // only its pop: the share says how much of the rate is such pops.
    const double stale_pct = events ? 100.0 * static_cast<double>(stale) / static_cast<double>(events) : 0.0;
    fmt::print(progress, "scenario {:<32} {:>10} events ({:.0f}% stale), median {:.2f} M events/s, simulated/wall {:.1f}x\n",
               c.label, events, stale_pct, median(eps) / 1e6, median(ratio));
    scen.push_back({{"scenario", c.label}, {"events", events}, {"events_stale", stale}, {"median_events_per_sec", median(eps)},
                    {"median_sim_to_wall", median(ratio)}, {"simulated_s", sim::to_seconds(c.spec.duration)}});
  }
  out["scenarios"] = scen;
  return out;
}

}  // namespace vcpusim::app
