// SPDX-License-Identifier: MIT
#include "app/sweep_runner.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "app/build_id.h"
#include "app/records.h"
#include "app/runner.h"
#include "app/config_error.h"
#include "app/scenario.h"

namespace vcpusim::app {

SweepProgress::SweepProgress(std::ostream& os, bool bar, std::size_t total)
    : os_(os), bar_(bar), total_(total), t0_(clock::now()), last_(t0_) {}

void SweepProgress::done_one() {
  std::lock_guard<std::mutex> lock(mu_);
  ++done_;
  if (!held_) draw(clock::now());
}

void SweepProgress::hold() {
  std::lock_guard<std::mutex> lock(mu_);
  held_ = true;
}

void SweepProgress::release() {
  std::lock_guard<std::mutex> lock(mu_);
  held_ = false;
  // The bar shows what was counted; a plain line only if that was the last run (the next
  // done_one keeps to the 5 s rhythm otherwise).
  if (done_ > 0 && (bar_ || done_ == total_)) draw(clock::now());
}

void SweepProgress::draw(clock::time_point now) {
  const double el = std::chrono::duration<double>(now - t0_).count();
  const double rate = el > 0 ? static_cast<double>(done_) / el : 0;
  const double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : 0;
  if (bar_) {
    const int width = 30;
    const int fill = total_ ? static_cast<int>(width * done_ / total_) : width;
    fmt::print(os_, "\r[{}{}] {}/{} runs, {:.2f} runs/s, ETA {:.0f} s   ", std::string(fill, '#'),
               std::string(width - fill, '.'), done_, total_, rate, eta);
    if (done_ == total_) fmt::print(os_, "\n");
    os_.flush();
  } else if (done_ == total_ || std::chrono::duration<double>(now - last_).count() >= 5.0) {
    fmt::print(os_, "sweep: {}/{} runs done, {:.2f} runs/s, ETA {:.0f} s\n", done_, total_, rate, eta);
    last_ = now;
  }
}

void SweepProgress::note(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  // A bar drawn and not finished has no newline yet; the note starts a line of its own, and
  // the next done_one redraws the bar below it.
  if (bar_ && !held_ && done_ > 0 && done_ < total_) fmt::print(os_, "\n");
  fmt::print(os_, "{}\n", line);
  os_.flush();
}

SweepWork plan_sweep_work(const SweepPlan& plan, const SweepOptions& o) {
  SweepWork w;
  SweepSummary& sum = w.summary;
  std::filesystem::create_directories(o.out_dir);
  sum.records_path = (std::filesystem::path(o.out_dir) / "records.jsonl").string();

  std::set<RecordKey> finished;
  const std::vector<PlacedRecord> records = read_placed_records(sum.records_path);
  // A record whose column_index or point_index disagrees with its label, or with the index this
  // plan gives that label, was counted as finished: the resume exited 0 over a file that compare,
  // plot and merge then refused. It is refused here as they refuse it (SweepIndices), the plan's
  // indices first, so that the message names the records file and the scenario.
  SweepIndices indices;
  // (column, point as tables print it) -> run: the readers take {"x": 2} and {"x": 2.0} for one point.
  std::map<std::pair<std::string, std::string>, const SweepRun*> plan_runs;
  for (const SweepRun& run : plan.runs) plan_runs.emplace(std::make_pair(run.column, point_label(run.point)), &run);
  if (!records.empty())
    for (const SweepRun& run : plan.runs) {
      nlohmann::json as_record = {{"column", run.column.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.column)},
                                  {"column_index", run.column_index},
                                  {"point", run.point},
                                  {"point_index", run.point_index}};
      indices.check(as_record, RecordPlace{plan.file, 0});
    }
  for (const auto& [r, place] : records) {
    if (r.value("scenario_hash", std::string()) != plan.scenario_hash)
      throw ConfigError(sum.records_path, 0, 0, "", "holds records of a different scenario (or an edited one, or one whose topology file was edited); use another --out directory");
    // Another build may be another model: its records are not this build's results.
    if (const std::string b = r.value("vcpusim_build", std::string("(none)")); b != VCPUSIM_BUILD)
      throw ConfigError(sum.records_path, 0, 0, "vcpusim_build",
                        "holds records written by vcpusim build " + b + ", not by this one (" VCPUSIM_BUILD
                        "), whose model may give other figures; use another --out directory");
    indices.check(r, place);
    // A record counts as a finished run of this plan only if it is one: a repetition the plan
    // does not have (7 of 2), a point or column it does not have, or a run under another run's
    // name (its seed is another's) was counted as finished or beside one, so the resume exited 0
    // and compare then counted the stray run as a sample, or refused the file.
    const auto [column, point, repetition] = key_of(r);
    if (repetition >= plan.repetitions)
      throw ConfigError(place.file, place.line, place.line > 0 ? 1 : 0, "repetition",
                        std::to_string(repetition) + " is not a repetition of this sweep, which runs " +
                            std::to_string(plan.repetitions) + " (0 to " + std::to_string(plan.repetitions - 1) +
                            "); use another --out directory");
    const std::string shown = point_label(r.at("point"));
    const auto run = plan_runs.find({column, shown});
    if (run == plan_runs.end())
      throw ConfigError(place.file, place.line, place.line > 0 ? 1 : 0, "point",
                        "point " + shown + (column.empty() ? "" : ", column '" + column + "',") +
                            " is not a run of this sweep; use another --out directory");
    if (const std::uint64_t seed = point_seed(plan.seed, run->second->point_key, repetition);
        r.value("seed", seed) != seed)
      throw ConfigError(place.file, place.line, place.line > 0 ? 1 : 0, "seed",
                        r.at("seed").dump() + " is not the seed of repetition " + std::to_string(repetition) + " of point " +
                            shown + (column.empty() ? "" : ", column '" + column + "'") + " (" + std::to_string(seed) +
                            "): another run under its name (an edited or mixed file); use another --out directory");
    finished.insert({column, run->second->point_key, repetition});  // the plan's spelling of the point
  }
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    if (o.only && !o.only(plan.runs[i])) continue;
    for (std::uint32_t rep = 0; rep < plan.repetitions; ++rep) {
      const std::size_t index = i * plan.repetitions + rep;
      if (index % o.shards != o.shard - 1) continue;
      ++sum.total;
      if (finished.count({plan.runs[i].column, plan.runs[i].point_key, rep})) {
        ++sum.skipped;
        continue;
      }
      w.todo.push_back(index);
    }
  }
  if (o.max_records > 0 && o.max_records < w.todo.size()) w.todo.resize(o.max_records);
  return w;
}

std::vector<ScenarioSpec> load_sweep_specs(const SweepPlan& plan) {
  std::vector<ScenarioSpec> specs;
  specs.reserve(plan.runs.size());
  for (const SweepRun& run : plan.runs) {
    try {
      specs.push_back(load_scenario(YamlReader(run.document, plan.file, "")));
    } catch (const ConfigError& e) {
      throw locate_in_sweep(plan, run, e);
    }
  }
  return specs;
}

nlohmann::json run_sweep_task(const SweepPlan& plan, const ScenarioSpec& spec, std::size_t task_index) {
  const SweepRun& run = plan.runs.at(task_index / plan.repetitions);
  const auto repetition = static_cast<std::uint32_t>(task_index % plan.repetitions);
  const std::uint64_t seed = point_seed(plan.seed, run.point_key, repetition);
  const RunResult res = run_scenario(spec, seed);
  nlohmann::json rec;
  rec["scenario"] = plan.name.empty() ? spec.name : plan.name;
  rec["scenario_hash"] = plan.scenario_hash;
  rec["vcpusim_build"] = VCPUSIM_BUILD;
  rec["column"] = run.column.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.column);
  rec["column_index"] = run.column_index;
  rec["point"] = run.point;
  rec["point_index"] = run.point_index;
  rec["repetition"] = repetition;
  rec["task_index"] = task_index;
  rec["tasks_total"] = plan.runs.size() * plan.repetitions;
  rec["seed"] = seed;
  rec["metrics"] = res.metrics();
  rec["resolved"] = yaml_to_json(run.document);
  rec["timing"] = {{"wall_seconds", res.timing.wall_seconds},
                   {"events_per_second", res.timing.events_per_second},
                   {"sim_to_wall", res.timing.sim_to_wall}};
  return rec;
}

SweepSummary run_sweep(const SweepPlan& plan, const SweepOptions& o, std::ostream& progress) {
  SweepWork work = plan_sweep_work(plan, o);
  SweepSummary& sum = work.summary;
  // Every point's scenario is loaded (and so validated) before any work starts.
  const std::vector<ScenarioSpec> specs = load_sweep_specs(plan);
  const std::size_t todo = work.todo.size();

  RecordWriter writer(sum.records_path);
  SweepProgress prog(progress, o.progress_bar, todo);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mu;
  std::atomic<std::size_t> written{0};

  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= todo || failed.load()) return;
      const std::size_t index = work.todo[i];
      try {
        writer.append(run_sweep_task(plan, specs[index / plan.repetitions], index));
        ++written;
        prog.done_one();
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
        failed = true;
        return;
      }
    }
  };
  unsigned jobs = o.jobs ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs = static_cast<unsigned>(std::min<std::size_t>(jobs, std::max<std::size_t>(todo, 1)));
  std::vector<std::thread> pool;
  // Started threads work at once: progress waits until the pool is built, so that a warning
  // about it never follows "N/N runs done".
  prog.hold();
  // A thread the system will not start (--jobs 100000 past the process or address-space limit)
  // throws std::system_error. The sweep degrades rather than fails: the threads that did start
  // keep working, this thread works too, and every run is finished. Records are identical for
  // any number of jobs, so only the time changes, and one line says so. (Refusing it, exit 2,
  // was not deterministic: the started threads had sometimes finished every run already.)
  for (unsigned j = 1; j < jobs; ++j) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error& e) {
      const std::string asked = o.jobs ? std::to_string(o.jobs) : fmt::format("(default: one per core, {})", jobs);
      prog.note(fmt::format("vcpusim: --jobs {}: the system started only {} more thread{} ({}); running {} at once", asked,
                            pool.size(), pool.size() == 1 ? "" : "s", e.code().message(), pool.size() + 1));
      break;
    }
  }
  prog.release();
  worker();
  for (auto& th : pool) th.join();
  sum.written = written.load();
  if (error) std::rethrow_exception(error);
  return sum;
}

}  // namespace vcpusim::app
