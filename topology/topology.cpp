// SPDX-License-Identifier: MIT
// This file implements build_topology(): it validates a TopologySpec, naming the offending field
// in a TopologyError so app/ can point at the YAML line, fills in the defaults (Linux's SLIT
// 10/20, latency ratios from the distances when none were measured), builds the containment
// graph and derives the flat arrays and CpuSets every query reads. All the work is done once;
// the queries in topology.h are array lookups.
#include "topology/topology.h"

#include <cmath>
#include <cstdint>
#include <sstream>

#include "topology/topology_graph.h"

namespace vcpusim::topo {
namespace {

// Linux include/linux/topology.h: LOCAL_DISTANCE 10, REMOTE_DISTANCE 20. The kernel itself uses
// them when firmware gives no SLIT (numa_set_distance() is never called, node_distance() falls
// back to __node_distance()).
constexpr double kLocalDistance = 10.0;
constexpr double kRemoteDistance = 20.0;
// The largest SLIT entry: ACPI stores each distance in one byte and reserves 0xFF for an
// unreachable node (ACPI 6.x, 5.2.17 "System Locality Distance Information Table").
constexpr double kMaxDistance = 254.0;
// Xen and Linux both cap SMT at far fewer; 8 covers POWER8 SMT8, the widest in practice.
constexpr std::uint32_t kMaxThreadsPerCore = 8;

std::string str(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// The cores a node has within a socket: the largest block an LLC may cover, and its size when
// cores_per_llc is 0. (check_shape has made nodes a multiple or a divisor of sockets.)
std::uint32_t llc_block(const TopologySpec& s) {
  return s.nodes > s.sockets ? s.cores_per_socket / (s.nodes / s.sockets) : s.cores_per_socket;
}

void check_shape(const TopologySpec& s) {
  if (s.sockets < 1) throw TopologyError("sockets", "must be at least 1");
  if (s.cores_per_socket < 1) throw TopologyError("cores_per_socket", "must be at least 1");
  if (s.threads_per_core < 1 || s.threads_per_core > kMaxThreadsPerCore)
    throw TopologyError("threads_per_core", std::to_string(s.threads_per_core) + " is out of range [1, " +
                                                std::to_string(kMaxThreadsPerCore) + "]");
  // In 64 bits: the product of three 32-bit counts must not wrap before it is compared.
  const std::uint64_t cores = std::uint64_t{s.sockets} * s.cores_per_socket;
  const std::uint64_t threads = cores * s.threads_per_core;
  if (threads > CpuSet::kCapacity)
    throw TopologyError("cores_per_socket",
                        "sockets x cores_per_socket x threads_per_core = " + std::to_string(threads) +
                            " hardware threads, more than the " + std::to_string(CpuSet::kCapacity) +
                            " a CpuSet holds");
  if (s.nodes < 1) throw TopologyError("nodes", "must be at least 1");
  if (s.nodes % s.sockets != 0 && s.sockets % s.nodes != 0)
    throw TopologyError("nodes", std::to_string(s.nodes) + " nodes is neither a multiple nor a divisor of " +
                                     std::to_string(s.sockets) + " sockets");
  if (cores % s.nodes != 0)
    throw TopologyError("nodes", std::to_string(cores) + " cores do not divide evenly into " +
                                     std::to_string(s.nodes) + " nodes");
  const std::uint32_t block = llc_block(s);
  if (s.cores_per_llc > block || (s.cores_per_llc > 0 && block % s.cores_per_llc != 0))
    throw TopologyError("cores_per_llc", std::to_string(s.cores_per_llc) + " does not divide the " +
                                             std::to_string(block) + " cores a node has within a socket " +
                                             "(a last-level cache lies inside one node and one socket)");
}

// A nodes x nodes matrix, or empty. ACPI SLIT rules as Linux checks them in slit_valid()
// (drivers/acpi/numa/srat.c): 10 on the diagonal, more than 10 elsewhere.
void check_matrix(const std::vector<double>& m, std::uint32_t nodes, const char* field, bool slit) {
  if (m.empty()) return;
  const std::size_t want = std::size_t{nodes} * nodes;
  if (m.size() != want)
    throw TopologyError(field, "expected " + std::to_string(nodes) + " x " + std::to_string(nodes) +
                                   " values (one row per node), got " + std::to_string(m.size()));
  for (std::size_t i = 0; i < m.size(); ++i) {
    const int idx = static_cast<int>(i);
    const bool diag = i / nodes == i % nodes;
    const double v = m[i];
    if (!std::isfinite(v) || v <= 0) throw TopologyError(field, "must be positive, got " + str(v), idx);
    if (slit && diag && v != kLocalDistance)
      throw TopologyError(field, "a node's distance to itself must be 10, got " + str(v), idx);
    if (slit && !diag && v <= kLocalDistance)
      throw TopologyError(field, "a distance between two nodes must be more than 10, got " + str(v), idx);
    if (slit && v > kMaxDistance)
      throw TopologyError(field, "a SLIT entry is one byte, at most 254 (255 means unreachable), got " + str(v), idx);
    // The ratio to the row's own (local) latency: no more than a SLIT can say, 254 / 10.
    const double local = m[(i / nodes) * nodes + i / nodes];
    // Below 1 the model would run remote memory faster than local (an execution rate above 1),
    // which no SLIT can say either (remote distances are more than 10).
    if (!slit && !diag && std::isfinite(local) && local > 0 && v < local)
      throw TopologyError(field, "a remote latency below its node's local latency (" + str(v) + " < " + str(local) +
                                     " ns): remote memory is never faster",
                          idx);
    if (!slit && std::isfinite(local) && local > 0 && v / local > kMaxDistance / kLocalDistance)
      throw TopologyError(field, str(v) + " is " + str(v / local) + " times its node's local latency; at most " +
                                     str(kMaxDistance / kLocalDistance) + " (the largest ratio a SLIT expresses)",
                          idx);
  }
}

void validate(const TopologySpec& s) {
  check_shape(s);
  check_matrix(s.distances, s.nodes, "distances", true);
  check_matrix(s.latency_ns, s.nodes, "latency_ns", false);
  if (!std::isfinite(s.node_bandwidth_mbps) || s.node_bandwidth_mbps < 0)
    throw TopologyError("node_bandwidth_mbps", "must be 0 (unlimited) or positive, got " + str(s.node_bandwidth_mbps));
  if (!(s.remote_bandwidth_ratio > 0 && s.remote_bandwidth_ratio <= 1))
    throw TopologyError("remote_bandwidth_ratio", "must be in (0, 1], got " + str(s.remote_bandwidth_ratio));
}

Eigen::MatrixXd to_matrix(const std::vector<double>& v, std::uint32_t n) {
  Eigen::MatrixXd m(n, n);
  for (std::uint32_t a = 0; a < n; ++a)
    for (std::uint32_t b = 0; b < n; ++b) m(a, b) = v[std::size_t{a} * n + b];
  return m;
}

}  // namespace

Topology::Topology() = default;
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;
Topology::~Topology() = default;

Topology build_topology(const TopologySpec& spec) {
  validate(spec);

  Topology t;
  t.spec_ = spec;
  TopologySpec& rs = t.spec_;
  const std::uint32_t n = rs.nodes;
  if (rs.distances.empty()) {
    rs.distances.assign(std::size_t{n} * n, kRemoteDistance);
    for (std::uint32_t a = 0; a < n; ++a) rs.distances[std::size_t{a} * n + a] = kLocalDistance;
  }
  // MODEL: without measurements the latency ratio is SLIT/10. That is pessimistic: measured
  // ratios are 1.5-1.8 where SLIT says 2.0-2.1 (spinlocks-and-workloads.md section 5).
  if (rs.latency_ns.empty()) rs.latency_ns = rs.distances;

  t.name_ = rs.name;
  t.threads_per_core_ = rs.threads_per_core;
  t.node_bandwidth_mbps_ = rs.node_bandwidth_mbps;
  t.remote_bandwidth_ratio_ = rs.remote_bandwidth_ratio;
  t.distance_ = to_matrix(rs.distances, n);
  const Eigen::MatrixXd lat = to_matrix(rs.latency_ns, n);
  // ratio(a, b) = lat(a, b) / lat(a, a): each row over its own diagonal, since the slowdown a
  // thread on node a sees is against what its own local memory would give it.
  t.latency_ratio_ = (lat.array().colwise() / lat.diagonal().array()).matrix();

  // The flat arrays come from walking the containment graph, so the graph is the only place
  // that says who contains whom.
  t.graph_ = std::make_unique<TopologyGraph>(rs);
  const TopologyGraph& g = *t.graph_;
  const auto threads = static_cast<std::uint32_t>(g.count(Level::kThread));
  t.core_of_.resize(threads);
  t.socket_of_.resize(threads);
  t.node_of_.resize(threads);
  t.core_threads_.resize(g.count(Level::kCore));
  t.socket_threads_.resize(g.count(Level::kSocket));
  t.node_threads_.resize(g.count(Level::kNode));
  for (const TopologyGraph::Placement& p : g.placements()) {
    t.core_of_[p.thread] = p.core;
    t.socket_of_[p.thread] = p.socket;
    t.node_of_[p.thread] = p.node;
    t.core_threads_[p.core].set(p.thread);
    t.socket_threads_[p.socket].set(p.thread);
    t.node_threads_[p.node].set(p.thread);
    t.all_.set(p.thread);
  }
  // LLCs are blocks of cores_per_llc consecutive cores: cores are numbered socket by socket and
  // nodes own contiguous blocks of them, so a block that divides a node's share of a socket
  // never straddles either.
  if (rs.cores_per_llc == 0) rs.cores_per_llc = llc_block(rs);
  t.llc_of_core_.resize(t.core_threads_.size());
  t.llc_threads_.resize(t.core_threads_.size() / rs.cores_per_llc);
  for (CoreId c = 0; c < t.core_threads_.size(); ++c) {
    t.llc_of_core_[c] = c / rs.cores_per_llc;
    t.llc_threads_[c / rs.cores_per_llc] |= t.core_threads_[c];
  }
  t.core_thread_list_.resize(t.core_threads_.size());
  for (CoreId c = 0; c < t.core_threads_.size(); ++c)
    t.core_threads_[c].for_each([&](ThreadId x) { t.core_thread_list_[c].push_back(x); });
  return t;
}

}  // namespace vcpusim::topo
