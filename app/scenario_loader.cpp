// SPDX-License-Identifier: MIT
// This file reads scenario files into ScenarioSpec. The schema is documented in the README
// ("Scenario files"); every key is checked here: unknown keys, wrong types and out-of-range
// values are ConfigErrors that name file, line, column and field.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "app/affinity.h"
#include "app/scenario.h"
#include "app/sweep.h"
#include "app/text.h"
#include "app/topology_loader.h"
#include "guest/spinlock.h"
#include "guest/workload.h"
#include "policies/registry.h"

namespace vcpusim::app {
namespace {

/// The most vCPUs and bare-metal tasks one scenario may hold (a bound on memory and set-up time;
/// the largest shipped host, epyc-2s-64c at 4x, has 512).
constexpr std::uint32_t kMaxEntities = 1'000'000;
/// The shortest compute phase of a `program` (1 us): every step is an event.
constexpr double kMinComputeNs = 1e3;

// Reads the keys a plug-in declared, from `r` (all other keys of r were checked by the caller).
sim::ParamValues read_params(const YamlReader& r, const std::vector<sim::ParamSpec>& specs) {
  sim::ParamValues out;
  for (const auto& p : specs) {
    if (!r.has(p.name)) continue;
    const YamlReader v = r.at(p.name);
    double x = 0;
    switch (p.kind) {
      case sim::ParamSpec::Kind::kDuration: x = static_cast<double>(v.as_duration()); break;
      case sim::ParamSpec::Kind::kInt: {
        if (p.bytes && v.is_scalar() && !v.node().Scalar().empty() &&
            !std::isdigit(static_cast<unsigned char>(v.node().Scalar().back())))
          x = static_cast<double>(v.as_bytes());
        else
          x = static_cast<double>(v.as_int());
        break;
      }
      case sim::ParamSpec::Kind::kDouble: x = v.as_double(); break;
      case sim::ParamSpec::Kind::kChoice: {
        const std::string s = v.as_string();
        auto it = std::find(p.choices.begin(), p.choices.end(), s);
        if (it == p.choices.end()) {
          std::string all;
          for (const auto& c : p.choices) all += (all.empty() ? "" : ", ") + c;
          v.fail("'" + s + "' is not one of: " + all);
        }
        x = static_cast<double>(it - p.choices.begin());
        out.set(p.name, x);
        continue;
      }
    }
    // A value below a key's nonzero floor ran as the plug-in's fallback: credit2's ratelimit of
    // 50us ran as 1ms (Xen's boot-time reset to the default), exit 0.
    const bool below_floor = p.least_nonzero > 0 && x != 0 && x < p.least_nonzero;
    if (x < p.lo || x > p.hi || below_floor) {
      // The value as written: printing x would show 4294967297 as 4.29497e+09, and
      // 1.0000000000000002 as 1, "out of range [0, 1]".
      std::ostringstream os;
      const bool dur = p.kind == sim::ParamSpec::Kind::kDuration;
      // Bounds too, in the shortest form that reads back: ostream's six digits printed
      // chunk_pages' 1048576 as 1.04858e+06, so 1048580 was "out of range [2, 1.04858e+06]".
      const auto text = [&](double b) { return dur ? duration_text(b) : value_label(nlohmann::json(b)); };
      os << v.node().Scalar() << " is out of range";
      if (p.least_nonzero > 0) os << ": 0 (off) or [" << text(p.least_nonzero) << ", " << text(p.hi) << "]";
      else os << " [" << text(p.lo) << ", " << text(p.hi) << "]";
      v.fail(os.str());
    }
    out.set(p.name, x);
  }
  // A key for another variant of the plug-in ran as if absent (cs_frac under sysbench 1.0, an
  // arena-trim cost under ebizzy's mmap-lock kernel); it is refused instead, naming the key.
  for (const auto& p : specs) {
    if (p.only_with.empty() || !r.has(p.name)) continue;
    const auto sel = std::find_if(specs.begin(), specs.end(), [&](const auto& q) { return q.name == p.only_with; });
    if (sel == specs.end() || sel->kind != sim::ParamSpec::Kind::kChoice)
      throw std::logic_error("parameter " + p.name + " acts only with '" + p.only_with + "', which is no choice key");
    const auto idx = static_cast<std::size_t>(out.get(sel->name, sel->def));
    const std::string& value = sel->choices.at(idx);
    if (std::find(p.only_with_values.begin(), p.only_with_values.end(), value) != p.only_with_values.end()) continue;
    std::string acts;
    for (const auto& v : p.only_with_values) acts += (acts.empty() ? "" : " or ") + v;
    r.at(p.name).fail("has no effect with " + sel->name + ": " + value + (r.has(sel->name) ? "" : " (the default)") +
                      "; it acts only with " + sel->name + ": " + acts);
  }
  // Pairs the model would otherwise have to bend (a high mark at or below the batch was raised
  // to batch + 1, exit 0).
  for (const auto& p : specs) {
    if (p.above.empty() || (!r.has(p.name) && !r.has(p.above))) continue;
    const auto low = std::find_if(specs.begin(), specs.end(), [&](const auto& q) { return q.name == p.above; });
    if (low == specs.end()) throw std::logic_error("parameter " + p.name + " must exceed '" + p.above + "', which is no key");
    const double x = out.get(p.name, p.def), floor = out.get(low->name, low->def);
    if (x > floor) continue;
    std::ostringstream os;
    if (r.has(p.name)) {
      os << x << " is not above " << low->name << " (" << floor << (r.has(low->name) ? "" : ", the default") << ")";
      r.at(p.name).fail(os.str());
    }
    os << p.name << " (" << x << ", the default) must be above it";
    r.at(low->name).fail(os.str());
  }
  return out;
}

void only_keys(const YamlReader& r, const std::vector<std::string>& allowed) {
  r.require_map();
  for (const auto& k : r.keys())
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string all;
      for (const auto& a : allowed) all += (all.empty() ? "" : ", ") + a;
      // Point at the key itself.
      for (const auto& kv : r.node())
        if (kv.first.Scalar() == k) {
          // A key a sweep override created has no mark of its own; its value came from the
          // sweep's line.
          const YAML::Mark m = kv.first.Mark().is_null() ? kv.second.Mark() : kv.first.Mark();
          const std::string shown = shown_key(k);  // an empty key still gets a name
          throw ConfigError(r.file(), m.is_null() ? 0 : m.line + 1, m.is_null() ? 0 : m.column + 1,
                            r.path().empty() ? shown : r.path() + "." + shown, unknown_key_message(kv.first, all));
        }
    }
}

guest::Phase read_phase(const YamlReader& r) {
  r.require_map();
  guest::Phase ph;
  const bool c = r.has("compute"), b = r.has("block");
  if (c == b) r.fail("a phase has exactly one of 'compute' or 'block'");
  ph.compute = c;
  if (c) {
    r.only({"compute", "profile", "mem_intensity", "dist"});
    ph.mean_ns = static_cast<double>(r.get_duration("compute", 0, 0, kMaxRunDuration));
    // A step is an event: a 1 ns step made a 10 s run 10^10 events (hours). 1 us is sysbench's
    // event floor too; 0 (no work) stays allowed, for a phase a sweep switches off.
    if (ph.mean_ns > 0 && ph.mean_ns < kMinComputeNs)
      r.at("compute").fail("is shorter than 1us, the shortest compute step (0 for none)");
    const std::string prof = r.get_enum("profile", "cpu", {"cpu", "memory", "mixed"});
    hv::parse_profile(prof, ph.profile);
    ph.mem_intensity = r.get_double("mem_intensity", ph.profile == hv::Profile::kMemory ? 0.8 : 0.0, 0.0, 1.0);
  } else {
    r.only({"block", "dist"});
    ph.mean_ns = static_cast<double>(r.get_duration("block", 0, 0, kMaxRunDuration));
  }
  const std::string d = r.get_enum("dist", "const", {"const", "exp", "uniform"});
  ph.dist = d == "exp" ? guest::Phase::Dist::kExp : d == "uniform" ? guest::Phase::Dist::kUniform : guest::Phase::Dist::kConst;
  return ph;
}

WorkloadSpec read_workload(const YamlReader& r) {
  r.require_map();
  WorkloadSpec w;
  const YamlReader kind = r.at("kind");
  w.kind = kind.as_string();
  if (w.kind == "program") {
    r.only({"kind", "threads", "phases"});
    w.threads = static_cast<std::uint32_t>(r.get_int("threads", 1, 1, 4096));
    const YamlReader ph = r.at("phases");
    ph.require_sequence();
    if (ph.size() == 0) ph.fail("a program needs at least one phase");
    bool work = false;
    for (std::size_t i = 0; i < ph.size(); ++i) {
      w.phases.push_back(read_phase(ph.at(i)));
      work = work || (w.phases.back().compute && w.phases.back().mean_ns > 0);
    }
    if (!work) ph.fail("a program needs at least one compute phase with work > 0");
    return w;
  }
  const guest::WorkloadInfo* info = guest::find_workload(w.kind);
  if (!info) {
    std::string all = "program";
    for (const auto& x : guest::workloads()) all += ", " + std::string(x.kind);
    kind.fail("unknown workload kind '" + w.kind + "' (known: " + all + ")");
  }
  std::vector<std::string> allowed{"kind"};
  for (const auto& p : info->params) allowed.push_back(p.name);
  only_keys(r, allowed);
  w.params = read_params(r, info->params);
  // A sysbench-memory step is events_per_step events of block_size / thread_bandwidth each, and
  // every step is an event: one event of 1 KiB at 1e6 MiB/s (1 ns) made a 20 ms run of 64
  // threads take 3 s (a 10 s run 25 minutes), and steps below a nanosecond wrote more MiB/s than
  // the node's bandwidth allows. The floor is a program's compute phase's; auto (0) makes 1 ms
  // (50 us for 0.4 and 0.5), and sysbench-cpu's event_time is at least 1 us.
  if (w.kind == "sysbench-memory" && r.has("events_per_step")) {
    const auto value = [&](const char* name) {
      const auto spec = std::find_if(info->params.begin(), info->params.end(), [&](const auto& p) { return p.name == name; });
      return w.params.get(name, spec->def);
    };
    const double n = value("events_per_step");
    const double event_ns = value("block_size") / (value("thread_bandwidth") * 1024.0 * 1024.0) * 1e9;
    if (n >= 1 && n * event_ns < kMinComputeNs) {
      std::ostringstream os;
      os << n << " x block_size / thread_bandwidth (" << event_ns << " ns an event) is a step of " << n * event_ns
         << " ns, shorter than 1us, the shortest compute step (each step is an event): give more events per step, "
         << "or 0 for the fewest that make 1 ms";
      r.at("events_per_step").fail(os.str());
    }
  }
  // The workload's own thread count: a bare-metal group is one entity per thread, and a
  // workload may run more threads than its `threads` parameter (mutilate adds memcached's).
  w.threads = info->make(w.params)->threads();
  return w;
}

std::string affinity_text(const YamlReader& r) {
  if (r.is_scalar()) return r.as_string();
  if (r.is_sequence()) {
    std::string s = "cpus:[";
    for (std::size_t i = 0; i < r.size(); ++i) s += (i ? "," : "") + std::to_string(r.at(i).as_int());
    return s + "]";
  }
  if (r.is_map() && r.size() == 1) {
    const std::string k = r.keys().front();
    const YamlReader v = r.at(k);
    if (v.is_sequence()) {
      std::string s = k + ":[";
      for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v.at(i).as_string();
      return s + "]";
    }
    return k + ":" + v.as_string();
  }
  r.fail("expected an affinity such as all, node:1, socket:0, cpus:[0,1] or node-round-robin");
}

// libxl's automatic NUMA placement (libxl__get_numa_candidate, xen-credit2.md section 7): node
// sets are tried from the smallest size that holds the domain's vCPUs (ceil(vcpus / threads per
// node)) and, within that size, the set on which the fewest vCPUs of earlier domains can run
// wins, ties going to the first set in order. MODEL: free memory, libxl's second criterion, is
// not tracked (every node is taken to have room), and sets are built greedily from the
// least-loaded nodes rather than enumerated.
std::vector<topo::NodeId> auto_place(const topo::Topology& t, std::uint32_t vcpus, const std::vector<std::uint32_t>& placed) {
  const std::uint32_t per_node = t.threads_of_node(0).count();
  const std::uint32_t want = std::min<std::uint32_t>(t.num_nodes(), std::max<std::uint32_t>(1, (vcpus + per_node - 1) / per_node));
  std::vector<topo::NodeId> order(t.num_nodes());
  for (topo::NodeId n = 0; n < order.size(); ++n) order[n] = n;
  std::stable_sort(order.begin(), order.end(), [&](topo::NodeId a, topo::NodeId b) { return placed[a] < placed[b]; });
  order.resize(want);
  std::sort(order.begin(), order.end());
  return order;
}

// Memory placement for one instance; returns the share of memory on each node. `hard` and
// `soft` are the unions over the instance's vCPUs (Xen ORs every vCPU's masks). `auto_nodes`
// holds libxl's choice when automatic placement applies (else it is empty).
std::vector<double> place_memory(const YamlReader& at, const std::string& how, const topo::Topology& t,
                                 const topo::CpuSet& hard, const topo::CpuSet& soft,
                                 const std::vector<topo::NodeId>& auto_nodes, bool xen_host) {
  const std::uint32_t nodes = t.num_nodes();
  std::vector<double> m(nodes, 0.0);
  auto spread_over = [&](const std::vector<topo::NodeId>& ns) {
    for (auto n : ns) m[n] = 1.0 / static_cast<double>(ns.size());
  };
  std::vector<topo::NodeId> all(nodes);
  for (std::uint32_t n = 0; n < nodes; ++n) all[n] = n;
  if (how == "interleave") {
    spread_over(all);
  } else if (how == "auto" && !xen_host) {
    // A KVM host has no toolstack placement and no soft affinity: QEMU's guest RAM is ordinary
    // anonymous memory under the default policy (MPOL_DEFAULT: the node of the CPU that first
    // touches a page), and the vCPU threads that touch it run wherever their hard affinity (a
    // cpuset, taskset) lets the host scheduler put them. MODEL: first touch by threads that
    // roam those nodes evenly, i.e. interleaved over the nodes of the hard affinity; automatic
    // NUMA balancing (task_numa_fault, page migration) is not modelled.
    spread_over(nodes_of(hard, t));
  } else if (how == "auto" || how == "follow-affinity") {
    // Xen's domain_update_node_affinity() (xen/common/sched/core.c; xen-credit2.md section 7):
    // the nodes of the vCPUs' hard affinity narrowed to their soft affinity where the two meet,
    // else of the hard affinity alone (a soft affinity disjoint from hard is ignored, as it is
    // by the scheduler); memory goes to those nodes.
    const topo::CpuSet narrow = hard & soft;
    const auto dn = nodes_of(narrow.empty() ? hard : narrow, t);
    if (dn.size() < nodes) spread_over(dn);
    else if (how == "follow-affinity" || auto_nodes.empty()) spread_over(all);
    else spread_over(auto_nodes);  // striped over the chosen nodes, as get_free_buddy rotates
  } else if (how.rfind("node:", 0) == 0) {
    // The whole rest is the number: stoul read node:1e3, node:1.9 and node:1abc as node 1, and
    // node:-1 as node 4294967295.
    const std::string_view digits = std::string_view(how).substr(5);
    std::uint32_t n = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty())
      at.fail("'" + how + "': expected node:N, N a node number");
    if (n >= nodes) at.fail("node " + std::to_string(n) + " does not exist (the machine has " + std::to_string(nodes) + ")");
    m[n] = 1.0;
  } else {
    at.fail("'" + how + "' is not a placement (auto, follow-affinity, interleave, node:N)");
  }
  return m;
}

/// What the groups read so far hold, against kMaxEntities: a group is charged as soon as its
/// count and sizes are known, before its instances are built (one group of 4096 x 4096 vCPUs
/// took 7.7 s and 2 GB to build before the cap refused it).
struct EntityBudget {
  std::uint64_t entities = 0;  ///< vCPUs and bare-metal tasks
  std::uint64_t threads = 0;   ///< workload threads, every one a workload runs
  void charge(const YamlReader& group, std::uint64_t count, std::uint64_t vcpus, std::uint64_t threads_each) {
    entities += count * vcpus;
    if (entities > kMaxEntities)
      group.fail("brings the scenario to " + std::to_string(entities) + " vCPUs and tasks, more than " +
                 std::to_string(kMaxEntities));
    // Guest threads too: 4096 instances of 4096 threads each passed the vCPU cap and took
    // 3.7 GB per group before the first event. Every thread the workload runs counts, not its
    // `threads:` key alone: a program's threads (it has no such parameter), Cassandra's stage
    // pools and memcached's workers passed the cap and ran out of memory after seconds.
    threads += count * threads_each;
    if (threads > kMaxEntities)
      group.fail("brings the scenario to " + std::to_string(threads) + " workload threads, more than " +
                 std::to_string(kMaxEntities));
  }
};

GroupSpec read_group(const YamlReader& r, bool bare_metal, const topo::Topology& t, const topo::CpuSet& usable,
                     std::uint32_t& vm_index, std::vector<std::uint32_t>& placed, EntityBudget& budget, bool xen_host,
                     bool allow_cookie = false) {
  std::vector<std::string> keys{"name", "count", "affinity", "memory", "workload"};
  if (!bare_metal) keys = {"name", "count", "vcpus", "weight", "cap", "affinity", "memory", "workload"};
  if (allow_cookie) keys.emplace_back("cookie");
  // Named for what it needs: "unknown key" for cookie: 5 and "out of range" for cookie: -1
  // gave two reasons for one mistake.
  else if (r.has("cookie")) r.at("cookie").fail("a cookie needs host.core_scheduling: cookie (core scheduling's tags)");
  only_keys(r, keys);
  GroupSpec g;
  g.bare_metal = bare_metal;
  const YamlReader name = r.at("name");
  g.name = name.as_string();
  if (g.name.empty() || g.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos)
    name.fail("a name uses only letters, digits, '-' and '_'");
  // Paths address a group by name or by index (vms.1.vcpus): a name of digits only was read as
  // an index, and `--set vms.1.vcpus=3` silently changed another group.
  if (g.name.find_first_not_of("0123456789") == std::string::npos)
    name.fail("a name needs a letter, '-' or '_': '" + g.name + "' reads as a list index in paths such as vms." + g.name + ".vcpus");
  g.workload = read_workload(r.at("workload"));
  // count: 0 is allowed so a sweep can switch a group off (e.g. an "Alone" row).
  g.count = static_cast<std::uint32_t>(r.get_int("count", 1, 0, 4096));
  if (bare_metal) {
    g.vcpus = g.workload.threads;
  } else {
    // Checked before the narrowing: 4294967297 once became a 1-vCPU VM.
    const std::int64_t vcpus = r.at("vcpus").as_int();
    if (vcpus < 1 || vcpus > 4096) r.at("vcpus").fail(std::to_string(vcpus) + " is out of range [1, 4096]");
    g.vcpus = static_cast<std::uint32_t>(vcpus);
    g.weight = static_cast<std::uint32_t>(r.get_int("weight", 256, 1, 65535));
    g.cap_pct = static_cast<std::uint32_t>(r.get_int("cap", 0, 0, 100 * 4096));
  }
  budget.charge(r, g.count, g.vcpus, g.workload.threads);
  std::vector<std::vector<std::string>> per_vcpu_hard, per_vcpu_soft;
  std::vector<YamlReader> per_vcpu_at;
  YamlReader hard_at = r, soft_at = r;
  if (r.has("affinity")) {
    const YamlReader a = r.at("affinity");
    a.only({"hard", "soft", "per_vcpu"});
    if (a.has("hard")) { hard_at = a.at("hard"); g.hard_text = affinity_text(hard_at); }
    if (a.has("soft")) { soft_at = a.at("soft"); g.soft_text = affinity_text(soft_at); }
    if (a.has("per_vcpu")) {
      const YamlReader pv = a.at("per_vcpu");
      pv.require_sequence();
      if (pv.size() != g.vcpus) pv.fail("has " + std::to_string(pv.size()) + " entries for " + std::to_string(g.vcpus) + " vCPUs");
      for (std::size_t i = 0; i < pv.size(); ++i) {
        pv.at(i).only({"hard", "soft"});
        per_vcpu_at.push_back(pv.at(i));
      }
    }
    // Soft affinity is Xen's (credit2 and the rr stand-in for credit1). Linux has none, so on a
    // cfs host or for bare-metal tasks it ran as if not given (the metrics were identical).
    if (!xen_host || bare_metal) {
      std::vector<YamlReader> softs;
      if (a.has("soft")) softs.push_back(a.at("soft"));
      for (const YamlReader& pv : per_vcpu_at)
        if (pv.has("soft")) softs.push_back(pv.at("soft"));
      for (const YamlReader& sa : softs)
        if (affinity_text(sa) != "all")
          sa.fail(std::string("soft affinity is Xen's; ") +
                  (bare_metal ? "a bare-metal Linux task has only hard affinity (taskset)"
                              : "a KVM host (cfs) has none: use hard affinity (vcpupin)"));
    }
  }
  std::string placement = "auto";
  YamlReader placement_at = r;
  if (r.has("memory")) {
    const YamlReader m = r.at("memory");
    m.only({"size", "placement"});
    g.memory_bytes = m.get_bytes("size", 0);
    if (m.has("placement")) { placement_at = m.at("placement"); placement = placement_at.as_string(); }
  }
  g.placement_text = placement;
  for (std::uint32_t i = 0; i < g.count; ++i, ++vm_index) {
    hv::DomainSpec d;
    d.name = g.count > 1 ? g.name + "-" + std::to_string(i) : g.name;
    d.bare_metal = bare_metal;
    d.vcpus = g.vcpus;
    d.weight = g.weight;
    d.cap_pct = g.cap_pct;
    const topo::CpuSet hard = resolve_affinity(hard_at, g.hard_text, t, vm_index);
    const topo::CpuSet soft = resolve_affinity(soft_at, g.soft_text, t, vm_index);
    for (std::uint32_t v = 0; v < g.vcpus; ++v) {
      topo::CpuSet h = hard, s = soft;
      if (!per_vcpu_at.empty()) {
        const YamlReader& pv = per_vcpu_at[v];
        if (pv.has("hard")) h = resolve_affinity(pv.at("hard"), affinity_text(pv.at("hard")), t, vm_index);
        if (pv.has("soft")) s = resolve_affinity(pv.at("soft"), affinity_text(pv.at("soft")), t, vm_index);
      }
      if ((h & usable).empty())
        (r.has("affinity") ? r.at("affinity") : r).fail("hard affinity of " + d.name + " vCPU " + std::to_string(v) +
                                                        " holds no usable hardware thread (host.smt: off disables the second thread of each core)");
      d.hard.push_back(h);
      d.soft.push_back(s);
    }
    // libxl runs automatic placement when the domain names no soft affinity, no per-vCPU
    // affinity and no explicit node (a single hard `cpus=` does not stop it), and then sets
    // the soft affinity of every vCPU to the chosen nodes as well as the memory. Only a Xen
    // host has libxl; a KVM host's `auto` is first touch (place_memory).
    std::vector<topo::NodeId> auto_nodes;
    if (xen_host && placement == "auto" && g.soft_text == "all" && per_vcpu_at.empty() && !bare_metal &&
        t.num_nodes() > 1 && nodes_of(d.hard.front(), t).size() == t.num_nodes()) {
      auto_nodes = auto_place(t, g.vcpus, placed);
      topo::CpuSet soft_nodes;
      for (auto n : auto_nodes) soft_nodes |= t.threads_of_node(n);
      for (auto& s : d.soft) s = soft_nodes;
    }
    topo::CpuSet hard_any, soft_any;
    for (std::uint32_t v = 0; v < g.vcpus; ++v) {
      hard_any |= d.hard[v];
      soft_any |= d.soft[v];
    }
    d.memory_on_node = place_memory(placement_at, placement, t, hard_any, soft_any, auto_nodes, xen_host);
    // What libxl counts for the next domain (nr_vcpus_on_nodes): each vCPU once on every node
    // of the domain's node affinity that its own hard affinity reaches.
    for (topo::NodeId n = 0; n < t.num_nodes(); ++n)
      for (std::uint32_t v = 0; v < g.vcpus; ++v)
        if (d.memory_on_node[n] > 0 && d.hard[v].intersects(t.threads_of_node(n))) ++placed[n];
    g.instances.push_back(std::move(d));
  }
  return g;
}

void read_exec(const YamlReader& h, hv::ExecParams& x) {
  x.context_switch = h.get_duration("context_switch", x.context_switch, 0, sim::ms(10));
  x.resched_ipi = h.get_duration("resched_ipi", x.resched_ipi, 0, sim::ms(1));
  if (h.has("migration")) {
    const YamlReader m = h.at("migration");
    m.only({"cold", "cold_rate", "cross_node_factor"});
    x.cold_duration = m.get_duration("cold", x.cold_duration, 0, sim::seconds(1));
    x.cold_rate = m.get_double("cold_rate", x.cold_rate, 0.01, 1.0);
    x.cold_cross_node_factor = m.get_double("cross_node_factor", x.cold_cross_node_factor, 1.0, 100.0);
  }
  if (h.has("smt_interference")) {
    const YamlReader s = h.at("smt_interference");
    s.only({"cpu", "memory", "mixed"});
    for (const auto& row : s.keys()) {
      const YamlReader rr = s.at(row);
      rr.only({"cpu", "memory", "mixed", "spin"});
      hv::Profile a;
      hv::parse_profile(row, a);
      for (const auto& col : rr.keys()) {
        hv::Profile b;
        hv::parse_profile(col, b);
        x.smt[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] = rr.get_double(col, 0, 0.01, 1.0);
      }
    }
  }
}

}  // namespace

// host.ple: pause-loop exiting (hypervisor/ple.h has each default and its source). The flavour
// follows the host: a credit2 host is Xen (fixed window, undirected yield), any other KVM,
// unless `flavour` says otherwise.
void read_ple(const YamlReader& h, const std::string& policy, hv::PleParams& p) {
  p.flavour = policy == "credit2" ? hv::PleFlavour::kXen : hv::PleFlavour::kKvm;
  if (!h.has("ple")) return;
  const YamlReader r = h.at("ple");
  r.require_map();
  r.only({"enabled", "window", "gap", "grow", "shrink", "max", "tsc_ghz", "exit_cost", "flavour", "scan"});
  constexpr std::int64_t kU32 = std::numeric_limits<std::uint32_t>::max();
  p.enabled = r.get_bool("enabled", false);
  p.gap = static_cast<std::uint32_t>(r.get_int("gap", p.gap, 0, kU32));
  p.window = static_cast<std::uint32_t>(r.get_int("window", p.window, 1, kU32));
  p.grow = static_cast<std::uint32_t>(r.get_int("grow", p.grow, 0, kU32));
  p.shrink = static_cast<std::uint32_t>(r.get_int("shrink", p.shrink, 0, kU32));
  p.max = static_cast<std::uint32_t>(r.get_int("max", p.max, 1, kU32));
  if (p.max < p.window) r.at("max").fail("ple max (" + std::to_string(p.max) + ") is below the window (" +
                                         std::to_string(p.window) + ")");
  p.tsc_ghz = r.get_double("tsc_ghz", p.tsc_ghz, 0.1, 10.0);
  // A spinner exits once a window and pays exit_cost each time: with a 1-cycle window (0.4 ns, so
  // 0 on the clock) and a free exit, time stood still while exits piled up (a fuzzed file ran
  // out of memory). No VM exit and entry costs less than 100 ns (the reference note's 1.3 gives
  // 0.4-1.5 us), which bounds a spinner to 10 M exits a simulated second. The floor is checked
  // first, with its reason; the range then names the same floor (it said [0ns, 1ms]).
  if (r.has("exit_cost") && r.at("exit_cost").as_duration() < sim::ns(100))
    r.at("exit_cost").fail("is at least 100ns: no VM exit and entry is cheaper (0.4-1.5 us measured)");
  p.exit_cost = r.get_duration("exit_cost", p.exit_cost, sim::ns(100), sim::ms(1));
  if (r.has("flavour"))
    p.flavour = r.get_enum("flavour", "kvm", {"kvm", "xen"}) == "xen" ? hv::PleFlavour::kXen : hv::PleFlavour::kKvm;
  p.scan = r.get_enum("scan", "3.10", {"3.10", "5.10"}) == "5.10" ? hv::PleScan::kLinux510 : hv::PleScan::kLinux310;
  if (p.scan == hv::PleScan::kLinux510 && p.flavour == hv::PleFlavour::kXen)
    r.at("scan").fail("'5.10' is KVM's kvm_vcpu_on_spin; a Xen host (flavour xen) yields the spinner itself");
}

// A KVM mechanism set on another host: "WHAT is KVM's (...) and needs a KVM host, policy cfs; a
// POLICY ELSEWHERE" at its line, where it would have run as if not given.
void require_kvm_host(const YamlReader& at, const std::string& policy, const std::string& what,
                      const std::string& elsewhere) {
  if (policy != "cfs") at.fail(what + " and needs a KVM host, policy cfs; a " + policy + " " + elsewhere);
}

// host.halt_poll: KVM halt polling (hypervisor/halt_poll.h has each default and its source). It is
// kvm_vcpu_block()'s, so only a KVM host (cfs) has it: a Xen vCPU that blocks gives up its pCPU.
void read_halt_poll(const YamlReader& h, const std::string& policy, hv::HaltPollParams& p) {
  if (!h.has("halt_poll")) return;
  const YamlReader r = h.at("halt_poll");
  r.require_map();
  r.only({"enabled", "ns", "grow", "grow_start", "shrink"});
  constexpr std::int64_t kU32 = std::numeric_limits<std::uint32_t>::max();
  p.enabled = r.get_bool("enabled", false);
  p.ns = r.get_duration("ns", p.ns, 0, sim::seconds(1));
  p.grow = static_cast<std::uint32_t>(r.get_int("grow", p.grow, 0, kU32));
  p.grow_start = r.get_duration("grow_start", p.grow_start, 0, sim::seconds(1));
  p.shrink = static_cast<std::uint32_t>(r.get_int("shrink", p.shrink, 0, kU32));
  if (p.enabled)
    require_kvm_host(r.at("enabled"), policy, "halt polling is KVM's (kvm_vcpu_block)",
                     "host's vCPU gives up its pCPU when it blocks");
}

// host.cpuidle: {states: TABLE | [{name, exit_latency, target_residency}, ...]} (hypervisor/
// cpuidle.h has the tables and their source). Absent: no idle states, a pCPU wakes at once.
void read_cpuidle(const YamlReader& h, hv::CpuidleParams& p) {
  if (!h.has("cpuidle")) return;
  const YamlReader r = h.at("cpuidle");
  r.require_map();
  r.only({"states"});
  if (!r.has("states")) r.fail("missing required key 'states' (a table name or a list of idle states)");
  const YamlReader st = r.at("states");
  if (st.is_scalar()) {
    const auto table = hv::idle_state_table(st.as_string());
    if (!table)
      st.fail("unknown idle-state table '" + st.as_string() + "' (known: " + comma_join(hv::idle_state_tables()) + ")");
    p.states = *table;
    return;
  }
  st.require_sequence();
  if (st.size() == 0) st.fail("an empty list: give at least one idle state (or leave cpuidle out)");
  // CPUIDLE_STATE_MAX (include/linux/cpuidle.h): a cpuidle driver registers at most 10 states.
  constexpr std::size_t kMaxIdleStates = 10;
  if (st.size() > kMaxIdleStates)
    st.fail("a list of " + std::to_string(st.size()) + " idle states: a cpuidle driver has at most " +
            std::to_string(kMaxIdleStates) + " (CPUIDLE_STATE_MAX)");
  for (std::size_t i = 0; i < st.size(); ++i) {
    const YamlReader e = st.at(i);
    e.require_map();
    e.only({"name", "exit_latency", "target_residency"});
    for (const char* k : {"name", "exit_latency", "target_residency"})
      if (!e.has(k)) e.fail(std::string("missing required key '") + k + "'");
    hv::IdleState s{e.get_string("name", ""), e.get_duration("exit_latency", 0, 0, sim::ms(100)),
                    e.get_duration("target_residency", 0, 0, sim::seconds(1))};
    // The name labels the state in traces (idle-exit's "state"), as intel_idle's "C1E" does.
    if (s.name.empty() || s.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
                              std::string::npos)
      e.at("name").fail("an idle state's name uses only letters, digits, '-' and '_' (e.g. C1E)");
    for (const hv::IdleState& prev : p.states)
      if (prev.name == s.name) e.at("name").fail("idle state '" + s.name + "' is named twice");
    // menu takes the deepest state whose residency the prediction reaches, walking them in order.
    if (!p.states.empty() && (s.target_residency < p.states.back().target_residency ||
                              s.exit_latency < p.states.back().exit_latency))
      e.fail("idle states go shallowest first: exit_latency and target_residency may not fall below the "
             "previous state's");
    p.states.push_back(std::move(s));
  }
}

// host.core_sched (with host.core_scheduling: cookie): a variant preset (core_sched.h), the
// cookie assignment, and any switch overriding the preset.
void read_core_sched(const YamlReader& h, hv::CoreSchedParams& cs) {
  cs = *hv::core_sched_preset("mainline");
  if (!h.has("core_sched")) return;
  const YamlReader c = h.at("core_sched");
  only_keys(c, {"variant", "cookies", "compare", "tie", "tick", "fi_slice", "fi_allowance", "wake", "balance"});
  const std::string variant = c.get_string("variant", "mainline");
  const auto preset = hv::core_sched_preset(variant);
  if (!preset)
    c.at("variant").fail("unknown core scheduling variant '" + variant +
                         "' (known: " + comma_join(hv::core_sched_presets()) + ")");
  cs = *preset;
  const std::string cookies = c.get_enum("cookies", "per-vm", {"per-vm", "per-task", "none"});
  cs.cookies = cookies == "per-task" ? hv::CoreSchedParams::Cookies::kPerTask
               : cookies == "none"   ? hv::CoreSchedParams::Cookies::kNone
                                     : hv::CoreSchedParams::Cookies::kPerVm;
  using P = hv::CoreSchedParams;
  if (c.has("compare")) {
    const std::string v = c.get_enum("compare", "", {"naive", "core_wide", "fi_snapshot", "fi_time", "fi_budget"});
    cs.compare = v == "naive" ? P::Compare::kNaive : v == "core_wide" ? P::Compare::kCoreWide
               : v == "fi_time" ? P::Compare::kFiTime : v == "fi_budget" ? P::Compare::kFiBudget : P::Compare::kFiSnapshot;
  }
  if (c.has("tie"))
    cs.tie = c.get_enum("tie", "", {"prefer_max", "prefer_tagged"}) == "prefer_max" ? P::Tie::kPreferMax : P::Tie::kPreferTagged;
  if (c.has("tick")) {
    const std::string v = c.get_enum("tick", "", {"none", "full_slice", "half_slice"});
    cs.tick = v == "none" ? P::Tick::kNone : v == "full_slice" ? P::Tick::kFullSlice : P::Tick::kHalfSlice;
  }
  cs.fi_slice = c.get_duration("fi_slice", cs.fi_slice, sim::us(100), sim::seconds(10));
  cs.fi_allowance = c.get_duration("fi_allowance", cs.fi_allowance, sim::us(100), sim::seconds(10));
  if (c.has("wake")) cs.wake_cookie_aware = c.get_enum("wake", "", {"cookie_blind", "cookie_aware"}) == "cookie_aware";
  if (c.has("balance")) {
    const std::string v = c.get_enum("balance", "", {"blind", "refuse", "hot"});
    cs.balance = v == "blind" ? P::Balance::kBlind : v == "refuse" ? P::Balance::kRefuse : P::Balance::kHot;
  }
  // Each of the two lengths belongs to one mechanism; under the others it ran as if not given.
  if (c.has("fi_slice") && cs.tick == P::Tick::kNone)
    c.at("fi_slice").fail("has no effect with tick: none (the variant's or the file's); it is the slice the tick "
                          "fixes (full_slice, half_slice) count before a forced-idle re-pick");
  if (c.has("fi_allowance") && cs.compare != P::Compare::kFiBudget)
    c.at("fi_allowance").fail("has no effect with compare: " + std::string(hv::to_string(cs.compare)) +
                              "; it is Tim Chen's idle allowance and acts only with compare: fi_budget");
}

// The process of each thread of a bare-metal group whose workload runs several processes
// (guest::Workload::process_of); empty for VMs and single-process workloads.
std::vector<std::uint32_t> bare_metal_processes(const GroupSpec& g) {
  if (!g.bare_metal || g.workload.kind == "program") return {};
  const auto w = guest::find_workload(g.workload.kind)->make(g.workload.params);
  std::vector<std::uint32_t> procs(w->threads());
  bool several = false;
  for (std::uint32_t t = 0; t < procs.size(); ++t) {
    procs[t] = w->process_of(t);
    several = several || procs[t] != 0;
  }
  return several ? procs : std::vector<std::uint32_t>{};
}

// host.core_scheduling: core (Xen sched-gran=core): needs SMT (Xen's cpupool_gran_init falls
// back to per-CPU scheduling without it; here that is an error, so the file says what runs), and
// host.sched_gran holds the rendezvous cost.
void read_sched_gran(const YamlReader& h, const topo::Topology& t, hv::HostSpec& host) {
  if (!host.smt) h.at("core_scheduling").fail("'core' needs host.smt: on (with one thread per core Xen falls back to sched-gran=cpu)");
  if (t.threads_per_core() < 2)
    h.at("core_scheduling").fail("'core' needs a topology with SMT (this one has one thread per core; Xen falls back to sched-gran=cpu)");
  host.sched_gran.core = true;
  if (!h.has("sched_gran")) return;
  const YamlReader g = h.at("sched_gran");
  only_keys(g, {"rendezvous"});
  host.sched_gran.rendezvous = g.get_duration("rendezvous", host.sched_gran.rendezvous, 0, sim::ms(1));
}

// At sched-gran=core a unit's affinity is read at the cores' first threads
// (cpupool_domain_master_cpumask): each unit's vCPUs must share one in their hard affinities.
void check_unit_affinity(const YamlReader& r, const GroupSpec& g, const topo::Topology& t) {
  const std::uint32_t gran = t.threads_per_core();
  topo::CpuSet masters;
  for (topo::ThreadId c = 0; c < t.num_threads(); ++c)
    if (t.smt_mask(c).first() == c) masters.set(c);
  for (const hv::DomainSpec& d : g.instances)
    for (std::uint32_t first = 0; first < d.vcpus; first += gran) {
      const std::uint32_t last = std::min(d.vcpus, first + gran) - 1;
      // Xen keeps one affinity per unit: each vCPU's setting replaces it (sched_set_affinity()
      // on v->sched_unit), so libxl's per-vCPU calls leave the last vCPU's. Differing masks
      // would run the unit on none of what the earlier vCPUs asked for.
      for (std::uint32_t i = first + 1; i <= last; ++i)
        if ((d.hard[i] & masters) != (d.hard[first] & masters) || (d.soft[i] & masters) != (d.soft[first] & masters))
          (r.has("affinity") ? r.at("affinity") : r)
              .fail("at core_scheduling: core, vCPUs " + std::to_string(first) + "-" + std::to_string(last) + " of " +
                    d.name + " form one unit, which Xen gives one affinity (each vCPU's setting replaces the unit's, "
                    "so the last one set wins); vCPUs " + std::to_string(first) + " and " + std::to_string(i) +
                    " differ at the cores' first threads, where Xen reads it");
      topo::CpuSet m = masters & d.hard[first];
      if (m.empty())
        (r.has("affinity") ? r.at("affinity") : r)
            .fail("at core_scheduling: core, vCPUs " + std::to_string(first) + "-" +
                  std::to_string(std::min(d.vcpus, first + gran) - 1) + " of " + d.name +
                  " form one unit and their hard affinities share no core's first thread (Xen reads affinity there, "
                  "and one names the whole core)");
    }
}

// Cookies under core scheduling: per-vm (each VM its own, from 1; bare-metal groups one per
// instance too, or one per process of a multi-process workload), per-task (each bare-metal task its own as well), none (all 0); a group's
// `cookie:` (0 = untagged) overrides it for every instance and task of the group.
void assign_cookies(ScenarioSpec& s, const std::vector<std::int64_t>& override_of) {
  if (!s.host.core_sched.enabled) return;
  using P = hv::CoreSchedParams;
  std::uint64_t next = 1;
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    for (hv::DomainSpec& d : s.groups[g].instances) {
      d.cookies.clear();
      if (override_of[g] >= 0) {
        d.cookie = static_cast<std::uint64_t>(override_of[g]);
      } else if (s.host.core_sched.cookies == P::Cookies::kNone) {
        d.cookie = 0;
      } else if (d.bare_metal && s.host.core_sched.cookies == P::Cookies::kPerTask) {
        for (std::uint32_t i = 0; i < d.vcpus; ++i) d.cookies.push_back(next++);
        d.cookie = d.cookies.front();
      } else if (const auto procs = bare_metal_processes(s.groups[g]); !procs.empty()) {
        // Per-VM cookies on bare metal: one per process of the workload (each process its
        // own cgroup, e.g. memcached and mutilate), as one per VM is each VM its own cgroup.
        std::uint32_t most = 0;
        for (std::uint32_t p : procs) most = std::max(most, p);
        const std::uint64_t first = next;
        next += most + 1;
        for (std::uint32_t p : procs) d.cookies.push_back(first + p);
        d.cookie = d.cookies.front();
      } else {
        d.cookie = next++;
      }
    }
  }
}

void check_scenario_keys(const YamlReader& root) {
  // sweep: and columns: belong to `vcpusim sweep` (app/sweep.h); a plain run uses the base.
  only_keys(root, {"name", "seed", "duration", "warmup", "repetitions", "topology", "host", "guest", "vms", "baremetal",
                   "sweep", "columns"});
}

ScenarioSpec load_scenario(const YamlReader& root) {
  if (root.is_null()) root.fail("the scenario is empty");
  check_scenario_keys(root);
  ScenarioSpec s;
  s.file = root.file();
  s.name = root.get_string("name", std::filesystem::path(root.file()).stem().string());
  // Without `name:` the name is the file's: one named " .yaml" was refused as "missing required
  // key 'name'", a key the README calls optional.
  if (s.name.find_first_not_of(" \t") == std::string::npos)
    (root.has("name") ? root.at("name") : root)
        .fail(std::string("a scenario's name is not blank (it names the records and reports)") +
              (root.has("name") ? "" : "; without name: it is the file's name, here blank: give name:"));
  if (has_control_character(s.name))
    (root.has("name") ? root.at("name") : root)
        .fail("a scenario's name holds no control character (a newline or tab breaks the tables it heads)");
  s.seed = static_cast<std::uint64_t>(root.get_int("seed", 1, 0, std::numeric_limits<std::int64_t>::max()));
  s.duration = root.get_duration("duration", sim::seconds(10), kMinRunDuration, kMaxRunDuration);
  s.warmup = root.get_duration("warmup", 0, 0, kMaxRunDuration);
  // Both values named: one of them may come from `--set` (duration=400ms against the file's
  // warm-up of 500ms was blamed on the file's warmup line with no figure).
  if (s.warmup >= s.duration)
    root.at("warmup").fail("warm-up (" + duration_text(static_cast<double>(s.warmup)) + ") must be shorter than the duration (" +
                           duration_text(static_cast<double>(s.duration)) + ")");
  s.repetitions = static_cast<std::uint32_t>(root.get_int("repetitions", 1, 1, kMaxRepetitions));
  s.host.warmup = s.warmup;

  if (!root.has("topology")) root.fail("missing required key 'topology' (a preset name, a file, or a mapping)");
  const YamlReader topo_r = root.at("topology");
  const topo::Topology topology = load_topology(topo_r);
  s.topology = topology.spec();
  if (std::string f = topology_file(topo_r); !f.empty()) s.topology_files.push_back(std::move(f));

  if (root.has("host")) {
    const YamlReader h = root.at("host");
    only_keys(h, {"smt", "scheduler", "core_scheduling", "core_sched", "sched_gran", "context_switch", "resched_ipi", "migration",
                  "smt_interference", "ple", "halt_poll", "cpuidle", "kick_boost"});
    s.host.smt = h.get_bool("smt", true);
    const std::string gran = h.get_enum("core_scheduling", "none", {"none", "cookie", "core"});
    // Linux refuses a cookie where no core has two threads: sched_core_share_pid() returns
    // -ENODEV without sched_smt_present (kernel/sched/core_sched.c), so nothing would be tagged.
    if (gran == "cookie" && !s.host.smt)
      h.at("core_scheduling").fail("'cookie' needs host.smt: on (without SMT Linux refuses core scheduling "
                                   "cookies: PR_SCHED_CORE returns -ENODEV)");
    if (gran == "cookie" && topology.threads_per_core() < 2)
      h.at("core_scheduling").fail("'cookie' needs a topology with SMT (this one has one thread per core; Linux "
                                   "refuses core scheduling cookies there: PR_SCHED_CORE returns -ENODEV)");
    if (gran == "cookie") read_core_sched(h, s.host.core_sched);
    else if (h.has("core_sched")) h.at("core_sched").fail("host.core_sched needs host.core_scheduling: cookie");
    if (gran == "core") read_sched_gran(h, topology, s.host);
    else if (h.has("sched_gran")) h.at("sched_gran").fail("host.sched_gran needs host.core_scheduling: core");
    read_exec(h, s.host.exec);
    if (h.has("scheduler")) {
      const YamlReader sch = h.at("scheduler");
      sch.require_map();
      const YamlReader pol = sch.at("policy");
      s.policy = pol.as_string();
      const policy::PolicyInfo* info = policy::find_policy(s.policy);
      if (!info) {
        std::string all;
        for (const auto& p : policy::policies()) all += (all.empty() ? "" : ", ") + std::string(p.name);
        pol.fail("unknown policy '" + s.policy + "' (known: " + all + ")");
      }
      std::vector<std::string> allowed{"policy"};
      for (const auto& p : info->params) allowed.push_back(p.name);
      only_keys(sch, allowed);
      s.policy_params = read_params(sch, info->params);
    }
    read_ple(h, s.policy, s.host.ple);
    read_halt_poll(h, s.policy, s.host.halt_poll);
    // KVM_HC_KICK_CPU's yield (5.3+; HostSpec::kick_boost) is KVM's: a Xen PV unlock sends an
    // event channel, which yields nothing.
    s.host.kick_boost = h.get_bool("kick_boost", false);
    if (s.host.kick_boost)
      require_kvm_host(h.at("kick_boost"), s.policy, "the kick boost is KVM's (KVM_HC_KICK_CPU, Linux 5.3+)",
                       "host's PV kick is an event channel send, which yields nothing");
    // The reschedule IPI is the one cfs (yield_to, wake-up preemption) and credit2 (a tickle)
    // send to a remote pCPU (resched_remote); rr sends none, and at sched-gran=core every tickle
    // is at once, so there a value ran as if not given.
    if (h.has("resched_ipi") && s.policy != "cfs" && s.policy != "credit2")
      h.at("resched_ipi").fail("has no effect under policy " + s.policy +
                               ": only cfs (yield_to, wake-up preemption) and credit2 (tickles) reschedule a remote pCPU by IPI");
    if (h.has("resched_ipi") && s.host.sched_gran.core)
      h.at("resched_ipi").fail("has no effect at core_scheduling: core: a tickle of a core's units is at once");
    read_cpuidle(h, s.host.cpuidle);
    // Under cfs the tick fixes count the running task's own sched_slice (task_tick_core), so a
    // fi_slice would run as if not given.
    if (gran == "cookie" && s.policy == "cfs" && h.has("core_sched") && h.at("core_sched").has("fi_slice"))
      h.at("core_sched").at("fi_slice").fail("has no effect under policy cfs: its tick fixes count the running task's "
                                              "own sched_slice (task_tick_core); fi_slice is for rr and credit2");
    // sched-gran=core is Xen's (core.c, any Xen scheduler); a KVM host's CFS has no such mode:
    // Linux closes the SMT channel with cookies (core_scheduling: cookie) or nosmt.
    if (s.host.sched_gran.core && s.policy == "cfs")
      h.at("core_scheduling").fail("'core' is Xen's sched-gran=core and needs a Xen-style policy (credit2, rr); "
                                   "under cfs (a KVM host) use core_scheduling: cookie");
  }
  if (root.has("guest")) {
    const YamlReader g = root.at("guest");
    g.only({"slice", "start_jitter", "wake_ipi", "hz", "context_switch", "pv_tlb_flush"});
    s.guest.slice = g.get_duration("slice", s.guest.slice, sim::us(10), sim::seconds(10));
    s.guest.start_jitter = g.get_duration("start_jitter", s.guest.start_jitter, 0, sim::seconds(10));
    // Threads start up to start_jitter in: one that may start after the run ends (10s in a 50ms
    // run ran with every thread idle, throughput 0, exit 0) is refused as a warm-up that long is.
    if (s.guest.start_jitter >= s.duration)
      g.at("start_jitter").fail("start jitter (" + duration_text(static_cast<double>(s.guest.start_jitter)) +
                                ") must be shorter than the duration (" + duration_text(static_cast<double>(s.duration)) +
                                "): a thread would start after the run");
    s.guest.wake_ipi = g.get_duration("wake_ipi", s.guest.wake_ipi, 0, sim::ms(10));
    s.guest.hz = static_cast<std::uint32_t>(g.get_int("hz", s.guest.hz, 0, 10000));
    s.guest.context_switch = g.get_duration("context_switch", s.guest.context_switch, 0, sim::ms(10));
    s.guest.pv_tlb_flush = g.get_bool("pv_tlb_flush", false);
    // The guest uses it only where the host offers KVM_FEATURE_PV_TLB_FLUSH: a KVM host.
    if (s.guest.pv_tlb_flush)
      require_kvm_host(g.at("pv_tlb_flush"), s.policy, "the PV TLB flush is KVM's (KVM_FEATURE_PV_TLB_FLUSH, Linux 4.16+ guests)",
                       "host does not offer it");
  }

  topo::CpuSet usable;
  for (topo::ThreadId t = 0; t < topology.num_threads(); ++t)
    if (s.host.smt || topology.smt_mask(t).first() == t) usable.set(t);

  std::set<std::string> names;
  std::map<std::string, std::string> instance_owner;  // instance name -> its group
  std::vector<std::int64_t> cookie_override;  // per group: its `cookie:` (-1: none given)
  std::uint32_t vm_index = 0;
  EntityBudget budget;
  std::vector<std::uint32_t> placed(topology.num_nodes(), 0);  // vCPUs per node, for auto placement
  for (const char* key : {"vms", "baremetal"}) {
    if (!root.has(key)) continue;
    const YamlReader list = root.at(key);
    list.require_sequence();
    for (std::size_t i = 0; i < list.size(); ++i) {
      // (A YamlReader assignment in read_group once overwrote this node; yaml_reader.h.)
      // Xen-like hosts (credit2, and rr after credit1) run libxl's placement; cfs is a KVM host.
      GroupSpec g = read_group(list.at(i), std::string(key) == "baremetal", topology, usable, vm_index, placed,
                               budget, s.policy != "cfs", s.host.core_sched.enabled);
      cookie_override.push_back(list.at(i).has("cookie") ? list.at(i).get_int("cookie", 0, 0, std::int64_t{1} << 40) : -1);
      if (!names.insert(g.name).second) list.at(i).at("name").fail("duplicate name '" + g.name + "'");
      // Settings the host's policy has no use for ran as if not given (a cap under cfs gave the
      // uncapped figures, exit 0).
      if (list.at(i).has("cap")) {
        if (s.policy != "credit2")
          list.at(i).at("cap").fail("a cap is a credit2 setting (xl sched-credit2 -c); the " + s.policy +
                                    " policy has none (CFS bandwidth control is not modelled)");
        // Xen refuses it: "Cap is only valid if it's below 100 * nr_of_units" (credit2.c,
        // csched2_dom_cntl); at sched-gran=core a unit is a core's worth of vCPUs, and a larger
        // cap was clamped to the units' whole cores and ran uncapped.
        const std::uint32_t per_unit = s.host.sched_gran.core ? topology.threads_per_core() : 1;
        const std::uint32_t nr_units = (g.vcpus + per_unit - 1) / per_unit;
        if (g.cap_pct > 100 * nr_units)
          list.at(i).at("cap").fail(std::to_string(g.cap_pct) + " is above 100 x its " +
                                    (per_unit > 1 ? std::to_string(nr_units) + " scheduling units (sched-gran=core)"
                                                  : std::to_string(g.vcpus) + " vCPUs") +
                                    ", which Xen refuses");
      }
      if (list.at(i).has("weight") && s.policy == "rr")
        list.at(i).at("weight").fail("the rr policy has no weights (use credit2 or cfs)");
      // Instances are named NAME-i, so group `cpu` (count 2) and group `cpu-1` both made a
      // `cpu-1`, and one's metrics silently replaced the other's in every output.
      for (const hv::DomainSpec& d : g.instances)
        if (const auto [it, fresh] = instance_owner.emplace(d.name, g.name); !fresh)
          list.at(i).at("name").fail("its instance '" + d.name + "' has the name of an instance of group '" +
                                     it->second + "' (instances of a group of count N are NAME-0 .. NAME-N-1)");
      if (s.host.sched_gran.core) check_unit_affinity(list.at(i), g, topology);
      // A PV ticket lock's waiters halt until the hypervisor kicks them; on bare metal there is
      // none, and Linux keeps the native lock (pv_lock_ops are patched in only by
      // kvm_spinlock_init / xen_init_spinlocks). Here they halted host tasks, kicked by nobody.
      if (g.bare_metal && g.workload.params.all().count("lock") &&
          static_cast<guest::LockKind>(static_cast<int>(g.workload.params.get("lock", 0))) == guest::LockKind::kPvTicket) {
        const YamlReader& w = list.at(i).at("workload");
        (w.has("lock") ? w.at("lock") : w)
            .fail("pvticket needs a hypervisor to kick its halted waiters; bare-metal Linux runs the native ticket lock "
                  "(use lock: ticket)");
      }
      s.groups.push_back(std::move(g));
    }
  }
  // A Linux guest's PV spinlocks are its hypervisor's (chosen at boot: kvm_spinlock_init on KVM,
  // xen_init_spinlocks on Xen), so a workload's `pv_flavour` follows the host policy unless the
  // file gives it, as the PLE flavour does (read_ple): credit2 is the Xen host here.
  if (s.policy == "credit2")
    for (GroupSpec& g : s.groups) {
      if (g.bare_metal || g.workload.params.all().count("pv_flavour")) continue;
      const guest::WorkloadInfo* info = guest::find_workload(g.workload.kind);
      if (!info) continue;
      if (std::any_of(info->params.begin(), info->params.end(), [](const auto& p) { return p.name == "pv_flavour"; }))
        g.workload.params.set("pv_flavour", static_cast<double>(guest::PvFlavour::kXen));
    }
  if (budget.entities == 0) root.fail("the scenario has no vms and no baremetal tasks (or every count is 0)");
  assign_cookies(s, cookie_override);
  // The process of each task of a multi-process bare-metal program, which host task groups
  // follow (cfs `cgroups: per-domain`: a cgroup per process of such a program).
  for (GroupSpec& g : s.groups)
    if (const auto procs = bare_metal_processes(g); !procs.empty())
      for (hv::DomainSpec& d : g.instances) d.processes = procs;
  // A run ignores the file's sweep: and columns:, but a mistake there is still one: `sweep: 5`,
  // an unknown swept field or a bad value ran the base with status 0. (The runs' documents have
  // neither key, so this does not recurse.)
  if (root.has("sweep") || root.has("columns")) {
    const SweepPlan sample = expand_sweep_sample(root);
    for (const SweepRun& run : sample.runs) {
      try {
        // A swept topology file is read here too: an input, as the base's is.
        for (std::string& f : load_scenario(YamlReader(run.document, sample.file, "")).topology_files)
          if (std::find(s.topology_files.begin(), s.topology_files.end(), f) == s.topology_files.end())
            s.topology_files.push_back(std::move(f));
      } catch (const ConfigError& e) {
        throw locate_in_sweep(sample, run, e);
      }
    }
  }
  return s;
}

ScenarioSpec load_scenario_file(const std::string& path) { return load_scenario(YamlReader::load_file(path)); }

ScenarioSpec load_default_scenario() {
  ScenarioSpec s = load_scenario(YamlReader::load_string(default_scenario_text(), "<built-in default>"));
  return s;
}

}  // namespace vcpusim::app
