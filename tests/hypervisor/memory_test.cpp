// SPDX-License-Identifier: MIT
// Pins the memory side of the execution model: a node's DRAM bandwidth is shared by the running
// work that draws on it, and the remote-memory share of running time is accounted per domain.
#include <gtest/gtest.h>

#include "test_host.h"

namespace vcpusim::test {
namespace {

constexpr double kMiB = 1.048576;  // MB per MiB

// Two nodes of 4 single-thread cores; node 0 = threads 0-3, node 1 = threads 4-7. Equal
// latencies, so only bandwidth differs between placements.
topo::TopologySpec bw_machine(double node_bw_mbps) {
  topo::TopologySpec s = two_nodes(4, 1, 1.0);
  s.node_bandwidth_mbps = node_bw_mbps;
  return s;
}

double run_memory_vm(double node_bw, std::uint32_t threads, std::vector<double> memory_on_node, topo::CpuSet hard) {
  TestHost h(bw_machine(node_bw));
  hv::DomainSpec d = vm("m", threads, hard);
  d.memory_on_node = std::move(memory_on_node);
  const auto v = h.add_vm(d, workload("sysbench-memory", {{"threads", threads}, {"thread_bandwidth", 5000}, {"mem_intensity", 1.0}}));
  h.start();
  h.run_until(sim::seconds(2));
  return v.os->results().throughput;  // MiB/s
}

}  // namespace

// One thread alone draws 5000 MiB/s = 5242.9 MB/s, under a 10000 MB/s node: unthrottled.
// Four threads ask 20971.5 MB/s of it: each gets 10000/20971.5 of its demand, and with
// mem_intensity 1 its rate is that share, so together they move exactly the node's 10000 MB/s
// = 9536.7 MiB/s. Tolerance: one 1 ms step per thread at the end of 2 s (0.05%) plus the
// context switch at start.
TEST(MemoryBandwidth, NodeBandwidthIsSharedWhenOversubscribed) {
  EXPECT_NEAR(run_memory_vm(10000, 1, {1.0, 0.0}, cpus({0})), 5000.0, 5000.0 * 0.003);
  EXPECT_NEAR(run_memory_vm(10000, 4, {1.0, 0.0}, cpus({0, 1, 2, 3})), 10000.0 / kMiB, 10000.0 / kMiB * 0.003);
}

TEST(MemoryBandwidth, UnlimitedNodeDoesNotThrottle) {
  EXPECT_NEAR(run_memory_vm(0, 4, {1.0, 0.0}, cpus({0, 1, 2, 3})), 4 * 5000.0, 4 * 5000.0 * 0.003);
}

// Interleaved memory spreads the demand over both nodes: 20971.5 / 2 per node against 10000,
// a share of 0.9537 on each, so 4 threads move 20000 MB/s = 19073.5 MiB/s.
TEST(MemoryBandwidth, InterleavingSpreadsTheDemand) {
  EXPECT_NEAR(run_memory_vm(10000, 4, {0.5, 0.5}, cpus({0, 1, 2, 3})), 20000.0 / kMiB, 20000.0 / kMiB * 0.003);
}

TEST(MemoryBandwidth, DomainsOnOneNodeShareIt) {
  // Two 2-thread domains whose memory is on node 0, running on different cores: the node's
  // share is one pool for both, so each gets half of the 10000 MB/s.
  TestHost h(bw_machine(10000));
  hv::DomainSpec a = vm("a", 2, cpus({0, 1}));
  a.memory_on_node = {1.0, 0.0};
  const auto va = h.add_vm(a, workload("sysbench-memory", {{"threads", 2}, {"thread_bandwidth", 5000}, {"mem_intensity", 1.0}}));
  hv::DomainSpec b = vm("b", 2, cpus({2, 3}));
  b.memory_on_node = {1.0, 0.0};
  h.add_vm(b, workload("sysbench-memory", {{"threads", 2}, {"thread_bandwidth", 5000}, {"mem_intensity", 1.0}}));
  h.start();
  h.run_until(sim::seconds(1));
  const double shared = va.os->results().throughput;
  // All four run throughout here: share 10000/20971.5 -> 2 threads move 5000 MB/s.
  EXPECT_NEAR(shared, 5000.0 / kMiB, 5000.0 / kMiB * 0.005);
  EXPECT_NEAR(h.host().bandwidth_load(0), 4 * 5000 * kMiB, 1e-6);
}

// Running time off the memory's node is counted as remote: pinned to the far node, all of it;
// to the near node, none; with memory interleaved over two nodes, half.
TEST(RemoteMemory, ShareOfRunningTimeOffTheMemoryNode) {
  struct Case { topo::CpuSet hard; std::vector<double> mem; double want; };
  for (const Case& c : {Case{cpus({4}), {1.0, 0.0}, 1.0}, Case{cpus({0}), {1.0, 0.0}, 0.0},
                        Case{cpus({0}), {0.5, 0.5}, 0.5}}) {
    TestHost h(bw_machine(0));
    hv::DomainSpec d = vm("r", 1, c.hard);
    d.memory_on_node = c.mem;
    const auto v = h.add_vm(d, workload("sysbench-cpu"));
    h.start();
    h.run_until(sim::ms(500));
    const hv::VcpuStats st = h.host().vcpu_stats(v.vcpus[0]);
    ASSERT_GT(st.running, 0);
    EXPECT_NEAR(st.remote_run / static_cast<double>(st.running), c.want, 1e-9);
  }
}

}  // namespace vcpusim::test
