// SPDX-License-Identifier: MIT
// vcpusim's command line. Exit status: 0 success; 2 bad input (a scenario or an argument: the
// message names file:line:col: field); 3 a model invariant was violated (the message names the
// rule, entity, pCPU and time); 1 anything else.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <new>
#include <sstream>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/build_id.h"
#include "app/bench.h"
#include "app/command_line_sets.h"
#include "app/compare.h"
#include "app/merge.h"
#include "app/mpi_sweep.h"
#include "app/output_paths.h"
#include "app/perfetto_trace.h"
#include "app/plot.h"
#include "app/records.h"
#include "app/reproduce.h"
#include "app/sweep.h"
#include "app/sweep_runner.h"
#include "app/text.h"
#include "app/config_error.h"
#include "app/report.h"
#include "app/runner.h"
#include "app/scenario.h"
#include "app/yaml_reader.h"
#include "guest/workload.h"
#include "sim/params.h"
#include "hypervisor/host.h"
#include "policies/registry.h"

using namespace vcpusim;

namespace {

// One parameter's line: its help, the variant it belongs to, and for a choice the accepted names
// and the default.
std::string describe_param(const sim::ParamSpec& q) {
  std::string s = "      " + q.name + ": " + q.help;
  if (!q.only_with.empty()) {
    std::string values;
    for (const auto& v : q.only_with_values) values += (values.empty() ? "" : " | ") + v;
    s += " (only with " + q.only_with + ": " + values + ")";
  }
  if (q.bytes) s += " (bytes; units as 16KiB)";
  if (!q.above.empty()) s += " (above " + q.above + ")";
  if (q.least_nonzero > 0)
    s += " (0 or at least " +
         (q.kind == sim::ParamSpec::Kind::kDuration ? app::duration_text(q.least_nonzero) : std::to_string(q.least_nonzero)) + ")";
  if (q.kind == sim::ParamSpec::Kind::kChoice && !q.choices.empty()) {
    std::string names;
    for (const auto& c : q.choices) names += (names.empty() ? "" : " | ") + c;
    const auto d = static_cast<std::size_t>(q.def);
    s += " [" + names + "; default " + (d < q.choices.size() ? q.choices[d] : std::string("?")) + "]";
  }
  return s + "\n";
}

std::string list_plugins() {
  std::string s = "Scheduler policies (host.scheduler.policy):\n";
  for (const auto& p : policy::policies()) {
    s += "  " + std::string(p.name) + ": " + std::string(p.description) + "\n";
    for (const auto& q : p.params) s += describe_param(q);
  }
  s += "Workloads (workload.kind):\n  program: phases of compute and block, looped (loops/s)\n"
       "      threads: threads running the phases (default 1)\n"
       "      phases: list of {compute: DURATION, profile: cpu|memory|mixed, mem_intensity: 0..1, dist: const|exp|uniform}\n"
       "              or {block: DURATION, dist: ...}, looped; a loop counts when its last compute phase ends\n";
  for (const auto& w : guest::workloads()) {
    s += "  " + std::string(w.kind) + ": " + std::string(w.description) + " (" + std::string(w.unit) + ")\n";
    for (const auto& q : w.params) s += describe_param(q);
  }
  return s;
}

// The files a command reads from the scenario `file`, for check_outputs_are_distinct: the scenario
// and the topology files it names (`topology: boxes/my.yaml` was replaced by `--json
// boxes/my.yaml`: only the scenario was checked).
std::vector<app::PathArg> scenario_inputs(const std::string& file, const std::vector<std::string>& topology_files) {
  std::vector<app::PathArg> inputs{{file, "the scenario it reads"}};
  for (const auto& t : topology_files) inputs.push_back({t, "a topology file the scenario names"});
  return inputs;
}

// The scenario of run and trace: FILE or the built-in default, with the --set values applied;
// an error in a field a --set gave is that option's.
app::ScenarioSpec load_run_scenario(const std::string& file, const std::vector<app::CommandLineSet>& sets) {
  const app::YamlReader root = file.empty()
                                   ? app::YamlReader::load_string(app::default_scenario_text(), "<built-in default>")
                                   : app::YamlReader::load_file(file);
  try {
    return app::load_scenario(app::apply_command_line_sets(root, sets));
  } catch (const app::ConfigError& e) {
    throw app::blame_command_line_sets(sets, root.node(), e);
  }
}

// A flag and a --set of the same field: the flag won, whatever the order.
void refuse_flag_and_set(const std::vector<app::CommandLineSet>& sets, const char* field, const char* flag, bool given) {
  if (given && std::any_of(sets.begin(), sets.end(), [&](const app::CommandLineSet& s) { return s.path == field; }))
    throw app::ConfigError("<command line>", 0, 0, flag, std::string("and --set ") + field + " both set it: give one");
}

// When `run` rewrites its output files: after a repetition once the repetitions since the last
// write took at least 4x what that write took, so writing costs at most a fifth of the run's
// time whatever the number of repetitions. A repetition that takes longer than a write (any run
// of a real host) is written as it finishes.
class WriteSchedule {
 public:
  bool due() const { return !written_ || Clock::now() - end_ >= 4 * cost_; }
  void start() { begin_ = Clock::now(); }
  void done() {
    end_ = Clock::now();
    cost_ = end_ - begin_;
    written_ = true;
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool written_ = false;
  Clock::time_point begin_, end_;
  Clock::duration cost_{};
};

// SIGINT (Ctrl-C) and SIGTERM while `run` holds finished repetitions not yet on disk: the signal is
// noted, the repetition in progress (a short one, or nothing would be held) finishes, the held
// ones are written, and the run exits with 128 + the signal's number, as a shell reports a
// killed command. With nothing held the signal kills at once, as it did before.
class StopSignals {
 public:
  explicit StopSignals(bool install) : installed_(install) {
    if (!installed_) return;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    // A signal the parent had ignored stays ignored (a background job of a script ignores SIGINT).
    if (old_int_.sa_handler == SIG_IGN) sigaction(SIGINT, &old_int_, nullptr);
    if (old_term_.sa_handler == SIG_IGN) sigaction(SIGTERM, &old_term_, nullptr);
  }
  ~StopSignals() {
    if (!installed_) return;
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  void hold() { held_ = 1; }
  void release() { held_ = 0; }
  int requested() const { return requested_; }

 private:
  static void on_signal(int sig) {
    if (held_) {
      requested_ = sig;
      return;
    }
    // Nothing to save: die of the signal (signal and raise are async-signal-safe).
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
  static inline volatile std::sig_atomic_t held_ = 0;
  static inline volatile std::sig_atomic_t requested_ = 0;
  bool installed_;
  struct sigaction old_int_ {}, old_term_ {};
};

int cmd_run(const std::string& file, const std::vector<std::string>& sets, const std::optional<std::uint64_t>& seed,
            const std::string& duration, const std::optional<std::uint32_t>& reps, const std::string& json_path,
            const std::string& csv_path, bool quiet) {
  const std::vector<app::PathArg> outputs{{json_path, "--json"}, {csv_path, "--csv"}};
  app::check_outputs_are_distinct({{file, "the scenario it reads"}}, outputs);
  if (!json_path.empty()) app::check_output_file(json_path, "--json");
  if (!csv_path.empty()) app::check_output_file(csv_path, "--csv");
  std::optional<sim::Duration> d;
  if (!duration.empty()) {
    // Read as the file's duration: '1e30ms' (too long) and '0.4ns' (no whole nanosecond) were
    // both "not a positive duration such as 10s", which neither is.
    d = app::YamlReader(YAML::Node(duration), "<command line>", "--duration").as_duration();
    // The bounds and the message of the file's duration: (a flag without them started a 31-year run).
    if (*d < app::kMinRunDuration || *d > app::kMaxRunDuration)
      throw app::ConfigError("<command line>", 0, 0, "--duration",
                             app::duration_out_of_range(duration, app::kMinRunDuration, app::kMaxRunDuration));
  }
  const std::vector<app::CommandLineSet> set_list = app::parse_command_line_sets("--set", sets);
  refuse_flag_and_set(set_list, "seed", "--seed", seed.has_value());
  refuse_flag_and_set(set_list, "duration", "--duration", d.has_value());
  refuse_flag_and_set(set_list, "repetitions", "--repetitions", reps.has_value());
  app::ScenarioSpec spec = load_run_scenario(file, set_list);
  // Which topology files are read is known once the scenario is loaded (a --set may name another).
  app::check_outputs_are_distinct(scenario_inputs(file, spec.topology_files), outputs);
  if (seed) spec.seed = *seed;
  if (d) {
    if (*d <= spec.warmup) throw app::ConfigError("<command line>", 0, 0, "--duration", "must be longer than the scenario's warm-up");
    spec.duration = *d;
  }
  if (reps) spec.repetitions = *reps;
  std::vector<app::RunResult> runs;
  // Results of every finished repetition are on disk before the next one starts, unless writing
  // them would cost more than a quarter of the time the repetitions since the last write took
  // (WriteSchedule: each write holds every run so far, so writing after each of 10,000 short
  // repetitions took hours). Those held back are written by a SIGINT or SIGTERM, which ends the
  // run after the repetition in progress (StopSignals). Standard output cannot be rewritten:
  // it gets the one document at the end (it got one per repetition, which no JSON reader takes),
  // and the CSV rows once each.
  const bool to_files = (!json_path.empty() && json_path != "-") || (!csv_path.empty() && csv_path != "-");
  StopSignals stop(to_files);
  WriteSchedule schedule;
  for (std::uint32_t i = 0; i < spec.repetitions; ++i) {
    runs.push_back(app::run_scenario(spec, app::repetition_seed(spec.seed, i)));
    const bool last = i + 1 == spec.repetitions;
    stop.hold();  // a signal from here on waits for the write below
    if (!(last || stop.requested() || schedule.due())) continue;
    schedule.start();
    if (!json_path.empty() && (json_path != "-" || last))
      app::write_atomically(json_path, app::to_json(spec, runs).dump(2) + "\n");
    if (!csv_path.empty() && (csv_path != "-" || last)) {
      std::ostringstream os;
      app::write_csv(os, runs);
      app::write_atomically(csv_path, os.str());
    }
    schedule.done();
    stop.release();
    if (stop.requested() && !last) {
      std::cerr << "vcpusim: interrupted: " << runs.size() << " of " << spec.repetitions
                << " repetitions written\n";
      return 128 + stop.requested();
    }
  }
  if (!quiet && json_path != "-" && csv_path != "-") app::write_table(std::cout, spec, runs);
  return 0;
}

std::vector<nlohmann::json> records_of(const std::vector<std::string>& dirs) {
  std::vector<nlohmann::json> all;
  for (const auto& d : dirs) {
    const std::string path = app::records_file_of(d);
    if (!std::filesystem::exists(path)) throw app::ConfigError(path, 0, 0, "", "no records here (run `vcpusim sweep ... --out DIR` first)");
    for (auto& r : app::read_records(path)) all.push_back(std::move(r));
  }
  return all;
}

// The records a sweep appends to may not be a file it reads: the scenario, or a topology file
// one of its runs names (a run appended to it, or cut its last line as a torn record).
void check_sweep_output(const std::string& file, const app::SweepPlan& plan, const app::SweepOptions& so) {
  app::check_outputs_are_distinct(scenario_inputs(file, app::topology_files(plan)),
                                  {{(std::filesystem::path(so.out_dir) / "records.jsonl").string(), "--out"}});
}

void print_sweep_summary(const app::SweepSummary& s) {
  std::cerr << "sweep: " << s.written << " records written, " << s.skipped << " already present, "
            << (s.total - s.skipped - s.written) << " left; " << s.records_path << "\n";
}

// A flag that takes an integer from 0 to 2^63 - 1 (`what` names it in the message): CLI11 parses
// "-5" into an unsigned as 2^64 - 5 and lets it through.
// Both validators rewrite the value as plain decimal: CLI11's own conversion then read "010" as
// octal 8 (`--seed 010` ran seed 8, where `seed: 010` in the file is 10) and took "0x2" as hex.
CLI::Validator whole_number(const std::string& what, std::int64_t lo = 0) {
  return CLI::Validator(
      [what, lo](std::string& v) -> std::string {
        std::int64_t x = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (ec != std::errc() || end != v.data() + v.size() || x < lo)
          return "'" + v + "' is not " + what + ": an integer from " + std::to_string(lo) + " to " +
                 std::to_string(std::numeric_limits<std::int64_t>::max());
        v = std::to_string(x);
        return {};
      },
      std::to_string(lo) + " to 2^63 - 1");
}

// An integer flag that overrides a scenario field: the field's bounds and its message, so the
// flag refuses what the file refuses (CLI11's Range took 100000 repetitions, the file 10000).
CLI::Validator field_range(std::int64_t lo, std::int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        std::int64_t x = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (ec != std::errc() || end != v.data() + v.size())
          return "'" + v + "' is not an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
        if (x < lo || x > hi) return app::out_of_range(x, lo, hi);
        v = std::to_string(x);
        return {};
      },
      std::to_string(lo) + " to " + std::to_string(hi));
}

// A flag whose value may not be empty: CLI11 takes --json '' as given-but-empty, which the code
// then read as not given (it wrote nothing, rc 0).
const CLI::Validator kNonEmpty(
    [](const std::string& v) -> std::string { return v.empty() ? std::string("is empty") : std::string(); }, "NONEMPTY");
// A figure title with a control character made an SVG that no XML parser reads; so did one
// with bytes that are not UTF-8 (--title $'a\xff').
const CLI::Validator kPrintable(
    [](const std::string& v) -> std::string {
      if (app::has_control_character(v)) return "holds a control character; a title is one printable line";
      try {
        (void)nlohmann::json(v).dump();  // refuses text that is not UTF-8
      } catch (const nlohmann::json::type_error&) {
        return "is not UTF-8 text; a title is one printable line";
      }
      return std::string();
    },
    "PRINTABLE");

// The command line's work; main() adds the check of standard output.
int run_command_line(int argc, char** argv) {
  CLI::App cli{"vcpusim: a discrete-event model of hypervisor vCPU scheduling (Xen credit2-like and KVM/CFS hosts,\n"
               "NUMA and SMT topologies, guest workloads). Exit status: 0 ok, 2 bad input, 3 model invariant violated."};
  cli.set_version_flag("--version", std::string("vcpusim ") + VCPUSIM_VERSION + " (" + VCPUSIM_BUILD + ")");
  cli.require_subcommand(1);
  cli.footer("Run 'vcpusim SUBCOMMAND --help' for each command's options. Scenario schema: README.md.");

  auto* run = cli.add_subcommand("run", "Run a scenario (the built-in default when no file is given) and print a table");
  std::string file, duration, json_path, csv_path;
  std::optional<std::uint64_t> seed;
  std::optional<std::uint32_t> reps;
  bool quiet = false, list = false;
  run->add_option("SCENARIO", file, "scenario YAML file (default: the built-in default scenario)")->check(kNonEmpty);
  std::vector<std::string> run_sets;
  run->add_option("--set", run_sets, "override a field of the scenario: PATH=VALUE (YAML), repeatable, e.g. host.smt=off");
  // The scenario's seed: takes [0, 2^63 - 1]; so do these. CLI11 alone would wrap "-5" into
  // 2^64 - 5, and its Range lets 2^64 - 5 itself through.
  const CLI::Validator seed_range = whole_number("a seed");
  run->add_option("--seed", seed, "master seed (overrides the scenario's seed:)")->transform(seed_range);
  run->add_option("--duration", duration, "simulated time, e.g. 10s or 500ms (overrides duration:)")->check(kNonEmpty);
  run->add_option("--repetitions", reps, "number of seeds to run (overrides repetitions:)")
      ->transform(field_range(1, app::kMaxRepetitions));
  run->add_option("--json", json_path, "write results as JSON to FILE ('-': stdout); rewritten after each repetition")->check(kNonEmpty);
  run->add_option("--csv", csv_path, "write one CSV row per domain and repetition to FILE ('-': stdout)")->check(kNonEmpty);
  run->add_flag("--quiet", quiet, "print no table");
  auto* list_flag = run->add_flag("--list", list, "list the scheduler policies and workload models with their parameters, and exit");
  // --list runs nothing: a scenario, --json or --set beside it was ignored without a word (a
  // missing file listed, exit 0, and no --json was written).
  for (CLI::Option* o : run->get_options())
    if (o != list_flag && o->get_name() != "--help") list_flag->excludes(o);

  auto* trace = cli.add_subcommand("trace", "Write a Chrome/Perfetto trace (JSON) of a window of a run: pCPU and vCPU tracks");
  std::string trace_file, trace_window = "0s..200ms", trace_out;
  std::optional<std::uint64_t> trace_seed;
  std::uint32_t trace_rep = 0;
  trace->add_option("SCENARIO", trace_file, "scenario YAML file (default: the built-in default scenario)")->check(kNonEmpty);
  std::vector<std::string> trace_sets;
  trace->add_option("--set", trace_sets, "override a field of the scenario: PATH=VALUE (YAML), repeatable");
  trace->add_option("--window", trace_window, "simulated interval to keep, FROM..TO (default 0s..200ms)")->check(kNonEmpty);
  trace->add_option("--seed", trace_seed, "master seed, as run's (overrides the scenario's seed:)")->transform(seed_range);
  trace->add_option("--repetition", trace_rep, "which repetition to trace, numbered from 0 as run's (default 0)")
      ->transform(field_range(0, app::kMaxRepetitions - 1));
  trace->add_option("--out", trace_out, "output file (open it in ui.perfetto.dev or chrome://tracing)")->required()->check(kNonEmpty);

  auto* bench = cli.add_subcommand("bench", "Measure the engine's and whole scenarios' speed (medians over repeats)");
  app::BenchOptions bo;
  std::string bench_json;
  bench->add_option("--repeats", bo.repeats, "repeats per measurement (default 5)")->transform(field_range(1, 1000));
  bench->add_flag("--quick", bo.quick, "short runs, for a smoke test");
  bench->add_option("--json", bench_json, "also write the figures as JSON to FILE")->check(kNonEmpty);

  auto* sweep = cli.add_subcommand("sweep", "Run a scenario's sweep (cross product x columns x repetitions) into DIR/records.jsonl; resumes");
  std::string sweep_file, out_dir;
  unsigned jobs = 0;
  std::uint64_t max_records = 0;
  std::vector<std::string> sets;
  sweep->add_option("SCENARIO", sweep_file, "scenario YAML with sweep: and/or columns:")->required()->check(kNonEmpty);
  sweep->add_option("--out", out_dir, "output directory (records.jsonl is appended there)")->required()->check(kNonEmpty);
  sweep->add_option("--jobs", jobs, "parallel runs (default 0: every core); records are identical for any value")
      ->transform(field_range(0, std::numeric_limits<std::uint32_t>::max()));
  sweep->add_option("--max-records", max_records, "stop after this many new records (a controlled interruption)")
      // From 1: leaving the flag out means "no limit", which 0 ran as (the whole sweep); and
      // CLI11 alone wraps -1 into 2^64 - 1, no limit at all.
      ->transform(whole_number("a record count", 1));
  sweep->add_option("--set", sets, "override a scenario field before expansion: PATH=VALUE (YAML), repeatable");
  std::string shard;
  sweep->add_option("--shard", shard, "run only shard K of N (K/N, 1 <= K <= N), for batch systems; join with merge")
      ->check(kNonEmpty);  // '' was read as no --shard: the whole sweep ran
  bool use_mpi = false;
  sweep->add_flag("--mpi", use_mpi, "spread the sweep over the ranks of an MPI job (mpirun -n R vcpusim sweep ... --mpi); "
                                    "rank 0 writes the records");

  auto* merge = cli.add_subcommand("merge", "Join the records of several sweep outputs (shards) into one directory");
  std::vector<std::string> merge_in;
  std::string merge_out;
  merge->add_option("DIR", merge_in, "sweep output directories (or records.jsonl files)")->required()->check(kNonEmpty);
  merge->add_option("--out", merge_out, "output directory")->required()->check(kNonEmpty);

  auto* compare = cli.add_subcommand("compare", "Print an mmtests-style compare table from sweep records");
  std::vector<std::string> cmp_dirs;
  app::CompareOptions co;
  std::string rule = "ttest";
  bool lower = false;
  compare->add_option("DIR", cmp_dirs, "sweep output directories (or records.jsonl files)")->required()->check(kNonEmpty);
  compare->add_option("--baseline", co.baseline, "baseline column label (default: the sweep's first column)")->check(kNonEmpty);
  compare->add_option("--by", co.by, "swept field whose values are the table's operations (default: the only one)")->check(kNonEmpty);
  compare->add_option("--metric", co.metric, "record metric (default: the only vm.GROUP.throughput or ops_per_sec)")->check(kNonEmpty);
  compare->add_flag("--lower-is-better", lower, "Amean rows and inverted percentages (times, latencies)");
  compare->add_option("--rule", rule, "significance: ttest (old mmtests, default) or interval (current mmtests)")
      ->check(CLI::IsMember({"ttest", "interval"}));
  compare->add_option("--format", co.format, "text (default), csv, json or markdown")->check(CLI::IsMember({"text", "csv", "json", "markdown"}));

  auto* repro = cli.add_subcommand("reproduce", "Run a reproduction of a published table and print model beside published");
  std::string repro_name, repro_from, repro_out, repro_json;
  bool repro_list = false;
  unsigned repro_jobs = 0;
  std::vector<std::string> repro_sets, repro_rows;
  repro->add_option("NAME", repro_name, "configs/reproduce/NAME.yaml (or a path)")->check(kNonEmpty);
  auto* repro_list_flag = repro->add_flag("--list", repro_list, "list the reproductions");
  auto* from_opt =
      repro->add_option("--from", repro_from, "read finished records from DIR instead of running")->check(kNonEmpty);
  auto* out_opt =
      repro->add_option("--out", repro_out, "where to run the sweep (default: vcpusim-reproduce/NAME); resumes")->check(kNonEmpty);
  auto* jobs_opt = repro->add_option("--jobs", repro_jobs, "parallel runs (default 0: every core)")
                       ->transform(field_range(0, std::numeric_limits<std::uint32_t>::max()));
  // --from runs nothing: an --out or --jobs beside it was ignored without a word.
  from_opt->excludes(out_opt);
  from_opt->excludes(jobs_opt);
  repro->add_option("--json", repro_json, "write one object per published cell plus the summary to FILE ('-': stdout)")->check(kNonEmpty);
  repro->add_option("--set", repro_sets, "override a field of the reproduction's scenario: PATH=VALUE, e.g. duration=5s");
  std::vector<std::vector<std::string>> repro_row_sets;
  repro->add_option("--row-set", repro_row_sets,
                    "ROW PATH=VALUE: override a field for that published row's runs only, e.g. "
                    "--row-set 'ebizzy 2x' vms.guest.workload.lock_page_cost=200ns (repeatable)")
      ->expected(2);
  repro->add_option("--row", repro_rows,
                    "run and compare only this published row (repeatable; a baseline row is kept), e.g. --row '2x'");
  std::string repro_plot;
  repro->add_option("--plot", repro_plot, "also draw model beside published per row with gnuplot, to FIG.png or FIG.svg")->check(kNonEmpty);
  // --list runs nothing, as run's does: a NAME, --json or --set beside it was ignored.
  for (CLI::Option* o : repro->get_options())
    if (o != repro_list_flag && o->get_name() != "--help") repro_list_flag->excludes(o);

  auto* plot = cli.add_subcommand("plot", "Draw a metric of sweep records against a swept field with gnuplot (PNG or SVG)");
  std::vector<std::string> plot_dirs;
  app::PlotOptions po;
  plot->add_option("DIR", plot_dirs, "sweep output directories (or records.jsonl files)")->required()->check(kNonEmpty);
  plot->add_option("--x", po.x, "swept field on the x axis (numeric axis when every value is a number)")->required()->check(kNonEmpty);
  plot->add_option("--y", po.metric, "record metric on the y axis: mean over repetitions, +/- 1 stddev error bars")->required()->check(kNonEmpty);
  plot->add_option("--by", po.by, "one line per value of this swept field, or 'column' (default: the sweep's columns)")->check(kNonEmpty);
  plot->add_option("--out", po.out, "figure file; the extension picks the format: .png or .svg (default: DIR/plot.png)")->check(kNonEmpty);
  plot->add_option("--title", po.title, "figure title (default: SCENARIO: METRIC by FIELD)")->check(kNonEmpty)->check(kPrintable);

  // A first word that names no command: CLI11 took it for an extra argument and said only "A
  // subcommand is required".
  if (argc >= 2 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* c : cli.get_subcommands({})) {
      known = known || c->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + c->get_name();
    }
    if (!known) {
      std::cerr << "vcpusim: '" << argv[1] << "' is not a command; the commands are " << names << " (vcpusim --help)\n";
      return 2;
    }
  }
  // --version with other words: CLI11 printed the version at the flag and exit 0, ignoring the
  // rest ('vcpusim --version run x.yaml' ran nothing and said nothing of it).
  if (argc > 2 && argv[1][0] == '-')
    for (int i = 1; i < argc; ++i)
      if (std::string(argv[i]) == "--version") {
        const int other = i == 1 ? 2 : 1;
        std::cerr << "vcpusim: --version takes no other argument; got '" << argv[other] << "'\n";
        return 2;
      }
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
      return cmd_run(file, run_sets, seed, duration, reps, json_path, csv_path, quiet);
    }
    if (*sweep) {
      app::ensure_records_dir(out_dir, "--out");
      app::SweepOptions so{out_dir, jobs, max_records, ::isatty(2) != 0};
      if (!shard.empty()) {
        unsigned k = 0, n = 0;
        char slash = 0;
        std::istringstream is(shard);
        // Digits only: `is >> n` reads "-2" as 2^32 - 2, so --shard 1/-2 ran one task of the
        // sweep as shard 1 of 4294967294, exit 0.
        if (shard.find_first_not_of("0123456789/") != std::string::npos || !(is >> k >> slash >> n) ||
            slash != '/' || !is.eof() || n < 1 || k < 1 || k > n)
          throw app::ConfigError("<command line>", 0, 0, "--shard", "'" + shard + "' is not K/N with 1 <= K <= N");
        so.shard = k;
        so.shards = n;
      }
      const std::vector<app::CommandLineSet> set_list = app::parse_command_line_sets("--set", sets);
      if (use_mpi) {
        so.progress_bar = false;  // several processes share the terminal
        auto make_plan = [&] {
          const app::YamlReader root = app::YamlReader::load_file(sweep_file);
          app::SweepPlan plan;
          try {
            plan = app::expand_sweep(app::apply_command_line_sets(root, set_list));
            app::check_sets_reach_a_run(set_list, plan);  // as without --mpi: a --set the sweep overrides everywhere is an error
          } catch (const app::ConfigError& e) {
            throw app::blame_command_line_sets(set_list, root.node(), e);
          }
          check_sweep_output(sweep_file, plan, so);
          return plan;
        };
        return app::run_mpi_sweep(make_plan, so, std::cerr, print_sweep_summary);
      }
      const app::YamlReader file_root = app::YamlReader::load_file(sweep_file);
      try {
        const app::SweepPlan plan = app::expand_sweep(app::apply_command_line_sets(file_root, set_list));
        app::check_sets_reach_a_run(set_list, plan);
        check_sweep_output(sweep_file, plan, so);
        print_sweep_summary(app::run_sweep(plan, so, std::cerr));
      } catch (const app::ConfigError& e) {
        throw app::blame_command_line_sets(set_list, file_root.node(), e);
      }
      return 0;
    }
    if (*plot) {
      // The inputs first: records_file_of refuses a loop of symbolic links, on which is_directory
      // below threw (exit 1).
      std::vector<app::PathArg> inputs;
      for (const auto& d : plot_dirs) inputs.push_back({app::records_file_of(d), "the records it reads"});
      if (po.out.empty())
        po.out = ((std::filesystem::is_directory(plot_dirs.front()) ? std::filesystem::path(plot_dirs.front())
                                                                    : std::filesystem::path(plot_dirs.front()).parent_path()) /
                  "plot.png").string();
      app::check_outputs_are_distinct(inputs, {{po.out, "--out"}});
      app::check_figure_path(po.out, "--out");
      app::plot_records(app::read_sweep_outputs(plot_dirs, "plot"), po);
      std::cerr << "plot: " << po.out << "\n";
      return 0;
    }
    if (*merge) {
      app::ensure_records_dir(merge_out, "--out");
      const app::MergeReport m = app::merge_records(merge_in, merge_out);
      std::cerr << "merge: " << m.records << " records into " << m.out_path << "; " << m.duplicates
                << " duplicate(s) dropped; " << m.missing.size() << " of " << m.tasks_total << " tasks missing";
      for (std::size_t i = 0; i < m.missing.size() && i < 20; ++i) std::cerr << (i ? "," : ":") << " " << m.missing[i];
      std::cerr << (m.missing.size() > 20 ? ", ..." : "") << "\n";
      return m.missing.empty() ? 0 : 4;
    }
    if (*compare) {
      co.higher_is_better = !lower;
      co.rule = rule == "interval" ? app::SignificanceRule::kInterval : app::SignificanceRule::kTTest;
      auto recs = app::read_sweep_outputs(cmp_dirs, "compare");
      const app::Grouped g = app::group_records(recs, co);
      app::write_compare(std::cout, g, app::compare_cells(g, co), co);
      return 0;
    }
    if (*repro) {
      if (repro_list || repro_name.empty()) {
        for (const auto& n : app::list_reproductions()) {
          const app::Reproduction r = app::load_reproduction(n, {});
          std::cout << n << ": " << r.description << "\n    source: " << r.source << "\n";
        }
        return 0;
      }
      std::vector<app::RowOverride> row_sets;
      for (const auto& rs : repro_row_sets) {
        if (rs.size() != 2)
          throw app::ConfigError("<command line>", 0, 0, "--row-set", "takes two values, ROW and PATH=VALUE");
        const auto [path, value] = app::split_path_value("--row-set", rs[1]);
        row_sets.push_back({rs[0], path, value});
      }
      app::Reproduction r = app::load_reproduction(repro_name, app::parse_command_line_sets("--set", repro_sets), row_sets);
      app::select_rows(r, repro_rows);
      // A --row-set for a row that --row leaves out changed nothing, silently.
      for (const app::RowOverride& o : row_sets)
        if (std::none_of(r.published.begin(), r.published.end(), [&](const app::PublishedCell& c) { return c.row == o.row; }))
          throw app::ConfigError("<command line>", 0, 0, "--row-set",
                                 "row '" + o.row + "' is not run: --row selects " + app::comma_join(repro_rows));
      // The default directory is per build and per scenario document, so a rebuilt vcpusim or
      // other --set values start afresh (and keep the earlier records) instead of being refused.
      const std::string dir =
          !repro_from.empty() ? repro_from
          : repro_out.empty() ? "vcpusim-reproduce/" + r.name + "/" + VCPUSIM_BUILD + "-" + r.plan.scenario_hash.substr(0, 8)
                              : repro_out;
      // Every output is checked before the runs, not after them.
      const std::string records_file =
          repro_from.empty() ? (std::filesystem::path(dir) / "records.jsonl").string() : app::records_file_of(dir);
      std::vector<app::PathArg> reads{{r.file, "the reproduction it reads"}};
      for (const auto& t : app::topology_files(r.plan)) reads.push_back({t, "a topology file the scenario names"});
      // The runs append to DIR/records.jsonl, as a sweep's do: it must not be a file they read.
      if (repro_from.empty()) app::check_outputs_are_distinct(reads, {{records_file, "--out"}});
      reads.push_back({records_file, "the records it reads"});
      app::check_outputs_are_distinct(reads, {{repro_json, "--json"}, {repro_plot, "--plot"}});
      if (!repro_plot.empty()) app::check_figure_path(repro_plot, "--plot");
      if (!repro_json.empty()) app::check_output_file(repro_json, "--json");
      if (repro_from.empty()) {
        app::ensure_records_dir(dir, "--out");
        app::SweepOptions so{dir, repro_jobs, 0, ::isatty(2) != 0};
        if (!repro_rows.empty()) so.only = [&r](const app::SweepRun& run) { return app::runs_published_row(r, run); };
        print_sweep_summary(app::run_sweep(r.plan, so, std::cerr));
      }
      const auto recs = records_of({dir});
      if (!repro_from.empty()) {  // records read as they are may not be what this reproduction would run now
        // Records of another scenario may lack the metric, the swept rows or the baseline column:
        // that is --from's error, not that of a --metric or --baseline option (what the compare
        // code would say, though reproduce has neither).
        const auto none_has = [&](const char* key, const std::string& name) {
          return std::none_of(recs.begin(), recs.end(), [&](const nlohmann::json& rec) {
            return rec.contains(key) && rec.at(key).contains(name);
          });
        };
        const auto foreign = [&](const std::string& what, const std::string& more = "") {
          return app::ConfigError("<command line>", 0, 0, "--from",
                                  "no record in " + dir + " " + what + " (records of another scenario?" + more + ")");
        };
        if (none_has("metrics", r.metric)) throw foreign("has " + r.name + "'s metric '" + r.metric + "'");
        if (none_has("point", r.rows)) throw foreign("sweeps " + r.name + "'s rows '" + r.rows + "'");
        if (!r.baseline_column.empty()) {
          const std::vector<std::string> have = app::columns_in_order(recs);
          if (std::find(have.begin(), have.end(), r.baseline_column) == have.end())
            throw foreign("is of " + r.name + "'s baseline column '" + r.baseline_column + "'",
                          fmt::format(" their columns: {}", fmt::join(have, ", ")));
        }
        for (const auto& n : app::provenance_notes(r, recs))
          std::cerr << "reproduce: note: the records in " << dir << ": " << n << "\n";
      }
      const app::ReproductionResult res = app::evaluate(r, recs);
      if (!repro_json.empty()) app::write_atomically(repro_json, app::reproduction_json(r, res).dump(2) + "\n");
      if (repro_json != "-") app::write_reproduction(std::cout, r, recs, res);
      if (!repro_plot.empty()) {
        app::plot_reproduction(r, res, repro_plot);
        std::cerr << "reproduce: figure " << repro_plot << "\n";
      }
      return 0;
    }
    if (*trace) {
      app::check_outputs_are_distinct({{trace_file, "the scenario it reads"}}, {{trace_out, "--out"}});
      app::check_output_file(trace_out, "--out");
      const std::vector<app::CommandLineSet> trace_set_list = app::parse_command_line_sets("--set", trace_sets);
      refuse_flag_and_set(trace_set_list, "seed", "--seed", trace_seed.has_value());
      app::ScenarioSpec spec = load_run_scenario(trace_file, trace_set_list);
      app::check_outputs_are_distinct(scenario_inputs(trace_file, spec.topology_files), {{trace_out, "--out"}});
      const auto dots = trace_window.find("..");
      std::optional<sim::Duration> from, to;
      // Exactly one "..": '0s...10ms' was read as 0s and '.10ms', a 0.1 ms window.
      if (dots != std::string::npos && trace_window.find("..", dots + 1) == std::string::npos) {
        from = app::parse_duration(trace_window.substr(0, dots));
        to = app::parse_duration(trace_window.substr(dots + 2));
      }
      const auto bad_window = [&](const std::string& why) {
        return app::ConfigError("<command line>", 0, 0, "--window", "'" + trace_window + "' " + why);
      };
      if (!from || !to)
        throw bad_window("is not FROM..TO of two durations such as 0s..200ms (each with a unit, a whole number of nanoseconds, at most 9.2e18 ns)");
      if (*from < 0) throw bad_window("starts before the run (FROM is negative)");
      if (*to <= *from) throw bad_window("is empty: TO must come after FROM");
      if (*from >= spec.duration)  // an empty trace, exit 0, was all it gave
        throw app::ConfigError("<command line>", 0, 0, "--window",
                               "'" + trace_window + "' starts at or after the end of the run (" +
                                   fmt::format("{:g}", sim::to_seconds(spec.duration)) + " s simulated)");
      // The run only needs to last until the window closes; a window past the run's end is
      // cut there (the summary named the window as given: [0s..1000s] for a 0.1 s run).
      const bool cut = *to > spec.duration;
      const sim::Duration end = std::min(spec.duration, *to);
      spec.duration = end;
      if (spec.warmup >= spec.duration) spec.warmup = spec.host.warmup = 0;
      app::PerfettoTrace tr(*from, *to);
      // The run `vcpusim run` makes as that repetition: --seed is the master seed, as there and as
      // `seed:` is (a --set seed=N traced another run than --seed N, though the two were refused
      // together as one setting), and each repetition's own seed is derived from it.
      if (trace_seed) spec.seed = *trace_seed;
      const std::uint64_t run_seed = app::repetition_seed(spec.seed, trace_rep);
      app::run_scenario(spec, run_seed, &tr);
      std::ostringstream os;
      tr.write(os);
      app::write_atomically(trace_out, os.str());
      std::cerr << "trace: " << tr.events() << " events in ["
                << (cut ? trace_window.substr(0, trace_window.find("..")) + ".." + fmt::format("{:g}s", sim::to_seconds(end)) +
                              ", where the run ends"
                        : trace_window)
                << "] -> " << trace_out << " (repetition " << trace_rep << ", seed " << run_seed << ")\n";
      return 0;
    }
    if (*bench) {
      std::vector<app::PathArg> inputs;
      for (const auto& f : app::bench_scenario_files()) {
        inputs.push_back({f, "a scenario it measures"});
        for (const auto& t : app::load_scenario_file(f).topology_files) inputs.push_back({t, "a topology file it reads"});
      }
      for (const auto& t : app::load_default_scenario().topology_files) inputs.push_back({t, "a topology file it reads"});
      app::check_outputs_are_distinct(inputs, {{bench_json, "--json"}});
      if (!bench_json.empty()) app::check_output_file(bench_json, "--json");
      // With --json -, the JSON has stdout to itself and the table goes to stderr (as reproduce --json -).
      const auto j = app::run_bench(bo, bench_json == "-" ? std::cerr : std::cout);
      if (!bench_json.empty()) app::write_atomically(bench_json, j.dump(2) + "\n");
      return 0;
    }
  } catch (const app::ConfigError& e) {
    std::cerr << "vcpusim: " << e.what() << "\n";
    return 2;
  } catch (const hv::InvariantViolation& e) {
    std::cerr << "vcpusim: model error: " << e.what() << "\n";
    return 3;
  } catch (const std::bad_alloc&) {
    // Every input the loaders can size is capped (entities, threads, sweep runs, records), but
    // memory also grows with the product of what is allowed: a 1000-VM scenario swept 100,000
    // ways, or a trace of a long run. Finished results are already on disk.
    std::cerr << "vcpusim: out of memory: the scenario, sweep or trace window is too large for this machine "
                 "(fewer VMs, threads or sweep points, or a shorter trace window); results finished so far are kept\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "vcpusim: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int rc = run_command_line(argc, argv);
  // Results written to a full disk were lost without a word (exit 0). std::cout writes through
  // C's stdout, whose buffer reaches the file, and fails, only when flushed: here, at the latest.
  std::cout.flush();
  const bool failed = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (failed && rc == 0) {  // otherwise the error already reported is the one that counts
    std::cerr << "vcpusim: error: writing standard output failed\n";
    return 1;
  }
  return rc;
}
