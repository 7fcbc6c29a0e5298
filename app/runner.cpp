// SPDX-License-Identifier: MIT
#include "app/runner.h"

#include <chrono>
#include <memory>

#include "guest/guest_os.h"
#include "guest/program.h"
#include "guest/workload.h"
#include "policies/registry.h"
#include "sim/rng.h"

namespace vcpusim::app {

std::uint64_t repetition_seed(std::uint64_t master, std::uint32_t rep) {
  return sim::derive_seed(master, "repetition/" + std::to_string(rep));
}

namespace {

std::unique_ptr<guest::Workload> make_workload(const WorkloadSpec& w) {
  if (w.kind == "program") return std::make_unique<guest::Program>(w.threads, w.phases);
  return guest::find_workload(w.kind)->make(w.params);
}

/// A domain's result before any figure: who it is, and which of the metric families that
/// RunResult::metrics() emits only when set its run reports. One function for run_scenario and
/// metric_names, so the names known before a run are the names a run gives.
DomainResult domain_identity(const ScenarioSpec& spec, const GroupSpec& g, const hv::DomainSpec& d,
                             const guest::Workload& w, const topo::Topology& topology) {
  DomainResult dr;
  dr.name = d.name;
  dr.group = g.name;
  dr.bare_metal = g.bare_metal;
  dr.unit = std::string(w.unit());
  dr.has_smt = spec.host.smt && topology.threads_per_core() > 1;
  dr.has_locks = !w.locks().empty();  // GuestOs makes one lock per LockSpec
  dr.study_metric = std::string(w.study_metric());
  dr.has_ple = spec.host.ple.active() && !g.bare_metal;
  dr.has_halt_poll = spec.host.halt_poll.active() && !g.bare_metal;
  dr.has_kick_boost = spec.host.kick_boost && !g.bare_metal;
  dr.has_pv_tlb_flush = spec.guest.pv_tlb_flush && !g.bare_metal;
  dr.has_forced_idle = spec.host.core_sched.enabled || spec.host.sched_gran.core;
  dr.has_forced_idle_caused = spec.host.core_sched.enabled;
  return dr;
}

}  // namespace

RunResult run_scenario(const ScenarioSpec& spec, std::uint64_t seed, RunObserver* observer) {
  const auto wall0 = std::chrono::steady_clock::now();
  const topo::Topology topology = topo::build_topology(spec.topology);
  const policy::PolicyInfo* info = policy::find_policy(spec.policy);
  hv::Host host(topology, spec.host, info->make(spec.policy_params), seed);

  struct Dom {
    const GroupSpec* group;
    const hv::DomainSpec* spec;
    hv::DomainId id;
    std::unique_ptr<guest::GuestOs> os;
  };
  std::vector<Dom> doms;
  for (const GroupSpec& g : spec.groups)
    for (const hv::DomainSpec& d : g.instances) doms.push_back(Dom{&g, &d, 0, nullptr});
  // Guests are created before add_domain so the host can hold their hook pointers; each guest's
  // RNG streams are named after its domain, so adding a VM leaves the others' draws unchanged.
  hv::VcpuId next_id = 0;
  for (Dom& d : doms) {
    std::vector<hv::VcpuId> ids(d.spec->vcpus);
    for (std::uint32_t i = 0; i < d.spec->vcpus; ++i) ids[i] = next_id + i;
    next_id += d.spec->vcpus;
    d.os = std::make_unique<guest::GuestOs>(host, static_cast<hv::DomainId>(&d - doms.data()), ids,
                                            make_workload(d.group->workload), d.group->bare_metal, spec.guest,
                                            seed, "domain/" + d.spec->name);
    hv::DomainSpec ds = *d.spec;
    ds.cache_footprint = d.os->workload().cache_footprint_bytes();
    d.id = host.add_domain(ds, d.os.get());
  }
  if (observer) {
    std::vector<guest::GuestOs*> oses;
    for (Dom& d : doms) oses.push_back(d.os.get());
    observer->attach(host, oses);
  }
  host.set_horizon(spec.duration);
  host.start();
  for (Dom& d : doms) d.os->start();
  host.run_until(spec.duration);
  if (observer) observer->finish(host);
  host.check_conservation();
  for (Dom& d : doms) d.os->check_lost_kicks();

  RunResult r;
  r.seed = seed;
  r.events = host.events_processed();
  r.stale_events = host.events_stale();
  r.simulated = spec.duration;
  r.measured = host.measured();
  const double meas = static_cast<double>(r.measured);
  const double meas_s = sim::to_seconds(r.measured);
  double busy = 0;
  for (hv::PcpuId p = 0; p < topology.num_threads(); ++p) busy += static_cast<double>(host.pcpu_busy(p));
  r.host_utilisation = busy / (meas * host.usable_pcpus().count());
  r.has_cpuidle = spec.host.cpuidle.enabled();
  const hv::CpuidleStats& idle = host.cpuidle_stats();
  r.idle_exits_per_s = static_cast<double>(idle.exits) / meas_s;
  r.idle_exit_us = idle.exits ? static_cast<double>(idle.exit_ns) / 1e3 / static_cast<double>(idle.exits) : 0.0;
  for (const Dom& d : doms) {
    DomainResult dr = domain_identity(spec, *d.group, *d.spec, d.os->workload(), host.topology());
    dr.throughput = d.os->results().throughput;
    double run = 0, runnable = 0, blocked = 0, mig = 0, sw = 0, remote = 0, shared = 0;
    for (hv::VcpuId v : host.domain(d.id).vcpus) {
      const hv::VcpuStats st = host.vcpu_stats(v);
      run += static_cast<double>(st.running);
      runnable += static_cast<double>(st.runnable);
      blocked += static_cast<double>(st.blocked);
      mig += static_cast<double>(st.migrations);
      sw += static_cast<double>(st.context_switches);
      remote += st.remote_run;
      shared += static_cast<double>(st.smt_shared);
    }
    const double n = static_cast<double>(d.spec->vcpus);
    dr.cpu = run / meas;
    dr.steal_pct = 100.0 * runnable / (n * meas);
    dr.blocked_pct = 100.0 * blocked / (n * meas);
    dr.migrations_per_s = mig / meas_s;
    dr.switches_per_s = sw / meas_s;
    dr.remote_memory = run > 0 ? remote / run : 0.0;
    dr.smt_shared_pct = run > 0 ? 100.0 * shared / run : 0.0;
    const guest::GuestResults gr = d.os->results();
    dr.thread_switches_per_s = static_cast<double>(gr.thread_switches) / meas_s;
    const guest::LockStats& ls = gr.locks;
    dr.spin_pct = run > 0 ? 100.0 * ls.spin_ns / run : 0.0;
    dr.lhp_per_s = static_cast<double>(ls.lhp) / meas_s;
    dr.lwp_per_s = static_cast<double>(ls.lwp) / meas_s;
    dr.halts_per_s = static_cast<double>(ls.halts) / meas_s;
    dr.kicks_per_s = static_cast<double>(ls.kicks) / meas_s;
    dr.kick_wait_us = ls.kicked_runs ? ls.kick_wait_ns / 1e3 / static_cast<double>(ls.kicked_runs) : 0.0;
    dr.kick_wait_p99_us = gr.kick_wait_p99_ns / 1e3;
    dr.lock_acquisitions_per_s = static_cast<double>(ls.acquisitions) / meas_s;
    dr.lock_wait_us = ls.acquisitions ? ls.wait_ns / 1e3 / static_cast<double>(ls.acquisitions) : 0.0;
    dr.lock_hold_us = ls.acquisitions ? ls.hold_ns / 1e3 / static_cast<double>(ls.acquisitions) : 0.0;
    dr.figures = d.os->workload().figures();
    dr.ple_exits_per_s = static_cast<double>(host.ple_stats(d.id).exits) / meas_s;
    dr.ple_yields_per_s = static_cast<double>(host.ple_stats(d.id).yields) / meas_s;
    dr.kick_yields_per_s = static_cast<double>(host.ple_stats(d.id).kick_yields) / meas_s;
    const hv::HaltPollStats& hp = host.halt_poll_stats(d.id);
    dr.polls_per_s = static_cast<double>(hp.polls) / meas_s;
    dr.poll_success_pct = hp.polls ? 100.0 * static_cast<double>(hp.successes) / static_cast<double>(hp.polls) : 0.0;
    dr.poll_cut_pct = hp.polls ? 100.0 * static_cast<double>(hp.cut) / static_cast<double>(hp.polls) : 0.0;
    dr.poll_pct = 100.0 * hp.poll_ns / (n * meas);
    const guest::IpiStats& is = gr.ipis;
    dr.has_ipi = is.sent > 0;
    dr.ipis_per_s = static_cast<double>(is.sent) / meas_s;
    dr.ipi_stalls_per_s = static_cast<double>(is.stalls) / meas_s;
    dr.ipi_deferred_per_s = static_cast<double>(is.deferred) / meas_s;
    dr.ipi_spin_pct = run > 0 ? 100.0 * is.spin_ns / run : 0.0;
    dr.ipi_wait_us = is.sent ? is.wait_ns / 1e3 / static_cast<double>(is.sent) : 0.0;
    if (dr.has_forced_idle) {
      const double fi = static_cast<double>(host.domain_forced_idle(d.id));
      dr.forced_idle_s = fi / 1e9;
      dr.forced_idle_pct = 100.0 * fi / (n * meas);
    }
    if (dr.has_forced_idle_caused) {
      const double fc = static_cast<double>(host.domain_forced_idle_caused(d.id));
      dr.forced_idle_caused_s = fc / 1e9;
      dr.forced_idle_caused_pct = 100.0 * fc / (n * meas);
    }
    r.domains.push_back(dr);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  r.timing.wall_seconds = wall;
  r.timing.events_per_second = wall > 0 ? static_cast<double>(r.events) / wall : 0;
  r.timing.sim_to_wall = wall > 0 ? sim::to_seconds(r.simulated) / wall : 0;
  return r;
}

std::set<std::string> metric_names(const ScenarioSpec& spec) {
  const topo::Topology topology = topo::build_topology(spec.topology);
  RunResult r;
  r.has_cpuidle = spec.host.cpuidle.enabled();
  for (const GroupSpec& g : spec.groups) {
    const std::unique_ptr<guest::Workload> w = make_workload(g.workload);
    for (const hv::DomainSpec& d : g.instances) {
      DomainResult dr = domain_identity(spec, g, d, *w, topology);
      dr.figures = w->figures();     // for their names: a workload that never ran has no values
      dr.has_ipi = w->sends_ipis();  // a run reports IPI figures only if it sent one, which it may
      r.domains.push_back(dr);
    }
  }
  std::set<std::string> names;
  for (const auto& [name, value] : r.metrics()) names.insert(name);
  return names;
}

std::map<std::string, double> RunResult::metrics() const {
  std::map<std::string, double> m;
  std::map<std::string, std::pair<double, double>> group_tp;  // sum, count
  for (const DomainResult& d : domains) {
    const std::string p = (d.bare_metal ? "bm." : "vm.") + d.name + ".";
    m[p + "throughput"] = d.throughput;
    m[p + "cpu"] = d.cpu;
    m[p + "steal_pct"] = d.steal_pct;
    m[p + "blocked_pct"] = d.blocked_pct;
    m[p + "migrations_per_s"] = d.migrations_per_s;
    m[p + "switches_per_s"] = d.switches_per_s;
    if (!d.bare_metal) m[p + "thread_switches_per_s"] = d.thread_switches_per_s;
    m[p + "remote_memory"] = d.remote_memory;
    if (d.has_smt) m[p + "smt_shared_pct"] = d.smt_shared_pct;
    if (d.has_locks) {
      m[p + "spin_pct"] = d.spin_pct;
      m[p + "lhp_per_s"] = d.lhp_per_s;
      m[p + "lwp_per_s"] = d.lwp_per_s;
      m[p + "halts_per_s"] = d.halts_per_s;
      m[p + "kicks_per_s"] = d.kicks_per_s;
      m[p + "kick_wait_us"] = d.kick_wait_us;
      m[p + "kick_wait_p99_us"] = d.kick_wait_p99_us;
      m[p + "lock_acquisitions_per_s"] = d.lock_acquisitions_per_s;
      m[p + "lock_wait_us"] = d.lock_wait_us;
      m[p + "lock_hold_us"] = d.lock_hold_us;
    }
    for (const auto& [name, value] : d.figures) m[p + name] = value;
    if (d.has_ple) {
      m[p + "ple_exits_per_s"] = d.ple_exits_per_s;
      m[p + "ple_yields_per_s"] = d.ple_yields_per_s;
    }
    if (d.has_kick_boost) m[p + "kick_yields_per_s"] = d.kick_yields_per_s;
    if (d.has_halt_poll) {
      m[p + "polls_per_s"] = d.polls_per_s;
      m[p + "poll_success_pct"] = d.poll_success_pct;
      m[p + "poll_cut_pct"] = d.poll_cut_pct;
      m[p + "poll_pct"] = d.poll_pct;
    }
    if (d.has_ipi) {
      m[p + "ipis_per_s"] = d.ipis_per_s;
      m[p + "ipi_stalls_per_s"] = d.ipi_stalls_per_s;
      if (d.has_pv_tlb_flush) m[p + "ipi_deferred_per_s"] = d.ipi_deferred_per_s;
      m[p + "ipi_spin_pct"] = d.ipi_spin_pct;
      m[p + "ipi_wait_us"] = d.ipi_wait_us;
    }
    if (d.has_forced_idle) {
      m[p + "forced_idle_s"] = d.forced_idle_s;
      m[p + "forced_idle_pct"] = d.forced_idle_pct;
    }
    if (d.has_forced_idle_caused) {
      m[p + "forced_idle_caused_s"] = d.forced_idle_caused_s;
      m[p + "forced_idle_caused_pct"] = d.forced_idle_caused_pct;
    }
    if (d.name != d.group) {
      auto& g = group_tp[(d.bare_metal ? "bm." : "vm.") + d.group];
      g.first += d.throughput;
      g.second += 1;
    }
  }
  for (const auto& [g, v] : group_tp) {
    m[g + ".throughput"] = v.first / v.second;  // the mean VM of the group
    m[g + ".throughput_total"] = v.first;
  }
  // Study metrics (configs/studies/): each workload's figure under the one name a study reads
  // whatever the setup (bare metal, one VM, several VMs): the mean over the domains running a
  // workload with that study_metric, i.e. what one instance of the benchmark reports.
  std::map<std::string, std::pair<double, double>> study;  // sum, count
  for (const DomainResult& d : domains)
    if (!d.study_metric.empty()) {
      auto& s = study[d.study_metric];
      s.first += d.throughput;
      s.second += 1;
    }
  for (const auto& [name, v] : study) m[name] = v.first / v.second;
  // The mean VM of a group for the lock, PLE and IPI figures too (vm.guest.spin_pct over
  // guest-0..N), so a table can explain a group's throughput with its own causes.
  std::map<std::string, std::pair<double, double>> group_means;
  for (const DomainResult& d : domains) {
    if (d.name == d.group) continue;
    const std::string inst = (d.bare_metal ? "bm." : "vm.") + d.name + ".";
    const std::string grp = (d.bare_metal ? "bm." : "vm.") + d.group + ".";
    for (const char* k : {"spin_pct", "lhp_per_s", "lwp_per_s", "halts_per_s", "kicks_per_s", "kick_wait_us",
                          "kick_wait_p99_us", "lock_acquisitions_per_s",
                          "lock_wait_us", "lock_hold_us", "ple_exits_per_s", "ple_yields_per_s", "kick_yields_per_s", "ipis_per_s",
                          "ipi_stalls_per_s", "ipi_deferred_per_s", "ipi_spin_pct", "ipi_wait_us", "cpu", "steal_pct", "blocked_pct",
                          "polls_per_s", "poll_success_pct", "poll_cut_pct", "poll_pct", "thread_switches_per_s"}) {
      const auto it = m.find(inst + k);
      if (it == m.end()) continue;
      auto& gm = group_means[grp + k];
      gm.first += it->second;
      gm.second += 1;
    }
  }
  for (const auto& [k, v] : group_means) m[k] = v.first / v.second;
  m["events"] = static_cast<double>(events);
  m["events_stale"] = static_cast<double>(stale_events);
  m["host_utilisation"] = host_utilisation;
  if (has_cpuidle) {
    m["idle_exits_per_s"] = idle_exits_per_s;
    m["idle_exit_us"] = idle_exit_us;
  }
  return m;
}

}  // namespace vcpusim::app
