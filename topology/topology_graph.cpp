// SPDX-License-Identifier: MIT
// This file builds the containment tree of a machine (TopologyGraph) from a validated spec and
// walks it with boost::depth_first_search to tell each hardware thread which core, socket and
// node contain it. The numbering rules live here, in one place: cores go socket by socket, nodes
// own contiguous blocks of cores, and thread ids follow Linux's x86 enumeration (all first
// threads of all cores, then all second threads), see topology.h.
#include "topology/topology_graph.h"

#include <stdexcept>

#include <boost/graph/depth_first_search.hpp>

namespace vcpusim::topo {
namespace {

// Records, for every thread vertex the search discovers, the core, socket and node vertices
// discovered last. In a tree whose every root-to-leaf path has each level once, the last vertex
// of a level discovered before a vertex v is v's ancestor at that level: depth-first discovery
// is preorder, and between an ancestor and v only the ancestor's descendants are discovered.
// BGL copies visitors by value, so the state lives behind a pointer.
struct PlacementWalk {
  std::uint32_t core = 0, socket = 0, node = 0;
  std::vector<TopologyGraph::Placement>* out = nullptr;
};

class PlacementVisitor : public boost::default_dfs_visitor {
 public:
  explicit PlacementVisitor(PlacementWalk* w) : w_(w) {}
  void discover_vertex(TopologyGraph::Vertex v, const TopologyGraph::Graph& g) const {
    const TopologyVertex& p = g[v];
    switch (p.level) {
      case Level::kMachine: break;
      case Level::kNode: w_->node = p.index; break;
      case Level::kSocket: w_->socket = p.index; break;
      case Level::kCore: w_->core = p.index; break;
      case Level::kThread: (*w_->out)[p.index] = {p.index, w_->core, w_->socket, w_->node}; break;
    }
  }

 private:
  PlacementWalk* w_;
};

}  // namespace

// Boost 1.74's named_graph returns a default-constructed boost::optional that g++ 12's
// -Wuninitialized (with -fsanitize at -O2) flags once inlined here; the optional is empty by
// construction, so the warning is a false positive in Boost, silenced for this function only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
TopologyGraph::Vertex TopologyGraph::add(Level level, std::uint32_t index, const Vertex* parent) {
  Vertex v = boost::add_vertex(TopologyVertex{level, index}, g_);
  if (parent) boost::add_edge(*parent, v, g_);
  ++counts_[static_cast<std::size_t>(level)];
  return v;
}
#pragma GCC diagnostic pop

TopologyGraph::TopologyGraph(const TopologySpec& spec) {
  const std::uint32_t sockets = spec.sockets, cps = spec.cores_per_socket;
  const std::uint32_t tpc = spec.threads_per_core, nodes = spec.nodes;
  const std::uint32_t total_cores = sockets * cps;
  const std::uint32_t cores_per_node = total_cores / nodes;
  nodes_inside_sockets_ = nodes > sockets;

  // A core and its threads. Thread k of core c is k * total_cores + c (Linux x86 enumeration).
  auto add_core = [&](const Vertex& above, std::uint32_t core) {
    Vertex cv = add(Level::kCore, core, &above);
    for (std::uint32_t k = 0; k < tpc; ++k) add(Level::kThread, k * total_cores + core, &cv);
  };

  root_ = add(Level::kMachine, 0, nullptr);
  if (nodes_inside_sockets_) {
    // AMD EPYC NPS2/NPS4 (and Intel SNC): each socket splits into nodes_per_socket nodes, each
    // with a contiguous block of the socket's cores.
    const std::uint32_t nodes_per_socket = nodes / sockets;
    for (std::uint32_t s = 0; s < sockets; ++s) {
      Vertex sv = add(Level::kSocket, s, &root_);
      for (std::uint32_t n = s * nodes_per_socket; n < (s + 1) * nodes_per_socket; ++n) {
        Vertex nv = add(Level::kNode, n, &sv);
        for (std::uint32_t c = n * cores_per_node; c < (n + 1) * cores_per_node; ++c) add_core(nv, c);
      }
    }
  } else {
    // One node per socket (the usual Xeon), or several sockets per node.
    const std::uint32_t sockets_per_node = sockets / nodes;
    for (std::uint32_t n = 0; n < nodes; ++n) {
      Vertex nv = add(Level::kNode, n, &root_);
      for (std::uint32_t s = n * sockets_per_node; s < (n + 1) * sockets_per_node; ++s) {
        Vertex sv = add(Level::kSocket, s, &nv);
        for (std::uint32_t c = s * cps; c < (s + 1) * cps; ++c) add_core(sv, c);
      }
    }
  }
}

std::vector<TopologyGraph::Vertex> TopologyGraph::children(Vertex v) const {
  std::vector<Vertex> out;
  for (auto [e, end] = boost::out_edges(v, g_); e != end; ++e) out.push_back(boost::target(*e, g_));
  return out;
}

TopologyGraph::Vertex TopologyGraph::parent(Vertex v) const {
  auto [e, end] = boost::in_edges(v, g_);
  return e == end ? v : boost::source(*e, g_);
}

TopologyGraph::Vertex TopologyGraph::find(Level level, std::uint32_t index) const {
  for (auto [v, end] = boost::vertices(g_); v != end; ++v)
    if (g_[*v].level == level && g_[*v].index == index) return *v;
  throw std::out_of_range("TopologyGraph::find: no such vertex");
}

std::vector<TopologyGraph::Placement> TopologyGraph::placements() const {
  std::vector<Placement> out(count(Level::kThread));
  PlacementWalk walk;
  walk.out = &out;
  boost::depth_first_search(g_, boost::visitor(PlacementVisitor(&walk)).root_vertex(root_));
  return out;
}

}  // namespace vcpusim::topo
