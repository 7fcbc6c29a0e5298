// SPDX-License-Identifier: MIT
// This file defines TopologySpec, the plain description of a machine that app/ reads from YAML
// (a preset in configs/topologies/ or inline) and build_topology() turns into a Topology. It is a
// plain struct so topology/ is tested without YAML.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vcpusim::topo {

struct TopologySpec {
  std::string name;
  std::uint32_t sockets = 1;
  std::uint32_t cores_per_socket = 1;
  std::uint32_t threads_per_core = 1;
  /// NUMA nodes in the machine. Either a multiple of `sockets` (nodes inside a socket, e.g. AMD
  /// EPYC NPS4) or a divisor of it (several sockets per node). Cores are dealt to nodes in
  /// contiguous blocks, in socket order.
  std::uint32_t nodes = 1;
  /// ACPI SLIT distances, nodes x nodes, row-major; 10 on the diagonal. Empty: 10 local, 20 remote.
  std::vector<double> distances;
  /// Measured memory load latency from node i to node j in ns, row-major. The model's remote
  /// slowdown uses latency ratios, because SLIT/10 overstates them (reference: NUMA factors).
  /// Empty: derived from the distances as ratio = distance / 10 (pessimistic, stated).
  std::vector<double> latency_ns;
  /// Sustainable DRAM bandwidth of one node's memory in MB/s (STREAM-like), for the bandwidth
  /// model of memory-bound work. 0: unlimited (no bandwidth sharing modelled).
  double node_bandwidth_mbps = 0.0;
  /// Remote bandwidth as a fraction of local (QPI/UPI/Infinity Fabric limited).
  double remote_bandwidth_ratio = 0.5;
  /// Cores sharing one last-level cache, in contiguous blocks of cores (Linux's MC domain,
  /// cpu_coregroup_mask). An LLC lies inside one node and one socket, so it divides the cores a
  /// node has within a socket. 0: that whole block (one LLC per socket, or per node where a
  /// socket holds several), as on Intel's server parts; AMD Zen's LLC is a CCX of 4 (Zen 2) or
  /// 8 (Zen 3) cores.
  std::uint32_t cores_per_llc = 0;
};

}  // namespace vcpusim::topo
