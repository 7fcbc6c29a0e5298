// SPDX-License-Identifier: MIT
// This file defines what the command-line tests share: running the real binary ($VCPUSIM, set by
// meson) or any shell command with its status and output, a scratch directory per test process,
// and reading sweep records in a form that ignores their order and wall-clock part.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace vcpusim::test {

struct Outcome {
  int status = -1;
  std::string output;  // stdout and stderr together
};

inline std::string binary() {
  const char* b = std::getenv("VCPUSIM");
  return b ? b : "vcpusim";
}

inline Outcome shell(const std::string& cmd) {
  Outcome o;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return o;
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) o.output.append(buf.data(), n);
  const int st = pclose(p);
  o.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return o;
}

/// vcpusim with `args`; `timeout` turns a hang into a failure (status 124), not a stuck suite.
inline Outcome run(const std::string& args) { return shell("timeout 120 " + binary() + " " + args); }

/// A directory of this test process's own.
inline std::filesystem::path scratch() {
  const auto d = std::filesystem::temp_directory_path() / ("vcpusim_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

inline std::string fresh_dir(const std::string& name) {
  const auto d = scratch() / name;
  std::filesystem::remove_all(d);
  return d.string();
}

inline std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = scratch() / name;
  std::ofstream(path) << text;
  return path.string();
}

/// Records without their wall-clock part (the last key), sorted, one per line: what must not
/// depend on how a sweep ran.
inline std::string canonical_records(const std::string& dir) {
  std::ifstream in(dir + "/records.jsonl");
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    const auto t = line.find(",\"timing\":");
    lines.push_back(t == std::string::npos ? line : line.substr(0, t));
  }
  std::sort(lines.begin(), lines.end());
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  return all;
}

/// The small sweep the command-line tests run: a 2-vCPU program VM, 1 / 3 / 6 of them, HT and
/// noHT columns, 300 ms (50 ms warm-up), `repetitions` each; `name` is the scenario name.
inline std::string small_sweep(const std::string& name, int repetitions) {
  return "name: " + name + "\nduration: 300ms\nwarmup: 50ms\nrepetitions: " + std::to_string(repetitions) + R"(
topology: desktop-4c8t
vms:
  - name: web
    vcpus: 2
    workload:
      kind: program
      threads: 3
      phases: [{compute: 1ms, dist: exp}, {block: 1ms, dist: exp}]
sweep:
  vms.web.count: [1, 3, 6]
columns:
  HT: {host.smt: on}
  noHT: {host.smt: off}
)";
}

inline std::size_t count_lines(const std::string& path) {
  std::ifstream in(path);
  return static_cast<std::size_t>(std::count(std::istreambuf_iterator<char>(in), {}, '\n'));
}

/// The line number (1-based, as error messages name a record's line) of the `nth` (from 0) of
/// `lines` that holds `text`; "none" when there is no such line.
inline std::string line_with(const std::vector<std::string>& lines, const std::string& text, int nth = 0) {
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find(text) != std::string::npos && nth-- == 0) return std::to_string(i + 1);
  return "none";
}

}  // namespace vcpusim::test
