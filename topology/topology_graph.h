// SPDX-License-Identifier: MIT
// This file defines TopologyGraph, the containment tree of a machine as a Boost.Graph
// adjacency_list: machine -> NUMA nodes -> sockets -> cores -> hardware threads, or, when nodes
// lie inside a socket (AMD EPYC NPS2/NPS4, Intel SNC), machine -> sockets -> nodes -> cores ->
// threads. build_topology() builds one, walks it depth-first to fill Topology's flat arrays (so
// the tree is the single statement of who contains whom) and keeps it for tools that print the
// machine. It is private to topology/: only topology.cpp and tests include this header, so no
// Boost type or vertex descriptor reaches a scheduler.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "topology/topology.h"
#include "topology/topology_spec.h"

namespace vcpusim::topo {

/// What a vertex stands for: its level and its dense id at that level (the ThreadId, the global
/// CoreId, the SocketId or the NodeId; 0 for the machine).
struct TopologyVertex {
  Level level = Level::kMachine;
  std::uint32_t index = 0;
};

class TopologyGraph {
 public:
  /// vecS/vecS keeps vertices and each vertex's children in insertion order, which is the id
  /// order, so a depth-first walk meets threads core by core and reports are stable.
  /// bidirectionalS gives parent() without a second map.
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, TopologyVertex>;
  using Vertex = Graph::vertex_descriptor;

  /// Where one hardware thread sits, as found by walking the tree.
  struct Placement {
    ThreadId thread = 0;
    CoreId core = 0;
    SocketId socket = 0;
    NodeId node = 0;
  };

  /// Builds the tree of a spec that build_topology() has validated (the shape must be
  /// consistent; distances are not looked at).
  explicit TopologyGraph(const TopologySpec& spec);

  /// True when NUMA nodes are inside sockets (nodes > sockets), so sockets are the upper level.
  bool nodes_inside_sockets() const { return nodes_inside_sockets_; }

  Vertex root() const { return root_; }
  const TopologyVertex& operator[](Vertex v) const { return g_[v]; }
  std::size_t num_vertices() const { return boost::num_vertices(g_); }
  /// Number of vertices of a level (1 for kMachine).
  std::size_t count(Level level) const { return counts_[static_cast<std::size_t>(level)]; }
  /// The vertices a vertex contains, in id order.
  std::vector<Vertex> children(Vertex v) const;
  /// The vertex containing v; the root is its own parent.
  Vertex parent(Vertex v) const;
  /// The vertex of a level and id (e.g. the core vertex of core 5), by a scan: for tests and
  /// reports, not for hot paths.
  Vertex find(Level level, std::uint32_t index) const;

  /// The placement of every hardware thread, indexed by ThreadId, found by a depth-first search
  /// from the root: each thread takes the core, socket and node vertices above it.
  std::vector<Placement> placements() const;

  /// The underlying graph, for Boost algorithms in topology/ and in tests.
  const Graph& boost_graph() const { return g_; }

 private:
  Vertex add(Level level, std::uint32_t index, const Vertex* parent);

  Graph g_;
  Vertex root_ = 0;
  bool nodes_inside_sockets_ = false;
  std::array<std::size_t, 5> counts_{};  // by Level
};

}  // namespace vcpusim::topo
