// SPDX-License-Identifier: MIT
// Pins the Perfetto/Chrome trace: valid trace-event JSON (required fields per phase), slices that
// never overlap on a track, timestamps monotonic per track and inside the window, a track per
// hardware thread and per vCPU, the scheduling instants present, and a run that is the same
// traced or not.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/perfetto_trace.h"
#include "app/runner.h"
#include "app/scenario.h"
#include "app/yaml_reader.h"

namespace vcpusim::app {
namespace {

nlohmann::json traced(const ScenarioSpec& s, sim::Time from, sim::Time to) {
  PerfettoTrace tr(from, to);
  run_scenario(s, 1, &tr);
  std::ostringstream os;
  tr.write(os);
  return nlohmann::json::parse(os.str());
}

ScenarioSpec short_default() {
  ScenarioSpec s = load_default_scenario();
  s.duration = sim::ms(300);
  s.warmup = s.host.warmup = 0;
  return s;
}

}  // namespace

TEST(Trace, IsValidTraceEventJson) {
  const ScenarioSpec s = short_default();
  const sim::Time from = sim::ms(50), to = sim::ms(250);
  const nlohmann::json j = traced(s, from, to);
  ASSERT_TRUE(j.contains("traceEvents"));
  std::map<std::pair<int, int>, double> last_end, last_ts;
  std::map<std::string, int> phases, instants;
  std::set<int> pcpu_tracks;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.contains("name") && e.contains("ph") && e.contains("pid")) << e.dump();
    const std::string ph = e["ph"];
    ++phases[ph];
    if (ph == "M") continue;
    ASSERT_TRUE(e.contains("tid") && e.contains("ts")) << e.dump();
    const auto track = std::make_pair(e["pid"].get<int>(), e["tid"].get<int>());
    const double ts = e["ts"].get<double>();
    EXPECT_GE(ts, 50000.0 - 1e-9) << e.dump();
    EXPECT_LE(ts, 250000.0 + 1e-9) << e.dump();
    if (last_ts.count(track)) {
      EXPECT_GE(ts, last_ts[track]) << "timestamps go back on a track: " << e.dump();
    }
    last_ts[track] = ts;
    if (ph == "X") {
      ASSERT_TRUE(e.contains("dur")) << e.dump();
      const double dur = e["dur"].get<double>();
      EXPECT_GT(dur, 0.0);
      EXPECT_LE(ts + dur, 250000.0 + 1e-6);
      if (last_end.count(track)) {
        EXPECT_GE(ts + 1e-9, last_end[track]) << "overlapping slices: " << e.dump();
      }
      last_end[track] = ts + dur;
      if (e["pid"].get<int>() < 100000) pcpu_tracks.insert(e["tid"].get<int>());
    } else {
      ASSERT_EQ(ph, "i") << e.dump();
      EXPECT_EQ(e["s"], "t");
      ++instants[e["name"].get<std::string>()];
    }
  }
  EXPECT_GT(phases["X"], 0);
  EXPECT_GT(phases["M"], 0);
  // The default scenario keeps all 8 threads busy and its web VM halts and wakes all the time.
  EXPECT_EQ(pcpu_tracks.size(), 8u);
  EXPECT_GT(instants["wake"], 0);
  EXPECT_GT(instants["halt"], 0);
}

TEST(Trace, HasAVcpuTrackWithGuestThreads) {
  const nlohmann::json j = traced(short_default(), 0, sim::ms(100));
  int guest = 0;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e.value("cat", "") == "guest-thread") ++guest;
  EXPECT_GT(guest, 0);
}

TEST(Trace, AnIdleExitNamesTheStateItLeft) {
  // One VM whose threads compute 200 us and sleep 1 ms: its vCPUs halt, so pCPUs go idle.
  const ScenarioSpec s = load_scenario(YamlReader::load_string(R"(
name: idle
duration: 300ms
warmup: 0s
topology: desktop-4c8t
host: {cpuidle: {states: skl}}
vms:
  - name: web
    vcpus: 2
    workload:
      kind: program
      threads: 2
      phases:
        - {compute: 200us}
        - {block: 1ms, dist: exp}
)", "idle.yaml"));
  std::set<std::string> names;
  for (const auto& st : s.host.cpuidle.states) names.insert(st.name);
  const nlohmann::json j = traced(s, 0, sim::ms(300));
  int exits = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "i" || e["name"] != "idle-exit") continue;
    ++exits;
    ASSERT_TRUE(e.contains("args") && e["args"].contains("state")) << e.dump();
    EXPECT_TRUE(names.count(e["args"]["state"].get<std::string>())) << e.dump();
  }
  EXPECT_GT(exits, 0);
}

// A 5.x KVM stack's cures leave their marks: `kick-yield` on a kicker that yielded to the PV
// waiter it woke (host.kick_boost), `ipi-defer` on a shootdown sender that left a preempted
// target its flush (guest.pv_tlb_flush). The 3.10 stack leaves neither.
TEST(Trace, TheKickBoostAndThePvTlbFlushMarkTheirInstants) {
  const auto count = [](bool later) {
    const ScenarioSpec s = load_scenario(YamlReader::load_string(std::string(R"(
name: cures
duration: 100ms
warmup: 0s
topology: desktop-4c8t
host: {scheduler: {policy: cfs}, ple: {enabled: true})") + (later ? ", kick_boost: true}\nguest: {pv_tlb_flush: true" : "") + R"(}
vms:
  - {name: eb, count: 2, vcpus: 8, workload: {kind: ebizzy, threads: 16, lock: pvticket, spin_threshold: 1000}}
)", "cures.yaml"));
    std::map<std::string, int> n;
    const nlohmann::json j = traced(s, 0, sim::ms(100));
    for (const auto& e : j["traceEvents"])
      if (e["ph"] == "i") ++n[e["name"].get<std::string>()];
    return n;
  };
  std::map<std::string, int> old = count(false), later = count(true);
  EXPECT_GT(old["pv-kick"], 0);
  EXPECT_EQ(old["kick-yield"], 0);
  EXPECT_EQ(old["ipi-defer"], 0);
  EXPECT_GT(later["kick-yield"], 0);
  EXPECT_LE(later["kick-yield"], later["pv-kick"]);
  EXPECT_GT(later["ipi-defer"], 0);
}

TEST(Trace, TracingDoesNotChangeTheRun) {
  const ScenarioSpec s = short_default();
  PerfettoTrace tr(0, sim::ms(300));
  const RunResult a = run_scenario(s, 3, &tr), b = run_scenario(s, 3);
  EXPECT_EQ(a.metrics(), b.metrics());
}

}  // namespace vcpusim::app
