// SPDX-License-Identifier: MIT
// Pins the scenario loader: defaults, affinity expressions, memory placement, per-instance
// expansion, and that every error names the right line and field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "guest/spinlock.h"

#include "app/scenario.h"
#include "app/yaml_reader.h"
#include "loader_support.h"

namespace vcpusim::app {
namespace {

using test::error_of;
using test::load;

}  // namespace

TEST(ScenarioLoader, DefaultsApply) {
  const ScenarioSpec s = load("topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu}}\n");
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.seed, 1u);
  EXPECT_EQ(s.duration, sim::seconds(10));
  EXPECT_EQ(s.warmup, 0);
  EXPECT_EQ(s.repetitions, 1u);
  EXPECT_EQ(s.policy, "rr");
  EXPECT_TRUE(s.host.smt);
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(s.groups[0].instances.size(), 1u);
  EXPECT_EQ(s.groups[0].workload.threads, 1u);
  EXPECT_EQ(s.groups[0].instances[0].weight, 256u);
}

TEST(ScenarioLoader, CountExpandsToNamedInstancesWithNodeRoundRobin) {
  const ScenarioSpec s = load(
      "topology: xeon-x5570-2s\nvms:\n  - name: db\n    count: 3\n    vcpus: 2\n"
      "    affinity: {hard: node-round-robin}\n    workload: {kind: sysbench-memory, threads: 4}\n");
  const auto& g = s.groups[0];
  ASSERT_EQ(g.instances.size(), 3u);
  EXPECT_EQ(g.instances[0].name, "db-0");
  EXPECT_EQ(g.instances[2].name, "db-2");
  // xeon-x5570-2s: node 0 owns cores 0-3, node 1 cores 4-7 (8 threads each).
  EXPECT_EQ(g.instances[0].hard[0].count(), 8u);
  EXPECT_NE(g.instances[0].hard[0], g.instances[1].hard[0]);
  EXPECT_EQ(g.instances[0].hard[0], g.instances[2].hard[0]);
  // Memory follows the hard affinity's node (Xen's node-affinity).
  EXPECT_DOUBLE_EQ(g.instances[0].memory_on_node[0], 1.0);
  EXPECT_DOUBLE_EQ(g.instances[1].memory_on_node[1], 1.0);
}

TEST(ScenarioLoader, AffinityExpressions) {
  const ScenarioSpec s = load(
      "topology: desktop-4c8t\nvms:\n"
      "  - {name: a, vcpus: 1, affinity: {hard: 'cpus:[0,2-3]'}, workload: {kind: sysbench-cpu}}\n"
      "  - {name: b, vcpus: 1, affinity: {hard: [5, 6]}, workload: {kind: sysbench-cpu}}\n"
      "  - {name: c, vcpus: 1, affinity: {hard: {cpus: [1]}, soft: 'core:2'}, workload: {kind: sysbench-cpu}}\n"
      "  - {name: d, vcpus: 2, affinity: {per_vcpu: [{hard: 'cpus:[4]'}, {hard: 'cpus:[7]'}]}, workload: {kind: sysbench-cpu}}\n");
  EXPECT_EQ(s.groups[0].instances[0].hard[0], topo::CpuSet::single(0) | topo::CpuSet::single(2) | topo::CpuSet::single(3));
  EXPECT_EQ(s.groups[1].instances[0].hard[0], topo::CpuSet::single(5) | topo::CpuSet::single(6));
  EXPECT_EQ(s.groups[2].instances[0].hard[0], topo::CpuSet::single(1));
  EXPECT_EQ(s.groups[2].instances[0].soft[0].count(), 2u);  // both threads of core 2
  EXPECT_EQ(s.groups[3].instances[0].hard[0], topo::CpuSet::single(4));
  EXPECT_EQ(s.groups[3].instances[0].hard[1], topo::CpuSet::single(7));
}

TEST(ScenarioLoader, MemoryPlacements) {
  const ScenarioSpec s = load(
      "topology: xeon-x5570-2s\nvms:\n"
      "  - {name: a, vcpus: 1, memory: {size: 1GiB, placement: interleave}, workload: {kind: sysbench-cpu}}\n"
      "  - {name: b, vcpus: 1, memory: {placement: 'node:1'}, workload: {kind: sysbench-cpu}}\n"
      "  - {name: c, vcpus: 1, affinity: {soft: 'node:1'}, workload: {kind: sysbench-cpu}}\n");
  EXPECT_EQ(s.groups[0].memory_bytes, 1024ull * 1024 * 1024);
  EXPECT_DOUBLE_EQ(s.groups[0].instances[0].memory_on_node[0], 0.5);
  EXPECT_DOUBLE_EQ(s.groups[1].instances[0].memory_on_node[1], 1.0);
  EXPECT_DOUBLE_EQ(s.groups[2].instances[0].memory_on_node[1], 1.0);  // follows soft when hard is all
}

// Xen's domain_update_node_affinity() ORs every vCPU's hard and soft masks and takes their
// intersection where it is not empty, else the hard mask: memory went by vCPU 0's masks alone,
// and by hard affinity even where soft narrowed it.
TEST(ScenarioLoader, MemoryFollowsXensNodeAffinityOfEveryVcpu) {
  // Four nodes of two threads each (0-1 node 0, 2-3 node 1, ...).
  const ScenarioSpec s = load(
      "topology: {sockets: 4, cores_per_socket: 2, threads_per_core: 1, nodes: 4}\nvms:\n"
      "  - {name: split, vcpus: 2, affinity: {per_vcpu: [{hard: 'node:0'}, {hard: 'node:2'}]}, workload: {kind: sysbench-cpu}}\n"
      "  - {name: narrowed, vcpus: 1, affinity: {hard: 'cpus:[0-3]', soft: 'node:1'}, workload: {kind: sysbench-cpu}}\n"
      "  - {name: disjoint, vcpus: 1, affinity: {hard: 'cpus:[0-3]', soft: 'node:3'}, workload: {kind: sysbench-cpu}}\n"
      "  - {name: both, vcpus: 2, affinity: {per_vcpu: [{soft: 'node:1'}, {soft: 'node:3'}]}, workload: {kind: sysbench-cpu}}\n");
  const auto mem = [&](std::size_t g) { return s.groups[g].instances[0].memory_on_node; };
  EXPECT_EQ(mem(0), (std::vector<double>{0.5, 0, 0.5, 0}));
  EXPECT_EQ(mem(1), (std::vector<double>{0, 1, 0, 0}));
  EXPECT_EQ(mem(2), (std::vector<double>{0.5, 0.5, 0, 0}));
  EXPECT_EQ(mem(3), (std::vector<double>{0, 0.5, 0, 0.5}));
}

// libxl's nr_vcpus_on_nodes() counts each vCPU of an earlier domain on the nodes its own hard
// affinity reaches: three of a's four vCPUs are on node 1, so b goes to node 0. (Counting all
// four by vCPU 0's mask put them on node 0 and b on node 1.)
TEST(ScenarioLoader, AutomaticPlacementCountsEachVcpuWhereItMayRun) {
  const ScenarioSpec s = load(
      "topology: xeon-x5570-2s\nvms:\n"
      "  - {name: a, vcpus: 4, affinity: {per_vcpu: [{hard: 'node:0'}, {hard: 'node:1'}, {hard: 'node:1'}, "
      "{hard: 'node:1'}]}, workload: {kind: sysbench-cpu}}\n"
      "  - {name: b, vcpus: 2, workload: {kind: sysbench-cpu}}\n");
  EXPECT_EQ(s.groups[0].instances[0].memory_on_node, (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(s.groups[1].instances[0].memory_on_node, (std::vector<double>{1, 0}));
}

// A duration's bounds printed as 10000ns or, from a plug-in's table, 1e+09ns.
TEST(ScenarioLoader, DurationBoundsPrintInTheirLargestWholeUnit) {
  EXPECT_EQ(duration_text(1e9), "1s");
  EXPECT_EQ(duration_text(1e14), "100000s");
  EXPECT_EQ(duration_text(24e6), "24ms");
  EXPECT_EQ(duration_text(1500), "1500ns");
  EXPECT_EQ(duration_text(0), "0ns");
  EXPECT_EQ(test::error_of("topology: one-core-ht\nguest: {slice: 5us}\nvms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu}}\n"),
            "t.yaml:2:16: guest.slice: '5us' is out of range [10us, 10s]");
  EXPECT_EQ(test::error_of("topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, workload: {kind: dbench, lock: pvticket, kick_latency: 2s}}\n"),
            "t.yaml:3:80: vms[0].workload.kick_latency: 2s is out of range [0ns, 1s]");
}

// Keys that are no name were all "unknown key"; the merge key `<<` looked like a typo, and a
// nesting past yaml-cpp's own limit said only "bad file".
TEST(ScenarioLoader, KeysThatAreNoNameAndDeepNestingSayWhatTheyAre) {
  const std::string vm = "  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu}}\n";
  EXPECT_NE(test::error_of("topology: one-core-ht\nvms:\n  - {name: a, <<: {vcpus: 1}, workload: {kind: sysbench-cpu}}\n")
                .find("t.yaml:3:15: vms[0].<<: YAML merge keys (<<) are not read"),
            std::string::npos);
  EXPECT_NE(test::error_of("topology: one-core-ht\n~: 1\nvms:\n" + vm).find("t.yaml:2:1: \"\": a null key"), std::string::npos);
  EXPECT_NE(test::error_of("topology: one-core-ht\n? [a, b]\n: 1\nvms:\n" + vm).find("a list or mapping as a key"),
            std::string::npos);
  EXPECT_NE(test::error_of("topology: one-core-ht\nx: " + std::string(3000, '[') + "\n").find("nested deeper than 64 levels"),
            std::string::npos);
}

TEST(ScenarioLoader, PolicyParametersAreRead) {
  const ScenarioSpec s = load(
      "topology: one-core-ht\nhost: {scheduler: {policy: rr, slice: 5ms}}\n"
      "vms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu}}\n");
  EXPECT_DOUBLE_EQ(s.policy_params.get("slice", 0), 5e6);
}

// credit2's ratelimit is 0 (off) or 100us .. 500ms, as Xen's sched_ratelimit_us: 50us was
// accepted and ran as the default 1ms (the policy's copy of Xen's boot-time reset), exit 0.
TEST(ScenarioLoader, AKeyThatIsZeroOrAtLeastAFloorRefusesWhatLiesBetween) {
  const auto c2 = [](const std::string& rl) {
    return "topology: one-core-ht\nhost: {scheduler: {policy: credit2, ratelimit: " + rl +
           "}}\nvms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu}}\n";
  };
  EXPECT_EQ(error_of(c2("50us")), "t.yaml:2:48: host.scheduler.ratelimit: 50us is out of range: 0 (off) or [100us, 500ms]");
  EXPECT_EQ(error_of(c2("1ns")), "t.yaml:2:48: host.scheduler.ratelimit: 1ns is out of range: 0 (off) or [100us, 500ms]");
  EXPECT_EQ(error_of(c2("501ms")), "t.yaml:2:48: host.scheduler.ratelimit: 501ms is out of range: 0 (off) or [100us, 500ms]");
  EXPECT_DOUBLE_EQ(load(c2("0")).policy_params.get("ratelimit", -1), 0);
  EXPECT_DOUBLE_EQ(load(c2("100us")).policy_params.get("ratelimit", -1), 100e3);
  EXPECT_DOUBLE_EQ(load(c2("500ms")).policy_params.get("ratelimit", -1), 500e6);
}

TEST(ScenarioLoader, ErrorsNameLineAndField) {
  EXPECT_EQ(error_of("topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, colour: red, workload: {kind: sysbench-cpu}}\n"),
            "t.yaml:3:25: vms[0].colour: unknown key (allowed here: name, count, vcpus, weight, cap, affinity, memory, workload)");
  EXPECT_NE(error_of("topology: one-core-ht\nhost: {scheduler: {policy: rr, slice: 1}}\nvms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu}}\n")
                .find("t.yaml:2:39: host.scheduler.slice: expected a duration"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu}}\n  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu}}\n")
                .find("duplicate name 'a'"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\n").find("no vms"), std::string::npos);
  EXPECT_NE(error_of("vms: []\n").find("missing required key 'topology'"), std::string::npos);
}

TEST(ScenarioLoader, NosmtRefusesAffinityOnlyOnSecondThreads) {
  // desktop-4c8t numbers the second threads 4-7; with smt off they are gone.
  const std::string e = error_of(
      "topology: desktop-4c8t\nhost: {smt: off}\nvms:\n"
      "  - {name: a, vcpus: 1, affinity: {hard: 'cpus:[4-7]'}, workload: {kind: sysbench-cpu}}\n");
  EXPECT_NE(e.find("no usable hardware thread"), std::string::npos) << e;
}

TEST(ScenarioLoader, DurationsAndSizesParse) {
  EXPECT_EQ(parse_duration("1.5ms"), 1'500'000);
  EXPECT_EQ(parse_duration("30s"), 30'000'000'000);
  EXPECT_EQ(parse_duration("250us"), 250'000);
  EXPECT_EQ(parse_duration("0"), 0);
  EXPECT_FALSE(parse_duration("10"));
  EXPECT_FALSE(parse_duration("fast"));
  EXPECT_EQ(parse_bytes("1GiB"), 1073741824ull);
  EXPECT_EQ(parse_bytes("4KiB"), 4096ull);
  EXPECT_EQ(parse_bytes("2GB"), 2000000000ull);
  EXPECT_FALSE(parse_bytes("1 potato"));
  // Whole numbers are exact up to 8 EiB, not rounded through a double past 2^53.
  EXPECT_EQ(parse_bytes("9007199254740993B"), 9007199254740993ull);
  EXPECT_EQ(parse_bytes("9223372036854775807"), 9223372036854775807ull);
  EXPECT_FALSE(parse_bytes("9223372036854775808"));
  EXPECT_EQ(parse_bytes("8388607TiB"), 8388607ull << 40);
  EXPECT_FALSE(parse_bytes("8388608TiB"));  // 8 EiB itself
  EXPECT_FALSE(parse_bytes("99999999999999999999999B"));
  EXPECT_EQ(parse_bytes("1.5KiB"), 1536ull);
  EXPECT_FALSE(parse_bytes("8e18KB"));
}

}  // namespace vcpusim::app

namespace vcpusim::app {

// libxl's automatic placement: with no soft affinity given, each VM goes to the node on which
// the fewest vCPUs of earlier VMs can run (ties: the lowest), and both its memory and its soft
// affinity follow that node. A 10-vCPU VM needs ceil(10/8) = 2 nodes on a 2x8-thread machine.
TEST(ScenarioLoader, AutomaticPlacementSetsMemoryAndSoftAffinity) {
  const ScenarioSpec s = load(
      "topology: xeon-x5570-2s\nvms:\n"
      "  - {name: a, count: 3, vcpus: 2, workload: {kind: sysbench-cpu}}\n"
      "  - {name: big, vcpus: 10, workload: {kind: sysbench-cpu}}\n"
      "  - {name: soft, vcpus: 2, affinity: {soft: 'node:1'}, workload: {kind: sysbench-cpu}}\n");
  const auto& a = s.groups[0].instances;
  EXPECT_DOUBLE_EQ(a[0].memory_on_node[0], 1.0);
  EXPECT_DOUBLE_EQ(a[1].memory_on_node[1], 1.0);
  EXPECT_DOUBLE_EQ(a[2].memory_on_node[0], 1.0);
  EXPECT_EQ(a[1].soft[0], a[1].soft[1]);
  EXPECT_EQ(a[1].soft[0].count(), 8u);
  EXPECT_FALSE(a[1].soft[0].intersects(a[0].soft[0]));
  EXPECT_EQ(a[0].hard[0].count(), 16u);  // hard affinity untouched
  const auto& big = s.groups[1].instances[0];
  EXPECT_DOUBLE_EQ(big.memory_on_node[0], 0.5);
  EXPECT_EQ(big.soft[0].count(), 16u);
  // An explicit soft affinity turns automatic placement off; memory follows the soft node.
  const auto& soft = s.groups[2].instances[0];
  EXPECT_DOUBLE_EQ(soft.memory_on_node[1], 1.0);
}

// A KVM host (cfs) has no libxl: `auto` is first touch by vCPU threads that roam their hard
// affinity, so memory is interleaved over its nodes and no soft affinity is set. The same VMs
// on a Xen host (credit2) get libxl's one node each.
TEST(ScenarioLoader, KvmHostPlacesMemoryByFirstTouchNotLibxl) {
  const std::string vms =
      "vms:\n"
      "  - {name: a, count: 2, vcpus: 2, workload: {kind: sysbench-cpu}}\n"
      "  - {name: pinned, vcpus: 2, affinity: {hard: 'node:1'}, workload: {kind: sysbench-cpu}}\n";
  const ScenarioSpec kvm = load("topology: xeon-x5570-2s\nhost: {scheduler: {policy: cfs}}\n" + vms);
  for (const auto& d : kvm.groups[0].instances) {
    EXPECT_DOUBLE_EQ(d.memory_on_node[0], 0.5);
    EXPECT_DOUBLE_EQ(d.memory_on_node[1], 0.5);
    EXPECT_EQ(d.soft[0].count(), 16u);  // no soft affinity
  }
  EXPECT_DOUBLE_EQ(kvm.groups[1].instances[0].memory_on_node[1], 1.0);  // its threads touch node 1 only
  const ScenarioSpec xen = load("topology: xeon-x5570-2s\nhost: {scheduler: {policy: credit2}}\n" + vms);
  EXPECT_DOUBLE_EQ(xen.groups[0].instances[0].memory_on_node[0], 1.0);
  EXPECT_DOUBLE_EQ(xen.groups[0].instances[1].memory_on_node[1], 1.0);
  EXPECT_EQ(xen.groups[0].instances[0].soft[0].count(), 8u);
}

// host.ple: KVM's defaults when only `enabled` is given, the flavour following the host policy
// (credit2 = Xen), every key read, and bad values named by line and field.
TEST(ScenarioLoader, HostPleKeys) {
  const std::string vms = "vms:\n  - {name: a, vcpus: 2, workload: {kind: sysbench-cpu}}\n";
  const ScenarioSpec off = load("topology: one-core-ht\n" + vms);
  EXPECT_FALSE(off.host.ple.active());
  const ScenarioSpec on = load("topology: one-core-ht\nhost: {scheduler: {policy: cfs}, ple: {enabled: true}}\n" + vms);
  EXPECT_TRUE(on.host.ple.active());
  EXPECT_EQ(on.host.ple.gap, 128u);
  EXPECT_EQ(on.host.ple.window, 4096u);
  EXPECT_EQ(on.host.ple.grow, 2u);
  EXPECT_EQ(on.host.ple.shrink, 0u);
  EXPECT_EQ(on.host.ple.max, 4294967295u);
  EXPECT_EQ(on.host.ple.flavour, hv::PleFlavour::kKvm);
  EXPECT_EQ(on.host.ple.scan, hv::PleScan::kLinux310);
  EXPECT_EQ(load("topology: one-core-ht\nhost: {ple: {enabled: true, scan: '5.10'}}\n" + vms).host.ple.scan,
            hv::PleScan::kLinux510);
  EXPECT_EQ(test::error_of("topology: one-core-ht\nhost: {ple: {enabled: true, scan: '4.19'}}\n" + vms),
            "t.yaml:2:35: host.ple.scan: '4.19' is not one of: 3.10, 5.10");
  EXPECT_EQ(test::error_of("topology: one-core-ht\nhost: {ple: {enabled: true, flavour: xen, scan: '5.10'}}\n" + vms),
            "t.yaml:2:49: host.ple.scan: '5.10' is KVM's kvm_vcpu_on_spin; a Xen host (flavour xen) yields the spinner "
            "itself");
  const ScenarioSpec xen = load("topology: one-core-ht\nhost: {scheduler: {policy: credit2}, ple: {enabled: true}}\n" + vms);
  EXPECT_EQ(xen.host.ple.flavour, hv::PleFlavour::kXen);
  const ScenarioSpec all = load(
      "topology: one-core-ht\nhost:\n  ple: {enabled: true, window: 8192, gap: 41, grow: 0, shrink: 2, max: 65536, "
      "tsc_ghz: 2.26, exit_cost: 1us, flavour: xen}\n" + vms);
  EXPECT_EQ(all.host.ple.window, 8192u);
  EXPECT_EQ(all.host.ple.gap, 41u);
  EXPECT_EQ(all.host.ple.grow, 0u);
  EXPECT_EQ(all.host.ple.shrink, 2u);
  EXPECT_EQ(all.host.ple.max, 65536u);
  EXPECT_DOUBLE_EQ(all.host.ple.tsc_ghz, 2.26);
  EXPECT_EQ(all.host.ple.exit_cost, sim::us(1));
  EXPECT_EQ(all.host.ple.flavour, hv::PleFlavour::kXen);
  EXPECT_FALSE(load("topology: one-core-ht\nhost: {ple: {enabled: true, gap: 0}}\n" + vms).host.ple.active());
  // A free exit with a 1-cycle window made a spinner exit in a loop at one instant.
  EXPECT_EQ(test::error_of("topology: one-core-ht\nhost: {ple: {enabled: true, window: 1, exit_cost: 0}}\n" + vms),
            "t.yaml:2:51: host.ple.exit_cost: is at least 100ns: no VM exit and entry is cheaper (0.4-1.5 us measured)");
  // A negative cost was "out of range [0ns, 1ms]", which 50ns is in: every message names one floor.
  EXPECT_EQ(test::error_of("topology: one-core-ht\nhost: {ple: {enabled: true, exit_cost: -1ns}}\n" + vms),
            "t.yaml:2:40: host.ple.exit_cost: is at least 100ns: no VM exit and entry is cheaper (0.4-1.5 us measured)");
  EXPECT_NE(test::error_of("topology: one-core-ht\nhost: {ple: {enabled: true, exit_cost: 2ms}}\n" + vms)
                .find("host.ple.exit_cost: '2ms' is out of range [100ns, 1ms]"),
            std::string::npos);
}

// host.halt_poll: the kvm module defaults when only `enabled` is given, every key read, a KVM
// host only, and bad values named by line and field.
TEST(ScenarioLoader, HostHaltPollKeys) {
  const std::string vms = "vms:\n  - {name: a, vcpus: 2, workload: {kind: sysbench-cpu}}\n";
  EXPECT_FALSE(load("topology: one-core-ht\n" + vms).host.halt_poll.active());
  const ScenarioSpec on = load("topology: one-core-ht\nhost: {scheduler: {policy: cfs}, halt_poll: {enabled: true}}\n" + vms);
  EXPECT_TRUE(on.host.halt_poll.active());
  EXPECT_EQ(on.host.halt_poll.ns, sim::us(200));
  EXPECT_EQ(on.host.halt_poll.grow, 2u);
  EXPECT_EQ(on.host.halt_poll.grow_start, sim::us(10));
  EXPECT_EQ(on.host.halt_poll.shrink, 0u);
  const ScenarioSpec all = load(
      "topology: one-core-ht\nhost:\n  scheduler: {policy: cfs}\n"
      "  halt_poll: {enabled: true, ns: 500us, grow: 4, grow_start: 20us, shrink: 2}\n" + vms);
  EXPECT_EQ(all.host.halt_poll.ns, sim::us(500));
  EXPECT_EQ(all.host.halt_poll.grow, 4u);
  EXPECT_EQ(all.host.halt_poll.grow_start, sim::us(20));
  EXPECT_EQ(all.host.halt_poll.shrink, 2u);
  EXPECT_FALSE(load("topology: one-core-ht\nhost: {scheduler: {policy: cfs}, halt_poll: {enabled: true, ns: 0}}\n" + vms)
                   .host.halt_poll.active());  // halt_poll_ns=0 turns it off, as in KVM
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  scheduler: {policy: credit2}\n  halt_poll: {enabled: true}\n" + vms)
                .find("t.yaml:4:24: host.halt_poll.enabled: halt polling is KVM's"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  halt_poll: {enabled: true, nss: 1us}\n" + vms)
                .find("host.halt_poll.nss: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  halt_poll: {ns: 2s}\n" + vms).find("host.halt_poll.ns"),
            std::string::npos);
}

// host.kick_boost: KVM 5.3+'s yield at KVM_HC_KICK_CPU, off unless given; a Xen host's kick is an
// event channel send, so under credit2 (or rr) the key is refused rather than ignored.
TEST(ScenarioLoader, HostKickBoostIsKvms) {
  const std::string vms = "vms:\n  - {name: a, vcpus: 2, workload: {kind: sysbench-cpu}}\n";
  EXPECT_FALSE(load("topology: one-core-ht\nhost: {scheduler: {policy: cfs}}\n" + vms).host.kick_boost);
  EXPECT_TRUE(load("topology: one-core-ht\nhost: {scheduler: {policy: cfs}, kick_boost: true}\n" + vms).host.kick_boost);
  EXPECT_EQ(error_of("topology: one-core-ht\nhost:\n  scheduler: {policy: credit2}\n  kick_boost: true\n" + vms),
            "t.yaml:4:15: host.kick_boost: the kick boost is KVM's (KVM_HC_KICK_CPU, Linux 5.3+) and needs a KVM "
            "host, policy cfs; a credit2 host's PV kick is an event channel send, which yields nothing");
  EXPECT_NE(error_of("topology: one-core-ht\nhost: {scheduler: {policy: cfs}, kick_boost: 2}\n" + vms).find("host.kick_boost"),
            std::string::npos);
}

// guest.pv_tlb_flush: a 4.16+ KVM guest's flush, off unless given, refused on a host that does not
// offer it (KVM_FEATURE_PV_TLB_FLUSH is KVM's).
TEST(ScenarioLoader, GuestPvTlbFlushNeedsAKvmHost) {
  const std::string vms = "vms:\n  - {name: a, vcpus: 2, workload: {kind: ebizzy}}\n";
  EXPECT_FALSE(load("topology: one-core-ht\nhost: {scheduler: {policy: cfs}}\n" + vms).guest.pv_tlb_flush);
  EXPECT_TRUE(load("topology: one-core-ht\nhost: {scheduler: {policy: cfs}}\nguest: {pv_tlb_flush: true}\n" + vms)
                  .guest.pv_tlb_flush);
  EXPECT_EQ(error_of("topology: one-core-ht\nhost: {scheduler: {policy: credit2}}\nguest: {pv_tlb_flush: true}\n" + vms),
            "t.yaml:3:23: guest.pv_tlb_flush: the PV TLB flush is KVM's (KVM_FEATURE_PV_TLB_FLUSH, Linux 4.16+ "
            "guests) and needs a KVM host, policy cfs; a credit2 host does not offer it");
}

// host.resched_ipi is the IPI cfs (yield_to, wake-up preemption) and credit2 (tickles) send to a
// remote pCPU; rr sends none, and at sched-gran=core tickles are at once, so there a value (50us,
// or 0 for "at once") ran as if not given, exit 0.
TEST(ScenarioLoader, ReschedIpiOnlyOnACfsOrCredit2Host) {
  const std::string vms = "vms:\n  - {name: a, vcpus: 2, workload: {kind: sysbench-cpu}}\n";
  EXPECT_EQ(load("topology: one-core-ht\nhost: {scheduler: {policy: cfs}, resched_ipi: 50us}\n" + vms).host.exec.resched_ipi,
            sim::us(50));
  EXPECT_EQ(load("topology: one-core-ht\nhost: {scheduler: {policy: credit2}, resched_ipi: 50us}\n" + vms).host.exec.resched_ipi,
            sim::us(50));
  EXPECT_EQ(test::error_of("topology: one-core-ht\nhost: {resched_ipi: 0}\n" + vms),
            "t.yaml:2:21: host.resched_ipi: has no effect under policy rr: only cfs (yield_to, wake-up preemption) and "
            "credit2 (tickles) reschedule a remote pCPU by IPI");
  EXPECT_NE(test::error_of("topology: one-core-ht\nhost: {scheduler: {policy: credit2}, core_scheduling: core, resched_ipi: 50us}\n" + vms)
                .find("host.resched_ipi: has no effect at core_scheduling: core"),
            std::string::npos);
}

// host.cpuidle: a named intel_idle table or a list shallowest first; off when absent; bad
// tables, unordered lists and missing keys named by line and field.
TEST(ScenarioLoader, HostCpuidleStates) {
  const std::string vms = "vms:\n  - {name: a, vcpus: 2, workload: {kind: sysbench-cpu}}\n";
  EXPECT_FALSE(load("topology: one-core-ht\n" + vms).host.cpuidle.enabled());
  const ScenarioSpec skx = load("topology: one-core-ht\nhost: {cpuidle: {states: skx}}\n" + vms);
  ASSERT_EQ(skx.host.cpuidle.states.size(), 3u);
  EXPECT_EQ(skx.host.cpuidle.states[2].exit_latency, sim::us(133));
  const ScenarioSpec list = load(
      "topology: one-core-ht\nhost:\n  cpuidle:\n    states:\n"
      "      - {name: C1, exit_latency: 1us, target_residency: 2us}\n"
      "      - {name: C6, exit_latency: 100us, target_residency: 300us}\n" + vms);
  ASSERT_EQ(list.host.cpuidle.states.size(), 2u);
  EXPECT_EQ(list.host.cpuidle.states[1].name, "C6");
  EXPECT_EQ(list.host.cpuidle.states[1].target_residency, sim::us(300));
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  cpuidle: {states: haswell}\n" + vms)
                .find("t.yaml:3:21: host.cpuidle.states: unknown idle-state table 'haswell' (known: nehalem, skx, skl)"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  cpuidle:\n    states:\n"
                     "      - {name: C6, exit_latency: 100us, target_residency: 300us}\n"
                     "      - {name: C1, exit_latency: 1us, target_residency: 2us}\n" + vms)
                .find("t.yaml:6:9: host.cpuidle.states[1]: idle states go shallowest first"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  cpuidle:\n    states:\n      - {name: C1, exit_latency: 1us}\n" + vms)
                .find("host.cpuidle.states[0]: missing required key 'target_residency'"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  cpuidle: {states: []}\n" + vms).find("host.cpuidle.states: an empty list"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  cpuidle: {governor: menu}\n" + vms).find("host.cpuidle.governor: unknown key"),
            std::string::npos);
  // Names label the states in traces: one word each, no two alike; at most CPUIDLE_STATE_MAX.
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  cpuidle:\n    states:\n"
                     "      - {name: '', exit_latency: 1us, target_residency: 2us}\n" + vms)
                .find("t.yaml:5:16: host.cpuidle.states[0].name: an idle state's name uses only letters"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  cpuidle:\n    states:\n"
                     "      - {name: C1, exit_latency: 1us, target_residency: 2us}\n"
                     "      - {name: C1, exit_latency: 2us, target_residency: 4us}\n" + vms)
                .find("t.yaml:6:16: host.cpuidle.states[1].name: idle state 'C1' is named twice"),
            std::string::npos);
  std::string eleven = "topology: one-core-ht\nhost:\n  cpuidle:\n    states:\n";
  for (int i = 0; i < 11; ++i)
    eleven += "      - {name: C" + std::to_string(i) + ", exit_latency: 1us, target_residency: 2us}\n";
  EXPECT_NE(error_of(eleven + vms).find("host.cpuidle.states: a list of 11 idle states: a cpuidle driver has at most 10"),
            std::string::npos);
}

TEST(ScenarioLoader, GuestContextSwitchKey) {
  const std::string vms = "vms:\n  - {name: a, vcpus: 2, workload: {kind: sysbench-cpu}}\n";
  EXPECT_EQ(load("topology: one-core-ht\n" + vms).guest.context_switch, sim::us(2));
  EXPECT_EQ(load("topology: one-core-ht\nguest: {context_switch: 0s}\n" + vms).guest.context_switch, 0);
  EXPECT_EQ(load("topology: one-core-ht\nguest: {context_switch: 500ns}\n" + vms).guest.context_switch, 500);
  EXPECT_NE(error_of("topology: one-core-ht\nguest: {context_switch: -1us}\n" + vms).find("t.yaml:2:25: guest.context_switch: '-1us' is out of range"),
            std::string::npos);
}

// A guest's PV lock flavour is its hypervisor's: xen on a credit2 (Xen) host, kvm on cfs, unless
// the workload names one.
TEST(ScenarioLoader, PvLockFlavourFollowsTheHostUnlessGiven) {
  const auto flavour = [](const ScenarioSpec& s) { return s.groups[0].workload.params.get("pv_flavour", 0); };
  const std::string vm = "vms:\n  - {name: a, vcpus: 2, workload: {kind: ebizzy, lock: pvticket";
  const ScenarioSpec kvm = load("topology: one-core-ht\nhost: {scheduler: {policy: cfs}}\n" + vm + "}}\n");
  EXPECT_EQ(flavour(kvm), 0.0);
  const ScenarioSpec xen = load("topology: one-core-ht\nhost: {scheduler: {policy: credit2}}\n" + vm + "}}\n");
  EXPECT_EQ(flavour(xen), static_cast<double>(guest::PvFlavour::kXen));
  const ScenarioSpec given = load("topology: one-core-ht\nhost: {scheduler: {policy: credit2}}\n" + vm + ", pv_flavour: kvm}}\n");
  EXPECT_EQ(flavour(given), static_cast<double>(guest::PvFlavour::kKvm));
  // A workload without PV locks gets no such parameter.
  const ScenarioSpec cpu = load("topology: one-core-ht\nhost: {scheduler: {policy: credit2}}\n"
                                "vms:\n  - {name: a, vcpus: 2, workload: {kind: sysbench-cpu}}\n");
  EXPECT_EQ(cpu.groups[0].workload.params.all().count("pv_flavour"), 0u);
}

TEST(ScenarioLoader, HostPleBadValuesNameTheField) {
  const std::string vms = "vms:\n  - {name: a, vcpus: 2, workload: {kind: sysbench-cpu}}\n";
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  ple: {enabled: true, windw: 1}\n" + vms).find("host.ple.windw: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  ple: {window: 0}\n" + vms).find("t.yaml:3:17: host.ple.window: 0 is out of range"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  ple: {window: 8192, max: 4096}\n" + vms).find("host.ple.max"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  ple: {flavour: hyperv}\n" + vms).find("host.ple.flavour"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  ple: {tsc_ghz: 0}\n" + vms).find("host.ple.tsc_ghz"),
            std::string::npos);
  EXPECT_NE(error_of("topology: one-core-ht\nhost:\n  ple: on\n" + vms).find("host.ple"), std::string::npos);
}

}  // namespace vcpusim::app

namespace vcpusim::app {
namespace {

const std::string kOneVm = "topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu}}\n";

// yaml-cpp keeps both copies of a repeated key and every lookup finds the first, so
// `duration: 5s` after `duration: 200ms` was silently ignored.
TEST(ScenarioLoader, DuplicateKeyIsAnErrorAtTheSecondOne) {
  EXPECT_EQ(test::error_of("duration: 200ms\nduration: 5s\n" + kOneVm),
            "t.yaml:2:1: duration: duplicate key (first given on line 1): a mapping holds each key once");
  EXPECT_EQ(test::error_of("topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu, threads: 2, threads: 0}}\n"),
            "t.yaml:3:68: vms[0].workload.threads: duplicate key (first given on line 3): a mapping holds each key once");
}

TEST(ScenarioLoader, SecondYamlDocumentIsAnError) {
  EXPECT_EQ(test::error_of(kOneVm + "---\nduration: 5s\n"),
            "t.yaml:5:1: a second YAML document (after '---'): a file holds one document, and the rest would be ignored");
  EXPECT_EQ(test::error_of("---\n" + kOneVm), "no error");  // a leading marker starts the one document
}

// Invalid UTF-8 once ran to the end and then threw from the JSON writer (exit 1, no line).
TEST(ScenarioLoader, TextThatIsNotUtf8IsAnError) {
  EXPECT_EQ(test::error_of("name: \"ab\xff\"\n" + kOneVm),
            "t.yaml:1:7: name: not UTF-8 text (byte 0xff at character 3 of this value); files are read as UTF-8");
  EXPECT_EQ(test::error_of("name: \"caf\xc3\xa9\"\n" + kOneVm), "no error");
  EXPECT_NE(test::error_of("name: \"a\xed\xa0\x80\"\n" + kOneVm).find("byte 0xed"), std::string::npos);  // a surrogate
  EXPECT_NE(test::error_of("name: \"a\xc0\xaf\"\n" + kOneVm).find("byte 0xc0"), std::string::npos);      // overlong '/'
}

// yaml-cpp ends a never-closed quote at the end of the input: `name: "web` swallowed the lines
// after it, whose keys then silently took their defaults.
TEST(ScenarioLoader, AQuoteThatIsNeverClosedIsAnError) {
  EXPECT_EQ(test::error_of(kOneVm + "name: \"web\nseed: 7\nrepetitions: 3\n"),
            "t.yaml:4:7: name: this quoted string is never closed (no \" follows it), so the rest of the file would be "
            "read as its text");
  EXPECT_EQ(test::error_of(kOneVm + "name: 'web\nseed: 7\n"),
            "t.yaml:4:7: name: this quoted string is never closed (no ' follows it), so the rest of the file would be "
            "read as its text");
  // Closed quotes, escaped or doubled quotes inside them, and a quote in a comment are fine.
  EXPECT_EQ(test::error_of(kOneVm + "name: \"a \\\" b\"\nseed: 7\n"), "no error");
  EXPECT_EQ(test::error_of(kOneVm + "name: 'it''s'\nseed: 7  # \"\n"), "no error");
}

// A raw NUL reached the name as "a\b " in reports; control bytes in comments and text that is not
// UTF-8 there passed unnoticed.
TEST(ScenarioLoader, ControlCharactersAndBadBytesInCommentsAreErrors) {
  EXPECT_EQ(test::error_of(std::string("name: a\x01" "b\n") + kOneVm),
            "t.yaml:1:7: name: a control character (byte 0x1) at character 2 of this value; YAML text is printable");
  EXPECT_EQ(test::error_of(kOneVm + "# caf\xc3(\n"),
            "t.yaml:4:6: not UTF-8 text (byte 0xc3); files are UTF-8 text of printable characters, comments included");
  EXPECT_EQ(test::error_of(kOneVm + "# bell \x07\n"),
            "t.yaml:4:8: a control character (byte 0x7); files are UTF-8 text of printable characters, comments "
            "included");
  EXPECT_EQ(test::error_of(kOneVm + "# caf\xc3\xa9, tab\there\r\n"), "no error");
  // C1 controls (U+0080-U+009F) are outside YAML's printable set too, in a value or a comment;
  // NEL (U+0085) is the one inside it.
  EXPECT_EQ(test::error_of(std::string("name: a\xc2\x81" "b\n") + kOneVm),
            "t.yaml:1:7: name: a control character (U+0081) at character 2 of this value; YAML text is printable");
  EXPECT_EQ(test::error_of(kOneVm + "# csi \xc2\x9b\n"),
            "t.yaml:4:7: a control character (U+009B); files are UTF-8 text of printable characters, comments "
            "included");
  EXPECT_EQ(test::error_of(kOneVm + "# nel \xc2\x85 and \xc2\xa0\n"), "no error");
}

// yaml-cpp ends a line at LF or CRLF only: a lone CR (classic Mac OS line ends, or one left by an
// edit) did not, so `duration: 50ms` after `# short\r` was part of the comment and the run took
// the default 10s, exit 0; at the end of a value, '50ms\r' was refused as "got '50ms'".
TEST(ScenarioLoader, ACarriageReturnWithoutALineFeedIsRefusedAtItsLine) {
  const std::string what =
      "a carriage return not followed by a line feed: lines end in LF or CRLF; a lone CR ends no line here, so what "
      "follows it would be read as part of this line (in a comment, ignored)";
  EXPECT_EQ(test::error_of(kOneVm + "# short\rduration: 50ms\n"), "t.yaml:4:8: " + what);
  EXPECT_EQ(test::error_of("duration: 50ms\r" + kOneVm), "t.yaml:1:15: " + what);
  EXPECT_EQ(test::error_of(kOneVm + "duration: 50ms\r"), "t.yaml:4:15: " + what);
  std::string crlf;  // Windows line ends are fine
  for (const char c : kOneVm + "# a comment\nduration: 50ms\n") crlf += c == '\n' ? std::string("\r\n") : std::string{c};
  EXPECT_EQ(test::error_of(crlf), "no error");
}

// A tag was kept by yaml-cpp and ignored by every reader: `!include f.yaml` loaded as the text.
TEST(ScenarioLoader, YamlTagsAreRefused) {
  EXPECT_EQ(test::error_of("name: !include other.yaml\n" + kOneVm),
            "t.yaml:1:7: name: a YAML tag ('!include'); tags are not read here, so write the value without it");
  EXPECT_EQ(test::error_of("duration: !!float 5s\n" + kOneVm),
            "t.yaml:1:11: duration: a YAML tag ('!!float'); tags are not read here, so write the value without it");
  EXPECT_EQ(test::error_of("!!str seed: 3\n" + kOneVm),
            "t.yaml:1:1: seed: a YAML tag ('!!str'); tags are not read here, so write the value without it");
  EXPECT_EQ(test::error_of("name: 'quoted'\nseed: &s 3\n" + kOneVm), "no error");
}

// The clock counts whole nanoseconds: 0.4ns ran as 0 and 1.5ns as 2, in silence.
TEST(ScenarioLoader, ADurationFinerThanANanosecondIsRefused) {
  EXPECT_EQ(test::error_of("warmup: 0.4ns\n" + kOneVm),
            "t.yaml:1:9: warmup: '0.4ns' is not a whole number of nanoseconds (the model's clock counts ns)");
  EXPECT_EQ(test::error_of("duration: 1.0000000005s\n" + kOneVm),
            "t.yaml:1:11: duration: '1.0000000005s' is not a whole number of nanoseconds (the model's clock counts "
            "ns)");
  EXPECT_EQ(test::error_of("duration: 0.1s\nwarmup: 1.5us\n" + kOneVm), "no error");
}

TEST(ScenarioLoader, AnEmptyKeyIsNamedInTheError) {
  EXPECT_EQ(test::error_of(kOneVm + "\"\": 1\n").substr(0, 28), "t.yaml:4:1: \"\": unknown key ");
}

// '1e30ms' has a unit; the error said it had none.
TEST(ScenarioLoader, ADurationTooLongForTheClockSaysSo) {
  EXPECT_EQ(test::error_of("duration: 1e30ms\n" + kOneVm),
            "t.yaml:1:11: duration: '1e30ms' is too long (durations go up to about 292 years, 9.2e18 ns)");
  EXPECT_EQ(test::error_of("duration: 1e30\n" + kOneVm),
            "t.yaml:1:11: duration: expected a duration with a unit (ns, us, ms, s, m or min), got '1e30'");
  // Past a double's range too: the number did not parse, and the error said it had no unit.
  EXPECT_EQ(test::error_of("duration: 1e400s\n" + kOneVm),
            "t.yaml:1:11: duration: '1e400s' is too long (durations go up to about 292 years, 9.2e18 ns)");
  EXPECT_EQ(test::error_of("duration: 1e-400s\n" + kOneVm),
            "t.yaml:1:11: duration: '1e-400s' is out of range [1us, 100000s]");  // as 1e-20s is
  EXPECT_EQ(test::error_of("duration: 1e400\n" + kOneVm),
            "t.yaml:1:11: duration: expected a duration with a unit (ns, us, ms, s, m or min), got '1e400'");
}

// A 1 ns compute phase made every nanosecond an event: a 10 s run took hours.
TEST(ScenarioLoader, ProgramComputePhasesAreAtLeastOneMicrosecond) {
  const std::string head = "topology: one-core-ht\nvms:\n  - {name: v, vcpus: 1, workload: {kind: program, phases: ";
  EXPECT_EQ(test::error_of(head + "[{compute: 1ns}]}}\n"),
            "t.yaml:3:70: vms[0].workload.phases[0].compute: is shorter than 1us, the shortest compute step (0 for none)");
  EXPECT_EQ(test::error_of(head + "[{compute: 1us}]}}\n"), "no error");
  EXPECT_EQ(test::error_of(head + "[{compute: 0s}, {compute: 5us}]}}\n"), "no error");
}

// yaml-cpp reads UTF-16 and UTF-32 (a byte-order mark, or NUL bytes) as well; the README says a
// scenario is UTF-8, and such a file ran.
TEST(ScenarioLoader, Utf16AndNulBytesAreRefused) {
  std::string utf16 = "\xFF\xFE";
  for (const char c : std::string("topology: one-core-ht\n")) utf16 += std::string{c, '\0'};
  EXPECT_EQ(test::error_of(utf16), "t.yaml: is not UTF-8 text (a UTF-16 or UTF-32 byte-order mark or a NUL byte); save it as UTF-8");
  const char nul[] = "topology: one-core-ht\0\n";
  EXPECT_EQ(test::error_of(std::string(nul, sizeof nul - 1)),
            "t.yaml: is not UTF-8 text (a UTF-16 or UTF-32 byte-order mark or a NUL byte); save it as UTF-8");
}

// A sysbench-memory step (events_per_step x block_size / thread_bandwidth) is at least 1 us, as a
// program's compute phase: 1 KiB at 1e6 MiB/s with one event a step was 1 ns steps, a 20 ms run
// of 64 threads took 3 s of wall time, and sub-nanosecond events wrote above the node's bandwidth.
TEST(ScenarioLoader, SysbenchMemoryStepsAreAtLeastOneMicrosecond) {
  const auto vm = [](const std::string& workload) {
    return "topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-memory, " + workload + "}}\n";
  };
  EXPECT_EQ(error_of(vm("block_size: 1KiB, thread_bandwidth: 1000000, events_per_step: 1")),
            "t.yaml:3:121: vms[0].workload.events_per_step: 1 x block_size / thread_bandwidth (0.976562 ns an event) "
            "is a step of 0.976562 ns, shorter than 1us, the shortest compute step (each step is an event): give more "
            "events per step, or 0 for the fewest that make 1 ms");
  EXPECT_NE(error_of(vm("block_size: 1KiB, thread_bandwidth: 1000000, events_per_step: 1023, version: '0.4'")), "no error");
  EXPECT_EQ(error_of(vm("block_size: 1KiB, thread_bandwidth: 1000000, events_per_step: 1024")), "no error");  // 1 us
  EXPECT_EQ(error_of(vm("block_size: 1KiB, thread_bandwidth: 1000000")), "no error");  // auto: 1 ms
  // credit2-affinity's 0.4 calibration: 1 KiB at 208.5 MiB/s is 4.7 us an event.
  EXPECT_EQ(error_of(vm("block_size: 1KiB, thread_bandwidth: 208.5, events_per_step: 1, version: '0.4', cs_frac: 0.02")),
            "no error");
}

// Instances of a group of count N are NAME-0 .. NAME-N-1: group `cpu` (count 2) and group
// `cpu-1` both made a `cpu-1`, and one's metrics replaced the other's in every output (exit 0).
TEST(ScenarioLoader, AnInstanceNameTwiceIsRefused) {
  EXPECT_EQ(test::error_of("topology: desktop-4c8t\nvms:\n"
                           "  - {name: cpu, count: 2, vcpus: 2, workload: {kind: sysbench-cpu}}\n"
                           "  - {name: cpu-1, vcpus: 2, workload: {kind: sysbench-memory}}\n"),
            "t.yaml:4:12: vms[1].name: its instance 'cpu-1' has the name of an instance of group 'cpu' "
            "(instances of a group of count N are NAME-0 .. NAME-N-1)");
  // Across vms and baremetal too.
  EXPECT_EQ(test::error_of("topology: desktop-4c8t\nvms:\n  - {name: x-0, vcpus: 1, workload: {kind: sysbench-cpu}}\n"
                           "baremetal:\n  - {name: x, count: 2, workload: {kind: sysbench-cpu}}\n"),
            "t.yaml:5:12: baremetal[0].name: its instance 'x-0' has the name of an instance of group 'x-0' "
            "(instances of a group of count N are NAME-0 .. NAME-N-1)");
  EXPECT_EQ(test::error_of("topology: desktop-4c8t\nvms:\n"
                           "  - {name: cpu, count: 2, vcpus: 2, workload: {kind: sysbench-cpu}}\n"
                           "  - {name: cpu-2, vcpus: 2, workload: {kind: sysbench-memory}}\n"),
            "no error");
}

// Guest threads count toward the cap as vCPUs do: 4096 instances of 4096 threads passed the
// vCPU cap and took 3.7 GB before the first event. 244 x 4096 + 576 is the cap itself.
TEST(ScenarioLoader, WorkloadThreadsHaveTheEntityCap) {
  const std::string head = "topology: one-core-ht\nvms:\n"
                           "  - {name: a, count: 244, vcpus: 1, workload: {kind: sysbench-cpu, threads: 4096}}\n";
  EXPECT_EQ(test::error_of(head + "  - {name: b, vcpus: 1, workload: {kind: sysbench-cpu, threads: 576}}\n"), "no error");
  EXPECT_EQ(test::error_of(head + "  - {name: b, vcpus: 1, workload: {kind: sysbench-cpu, threads: 577}}\n"),
            "t.yaml:4:5: vms[1]: brings the scenario to 1000001 workload threads, more than 1000000");
}

// A cap under rr or cfs, or a weight under rr, ran as if not given (exit 0, uncapped figures);
// a cap above 100 x vCPUs (units at sched-gran=core), which Xen refuses (csched2_dom_cntl:
// -EINVAL), was clamped.
TEST(ScenarioLoader, CapsAndWeightsOnlyWhereThePolicyHasThem) {
  const auto vm = [](const std::string& policy, const std::string& extra) {
    return "topology: desktop-4c8t\nhost: {scheduler: {policy: " + policy + "}}\nvms:\n  - {name: a, vcpus: 2, " + extra +
           ", workload: {kind: sysbench-cpu}}\n";
  };
  EXPECT_EQ(test::error_of(vm("cfs", "cap: 50")),
            "t.yaml:4:30: vms[0].cap: a cap is a credit2 setting (xl sched-credit2 -c); the cfs policy has none (CFS "
            "bandwidth control is not modelled)");
  EXPECT_NE(test::error_of(vm("rr", "cap: 50")).find("the rr policy has none"), std::string::npos);
  EXPECT_EQ(test::error_of(vm("rr", "weight: 512")),
            "t.yaml:4:33: vms[0].weight: the rr policy has no weights (use credit2 or cfs)");
  EXPECT_EQ(test::error_of(vm("credit2", "cap: 201")), "t.yaml:4:30: vms[0].cap: 201 is above 100 x its 2 vCPUs, which Xen refuses");
  EXPECT_EQ(test::error_of(vm("credit2", "cap: 200")), "no error");
  EXPECT_EQ(test::error_of(vm("cfs", "weight: 512")), "no error");
  // At sched-gran=core the limit is 100 x units ("Cap is only valid if it's below 100 *
  // nr_of_units"): 3 vCPUs are 2 units on 2-thread cores, and a cap of 250 ran uncapped.
  const auto unit_vm = [](const std::string& cap) {
    return "topology: desktop-4c8t\nhost: {scheduler: {policy: credit2}, core_scheduling: core}\nvms:\n"
           "  - {name: a, vcpus: 3, cap: " + cap + ", workload: {kind: sysbench-cpu}}\n";
  };
  EXPECT_EQ(test::error_of(unit_vm("250")),
            "t.yaml:4:30: vms[0].cap: 250 is above 100 x its 2 scheduling units (sched-gran=core), which Xen refuses");
  EXPECT_EQ(test::error_of(unit_vm("200")), "no error");
}

// A workload key for another variant of the workload ran as if absent: sysbench 1.0 has no
// mutexes for cs_frac, ebizzy's mmap-lock kernel no arena to trim, a native ticket lock no PV
// slow path to kick or halt in.
TEST(ScenarioLoader, WorkloadKeysOfAnotherVariantAreRefused) {
  const auto vm = [](const std::string& workload) {
    return "topology: desktop-4c8t\nvms:\n  - {name: a, vcpus: 2, workload: {" + workload + "}}\n";
  };
  EXPECT_EQ(test::error_of(vm("kind: sysbench-memory, cs_frac: 0.1")),
            "t.yaml:3:68: vms[0].workload.cs_frac: has no effect with version: 1.0 (the default); it acts only with "
            "version: 0.4 or 0.5");
  EXPECT_EQ(test::error_of(vm("kind: sysbench-memory, version: 0.4, cs_frac: 0.1")), "no error");
  EXPECT_EQ(test::error_of(vm("kind: ebizzy, kernel: mmap-lock, chunk_pages: 64")),
            "t.yaml:3:82: vms[0].workload.chunk_pages: has no effect with kernel: mmap-lock; it acts only with "
            "kernel: arena-trim");
  EXPECT_NE(test::error_of(vm("kind: ebizzy, kernel: arena-trim, sections: 8")).find("acts only with kernel: mmap-lock"),
            std::string::npos);
  EXPECT_EQ(test::error_of(vm("kind: ebizzy, kernel: arena-trim, chunk_pages: 64")), "no error");
  EXPECT_EQ(test::error_of(vm("kind: dbench, lock: ticket, pv_flavour: xen")),
            "t.yaml:3:76: vms[0].workload.pv_flavour: has no effect with lock: ticket; it acts only with lock: pvticket");
  for (const char* pv : {"spin_threshold: 100", "kick_latency: 2us"})
    EXPECT_NE(test::error_of(vm(std::string("kind: dbench, ") + pv)).find("lock: ticket (the default)"), std::string::npos) << pv;
  EXPECT_EQ(test::error_of(vm("kind: dbench, lock: pvticket, pv_flavour: xen, spin_threshold: 100, kick_latency: 2us")),
            "no error");
  // hammerdb's latches default to adaptive, so its spin bound acts without `lock:`.
  EXPECT_EQ(test::error_of(vm("kind: hammerdb, spin_wait: 100")), "no error");
  EXPECT_NE(test::error_of(vm("kind: dbench, spin_wait: 100")).find("acts only with lock: adaptive"), std::string::npos);
  // On bare metal no hypervisor kicks a halted PV waiter: host tasks halted, 97k times a second.
  const auto bm = [](const std::string& workload) {
    return "topology: desktop-4c8t\nbaremetal:\n  - {name: b, workload: {" + workload + "}}\n";
  };
  EXPECT_EQ(test::error_of(bm("kind: ebizzy, threads: 4, lock: pvticket")),
            "t.yaml:3:58: baremetal[0].workload.lock: pvticket needs a hypervisor to kick its halted waiters; bare-metal "
            "Linux runs the native ticket lock (use lock: ticket)");
  EXPECT_NE(test::error_of(bm("kind: hammerdb, lock: pvticket")).find("pvticket needs a hypervisor"), std::string::npos);
  EXPECT_EQ(test::error_of(bm("kind: ebizzy, threads: 4, lock: ticket")), "no error");
}

// Pairs the model bent silently: a per-CPU page list high mark at or below its batch was raised
// to batch + 1, and a top pad as large as the chunk was cut (exit 0 both).
TEST(ScenarioLoader, KeysThatMustExceedAnotherAreCheckedAgainstIt) {
  const auto vm = [](const std::string& workload) {
    return "topology: desktop-4c8t\nvms:\n  - {name: a, vcpus: 2, workload: {kind: ebizzy, kernel: arena-trim, " +
           workload + "}}\n";
  };
  EXPECT_EQ(test::error_of(vm("pcp_batch: 4096, pcp_high: 2")),
            "t.yaml:3:97: vms[0].workload.pcp_high: 2 is not above pcp_batch (4096)");
  EXPECT_EQ(test::error_of(vm("pcp_batch: 200")),
            "t.yaml:3:81: vms[0].workload.pcp_batch: pcp_high (186, the default) must be above it");
  EXPECT_NE(test::error_of(vm("top_pad_pages: 128")).find("top_pad_pages: chunk_pages (128, the default) must be above it"),
            std::string::npos);
  EXPECT_EQ(test::error_of(vm("pcp_batch: 4096, pcp_high: 4097, chunk_pages: 64, top_pad_pages: 63")), "no error");
}

// A YAML escape puts a control character into a quoted name: "evil\nrow" split the heading of a
// markdown compare table, and a tab in a topology's name went into every run header.
TEST(ScenarioLoader, NamesHoldNoControlCharacters) {
  const std::string vms = "vms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu}}\n";
  EXPECT_EQ(test::error_of("name: \"evil\\nrow\"\ntopology: desktop-4c8t\n" + vms),
            "t.yaml:1:7: name: a scenario's name holds no control character (a newline or tab breaks the tables it heads)");
  EXPECT_EQ(test::error_of("topology: {name: \"a\\tb\", sockets: 1, cores_per_socket: 2, threads_per_core: 1, nodes: 1}\n" + vms),
            "t.yaml:1:18: topology.name: a topology's name holds no control character (reports print it)");
  EXPECT_EQ(test::error_of("name: \"caf\u00e9 2\"\ntopology: desktop-4c8t\n" + vms), "no error");
}

// Sizes take units wherever they are sizes: cache_footprint refused 64KiB ("expected an
// integer") while value_size took 16KiB.
TEST(ScenarioLoader, EveryByteCountTakesUnits) {
  const ScenarioSpec s = test::load(
      "topology: desktop-4c8t\nvms:\n  - {name: a, vcpus: 2, workload: {kind: mutilate, cache_footprint: 64KiB, "
      "value_size: 16KiB}}\n");
  EXPECT_EQ(s.groups[0].workload.params.get("cache_footprint", 0), 65536.0);
  EXPECT_EQ(s.groups[0].workload.params.get("value_size", 0), 16384.0);
}

// Every thread of a workload counts toward the cap, not only its `threads:` key: a program's
// threads (no such parameter), Cassandra's read and write stages and memcached's workers passed
// it (4096 instances of 8193 Cassandra threads ran out of memory after 4 s, exit 2 by luck).
TEST(ScenarioLoader, EveryThreadAWorkloadRunsHasTheEntityCap) {
  const std::string head = "topology: one-core-ht\nvms:\n";
  EXPECT_EQ(test::error_of(head + "  - {name: a, count: 245, vcpus: 1, workload: {kind: program, threads: 4096, "
                                  "phases: [{compute: 1ms}]}}\n"),
            "t.yaml:3:5: vms[0]: brings the scenario to 1003520 workload threads, more than 1000000");
  EXPECT_EQ(test::error_of(head + "  - {name: a, count: 244, vcpus: 1, workload: {kind: program, threads: 4096, "
                                  "phases: [{compute: 1ms}]}}\n"),
            "no error");
  EXPECT_EQ(test::error_of(head + "  - {name: a, count: 123, vcpus: 1, workload: {kind: cassandra, threads: 1, "
                                  "concurrent_reads: 4096, concurrent_writes: 4096}}\n"),
            "t.yaml:3:5: vms[0]: brings the scenario to 1007739 workload threads, more than 1000000");
  EXPECT_EQ(test::error_of(head + "  - {name: a, count: 980, vcpus: 1, workload: {kind: mutilate, threads: 1, "
                                  "server_threads: 1024}}\n"),
            "t.yaml:3:5: vms[0]: brings the scenario to 1004500 workload threads, more than 1000000");
}

// The cap was checked after every group was built (seconds for a million), at 1:1 with no field.
TEST(ScenarioLoader, TheEntityCapNamesTheGroupThatPassesIt) {
  std::string yaml = "topology: one-core-ht\nvms:\n";
  for (int i = 0; i < 300; ++i)
    yaml += "  - {name: g" + std::to_string(i) + ", count: 4096, vcpus: 1, workload: {kind: sysbench-cpu}}\n";
  // 245 groups of 4096 are 1,003,520: the 245th (vms[244], line 247) passes the cap.
  EXPECT_EQ(test::error_of(yaml), "t.yaml:247:5: vms[244]: brings the scenario to 1003520 vCPUs and tasks, more than 1000000");
}

// A group is charged against the cap before its instances are built: one group of 4096 VMs of
// 4096 vCPUs took 7.7 s and 2 GB to build before the cap refused it. So an error that building
// would find (here the first instance's hard affinity, on a thread nosmt disabled) is not
// reached, and the cap is what is reported.
TEST(ScenarioLoader, AGroupPastTheCapIsRefusedBeforeItsInstancesAreBuilt) {
  const std::string head = "topology: one-core-ht\nhost: {smt: off}\nvms:\n  - {name: a, ";
  const std::string tail = "affinity: {hard: 'cpus:[1]'}, workload: {kind: sysbench-cpu}}\n";
  EXPECT_EQ(test::error_of(head + "count: 4096, vcpus: 4096, " + tail),
            "t.yaml:4:5: vms[0]: brings the scenario to 16777216 vCPUs and tasks, more than 1000000");
  // Within the cap, building reaches the instance and finds its affinity.
  EXPECT_EQ(test::error_of(head + "count: 2, vcpus: 2, " + tail),
            "t.yaml:4:45: vms[0].affinity: hard affinity of a-0 vCPU 0 holds no usable hardware thread "
            "(host.smt: off disables the second thread of each core)");
}

TEST(ScenarioLoader, OutOfRangeValuesAreReportedAsWritten) {
  // vcpus was narrowed to 32 bits before its range check: 4294967297 ran as 1 vCPU.
  EXPECT_EQ(test::error_of("topology: one-core-ht\nvms:\n  - {name: a, vcpus: 4294967297, workload: {kind: sysbench-cpu}}\n"),
            "t.yaml:3:22: vms[0].vcpus: 4294967297 is out of range [1, 4096]");
  EXPECT_EQ(test::error_of("topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu, threads: 4294967297}}\n"),
            "t.yaml:3:65: vms[0].workload.threads: 4294967297 is out of range [1, 4096]");
  EXPECT_EQ(test::error_of("topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-memory, mem_intensity: 1.0000000000000002}}\n"),
            "t.yaml:3:74: vms[0].workload.mem_intensity: 1.0000000000000002 is out of range [0, 1]");
}

// The bounds printed with six digits: chunk_pages' 1048576 read 1.04858e+06, so 1048580 was
// "out of range [2, 1.04858e+06]", a range that seemed to hold it.
TEST(ScenarioLoader, OutOfRangeBoundsArePrintedExactly) {
  EXPECT_EQ(test::error_of("topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, workload: {kind: ebizzy, kernel: arena-trim, "
                           "chunk_pages: 1048580}}\n"),
            "t.yaml:3:83: vms[0].workload.chunk_pages: 1048580 is out of range [2, 1048576]");
  EXPECT_EQ(test::error_of("topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-memory, "
                           "block_size: 1073741825}}\n"),
            "t.yaml:3:71: vms[0].workload.block_size: 1073741825 is out of range [1024, 1073741824]");
}

TEST(ScenarioLoader, SizesBeyondEightExbibytesAndEmptyNamesAreErrors) {
  EXPECT_EQ(test::error_of("topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, memory: {size: 1e30GiB}, workload: {kind: sysbench-cpu}}\n"),
            "t.yaml:3:40: vms[0].memory.size: expected a whole number of bytes such as 512MiB or 1GiB (below 8 EiB), got '1e30GiB'");
  // Half a byte was taken (and rounded).
  EXPECT_EQ(test::error_of("topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, memory: {size: 0.5B}, workload: {kind: sysbench-cpu}}\n"),
            "t.yaml:3:40: vms[0].memory.size: expected a whole number of bytes such as 512MiB or 1GiB (below 8 EiB), got '0.5B'");
  EXPECT_EQ(test::error_of("topology: one-core-ht\nvms:\n  - {name: a, vcpus: 1, memory: {size: 1.5KiB}, workload: {kind: sysbench-cpu}}\n"),
            "no error");
  EXPECT_EQ(test::error_of("name: \"\"\n" + kOneVm),
            "t.yaml:1:7: name: a scenario's name is not blank (it names the records and reports)");
}

// stoul read node:1e3 as node 1 and node:-1 as node 4294967295.
TEST(ScenarioLoader, MemoryPlacementNodeIsAWholeNumber) {
  for (const char* bad : {"node:1e3", "node:1.9", "node:1abc", "node:+1", "node:-1", "node:"}) {
    SCOPED_TRACE(bad);
    EXPECT_NE(test::error_of("topology: xeon-x5570-2s\nvms:\n  - {name: a, vcpus: 1, memory: {placement: '" +
                             std::string(bad) + "'}, workload: {kind: sysbench-cpu}}\n")
                  .find("vms[0].memory.placement: '" + std::string(bad) + "': expected node:N, N a node number"),
              std::string::npos);
  }
  EXPECT_EQ(test::error_of("topology: xeon-x5570-2s\nvms:\n  - {name: a, vcpus: 1, memory: {placement: 'node:1'}, "
                           "workload: {kind: sysbench-cpu}}\n"),
            "no error");
}

TEST(ScenarioLoader, BlankNamesAreErrors) {
  EXPECT_EQ(test::error_of("name: \"   \"\n" + kOneVm),
            "t.yaml:1:7: name: a scenario's name is not blank (it names the records and reports)");
  EXPECT_NE(test::error_of("topology: {name: \" \", sockets: 1, cores_per_socket: 1, threads_per_core: 2, nodes: 1}\n"
                           "vms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu}}\n")
                .find("topology.name: a topology's name is not blank"),
            std::string::npos);
}

// Without name: a scenario or topology is named after its file; a file named " .yaml" was
// refused as "missing required key 'name'", a key that is optional.
TEST(ScenarioLoader, ABlankNameFromTheFilesNameSaysSo) {
  const std::string blank_scenario = [&] {
    try {
      app::load_scenario(app::YamlReader::load_string(kOneVm, " .yaml"));
    } catch (const app::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  }();
  EXPECT_EQ(blank_scenario, " .yaml:1:1: a scenario's name is not blank (it names the records and reports); without name: "
                            "it is the file's name, here blank: give name:");
  const auto dir = std::filesystem::temp_directory_path() / ("vcpusim_blank_topo_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string topo = (dir / " .yaml").string();
  std::ofstream(topo) << "sockets: 1\ncores_per_socket: 1\nthreads_per_core: 2\nnodes: 1\n";
  EXPECT_EQ(test::error_of("topology: '" + topo + "'\nvms:\n  - {name: a, vcpus: 1, workload: {kind: sysbench-cpu}}\n"),
            topo + ":1:1: a topology's name is not blank (reports print it); without name: it is the file's name, here "
                   "blank: give name:");
  std::filesystem::remove_all(dir);
}

// An alias that contains itself sent the load-time walk into unbounded recursion (SIGSEGV), and
// aliases of aliases ("billion laughs", 9 lines) into exponential time.
TEST(ScenarioLoader, AliasGraphsAreBounded) {
  EXPECT_NE(test::error_of("x: &r [*r]\n").find("nested deeper than 64 levels (an alias that contains itself?)"),
            std::string::npos);
  std::string laughs = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 8; ++i) {
    laughs += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) laughs += (k ? ", *l" : "*l") + std::to_string(i - 1);
    laughs += "]\n";
  }
  EXPECT_NE(test::error_of(laughs).find("the document expands to more than 1000000 nodes"), std::string::npos);
}

// Without aliases the node cap was checked only once yaml-cpp had built every node: a 63 MiB
// flow list of 33 million entries took 74 s and 15 GB before its refusal. The parser's events
// are counted first (keys included, so the refusal starts at twice the cap), at the entry that
// passes it.
TEST(ScenarioLoader, AHugeDocumentIsRefusedBeforeItsNodesAreBuilt) {
  std::string list = "x: [1";
  for (int i = 1; i < 2'000'001; ++i) list += ",1";
  list += "]\n";
  // Events: the mapping, its key, the list, then entry k as event 4 + k; entry 1999997, at
  // column 5 + 2k, is event 2000001.
  EXPECT_EQ(test::error_of(list), "t.yaml:1:3999999: the document has more than 1000000 nodes (no scenario comes near)");
}

// Paths take a group by name or by index, so a name of digits only made `--set vms.1.vcpus=3`
// change another group.
TEST(ScenarioLoader, AGroupNameOfDigitsOnlyIsRefused) {
  EXPECT_EQ(test::error_of("topology: desktop-4c8t\nvms:\n  - {name: \"1\", vcpus: 1, workload: {kind: sysbench-cpu}}\n"),
            "t.yaml:3:12: vms[0].name: a name needs a letter, '-' or '_': '1' reads as a list index in paths such as "
            "vms.1.vcpus");
  EXPECT_EQ(test::error_of("topology: desktop-4c8t\nvms:\n  - {name: v1, vcpus: 1, workload: {kind: sysbench-cpu}}\n"), "no error");
}

// Soft affinity is Xen's: under cfs, and for bare-metal tasks, it ran as if not given.
TEST(ScenarioLoader, SoftAffinityOnlyOnAXenHost) {
  const std::string vm = "vms:\n  - {name: a, vcpus: 2, affinity: {soft: 'node:1'}, workload: {kind: sysbench-cpu}}\n";
  EXPECT_EQ(test::error_of("topology: xeon-x5570-2s\nhost: {scheduler: {policy: cfs}}\n" + vm),
            "t.yaml:4:42: vms[0].affinity.soft: soft affinity is Xen's; a KVM host (cfs) has none: use hard affinity (vcpupin)");
  EXPECT_EQ(test::error_of("topology: xeon-x5570-2s\nhost: {scheduler: {policy: credit2}}\n" + vm), "no error");
  EXPECT_EQ(test::error_of("topology: xeon-x5570-2s\nbaremetal:\n  - {name: t, affinity: {soft: 'cpus:[0]'}, "
                           "workload: {kind: sysbench-cpu}}\n"),
            "t.yaml:3:32: baremetal[0].affinity.soft: soft affinity is Xen's; a bare-metal Linux task has only hard "
            "affinity (taskset)");
  // 'all' is the absence of a soft affinity, and per-vCPU settings are checked as well.
  EXPECT_EQ(test::error_of("topology: xeon-x5570-2s\nhost: {scheduler: {policy: cfs}}\nvms:\n  - {name: a, vcpus: 1, "
                           "affinity: {soft: all}, workload: {kind: sysbench-cpu}}\n"),
            "no error");
  EXPECT_NE(test::error_of("topology: xeon-x5570-2s\nhost: {scheduler: {policy: cfs}}\nvms:\n  - {name: a, vcpus: 1, "
                           "affinity: {per_vcpu: [{soft: 'node:0'}]}, workload: {kind: sysbench-cpu}}\n")
                .find("soft affinity is Xen's"),
            std::string::npos);
}

}  // namespace
}  // namespace vcpusim::app
