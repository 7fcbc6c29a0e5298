// SPDX-License-Identifier: MIT
#include "app/affinity.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace vcpusim::app {
namespace {

bool parse_uint(std::string_view s, std::uint32_t& out) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

struct CpuRange {
  std::uint32_t lo = 0, hi = 0;
};

// The items of a `cpus:` list ("[0,2,4-7]" or "0-3"), in the order written; "" or why not (the
// first bad item's fault, a CPU at or past `threads` included).
std::string parse_cpu_list(std::string arg, std::uint32_t threads, std::vector<CpuRange>& out) {
  if (!arg.empty() && arg.front() == '[') {
    if (arg.back() != ']') return "unbalanced '['";
    arg = arg.substr(1, arg.size() - 2);
  }
  std::size_t pos = 0;
  while (pos <= arg.size()) {
    std::size_t comma = arg.find(',', pos);
    if (comma == std::string::npos) comma = arg.size();
    const std::string item = arg.substr(pos, comma - pos);
    std::uint32_t lo = 0, hi = 0;
    const auto dash = item.find('-');
    if (dash == std::string::npos) {
      if (!parse_uint(item, lo)) return "'" + item + "' is not a CPU number";
      hi = lo;
    } else if (!parse_uint(item.substr(0, dash), lo) || !parse_uint(item.substr(dash + 1), hi) || hi < lo) {
      return "'" + item + "' is not a CPU range";
    }
    if (hi >= threads)
      return "CPU " + std::to_string(hi) + " does not exist (the machine has " + std::to_string(threads) + " hardware threads)";
    out.push_back(CpuRange{lo, hi});
    pos = comma + 1;
  }
  return "";
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
  std::vector<CpuRange> ranges;
  if (const std::string why = parse_cpu_list(arg, t.num_threads(), ranges); !why.empty()) bad(why);
  topo::CpuSet s;
  for (const CpuRange& r : ranges)
    for (std::uint32_t c = r.lo; c <= r.hi; ++c) s.set(c);
  if (s.empty()) bad("empty CPU list");
  return s;
}

std::string canonical_affinity(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return text;
  const std::string kind = text.substr(0, colon);
  const std::string arg = text.substr(colon + 1);
  if (kind == "node" || kind == "socket" || kind == "core") {
    std::uint32_t n = 0;
    return parse_uint(arg, n) ? kind + ":" + std::to_string(n) : text;
  }
  std::vector<CpuRange> ranges;
  if (kind != "cpus" || !parse_cpu_list(arg, UINT32_MAX, ranges).empty()) return text;
  // Sorted and merged, as ranges: no set is expanded, so cpus:[0-4000000000] costs nothing.
  std::sort(ranges.begin(), ranges.end(), [](const CpuRange& a, const CpuRange& b) { return a.lo < b.lo; });
  std::string out;
  for (std::size_t i = 0; i < ranges.size();) {
    CpuRange r = ranges[i];
    for (++i; i < ranges.size() && (r.hi == UINT32_MAX || ranges[i].lo <= r.hi + 1); ++i) r.hi = std::max(r.hi, ranges[i].hi);
    out += (out.empty() ? "" : ",") + std::to_string(r.lo) + (r.hi == r.lo ? "" : "-" + std::to_string(r.hi));
  }
  return "cpus:[" + out + "]";
}

std::vector<topo::NodeId> nodes_of(const topo::CpuSet& s, const topo::Topology& t) {
  std::vector<topo::NodeId> out;
  for (topo::NodeId n = 0; n < t.num_nodes(); ++n)
    if (s.intersects(t.threads_of_node(n))) out.push_back(n);
  return out;
}

}  // namespace vcpusim::app
