// SPDX-License-Identifier: MIT
// Pins the calibration against ../shared/calibration/001 (Core scheduling v3 thread, J.
// Desfossez: sysbench cpu beside sysbench mem on one SMT core), through whole scenarios as a user
// writes them (inline YAML -> app::load_scenario -> app::run_scenario):
//   "Alone"   one sysbench-cpu thread alone on a core          1306.90 events/s
//   "nosmt"   two sysbench-cpu threads on ONE hardware thread   649.95 each (the model: half)
//   no tag    sysbench-cpu beside sysbench-memory on siblings    852.50 (Tim's full patchset)
// and that hard affinity holds across a 10 s run at 4x overcommit on a 2-socket machine.
//
// Each tolerance is derived from what the model may lose against the ideal: a context switch
// (2 us) per slice (30 ms) at most, one sysbench step part-done at each end of the measured
// interval (a step is the fewest events making >= 1 ms, so < 1 ms + one event; sysbench.h), and
// for shared pCPUs up to one slice of unfairness. The mail's numbers are then checked within the
// brief's bounds (0.5%, 2%, 3%).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "app/runner.h"
#include "app/scenario.h"
#include "app/yaml_reader.h"
#include "guest/program.h"
#include "guest/workload.h"
#include "hypervisor/host.h"
#include "test_host.h"

namespace vcpusim {
namespace {

constexpr double kAlone = 1306.90;     // calibration/001, "Alone"
constexpr double kNosmt = 649.95;      // calibration/001, "nosmt"
constexpr double kBesideMem = 852.50;  // calibration/001, no tag, "Tim's full patchset"
constexpr double kEventNs = 1e9 / kAlone;
constexpr double kCs = 2e3, kSlice = 30e6;
constexpr double kStepMax = 1e6 + kEventNs;  // longest sysbench step (sysbench.h MODEL note)

app::ScenarioSpec scenario(const std::string& yaml) {
  return app::load_scenario(app::YamlReader::load_string(yaml, "<calibration_test>"));
}

const app::DomainResult& domain(const app::RunResult& r, const std::string& name) {
  for (const auto& d : r.domains)
    if (d.name == name) return d;
  throw std::runtime_error("no domain " + name);
}

TEST(Calibration, SysbenchCpuAloneOnACoreReproducesTheAloneRow) {
  // One vCPU alone on one-core-ht: rate 1, so events/s = 1e9 / event_time = 1306.90, less at
  // most one context switch per slice (cs / slice) and one part-done step at each end of the
  // measured 9 s.
  const auto spec = scenario(R"(
name: alone
duration: 10s
warmup: 1s
topology: one-core-ht
vms:
  - {name: cpu, vcpus: 1, workload: {kind: sysbench-cpu, threads: 1}}
)");
  const app::RunResult r = app::run_scenario(spec, 1);
  const double measured = static_cast<double>(r.measured);
  const double rel = kCs / kSlice + 2 * kStepMax / measured;
  ASSERT_LT(rel, 0.005);  // the brief's bound: the derivation must be tighter
  EXPECT_NEAR(domain(r, "cpu").throughput, kAlone, kAlone * rel);
  EXPECT_NEAR(domain(r, "cpu").cpu, 1.0, 1e-9);  // one pCPU's worth, measured exactly
}

// Two sysbench-cpu VMs forced onto one hardware thread. The model: each runs half the time at
// rate 1, so kAlone / 2 = 653.45, to within one slice of unfairness over the run (slice / T of
// the share), the switch cost (cs / slice) and one part-done step each end. The mail measured
// 649.95 (0.5% lower: its switches cost more than ours); the brief holds the model within 2%.
void expect_half_each(const app::RunResult& r, double T) {
  const double rel = kSlice / T + kCs / kSlice + 2 * kStepMax / (T / 2);
  for (const char* name : {"a", "b"}) {
    const double tp = domain(r, name).throughput;
    EXPECT_NEAR(tp, kAlone / 2, kAlone / 2 * rel) << name;
    EXPECT_NEAR(tp, kNosmt, kNosmt * 0.02) << name;
    EXPECT_NEAR(domain(r, name).steal_pct, 50.0, 100.0 * kSlice / T) << name;
  }
}

TEST(Calibration, TwoSysbenchCpuOnOneHardwareThreadGetHalfEach) {
  // Both VMs pinned to thread 0 of one-core-ht (SMT on; thread 1 stays idle).
  const auto spec = scenario(R"(
name: nosmt-pinned
duration: 20s
topology: one-core-ht
vms:
  - {name: a, vcpus: 1, affinity: {hard: [0]}, workload: {kind: sysbench-cpu, threads: 1}}
  - {name: b, vcpus: 1, affinity: {hard: [0]}, workload: {kind: sysbench-cpu, threads: 1}}
)");
  const app::RunResult r = app::run_scenario(spec, 1);
  expect_half_each(r, 20e9);
}

TEST(Calibration, TwoSysbenchCpuWithSmtOffGetHalfEach) {
  // The mail's "nosmt" row literally: SMT off leaves one usable thread on the core.
  const auto spec = scenario(R"(
name: nosmt
duration: 20s
topology: one-core-ht
host: {smt: off}
vms:
  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu, threads: 1}}
  - {name: b, vcpus: 1, workload: {kind: sysbench-cpu, threads: 1}}
)");
  const app::RunResult r = app::run_scenario(spec, 1);
  expect_half_each(r, 20e9);
  EXPECT_NEAR(r.host_utilisation, 1.0, 1e-9);  // the one usable thread never idles
}

TEST(Calibration, SysbenchCpuBesideSysbenchMemoryOnSiblingsGivesTheCalibratedCell) {
  // cpu on thread 0, memory on its sibling 1, the whole run: the memory thread is always busy, so
  // the cpu thread runs at smt[cpu][memory] = 852.50 / 1306.90 all the time: 852.50 events/s,
  // less one switch and a part-done step at each end of the measured 9 s.
  const auto spec = scenario(R"(
name: cpu-beside-mem
duration: 10s
warmup: 1s
topology: one-core-ht
vms:
  - {name: cpu, vcpus: 1, affinity: {hard: [0]}, workload: {kind: sysbench-cpu, threads: 1}}
  - {name: mem, vcpus: 1, affinity: {hard: [1]}, workload: {kind: sysbench-memory, threads: 1}}
)");
  const app::RunResult r = app::run_scenario(spec, 1);
  const double measured = static_cast<double>(r.measured);
  const double rel = kCs / kSlice + 2 * kStepMax / (measured * kBesideMem / kAlone);
  const double tp = domain(r, "cpu").throughput;
  EXPECT_NEAR(tp, kBesideMem, kBesideMem * rel);
  EXPECT_NEAR(tp, kBesideMem, kBesideMem * 0.03);
  // And the sibling really was there: below the Alone row by the calibrated factor.
  EXPECT_LT(tp, kAlone * 0.7);
}

// The 4x-overcommit scenario: 16 threads (2 sockets x 4 cores x 2), 64 vCPUs in four groups:
// pinned to a node (node-round-robin), each vCPU pinned to one thread, and two unpinned groups.
constexpr const char* kOvercommit = R"(
name: affinity-4x
seed: 3
duration: 10s
topology: xeon-x5570-2s
host:
  scheduler: {policy: rr}
vms:
  - name: node
    count: 4
    vcpus: 4
    affinity: {hard: node-round-robin}
    workload: {kind: sysbench-cpu, threads: 4}
  - name: pin
    count: 4
    vcpus: 4
    affinity:
      per_vcpu:
        - {hard: [0]}
        - {hard: [5]}
        - {hard: [10]}
        - {hard: [15]}
    workload:
      kind: program
      threads: 4
      phases:
        - {compute: 400us, dist: exp}
        - {block: 600us, dist: exp}
  - name: mem
    count: 4
    vcpus: 4
    workload: {kind: sysbench-memory, threads: 4}
  - name: web
    count: 4
    vcpus: 4
    workload:
      kind: program
      threads: 6
      phases:
        - {compute: 300us, profile: mixed, mem_intensity: 0.3, dist: exp}
        - {block: 300us, dist: exp}
)";

TEST(Calibration, HardAffinityHoldsAcross4xOvercommit) {
  // The dispatcher throws hv::InvariantViolation on any pick outside hard affinity, so a clean
  // run_scenario() is the first check (it also runs check_conservation()). The second rebuilds
  // the same scenario on a TestHost and samples every 100 us that every running or waiting vCPU
  // sits on a pCPU of its hard set.
  const auto spec = scenario(kOvercommit);
  // The affinities resolved as written (so the run below is not vacuous).
  const topo::Topology topology = topo::build_topology(spec.topology);
  ASSERT_EQ(spec.groups.size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(spec.groups[0].instances[i].hard[0], topology.threads_of_node(i % 2)) << "node-" << i;
    EXPECT_EQ(spec.groups[1].instances[i].hard[2], topo::CpuSet::single(10)) << "pin-" << i;
  }
  app::RunResult r;
  ASSERT_NO_THROW(r = app::run_scenario(spec, app::repetition_seed(spec.seed, 0)));
  ASSERT_EQ(r.domains.size(), 16u);
  for (const auto& d : r.domains) EXPECT_GT(d.throughput, 0.0) << d.name;
  EXPECT_GT(r.host_utilisation, 0.95);  // 4x overcommit keeps every thread busy

  test::TestHost h(spec.topology, spec.host, app::repetition_seed(spec.seed, 0), spec.policy, spec.policy_params);
  for (const app::GroupSpec& g : spec.groups)
    for (const hv::DomainSpec& d : g.instances) {
      std::unique_ptr<guest::Workload> w;
      if (g.workload.kind == "program") w = std::make_unique<guest::Program>(g.workload.threads, g.workload.phases);
      else w = guest::find_workload(g.workload.kind)->make(g.workload.params);
      h.add_vm(d, std::move(w), spec.guest);
    }
  ASSERT_EQ(h.host().num_vcpus(), 64u);
  h.start();
  std::uint64_t checked = 0;
  h.run_sampled(spec.duration, sim::us(100), [&] {
    for (hv::VcpuId v = 0; v < h.host().num_vcpus(); ++v) {
      const hv::Vcpu& e = h.host().vcpu(v);
      if (e.state == hv::Runstate::kBlocked) continue;
      ++checked;
      ASSERT_TRUE(e.hard.test(e.pcpu)) << "entity " << v << " on pCPU " << e.pcpu << " at t=" << h.host().now();
    }
  });
  EXPECT_GT(checked, 100'000u * 16);
  EXPECT_NO_THROW(h.host().check_conservation());
}

}  // namespace
}  // namespace vcpusim
