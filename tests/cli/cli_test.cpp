// SPDX-License-Identifier: MIT
// Pins the command line's contract: help and version work, the default scenario runs, and every
// kind of bad input ends with exit status 2 and a message `file:line:col: field: what` — never
// an abort, an uncaught exception or a hang. Runs the real binary ($VCPUSIM, set by meson).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct Outcome {
  int status = -1;
  std::string output;  // stdout and stderr together
};

std::string binary() {
  const char* b = std::getenv("VCPUSIM");
  return b ? b : "vcpusim";
}

Outcome run(const std::string& args) {
  // `timeout` turns a hang into a failure with status 124 instead of a stuck suite.
  const std::string cmd = "timeout 120 " + binary() + " " + args + " 2>&1";
  Outcome o;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return o;
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) o.output.append(buf.data(), n);
  const int st = pclose(p);
  o.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return o;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("vcpusim_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

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

TEST(Cli, DefaultScenarioRunsAndPrintsTheTable) {
  Outcome o = run("run --duration 2s");
  ASSERT_EQ(o.status, 0) << o.output;
  for (const char* s : {"throughput", "steal%", "events", "simulated/wall", "events/s", "MiB/s"})
    EXPECT_NE(o.output.find(s), std::string::npos) << s;
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

TEST(Cli, WarmupMustBeShorterThanDuration) {
  expect_bad("warm.yaml", with("duration: 200ms", "duration: 200ms\nwarmup: 1s"), "3:9:", "warmup:");
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

TEST(Cli, EmptyFileIsExitTwo) {
  const Outcome o = run("run " + write_temp("empty.yaml", ""));
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find("empty"), std::string::npos) << o.output;
}

TEST(Cli, BadArgumentsAreExitTwo) {
  EXPECT_EQ(run("run --seed abc").status, 2);
  EXPECT_EQ(run("run --duration 5parsecs").status, 2);
  EXPECT_EQ(run("run --repetitions 0").status, 2);
  EXPECT_EQ(run("frobnicate").status, 2);
  EXPECT_EQ(run("").status, 2);
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
  // Header plus one row per (repetition, domain).
  EXPECT_EQ(std::count(ct.begin(), ct.end(), '\n'), 3);
}
