// SPDX-License-Identifier: MIT
// This file defines Topology, the facade every scheduler sees of a machine: cheap queries over
// flat arrays built once from a Boost.Graph containment graph (machine -> nodes/sockets -> cores
// -> hardware threads) and an Eigen distance matrix. Boost descriptors never leave topology/:
// credit2 and CFS need only predicates such as siblings(), same_core() and node_of().
// A Topology is immutable after build_topology(); all queries are O(1) or return a CpuSet.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "topology/cpuset.h"
#include "topology/topology_spec.h"

namespace vcpusim::topo {

using CoreId = std::uint32_t;
using SocketId = std::uint32_t;
using NodeId = std::uint32_t;

/// Kind of a vertex in the containment graph.
enum class Level : std::uint8_t { kMachine, kNode, kSocket, kCore, kThread };

class TopologyGraph;  // Boost.Graph, private to topology/

/// Numbering. Cores are numbered socket by socket (core c is in socket c / cores_per_socket) and
/// NUMA nodes own contiguous blocks of cores (TopologySpec::nodes). Hardware threads follow the
/// enumeration Linux gets from the ACPI MADT on Intel and AMD servers: first the first thread of
/// every core, in core order, then every core's second thread, and so on. So thread
/// t = smt_index * num_cores() + core: on a 4-core/8-thread desktop, threads 0-3 are the first
/// threads of cores 0-3 and 4-7 their siblings; on a 2-socket 4-core X5570, node 0 holds threads
/// 0-3 and 8-11 (`numactl --hardware` on such a box prints the same lists).
class Topology {
 public:
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;
  ~Topology();

  const std::string& name() const { return name_; }
  std::uint32_t num_threads() const { return static_cast<std::uint32_t>(core_of_.size()); }
  std::uint32_t num_cores() const { return static_cast<std::uint32_t>(core_threads_.size()); }
  std::uint32_t num_sockets() const { return static_cast<std::uint32_t>(socket_threads_.size()); }
  std::uint32_t num_nodes() const { return static_cast<std::uint32_t>(node_threads_.size()); }
  std::uint32_t threads_per_core() const { return threads_per_core_; }

  CoreId core_of(ThreadId t) const { return core_of_[t]; }
  SocketId socket_of(ThreadId t) const { return socket_of_[t]; }
  NodeId node_of(ThreadId t) const { return node_of_[t]; }
  NodeId node_of_core(CoreId c) const { return node_of_[core_threads_[c].first()]; }

  /// All threads sharing t's last-level cache, t included (Linux cpu_coregroup_mask).
  const CpuSet& llc_mask(ThreadId t) const { return llc_threads_[llc_of_core_[core_of_[t]]]; }
  bool same_llc(ThreadId a, ThreadId b) const { return llc_of_core_[core_of_[a]] == llc_of_core_[core_of_[b]]; }
  /// All threads of t's core, t included (Linux cpu_smt_mask).
  const CpuSet& smt_mask(ThreadId t) const { return core_threads_[core_of_[t]]; }
  /// The other threads of t's core.
  CpuSet siblings(ThreadId t) const { return smt_mask(t) - CpuSet::single(t); }
  /// The threads of t's core as a short list (t included), for per-event loops: walking a
  /// CpuSet visits all of its words, this visits threads_per_core entries.
  const std::vector<ThreadId>& smt_list(ThreadId t) const { return core_thread_list_[core_of_[t]]; }
  const CpuSet& threads_of_core(CoreId c) const { return core_threads_[c]; }
  const CpuSet& threads_of_socket(SocketId s) const { return socket_threads_[s]; }
  const CpuSet& threads_of_node(NodeId n) const { return node_threads_[n]; }
  const CpuSet& all_threads() const { return all_; }

  bool same_core(ThreadId a, ThreadId b) const { return core_of_[a] == core_of_[b]; }
  bool same_socket(ThreadId a, ThreadId b) const { return socket_of_[a] == socket_of_[b]; }
  bool same_node(ThreadId a, ThreadId b) const { return node_of_[a] == node_of_[b]; }

  /// ACPI SLIT distance between nodes (10 = local).
  double distance(NodeId a, NodeId b) const { return distance_(a, b); }
  const Eigen::MatrixXd& distances() const { return distance_; }
  /// Memory latency from a thread on node a to memory on node b, over the local latency of a.
  double latency_ratio(NodeId a, NodeId b) const { return latency_ratio_(a, b); }
  const Eigen::MatrixXd& latency_ratios() const { return latency_ratio_; }
  double node_bandwidth_mbps() const { return node_bandwidth_mbps_; }
  double remote_bandwidth_ratio() const { return remote_bandwidth_ratio_; }

  /// The containment graph itself, for tools that walk it (reports, traces).
  const TopologyGraph& graph() const { return *graph_; }

  /// The spec it was built from (resolved: distances and latencies filled in). When the input
  /// had no latency_ns, the resolved latency_ns holds the SLIT distances themselves: not ns,
  /// but their ratios are the latency ratios used, which is all the model reads.
  const TopologySpec& spec() const { return spec_; }

 private:
  friend Topology build_topology(const TopologySpec&);
  Topology();

  std::string name_;
  std::uint32_t threads_per_core_ = 1;
  std::vector<CoreId> core_of_;
  std::vector<SocketId> socket_of_;
  std::vector<NodeId> node_of_;
  std::vector<CpuSet> core_threads_, socket_threads_, node_threads_, llc_threads_;
  std::vector<std::uint32_t> llc_of_core_;
  std::vector<std::vector<ThreadId>> core_thread_list_;
  CpuSet all_;
  Eigen::MatrixXd distance_, latency_ratio_;
  double node_bandwidth_mbps_ = 0.0;
  double remote_bandwidth_ratio_ = 0.5;
  std::unique_ptr<TopologyGraph> graph_;
  TopologySpec spec_;
};

/// Thrown by build_topology() for an inconsistent spec; `field` names the offending key.
struct TopologyError : std::runtime_error {
  TopologyError(std::string f, const std::string& what, int idx = -1)
      : std::runtime_error(what), field(std::move(f)), index(idx) {}
  std::string field;
  /// For a matrix field (distances, latency_ns): the row-major element at fault, else -1. Lets
  /// app/ point at the element's line in the YAML.
  int index = -1;
};

/// Validates a spec and builds the machine. Throws TopologyError.
Topology build_topology(const TopologySpec& spec);

}  // namespace vcpusim::topo
