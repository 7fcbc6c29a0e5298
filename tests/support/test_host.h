// SPDX-License-Identifier: MIT
// Test support: builds a Host without YAML. It pins nothing itself; it gives the hypervisor,
// policy, guest and scenario tests one way to assemble a machine from a literal TopologySpec, a
// policy from the registry, domains from DomainSpec literals with a GuestOs (or a FakeGuest) per
// domain, and to run it in steps and read the results. Header-only.
//
//   TestHost h(one_core_ht());                      // rr with its default parameters
//   auto g = h.add_vm(vm("a", 1, cpus({0})), workload("sysbench-cpu", {{"threads", 1}}));
//   h.start();
//   h.run_until(sim::seconds(1));
//   h.host().vcpu_stats(g.vcpus.front());
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "guest/guest_os.h"
#include "guest/program.h"
#include "guest/workload.h"
#include "hypervisor/host.h"
#include "hypervisor/policy_api.h"
#include "hypervisor/workload_api.h"
#include "policies/registry.h"
#include "sim/params.h"
#include "sim/sim_time.h"
#include "topology/cpuset.h"
#include "topology/topology.h"
#include "topology/topology_spec.h"

namespace vcpusim::test {

// ---------------------------------------------------------------------------------------------
// Machines, as literals. Thread numbering (topology.h): t = smt_index * num_cores + core.

/// `sockets` x `cores` cores per socket x `tpc` threads per core over `nodes` nodes, with
/// Linux's default distances (10 local, 20 remote) unless a caller sets them.
inline topo::TopologySpec machine(std::string name, std::uint32_t sockets, std::uint32_t cores, std::uint32_t tpc,
                                  std::uint32_t nodes) {
  topo::TopologySpec s;
  s.name = std::move(name);
  s.sockets = sockets;
  s.cores_per_socket = cores;
  s.threads_per_core = tpc;
  s.nodes = nodes;
  return s;
}

/// One core, two hardware threads (0 and 1 are siblings), one node: configs/topologies/one-core-ht.
inline topo::TopologySpec one_core_ht() { return machine("one-core-ht", 1, 1, 2, 1); }

/// Two cores, two threads each, one node: threads 0 and 1 are the cores' first threads, 2 and 3
/// their siblings (0-2 share core 0, 1-3 core 1).
inline topo::TopologySpec two_cores_ht() { return machine("two-cores-ht", 1, 2, 2, 1); }

/// n cores without SMT on one node: every thread is its own core (no SMT interference at all).
inline topo::TopologySpec flat(std::uint32_t n) { return machine("flat-" + std::to_string(n), 1, n, 1, 1); }

/// Two sockets, one node each, `cores` cores per socket and `tpc` threads per core. The remote
/// memory latency is `ratio` times the local one (latency_ns 100 local, 100 * ratio remote).
/// Node 0 holds cores 0..cores-1, i.e. threads {c + k * 2 * cores : c < cores}.
inline topo::TopologySpec two_nodes(std::uint32_t cores, std::uint32_t tpc, double ratio) {
  topo::TopologySpec s = machine("two-nodes", 2, cores, tpc, 2);
  s.distances = {10, 20, 20, 10};
  s.latency_ns = {100, 100 * ratio, 100 * ratio, 100};
  return s;
}

/// The shape of configs/topologies/xeon-x5570-2s: 2 sockets x 4 cores x 2 threads, a node per
/// socket, remote latency 106/65 of local. Node 0 = threads 0-3 and 8-11.
inline topo::TopologySpec x5570_2s() {
  topo::TopologySpec s = machine("xeon-x5570-2s", 2, 4, 2, 2);
  s.distances = {10, 21, 21, 10};
  s.latency_ns = {65, 106, 106, 65};
  return s;
}

/// The threads of node n of x5570_2s(): node 0 = threads 0-3 and 8-11, node 1 = 4-7 and 12-15.
inline topo::CpuSet x5570_node_threads(std::uint32_t n) {
  topo::CpuSet s;
  for (topo::ThreadId t = 0; t < 16; ++t)
    if ((t % 8) / 4 == n) s.set(t);
  return s;
}

inline topo::CpuSet cpus(std::initializer_list<topo::ThreadId> ts) {
  topo::CpuSet s;
  for (auto t : ts) s.set(t);
  return s;
}

/// A program of `threads` threads that compute (mixed profile, memory intensity 0.3) and block,
/// both for exponentially distributed times of the given means: the policy tests' wake-up load.
inline std::unique_ptr<guest::Program> compute_sleep(std::uint32_t threads, double compute_ns, double block_ns) {
  return std::make_unique<guest::Program>(
      threads, std::vector<guest::Phase>{{true, compute_ns, guest::Phase::Dist::kExp, hv::Profile::kMixed, 0.3},
                                         {false, block_ns, guest::Phase::Dist::kExp, hv::Profile::kCpu, 0}});
}

/// A host with no context-switch stall and no cold window: an entity runs exactly the work it is
/// given, so run times (and vruntimes) are computable by hand.
inline hv::HostSpec exact_host() {
  hv::HostSpec hs;
  hs.exec.context_switch = 0;
  hs.exec.cold_duration = 0;
  return hs;
}

/// Guest parameters to go with exact_host(): a switch between two of the guest's threads costs
/// nothing either (GuestParams::context_switch).
inline guest::GuestParams exact_guest() {
  guest::GuestParams gp;
  gp.context_switch = 0;
  return gp;
}

/// A domain of `vcpus` entities, every one with the same hard affinity (empty: all usable).
inline hv::DomainSpec vm(std::string name, std::uint32_t vcpus, topo::CpuSet hard = {}) {
  hv::DomainSpec d;
  d.name = std::move(name);
  d.vcpus = vcpus;
  if (hard.any()) d.hard.assign(vcpus, hard);
  return d;
}

/// A domain whose vCPU i is pinned to the i-th listed thread.
inline hv::DomainSpec vm_pinned_each(std::string name, std::initializer_list<topo::ThreadId> ts) {
  hv::DomainSpec d;
  d.name = std::move(name);
  d.vcpus = static_cast<std::uint32_t>(ts.size());
  for (auto t : ts) d.hard.push_back(topo::CpuSet::single(t));
  return d;
}

// ---------------------------------------------------------------------------------------------
// FakeGuest: a guest with no threads, for hypervisor-level tests. Each of its vCPUs follows a
// plan: when it is put on a pCPU with nothing to do, and whenever a segment completes, it sets
// the next segment of `work` reference ns (with `profile` and `mem_intensity`) while segments
// remain, and halts when none do (or when `work` is 0). Completion times are recorded.

class FakeGuest final : public hv::GuestHooks {
 public:
  struct Plan {
    double work = 0;                 ///< reference ns per segment; 0: halt when scheduled
    hv::Profile profile = hv::Profile::kCpu;
    double mem_intensity = 0;
    std::int64_t segments = -1;      ///< segments left to issue; -1: forever (a hog)
    bool user_mode = false;          ///< the segments run in guest user mode (GuestPort::set_work)
  };

  explicit FakeGuest(hv::GuestPort& port) : port_(port) {}

  /// A hog: cpu work in segments of `segment` ns, forever.
  static Plan hog(double segment = 1e6, hv::Profile p = hv::Profile::kCpu, double mem = 0) {
    return Plan{segment, p, mem, -1};
  }
  /// `n` segments of `work` ns, then halt.
  static Plan job(double work, std::int64_t n = 1, hv::Profile p = hv::Profile::kCpu, double mem = 0) {
    return Plan{work, p, mem, n};
  }

  void set_plan(hv::VcpuId v, Plan plan) { state(v).plan = plan; }
  /// Wake v (an IPI): it runs its plan when the host puts it on a pCPU.
  void kick(hv::VcpuId v) { port_.kick(v); }
  /// Simulated instants at which v's segments completed.
  const std::vector<sim::Time>& done_times(hv::VcpuId v) { return state(v).done; }
  std::size_t completions(hv::VcpuId v) { return state(v).done.size(); }
  std::uint64_t preemptions(hv::VcpuId v) { return state(v).preempted; }

  void on_vcpu_scheduled(hv::VcpuId v, bool has_work) override {
    if (!has_work) act(v);
  }
  void on_vcpu_preempted(hv::VcpuId v) override { ++state(v).preempted; }
  void on_work_done(hv::VcpuId v) override {
    state(v).done.push_back(port_.now());
    act(v);
  }
  void on_timer(std::uint64_t) override {}

 private:
  struct PerVcpu {
    Plan plan;
    std::vector<sim::Time> done;
    std::uint64_t preempted = 0;
  };
  PerVcpu& state(hv::VcpuId v) {
    if (v >= vcpus_.size()) vcpus_.resize(v + 1);
    return vcpus_[v];
  }
  void act(hv::VcpuId v) {
    Plan& p = state(v).plan;
    if (p.work > 0 && p.segments != 0) {
      if (p.segments > 0) --p.segments;
      port_.set_work(v, p.work, p.profile, p.mem_intensity, 0.0, p.user_mode);
    } else {
      port_.halt(v);
    }
  }

  hv::GuestPort& port_;
  std::vector<PerVcpu> vcpus_;
};

// ---------------------------------------------------------------------------------------------
// Workloads by registry kind ("sysbench-cpu", "sysbench-memory") with named parameters, as a
// scenario file would give them: {{"threads", 4}, {"event_cv", 0.1}}.

inline std::unique_ptr<guest::Workload> workload(const std::string& kind,
                                                 std::initializer_list<std::pair<const char*, double>> params = {}) {
  const guest::WorkloadInfo* info = guest::find_workload(kind);
  if (!info) throw std::invalid_argument("no workload kind " + kind);
  sim::ParamValues v;
  for (const auto& [k, x] : params) v.set(k, x);
  return info->make(v);
}

// ---------------------------------------------------------------------------------------------
// CountingWorkload: wraps a workload and counts, per thread, the steps it completed and the
// results they credited. GuestOs calls next() once at start and then once each time the
// thread's step finishes, so every call after the first completes the previous step.

class CountingWorkload final : public guest::Workload {
 public:
  explicit CountingWorkload(std::unique_ptr<guest::Workload> inner)
      : inner_(std::move(inner)), calls_(inner_->threads(), 0) {}
  std::string_view kind() const override { return inner_->kind(); }
  std::uint32_t threads() const override { return inner_->threads(); }
  guest::Step next(std::uint32_t thread, sim::RngStream& rng) override {
    if (calls_[thread]++ > 0) results_[thread] += last_[thread].result;
    last_[thread] = inner_->next(thread, rng);
    return last_[thread];
  }
  std::string_view unit() const override { return inner_->unit(); }
  /// Steps of `thread` completed so far (compute and block steps alike).
  std::uint64_t completed(std::uint32_t thread) const { return calls_[thread] ? calls_[thread] - 1 : 0; }
  /// Results (events, MiB, loops) credited by the completed steps of `thread`, all time.
  double results(std::uint32_t thread) const { return results_[thread]; }

 private:
  std::unique_ptr<guest::Workload> inner_;
  std::vector<std::uint64_t> calls_;
  std::vector<guest::Step> last_ = std::vector<guest::Step>(calls_.size());
  std::vector<double> results_ = std::vector<double>(calls_.size(), 0.0);
};

// ---------------------------------------------------------------------------------------------
// TestHost: a topology, a Host with a policy, and the guests of its domains.

class TestHost {
 public:
  struct Vm {
    hv::DomainId id = 0;
    std::vector<hv::VcpuId> vcpus;
    guest::GuestOs* os = nullptr;  ///< null for a FakeGuest domain
  };

  /// `policy` is built by its registry entry (rr by default) from `params`.
  explicit TestHost(const topo::TopologySpec& spec, hv::HostSpec host_spec = {}, std::uint64_t seed = 1,
                    const std::string& policy = "rr", const sim::ParamValues& params = {})
      : TestHost(spec, host_spec, seed, make_policy(policy, params)) {}

  /// With a policy the test built itself (a deliberately bad one, or a checking wrapper).
  TestHost(const topo::TopologySpec& spec, hv::HostSpec host_spec, std::uint64_t seed,
           std::unique_ptr<hv::SchedulerPolicy> policy)
      : seed_(seed), topo_(topo::build_topology(spec)),
        host_(std::make_unique<hv::Host>(topo_, host_spec, std::move(policy), seed)),
        fake_(std::make_unique<FakeGuest>(*host_)) {}

  static std::unique_ptr<hv::SchedulerPolicy> make_policy(const std::string& name,
                                                          const sim::ParamValues& params = {}) {
    const policy::PolicyInfo* info = policy::find_policy(name);
    if (!info) throw std::invalid_argument("no policy named " + name);
    return info->make(params);
  }

  /// A VM (or, with bare_metal, a group of host tasks) running `workload` under a GuestOs.
  Vm add_vm(hv::DomainSpec spec, std::unique_ptr<guest::Workload> workload,
                   guest::GuestParams gp = {}) {
    Vm v = ids_for(spec);
    auto os = std::make_unique<guest::GuestOs>(*host_, v.id, v.vcpus, std::move(workload), spec.bare_metal, gp,
                                               seed_, "domain/" + spec.name);
    v.os = os.get();
    const hv::DomainId got = host_->add_domain(spec, os.get());
    if (got != v.id) throw std::logic_error("domain ids are not dense");
    guests_.push_back(std::move(os));
    vms_.push_back(v);
    return v;
  }

  /// A domain driven by the shared FakeGuest (fake()); its vCPUs start blocked, with no plan.
  Vm add_fake(hv::DomainSpec spec) {
    Vm v = ids_for(spec);
    const hv::DomainId got = host_->add_domain(spec, fake_.get());
    if (got != v.id) throw std::logic_error("domain ids are not dense");
    vms_.push_back(v);
    return v;
  }

  /// Starts the host, then every GuestOs (which kicks the vCPUs that have threads).
  void start() {
    host_->start();
    for (auto& g : guests_) g->start();
  }

  void run_until(sim::Time t) { host_->run_until(t); }

  /// Runs to `end` in steps of `step`, calling check() after each step (the state then is the
  /// settled state at that instant: every event up to and including it has been processed).
  void run_sampled(sim::Time end, sim::Duration step, const std::function<void()>& check) {
    for (sim::Time t = host_->now() + step; t <= end; t += step) {
      host_->run_until(t);
      check();
    }
  }

  hv::Host& host() { return *host_; }
  const topo::Topology& topology() const { return topo_; }
  FakeGuest& fake() { return *fake_; }
  const std::vector<Vm>& vms() const { return vms_; }

 private:
  Vm ids_for(const hv::DomainSpec& spec) const {
    Vm v;
    v.id = host_->num_domains();
    for (std::uint32_t i = 0; i < spec.vcpus; ++i) v.vcpus.push_back(host_->num_vcpus() + i);
    return v;
  }

  std::uint64_t seed_;
  topo::Topology topo_;                 // before host_: the Host keeps a reference to it
  std::unique_ptr<hv::Host> host_;
  std::unique_ptr<FakeGuest> fake_;
  std::vector<std::unique_ptr<guest::GuestOs>> guests_;
  std::vector<Vm> vms_;
};

/// The policy tests' affinity mix on x5570_2s() (16 threads): 64 vCPUs in 16 VMs of 4, 4x
/// overcommit. Four CPU-bound VMs pinned to a node each (alternating), four compute/sleep VMs
/// whose every vCPU is pinned to one thread, four free memory-bound VMs and four free
/// compute/sleep VMs of 6 threads, so that wake placement, forks and every kind of balancing run.
inline void add_affinity_mix(TestHost& h) {
  for (std::uint32_t i = 0; i < 4; ++i)
    h.add_vm(vm("node" + std::to_string(i), 4, x5570_node_threads(i % 2)), workload("sysbench-cpu", {{"threads", 4}}));
  for (std::uint32_t i = 0; i < 4; ++i) {
    hv::DomainSpec d = vm("pin" + std::to_string(i), 4);
    for (std::uint32_t k = 0; k < 4; ++k) d.hard.push_back(topo::CpuSet::single((5 * i + 3 * k) % 16));
    h.add_vm(d, compute_sleep(4, 400e3, 600e3));
  }
  for (std::uint32_t i = 0; i < 4; ++i) h.add_vm(vm("mem" + std::to_string(i), 4), workload("sysbench-memory", {{"threads", 4}}));
  for (std::uint32_t i = 0; i < 4; ++i) h.add_vm(vm("web" + std::to_string(i), 4), compute_sleep(6, 300e3, 300e3));
}

}  // namespace vcpusim::test
