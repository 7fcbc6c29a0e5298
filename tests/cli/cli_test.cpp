// SPDX-License-Identifier: MIT
// Pins the command line's contract: help and version work, the default scenario runs, and every
// kind of bad input ends with exit status 2 and a message `file:line:col: field: what` — never
// an abort, an uncaught exception or a hang. Runs the real binary ($VCPUSIM, set by meson).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_support.h"

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace vcpusim::test;

// A valid scenario with one line replaced, so each case differs from a good file by one thing.
const char* kGood = R"(name: t
duration: 200ms
topology: desktop-4c8t
host:
  scheduler: {policy: rr}
vms:
  - name: a
    vcpus: 2
    affinity: {hard: all}
    workload: {kind: sysbench-cpu, threads: 2}
)";

std::string with(const std::string& from, const std::string& to) {
  std::string s = kGood;
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

void expect_bad(const std::string& file_name, const std::string& yaml, const std::string& where,
                const std::string& what) {
  const std::string path = write_temp(file_name, yaml);
  const Outcome o = run("run " + path);
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find(path + ":" + where), std::string::npos) << "expected location " << where << " in: " << o.output;
  EXPECT_NE(o.output.find(what), std::string::npos) << "expected '" << what << "' in: " << o.output;
}

}  // namespace

TEST(Cli, HelpAndVersionSucceed) {
  Outcome h = run("--help");
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.output.find("run"), std::string::npos);
  Outcome rh = run("run --help");
  EXPECT_EQ(rh.status, 0);
  EXPECT_NE(rh.output.find("--seed"), std::string::npos);
  EXPECT_NE(rh.output.find("--duration"), std::string::npos);
  Outcome v = run("--version");
  EXPECT_EQ(v.status, 0);
  EXPECT_NE(v.output.find("vcpusim 0."), std::string::npos);
}

// CLI11 printed the version at the flag and ended with status 0, ignoring the words beside it:
// `vcpusim --version run x.yaml` ran nothing and said nothing of it.
TEST(Cli, AnArgumentBesideVersionIsRefusedNamingIt) {
  const Outcome after = run("--version run");
  EXPECT_EQ(after.status, 2) << after.output;
  EXPECT_NE(after.output.find("--version takes no other argument; got 'run'"), std::string::npos) << after.output;
  const Outcome before = run("--quiet --version");
  EXPECT_EQ(before.status, 2) << before.output;
  EXPECT_NE(before.output.find("got '--quiet'"), std::string::npos) << before.output;
}

TEST(Cli, DefaultScenarioRunsAndPrintsTheTable) {
  Outcome o = run("run --duration 2s");
  ASSERT_EQ(o.status, 0) << o.output;
  for (const char* s : {"throughput", "steal%", "events", "simulated/wall", "events/s", "MiB/s"})
    EXPECT_NE(o.output.find(s), std::string::npos) << s;
}

TEST(Cli, RepetitionsTableKeepsEveryColumnAndAddsTheStatistics) {
  Outcome o = run("run --duration 2s --repetitions 2");
  ASSERT_EQ(o.status, 0) << o.output;
  for (const char* s : {"mean", "hmean", "stddev", "CPU", "steal%", "blocked%", "migr/s", "remote%"})
    EXPECT_NE(o.output.find(s), std::string::npos) << s;
}

namespace {
std::vector<std::uint64_t> repetitions_in(const std::string& json_path) {
  std::ifstream in(json_path);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<std::uint64_t> reps;
  for (const auto& r : j.at("runs")) reps.push_back(r.at("repetition").get<std::uint64_t>());
  return reps;
}
std::vector<std::uint64_t> zero_to(std::size_t n) {
  std::vector<std::uint64_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}
}  // namespace

// Short repetitions are written in batches (a write after each of 10,000 rewrote every run
// before it, for hours), and the last write holds them all: the JSON every run, the CSV a row
// per VM and run.
TEST(Cli, ManyShortRepetitionsAreAllWritten) {
  const std::string f = write_temp("short-reps.yaml", with("duration: 200ms", "duration: 2ms"));
  const std::string json = (scratch() / "short-reps.json").string(), csv = (scratch() / "short-reps.csv").string();
  const Outcome o = run("run " + f + " --repetitions 2000 --quiet --json " + json + " --csv " + csv);
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_EQ(repetitions_in(json), zero_to(2000));
  EXPECT_EQ(count_lines(csv), 1u + 2000u);  // the header, then one VM per run
}

// SIGTERM (or Ctrl-C's SIGINT, which a script's background job ignores) while finished
// repetitions wait for their batch's write: the run stops after the one in progress, writes
// every finished one and exits 128 + 15, saying how many it wrote. A signal that comes while
// every finished repetition is on disk ends the run at once, with the file whole (as before);
// which of the two a signal meets depends on timing, so the run is repeated until one signal
// has met held repetitions (most of the time, a batch is waiting).
TEST(Cli, AnInterruptedRunWritesEveryFinishedRepetition) {
  const std::string json = (scratch() / "int-reps.json").string();
  bool met_held = false;
  for (int attempt = 0; attempt < 8 && !met_held; ++attempt) {
    std::filesystem::remove(json);
    // Interrupted once the first write is on disk (the file exists) and a little later.
    // The built-in scenario at 2 s: a few ms a repetition, so 10,000 outlast the test's wait.
    const Outcome o = shell("(timeout 120 " + binary() + " run --duration 2s --repetitions 10000 --quiet --json " + json +
                            " & pid=$!; for i in $(seq 600); do [ -f " + json + " ] && break; sleep 0.05; done; sleep 1; " +
                            "kill -TERM $pid; wait $pid)");
    ASSERT_EQ(o.status, 128 + 15) << o.output;
    const auto reps = repetitions_in(json);  // whole either way: written by renaming
    ASSERT_FALSE(reps.empty());
    EXPECT_EQ(reps, zero_to(reps.size()));
    const auto at = o.output.find("interrupted: ");
    if (at == std::string::npos) continue;  // killed at once, with nothing held
    met_held = true;
    const std::size_t n = std::stoul(o.output.substr(at + 13));
    EXPECT_NE(o.output.find("interrupted: " + std::to_string(n) + " of 10000 repetitions written"), std::string::npos)
        << o.output;
    EXPECT_EQ(reps.size(), n);
  }
  EXPECT_TRUE(met_held) << "no signal of 8 met held repetitions";
}

// A VM that finishes nothing (its program blocks 10 s first) has throughput 0, where a harmonic
// mean is undefined: its hmean of 0 is noted by name; the busy VM's is not.
TEST(Cli, RepetitionsNoteAnHmeanOfZeroNamingItsDomain) {
  const std::string path = write_temp("hmean0.yaml", kGood + std::string(R"(  - name: sleepy
    vcpus: 1
    workload: {kind: program, phases: [{block: 10s}, {compute: 1ms}]}
)"));
  const Outcome o = run("run " + path + " --repetitions 2");
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_NE(o.output.find("(undefined there): sleepy.\n"), std::string::npos) << o.output;
  const Outcome busy = run("run --duration 2s --repetitions 2");
  ASSERT_EQ(busy.status, 0) << busy.output;
  EXPECT_EQ(busy.output.find("undefined there"), std::string::npos) << busy.output;
}

TEST(Cli, ListNamesEveryParameterWithTheChoicesAndDefaultOfEachChoice) {
  const Outcome o = run("run --list");
  ASSERT_EQ(o.status, 0) << o.output;
  for (const char* s : {"weights: ", "[linear | nice; default linear]", "program: ", "phases: ",
                        "[ticket | pvticket | mutex | adaptive; default adaptive]"})
    EXPECT_NE(o.output.find(s), std::string::npos) << s;
}

// --list runs nothing, so a scenario, an output or an override beside it was ignored without a
// word: `run missing.yaml --list` listed, exit 0, and `--json` wrote no file.
TEST(Cli, ListRefusesTheArgumentsOfARun) {
  for (const std::string& args : {std::string("run missing.yaml --list"), std::string("run --list --json x.json"),
                                  std::string("run --list --set duration=1s"), std::string("run --list --seed 3"),
                                  std::string("reproduce smt-corun-sysbench --list"),
                                  std::string("reproduce --list --json x.json")}) {
    const Outcome o = run(args);
    EXPECT_EQ(o.status, 2) << args << ": " << o.output;
    EXPECT_NE(o.output.find("--list"), std::string::npos) << args << ": " << o.output;
    EXPECT_NE(o.output.find("excludes"), std::string::npos) << args << ": " << o.output;
  }
}

// A first word that is no command was taken for an extra argument: "A subcommand is required",
// naming neither the word nor the commands.
TEST(Cli, AWordThatIsNoCommandIsNamedWithTheCommands) {
  const Outcome o = run("frobnicate");
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find("'frobnicate' is not a command; the commands are run, trace, bench, sweep, merge, compare, "
                          "reproduce, plot"),
            std::string::npos)
      << o.output;
  EXPECT_EQ(run("--version").status, 0);
}

TEST(Cli, GoodScenarioRuns) {
  const Outcome o = run("run " + write_temp("good.yaml", kGood));
  EXPECT_EQ(o.status, 0) << o.output;
}

TEST(Cli, UnknownKeyIsNamedWithItsLine) {
  expect_bad("unknown.yaml", with("duration: 200ms", "durration: 200ms"), "2:1:", "durration: unknown key");
}

TEST(Cli, WrongTypeIsNamed) {
  expect_bad("type.yaml", with("duration: 200ms", "duration: fast"), "2:11:", "duration: expected a duration");
  expect_bad("type2.yaml", with("vcpus: 2", "vcpus: two"), "8:12:", "vms[0].vcpus: expected an integer");
}

TEST(Cli, OutOfRangeAndNegativeValuesAreRefused) {
  expect_bad("zero.yaml", with("vcpus: 2", "vcpus: 0"), "8:12:", "vms[0].vcpus: 0 is out of range");
  expect_bad("neg.yaml", with("vcpus: 2", "vcpus: 2\n    weight: -5"), "9:13:", "vms[0].weight: -5 is out of range");
  expect_bad("negdur.yaml", with("duration: 200ms", "duration: -1s"), "2:11:", "duration:");
  expect_bad("threads.yaml", with("threads: 2}", "threads: 100000}"), "10:45:", "threads: 100000 is out of range");
}

TEST(Cli, AffinityNamingAMissingCpuIsRefused) {
  expect_bad("cpu.yaml", with("{hard: all}", "{hard: \"cpus:[0,99]\"}"), "9:22:", "CPU 99 does not exist");
  expect_bad("node.yaml", with("{hard: all}", "{hard: node:3}"), "9:22:", "node 3 does not exist");
}

TEST(Cli, UnknownNamesAreListed) {
  expect_bad("policy.yaml", with("{policy: rr}", "{policy: credit9}"), "5:23:", "unknown policy 'credit9'");
  expect_bad("kind.yaml", with("kind: sysbench-cpu", "kind: sysbench-gpu"), "10:22:", "unknown workload kind");
  expect_bad("topo.yaml", with("topology: desktop-4c8t", "topology: cray-1"), "3:11:", "cray-1");
}

// run and trace run the base, but the file's sweep: and columns: are checked as `vcpusim sweep`
// checks them: `sweep: 5`, `columns: [a, b]`, an unknown swept field and a bad swept value ran
// the base with status 0.
TEST(Cli, RunAndTraceCheckTheSweepTheyDoNotRun) {
  const std::string good = kGood;
  expect_bad("sweep5.yaml", good + "sweep: 5\n", "11:8:", "sweep: expected a mapping");
  expect_bad("columns-list.yaml", good + "columns: [a, b]\n", "11:10:", "columns: expected a mapping");
  expect_bad("swept-field.yaml", good + "sweep:\n  vms.a.nosuch: [1]\n", "12:18:", "vms[0].nosuch: unknown key");
  expect_bad("swept-value.yaml", good + "sweep:\n  vms.a.vcpus: [2, 0]\n", "12:20:", "vms[0].vcpus: 0 is out of range");
  expect_bad("column-value.yaml", good + "columns:\n  x: {host.smt: maybe}\n", "12:17:", "host.smt: expected true/false");
  const std::string f = write_temp("trace-sweep5.yaml", good + "sweep: 5\n");
  const Outcome t = run("trace " + f + " --out " + (scratch() / "trace-sweep5.json").string());
  EXPECT_EQ(t.status, 2) << t.output;
  EXPECT_NE(t.output.find(f + ":11:8: sweep: expected a mapping"), std::string::npos) << t.output;
  // A good sweep is no error, and the run is the base's.
  const Outcome ok = run("run " + write_temp("good-sweep.yaml", good + "sweep:\n  vms.a.vcpus: [1, 2]\n"));
  EXPECT_EQ(ok.status, 0) << ok.output;
}

TEST(Cli, WarmupMustBeShorterThanDuration) {
  expect_bad("warm.yaml", with("duration: 200ms", "duration: 200ms\nwarmup: 1s"), "3:9:", "warmup:");
}

// Core scheduling (core_sched.h, sched_unit.h): a bad mode, a bad variant, and sched-gran=core
// under a KVM host are exit 2 with the line and field; a good core-granular run succeeds.
TEST(Cli, CoreSchedulingErrorsAreExitTwo) {
  expect_bad("cs-mode.yaml", with("{policy: rr}", "{policy: rr}\n  core_scheduling: cores"), "6:20:",
             "host.core_scheduling: 'cores' is not one of");
  expect_bad("cs-variant.yaml", with("{policy: rr}", "{policy: rr}\n  core_scheduling: cookie\n  core_sched: {variant: x}"),
             "7:25:", "host.core_sched.variant: unknown core scheduling variant 'x'");
  expect_bad("cs-cfs.yaml", with("{policy: rr}", "{policy: cfs}\n  core_scheduling: core"), "6:20:",
             "needs a Xen-style policy");
  const Outcome o = run("run " + write_temp("cs-core.yaml", with("{policy: rr}", "{policy: credit2}\n  core_scheduling: core")));
  EXPECT_EQ(o.status, 0) << o.output;
  EXPECT_NE(o.output.find("unit-idle%"), std::string::npos) << o.output;
}

TEST(Cli, YamlSyntaxErrorGivesItsPosition) {
  const std::string path = write_temp("syntax.yaml", "name: t\nvms: [a, b\n");
  const Outcome o = run("run " + path);
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find(path + ":"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("YAML syntax error"), std::string::npos) << o.output;
}

TEST(Cli, MissingFileIsExitTwo) {
  const Outcome o = run("run /nonexistent/scenario.yaml");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output.find("/nonexistent/scenario.yaml: cannot open file"), std::string::npos) << o.output;
}

// A scenario file that is a loop of symbolic links was "cannot open file" with no reason, which
// left one to guess between a typo, the loop and a file one may not read: the system's reason
// follows, after the file's name, exit 2, in every command that reads a scenario. (A test of
// "Permission denied" would pass vacuously as root, who may read any file.)
TEST(Cli, AScenarioFileThatIsASymlinkLoopSaysSo) {
  const std::filesystem::path dir = fresh_dir("scenario-loop");
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink("b.yaml", dir / "a.yaml");
  std::filesystem::create_symlink("a.yaml", dir / "b.yaml");
  const std::string a = (dir / "a.yaml").string();
  for (const std::string& cmd : {"run " + a, "sweep " + a + " --out " + fresh_dir("scenario-loop-out"),
                                 "trace " + a + " --out " + (dir / "t.json").string()}) {
    const Outcome o = run(cmd);
    EXPECT_EQ(o.status, 2) << cmd << "\n" << o.output;
    EXPECT_NE(o.output.find(a + ": cannot open file: Too many levels of symbolic links"), std::string::npos)
        << cmd << "\n" << o.output;
  }
  // An absent file is named as such too.
  const Outcome o = run("run /nonexistent/scenario.yaml");
  EXPECT_NE(o.output.find("/nonexistent/scenario.yaml: cannot open file: No such file or directory"), std::string::npos)
      << o.output;
}

// A topology file that is a loop of symbolic links was "not found", which sent one looking for a
// typo in a name that was right: the error says what is wrong, at the scenario's line and field.
TEST(Cli, ATopologyFileThatIsASymlinkLoopSaysSo) {
  const std::filesystem::path dir = fresh_dir("topology-loop");
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink("b.yaml", dir / "a.yaml");
  std::filesystem::create_symlink("a.yaml", dir / "b.yaml");
  const std::string loop = "Too many levels of symbolic links";
  const std::string a = (dir / "a.yaml").string(), b = (dir / "b.yaml").string();
  expect_bad("topology-loop/relative.yaml", with("topology: desktop-4c8t", "topology: a.yaml"),
             "3:11: topology: topology file 'a.yaml' (" + a + "): " + loop, loop);
  expect_bad("topology-loop/absolute.yaml", with("topology: desktop-4c8t", "topology: " + b),
             "3:11: topology: topology file '" + b + "': " + loop, loop);
  // Swept, at the value's line.
  const std::string swept = (dir / "swept.yaml").string();
  std::ofstream(swept) << std::string(kGood) + "sweep:\n  topology: [desktop-4c8t, a.yaml]\n";
  const Outcome s = run("sweep " + swept + " --out " + fresh_dir("topology-loop-out"));
  EXPECT_EQ(s.status, 2) << s.output;
  EXPECT_NE(s.output.find(swept + ":12:"), std::string::npos) << s.output;
  EXPECT_NE(s.output.find(loop), std::string::npos) << s.output;
}

// A preset (configs' topologies/NAME.yaml) that is a loop of symbolic links was an "unknown
// topology preset", as if the name were a typo: find_config skipped it as absent. It is named
// with the system's reason at the scenario's line, as a topology path is, whether written as a
// preset name or as a path into a config directory. VCPUSIM_CONFIG_DIR is searched first.
TEST(Cli, ATopologyPresetThatIsASymlinkLoopSaysSo) {
  const std::filesystem::path dir = fresh_dir("preset-loop");
  std::filesystem::create_directories(dir / "configs" / "topologies");
  const std::filesystem::path preset = dir / "configs" / "topologies" / "looping.yaml";
  std::filesystem::create_symlink("looping.yaml", preset);
  const std::string loop = "Too many levels of symbolic links";
  const std::string env = "VCPUSIM_CONFIG_DIR=" + (dir / "configs").string() + " timeout 120 " + binary() + " run ";
  const struct {
    std::string value, message;
  } cases[] = {
      {"looping", "3:11: topology: topology preset 'looping' (" + preset.string() + "): " + loop},
      {"topologies/looping.yaml", "3:11: topology: topology file 'topologies/looping.yaml' (" + preset.string() + "): " + loop},
  };
  for (const auto& c : cases) {
    const std::string path = write_temp("preset-loop.yaml", with("topology: desktop-4c8t", "topology: " + c.value));
    const Outcome o = shell(env + path);
    EXPECT_EQ(o.status, 2) << o.output;
    EXPECT_NE(o.output.find(path + ":" + c.message), std::string::npos) << o.output;
  }
}

// A broken preset in VCPUSIM_CONFIG_DIR under a built-in preset's name (a loop, or a symbolic link
// to a file that is gone) was passed over, and the built-in machine ran in its place (exit 0);
// a link to nothing under a new name was "unknown topology preset", as if the name were a typo.
// Both stop the search where they are, and are named with why.
// A VCPUSIM_CONFIG_DIR that is not there was skipped: the built-in presets ran in place of the
// ones meant, exit 0.
TEST(Cli, AConfigDirectoryThatIsNotThereIsNamed) {
  for (const std::string& dir : {(scratch() / "no-such-configs").string(), write_temp("a-file-not-a-dir", "x")}) {
    const Outcome o = shell("VCPUSIM_CONFIG_DIR=" + dir + " timeout 120 " + binary() + " run --quiet");
    EXPECT_EQ(o.status, 2) << o.output;
    EXPECT_NE(o.output.find("<environment>: VCPUSIM_CONFIG_DIR: '" + dir + "' is not a directory"), std::string::npos)
        << o.output;
  }
}

TEST(Cli, ABrokenPresetIsNotReplacedByALaterDirectorysPreset) {
  const std::filesystem::path dir = fresh_dir("preset-shadow");
  std::filesystem::create_directories(dir / "configs" / "topologies");
  const std::filesystem::path loop = dir / "configs" / "topologies" / "desktop-4c8t.yaml";
  std::filesystem::create_symlink("desktop-4c8t.yaml", loop);
  const std::filesystem::path dangling = dir / "configs" / "topologies" / "gone.yaml";
  std::filesystem::create_symlink("moved-away.yaml", dangling);
  const std::filesystem::path dangling_builtin = dir / "configs" / "topologies" / "one-core-ht.yaml";
  std::filesystem::create_symlink("moved-away.yaml", dangling_builtin);
  const std::string env = "VCPUSIM_CONFIG_DIR=" + (dir / "configs").string() + " timeout 120 " + binary() + " run ";
  const struct {
    std::string value, message;
  } cases[] = {
      {"desktop-4c8t", "3:11: topology: topology preset 'desktop-4c8t' (" + loop.string() + "): Too many levels of symbolic links"},
      {"one-core-ht", "3:11: topology: topology preset 'one-core-ht' (" + dangling_builtin.string() +
                          "): a symbolic link to 'moved-away.yaml', which does not exist"},
      {"gone", "3:11: topology: topology preset 'gone' (" + dangling.string() +
                   "): a symbolic link to 'moved-away.yaml', which does not exist"},
  };
  for (const auto& c : cases) {
    const std::string path = write_temp("preset-shadow.yaml", with("topology: desktop-4c8t", "topology: " + c.value));
    const Outcome o = shell(env + path + " --quiet");
    EXPECT_EQ(o.status, 2) << o.output;
    EXPECT_NE(o.output.find(path + ":" + c.message), std::string::npos) << o.output;
  }
}

// So is a reproduction's name: configs' reproduce/NAME.yaml as a loop of symbolic links was "no
// reproduction 'x' (known: x)", the listing naming the very file the lookup had skipped.
TEST(Cli, AReproductionThatIsASymlinkLoopSaysSo) {
  const std::filesystem::path dir = fresh_dir("reproduction-loop");
  std::filesystem::create_directories(dir / "configs" / "reproduce");
  const std::filesystem::path file = dir / "configs" / "reproduce" / "looping.yaml";
  std::filesystem::create_symlink("looping.yaml", file);
  const Outcome o = shell("VCPUSIM_CONFIG_DIR=" + (dir / "configs").string() + " timeout 120 " + binary() + " reproduce looping");
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find("<command line>: NAME: reproduction 'looping' (" + file.string() + "): Too many levels of symbolic links"),
            std::string::npos)
      << o.output;
}

// A file's name goes into --json (`file`), and into `name:` and the records when the scenario
// has none: not UTF-8, the run ended in a JSON type error after it ran (exit 1), and a sweep
// wrote no record at all.
TEST(Cli, AScenarioFileWhoseNameIsNotUtf8IsExitTwoNamingIt) {
  const std::string path = write_temp("bad\xff" "name.yaml", kGood);
  for (const std::string& cmd : {"run '" + path + "' --quiet --json " + (scratch() / "u8.json").string(),
                                 "sweep '" + path + "' --out " + fresh_dir("u8") + " --max-records 1"}) {
    const Outcome o = run(cmd);
    EXPECT_EQ(o.status, 2) << cmd << o.output;
    EXPECT_NE(o.output.find(path + ": the file's name is not UTF-8 text"), std::string::npos) << cmd << o.output;
  }
}

// A regular file above 64 MiB was refused by its size, but a pipe has none to ask for: `vcpusim
// run <(yes '#')` read until memory ran out (exit 2 blaming the scenario's size on the machine,
// or the OOM killer). Now the reading stops at the bound.
TEST(Cli, AScenarioPipeLongerThanSixtyFourMebibytesIsRefusedAtTheBound) {
  const std::string fifo = (scratch() / "endless.yaml").string();
#if defined(__SANITIZE_ADDRESS__)  // AddressSanitizer's shadow needs terabytes of address space
  const std::string limit;
#else
  const std::string limit = "ulimit -v 524288; ";
#endif
  const Outcome o = shell("rm -f " + fifo + " && mkfifo " + fifo + " && { yes '# a comment' > " + fifo +
                          " 2>/dev/null & } ; " + limit + "timeout 120 " + binary() + " run " + fifo);
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find(fifo + ": is larger than 64 MiB; no scenario is"), std::string::npos) << o.output;
}

TEST(Cli, EmptyFileIsExitTwo) {
  const Outcome o = run("run " + write_temp("empty.yaml", ""));
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find("empty"), std::string::npos) << o.output;
}

TEST(Cli, BadArgumentsAreExitTwo) {
  EXPECT_EQ(run("run --seed abc").status, 2);
  // A scenario's seed: is 0 to 2^63 - 1; the flags take the same, not a wrapped -5 or 2^64 - 5.
  for (const char* s : {"-5", "18446744073709551611", "9223372036854775808", "7x"}) {
    const Outcome o = run(std::string("run --seed ") + s);
    EXPECT_EQ(o.status, 2) << s << ": " << o.output;
    EXPECT_NE(o.output.find(std::string("--seed: '") + s + "' is not a seed"), std::string::npos) << o.output;
    EXPECT_EQ(run(std::string("trace --out x.json --seed ") + s).status, 2) << s;
  }
  // Nor a wrapped -1 as a sweep's record limit (it ran the whole sweep).
  const Outcome m = run("sweep " + write_temp("mr.yaml", kGood) + " --out " + fresh_dir("mr") + " --max-records -1");
  EXPECT_EQ(m.status, 2) << m.output;
  EXPECT_NE(m.output.find("--max-records: '-1' is not a record count"), std::string::npos) << m.output;
  EXPECT_EQ(run("run --duration 5parsecs").status, 2);
  EXPECT_EQ(run("run --repetitions 0").status, 2);
  EXPECT_EQ(run("frobnicate").status, 2);
  EXPECT_EQ(run("").status, 2);
}

// Integer flags are decimal, as the file's fields are: CLI11 read `--seed 010` as octal 8 (the
// file's `seed: 010` is 10) and took `--jobs 0x2` as hex.
TEST(Cli, IntegerFlagsAreDecimal) {
  const std::string f = write_temp("dec.yaml", kGood);
  auto seed_of = [&](const std::string& flag) {
    const Outcome o = run("run " + f + " --duration 1ms --quiet --json - " + flag);
    EXPECT_EQ(o.status, 0) << o.output;
    const std::string key = "\n  \"seed\": ";  // the document's own, not a run's
    const auto at = o.output.find(key);
    if (at == std::string::npos) return std::string();
    const auto from = at + key.size();
    return o.output.substr(from, o.output.find_first_of(",\n", from) - from);
  };
  EXPECT_EQ(seed_of("--seed 010"), "10");
  EXPECT_EQ(seed_of("--seed 0010"), "10");
  const Outcome hex = run("sweep " + f + " --out " + fresh_dir("dec") + " --jobs 0x2");
  EXPECT_EQ(hex.status, 2) << hex.output;
  EXPECT_NE(hex.output.find("--jobs: '0x2' is not an integer"), std::string::npos) << hex.output;
}

// A field set twice on the command line, or by a flag and a --set, ran with whichever won
// (the flag in either order, else the last --set); an option's empty value ran as its default;
// a --row-set for a row --row leaves out changed nothing; a --row given twice was taken as once.
TEST(Cli, ConflictingOrEmptyCommandLineValuesAreRefused) {
  const std::string f = write_temp("conflict.yaml", kGood);
  const auto refused = [&](const std::string& args, const std::string& why) {
    const Outcome o = run(args);
    EXPECT_EQ(o.status, 2) << args << "\n" << o.output;
    EXPECT_NE(o.output.find(why), std::string::npos) << args << "\n" << o.output;
  };
  refused("run " + f + " --quiet --duration 10ms --set duration=20ms", "--duration: and --set duration both set it");
  refused("run " + f + " --quiet --set seed=7 --seed 5", "--seed: and --set seed both set it");
  refused("run " + f + " --quiet --repetitions 2 --set repetitions=3", "--repetitions: and --set repetitions both set it");
  refused("run " + f + " --quiet --set duration=10ms --set duration=20ms", "--set duration: given twice");
  refused("trace " + f + " --out " + f + ".trace.json --seed 3 --set seed=4", "--seed: and --set seed both set it");
  const std::string dir = fresh_dir("conflict-empty");
  refused("compare " + dir + " --metric ''", "--metric");
  refused("compare " + dir + " --baseline ''", "--baseline");
  refused("compare " + dir + " --by ''", "--by");
  refused("plot " + dir + " --x a --y b --by ''", "--by");
  refused("reproduce pv-spinlocks --out " + fresh_dir("conflict-rows") + " --row 'ebizzy 1x' --row-set 'ebizzy 2x' "
          "vms.guest.workload.burst=1ms",
          "--row-set: row 'ebizzy 2x' is not run: --row selects ebizzy 1x");
  refused("reproduce pv-spinlocks --from " + dir + " --row 'ebizzy 1x' --row 'ebizzy 1x'", "--row 'ebizzy 1x': given twice");
  // One flag alone, and two different fields, are fine.
  EXPECT_EQ(run("run " + f + " --quiet --duration 2ms --set seed=7").status, 0);
}

// With --json - or --csv - and several repetitions, standard output got the document (or the
// rows so far) once per repetition: two JSON documents back to back, the CSV rows repeated.
TEST(Cli, StandardOutputGetsOneJsonDocumentAndEachCsvRowOnce) {
  const std::string f = write_temp("stdout-reps.yaml", kGood);
  const Outcome j = run("run " + f + " --duration 1ms --repetitions 3 --quiet --json -");
  ASSERT_EQ(j.status, 0) << j.output;
  EXPECT_EQ(j.output.find("\n{"), std::string::npos) << j.output;  // one document: no second opening brace
  EXPECT_EQ(j.output.find('{'), 0u) << j.output;
  const Outcome c = run("run " + f + " --duration 1ms --repetitions 3 --quiet --csv -");
  ASSERT_EQ(c.status, 0) << c.output;
  EXPECT_EQ(std::count(c.output.begin(), c.output.end(), '\n'), 4) << c.output;  // header + 3 x one domain
}

// bench printed its table to stdout before the JSON, so `bench --json -` was no JSON document.
TEST(Cli, BenchJsonToStandardOutputIsOneDocument) {
  const Outcome o = shell("(timeout 300 " + binary() + " bench --quick --repeats 1 --json - 2>/dev/null)");
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_EQ(o.output.find('{'), 0u) << o.output;
  EXPECT_NE(o.output.find("\"engine\""), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("engine loop"), std::string::npos) << "the table went to stdout: " << o.output;
  // Each scenario's events per second count superseded events too, so the JSON gives how many
  // of its events were such. Work completions and slice ends are keyed and a stopped vCPU's
  // completion is cancelled, so a scenario may have none; a cold window that ends while its vCPU
  // is off-CPU is still popped and dropped, which the credit2 host's migrations give it.
  const nlohmann::json j = nlohmann::json::parse(o.output);
  ASSERT_EQ(j.at("scenarios").size(), 4u) << o.output;
  double stale = 0;
  for (const auto& sc : j.at("scenarios")) {
    EXPECT_GE(sc.at("events_stale").get<double>(), 0.0) << sc.dump();
    EXPECT_LT(sc.at("events_stale").get<double>(), sc.at("events").get<double>()) << sc.dump();
    stale += sc.at("events_stale").get<double>();
  }
  EXPECT_GT(stale, 0.0) << o.output;
}

// A window past the run's end was named as given in the summary ([0s..1000s] for a 0.2 s run).
TEST(Cli, TraceSummaryNamesTheWindowTheRunCovered) {
  const std::string f = write_temp("trace-cut.yaml", kGood), out = f + ".trace.json";
  const Outcome o = run("trace " + f + " --window 0s..1000s --out " + out);
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_NE(o.output.find(" events in [0s..0.2s, where the run ends] -> "), std::string::npos) << o.output;
}

// --duration took any length (1000000000s started a 31-year run) where the file's duration:, and
// --set duration=, take [1 us, 100000 s]: the flag refuses what the field refuses, in its words.
TEST(Cli, DurationFlagIsRangeCheckedLikeTheFile) {
  const std::string f = write_temp("dur-flag.yaml", kGood);
  for (const std::string d : {"1000000000s", "100001s", "999ns", "0s", "-1s"}) {
    const std::string range = "'" + d + "' is out of range [1us, 100000s]";
    const Outcome flag = run("run " + f + " --duration " + d);
    EXPECT_EQ(flag.status, 2) << d << ": " << flag.output;
    EXPECT_NE(flag.output.find("<command line>: --duration: " + range), std::string::npos) << flag.output;
    const Outcome file = run("run " + write_temp("dur-file.yaml", with("duration: 200ms", "duration: " + d)));
    EXPECT_EQ(file.status, 2) << d << ": " << file.output;
    EXPECT_NE(file.output.find(":2:11: duration: " + range), std::string::npos) << file.output;
  }
  EXPECT_EQ(run("run " + f + " --duration 1us").status, 0);  // the lower bound itself runs
}

// The flag said "'1e30ms' is not a positive duration such as 10s" of a duration too long for the
// clock and of one finer than a nanosecond, neither of which that is; it says what the file's
// duration: says of the same text.
TEST(Cli, DurationFlagIsReadAsTheFilesDurationIs) {
  const std::string f = write_temp("dur-text.yaml", kGood);
  for (const std::string d : {"1e30ms", "1e400s", "0.4ns", "abc"}) {
    const Outcome flag = run("run " + f + " --duration " + d);
    const Outcome file = run("run " + write_temp("dur-text-file.yaml", with("duration: 200ms", "duration: " + d)));
    EXPECT_EQ(flag.status, 2) << d << ": " << flag.output;
    EXPECT_EQ(file.status, 2) << d << ": " << file.output;
    const auto what = [](const std::string& out, const std::string& field) {
      const auto at = out.find(field + ": ");
      return at == std::string::npos ? "(none in " + out + ")" : out.substr(at + field.size() + 2);
    };
    EXPECT_EQ(what(flag.output, "<command line>: --duration"), what(file.output, ":2:11: duration")) << d;
  }
  EXPECT_NE(run("run " + f + " --duration 1e30ms").output.find("'1e30ms' is too long"), std::string::npos);
}

// --repetitions took 1 to 100000 where the file's repetitions: takes 1 to 10000 (one constant,
// app::kMaxRepetitions, bounds both now).
TEST(Cli, RepetitionsFlagHasTheBoundOfTheFilesField) {
  const std::string f = write_temp("reps-flag.yaml", kGood);
  for (const std::string n : {"10001", "100000", "0"}) {
    const Outcome flag = run("run " + f + " --duration 1ms --repetitions " + n);
    EXPECT_EQ(flag.status, 2) << n << ": " << flag.output;
    EXPECT_NE(flag.output.find("--repetitions: " + n + " is out of range [1, 10000]"), std::string::npos) << flag.output;
    const Outcome file = run("run " + write_temp("reps-file.yaml", "repetitions: " + n + "\n" + kGood));
    EXPECT_EQ(file.status, 2) << n << ": " << file.output;
    EXPECT_NE(file.output.find(":1:14: repetitions: " + n + " is out of range [1, 10000]"), std::string::npos)
        << file.output;
  }
  const Outcome word = run("run " + f + " --repetitions ten");
  EXPECT_EQ(word.status, 2) << word.output;
  EXPECT_NE(word.output.find("--repetitions: 'ten' is not an integer from 1 to 10000"), std::string::npos) << word.output;
}

// A trace window is FROM..TO with exactly one "..": '0s...10ms' was taken, as 0s to '.10ms', a
// 0.1 ms window. Decimal points on either side are still durations.
TEST(Cli, TraceWindowIsExactlyFromDotDotTo) {
  const std::string f = write_temp("window.yaml", kGood), dir = fresh_dir("window");
  std::filesystem::create_directories(dir);
  for (const std::string w : {"0s...10ms", "0s....10ms", "1...2ms", "0s..10ms..20ms", "0s..10ms..", "..10ms"}) {
    const Outcome o = run("trace " + f + " --window '" + w + "' --out " + dir + "/bad.json");
    EXPECT_EQ(o.status, 2) << w << ": " << o.output;
    EXPECT_NE(o.output.find("<command line>: --window: '" + w + "' is not FROM..TO of two durations such as 0s..200ms"),
              std::string::npos)
        << o.output;
  }
  // The other mistakes say which rule they break.
  for (const auto& [w, why] : std::vector<std::pair<std::string, std::string>>{
           {"-5ms..20ms", "starts before the run (FROM is negative)"},
           {"20ms..10ms", "is empty: TO must come after FROM"},
           {"10ms..10ms", "is empty: TO must come after FROM"}}) {
    const Outcome o = run("trace " + f + " --window " + w + " --out " + dir + "/bad.json");
    EXPECT_EQ(o.status, 2) << w << ": " << o.output;
    EXPECT_NE(o.output.find("<command line>: --window: '" + w + "' " + why), std::string::npos) << o.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/bad.json"));
  const Outcome ok = run("trace " + f + " --window 0.5ms..1.5ms --out " + dir + "/ok.json");
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find(" events in [0.5ms..1.5ms]"), std::string::npos) << ok.output;
}

// An output naming the file the command reads replaced the scenario with its results, and two
// outputs naming one file kept only the last; both are refused before any work, however the
// name is spelt (./, .., a symbolic or a hard link).
TEST(Cli, OutputThatIsAnInputOrAnotherOutputIsRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_dir("same-file");
  fs::create_directories(dir / "sub");
  const std::string f = (dir / "scenario.yaml").string();
  { std::ofstream(f) << kGood; }
  fs::create_symlink("scenario.yaml", dir / "link.yaml");
  fs::create_hard_link(f, dir / "hard.yaml");
  const std::string d = dir.string(), rep = fresh_dir("same-file-rep");
  // bench reads configs/bench/ through the search path; a copy first on it keeps a regression from
  // overwriting the shipped file.
  const char* root = std::getenv("VCPUSIM_SOURCE_ROOT");
  ASSERT_NE(root, nullptr);
  fs::create_directories(dir / "configs" / "bench");
  const std::string bench_input = d + "/configs/bench/epyc-large.yaml";
  fs::copy_file(std::string(root) + "/configs/bench/epyc-large.yaml", bench_input);
  // ... and its machine, a preset it reads the same way (epyc-large.yaml names epyc-2s-64c).
  fs::create_directories(dir / "configs" / "topologies");
  const std::string bench_topology = d + "/configs/topologies/epyc-2s-64c.yaml";
  fs::copy_file(std::string(root) + "/configs/topologies/epyc-2s-64c.yaml", bench_topology);
  const std::string records = d + "/records.png";  // a records file a figure could be named after
  { std::ofstream(records) << "{}\n"; }
  const struct {
    std::string command, message;
  } bad[] = {
      {"run " + f + " --json " + f, "--json: '" + f + "' is the scenario it reads: the results would overwrite it"},
      {"run " + f + " --csv " + d + "/sub/../scenario.yaml", "--csv: '" + d + "/sub/../scenario.yaml' is the scenario it reads ("},
      {"run " + f + " --json " + d + "/link.yaml", "--json: '" + d + "/link.yaml' is the scenario it reads ("},
      {"run " + d + "/link.yaml --json " + d + "/hard.yaml", "--json: '" + d + "/hard.yaml' is the scenario it reads ("},
      {"run " + f + " --json " + d + "/r.out --csv " + d + "/./r.out",
       "--csv: '" + d + "/./r.out' is --json's file too (" + d + "/r.out); each output needs its own"},
      {"trace " + f + " --out " + d + "/link.yaml", "--out: '" + d + "/link.yaml' is the scenario it reads ("},
      {"reproduce smt-corun-sysbench --out " + rep + " --json " + rep + "/records.jsonl",
       "--json: '" + rep + "/records.jsonl' is the records it reads"},
      {"reproduce smt-corun-sysbench --out " + rep + " --json " + d + "/fig.png --plot " + d + "/fig.png",
       "--plot: '" + d + "/fig.png' is --json's file too"},
      {"plot " + records + " --x a --y b --out " + records, "--out: '" + records + "' is the records it reads"},
      {"bench --quick --json " + bench_input, "--json: '" + bench_input + "' is a scenario it measures"},
      {"bench --quick --json " + bench_topology, "--json: '" + bench_topology + "' is a topology file it reads"},
  };
  for (const auto& b : bad) {
    const Outcome o = shell("VCPUSIM_CONFIG_DIR=" + d + "/configs timeout 120 " + binary() + " " + b.command);
    EXPECT_EQ(o.status, 2) << b.command << ": " << o.output;
    EXPECT_NE(o.output.find("<command line>: " + b.message), std::string::npos) << b.command << ": " << o.output;
  }
  std::ifstream in(f);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), kGood);  // the scenario is intact
  EXPECT_FALSE(fs::exists(dir / "r.out"));
  EXPECT_FALSE(fs::exists(rep));  // refused before the sweep made its directory
}

// A topology file the scenario names is an input as the scenario is, but only the scenario was
// checked: `run s.yaml --json topo.yaml` replaced the machine with the results. The file is
// found as the loader finds it (beside the scenario, a --set's path, a swept value, a preset on
// the config path) and refused however the output spells it, by run, trace, sweep and reproduce.
TEST(Cli, OutputThatIsATopologyFileTheScenarioNamesIsRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_dir("topo-file");
  fs::create_directories(dir / "sub");
  fs::create_directories(dir / "configs" / "topologies");
  const std::string d = dir.string(), machine = "sockets: 1\ncores_per_socket: 2\nthreads_per_core: 2\nnodes: 1\n";
  for (const char* name : {"topo.yaml", "swept.yaml", "set.yaml", "configs/topologies/box.yaml"})
    std::ofstream(dir / name) << machine;
  std::ofstream(dir / "records.jsonl") << machine;  // a topology file where a sweep's records go
  const auto scenario = [&](const std::string& name, const std::string& topology, const std::string& extra = "") {
    const std::string path = d + "/" + name;
    std::ofstream(path) << with("topology: desktop-4c8t", "topology: " + topology) + extra;
    return path;
  };
  const std::string f = scenario("s.yaml", "topo.yaml"), swept = scenario("swept-s.yaml", "desktop-4c8t",
                                                                          "sweep:\n  topology: [desktop-4c8t, swept.yaml]\n");
  const std::string preset = scenario("preset.yaml", "box"), in_out = scenario("records-s.yaml", "./records.jsonl");
  const std::string swept_out = scenario("swept-out.yaml", "desktop-4c8t", "sweep:\n  topology: [desktop-4c8t, ./records.jsonl]\n");
  std::string repro = std::string("source: t\nmetric: vm.a.throughput\nrows: vms.a.count\n") +
                      "baseline: {row: 1}\nscenario:\n";
  {
    std::istringstream in(with("topology: desktop-4c8t", "topology: topo.yaml") + "sweep: {vms.a.count: [1, 2]}\n");
    for (std::string line; std::getline(in, line);) repro += "  " + line + "\n";
  }
  repro += "published:\n  - {row: 1, value: 1}\n  - {row: 2, value: 1}\n";
  { std::ofstream(d + "/repro.yaml") << repro; }
  // A reproduction's runs append to DIR/records.jsonl as a sweep's do.
  {
    std::string r2 = repro;
    r2.replace(r2.find("topology: topo.yaml"), 19, "topology: ./records.jsonl");
    std::ofstream(d + "/repro-records.yaml") << r2;
  }
  const std::string rep = fresh_dir("topo-file-rep"), message = "' is a topology file the scenario names";
  const struct {
    std::string command, message;
  } bad[] = {
      {"run " + f + " --json " + d + "/topo.yaml", "--json: '" + d + "/topo.yaml" + message + ": the results would overwrite it"},
      {"run " + f + " --csv " + d + "/sub/../topo.yaml", "--csv: '" + d + "/sub/../topo.yaml" + message + " (" + d + "/topo.yaml)"},
      {"run " + f + " --set topology=" + d + "/set.yaml --json " + d + "/set.yaml", "--json: '" + d + "/set.yaml" + message},
      {"run " + swept + " --json " + d + "/swept.yaml", "--json: '" + d + "/swept.yaml" + message},
      {"run " + preset + " --json " + d + "/configs/topologies/box.yaml", "--json: '" + d + "/configs/topologies/box.yaml" + message},
      {"trace " + f + " --out " + d + "/topo.yaml", "--out: '" + d + "/topo.yaml" + message},
      {"sweep " + in_out + " --out " + d, "--out: '" + d + "/records.jsonl" + message},
      {"sweep " + swept_out + " --out " + d + "/sub/..", "--out: '" + d + "/sub/../records.jsonl" + message},
      {"reproduce " + d + "/repro.yaml --out " + rep + " --json " + d + "/topo.yaml", "--json: '" + d + "/topo.yaml" + message},
      {"reproduce " + d + "/repro-records.yaml --out " + d, "--out: '" + d + "/records.jsonl" + message},
  };
  for (const auto& b : bad) {
    const Outcome o = shell("VCPUSIM_CONFIG_DIR=" + d + "/configs timeout 120 " + binary() + " " + b.command);
    EXPECT_EQ(o.status, 2) << b.command << ": " << o.output;
    EXPECT_NE(o.output.find("<command line>: " + b.message), std::string::npos) << b.command << ": " << o.output;
  }
  for (const char* name : {"topo.yaml", "swept.yaml", "set.yaml", "configs/topologies/box.yaml", "records.jsonl"}) {
    std::ifstream in(dir / name);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), machine) << name;  // every machine is intact
  }
  EXPECT_FALSE(fs::exists(rep));  // refused before the sweep made its directory
  const Outcome ok = run("run " + f + " --duration 20ms --json " + d + "/sub/out.json");
  EXPECT_EQ(ok.status, 0) << ok.output;
}

// `--json - --csv -` wrote a JSON document and a CSV table one after the other on standard
// output, which no reader of either format takes. Two outputs to '-' are exit 2 naming both
// options, before any run; one is fine.
TEST(Cli, TwoOutputsToStandardOutputAreRefused) {
  const std::string f = write_temp("two-stdout.yaml", kGood), rep = fresh_dir("two-stdout-rep");
  const struct {
    std::string command, message;
  } bad[] = {
      {"run " + f + " --json - --csv -", "<command line>: --csv: '-' (standard output) is --json's too: two outputs would "
                                         "interleave there; give one of them a file"},
      {"reproduce smt-corun-sysbench --out " + rep + " --json - --plot -",
       "<command line>: --plot: '-' (standard output) is --json's too"},
  };
  for (const auto& b : bad) {
    const Outcome o = run(b.command);
    EXPECT_EQ(o.status, 2) << b.command << ": " << o.output;
    EXPECT_NE(o.output.find(b.message), std::string::npos) << b.command << ": " << o.output;
    EXPECT_EQ(o.output.find("\"runs\""), std::string::npos) << b.command << ": " << o.output;  // nothing ran
  }
  EXPECT_FALSE(std::filesystem::exists(rep));
  for (const std::string& one : {" --json - --csv " + fresh_dir("two-stdout-csv") + ".csv", std::string(" --csv -")}) {
    const Outcome o = run("run " + f + " --duration 20ms" + one);
    EXPECT_EQ(o.status, 0) << one << ": " << o.output;
  }
}

// Results written to a full disk were lost without a word (exit 0), the table and `--json -`
// alike. Now that is exit 1 with a message; stdout that takes the output, or is never written,
// gives no such error.
TEST(Cli, FailedWriteToStandardOutputIsExitOne) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const std::string f = write_temp("stdout.yaml", kGood);
  for (const std::string& args : {"run " + f, "run " + f + " --json - --quiet", "run " + f + " --csv - --quiet --repetitions 2",
                                 std::string("run --list"), std::string("--help")}) {
    // The group keeps stderr on the pipe while stdout goes to the full device.
    const Outcome full = shell("{ timeout 120 " + binary() + " " + args + " > /dev/full; }");
    EXPECT_EQ(full.status, 1) << args << ": " << full.output;
    EXPECT_NE(full.output.find("vcpusim: error: writing standard output failed"), std::string::npos) << args << ": "
                                                                                                     << full.output;
    const Outcome null = shell("{ timeout 120 " + binary() + " " + args + " > /dev/null; }");
    EXPECT_EQ(null.status, 0) << args << ": " << null.output;
    EXPECT_EQ(null.output.find("writing standard output"), std::string::npos) << args << ": " << null.output;
  }
  const Outcome quiet = shell("{ timeout 120 " + binary() + " run " + f + " --quiet > /dev/full; }");
  EXPECT_EQ(quiet.status, 0) << quiet.output;  // nothing was written to stdout, so nothing failed
}

// run and trace take --set as sweep and reproduce do. A bad value is the option's error, not a
// line of the file: YAML::Load's marks once placed it at the scenario file's 1:1, and a value
// that is not YAML made `reproduce --set` exit 1 with yaml-cpp's own message.
TEST(Cli, SetOverridesAFieldAndItsErrorsNameTheOption) {
  const std::string f = write_temp("set.yaml", kGood);
  const Outcome ok = run("run " + f + " --set host.smt=off --set vms.a.workload.threads=1 --json -");
  ASSERT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("\"vm.a.throughput\""), std::string::npos) << ok.output;
  std::string long_path = "a";  // 65 parts: 20,000 once crashed a sweep
  for (int i = 0; i < 64; ++i) long_path += ".a";
  const std::string trace_dir = fresh_dir("set-trace");
  std::filesystem::create_directories(trace_dir);  // the output is checked before the scenario
  const struct {
    std::string command, message;
  } bad[] = {
      {"run " + f + " --set duration=-5s", "<command line>: --set duration: '-5s' is out of range"},
      {"run " + f + " --set vms.a.vcpus=0", "<command line>: --set vms.a.vcpus: 0 is out of range [1, 4096]"},
      {"run " + f + " --set hsot.smt=off", "<command line>: --set hsot.smt: unknown key"},
      {"run " + f + " --set 'duration=[x'", "<command line>: --set duration: YAML syntax error"},
      {"run " + f + " --set duration", "<command line>: --set: 'duration' is not PATH=VALUE"},
      // It made a top-level key `vms[0]`, which the loader blamed on the scenario file.
      {"run " + f + " --set 'vms[0].count=1'", "<command line>: --set: 'vms[0]' is not a key: a dotted path walks a list"},
      {"trace " + f + " --out " + trace_dir + "/t.json --set duration=0s",
       "<command line>: --set duration: '0s' is out of range"},
      {"sweep " + f + " --out " + fresh_dir("set-sweep") + " --set duration=-5s",
       "<command line>: --set duration: '-5s' is out of range"},
      {"reproduce smt-corun-sysbench --out " + fresh_dir("set-rep") + " --set 'duration=[x'",
       "<command line>: --set duration: YAML syntax error"},
      {"reproduce smt-corun-sysbench --out " + fresh_dir("set-rep2") + " --set duration=-5s",
       "<command line>: --set duration: '-5s' is out of range"},
      {"sweep " + write_temp("set-swept.yaml", std::string(kGood) + "sweep:\n  vms.a.vcpus: [1, 2]\n") + " --out " +
           fresh_dir("set-swept") + " --set vms.a.vcpus=abc",
       "<command line>: --set vms.a.vcpus: the sweep or a column sets this field in every run"},
      // A value passes the checks a file does: a self-containing alias crashed the run, a
      // repeated key or a second document was dropped, a byte that is not UTF-8 made exit 1.
      {"run " + f + " --set 'x=&r [*r]'", "<command line>: --set x: nested deeper than 64 levels"},
      {"run " + f + " --set 'vms.a.workload={kind: sysbench-cpu, threads: 1, threads: 2}'",
       "<command line>: --set vms.a.workload: duplicate key"},
      {"run " + f + " --set 'name=\xff'", "<command line>: --set name: not UTF-8 text"},
      {"run " + f + " --set " + long_path + "=1", "<command line>: --set: a dotted path of 65 parts; at most 64"},
      // Inside a column's overrides the keys are dotted paths a --set path cannot name.
      {"sweep " + f + " --out " + fresh_dir("set-col") + " --set columns.x.host.smt=off",
       "<command line>: --set columns.x.host.smt: a path may go no deeper than columns.ENTRY"},
      // A column the option wrote: its error named the file, with no line.
      {"sweep " + f + " --out " + fresh_dir("set-col2") + " --set 'columns.x={host.smt: off, host.core_scheduling: core}'",
       "<command line>: --set columns.x: 'core' needs host.smt: on"},
      // Both values are named, as one may be the option's (kGood's warm-up is the default 0 s).
      {"run " + write_temp("set-warm.yaml", with("duration: 200ms", "duration: 200ms\nwarmup: 500ms")),
       "warmup: warm-up (500ms) must be shorter than the duration (200ms)"},
      // Every thread might start after the run's end: it ran idle, throughput 0, exit 0.
      {"run " + write_temp("set-jitter.yaml", with("duration: 200ms", "duration: 200ms\nguest: {start_jitter: 10s}")),
       "set-jitter.yaml:3:23: guest.start_jitter: start jitter (10s) must be shorter than the duration (200ms)"},
      {"run " + f + " --set duration=1h", "<command line>: --set duration: expected a duration with a unit (ns, us, ms, s, m or min)"},
      {"trace " + f + " --out " + trace_dir + "/late.json --window 5s..10s",
       "<command line>: --window: '5s..10s' starts at or after the end of the run (0.2 s simulated)"},
  };
  for (const auto& b : bad) {
    const Outcome o = run(b.command);
    EXPECT_EQ(o.status, 2) << b.command << ": " << o.output;
    EXPECT_NE(o.output.find(b.message), std::string::npos) << b.command << ": " << o.output;
  }
}

// The sweep names a label it refuses quoted (`columns." "`), where the --set that made it has it
// as written (`columns. `): the error went to the scenario file, with no line, as if the file
// held the label.
TEST(Cli, ASetThatMakesABadLabelIsTheOptionsError) {
  const std::string f = write_temp("set-label.yaml", kGood);
  for (const auto& [set, message] :
       {std::pair<std::string, std::string>{"columns. ={host.smt: off}",
                                            "<command line>: --set columns. : a column's label is not blank"},
        std::pair<std::string, std::string>{"columns.<<={host.smt: off}",
                                            "<command line>: --set columns.<<: YAML merge keys (<<) are not read here"},
        std::pair<std::string, std::string>{"sweep.setup={\" \": {}}",
                                            "<command line>: --set sweep.setup: an axis's label is not blank"}}) {
    const Outcome o = run("run " + f + " --quiet --set '" + set + "'");
    EXPECT_EQ(o.status, 2) << set << ": " << o.output;
    EXPECT_NE(o.output.find(message), std::string::npos) << set << ": " << o.output;
  }
}

// A --set whose field holds an earlier --set's (the same field spelt another way, or one around
// it) replaced that value, which was dropped without a word: `--set host.smt=off --set
// 'host={scheduler: {policy: cfs}}'` ran with SMT on, exit 0. One inside an earlier one's field
// refines it and is fine, as is a set of another field of a VM that an earlier set renamed.
TEST(Cli, ASetThatReplacesAnEarlierSetsFieldIsRefused) {
  const std::string f = write_temp("set-cover.yaml", kGood);
  const struct {
    std::string command, message;
  } bad[] = {
      {"run " + f + " --set vms.a.vcpus=1 --set vms.0.vcpus=2",
       "<command line>: --set vms.0.vcpus: sets the same field as --set vms.a.vcpus, given before it: one of the two "
       "would be dropped"},
      {"run " + f + " --set host.smt=off --set 'host={scheduler: {policy: cfs}}'",
       "<command line>: --set host: covers --set host.smt, given before it, whose value would be dropped"},
      {"trace " + f + " --out " + fresh_dir("set-cover-t") + ".json --set vms.a.workload.threads=1 --set "
       "'vms.a.workload={kind: sysbench-cpu}'",
       "<command line>: --set vms.a.workload: covers --set vms.a.workload.threads, given before it"},
      {"sweep " + f + " --out " + fresh_dir("set-cover-s") + " --set 'columns.x={host.smt: off}' --set 'columns={y: {}}'",
       "<command line>: --set columns: covers --set columns.x, given before it"},
      // vms.b is the VM the first set named b: read in the original scenario it was no field
      // of the first's, and the run took name c, dropping b (exit 0).
      {"run " + f + " --set vms.0.name=b --set vms.b.name=c",
       "<command line>: --set vms.b.name: sets the same field as --set vms.0.name, given before it"},
  };
  for (const auto& b : bad) {
    const Outcome o = run(b.command);
    EXPECT_EQ(o.status, 2) << b.command << ": " << o.output;
    EXPECT_NE(o.output.find(b.message), std::string::npos) << b.command << ": " << o.output;
  }
  const Outcome refined = run("run " + f + " --set 'host={scheduler: {policy: cfs}}' --set host.smt=off --quiet --json -");
  EXPECT_EQ(refined.status, 0) << refined.output;
  EXPECT_NE(refined.output.find("\"smt\": false"), std::string::npos) << refined.output;
  EXPECT_NE(refined.output.find("\"policy\": \"cfs\""), std::string::npos) << refined.output;
  const Outcome renamed = run("run " + f + " --set vms.0.name=b --set vms.b.vcpus=1 --quiet --json -");
  EXPECT_EQ(renamed.status, 0) << renamed.output;
  EXPECT_NE(renamed.output.find("\"vm.b.cpu\": 1.0"), std::string::npos) << renamed.output;  // 2 vCPUs busy: 2.0
  // A bad value there is the option's, not the file's (it was "set-cover.yaml: vms[0].vcpus").
  const Outcome bad_renamed = run("run " + f + " --set vms.0.name=b --set vms.b.vcpus=0");
  EXPECT_EQ(bad_renamed.status, 2) << bad_renamed.output;
  EXPECT_NE(bad_renamed.output.find("<command line>: --set vms.b.vcpus: 0 is out of range"), std::string::npos)
      << bad_renamed.output;
}

// An empty SCENARIO or DIR was taken as a path: "vcpusim: : cannot open file" and ": no records
// here" named no file and no argument. Refused as run's and trace's empty SCENARIO are.
TEST(Cli, AnEmptyScenarioOrRecordsArgumentIsNamed) {
  const struct {
    std::string command, message;
  } bad[] = {
      {"sweep '' --out " + fresh_dir("empty-arg"), "SCENARIO: is empty"},
      {"compare ''", "DIR: is empty"},
      {"merge '' --out " + fresh_dir("empty-arg-m"), "DIR: is empty"},
      {"plot '' --x vms.web.count --y vm.web.throughput --out " + fresh_dir("empty-arg-p") + ".png", "DIR: is empty"},
  };
  for (const auto& b : bad) {
    const Outcome o = run(b.command);
    EXPECT_EQ(o.status, 2) << b.command << ": " << o.output;
    EXPECT_NE(o.output.find(b.message), std::string::npos) << b.command << ": " << o.output;
  }
}

// Outputs are checked before any work: an unwritable path was an uncaught filesystem error
// (exit 1) after the runs, and a run into a directory left its .tmp file behind. An empty value
// was read as no value (--json '' wrote nothing, exit 0).
TEST(Cli, OutputsThatCannotBeWrittenAreExitTwoBeforeAnyRun) {
  const std::string f = write_temp("out.yaml", kGood);
  const std::string dir = fresh_dir("out-dir");
  std::filesystem::create_directories(dir);
  const std::string file = write_temp("out-file.txt", "x");
  const struct {
    std::string command, message;
  } bad[] = {
      {"run " + f + " --json " + dir, "<command line>: --json: '" + dir + "' is a directory, not a file"},
      {"run " + f + " --csv /proc/nosuch.csv", "<command line>: --csv: '/proc/nosuch.csv' cannot be written"},
      {"run " + f + " --json ''", "--json: is empty"},
      {"trace " + f + " --out " + dir, "<command line>: --out: '" + dir + "' is a directory, not a file"},
      {"sweep " + f + " --out " + file, "<command line>: --out: '" + file + "' is a file, not a directory"},
      {"reproduce smt-corun-sysbench --out " + fresh_dir("out-rep") + " --json /proc/nosuch.json",
       "<command line>: --json: '/proc/nosuch.json' cannot be written"},
      {"reproduce smt-corun-sysbench --out " + fresh_dir("out-rep2") + " --plot /proc/nosuch.png",
       "<command line>: --plot: '/proc/nosuch.png' cannot be written"},
      {"reproduce ''", "NAME: is empty"},
  };
  for (const auto& b : bad) {
    const Outcome o = run(b.command);
    EXPECT_EQ(o.status, 2) << b.command << ": " << o.output;
    EXPECT_NE(o.output.find(b.message), std::string::npos) << b.command << ": " << o.output;
    EXPECT_EQ(o.output.find("runs done"), std::string::npos) << b.command << ": " << o.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp"));
}

TEST(Cli, JsonAndCsvAreWritten) {
  const auto dir = std::filesystem::temp_directory_path() / ("vcpusim_cli_out_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string js = (dir / "r.json").string(), cs = (dir / "r.csv").string();
  const Outcome o = run("run " + write_temp("good2.yaml", kGood) + " --repetitions 2 --json " + js + " --csv " + cs);
  ASSERT_EQ(o.status, 0) << o.output;
  std::ifstream j(js), c(cs);
  std::string jt((std::istreambuf_iterator<char>(j)), {}), ct((std::istreambuf_iterator<char>(c)), {});
  EXPECT_NE(jt.find("\"vm.a.throughput\""), std::string::npos);
  EXPECT_NE(jt.find("\"timing\""), std::string::npos);
  EXPECT_NE(jt.find("\"vcpusim_build\""), std::string::npos);  // the model that produced the figures
  // Header plus one row per (repetition, domain).
  EXPECT_EQ(std::count(ct.begin(), ct.end(), '\n'), 3);
}

// A symbolic link given as an output stays a link and its file gets the result, as with a shell's
// `>` (the link used to be replaced by a file); a name of 252-255 bytes, which the system accepts,
// is written (its temporary NAME.tmp was too long, so it failed after the runs).
TEST(Cli, OutputThroughASymlinkOrWithALongNameIsWritten) {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_dir("out-link");
  fs::create_directories(dir);
  const fs::path target = dir / "target.json", link = dir / "link.json";
  { std::ofstream(target) << "old"; }
  fs::create_symlink("target.json", link);  // relative, as `ln -s` makes them
  const std::string f = write_temp("out-link.yaml", kGood);
  ASSERT_EQ(run("run " + f + " --json " + link.string()).status, 0);
  EXPECT_TRUE(fs::is_symlink(link));
  std::ifstream t(target);
  const std::string text((std::istreambuf_iterator<char>(t)), {});
  EXPECT_NE(text.find("\"vm.a.throughput\""), std::string::npos);
  const fs::path dangling = dir / "dangling.json";
  fs::create_symlink("made.json", dangling);
  ASSERT_EQ(run("run " + f + " --json " + dangling.string()).status, 0);
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_TRUE(fs::is_regular_file(dir / "made.json"));
  const fs::path longest = dir / (std::string(250, 'x') + ".json");  // 255 bytes: NAME_MAX
  const Outcome o = run("run " + f + " --json " + longest.string());
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_TRUE(fs::is_regular_file(longest));
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().extension() == ".tmp" ? 100 : 1;
  EXPECT_EQ(files, 5u);  // target, link, dangling, made, the long one; no temporary file left
  const fs::path loop = dir / "loop.json";
  fs::create_symlink("loop.json", loop);
  const Outcome l = run("run " + f + " --json " + loop.string());
  EXPECT_EQ(l.status, 2) << l.output;
  EXPECT_NE(l.output.find("--json: '" + loop.string() + "' is a loop of symbolic links"), std::string::npos) << l.output;
  EXPECT_TRUE(fs::is_symlink(loop));
}

// A result file that cannot be written whole (a full disk; here a file-size limit, SIGXFSZ
// ignored) is refused naming it and why, and its temporary file does not survive: NAME.tmp was
// left beside it, half written.
TEST(Cli, AFailedResultWriteLeavesNoTemporaryFile) {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_dir("out-full");
  fs::create_directories(dir);
  const std::string js = (dir / "r.json").string();
  const Outcome o = shell("trap '' XFSZ; ulimit -f 1; timeout 120 " + binary() + " run " +
                          write_temp("out-full.yaml", kGood) + " --json " + js);
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find(js + ": cannot write file: File too large"), std::string::npos) << o.output;
  EXPECT_TRUE(fs::is_empty(dir));
}

// Each --set copies the mappings on its path (copy-on-write), and copying a mapping looked each
// of its keys up in the copy: 500 sets adding keys to one mapping took seconds and a gigabyte
// (1000 ran out of memory after 43 s). Under a 512 MB limit they now end with the file's error.
TEST(Cli, ManySetsIntoOneMappingStayCheap) {
  std::string sets;
  for (int i = 0; i < 500; ++i) sets += " --set host.smt_interference.k" + std::to_string(i) + "=1";
  // AddressSanitizer reserves terabytes of address space for its shadow at start-up, so under
  // .ci/run's sanitizer pass the limit would stop the binary before main; there only the
  // outcome is checked (and the timeout still bounds the time).
#if defined(__SANITIZE_ADDRESS__)
  const std::string limit;
#else
  const std::string limit = "ulimit -v 524288; ";
#endif
  const Outcome o = shell(limit + "timeout 120 " + binary() + " run " + write_temp("many-sets.yaml", kGood) + sets);
  EXPECT_EQ(o.status, 2) << o.output.substr(0, 2000);
  EXPECT_NE(o.output.find("--set host.smt_interference.k0: unknown key"), std::string::npos) << o.output.substr(0, 2000);
}

// A name past NAME_MAX cannot be created, but its temporary file (shortened to fit) could, so the
// check passed it: --json ran every repetition and then failed ("cannot write file: Success",
// naming no option), and plot's gnuplot failed after drawing (exit 1). Refused before any work.
TEST(Cli, AnOutputNameLongerThanNameMaxIsRefusedBeforeAnyRun) {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_dir("out-too-long");
  fs::create_directories(dir);
  const std::string name = (dir / (std::string(251, 'x') + ".json")).string();  // 256 bytes
  const std::string f = write_temp("out-too-long.yaml", kGood);
  for (const std::string option : {"--json", "--csv"}) {
    const Outcome o = run("run " + f + " " + option + " " + name);
    EXPECT_EQ(o.status, 2) << o.output;
    EXPECT_NE(o.output.find(option + ": '" + name + "' cannot be written: its name is 256 bytes long"), std::string::npos)
        << o.output;
  }
  const Outcome t = run("trace " + f + " --window 0ms..1ms --out " + name);
  EXPECT_EQ(t.status, 2) << t.output;
  EXPECT_NE(t.output.find("--out: '" + name + "' cannot be written"), std::string::npos) << t.output;
  EXPECT_TRUE(fs::is_empty(dir));  // no temporary file left either
}

// ---- sweep, compare, reproduce -------------------------------------------------------------

namespace {

const std::string kSweep = small_sweep("sw", 2);

// The text of one record of kSweep, written by a real sweep into a fresh directory named after
// `tag`: what the tests of hand-edited records start from ("" with a failure if the sweep fails).
std::string one_record(const std::string& tag) {
  const std::string f = write_temp(tag + ".yaml", kSweep), a = fresh_dir(tag + "-a");
  const Outcome o = run("sweep " + f + " --out " + a + " --max-records 1");
  EXPECT_EQ(o.status, 0) << o.output;
  if (o.status != 0) return {};
  std::ifstream in(a + "/records.jsonl");
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

}  // namespace

TEST(CliSweep, RecordsAreIdenticalForOneAndTwoJobs) {
  const std::string f = write_temp("sweep.yaml", kSweep), a = fresh_dir("j1"), b = fresh_dir("j2");
  ASSERT_EQ(run("sweep " + f + " --out " + a + " --jobs 1").status, 0);
  ASSERT_EQ(run("sweep " + f + " --out " + b + " --jobs 2").status, 0);
  const std::string ca = canonical_records(a);
  EXPECT_EQ(count_lines(a + "/records.jsonl"), 12u);  // 3 points x 2 columns x 2 repetitions
  EXPECT_EQ(ca, canonical_records(b));
  for (const char* key : {"\"scenario\":\"sw\"", "\"column\":\"noHT\"", "\"point\":{\"vms.web.count\":6}",
                          "\"repetition\":1", "\"seed\":", "\"metrics\":", "\"vm.web.throughput\"", "\"resolved\":"})
    EXPECT_NE(ca.find(key), std::string::npos) << key;
}

TEST(CliSweep, ResumeAfterAnInterruptionLosesAndDuplicatesNothing) {
  const std::string f = write_temp("sweep2.yaml", kSweep), full = fresh_dir("full"), cut = fresh_dir("cut");
  ASSERT_EQ(run("sweep " + f + " --out " + full + " --jobs 2").status, 0);
  ASSERT_EQ(run("sweep " + f + " --out " + cut + " --jobs 2 --max-records 5").status, 0);
  EXPECT_EQ(count_lines(cut + "/records.jsonl"), 5u);
  // A run killed while writing leaves a torn last line; the resume must cut it, not keep it.
  { std::ofstream(cut + "/records.jsonl", std::ios::app) << "{\"scenario\":\"sw\",\"col"; }
  const Outcome o = run("sweep " + f + " --out " + cut + " --jobs 2");
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_NE(o.output.find("7 records written, 5 already present"), std::string::npos) << o.output;
  EXPECT_EQ(count_lines(cut + "/records.jsonl"), 12u);
  EXPECT_EQ(canonical_records(cut), canonical_records(full));
  // Once complete, a re-run does nothing.
  EXPECT_NE(run("sweep " + f + " --out " + cut).output.find("0 records written, 12 already present"), std::string::npos);
}

// A resume counted any record as a finished run: a repetition the plan does not have (7 of 2)
// was kept (compare then counted it as a sample, and merge said nothing was missing beside 13
// records), and a record relabelled as another repetition of its point (so two runs under one
// name, which compare refuses) was taken as that repetition, exit 0 both times. Each is refused
// at its line, naming the field; a point spelt as a float ({"vms.web.count": 3.0}, as a tool
// that rewrites numbers writes it) is still the plan's point, as the readers take it.
TEST(CliSweep, AResumeRefusesARecordThatIsNoRunOfThePlan) {
  const std::string f = write_temp("sweep-stray.yaml", kSweep), ref = fresh_dir("stray-ref");
  ASSERT_EQ(run("sweep " + f + " --out " + ref + " --jobs 2").status, 0);
  std::vector<std::string> lines;
  {
    std::ifstream in(ref + "/records.jsonl");
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  // The first record of repetition 1, edited as `edit` says, in a copy of the output.
  const std::size_t at = std::stoul(line_with(lines, "\"repetition\":1")) - 1;
  auto edited = [&](const std::string& name, const std::string& from, const std::string& to) {
    const std::string d = fresh_dir(name);
    std::filesystem::create_directories(d);
    std::ofstream out(d + "/records.jsonl");
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::string l = lines[i];
      if (i == at) {
        const auto p = l.find(from);
        EXPECT_NE(p, std::string::npos) << from;
        if (p != std::string::npos) l.replace(p, from.size(), to);
      }
      out << l << "\n";
    }
    return d;
  };
  const std::string line = std::to_string(at + 1);
  const Outcome seven = run("sweep " + f + " --out " + edited("stray-rep7", "\"repetition\":1", "\"repetition\":7"));
  EXPECT_EQ(seven.status, 2) << seven.output;
  EXPECT_NE(seven.output.find("/records.jsonl:" + line + ":1: repetition: 7 is not a repetition of this sweep, which runs 2"),
            std::string::npos)
      << seven.output;
  const Outcome zero = run("sweep " + f + " --out " + edited("stray-rep0", "\"repetition\":1", "\"repetition\":0"));
  EXPECT_EQ(zero.status, 2) << zero.output;
  EXPECT_NE(zero.output.find("/records.jsonl:" + line + ":1: seed: "), std::string::npos) << zero.output;
  EXPECT_NE(zero.output.find("is not the seed of repetition 0 of point"), std::string::npos) << zero.output;
  const std::string point = lines[at].substr(lines[at].find("\"point\":{"));
  const std::string count = point.substr(0, point.find('}') + 1);  // "point":{"vms.web.count":N}
  const std::string as_float = count.substr(0, count.size() - 1) + ".0}";
  const Outcome spelt = run("sweep " + f + " --out " + edited("stray-float", count, as_float));
  EXPECT_EQ(spelt.status, 0) << spelt.output;
  EXPECT_NE(spelt.output.find("0 records written, 12 already present"), std::string::npos) << spelt.output;
}

// The scenario hash covered the document only: a sweep of `topology: box.yaml` resumed after
// box.yaml went from 4 cores to 1 took the 4-core records as finished runs of the 1-core machine,
// ran the rest on it and printed both in one table, exit 0.
TEST(CliSweep, AResumeAfterItsTopologyFileWasEditedIsRefused) {
  const std::string topo = "sockets: 1\ncores_per_socket: 4\nthreads_per_core: 2\nnodes: 1\n";
  write_temp("resume-box.yaml", topo);  // beside the scenario, where its topology: finds it
  std::string scenario = kSweep;
  scenario.replace(scenario.find("topology: desktop-4c8t"), 22, "topology: resume-box.yaml");
  const std::string f = write_temp("resume-topo.yaml", scenario), out = fresh_dir("resume-topo");
  ASSERT_EQ(run("sweep " + f + " --out " + out + " --max-records 3").status, 0);
  write_temp("resume-box.yaml", "sockets: 1\ncores_per_socket: 1\nthreads_per_core: 2\nnodes: 1\n");
  const Outcome edited = run("sweep " + f + " --out " + out);
  EXPECT_EQ(edited.status, 2) << edited.output;
  EXPECT_NE(edited.output.find(out + "/records.jsonl: holds records of a different scenario (or an edited one, or one "
                                     "whose topology file was edited)"),
            std::string::npos)
      << edited.output;
  EXPECT_EQ(count_lines(out + "/records.jsonl"), 3u);
  // The machine the records' runs read, a comment added: they resume.
  write_temp("resume-box.yaml", "# the desktop\n" + topo);
  const Outcome same = run("sweep " + f + " --out " + out);
  EXPECT_EQ(same.status, 0) << same.output;
  EXPECT_NE(same.output.find("9 records written, 3 already present"), std::string::npos) << same.output;
}

TEST(CliSweep, RecordsOfAnotherBuildAreNeitherResumedNorMerged) {
  // Each record names the build that wrote it (the one `--version` shows); another build may be
  // another model, so its records must not pass for this build's on a resume or in a merge.
  const std::string f = write_temp("sweep5.yaml", kSweep), d = fresh_dir("build"), e = fresh_dir("build2");
  ASSERT_EQ(run("sweep " + f + " --out " + d + " --max-records 2").status, 0);
  ASSERT_EQ(run("sweep " + f + " --out " + e + " --max-records 2").status, 0);
  const std::string version = run("--version").output;
  const std::string build = version.substr(version.find('(') + 1, version.find(')') - version.find('(') - 1);
  const std::string tag = "\"vcpusim_build\":\"" + build + "\"";
  std::string text;
  {
    std::ifstream in(d + "/records.jsonl");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_NE(text.find(tag), std::string::npos) << text;
  for (std::size_t at; (at = text.find(tag)) != std::string::npos;) text.replace(at, tag.size(), "\"vcpusim_build\":\"v0-other\"");
  { std::ofstream(d + "/records.jsonl") << text; }
  const Outcome resume = run("sweep " + f + " --out " + d);
  EXPECT_EQ(resume.status, 2) << resume.output;
  EXPECT_NE(resume.output.find("written by vcpusim build v0-other, not by this one (" + build + ")"), std::string::npos)
      << resume.output;
  const Outcome merge = run("merge " + e + " " + d + " --out " + fresh_dir("build3"));
  EXPECT_EQ(merge.status, 2) << merge.output;
  EXPECT_NE(merge.output.find(d + "/records.jsonl:1:1: vcpusim_build: a record of vcpusim build v0-other, where the record at "
                              "line 1 of " + e + "/records.jsonl is of build " + build + "; refusing to merge"),
            std::string::npos)
      << merge.output;
}

TEST(CliSweep, BuildIdNamesTheCommitAndEachDistinctEditOfIt) {
  // scripts/build-id.sh (what vcpusim_build is made of): a clean checkout gives its commit, an
  // edited one the commit, -dirty- and a hash of the edit, so two different edits differ.
  if (shell("command -v git").status != 0) GTEST_SKIP() << "git is not on PATH";
  const char* root = std::getenv("VCPUSIM_SOURCE_ROOT");
  ASSERT_NE(root, nullptr);
  const std::string script = std::string(root) + "/scripts/build-id.sh", repo = fresh_dir("build-id-repo");
  const std::string git = "git -C " + repo + " -c user.name=t -c user.email=t@t ";
  ASSERT_EQ(shell("mkdir -p " + repo + " && git init -q " + repo + " && echo a > " + repo + "/f && " + git + "add f && " +
                  git + "commit -qm c").status, 0);
  auto id = [&] {
    std::string out = shell("sh " + script + " " + repo).output;
    return out.substr(0, out.find('\n'));
  };
  const std::string clean = id();
  EXPECT_EQ(clean.find("dirty"), std::string::npos) << clean;
  ASSERT_EQ(shell("echo b > " + repo + "/f").status, 0);
  const std::string edit1 = id();
  ASSERT_EQ(shell("echo c > " + repo + "/f").status, 0);
  const std::string edit2 = id();
  EXPECT_EQ(edit1.rfind(clean + "-dirty-", 0), 0u) << edit1;
  EXPECT_EQ(edit2.rfind(clean + "-dirty-", 0), 0u) << edit2;
  EXPECT_NE(edit1, edit2);
}

// `sweep: {zip: []}` ran the base alone, status 0: one record where the file promised a sweep.
TEST(CliSweep, EmptyZipListIsExitTwoBeforeAnyRun) {
  const std::string f = write_temp("empty-zip.yaml", std::string(kGood) + "sweep: {zip: []}\n"), d = fresh_dir("empty-zip");
  const Outcome o = run("sweep " + f + " --out " + d);
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find(f + ":11:14: sweep.zip: an empty list: give at least one group"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(d + "/records.jsonl"));
}

TEST(CliSweep, BadPathIsExitTwoNamingIt) {
  std::string bad = kSweep;
  bad.replace(bad.find("vms.web.count"), 13, "vms.wbe.count");
  const std::string f = write_temp("badpath.yaml", bad);
  const Outcome o = run("sweep " + f + " --out " + fresh_dir("bad"));
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output.find(f + ":14:"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("vms.wbe.count"), std::string::npos) << o.output;
}

TEST(CliSweep, CompareRendersEveryFormat) {
  const std::string f = write_temp("sweep3.yaml", kSweep), d = fresh_dir("cmp");
  ASSERT_EQ(run("sweep " + f + " --out " + d).status, 0);
  const Outcome text = run("compare " + d + " --baseline HT");
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("Hmean"), std::string::npos);
  EXPECT_NE(text.output.find("t-test"), std::string::npos);
  EXPECT_NE(run("compare " + d + " --rule interval").output.find("interval test"), std::string::npos);
  EXPECT_NE(run("compare " + d + " --format csv").output.find("stat,op,column,value,pct,significant"), std::string::npos);
  EXPECT_NE(run("compare " + d + " --format json").output.find("\"significance_rule\""), std::string::npos);
  EXPECT_NE(run("compare " + d + " --format markdown").output.find("|---|---|"), std::string::npos);
  EXPECT_EQ(run("compare " + d + " --baseline nope").status, 2);
  EXPECT_EQ(run("compare " + fresh_dir("empty")).status, 2);
}

// compare reads its directories as one table: records of two scenarios were mixed in it without
// a word (a row of one vanished under the other's columns), where merge refuses them.
TEST(CliSweep, CompareRefusesRecordsOfTwoScenariosAsMergeDoes) {
  std::string other = kSweep;
  other.replace(other.find("duration: 300ms"), 15, "duration: 400ms");
  const std::string a = fresh_dir("cmp-a"), b = fresh_dir("cmp-b");
  ASSERT_EQ(run("sweep " + write_temp("cmp-a.yaml", kSweep) + " --out " + a + " --max-records 2").status, 0);
  ASSERT_EQ(run("sweep " + write_temp("cmp-b.yaml", other) + " --out " + b + " --max-records 2").status, 0);
  const Outcome o = run("compare " + a + " " + b);
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find(b + "/records.jsonl:1:1: scenario_hash: a record of a different scenario than the record at line 1 of " +
                          a + "/records.jsonl ("),
            std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("; refusing to compare"), std::string::npos) << o.output;
  EXPECT_EQ(run("plot " + a + " " + b + " --x vms.web.count --y vm.web.throughput --out " + fresh_dir("cmp-plot") + "/p.svg").status, 2);
}

// `compare A A` read A's records twice: every sample counted twice, so a cell's stddev shrank and
// the t-test marked differences that are not there; plot's error bars shrank the same way. Two
// arguments naming one records file, however spelt (a trailing /, the file itself, a link), are
// exit 2 naming both.
TEST(CliSweep, CompareAndPlotRefuseOneSweepOutputGivenTwice) {
  namespace fs = std::filesystem;
  const std::string a = fresh_dir("twice");
  ASSERT_EQ(run("sweep " + write_temp("twice.yaml", kSweep) + " --out " + a + " --max-records 2").status, 0);
  const std::string link = fresh_dir("twice-link");
  fs::create_directory_symlink(a, link);
  for (const std::string& second : {a, a + "/", a + "/records.jsonl", link}) {
    const Outcome o = run("compare " + a + " " + second);
    EXPECT_EQ(o.status, 2) << second << ": " << o.output;
    EXPECT_NE(o.output.find("<command line>: DIR: '" + second + "' and '" + a +
                            "' are one sweep output given twice: its records would be counted twice"),
              std::string::npos)
        << second << ": " << o.output;
    const Outcome p = run("plot " + a + " " + second + " --x vms.web.count --y vm.web.throughput --out " + a + "/p.svg");
    EXPECT_EQ(p.status, 2) << second << ": " << p.output;
    EXPECT_NE(p.output.find("given twice"), std::string::npos) << second << ": " << p.output;
  }
  EXPECT_EQ(run("compare " + a).status, 0);  // once is fine
}

// "<records>: no records to compare" did not say which file held none.
TEST(CliSweep, CompareOfNoRecordsNamesTheFile) {
  const std::string d = fresh_dir("cmp-none");
  std::filesystem::create_directories(d);
  { std::ofstream(d + "/records.jsonl") << ""; }
  const Outcome empty = run("compare " + d);
  EXPECT_EQ(empty.status, 2) << empty.output;
  EXPECT_NE(empty.output.find(d + "/records.jsonl: no records to compare"), std::string::npos) << empty.output;
  { std::ofstream(d + "/records.jsonl") << "{\"scenario\":\"sw\",\"col"; }  // only a torn last line
  const Outcome torn = run("compare " + d + "/records.jsonl");
  EXPECT_EQ(torn.status, 2) << torn.output;
  EXPECT_NE(torn.output.find(d + "/records.jsonl: no records to compare"), std::string::npos) << torn.output;
}

// A line that is not JSON is placed at the byte the parser stopped at, without the library's
// own "parse error at line 1, column N" (always line 1: it parses one line).
TEST(CliSweep, ARecordsLineThatIsNotJsonIsPlacedAtItsLineAndColumn) {
  const std::string d = fresh_dir("cmp-notjson");
  std::filesystem::create_directories(d);
  { std::ofstream(d + "/records.jsonl") << "\n{\"scenario\": x}\n"; }  // x is byte 14
  const Outcome o = run("compare " + d);
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find(d + "/records.jsonl:2:14: not a sweep record: syntax error"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("json.exception"), std::string::npos) << o.output;
}

// A line of JSON that is no record, or one without a key every reader uses, is named at its line
// and field; it was the library's "key 'point' not found" or "cannot use at() with array".
TEST(CliSweep, ARecordsLineWithoutAKeyOfEveryRecordNamesTheKey) {
  const std::string d = fresh_dir("cmp-nokey");
  std::filesystem::create_directories(d);
  { std::ofstream(d + "/records.jsonl") << "\n[1, 2]\n"; }
  const Outcome array = run("compare " + d);
  EXPECT_EQ(array.status, 2) << array.output;
  EXPECT_NE(array.output.find(d + "/records.jsonl:2:1: [1,2] is not a sweep record (a JSON object)"), std::string::npos)
      << array.output;
  { std::ofstream(d + "/records.jsonl") << R"({"column": null, "repetition": 0, "metrics": {}})" << "\n"; }
  const Outcome nopoint = run("compare " + d);
  EXPECT_EQ(nopoint.status, 2) << nopoint.output;
  EXPECT_NE(nopoint.output.find(d + "/records.jsonl:1:1: point: missing: every sweep record has it"), std::string::npos)
      << nopoint.output;
}

// Records are appended in the order the runs finish, which --jobs changes. compare summed its
// samples in that order, so two columns with the same samples could get means that differ in
// their last bit (a cell printed -0.0000% against its baseline). Repetitions of 1, 1e16 and 1e16
// make the order visible in a harmonic mean: (1 + 1e-16) + 1e-16 rounds to 1, 1e-16 + 1e-16 + 1
// does not. File a keeps the sweep's order; file b reverses one column's records only.
TEST(CliSweep, CompareIsTheSameWhateverOrderTheRecordsWereWrittenIn) {
  const std::string f = write_temp("sweep-order.yaml", small_sweep("order", 3)), d = fresh_dir("order-src");
  ASSERT_EQ(run("sweep " + f + " --out " + d + " --jobs 1").status, 0);
  std::vector<nlohmann::json> recs;
  {
    std::ifstream in(d + "/records.jsonl");
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) recs.push_back(nlohmann::json::parse(line));
  }
  ASSERT_FALSE(recs.empty());
  for (auto& r : recs) r["metrics"]["x"] = r.at("repetition").get<std::uint32_t>() == 0 ? 1.0 : 1e16;
  std::vector<nlohmann::json> first, other;
  for (const auto& r : recs) (r.at("column") == recs.front().at("column") ? first : other).push_back(r);
  ASSERT_FALSE(other.empty());
  const auto write = [&](const std::string& dir, bool reverse_other) {
    std::filesystem::create_directories(dir);
    std::ofstream out(dir + "/records.jsonl");
    for (const auto& r : first) out << r.dump() << "\n";
    if (reverse_other)
      for (auto it = other.rbegin(); it != other.rend(); ++it) out << it->dump() << "\n";
    else
      for (const auto& r : other) out << r.dump() << "\n";
  };
  const std::string a = fresh_dir("order-a"), b = fresh_dir("order-b");
  write(a, false);
  write(b, true);
  for (const char* format : {"text", "csv", "json"}) {
    const Outcome oa = run("compare " + a + " --metric x --format " + format);
    const Outcome ob = run("compare " + b + " --metric x --format " + format);
    ASSERT_EQ(oa.status, 0) << oa.output;
    EXPECT_EQ(oa.output, ob.output) << format;
  }
}

// --from runs nothing, so an --out or --jobs beside it was ignored without a word.
TEST(CliReproduce, FromRefusesTheOptionsOfARun) {
  const Outcome out = run("reproduce credit2-affinity --from " + fresh_dir("rf") + " --out " + fresh_dir("rf2"));
  EXPECT_EQ(out.status, 2) << out.output;
  EXPECT_NE(out.output.find("--from excludes --out"), std::string::npos) << out.output;
  const Outcome jobs = run("reproduce credit2-affinity --from " + fresh_dir("rf") + " --jobs 2");
  EXPECT_EQ(jobs.status, 2) << jobs.output;
  EXPECT_NE(jobs.output.find("--from excludes --jobs"), std::string::npos) << jobs.output;
}

TEST(CliReproduce, ListsAndRunsTheFirstReproduction) {
  const Outcome l = run("reproduce --list");
  ASSERT_EQ(l.status, 0);
  EXPECT_NE(l.output.find("smt-corun-sysbench"), std::string::npos);
  const std::string d = fresh_dir("rep");
  const Outcome o = run("reproduce smt-corun-sysbench --set duration=3s --set repetitions=2 --out " + d + " --json -");
  ASSERT_EQ(o.status, 0) << o.output;
  for (const char* k : {"\"row\": \"nosmt\"", "\"published\": 649.95", "\"model_stddev\"", "\"diff_pct\"",
                        "\"within_tolerance\": true", "\"within_tolerance\": 3"})
    EXPECT_NE(o.output.find(k), std::string::npos) << k << " in " << o.output;
  const Outcome t = run("reproduce smt-corun-sysbench --from " + d);
  EXPECT_NE(t.output.find("model beside published"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("summary: 3/3 cells within 3%"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("records written by vcpusim build "), std::string::npos) << t.output;
  // Read without the --set values they were run with: shown, with a note saying so.
  EXPECT_NE(t.output.find("come from another scenario document than smt-corun-sysbench"), std::string::npos) << t.output;
  const Outcome same = run("reproduce smt-corun-sysbench --set duration=3s --set repetitions=2 --from " + d);
  EXPECT_EQ(same.output.find("reproduce: note:"), std::string::npos) << same.output;
  EXPECT_EQ(run("reproduce no-such-study").status, 2);
  // Records of another study lack its metric: --from's error (it blamed a --metric nobody gave).
  const Outcome other = run("reproduce credit2-affinity --from " + d);
  EXPECT_EQ(other.status, 2) << other.output;
  EXPECT_NE(other.output.find("<command line>: --from: no record in " + d +
                              " has credit2-affinity's metric 'vm.db.throughput'"),
            std::string::npos)
      << other.output;
}

// Records of another sweep that has the metric but not the reproduction's rows or baseline
// column failed in the compare code, which blamed a --baseline option reproduce has not.
TEST(CliReproduce, FromRecordsWithoutItsRowsOrBaselineColumnNameThem) {
  const std::string d = fresh_dir("from-other");
  ASSERT_EQ(run("sweep " + write_temp("from-other.yaml", small_sweep("fo", 1)) + " --out " + d).status, 0);
  const auto repro = [](const std::string& rows, const std::string& sweep) {
    return write_temp("from-repro.yaml", "source: test\nmetric: vm.web.throughput\nrows: " + rows +
                                             "\nbaseline: {column: base}\nscenario:\n" + R"(  name: fr
  duration: 300ms
  topology: desktop-4c8t
  vms:
    - {name: web, vcpus: 2, workload: {kind: sysbench-cpu, threads: 2}}
  sweep: )" + sweep + R"(
  columns:
    base: {}
    other: {host.smt: off}
published:
  - {row: '1', column: base, value: 100}
  - {row: '1', column: other, value: 50}
)");
  };
  const Outcome rows = run("reproduce " + repro("setup", "{setup: {'1': {}}}") + " --from " + d);
  EXPECT_EQ(rows.status, 2) << rows.output;
  EXPECT_NE(rows.output.find("<command line>: --from: no record in " + d + " sweeps from-repro's rows 'setup'"), std::string::npos)
      << rows.output;
  const Outcome col = run("reproduce " + repro("vms.web.count", "{vms.web.count: [1]}") + " --from " + d);
  EXPECT_EQ(col.status, 2) << col.output;
  EXPECT_NE(col.output.find("--from: no record in " + d + " is of from-repro's baseline column 'base' (records of another scenario? their columns: HT, noHT)"),
            std::string::npos)
      << col.output;
}

TEST(CliReproduce, RowRunsOnlyThatRowAndItsBaselineAndALaterFullRunResumes) {
  const std::string d = fresh_dir("rep-row");
  const std::string base = "reproduce smt-corun-sysbench --set duration=2s --set repetitions=1 --out " + d;
  const Outcome o = run(base + " --row nosmt --json -");
  ASSERT_EQ(o.status, 0) << o.output;
  // nosmt, and Alone because it is the baseline row; not no-tag.
  EXPECT_NE(o.output.find("\"row\": \"nosmt\""), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("\"row\": \"Alone\""), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("\"row\": \"no-tag\""), std::string::npos) << o.output;
  EXPECT_EQ(count_lines(d + "/records.jsonl"), 2u);
  // Without --row the same directory resumes: only no-tag is left to run.
  const Outcome all = run(base);
  ASSERT_EQ(all.status, 0) << all.output;
  EXPECT_NE(all.output.find("1 records written, 2 already present, 0 left"), std::string::npos) << all.output;
  const Outcome bad = run(base + " --row nope");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("--row: 'nope' is not a published row of smt-corun-sysbench (rows: Alone, nosmt, no-tag)"),
            std::string::npos)
      << bad.output;
}

TEST(CliReproduce, RowSetChangesOnlyThatRowsRuns) {
  // Pinning `mem` onto `cpu`'s thread in the no-tag row only makes that row the nosmt row's
  // twin (same placement, same seed) and leaves Alone as it was.
  const std::string d = fresh_dir("rep-rowset"), json = (scratch() / "rowset.json").string();
  const std::string base = "reproduce smt-corun-sysbench --set duration=2s --set repetitions=1 --out " + d;
  const Outcome o = run(base + " --row-set no-tag 'baremetal.mem.affinity.hard=cpus:[0]' --json " + json);
  ASSERT_EQ(o.status, 0) << o.output;
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::map<std::string, double> model;
  for (const auto& c : j.at("cells")) model[c.at("row").get<std::string>()] = c.at("model").get<double>();
  ASSERT_EQ(model.size(), 3u) << j.dump();
  EXPECT_EQ(model.at("no-tag"), model.at("nosmt"));
  EXPECT_NEAR(model.at("Alone"), 1306.9, 0.01 * 1306.9);  // the calibrated cell, untouched
  EXPECT_LT(model.at("no-tag"), 0.6 * model.at("Alone"));
  // A row that is not one, a missing PATH=VALUE, and rows that are bare values are refused.
  const Outcome bad = run(base + " --row-set nope a=1");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("--row-set: 'nope' is not a row of smt-corun-sysbench (rows: Alone, nosmt, no-tag)"),
            std::string::npos)
      << bad.output;
  EXPECT_EQ(run(base + " --row-set no-tag").status, 2);
  const Outcome values = run("reproduce credit2-affinity --out " + fresh_dir("rep-rowset-2") + " --row-set 2 a=1");
  EXPECT_EQ(values.status, 2);
  EXPECT_NE(values.output.find("are values, not entries"), std::string::npos) << values.output;
}

namespace {

/// Shipped reproduction `name` with `from` replaced by `to`, written to the scratch directory as
/// `file`; `where` is set to the "path:line:" of the change, what an error about it starts with.
std::string edited_reproduction(const std::string& name, const std::string& from, const std::string& to,
                                const std::string& file, std::string& where) {
  const char* root = std::getenv("VCPUSIM_SOURCE_ROOT");
  EXPECT_NE(root, nullptr);
  std::ifstream in(std::string(root ? root : ".") + "/configs/reproduce/" + name + ".yaml");
  std::string yaml((std::istreambuf_iterator<char>(in)), {});
  const auto at = yaml.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) yaml.replace(at, from.size(), to);
  const std::string path = write_temp(file, yaml);
  where = path + ":" + std::to_string(std::count(yaml.begin(), yaml.begin() + static_cast<long>(std::min(at, yaml.size())), '\n') + 1) + ":";
  return path;
}

}  // namespace

// A metric or a baseline column that names nothing was found only after the whole sweep had run,
// and blamed `--metric` / `--baseline`, options nobody gave. Now: status 2, the reproduction's
// file and line, and no run (the --out directory is not even made).
TEST(CliReproduce, MetricAndBaselineColumnThatNameNothingAreExitTwoBeforeAnyRun) {
  // Edits one line of a shipped reproduction, runs it, and expects status 2 with `message` at
  // that line, no mention of an option nobody gave, and no --out directory made.
  auto expect_refused = [](const char* name, const std::string& from, const std::string& to, const char* file,
                           const std::string& col_and_message) {
    SCOPED_TRACE(name);
    std::string where;
    const std::string path = edited_reproduction(name, from, to, file, where);
    const std::string d = fresh_dir(std::string("rep-bad-") + file);
    const Outcome o = run("reproduce " + path + " --out " + d + " --jobs 1");
    EXPECT_EQ(o.status, 2) << o.output;
    EXPECT_NE(o.output.find(where + col_and_message), std::string::npos) << o.output;
    EXPECT_EQ(o.output.find("--metric"), std::string::npos) << o.output;
    EXPECT_EQ(o.output.find("--baseline"), std::string::npos) << o.output;
    EXPECT_FALSE(std::filesystem::exists(d));
  };
  expect_refused("smt-corun-sysbench", "metric: bm.cpu.throughput", "metric: bm.cpu.throughptu", "repro-metric.yaml",
                 "9: metric: no run of the scenario gives metric 'bm.cpu.throughptu' (under bm.cpu the runs give: "
                 "bm.cpu.blocked_pct,");
  expect_refused("credit2-affinity", "baseline: {column: no-affinity}", "baseline: {column: no-afinity}",
                 "repro-column.yaml",
                 "20: baseline.column: 'no-afinity' is not a column of the scenario (columns: no-affinity, pinning, "
                 "numa-scheduling)");
}

TEST(CliReproduce, DefaultDirectoryIsPerBuildAndScenarioSoOtherSetsStartAfresh) {
  // Without --out, the records go under vcpusim-reproduce/NAME/BUILD-HASH in the working
  // directory: a second run with other --set values neither fails nor mixes with the first, and
  // the same command again resumes (nothing left to run).
  const std::string cwd = fresh_dir("repro-cwd");
  auto in_cwd = [&](const std::string& args) { return shell("mkdir -p " + cwd + " && cd " + cwd + " && timeout 120 " + binary() + " " + args); };
  const std::string a = "reproduce smt-corun-sysbench --set duration=2s --set repetitions=1";
  const std::string b = "reproduce smt-corun-sysbench --set duration=3s --set repetitions=1";
  ASSERT_EQ(in_cwd(a).status, 0);
  const Outcome second = in_cwd(b);
  ASSERT_EQ(second.status, 0) << second.output;
  const Outcome again = in_cwd(a);
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_NE(again.output.find(" records written, 3 already present, 0 left"), std::string::npos) << again.output;
  std::size_t dirs = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(cwd) / "vcpusim-reproduce" / "smt-corun-sysbench"))
    dirs += e.is_directory() ? 1 : 0;
  EXPECT_EQ(dirs, 2u);
}

TEST(CliShard, ShardsPartitionTheSweepExactly) {
  const std::string f = write_temp("shard.yaml", kSweep), whole = fresh_dir("whole");
  ASSERT_EQ(run("sweep " + f + " --out " + whole).status, 0);
  const std::string all = canonical_records(whole);
  for (int n : {1, 2, 3, 5}) {
    std::string joined;
    std::size_t lines = 0;
    std::vector<std::string> dirs;
    for (int k = 1; k <= n; ++k) {
      const std::string d = fresh_dir("shard" + std::to_string(n) + "_" + std::to_string(k));
      ASSERT_EQ(run("sweep " + f + " --out " + d + " --shard " + std::to_string(k) + "/" + std::to_string(n)).status, 0);
      lines += count_lines(d + "/records.jsonl");
      dirs.push_back(d);
    }
    EXPECT_EQ(lines, 12u) << n << " shards: pairwise disjoint and together whole";
    const std::string out = fresh_dir("merged" + std::to_string(n));
    std::string args;
    for (const auto& d : dirs) args += " " + d;
    const Outcome m = run("merge" + args + " --out " + out);
    EXPECT_EQ(m.status, 0) << m.output;
    EXPECT_EQ(canonical_records(out), all) << n << " shards";
  }
  EXPECT_EQ(run("sweep " + f + " --out " + fresh_dir("bad") + " --shard 4/3").status, 2);
  EXPECT_EQ(run("sweep " + f + " --out " + fresh_dir("bad") + " --shard 0/3").status, 2);
}

// A shard is K/N in digits: 1/-2 was read as shard 1 of 2^32 - 2 and ran one task of the sweep,
// exit 0; ' 1/2' and '+1/2' were read leniently.
TEST(CliShard, AShardThatIsNotDigitsIsRefusedWithTheOption) {
  const std::string f = write_temp("shard-digits.yaml", kSweep);
  for (const char* shard : {"1/-2", "-1/2", "+1/2", "1/ 2", "1/2 "}) {
    const Outcome o = run("sweep " + f + " --out " + fresh_dir("shard-digits") + " --shard '" + shard + "'");
    EXPECT_EQ(o.status, 2) << shard << ": " << o.output;
    EXPECT_NE(o.output.find("--shard: '" + std::string(shard) + "' is not K/N with 1 <= K <= N"), std::string::npos)
        << shard << ": " << o.output;
  }
  EXPECT_EQ(run("sweep " + f + " --out " + fresh_dir("shard-digits") + " --shard 01/02 --max-records 1").status, 0);
}

// The records file in an output directory is read (to resume, or to keep in a merge) and then
// written: a FIFO there blocked sweep and merge for ever on opening it. (A hang here is cut at
// 10 s and fails as status 124.)
TEST(CliShard, AnOutDirWhoseRecordsFileIsAFifoIsRefusedWithTheOption) {
  const std::string f = write_temp("fifo.yaml", kSweep), a = fresh_dir("fifo-a");
  ASSERT_EQ(run("sweep " + f + " --out " + a + " --max-records 1").status, 0);
  for (const std::string& cmd : {"sweep " + f + " --max-records 1 --out ", "merge " + a + " --out "}) {
    const std::string d = fresh_dir("fifo-out");
    ASSERT_EQ(shell("mkdir -p " + d + " && mkfifo " + d + "/records.jsonl").status, 0);
    const Outcome o = shell("timeout 10 " + binary() + " " + cmd + d);
    EXPECT_EQ(o.status, 2) << cmd << o.output;
    EXPECT_NE(o.output.find("--out: '" + d + "' holds '" + d + "/records.jsonl', which is not a regular file"),
              std::string::npos)
        << cmd << o.output;
  }
}

// A records file that is there but may not be read was read as no records: compare said "no
// records to compare (an empty file ...)", and a sweep's resume took it for a fresh start. Each
// names the file and the system's reason. Root reads any file through CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH, so as root the reading runs with both dropped from its bounding set
// (setpriv, util-linux): a file of mode 000 is then closed to its owner too.
TEST(CliSweep, ARecordsFileThatMayNotBeReadSaysSo) {
  const std::string f = write_temp("unreadable.yaml", kSweep), d = fresh_dir("unreadable");
  ASSERT_EQ(run("sweep " + f + " --out " + d + " --max-records 2").status, 0);
  std::filesystem::permissions(d + "/records.jsonl", std::filesystem::perms::none);
  const std::string as = ::geteuid() == 0 ? "setpriv --bounding-set=-dac_override,-dac_read_search " : "";
  ASSERT_NE(shell(as + "cat " + d + "/records.jsonl").status, 0) << "the file is closed to the test's reader";
  for (const std::string& cmd : {"compare " + d, "sweep " + f + " --out " + d + " --max-records 3"}) {
    const Outcome o = shell("timeout 120 " + as + binary() + " " + cmd);
    EXPECT_EQ(o.status, 2) << cmd << o.output;
    EXPECT_NE(o.output.find(d + "/records.jsonl: cannot open file: Permission denied"), std::string::npos) << cmd << o.output;
  }
  std::filesystem::permissions(d + "/records.jsonl", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(count_lines(d + "/records.jsonl"), 2u);
}

// A records file that cannot grow (a full disk; here a file-size limit, whose SIGXFSZ the shell
// ignores so that the write fails with EFBIG): the sweep went on, said "12 records written" and
// exited 0 over a file cut inside a record. It stops with the file named, keeping what it wrote.
TEST(CliSweep, AFailedRecordWriteStopsTheSweep) {
  const std::string f = write_temp("full.yaml", kSweep), d = fresh_dir("full");
  const Outcome o = shell("trap '' XFSZ; ulimit -f 4; timeout 120 " + binary() + " sweep " + f + " --out " + d + " --jobs 2");
  EXPECT_EQ(o.status, 1) << o.output;
  EXPECT_NE(o.output.find(d + "/records.jsonl: writing a record failed: File too large"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("records written"), std::string::npos) << o.output;
  const std::size_t kept = count_lines(d + "/records.jsonl");
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, 12u);
  // Without the limit the same command resumes and finishes the sweep.
  const Outcome resumed = run("sweep " + f + " --out " + d);
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_EQ(count_lines(d + "/records.jsonl"), 12u);
}

// A loop of symbolic links as a records input, as DIR/records.jsonl of an input or of an --out
// directory, or as a reproduction's NAME made std::filesystem throw: compare, plot, merge,
// reproduce and sweep ended in "filesystem error: ... Too many levels of symbolic links" (exit 1).
TEST(CliShard, ALoopOfSymbolicLinksAsRecordsIsRefusedNamingIt) {
  const std::string f = write_temp("loop.yaml", kSweep), a = fresh_dir("loop-a"), d = fresh_dir("loop-dir"),
                    loop = fresh_dir("loop-self");
  ASSERT_EQ(run("sweep " + f + " --out " + a + " --max-records 1").status, 0);
  ASSERT_EQ(shell("ln -s " + loop + " " + loop + " && mkdir -p " + d + " && ln -s records.jsonl " + d + "/records.jsonl").status,
            0);
  const std::string in_dir = d + "/records.jsonl";
  for (const auto& [cmd, named] : std::vector<std::pair<std::string, std::string>>{
           {"compare " + loop, loop + ": is a loop of symbolic links"},
           {"compare " + a + " " + d, in_dir + ": is a loop of symbolic links"},
           {"plot " + loop + " --x x --y y", loop + ": is a loop of symbolic links"},
           {"merge " + d + " --out " + fresh_dir("loop-m"), in_dir + ": is a loop of symbolic links"},
           {"reproduce smt-corun-sysbench --from " + d, in_dir + ": is a loop of symbolic links"},
           {"reproduce " + loop, "NAME: '" + loop + "' is a loop of symbolic links"},
           {"merge " + a + " --out " + d, "--out: '" + d + "' holds '" + in_dir + "', which is a loop of symbolic links"},
           {"sweep " + f + " --out " + d, "--out: '" + d + "' holds '" + in_dir + "', which is a loop of symbolic links"}}) {
    const Outcome o = run(cmd);
    EXPECT_EQ(o.status, 2) << cmd << ": " << o.output;
    EXPECT_NE(o.output.find(named), std::string::npos) << cmd << ": " << o.output;
  }
}

// Overlapping shards' outputs (1/2 and 1/3 share runs) were read whole by compare: the shared
// runs counted twice, so Hmeans moved and stddevs shrank. They are kept once, as merge does.
TEST(CliShard, CompareAndPlotCountARunHeldTwiceOnce) {
  const std::string f = write_temp("overlap.yaml", kSweep), a = fresh_dir("ov-a"), b = fresh_dir("ov-b"),
                    c = fresh_dir("ov-c");
  ASSERT_EQ(run("sweep " + f + " --out " + a + " --shard 1/2").status, 0);
  ASSERT_EQ(run("sweep " + f + " --out " + b + " --shard 2/2").status, 0);
  ASSERT_EQ(run("sweep " + f + " --out " + c + " --shard 1/3").status, 0);
  const Outcome whole = run("compare " + a + " " + b + " --format csv");
  const Outcome over = run("compare " + a + " " + b + " " + c + " --format csv");
  ASSERT_EQ(whole.status, 0) << whole.output;
  ASSERT_EQ(over.status, 0) << over.output;
  EXPECT_NE(over.output.find("compare: 4 duplicate record(s) dropped"), std::string::npos) << over.output;
  EXPECT_EQ(over.output.substr(over.output.find('\n') + 1), whole.output) << over.output;
}

// Two records of one key with different seeds or metrics are two different runs under one name:
// compare kept one as a duplicate (n = 1, the other's sample gone) and merge wrote 11 of 12 and
// reported no task missing.
TEST(CliShard, TwoDifferentRunsUnderOneKeyAreRefused) {
  const std::string f = write_temp("clash.yaml", kSweep), a = fresh_dir("clash-a"), m = fresh_dir("clash-m");
  ASSERT_EQ(run("sweep " + f + " --out " + a).status, 0);
  std::ifstream in(a + "/records.jsonl");
  std::string first;
  std::getline(in, first);
  const auto at = first.find("\"seed\":");
  ASSERT_NE(at, std::string::npos) << first;
  std::string edited = first;
  edited.replace(at, first.find_first_of(",}", at) - at, "\"seed\":12345");
  const std::string b = write_temp("clash-records.jsonl", edited + "\n");
  for (const std::string& cmd : {"compare " + a + " " + b, "merge " + a + " " + b + " --out " + m}) {
    const Outcome o = run(cmd);
    EXPECT_EQ(o.status, 2) << cmd << "\n" << o.output;
    EXPECT_NE(o.output.find("clash-records.jsonl:1:1: seed: the run of point"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("is also at line 1 of " + a + "/records.jsonl with another seed"), std::string::npos) << o.output;
  }
  // The same line again is one run held twice, kept once.
  const std::string same = write_temp("same-records.jsonl", first + "\n");
  const Outcome dup = run("compare " + a + " " + same);
  EXPECT_EQ(dup.status, 0) << dup.output;
  EXPECT_NE(dup.output.find("1 duplicate record(s) dropped"), std::string::npos) << dup.output;
}

// A hand-edited metric "12" or null ended compare with a JSON type error (exit 1, no file or
// line); a repetition of -1 and a seed of "x" were taken.
TEST(CliShard, RecordsWithANonNumericMetricOrRepetitionAreRefused) {
  const std::string rec = one_record("nm");
  ASSERT_FALSE(rec.empty());
  const auto edit = [&](const std::string& from, const std::string& to) {
    std::string r = rec;
    const auto at = r.find(from);
    EXPECT_NE(at, std::string::npos) << from << " in " << r;
    if (at != std::string::npos) r.replace(at, r.find_first_of(",}", at) - at, to);
    return write_temp("nm-records.jsonl", r);
  };
  const Outcome str = run("compare " + edit("\"vm.web.throughput\":", "\"vm.web.throughput\":\"12\""));
  EXPECT_EQ(str.status, 2) << str.output;
  EXPECT_NE(str.output.find("nm-records.jsonl:1:1: metrics.vm.web.throughput: \"12\" is not a number"), std::string::npos)
      << str.output;
  const Outcome huge = run("compare " + edit("\"vm.web.throughput\":", "\"vm.web.throughput\":1e308"));
  EXPECT_EQ(huge.status, 2) << huge.output;
  EXPECT_NE(huge.output.find("metrics.vm.web.throughput: 1e+308 is beyond +/-1e18"), std::string::npos) << huge.output;
  // Beyond a double: the library's "[json.exception.out_of_range.406] number overflow", no field.
  const Outcome over = run("compare " + edit("\"vm.web.throughput\":", "\"vm.web.throughput\":1e999"));
  EXPECT_EQ(over.status, 2) << over.output;
  EXPECT_NE(over.output.find("nm-records.jsonl:1:1: metrics.vm.web.throughput: '1e999' is beyond a double's range"),
            std::string::npos)
      << over.output;
  const Outcome rep = run("compare " + edit("\"repetition\":", "\"repetition\":-1"));
  EXPECT_EQ(rep.status, 2) << rep.output;
  EXPECT_NE(rep.output.find("repetition: -1 is not a repetition number"), std::string::npos) << rep.output;
  const Outcome seed = run("compare " + edit("\"seed\":", "\"seed\":\"x\""));
  EXPECT_EQ(seed.status, 2) << seed.output;
  EXPECT_NE(seed.output.find("nm-records.jsonl:1:1: seed: \"x\" is not a seed"), std::string::npos) << seed.output;
  // A key given twice: the parser kept the last value, silently.
  const Outcome twice = run("compare " + edit("\"repetition\":", "\"repetition\":0,\"repetition\":5"));
  EXPECT_EQ(twice.status, 2) << twice.output;
  EXPECT_NE(twice.output.find("nm-records.jsonl:1:1: not a sweep record: the key 'repetition' appears twice in one object"),
            std::string::npos)
      << twice.output;
}

// Record fields of the wrong shape ended compare, plot and merge with a JSON error (exit 1, no
// file or line): a number as scenario_hash, a point that is no object or lacks the swept field.
TEST(CliShard, RecordsWhoseNamesOrPointHaveTheWrongShapeAreRefused) {
  const std::string f = write_temp("sh.yaml", kSweep), a = fresh_dir("sh-a");
  ASSERT_EQ(run("sweep " + f + " --out " + a + " --max-records 2").status, 0);
  std::ifstream in(a + "/records.jsonl");
  const std::string recs((std::istreambuf_iterator<char>(in)), {});
  const auto second_line = recs.find('\n') + 1;
  const auto edit = [&](const std::string& from, const std::string& to, std::size_t after = 0) {
    std::string r = recs;
    const auto at = r.find(from, after);
    EXPECT_NE(at, std::string::npos) << from << " in " << r;
    if (at != std::string::npos) r.replace(at, from.size(), to);
    return write_temp("sh-" + std::to_string(after) + to.substr(1, 5) + ".jsonl", r);
  };
  const std::string point = recs.substr(recs.find("\"point\":"), recs.find('}', recs.find("\"point\":")) + 1 - recs.find("\"point\":"));
  const struct {
    std::string file, message;
  } cases[] = {
      {edit("\"scenario_hash\":\"", "\"scenario_hash\":5,\"x\":\""), ".jsonl:1:1: scenario_hash: 5 is not a string"},
      {edit(point, "\"point\":\"x\""), ".jsonl:1:1: point: \"x\" is not an object of swept fields"},
      {edit(point, "\"point\":{}", second_line), ".jsonl:2:1: point: swept fields () differ from line 1's (vms.web.count)"},
  };
  for (const auto& c : cases)
    for (const char* cmd : {"compare ", "plot --x vms.web.count --y vm.web.throughput --out sh.png "}) {
      const Outcome o = run(cmd + c.file);
      EXPECT_EQ(o.status, 2) << cmd << o.output;
      EXPECT_NE(o.output.find(c.message), std::string::npos) << cmd << o.output;
    }
}

// A hand-made record nested 200,000 deep was parsed, then overflowed the stack where it was
// written out again: merge (its resolved scenario) and compare (its point) ended in SIGSEGV.
TEST(CliShard, ARecordNestedDeeperThanAnySweepWritesIsRefused) {
  std::string rec = one_record("deep");
  ASSERT_FALSE(rec.empty());
  const auto at = rec.find("\"point\":{");
  ASSERT_NE(at, std::string::npos) << rec;
  rec.insert(at + 9, "\"deep\":" + std::string(200000, '[') + std::string(200000, ']') + ",");
  const std::string path = write_temp("deep-records.jsonl", rec);
  for (const std::string& cmd : {"compare " + path, "merge " + path + " --out " + fresh_dir("deep-m")}) {
    const Outcome o = run(cmd);
    EXPECT_EQ(o.status, 2) << cmd << "\n" << o.output.substr(0, 300);
    EXPECT_NE(o.output.find(path + ":1:1: not a sweep record: nested deeper than 100 levels"), std::string::npos)
        << cmd << "\n" << o.output.substr(0, 300);
  }
}

// A copied or edited records file whose complete last record lacks its newline: the resume
// counted that record as done and then cut it as torn, so one run was lost ("0 left").
TEST(CliSweep, ACompleteLastRecordWithoutItsNewlineIsKeptOnResume) {
  const std::string f = write_temp("nl.yaml", kSweep), full = fresh_dir("nl-full"), cut = fresh_dir("nl-cut");
  ASSERT_EQ(run("sweep " + f + " --out " + full).status, 0);
  ASSERT_EQ(run("sweep " + f + " --out " + cut + " --max-records 5").status, 0);
  const std::string path = cut + "/records.jsonl";
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);
  const Outcome o = run("sweep " + f + " --out " + cut);
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_NE(o.output.find("7 records written, 5 already present"), std::string::npos) << o.output;
  EXPECT_EQ(count_lines(path), 12u);
  EXPECT_EQ(canonical_records(cut), canonical_records(full));
}

// compare and plot placed columns by column_index: a record of noHT carrying HT's index hid one
// of the two columns from the table, and a string index ended compare with a JSON type error.
// merge took such records (exit 0) into a file every reader then refused, naming the merged file,
// not the input.
TEST(CliShard, ColumnIndicesThatDisagreeWithTheirLabelsAreRefused) {
  const std::string f = write_temp("ci.yaml", kSweep), a = fresh_dir("ci-a");
  ASSERT_EQ(run("sweep " + f + " --out " + a).status, 0);
  std::ifstream in(a + "/records.jsonl");
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  const auto edited = [&](const std::string& column, const std::string& index) {
    std::string all;
    bool done = false;
    for (std::string l : lines) {
      const auto at = l.find("\"column_index\":");
      if (!done && l.find("\"column\":\"" + column + "\"") != std::string::npos && at != std::string::npos) {
        l.replace(at, l.find_first_of(",}", at) - at, "\"column_index\":" + index);
        done = true;
      }
      all += l + "\n";
    }
    EXPECT_TRUE(done) << column;
    return write_temp("ci-records.jsonl", all);
  };
  const std::string moved = edited("noHT", "0");
  for (const std::string& cmd : std::vector<std::string>{"compare ", "plot --x vms.web.count --y vm.web.throughput --out ci.png ",
                                                         "merge --out " + fresh_dir("ci-m") + " "}) {
    const Outcome o = run(cmd + moved);
    EXPECT_EQ(o.status, 2) << cmd << o.output;
    // Both records named at their lines: the edited noHT one and the first HT one before it.
    EXPECT_NE(o.output.find("ci-records.jsonl:" + line_with(lines, "\"column\":\"noHT\"") +
                            ":1: column_index: column_index 0 is column 'noHT' here and 'HT' at line " +
                            line_with(lines, "\"column\":\"HT\"") + " of this file; one sweep gives each column its own index"),
              std::string::npos)
        << cmd << o.output;
  }
  const Outcome str = run("compare " + edited("noHT", "\"1\""));
  EXPECT_EQ(str.status, 2) << str.output;
  EXPECT_NE(str.output.find("column_index: \"1\" is not an index"), std::string::npos) << str.output;
  const Outcome two = run("compare " + edited("noHT", "7"));
  EXPECT_EQ(two.status, 2) << two.output;
  EXPECT_NE(two.output.find("ci-records.jsonl:" + line_with(lines, "\"column\":\"noHT\"", 1) +
                            ":1: column_index: column 'noHT' has column_index 1 here and 7 at line " +
                            line_with(lines, "\"column\":\"noHT\"") + " of this file; one sweep gives each column one index"),
            std::string::npos)
      << two.output;
  EXPECT_EQ(run("compare " + a).status, 0);
}

// compare lists a table's rows by point_index: a record of point 6 carrying point 1's index made
// the rows of 6 vanish from the table, exit 0 (plot drew a line short of its last x); merge took
// it, exit 0.
TEST(CliShard, PointIndicesThatDisagreeWithTheirPointsAreRefused) {
  const std::string f = write_temp("pi.yaml", kSweep), a = fresh_dir("pi-a");
  ASSERT_EQ(run("sweep " + f + " --out " + a).status, 0);
  std::ifstream in(a + "/records.jsonl");
  std::string all;
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) {
    lines.push_back(l);
    const auto at = l.find("\"point_index\":");
    if (l.find("\"point\":{\"vms.web.count\":6}") != std::string::npos && at != std::string::npos)
      l.replace(at, l.find_first_of(",}", at) - at, "\"point_index\":0");
    all += l + "\n";
  }
  const std::string moved = write_temp("pi-records.jsonl", all);
  for (const std::string& cmd : std::vector<std::string>{"compare ", "plot --x vms.web.count --y vm.web.throughput --out pi.png ",
                                                         "merge --out " + fresh_dir("pi-m") + " "}) {
    const Outcome o = run(cmd + moved);
    EXPECT_EQ(o.status, 2) << cmd << o.output;
    EXPECT_NE(o.output.find("pi-records.jsonl:" + line_with(lines, "\"point\":{\"vms.web.count\":6}") +
                            ":1: point_index: point_index 0 is point {vms.web.count=6} here and {vms.web.count=1} at line " +
                            line_with(lines, "\"point\":{\"vms.web.count\":1}") + " of this file"),
              std::string::npos)
        << cmd << o.output;
  }
  EXPECT_EQ(run("compare " + a).status, 0);
}

// A resume counted a record as finished whatever its column_index and point_index said: a record
// of noHT carrying HT's index, or of point 1 carrying point 6's, was skipped, exit 0, and the
// resumed file was one compare, plot and merge refused. A record whose index is not the one the
// scenario gives its label (every HT record with noHT's index, which compare alone cannot tell)
// made the resume append records that then disagreed with it.
TEST(CliShard, AResumeRefusesIndicesThatDisagreeWithTheirLabels) {
  const std::string f = write_temp("ri.yaml", kSweep), a = fresh_dir("ri-a");
  ASSERT_EQ(run("sweep " + f + " --out " + a + " --max-records 9").status, 0);  // 6 HT, 3 noHT
  std::ifstream in(a + "/records.jsonl");
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  const auto resume_edited = [&](const std::string& column, const std::string& field, const std::string& index) {
    const std::string d = fresh_dir("ri-" + column + "-" + field + "-" + index);
    std::filesystem::create_directories(d);
    std::ofstream out(d + "/records.jsonl");
    bool done = false;
    for (std::string l : lines) {
      const auto at = l.find("\"" + field + "\":");
      if (!done && l.find("\"column\":\"" + column + "\"") != std::string::npos && at != std::string::npos) {
        l.replace(at, l.find_first_of(",}", at) - at, "\"" + field + "\":" + index);
        done = true;
      }
      out << l << "\n";
    }
    out.close();
    EXPECT_TRUE(done) << column << " " << field;
    const Outcome o = run("sweep " + f + " --out " + d);
    EXPECT_EQ(count_lines(d + "/records.jsonl"), 9u) << o.output;  // nothing appended
    return o;
  };
  const Outcome moved = resume_edited("noHT", "column_index", "0");
  EXPECT_EQ(moved.status, 2) << moved.output;
  const std::string noht = line_with(lines, "\"column\":\"noHT\""), ht = line_with(lines, "\"column\":\"HT\"");
  EXPECT_NE(moved.output.find("records.jsonl:" + noht + ":1: column_index: column_index 0 is column 'noHT' here and 'HT' in " + f +
                              "; one sweep gives each column its own index"),
            std::string::npos)
      << moved.output;
  const Outcome swapped = resume_edited("HT", "column_index", "1");
  EXPECT_EQ(swapped.status, 2) << swapped.output;
  EXPECT_NE(swapped.output.find("records.jsonl:" + ht + ":1: column_index: column_index 1 is column 'HT' here and 'noHT' in "),
            std::string::npos)
      << swapped.output;
  const Outcome point = resume_edited("noHT", "point_index", "2");
  EXPECT_EQ(point.status, 2) << point.output;
  EXPECT_NE(point.output.find("records.jsonl:" + noht + ":1: point_index: point_index 2 is point {vms.web.count=1} here and "
                              "{vms.web.count=6} in "),
            std::string::npos)
      << point.output;
  const Outcome fine = run("sweep " + f + " --out " + a);
  EXPECT_EQ(fine.status, 0) << fine.output;
  EXPECT_NE(fine.output.find("3 records written, 9 already present"), std::string::npos) << fine.output;
}

// A scenario without `name:` is named after its file, and its hash is of the document alone: shards
// run from copies of one file under two names are one sweep whose records carry two names, which
// merge and compare take as one (records differing only in `scenario` are not refused).
TEST(CliShard, ShardsRunFromCopiesOfOneFileUnderTwoNamesAreOneSweep) {
  const std::string doc = kSweep.substr(kSweep.find('\n') + 1);  // without "name: sw"
  ASSERT_EQ(doc.rfind("duration:", 0), 0u) << doc;
  const std::string l = write_temp("copy-left.yaml", doc), r = write_temp("copy-right.yaml", doc);
  const std::string a = fresh_dir("copy-a"), b = fresh_dir("copy-b"), m = fresh_dir("copy-m");
  ASSERT_EQ(run("sweep " + l + " --out " + a + " --shard 1/2").status, 0);
  ASSERT_EQ(run("sweep " + r + " --out " + b + " --shard 2/2").status, 0);
  EXPECT_NE(canonical_records(a).find("\"scenario\":\"copy-left\""), std::string::npos);
  EXPECT_NE(canonical_records(b).find("\"scenario\":\"copy-right\""), std::string::npos);
  const Outcome merged = run("merge --out " + m + " " + a + " " + b);
  EXPECT_EQ(merged.status, 0) << merged.output;
  EXPECT_NE(merged.output.find("0 of 12 tasks missing"), std::string::npos) << merged.output;
  const Outcome table = run("compare " + m);
  EXPECT_EQ(table.status, 0) << table.output;
  EXPECT_EQ(table.output.rfind("# copy-left: ", 0), 0u) << table.output;
  const Outcome resumed = run("sweep " + r + " --out " + a);
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("6 records written, 6 already present"), std::string::npos) << resumed.output;
}

// A run repeated with its point written {"vms.web.count":3.0} (a tool that rewrites every number
// as a float) went into the row of 3 a second time: compare counted its sample twice, exit 0,
// and merge kept both. It is the same run, kept once, as a line repeated as it was.
TEST(CliShard, ARunRepeatedWithItsPointSpeltAnotherWayIsCountedOnce) {
  const std::string f = write_temp("ps.yaml", kSweep), a = fresh_dir("ps-a"), m = fresh_dir("ps-m");
  ASSERT_EQ(run("sweep " + f + " --out " + a).status, 0);
  std::ifstream in(a + "/records.jsonl");
  const std::string point = "\"point\":{\"vms.web.count\":3}";
  std::string line;
  while (std::getline(in, line) && line.find(point) == std::string::npos) {
  }
  const auto at = line.find(point);
  ASSERT_NE(at, std::string::npos);
  line.replace(at, point.size(), "\"point\":{\"vms.web.count\":3.0}");
  const std::string b = write_temp("ps-records.jsonl", line + "\n");
  const Outcome whole = run("compare " + a + " --format csv");
  const Outcome again = run("compare " + a + " " + b + " --format csv");
  ASSERT_EQ(whole.status, 0) << whole.output;
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_NE(again.output.find("compare: 1 duplicate record(s) dropped"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.substr(again.output.find('\n') + 1), whole.output) << again.output;
  const Outcome merged = run("merge " + a + " " + b + " --out " + m);
  EXPECT_EQ(merged.status, 0) << merged.output;
  EXPECT_EQ(count_lines(m + "/records.jsonl"), 12u) << merged.output;
}

// read_records holds one file's points to one set of swept fields; across two files a point
// without the field a table is by ended compare and plot with "key 'vms.web.count' not found"
// (exit 1), and merge wrote a file that every reader then refused.
TEST(CliShard, OutputsWhosePointsNameDifferentSweptFieldsAreRefused) {
  const std::string f = write_temp("sf.yaml", kSweep), a = fresh_dir("sf-a"), m = fresh_dir("sf-m");
  ASSERT_EQ(run("sweep " + f + " --out " + a).status, 0);
  std::ifstream in(a + "/records.jsonl");
  std::string all;
  for (std::string l; std::getline(in, l);) {
    const auto at = l.find("\"point\":{\"vms.web.count\":");
    if (at != std::string::npos) l.replace(at, 25, "\"point\":{\"x\":");
    all += l + "\n";
  }
  const std::string b = write_temp("sf-records.jsonl", all);
  for (const std::string& cmd : {"compare " + a + " " + b + " --by vms.web.count",
                                 "plot " + a + " " + b + " --x vms.web.count --y vm.web.throughput --out sf.png",
                                 "merge " + a + " " + b + " --out " + m}) {
    const Outcome o = run(cmd);
    EXPECT_EQ(o.status, 2) << cmd << "\n" << o.output;
    EXPECT_NE(o.output.find("sf-records.jsonl:1:1: point: swept fields (x) differ from those at line 1 of " + a +
                            "/records.jsonl (vms.web.count): one sweep's points all name the same fields"),
              std::string::npos)
        << cmd << "\n" << o.output;
  }
}

// merge sized its list of missing tasks from a record's tasks_total: 10^9 in a hand-edited file
// allocated gigabytes and ended in std::bad_alloc (exit 1).
TEST(CliShard, MergeRefusesATaskCountNoSweepHas) {
  std::string rec = one_record("tt");
  ASSERT_FALSE(rec.empty());
  const auto at = rec.find("\"tasks_total\":");
  ASSERT_NE(at, std::string::npos) << rec;
  rec.replace(at, rec.find_first_of(",}", at) - at, "\"tasks_total\":1000000000");
  const std::string edited = write_temp("tt-records.jsonl", rec);
  const Outcome o = run("merge " + edited + " --out " + fresh_dir("tt-m"));
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find("tasks_total: 1000000000 is not a task count of a sweep (an integer from 0 to 100000)"),
            std::string::npos)
      << o.output;
}

// A task lies inside its sweep: a hand-edited task_index of 100 (of 12) made merge report
// every task missing beside the records it wrote (exit 4), and a tasks_total of 0 hid them all
// (exit 0).
TEST(CliShard, MergeRefusesATaskIndexNotBelowItsTaskCount) {
  const std::string rec = one_record("ti");
  ASSERT_FALSE(rec.empty());
  for (const auto& [field, value, message] :
       {std::array<std::string, 3>{"task_index", "100", "task_index: 100 is not below the record's tasks_total (12)"},
        std::array<std::string, 3>{"tasks_total", "0", "task_index: 0 is not below the record's tasks_total (0)"}}) {
    std::string edited = rec;
    const auto at = edited.find("\"" + field + "\":");
    ASSERT_NE(at, std::string::npos) << edited;
    edited.replace(at, edited.find_first_of(",}", at) - at, "\"" + field + "\":" + value);
    const std::string path = write_temp("ti-records.jsonl", edited);
    const Outcome o = run("merge " + path + " --out " + fresh_dir("ti-m"));
    EXPECT_EQ(o.status, 2) << o.output;
    EXPECT_NE(o.output.find(path + ":1:1: " + message), std::string::npos) << o.output;
  }
}

TEST(CliShard, MergeReportsMissingDuplicateAndForeignRecords) {
  const std::string f = write_temp("shard2.yaml", kSweep), a = fresh_dir("ma"), b = fresh_dir("mb");
  ASSERT_EQ(run("sweep " + f + " --out " + a + " --shard 1/2").status, 0);
  ASSERT_EQ(run("sweep " + f + " --out " + b + " --shard 2/2 --max-records 4").status, 0);
  const Outcome missing = run("merge " + a + " " + b + " --out " + fresh_dir("m1"));
  EXPECT_EQ(missing.status, 4) << missing.output;
  EXPECT_NE(missing.output.find("2 of 12 tasks missing"), std::string::npos) << missing.output;
  const Outcome dup = run("merge " + a + " " + a + " --out " + fresh_dir("m2"));
  EXPECT_NE(dup.output.find("6 duplicate(s) dropped"), std::string::npos) << dup.output;
  std::string other = kSweep;
  other.replace(other.find("duration: 300ms"), 15, "duration: 400ms");
  const std::string g = write_temp("other.yaml", other), c = fresh_dir("mc");
  ASSERT_EQ(run("sweep " + g + " --out " + c + " --max-records 1").status, 0);
  const Outcome foreign = run("merge " + a + " " + c + " --out " + fresh_dir("m3"));
  EXPECT_EQ(foreign.status, 2) << foreign.output;
  EXPECT_NE(foreign.output.find("different scenario"), std::string::npos) << foreign.output;
}

// merge replaced --out's records.jsonl whole: another sweep's records there were lost without a
// word. They are read as one more input: a foreign sweep's are refused, the same sweep's kept.
TEST(CliShard, MergeKeepsOrRefusesTheRecordsAlreadyInItsOutput) {
  const std::string f = write_temp("mo.yaml", kSweep), a = fresh_dir("mo-a"), b = fresh_dir("mo-b");
  ASSERT_EQ(run("sweep " + f + " --out " + a + " --shard 1/2").status, 0);
  ASSERT_EQ(run("sweep " + f + " --out " + b + " --shard 2/2").status, 0);
  std::string other = kSweep;
  other.replace(other.find("duration: 300ms"), 15, "duration: 400ms");
  const std::string victim = fresh_dir("mo-victim");
  ASSERT_EQ(run("sweep " + write_temp("mo-other.yaml", other) + " --out " + victim + " --max-records 2").status, 0);
  const Outcome foreign = run("merge " + a + " " + b + " --out " + victim);
  EXPECT_EQ(foreign.status, 2) << foreign.output;
  EXPECT_NE(foreign.output.find(victim + "/records.jsonl:1:1: scenario_hash: a record of a different scenario than the record at "
                                "line 1 of " + a + "/records.jsonl"),
            std::string::npos)
      << foreign.output;
  EXPECT_EQ(count_lines(victim + "/records.jsonl"), 2u) << "the other sweep's records are kept";
  // Into a directory holding shard 1: shard 2 is added to it; and into an input, in place.
  const std::string into = fresh_dir("mo-into");
  ASSERT_EQ(run("merge " + a + " --out " + into).status, 4);
  const Outcome kept = run("merge " + b + " --out " + into);
  EXPECT_EQ(kept.status, 0) << kept.output;
  EXPECT_EQ(count_lines(into + "/records.jsonl"), 12u);
  const Outcome in_place = run("merge " + a + " " + b + " --out " + a);
  EXPECT_EQ(in_place.status, 0) << in_place.output;
  EXPECT_NE(in_place.output.find("0 duplicate(s) dropped"), std::string::npos) << in_place.output;
  EXPECT_EQ(count_lines(a + "/records.jsonl"), 12u);
}

// --shard '' was read as no --shard and ran the whole sweep, as --max-records 0 did (0 is the
// runner's "no limit", which leaving the flag out says): both are exit 2 before any run.
// A shard past the sweep's 12 runs runs nothing; merging only it wrote an empty records.jsonl
// and said "0 of 0 tasks missing", exit 0, where compare of the same is exit 2.
TEST(CliShard, MergeOfShardsThatRanNothingIsRefused) {
  const std::string f = write_temp("shard-none.yaml", kSweep), d = fresh_dir("shard-none"), m = fresh_dir("shard-none-m");
  ASSERT_EQ(run("sweep " + f + " --out " + d + " --shard 13/13").status, 0);
  const Outcome o = run("merge " + d + " --out " + m);
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find("no records to merge"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(m + "/records.jsonl"));
}

TEST(CliShard, EmptyShardAndZeroMaxRecordsAreRefused) {
  const std::string f = write_temp("shard-empty.yaml", kSweep);
  const struct {
    std::string flag, message;
  } bad[] = {{"--shard ''", "--shard: is empty"}, {"--max-records 0", "--max-records: '0' is not a record count: an integer from 1 to"}};
  for (const auto& b : bad) {
    const std::string d = fresh_dir("shard-empty");
    const Outcome o = run("sweep " + f + " --out " + d + " " + b.flag);
    EXPECT_EQ(o.status, 2) << b.flag << ": " << o.output;
    EXPECT_NE(o.output.find(b.message), std::string::npos) << b.flag << ": " << o.output;
    EXPECT_FALSE(std::filesystem::exists(d + "/records.jsonl")) << b.flag;
  }
}

// A plain value that std::from_chars reads as a number but JSON cannot hold ("nan", "inf") was
// turned into a NaN or an infinity, which records dump as null: a sweep `name: [nan, inf]` ran two
// points that both read {"name": null}, with one seed, and compare refused the sweep's own
// records ("point {name=null} has point_index 1 here and 0"), exit 2 after the runs.
// Sweeps `name: [a, b]` and expects two points {"name": "a"} and {"name": "b"} (text), each its
// own seed, as resolved has them, and compare showing both rows.
void expect_names_kept_as_text(const std::string& tag, const std::string& a, const std::string& b) {
  const std::string f = write_temp(tag + ".yaml", with("duration: 200ms", "duration: 20ms") + "sweep:\n  name: [" + a + ", " + b + "]\n");
  const std::string d = fresh_dir(tag);
  const Outcome s = run("sweep " + f + " --out " + d);
  ASSERT_EQ(s.status, 0) << s.output;
  std::ifstream in(d + "/records.jsonl");
  std::map<std::string, std::uint64_t> seed_of;  // point -> seed
  std::string line;
  while (std::getline(in, line)) {
    const auto r = nlohmann::json::parse(line);
    seed_of[r.at("point").dump()] = r.at("seed").get<std::uint64_t>();
    EXPECT_EQ(r.at("resolved").at("name"), r.at("point").at("name")) << line;
  }
  ASSERT_EQ(seed_of.size(), 2u);
  EXPECT_EQ(seed_of.count(R"({"name":")" + a + R"("})"), 1u);
  EXPECT_EQ(seed_of.count(R"({"name":")" + b + R"("})"), 1u);
  EXPECT_NE(seed_of.begin()->second, std::next(seed_of.begin())->second);
  const Outcome c = run("compare " + d + " --format csv");
  EXPECT_EQ(c.status, 0) << c.output;
  EXPECT_NE(c.output.find(a), std::string::npos) << c.output;
  EXPECT_NE(c.output.find(b), std::string::npos) << c.output;
}

TEST(CliSweep, ValuesSpeltNanOrInfAreTextWithTheirOwnPointsAndSeeds) {
  expect_names_kept_as_text("nan-inf", "nan", "inf");
}

// Digits past 64 bits were read as a double: 99999999999999999999 and 99999999999999999998 were
// both 1e+20, one point and one seed for two names.
TEST(CliSweep, DigitsPastSixtyFourBitsAreTextWithTheirOwnPointsAndSeeds) {
  expect_names_kept_as_text("long-digits", "99999999999999999999", "99999999999999999998");
}

// A last line without its newline that is JSON but not a record (a column 7, a repetition "1")
// was taken for a torn record and skipped, yet kept: the record already read stayed in the list,
// and compare, plot, merge and a resume ended in "type must be string, but is number" (exit 1,
// no file, line or field). A torn record is never JSON, so such a line is refused at its field.
TEST(CliShard, AWrongShapedLastRecordWithoutItsNewlineIsRefusedNamingItsField) {
  const std::string rec = one_record("ws");
  ASSERT_FALSE(rec.empty());
  const auto edit = [&](const std::string& key, const std::string& value) {
    std::string r = rec.substr(0, rec.size() - 1);  // without its newline
    const auto at = r.find("\"" + key + "\":");
    EXPECT_NE(at, std::string::npos) << key << " in " << r;
    const auto from = at + key.size() + 3;
    r.replace(from, r.find_first_of(",}", from) - from, value);
    return write_temp("ws-" + key + ".jsonl", rec + r);  // a good line, then the edited one
  };
  const struct {
    std::string file, message;
  } cases[] = {
      {edit("column", "7"), ".jsonl:2:1: column: 7 is not a column label (a string, or null)"},
      {edit("repetition", "\"1\""), ".jsonl:2:1: repetition: \"1\" is not a repetition number"},
  };
  for (const auto& c : cases) {
    const std::string d = fresh_dir("ws-resume");
    std::filesystem::create_directories(d);
    std::filesystem::copy_file(c.file, d + "/records.jsonl");
    for (const std::string& cmd : {"compare " + c.file, "merge " + c.file + " --out " + fresh_dir("ws-m"),
                                   "plot " + c.file + " --x vms.web.count --y vm.web.throughput --out " + (scratch() / "ws.png").string(),
                                   "sweep " + write_temp("ws.yaml", kSweep) + " --out " + d}) {
      const Outcome o = run(cmd);
      EXPECT_EQ(o.status, 2) << cmd << "\n" << o.output;
      EXPECT_NE(o.output.find(c.message), std::string::npos) << cmd << "\n" << o.output;
    }
  }
}

// A thread the system would not start (--jobs 100000 past the limits on threads or address
// space) threw out of the pool's set-up past the threads already started, whose destructors
// called std::terminate: "terminate called without an active exception", exit 134. Then it was
// exit 2 naming --jobs, but whether the started threads had finished every run by then depended
// on timing. Now the sweep runs on the threads it got plus the calling one, says so in one line,
// and finishes. Here 1 GB stacks under a 4 GB address-space limit stop the pool after a few threads.
TEST(CliSweep, MoreJobsThanTheSystemCanStartRunsWithTheThreadsItStarted) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves more address space at start-up than the limit allows";
#endif
  const std::string f = write_temp("jobs.yaml", kSweep), d = fresh_dir("jobs");
  const Outcome o = shell("ulimit -s 1000000; ulimit -v 4000000; timeout 120 " + binary() + " sweep " + f + " --out " + d + " --jobs 12");
  EXPECT_EQ(o.status, 0) << o.output;
  EXPECT_NE(o.output.find("vcpusim: --jobs 12: the system started only "), std::string::npos) << o.output;
  EXPECT_NE(o.output.find(" at once\n"), std::string::npos) << o.output;
  EXPECT_EQ(count_lines(d + "/records.jsonl"), 12u);
}

// key_of reads a repetition as 32 bits: 4294967296 was repetition 0, so compare took that line
// for a second run of repetition 0 ("repetition 0 is also in ... with another seed"), or, with
// its seed and metrics, dropped it as a duplicate. And merge named a bad task_index or
// tasks_total by its file alone, where every other record field is refused at its line, while
// compare and plot took them. Each is now refused at its line by every reader.
TEST(CliShard, ARepetitionOrTaskNumberNoSweepHasIsRefusedAtItsLineByEveryReader) {
  const std::string rec = one_record("rt");
  ASSERT_FALSE(rec.empty());
  const struct {
    std::string field, value, message;
  } cases[] = {
      {"repetition", "4294967296", "repetition: 4294967296 is not a repetition number (0 to 9999: a sweep runs at most 10000 repetitions)"},
      {"repetition", "10000", "repetition: 10000 is not a repetition number"},
      {"tasks_total", "1000000000", "tasks_total: 1000000000 is not a task count of a sweep (an integer from 0 to 100000)"},
      {"task_index", "100", "task_index: 100 is not below the record's tasks_total (12)"},
  };
  for (const auto& c : cases) {
    std::string edited = rec;
    const auto at = edited.find("\"" + c.field + "\":");
    ASSERT_NE(at, std::string::npos) << edited;
    edited.replace(at, edited.find_first_of(",}", at) - at, "\"" + c.field + "\":" + c.value);
    const std::string path = write_temp("rt-records.jsonl", rec + edited);
    for (const std::string& cmd : {"compare " + path, "merge " + path + " --out " + fresh_dir("rt-m"),
                                   "plot " + path + " --x vms.web.count --y vm.web.throughput --out " + (scratch() / "rt.png").string()}) {
      const Outcome o = run(cmd);
      EXPECT_EQ(o.status, 2) << cmd << "\n" << o.output;
      EXPECT_NE(o.output.find(path + ":2:1: " + c.message), std::string::npos) << cmd << "\n" << o.output;
    }
  }
}

// Records refused a control character in scenario and column, but not in the point, whose fields
// and values tables print as well: a value "x\n1" split every compare row of it in two (text,
// markdown and CSV), exit 0.
TEST(CliShard, APointHoldingAControlCharacterIsRefusedAtItsLine) {
  const std::string rec = one_record("pc");
  ASSERT_FALSE(rec.empty());
  const std::string point = "\"point\":{\"vms.web.count\":";
  const auto at = rec.find(point);
  ASSERT_NE(at, std::string::npos) << rec;
  std::string value = rec, field = rec, metric = rec;
  value.replace(at + point.size(), rec.find('}', at) - at - point.size(), "\"x\\n1\"");
  field.replace(at, point.size(), "\"point\":{\"vms.web\\u0007count\":");
  // A metric's name is a row of the table too ("x\ny" split it in two, exit 0).
  const std::string throughput = "\"vm.web.throughput\"";
  ASSERT_NE(metric.find(throughput), std::string::npos) << rec;
  metric.replace(metric.find(throughput), throughput.size(), "\"vm.web\\nthroughput\"");
  const struct {
    std::string file, message;
  } cases[] = {
      {write_temp("pc-value.jsonl", value), ":1:1: point.vms.web.count: \"x\\n1\" holds a control character, which no sweep writes"},
      {write_temp("pc-field.jsonl", field), ":1:1: point: \"vms.web\\u0007count\" holds a control character"},
      {write_temp("pc-metric.jsonl", metric), ":1:1: metrics: \"vm.web\\nthroughput\" holds a control character"},
  };
  for (const auto& c : cases)
    for (const char* fmt : {"text", "markdown", "csv"}) {
      const Outcome o = run("compare " + c.file + " --format " + std::string(fmt));
      EXPECT_EQ(o.status, 2) << fmt << "\n" << o.output;
      EXPECT_NE(o.output.find(c.file + c.message), std::string::npos) << fmt << "\n" << o.output;
    }
  // Nor does a sweep write one: a swept value with a tab (YAML's printable text allows it, and a
  // topology file may be so named) is refused at its line, in each form of axis.
  for (const auto& [axis, where] : {std::pair<std::string, std::string>{"  topology: [\"a\\tb.yaml\", desktop-4c8t]\n", ":12:14: sweep.topology[0]: "},
                                    {"  zip:\n    - {topology: [\"a\\tb.yaml\"]}\n", ":13:19: sweep.zip[0].topology[0]: "},
                                    {"  t:\n    values: [\"a\\tb.yaml\"]\n    paths: [topology]\n", ":13:14: sweep.t.values[0]: "}}) {
    const std::string f = write_temp("pc-sweep.yaml", with("duration: 200ms", "duration: 20ms") + "sweep:\n" + axis);
    const Outcome o = run("sweep " + f + " --out " + fresh_dir("pc-sweep"));
    EXPECT_EQ(o.status, 2) << axis << o.output;
    EXPECT_NE(o.output.find(f + where + "\"a\\tb.yaml\": a swept value holds no control character"), std::string::npos)
        << axis << o.output;
  }
}

namespace vcpusim {
namespace {

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// `trace --seed N` traced the run whose own seed was N, while `run --seed N` and `trace --set
// seed=N` take N as the master seed, from which each repetition's seed is derived: the two ways
// that the trace refuses together as one setting traced two different runs, and no seed could
// reach a repetition of `run` (their seeds span 64 bits, --seed stops at 2^63 - 1). Now --seed is
// the master seed, --repetition picks the repetition, and the summary names the run's own seed,
// the `seed` that `run --json` gives that repetition.
TEST(Cli, TraceSeedIsTheMasterSeedAndRepetitionPicksTheRun) {
  const std::string f = write_temp("trace-seed.yaml", with("duration: 200ms", "duration: 200ms\nguest: {start_jitter: 5ms}"));
  const auto trace = [&](const std::string& args, const std::string& out) {
    const Outcome o = run("trace " + f + " --window 0s..20ms --out " + out + " " + args);
    EXPECT_EQ(o.status, 0) << o.output;
    return std::make_pair(file_text(out), o.output);
  };
  const auto flag = trace("--seed 4", f + ".a.json"), field = trace("--set seed=4", f + ".b.json");
  const auto second = trace("--seed 4 --repetition 1", f + ".c.json");
  EXPECT_EQ(flag.first, field.first);
  EXPECT_NE(flag.first, second.first);
  const Outcome runs = run("run " + f + " --seed 4 --repetitions 2 --json -");
  ASSERT_EQ(runs.status, 0) << runs.output;
  const nlohmann::json doc = nlohmann::json::parse(runs.output.substr(runs.output.find('{')));
  for (int rep : {0, 1}) {
    const std::string seed = std::to_string(doc.at("runs").at(rep).at("seed").get<std::uint64_t>());
    const std::string& summary = rep == 0 ? flag.second : second.second;
    EXPECT_NE(summary.find("(repetition " + std::to_string(rep) + ", seed " + seed + ")"), std::string::npos) << summary;
  }
  EXPECT_EQ(run("trace " + f + " --out " + f + ".d.json --repetition 10000").status, 2);
}

}  // namespace
}  // namespace vcpusim
