// SPDX-License-Identifier: MIT
// This file defines the runner: it builds a Host, its policy and one GuestOs per domain from a
// ScenarioSpec, runs it for the scenario's duration with one seed, and collects the results as
// named metrics. A run is a pure function of (scenario, seed): the wall-clock figures are kept
// apart in RunTiming.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "app/scenario.h"
#include "guest/guest_os.h"
#include "hypervisor/host.h"

namespace vcpusim::app {

struct DomainResult {
  std::string name;       ///< instance name ("db-3")
  std::string group;      ///< group name ("db")
  bool bare_metal = false;
  std::string unit;       ///< the workload's result unit per second
  double throughput = 0;  ///< results per measured second
  double cpu = 0;         ///< pCPUs' worth of running time (run time / measured time)
  double steal_pct = 0;   ///< runnable-but-waiting time over (entities x measured), in %
  double blocked_pct = 0; ///< blocked time over (entities x measured), in %
  double migrations_per_s = 0;
  double switches_per_s = 0;
  /// A VM's guest switching from one of its threads straight to another (GuestParams::
  /// context_switch), per second; bare metal has none (metrics() leaves it out there).
  double thread_switches_per_s = 0;
  double remote_memory = 0;  ///< share of running time spent on a node other than its memory's, 0..1
  /// Share of running time with another entity on an SMT sibling (so at a co-run factor), in %;
  /// in metrics() only if has_smt (the host has usable siblings).
  bool has_smt = false;
  double smt_shared_pct = 0;
  // Guest locks (guest/spinlock.h), over the measured interval; in metrics() only if has_locks.
  bool has_locks = false;
  double spin_pct = 0;          ///< CPU time burned spinning over the domain's running time, in %
  double lhp_per_s = 0, lwp_per_s = 0, halts_per_s = 0, kicks_per_s = 0;
  double kick_wait_us = 0;  ///< mean, over kicked PV waiters that ran again, hand-off to running
  double kick_wait_p99_us = 0;  ///< the 99th percentile of those waits
  double lock_acquisitions_per_s = 0;
  double lock_wait_us = 0;      ///< mean wait per acquisition
  double lock_hold_us = 0;      ///< mean hold per acquisition
  // The workload's own figures (guest::Workload::figures, e.g. latency percentiles), emitted as
  // metrics under the domain's prefix, and the name studies read its throughput under
  // (guest::Workload::study_metric; "" for none).
  std::vector<std::pair<std::string, double>> figures;
  std::string study_metric;
  // Pause-loop exiting (hypervisor/ple.h); in metrics() only if has_ple (host.ple on, a VM).
  bool has_ple = false;
  double ple_exits_per_s = 0, ple_yields_per_s = 0;
  // host.kick_boost (hypervisor/host.h); in metrics() only if has_kick_boost (on, a VM).
  bool has_kick_boost = false;
  double kick_yields_per_s = 0;
  // KVM halt polling (hypervisor/halt_poll.h); in metrics() only if has_halt_poll (host.halt_poll
  // on, a VM).
  bool has_halt_poll = false;
  double polls_per_s = 0;       ///< halts that polled
  double poll_success_pct = 0;  ///< of those, ended by a wake-up, in %
  double poll_cut_pct = 0;      ///< of those, ended by a reschedule that switched the vCPU out, in %
  double poll_pct = 0;          ///< pCPU time polling over (vCPUs x measured), in %
  // Synchronous IPIs (guest/ipi.h); in metrics() only if has_ipi (the workload sends them).
  bool has_ipi = false;
  double ipis_per_s = 0;        ///< cross-vCPU calls (TLB shootdowns) sent
  double ipi_stalls_per_s = 0;  ///< calls that found a target vCPU off its pCPU
  /// guest.pv_tlb_flush: targets skipped (preempted, flushed at their next entry); in metrics()
  /// only with the PV flush on.
  bool has_pv_tlb_flush = false;
  double ipi_deferred_per_s = 0;
  double ipi_spin_pct = 0;      ///< CPU time senders burned waiting, over the domain's running time
  double ipi_wait_us = 0;       ///< mean wall time from send to the last acknowledgement
  // Core scheduling (cookie) or Xen units (core), over the measured interval; in metrics() only
  // if has_forced_idle. Cookie: time a sibling idled while this domain's entity was refused by
  // the core-wide pick (forced idle). Core: time a thread idled inside this domain's running
  // units (a blocked or absent vCPU's slot), the analogue.
  bool has_forced_idle = false;
  double forced_idle_s = 0;     ///< seconds
  double forced_idle_pct = 0;   ///< over (entities x measured), in %
  // Cookie only (in metrics() if has_forced_idle_caused): the forced idle this domain's running
  // entities caused, as Linux 5.17+ charges it (core_forceidle_sum, /proc/PID/sched).
  bool has_forced_idle_caused = false;
  double forced_idle_caused_s = 0;    ///< seconds
  double forced_idle_caused_pct = 0;  ///< over (entities x measured), in %
};

struct RunTiming {
  double wall_seconds = 0;
  double events_per_second = 0;
  double sim_to_wall = 0;  ///< simulated seconds per wall second
};

struct RunResult {
  std::uint64_t seed = 0;
  std::vector<DomainResult> domains;
  std::uint64_t events = 0;
  std::uint64_t stale_events = 0;
  sim::Duration simulated = 0;
  sim::Duration measured = 0;
  double host_utilisation = 0;  ///< busy time over usable threads x measured
  /// Idle states (host.cpuidle): wake-ups of an idle pCPU that left one, per second, and the
  /// mean exit latency they waited (polls count in neither). Reported only with idle states.
  bool has_cpuidle = false;
  double idle_exits_per_s = 0, idle_exit_us = 0;
  RunTiming timing;
  /// Every per-domain, per-group and per-run figure by dotted name (vm.db.throughput, events...).
  std::map<std::string, double> metrics() const;
};

/// The seed of repetition `rep` of a scenario whose master seed is `master` (rep 0 included:
/// every repetition's seed is derived, so rep 0 is no special case).
std::uint64_t repetition_seed(std::uint64_t master, std::uint32_t rep);

/// Something that watches a run (a trace writer): attached after the host and guests exist and
/// before anything runs. Observers must not change the run.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void attach(hv::Host& host, const std::vector<guest::GuestOs*>& guests) = 0;
  /// The run has ended at host.now().
  virtual void finish(hv::Host& /*host*/) {}
};

/// The names RunResult::metrics() can give for a run of `spec`, known without running it: every
/// figure its runs report, counting those a run reports only when it does something (IPI figures,
/// only when an IPI was sent) as given when its workload can. What names in input are checked
/// against before any run.
std::set<std::string> metric_names(const ScenarioSpec& spec);

/// Runs the scenario once with `seed`. Throws hv::InvariantViolation if the model breaks a rule.
RunResult run_scenario(const ScenarioSpec& spec, std::uint64_t seed, RunObserver* observer = nullptr);

}  // namespace vcpusim::app
