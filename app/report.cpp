// SPDX-License-Identifier: MIT
#include "app/build_id.h"
#include "app/report.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "app/statistics.h"

namespace vcpusim::app {
namespace {

std::string human(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9) return fmt::format("{:.2f} G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:.1f} k", v / 1e3);
  return fmt::format("{:.2f}", v);
}

std::vector<double> column(const std::vector<RunResult>& runs, std::size_t d, double DomainResult::*f) {
  std::vector<double> xs;
  for (const auto& r : runs) xs.push_back(r.domains[d].*f);
  return xs;
}

}  // namespace

void write_table(std::ostream& os, const ScenarioSpec& spec, const std::vector<RunResult>& runs) {
  if (runs.empty()) return;
  const topo::TopologySpec& t = spec.topology;
  const std::uint32_t threads = t.sockets * t.cores_per_socket * t.threads_per_core;
  fmt::print(os, "scenario {} ({}): policy {}, topology {} ({} threads, smt {}), {:g} s (warm-up {:g} s), seed {}, {} repetition{}\n\n",
             spec.name, spec.file, spec.policy, t.name, threads, spec.host.smt ? "on" : "off",
             sim::to_seconds(spec.duration), sim::to_seconds(spec.warmup), spec.seed, runs.size(),
             runs.size() == 1 ? "" : "s");
  const bool reps = runs.size() > 1;
  // Core scheduling: forced idle (cookie) or idle-in-unit (Xen units) per domain, two columns.
  const bool fi = !runs[0].domains.empty() && runs[0].domains[0].has_forced_idle;
  const char* fi_name = spec.host.sched_gran.core ? "unit-idle" : "f-idle";
  const std::string fi_head = fi ? fmt::format(" {:>10} {:>10}", std::string(fi_name) + " s", std::string(fi_name) + "%") : "";
  if (reps)
    fmt::print(os, "{:<14} {:>10} {:>13} {:>13} {:>10} {:>7} {:>8} {:>9} {:>9} {:>9} {:>8}{}\n", "domain", "unit", "mean",
               "hmean", "stddev", "vCPUs", "CPU", "steal%", "blocked%", "migr/s", "remote%", fi_head);
  else
    fmt::print(os, "{:<14} {:>10} {:>13} {:>7} {:>8} {:>9} {:>9} {:>9} {:>8}{}\n", "domain", "unit", "throughput",
               "vCPUs", "CPU", "steal%", "blocked%", "migr/s", "remote%", fi_head);
  std::size_t d = 0;
  std::string hmean_zero;  // domains whose hmean is 0 because a repetition's throughput was 0 or less
  for (const GroupSpec& g : spec.groups)
    for (const hv::DomainSpec& inst : g.instances) {
      const Summary tp = summarize(column(runs, d, &DomainResult::throughput));
      if (reps && tp.min <= 0) hmean_zero += (hmean_zero.empty() ? "" : ", ") + inst.name;
      const Summary cpu = summarize(column(runs, d, &DomainResult::cpu));
      const Summary st = summarize(column(runs, d, &DomainResult::steal_pct));
      const Summary bl = summarize(column(runs, d, &DomainResult::blocked_pct));
      const Summary mg = summarize(column(runs, d, &DomainResult::migrations_per_s));
      const Summary rm = summarize(column(runs, d, &DomainResult::remote_memory));
      const std::string label = (g.bare_metal ? "[bm] " : "") + inst.name;
      const std::string fi_cells =
          fi ? fmt::format(" {:>10.3f} {:>10.2f}", summarize(column(runs, d, &DomainResult::forced_idle_s)).amean,
                           summarize(column(runs, d, &DomainResult::forced_idle_pct)).amean)
             : "";
      if (reps)
        fmt::print(os, "{:<14} {:>10} {:>13.2f} {:>13.2f} {:>10.2f} {:>7} {:>8.2f} {:>9.2f} {:>9.2f} {:>9.1f} {:>8.1f}{}\n",
                   label, runs[0].domains[d].unit, tp.amean, tp.hmean, tp.stddev, inst.vcpus, cpu.amean, st.amean,
                   bl.amean, mg.amean, 100.0 * rm.amean, fi_cells);
      else
        fmt::print(os, "{:<14} {:>10} {:>13.2f} {:>7} {:>8.2f} {:>9.2f} {:>9.2f} {:>9.1f} {:>8.1f}{}\n", label,
                   runs[0].domains[d].unit, tp.amean, inst.vcpus, cpu.amean, st.amean, bl.amean, mg.amean,
                   100.0 * rm.amean, fi_cells);
      ++d;
    }
  double events = 0, util = 0, wall = 0;
  for (const auto& r : runs) {
    events += static_cast<double>(r.events);
    util += r.host_utilisation;
    wall += r.timing.wall_seconds;
  }
  const double sim_s = sim::to_seconds(spec.duration) * static_cast<double>(runs.size());
  fmt::print(os, "\nCPU = pCPUs' worth of running time; steal% = runnable-but-waiting time per vCPU;\n"
                 "remote% = share of running time spent off the node(s) holding the domain's memory.\n");
  // A harmonic mean is defined for positive values only: a 0 there read as a measured zero.
  if (!hmean_zero.empty())
    fmt::print(os, "hmean = 0 where a repetition's throughput was 0 or less (undefined there): {}.\n", hmean_zero);
  if (fi && spec.host.sched_gran.core)
    fmt::print(os, "unit-idle = time threads idled inside the domain's running units (a blocked or absent vCPU's\n"
                   "slot, sched-gran=core); % of the domain's vCPUs' time.\n");
  else if (fi)
    fmt::print(os, "f-idle = forced idle: time a sibling idled while the domain's entity was refused by the\n"
                   "core-wide pick (core scheduling); % of the domain's vCPUs' time.\n");
  fmt::print(os, "run: {} events{}, host utilisation {:.1f}%\n", human(events), reps ? " in all" : "",
             100.0 * util / static_cast<double>(runs.size()));
  if (runs[0].has_cpuidle) {
    double exits = 0, exit_us = 0;
    for (const auto& r : runs) {
      exits += r.idle_exits_per_s;
      exit_us += r.idle_exit_us;
    }
    const auto n = static_cast<double>(runs.size());
    fmt::print(os, "idle states: {:.0f} exits/s, mean exit latency {:.1f} us\n", exits / n, exit_us / n);
  }
  fmt::print(os, "timing: wall {:.3f} s, {} events/s, simulated/wall {:.1f}x\n", wall,
             human(wall > 0 ? events / wall : 0), wall > 0 ? sim_s / wall : 0.0);
}

nlohmann::json to_json(const ScenarioSpec& spec, const std::vector<RunResult>& runs) {
  using nlohmann::json;
  json j;
  j["scenario"] = spec.name;
  j["vcpusim_build"] = VCPUSIM_BUILD;  // the model that produced these figures
  j["file"] = spec.file;
  j["seed"] = spec.seed;
  j["policy"] = spec.policy;
  j["topology"] = spec.topology.name;
  j["smt"] = spec.host.smt;
  j["duration_s"] = sim::to_seconds(spec.duration);
  j["warmup_s"] = sim::to_seconds(spec.warmup);
  json units = json::object();
  if (!runs.empty())
    for (const auto& d : runs[0].domains) units[d.name] = d.unit;
  j["units"] = units;
  json jr = json::array(), timing_runs = json::array();
  std::map<std::string, std::vector<double>> by_metric;
  double wall = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto m = runs[i].metrics();
    jr.push_back({{"repetition", i}, {"seed", runs[i].seed}, {"metrics", m}});
    for (const auto& [k, v] : m) by_metric[k].push_back(v);
    timing_runs.push_back({{"wall_seconds", runs[i].timing.wall_seconds},
                           {"events_per_second", runs[i].timing.events_per_second},
                           {"sim_to_wall", runs[i].timing.sim_to_wall}});
    wall += runs[i].timing.wall_seconds;
  }
  j["runs"] = jr;
  json summary = json::object();
  for (const auto& [k, xs] : by_metric) {
    const Summary s = summarize(xs);
    summary[k] = {{"n", s.n},           {"amean", s.amean},   {"hmean", s.hmean}, {"gmean", s.gmean},
                  {"stddev", s.stddev}, {"coeffvar", s.coeffvar}, {"min", s.min}, {"max", s.max},
                  {"ci95_lo", s.ci95_lo}, {"ci95_hi", s.ci95_hi}};
  }
  j["summary"] = summary;
  j["timing"] = {{"wall_seconds", wall}, {"runs", timing_runs}};
  return j;
}

void write_csv(std::ostream& os, const std::vector<RunResult>& runs) {
  os << "repetition,seed,domain,group,bare_metal,unit,throughput,cpu,steal_pct,blocked_pct,migrations_per_s,switches_per_s,remote_memory,forced_idle_pct\n";
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (const auto& d : runs[i].domains)
      fmt::print(os, "{},{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g}\n", i, runs[i].seed, d.name, d.group,
                 d.bare_metal ? 1 : 0, d.unit, d.throughput, d.cpu, d.steal_pct, d.blocked_pct, d.migrations_per_s,
                 d.switches_per_s, d.remote_memory, d.forced_idle_pct);
}

}  // namespace vcpusim::app
