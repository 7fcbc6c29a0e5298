// SPDX-License-Identifier: MIT
#include "app/affinity.h"

#include <charconv>

namespace vcpusim::app {
namespace {

bool parse_uint(std::string_view s, std::uint32_t& out) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

}  // namespace

topo::CpuSet resolve_affinity(const YamlReader& at, const std::string& text, const topo::Topology& t,
                              std::uint32_t vm_index) {
  const auto bad = [&](const std::string& why) { at.fail("'" + text + "': " + why); };
  if (text == "all") return t.all_threads();
  if (text == "node-round-robin") return t.threads_of_node(vm_index % t.num_nodes());
  const auto colon = text.find(':');
  if (colon == std::string::npos)
    bad("expected all, node:N, socket:N, core:N, cpus:[...] or node-round-robin");
  const std::string kind = text.substr(0, colon);
  std::string arg = text.substr(colon + 1);
  std::uint32_t n = 0;
  if (kind == "node" || kind == "socket" || kind == "core") {
    if (!parse_uint(arg, n)) bad("expected a number after '" + kind + ":'");
    if (kind == "node") {
      if (n >= t.num_nodes()) bad("node " + std::to_string(n) + " does not exist (the machine has " + std::to_string(t.num_nodes()) + ")");
      return t.threads_of_node(n);
    }
    if (kind == "socket") {
      if (n >= t.num_sockets()) bad("socket " + std::to_string(n) + " does not exist (the machine has " + std::to_string(t.num_sockets()) + ")");
      return t.threads_of_socket(n);
    }
    if (n >= t.num_cores()) bad("core " + std::to_string(n) + " does not exist (the machine has " + std::to_string(t.num_cores()) + ")");
    return t.threads_of_core(n);
  }
  if (kind != "cpus") bad("unknown affinity kind '" + kind + "'");
  if (!arg.empty() && arg.front() == '[') {
    if (arg.back() != ']') bad("unbalanced '['");
    arg = arg.substr(1, arg.size() - 2);
  }
  topo::CpuSet s;
  std::size_t pos = 0;
  while (pos <= arg.size()) {
    std::size_t comma = arg.find(',', pos);
    if (comma == std::string::npos) comma = arg.size();
    const std::string item = arg.substr(pos, comma - pos);
    std::uint32_t lo = 0, hi = 0;
    const auto dash = item.find('-');
    if (dash == std::string::npos) {
      if (!parse_uint(item, lo)) bad("'" + item + "' is not a CPU number");
      hi = lo;
    } else if (!parse_uint(item.substr(0, dash), lo) || !parse_uint(item.substr(dash + 1), hi) || hi < lo) {
      bad("'" + item + "' is not a CPU range");
    }
    if (hi >= t.num_threads())
      bad("CPU " + std::to_string(hi) + " does not exist (the machine has " + std::to_string(t.num_threads()) + " hardware threads)");
    for (std::uint32_t c = lo; c <= hi; ++c) s.set(c);
    pos = comma + 1;
  }
  if (s.empty()) bad("empty CPU list");
  return s;
}

std::vector<topo::NodeId> nodes_of(const topo::CpuSet& s, const topo::Topology& t) {
  std::vector<topo::NodeId> out;
  for (topo::NodeId n = 0; n < t.num_nodes(); ++n)
    if (s.intersects(t.threads_of_node(n))) out.push_back(n);
  return out;
}

}  // namespace vcpusim::app
