// SPDX-License-Identifier: MIT
// Tests of topology/: CpuSet, build_topology() and its validation, the Topology queries and the
// containment graph they are derived from. No YAML here (topology/ never sees it): the machines
// are TopologySpec literals with the shapes of the presets in configs/topologies/ plus two
// corner shapes. Every expected value is computed from the shape by the numbering rule stated in
// topology.h (thread t = smt_index * cores + core; cores socket by socket; nodes own contiguous
// blocks of cores), never copied from the code's output.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "topology/cpuset.h"
#include "topology/topology.h"
#include "topology/topology_graph.h"

namespace vcpusim::topo {
namespace {

// ---------------------------------------------------------------------------------------------
// CpuSet. Word boundaries (63/64, 127/128) and the last bit (kCapacity - 1) are where a bitset's
// shift and carry mistakes show.

constexpr ThreadId kLast = CpuSet::kCapacity - 1;

CpuSet of(std::initializer_list<ThreadId> ts) {
  CpuSet s;
  for (ThreadId t : ts) s.set(t);
  return s;
}

std::vector<ThreadId> members(const CpuSet& s) {
  std::vector<ThreadId> out;
  s.for_each([&](ThreadId t) { out.push_back(t); });
  return out;
}

TEST(CpuSet, EmptySetHasNoMembers) {
  CpuSet s;
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.any());
  EXPECT_EQ(s.count(), 0u);
  EXPECT_EQ(s.first(), CpuSet::kNone);
  EXPECT_EQ(s.nth(0), CpuSet::kNone);
  EXPECT_TRUE(members(s).empty());
}

TEST(CpuSet, FirstAndNextCrossWordBoundaries) {
  CpuSet s = of({63, 64, 127, 128, kLast});
  EXPECT_EQ(s.first(), 63u);
  EXPECT_EQ(s.next(63), 63u);  // next() is inclusive
  EXPECT_EQ(s.next(64), 64u);
  EXPECT_EQ(s.next(65), 127u);
  EXPECT_EQ(s.next(128), 128u);
  EXPECT_EQ(s.next(129), kLast);
  EXPECT_EQ(s.next(kLast), kLast);
  EXPECT_EQ(s.next(CpuSet::kCapacity), CpuSet::kNone);
  EXPECT_EQ(CpuSet::single(64).first(), 64u);
  EXPECT_EQ(CpuSet::single(64).next(65), CpuSet::kNone);
}

TEST(CpuSet, NthCountsAcrossWords) {
  CpuSet s = of({0, 63, 64, 127, 128, kLast});
  EXPECT_EQ(s.count(), 6u);
  const std::vector<ThreadId> want = {0, 63, 64, 127, 128, kLast};
  for (std::uint32_t i = 0; i < want.size(); ++i) EXPECT_EQ(s.nth(i), want[i]) << i;
  EXPECT_EQ(s.nth(6), CpuSet::kNone);
  EXPECT_EQ(members(s), want);
}

TEST(CpuSet, FirstNFillsWholeWordsAndTheRest) {
  for (std::uint32_t n : {0u, 1u, 63u, 64u, 65u, 127u, 128u, 129u, CpuSet::kCapacity}) {
    CpuSet s = CpuSet::first_n(n);
    EXPECT_EQ(s.count(), n) << n;
    EXPECT_EQ(s.first(), n ? 0u : CpuSet::kNone) << n;
    EXPECT_EQ(s.nth(n ? n - 1 : 0), n ? n - 1 : CpuSet::kNone) << n;
    if (n < CpuSet::kCapacity) {
      EXPECT_FALSE(s.test(n)) << n;
    }
  }
  EXPECT_EQ(members(CpuSet::first_n(CpuSet::kCapacity)).size(), CpuSet::kCapacity);
}

TEST(CpuSet, TestIsFalseOutsideCapacity) {
  CpuSet full = CpuSet::first_n(CpuSet::kCapacity);
  EXPECT_TRUE(full.test(kLast));
  EXPECT_FALSE(full.test(CpuSet::kCapacity));
  EXPECT_FALSE(full.test(CpuSet::kNone));
}

TEST(CpuSet, SetResetAtBoundaries) {
  for (ThreadId t : {63u, 64u, 127u, 128u, kLast}) {
    CpuSet s;
    s.set(t);
    EXPECT_TRUE(s.test(t)) << t;
    EXPECT_FALSE(s.test(t - 1)) << "set(" << t << ") leaked into the bit below";
    EXPECT_FALSE(s.test(t + 1)) << "set(" << t << ") leaked into the bit above";
    EXPECT_EQ(s.count(), 1u) << t;
    EXPECT_EQ(s.first(), t) << t;
    s.reset(t);
    EXPECT_TRUE(s.empty()) << t;
  }
  CpuSet s = of({63, 64, 127, 128, kLast});
  s.reset(64);
  EXPECT_FALSE(s.test(64));
  EXPECT_TRUE(s.test(63));
  EXPECT_EQ(s.count(), 4u);
  s.clear();
  EXPECT_TRUE(s.empty());
}

TEST(CpuSet, SubsetAndIntersectionAcrossWords) {
  CpuSet a = of({63, 64}), b = of({63, 64, 128}), c = of({127, kLast});
  EXPECT_TRUE(a.subset_of(b));
  EXPECT_FALSE(b.subset_of(a));
  EXPECT_TRUE(CpuSet{}.subset_of(a));
  EXPECT_TRUE(a.intersects(b));
  EXPECT_FALSE(a.intersects(c));
  EXPECT_FALSE(of({128}).subset_of(of({64})));  // same bit index, different word
}

TEST(CpuSet, AndNotOrAndAcrossWords) {
  CpuSet a = of({63, 64, 127, 128, kLast}), b = of({64, 128});
  EXPECT_EQ(a - b, of({63, 127, kLast}));
  EXPECT_EQ(a & b, b);
  EXPECT_EQ(of({63}) | of({64}) | of({kLast}), of({63, 64, kLast}));
  CpuSet d = CpuSet::first_n(CpuSet::kCapacity);
  d -= CpuSet::first_n(128);
  EXPECT_EQ(d.count(), CpuSet::kCapacity - 128);
  EXPECT_EQ(d.first(), 128u);
}

// ---------------------------------------------------------------------------------------------
// Machines.

struct Shape {
  std::string name;
  std::uint32_t sockets, cores_per_socket, threads_per_core, nodes;
  std::vector<double> distances;  // empty: the Linux default 10/20
};

// An n x n SLIT with 10 on the diagonal and dist(a, b) elsewhere.
std::vector<double> slit(std::uint32_t n, double (*dist)(std::uint32_t, std::uint32_t)) {
  std::vector<double> m;
  for (std::uint32_t a = 0; a < n; ++a)
    for (std::uint32_t b = 0; b < n; ++b) m.push_back(a == b ? 10.0 : dist(a, b));
  return m;
}

// The presets' shapes (configs/topologies/) and their published SLITs, plus corner cases: nodes
// holding several sockets, and a machine filling a CpuSet to capacity (4 threads per core).
std::vector<Shape> shapes() {
  return {
      {"one-core-ht", 1, 1, 2, 1, {10}},
      {"xeon-x5570-2s", 2, 4, 2, 2, slit(2, [](std::uint32_t, std::uint32_t) { return 21.0; })},
      {"xeon-x7560-4s", 4, 8, 2, 4, slit(4, [](std::uint32_t, std::uint32_t) { return 20.0; })},
      {"desktop-4c8t", 1, 4, 2, 1, {10}},
      // NPS4: nodes 0-3 in socket 0, 4-7 in socket 1; 12 within a socket, 32 across.
      {"epyc-2s-64c", 2, 32, 2, 8,
       slit(8, [](std::uint32_t a, std::uint32_t b) { return a / 4 == b / 4 ? 12.0 : 32.0; })},
      {"xeon-gold-2s", 2, 20, 2, 2, slit(2, [](std::uint32_t, std::uint32_t) { return 21.0; })},
      {"two-sockets-per-node", 4, 2, 1, 2, {}},
      {"full-capacity", 2, 64, 4, 4, {}},
  };
}

// gtest prints a failing parameter with this instead of a byte dump.
void PrintTo(const Shape& s, std::ostream* os) { *os << s.name; }

TopologySpec spec_of(const Shape& s) {
  TopologySpec spec;
  spec.name = s.name;
  spec.sockets = s.sockets;
  spec.cores_per_socket = s.cores_per_socket;
  spec.threads_per_core = s.threads_per_core;
  spec.nodes = s.nodes;
  spec.distances = s.distances;
  return spec;
}

class TopologyShape : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    const Shape& s = GetParam();
    cores_ = s.sockets * s.cores_per_socket;
    threads_ = cores_ * s.threads_per_core;
    cores_per_node_ = cores_ / s.nodes;
  }
  const Shape& shape() const { return GetParam(); }
  std::uint32_t cores_ = 0, threads_ = 0, cores_per_node_ = 0;
};

TEST_P(TopologyShape, CountsFollowTheShape) {
  const Topology t = build_topology(spec_of(shape()));
  EXPECT_EQ(t.name(), shape().name);
  EXPECT_EQ(t.num_threads(), threads_);
  EXPECT_EQ(t.num_cores(), cores_);
  EXPECT_EQ(t.num_sockets(), shape().sockets);
  EXPECT_EQ(t.num_nodes(), shape().nodes);
  EXPECT_EQ(t.threads_per_core(), shape().threads_per_core);
  EXPECT_EQ(t.all_threads(), CpuSet::first_n(threads_));
}

// Linux's x86 enumeration: threads 0..cores-1 are the first threads of cores 0..cores-1, the next
// block their second threads, and so on.
TEST_P(TopologyShape, ThreadsAreNumberedFirstThreadsFirst) {
  const Topology t = build_topology(spec_of(shape()));
  for (ThreadId th = 0; th < threads_; ++th) {
    const CoreId core = th % cores_;
    ASSERT_EQ(t.core_of(th), core) << th;
    EXPECT_EQ(t.socket_of(th), core / shape().cores_per_socket) << th;
    EXPECT_EQ(t.node_of(th), core / cores_per_node_) << th;
  }
  for (CoreId c = 0; c < cores_; ++c) {
    EXPECT_EQ(t.threads_of_core(c).first(), c);
    EXPECT_EQ(t.node_of_core(c), c / cores_per_node_);
  }
}

TEST_P(TopologyShape, SiblingsShareACore) {
  const Topology t = build_topology(spec_of(shape()));
  const std::uint32_t tpc = shape().threads_per_core;
  for (ThreadId th = 0; th < threads_; ++th) {
    const CpuSet sib = t.siblings(th);
    EXPECT_EQ(sib.count(), tpc - 1) << th;
    EXPECT_FALSE(sib.test(th)) << th;
    EXPECT_EQ(t.smt_mask(th), sib | CpuSet::single(th)) << th;
    EXPECT_EQ(t.smt_mask(th), t.threads_of_core(t.core_of(th))) << th;
    CpuSet want;  // every k * cores + core
    for (std::uint32_t k = 0; k < tpc; ++k) want.set(k * cores_ + th % cores_);
    EXPECT_EQ(t.smt_mask(th), want) << th;
    sib.for_each([&](ThreadId u) {
      EXPECT_TRUE(t.same_core(th, u));
      EXPECT_TRUE(t.same_socket(th, u));
      EXPECT_TRUE(t.same_node(th, u));
    });
  }
}

TEST_P(TopologyShape, SameSocketAndSameNodeMatchTheIds) {
  const Topology t = build_topology(spec_of(shape()));
  std::uint32_t wrong = 0;
  for (ThreadId a = 0; a < threads_; ++a)
    for (ThreadId b = 0; b < threads_; ++b) {
      const CoreId ca = a % cores_, cb = b % cores_;
      wrong += t.same_core(a, b) != (ca == cb);
      wrong += t.same_socket(a, b) != (ca / shape().cores_per_socket == cb / shape().cores_per_socket);
      wrong += t.same_node(a, b) != (ca / cores_per_node_ == cb / cores_per_node_);
    }
  EXPECT_EQ(wrong, 0u);
}

// Each level's CpuSets are disjoint, cover every thread and have the same size.
void expect_partition(const std::vector<CpuSet>& parts, std::uint32_t threads, const char* what) {
  CpuSet all;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    EXPECT_FALSE(parts[i].intersects(all)) << what << " " << i << " overlaps an earlier one";
    EXPECT_EQ(parts[i].count(), threads / parts.size()) << what << " " << i;
    all |= parts[i];
  }
  EXPECT_EQ(all, CpuSet::first_n(threads)) << what;
}

TEST_P(TopologyShape, NodesSocketsAndCoresPartitionAllThreads) {
  const Topology t = build_topology(spec_of(shape()));
  std::vector<CpuSet> nodes, sockets, cores;
  for (NodeId n = 0; n < t.num_nodes(); ++n) {
    nodes.push_back(t.threads_of_node(n));
    t.threads_of_node(n).for_each([&](ThreadId th) { EXPECT_EQ(t.node_of(th), n); });
  }
  for (SocketId s = 0; s < t.num_sockets(); ++s) {
    sockets.push_back(t.threads_of_socket(s));
    t.threads_of_socket(s).for_each([&](ThreadId th) { EXPECT_EQ(t.socket_of(th), s); });
  }
  for (CoreId c = 0; c < t.num_cores(); ++c) cores.push_back(t.threads_of_core(c));
  expect_partition(nodes, threads_, "node");
  expect_partition(sockets, threads_, "socket");
  expect_partition(cores, threads_, "core");
}

// Nodes inside sockets (EPYC NPS4) or sockets inside nodes, never straddling.
TEST_P(TopologyShape, NodesAndSocketsNest) {
  const Topology t = build_topology(spec_of(shape()));
  if (shape().nodes >= shape().sockets) {
    for (NodeId n = 0; n < t.num_nodes(); ++n) {
      const CpuSet& ns = t.threads_of_node(n);
      EXPECT_TRUE(ns.subset_of(t.threads_of_socket(t.socket_of(ns.first())))) << n;
    }
  } else {
    for (SocketId s = 0; s < t.num_sockets(); ++s) {
      const CpuSet& ss = t.threads_of_socket(s);
      EXPECT_TRUE(ss.subset_of(t.threads_of_node(t.node_of(ss.first())))) << s;
    }
  }
}

TEST_P(TopologyShape, DistancesAreSymmetricWithLocalDiagonal) {
  const Topology t = build_topology(spec_of(shape()));
  const std::uint32_t n = shape().nodes;
  ASSERT_EQ(t.distances().rows(), static_cast<Eigen::Index>(n));
  ASSERT_EQ(t.distances().cols(), static_cast<Eigen::Index>(n));
  for (NodeId a = 0; a < n; ++a)
    for (NodeId b = 0; b < n; ++b) {
      EXPECT_EQ(t.distance(a, b), t.distance(b, a));
      if (a == b) {
        EXPECT_EQ(t.distance(a, b), 10.0);
      } else {
        EXPECT_GT(t.distance(a, b), 10.0);
      }
      const double want = shape().distances.empty() ? (a == b ? 10.0 : 20.0) : shape().distances[a * n + b];
      EXPECT_EQ(t.distance(a, b), want);
    }
}

// Without measured latencies the ratio is SLIT / 10: 1 on the diagonal, above 1 elsewhere.
TEST_P(TopologyShape, LatencyRatiosAreOneLocallyAndAboveOneRemotely) {
  const Topology t = build_topology(spec_of(shape()));
  for (NodeId a = 0; a < t.num_nodes(); ++a)
    for (NodeId b = 0; b < t.num_nodes(); ++b) {
      if (a == b) {
        EXPECT_DOUBLE_EQ(t.latency_ratio(a, b), 1.0);
      } else {
        EXPECT_GT(t.latency_ratio(a, b), 1.0);
      }
      EXPECT_DOUBLE_EQ(t.latency_ratio(a, b), t.distance(a, b) / 10.0);
    }
}

TEST_P(TopologyShape, GraphHasOneVertexPerComponent) {
  const Topology t = build_topology(spec_of(shape()));
  const TopologyGraph& g = t.graph();
  EXPECT_EQ(g.count(Level::kMachine), 1u);
  EXPECT_EQ(g.count(Level::kNode), shape().nodes);
  EXPECT_EQ(g.count(Level::kSocket), shape().sockets);
  EXPECT_EQ(g.count(Level::kCore), cores_);
  EXPECT_EQ(g.count(Level::kThread), threads_);
  EXPECT_EQ(g.num_vertices(), 1u + shape().nodes + shape().sockets + cores_ + threads_);
  EXPECT_EQ(g.nodes_inside_sockets(), shape().nodes > shape().sockets);
}

// Machine -> (nodes -> sockets | sockets -> nodes) -> cores -> threads, each child one level down
// and each level's children evenly many.
TEST_P(TopologyShape, GraphChildrenFollowContainment) {
  const Topology t = build_topology(spec_of(shape()));
  const TopologyGraph& g = t.graph();
  const bool inside = shape().nodes > shape().sockets;
  const Level upper = inside ? Level::kSocket : Level::kNode, lower = inside ? Level::kNode : Level::kSocket;
  const std::size_t n_upper = inside ? shape().sockets : shape().nodes;
  const std::size_t n_lower = inside ? shape().nodes : shape().sockets;

  const auto top = g.children(g.root());
  ASSERT_EQ(top.size(), n_upper);
  for (std::size_t i = 0; i < top.size(); ++i) {
    EXPECT_EQ(g[top[i]].level, upper);
    EXPECT_EQ(g[top[i]].index, i);
    EXPECT_EQ(g.parent(top[i]), g.root());
    const auto mid = g.children(top[i]);
    ASSERT_EQ(mid.size(), n_lower / n_upper);
    for (auto m : mid) {
      EXPECT_EQ(g[m].level, lower);
      const auto cores = g.children(m);
      EXPECT_EQ(cores.size(), cores_ / n_lower);
      for (auto c : cores) {
        ASSERT_EQ(g[c].level, Level::kCore);
        const auto ths = g.children(c);
        ASSERT_EQ(ths.size(), shape().threads_per_core);
        for (std::uint32_t k = 0; k < ths.size(); ++k) {
          EXPECT_EQ(g[ths[k]].level, Level::kThread);
          EXPECT_EQ(g[ths[k]].index, k * cores_ + g[c].index);
          EXPECT_EQ(g.parent(ths[k]), c);
          EXPECT_TRUE(g.children(ths[k]).empty());
        }
      }
    }
  }
}

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  std::string s = info.param.name;
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Presets, TopologyShape, ::testing::ValuesIn(shapes()), shape_name);

// ---------------------------------------------------------------------------------------------
// Single cases.

TopologySpec x5570() { return spec_of(shapes()[1]); }

TEST(Topology, Desktop4c8tPairsThreadNWithNPlus4) {
  const Topology t = build_topology(spec_of(shapes()[3]));
  for (ThreadId th = 0; th < 4; ++th) EXPECT_EQ(t.siblings(th), CpuSet::single(th + 4));
}

TEST(Topology, X5570NodeZeroHoldsThreads0To3And8To11) {
  // What `numactl --hardware` prints on a 2S X5570 with HT on: node 0 cpus: 0 1 2 3 8 9 10 11.
  const Topology t = build_topology(x5570());
  EXPECT_EQ(t.threads_of_node(0), of({0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(t.threads_of_node(1), of({4, 5, 6, 7, 12, 13, 14, 15}));
}

TEST(Topology, EpycNps4NodesAreQuadrantsOfEightCores) {
  const Topology t = build_topology(spec_of(shapes()[4]));
  // 64 cores, 8 nodes: node n holds cores 8n..8n+7 and their siblings 64 + 8n..
  for (NodeId n = 0; n < 8; ++n) {
    CpuSet want;
    for (CoreId c = 8 * n; c < 8 * n + 8; ++c) {
      want.set(c);
      want.set(c + 64);
    }
    EXPECT_EQ(t.threads_of_node(n), want) << n;
    EXPECT_EQ(t.socket_of(t.threads_of_node(n).first()), n / 4) << n;
  }
  EXPECT_EQ(t.distance(0, 3), 12.0);
  EXPECT_EQ(t.distance(3, 4), 32.0);
}

TEST(Topology, LastLevelCacheIsANodeWithinASocketUnlessGiven) {
  // Intel: one LLC per socket (the X5570's node). A socket of two nodes (EPYC NPS4 without
  // cores_per_llc) has one per node; with cores_per_llc 4, a Zen 2 CCX: cores 0-3 and their
  // siblings 64-67, the next CCX from core 4, both in node 0.
  const Topology x = build_topology(x5570());
  EXPECT_EQ(x.llc_mask(0), x.threads_of_node(0));
  EXPECT_TRUE(x.same_llc(0, 11));
  EXPECT_FALSE(x.same_llc(3, 4));
  TopologySpec e = spec_of(shapes()[4]);
  e.cores_per_llc = 0;
  EXPECT_EQ(build_topology(e).llc_mask(9), build_topology(e).threads_of_node(1));
  e.cores_per_llc = 4;
  const Topology t = build_topology(e);
  EXPECT_EQ(t.llc_mask(0), of({0, 1, 2, 3, 64, 65, 66, 67}));
  EXPECT_EQ(t.llc_mask(70), of({4, 5, 6, 7, 68, 69, 70, 71}));
  EXPECT_FALSE(t.same_llc(3, 4));
  EXPECT_TRUE(t.same_node(3, 4));
  EXPECT_EQ(t.spec().cores_per_llc, 4u);
  EXPECT_EQ(x.spec().cores_per_llc, 4u);  // resolved: the X5570's 4 cores a socket
  // A node of two sockets has an LLC per socket.
  const Topology two = build_topology(spec_of(shapes()[6]));
  EXPECT_EQ(two.llc_mask(0), two.threads_of_socket(0));
  EXPECT_NE(two.llc_mask(0), two.threads_of_node(0));
}

TEST(Topology, LatencyRatioIsEachRowOverItsOwnLocalLatency) {
  TopologySpec s = x5570();
  s.latency_ns = {65, 106, 110, 70};  // asymmetric on purpose: rows are normalised separately
  const Topology t = build_topology(s);
  EXPECT_DOUBLE_EQ(t.latency_ratio(0, 0), 1.0);
  EXPECT_DOUBLE_EQ(t.latency_ratio(1, 1), 1.0);
  EXPECT_DOUBLE_EQ(t.latency_ratio(0, 1), 106.0 / 65.0);
  EXPECT_DOUBLE_EQ(t.latency_ratio(1, 0), 110.0 / 70.0);
  EXPECT_DOUBLE_EQ(t.latency_ratios()(0, 1), 106.0 / 65.0);
  EXPECT_EQ(t.spec().latency_ns, s.latency_ns);
}

TEST(Topology, DefaultsAreLinuxLocalAndRemoteDistance) {
  TopologySpec s = x5570();
  s.distances.clear();
  const Topology t = build_topology(s);
  EXPECT_EQ(t.spec().distances, (std::vector<double>{10, 20, 20, 10}));
  EXPECT_EQ(t.spec().latency_ns.size(), 4u);  // resolved from the distances
  EXPECT_DOUBLE_EQ(t.latency_ratio(0, 1), 2.0);
  EXPECT_EQ(t.node_bandwidth_mbps(), 0.0);
  EXPECT_EQ(t.remote_bandwidth_ratio(), 0.5);
}

TEST(Topology, KeepsBandwidthSettings) {
  TopologySpec s = x5570();
  s.node_bandwidth_mbps = 19000;
  s.remote_bandwidth_ratio = 0.6;
  const Topology t = build_topology(s);
  EXPECT_EQ(t.node_bandwidth_mbps(), 19000.0);
  EXPECT_EQ(t.remote_bandwidth_ratio(), 0.6);
}

TEST(Topology, MovedTopologyKeepsItsGraph) {
  Topology a = build_topology(x5570());
  Topology b = std::move(a);
  EXPECT_EQ(b.num_threads(), 16u);
  EXPECT_EQ(b.graph().count(Level::kThread), 16u);
  EXPECT_EQ(b.siblings(0), CpuSet::single(8));
}

TEST(TopologyGraph, PlacementsAgreeWithTheFlatArrays) {
  const Topology t = build_topology(spec_of(shapes()[4]));
  const auto ps = t.graph().placements();
  ASSERT_EQ(ps.size(), t.num_threads());
  for (ThreadId th = 0; th < ps.size(); ++th) {
    EXPECT_EQ(ps[th].thread, th);
    EXPECT_EQ(ps[th].core, t.core_of(th));
    EXPECT_EQ(ps[th].socket, t.socket_of(th));
    EXPECT_EQ(ps[th].node, t.node_of(th));
  }
}

TEST(TopologyGraph, FindLocatesAVertexByLevelAndId) {
  const Topology t = build_topology(x5570());
  const TopologyGraph& g = t.graph();
  auto core5 = g.find(Level::kCore, 5);
  EXPECT_EQ(g[core5].index, 5u);
  EXPECT_EQ(g[g.parent(core5)].level, Level::kSocket);
  EXPECT_EQ(g[g.parent(core5)].index, 1u);  // cores 4-7 are socket 1's
  EXPECT_THROW(g.find(Level::kCore, 8), std::out_of_range);
}

// ---------------------------------------------------------------------------------------------
// Validation: every inconsistency is a TopologyError naming the spec field (and, for a matrix,
// the row-major element).

void expect_error(const TopologySpec& s, const std::string& field, int index = -1) {
  try {
    (void)build_topology(s);
    ADD_FAILURE() << "no TopologyError; expected one on " << field;
  } catch (const TopologyError& e) {
    EXPECT_EQ(e.field, field) << e.what();
    EXPECT_EQ(e.index, index) << e.what();
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

TEST(TopologyValidation, ZeroCountsNameTheirField) {
  TopologySpec s = x5570();
  s.sockets = 0;
  expect_error(s, "sockets");
  s = x5570();
  s.cores_per_socket = 0;
  expect_error(s, "cores_per_socket");
  s = x5570();
  s.threads_per_core = 0;
  expect_error(s, "threads_per_core");
  s = x5570();
  s.nodes = 0;
  expect_error(s, "nodes");
}

TEST(TopologyValidation, AnLlcThatLeavesItsNodeIsRejected) {
  // EPYC NPS4: 8 cores a node within a socket. 8, 4, 2, 1 divide it; 3 and 16 do not.
  TopologySpec s = spec_of(shapes()[4]);
  for (std::uint32_t ok : {1u, 2u, 4u, 8u}) {
    s.cores_per_llc = ok;
    EXPECT_NO_THROW((void)build_topology(s)) << ok;
  }
  for (std::uint32_t bad : {3u, 16u}) {
    s.cores_per_llc = bad;
    expect_error(s, "cores_per_llc");
  }
}

TEST(TopologyValidation, ThreadsPerCoreAtMostEight) {
  TopologySpec s = spec_of(shapes()[0]);
  s.threads_per_core = 8;
  EXPECT_EQ(build_topology(s).num_threads(), 8u);
  s.threads_per_core = 9;
  expect_error(s, "threads_per_core");
}

TEST(TopologyValidation, MoreThreadsThanACpuSetHoldsIsRejected) {
  TopologySpec s;
  s.sockets = 2;
  s.cores_per_socket = 64;
  s.threads_per_core = 4;  // 512: exactly the capacity
  EXPECT_EQ(build_topology(s).num_threads(), CpuSet::kCapacity);
  s.cores_per_socket = 65;  // 520
  expect_error(s, "cores_per_socket");
  s.sockets = 0x10000;  // the product would wrap in 32 bits
  s.cores_per_socket = 0x10000;
  s.threads_per_core = 1;
  expect_error(s, "cores_per_socket");
}

TEST(TopologyValidation, NodesMustNestWithSockets) {
  TopologySpec s = x5570();
  s.nodes = 3;  // neither a multiple nor a divisor of 2 sockets
  s.distances.clear();
  expect_error(s, "nodes");
  s.nodes = 8;  // 4 per socket, but 4 cores per socket split in 4 is fine
  EXPECT_EQ(build_topology(s).num_nodes(), 8u);
  s.cores_per_socket = 6;  // 12 cores do not divide into 8 nodes
  expect_error(s, "nodes");
  s.sockets = 4;
  s.cores_per_socket = 2;
  s.nodes = 2;  // a divisor of 4 sockets: two sockets per node
  EXPECT_EQ(build_topology(s).num_nodes(), 2u);
}

TEST(TopologyValidation, DistancesMustBeNodesByNodes) {
  TopologySpec s = x5570();
  s.distances = {10, 21, 10};
  expect_error(s, "distances");
  s.distances = {10};
  expect_error(s, "distances");
}

TEST(TopologyValidation, DistancesFollowSlitRules) {
  TopologySpec s = x5570();
  s.distances = {10, 21, 21, 11};  // diagonal must be 10
  expect_error(s, "distances", 3);
  s.distances = {10, 10, 21, 10};  // remote must be more than 10
  expect_error(s, "distances", 1);
  s.distances = {10, -21, 21, 10};
  expect_error(s, "distances", 1);
  s.distances = {10, 21, std::nan(""), 10};
  expect_error(s, "distances", 2);
  s.distances = {10, 255, 21, 10};  // a SLIT byte; 255 means unreachable
  expect_error(s, "distances", 1);
  s.distances = {10, 254, 254, 10};  // the largest entry is allowed
  EXPECT_NO_THROW(build_topology(s));
}

// A remote latency of 1e15 ns once made a memory-bound run loop forever (its completion time
// overflowed); the ratio to the local latency is bounded by what a SLIT can express, 254 / 10.
TEST(TopologyValidation, LatencyRatiosStayWithinWhatASlitExpresses) {
  TopologySpec s = x5570();
  s.latency_ns = {65, 65 * 25.4, 106, 65};
  EXPECT_NO_THROW(build_topology(s));
  s.latency_ns = {65, 65 * 25.5, 106, 65};
  expect_error(s, "latency_ns", 1);
  s.latency_ns = {65, 106, 1e15, 65};
  expect_error(s, "latency_ns", 2);
}

TEST(TopologyValidation, LatenciesMustBePositiveAndSquare) {
  TopologySpec s = x5570();
  s.latency_ns = {65, 106, 0, 65};
  expect_error(s, "latency_ns", 2);
  s.latency_ns = {65, 106, 106};
  expect_error(s, "latency_ns");
  s.latency_ns = {65, 106, 106, INFINITY};
  expect_error(s, "latency_ns", 3);
}

TEST(TopologyValidation, BandwidthAndRatioRanges) {
  TopologySpec s = x5570();
  s.node_bandwidth_mbps = -1;
  expect_error(s, "node_bandwidth_mbps");
  s = x5570();
  s.remote_bandwidth_ratio = 0;
  expect_error(s, "remote_bandwidth_ratio");
  s.remote_bandwidth_ratio = 1.5;
  expect_error(s, "remote_bandwidth_ratio");
  s.remote_bandwidth_ratio = 1.0;  // the closed end is allowed
  EXPECT_EQ(build_topology(s).remote_bandwidth_ratio(), 1.0);
}

}  // namespace
}  // namespace vcpusim::topo
