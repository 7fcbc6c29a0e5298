// SPDX-License-Identifier: MIT
// This file defines the generic state the hypervisor core keeps for each schedulable entity
// (a vCPU, or a bare-metal task), each hardware thread (pCPU) and each domain. Policies read it
// through HypervisorView and keep their own state in their own tables; only the dispatcher
// writes it. It holds nothing policy-specific, as Xen's struct sched_unit does not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hypervisor/accounting.h"
#include "hypervisor/exec_model.h"
#include "hypervisor/ids.h"
#include "sim/sim_time.h"
#include "topology/cpuset.h"

namespace vcpusim::hv {

/// Xen's runstates, less "offline": the entity is on a pCPU, waits for one, or waits for an event.
enum class Runstate : std::uint8_t { kRunning = 0, kRunnable = 1, kBlocked = 2 };
std::string_view runstate_name(Runstate s);

/// The piece of guest work an entity is executing: set by the guest, progressed by the host.
struct WorkSegment {
  double remaining = 0.0;           ///< reference ns still to do
  Profile profile = Profile::kCpu;
  double mem_intensity = 0.0;       ///< share of the work's time that stalls on memory, 0..1
  double bandwidth_mbps = 0.0;      ///< DRAM bandwidth drawn alone at rate 1 (0: none)
  bool active = false;              ///< false: the entity has nothing to execute
  /// It runs in guest user mode (CPL 3). Matters for a PAUSE loop only: pause-loop exiting
  /// ignores one at CPL > 0 (ple.h).
  bool user_mode = false;
};

struct Vcpu {
  VcpuId id = 0;
  DomainId domain = 0;
  std::uint32_t index = 0;          ///< position within its domain (vCPU number)
  Runstate state = Runstate::kBlocked;
  PcpuId pcpu = kNoPcpu;            ///< where it runs (Running) or was last assigned
  PcpuId last_ran = kNoPcpu;        ///< the pCPU it last ran on (for migration counting)
  topo::CpuSet hard;                ///< hard affinity: may run only here (pinning)
  topo::CpuSet soft;                ///< soft affinity: prefers to run here
  std::uint32_t weight = 256;       ///< relative share, Xen's default weight 256
  std::uint64_t cookie = 0;         ///< core-scheduling cookie (0 = untagged)
  /// Core scheduling's p->core_occupation: how many threads of its core ran an entity in the
  /// last core-wide pick that chose it (0 before any). The forced-newidle balancer steals only
  /// an entity whose occupation is no more than the stealing pCPU's (try_steal_cookie).
  std::uint8_t core_occupation = 0;
  std::uint32_t process = 0;        ///< which process of its (bare-metal) domain it belongs to

  // Execution (the rate model).
  WorkSegment work;
  double rate = 0.0;                ///< current progress rate (0 when not running)
  sim::Time progress_since = 0;     ///< `remaining` is exact as of this instant
  sim::Time stall_until = 0;        ///< no progress before this (context-switch cost)
  sim::Time cold_until = 0;         ///< runs at the cold rate before this (after a migration)
  std::uint64_t work_gen = 0;       ///< generation of its pending completion event
  sim::Time done_at = sim::kNever;  ///< when the pending completion event (if valid) fires
  std::uint64_t cold_gen = 0;

  double bw_demand = 0.0;           ///< bandwidth it currently draws on the nodes' shares
  std::uint64_t bw_stamp = 0;       ///< set when a share change must re-time it (execution.cpp)
  double remote_run = 0.0;          ///< running time x share of its memory off the node it ran on (ns)
  sim::Duration smt_shared = 0;     ///< running time with another entity on an SMT sibling (closed stretches)

  // KVM halt polling (halt_poll.h): the vCPU halted and its thread polls on its pCPU (Running
  // to the host, halted to its guest) since poll_since; halted_at: when it last halted, until it
  // runs again (kNever: not halted, or polling off); its window (vcpu->halt_poll_ns).
  bool polling = false;
  sim::Time poll_since = 0;
  sim::Time halted_at = sim::kNever;
  sim::Duration poll_window = 0;
  std::uint64_t poll_gen = 0;       ///< generation of its pending poll events

  RunstateClock clock;              ///< time spent in each runstate
  std::uint64_t migrations = 0;
  std::uint64_t context_switches = 0;  ///< times it was switched in
  std::uint64_t wakeups = 0;
};

struct Pcpu {
  PcpuId id = 0;
  bool usable = true;               ///< false: a disabled SMT sibling (nosmt)
  VcpuId curr = kIdle;              ///< the entity it runs, or kIdle
  sim::Time slice_end = sim::kNever;
  std::uint64_t slice_gen = 0;      ///< generation of its pending slice-end event
  bool resched_pending = false;     ///< a deferred schedule() is queued for it
  // Reschedule IPIs (Host::resched_remote): the latest one sent and the entity that was current
  // when it was sent (whose TIF_NEED_RESCHED it stands for); cleared when that IPI arrives.
  bool ipi_in_flight = false;
  VcpuId ipi_for = kIdle;
  std::uint64_t ipi_gen = 0;
  sim::Duration busy = 0;           ///< time an entity occupied it
  sim::Time busy_since = 0;
  sim::Time idle_since = 0;         ///< when it last became idle (cpuidle.h)
  /// Idle inside a running Xen unit (sched_unit.cpp): it halts (C1) instead of asking the
  /// governor, as Xen's sched_guest_idle() arranges.
  bool halt_idle = false;
  sim::Time smt_mark = 0;           ///< since when its entity's SMT-shared time is folded (Host::fold_smt_shared)
  std::uint64_t switches = 0;       ///< context switches it performed
  // Core scheduling (core_sched.cpp): forced idle = idle by the core-wide pick although the
  // policy had a runnable entity for it (of another cookie than the core's).
  bool forced_idle = false;         ///< in a forced-idle episode now
  bool core_resched = false;        ///< its next core-wide pick follows resched_curr (a fresh pick)
  sim::Time fi_since = 0;           ///< when the current episode began
  DomainId fi_domain = 0;           ///< domain of the entity refused when the episode began
  sim::Duration forced_idle_time = 0;  ///< closed episodes, summed
};

struct Domain {
  DomainId id = 0;
  std::string name;
  bool bare_metal = false;          ///< tasks scheduled by the host directly, not a VM
  std::vector<VcpuId> vcpus;
  std::uint32_t weight = 256;
  std::uint32_t cap_pct = 0;        ///< at most this % of one pCPU in all (0 = uncapped), as xl sched-credit2 -c
  /// Share of the domain's memory on each node (sums to 1); decides the NUMA penalty.
  std::vector<double> memory_on_node;
  /// excess[n]: sum_j memory_on_node[j] * (latency_ratio(n, j) - 1), precomputed per node n.
  std::vector<double> numa_excess;
  /// Its entities' cold window after a move to another core (ExecParams::cold_duration scaled
  /// by its cache footprint), before the cross-node factor.
  sim::Duration cold_duration = 0;
  /// Core scheduling: time a sibling idled while this domain's entity was refused (closed episodes).
  sim::Duration forced_idle = 0;
  /// Core scheduling: forced idle its running entities caused, as 5.17's core_forceidle_sum
  /// (closed episodes; Host::domain_forced_idle_caused).
  sim::Duration forced_idle_caused = 0;
};

}  // namespace vcpusim::hv
