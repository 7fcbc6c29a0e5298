// SPDX-License-Identifier: MIT
// This file defines the policy boundary: SchedulerPolicy, the ops table a scheduler fills (in the
// spirit of Xen's struct scheduler and Linux's struct sched_class), and the two things it gets to
// work with: HypervisorView (read-only generic state) and SchedActions (the only way it acts on
// the world: tickle a pCPU, arm a timer).
//
// The dispatcher (Host) is the ONLY caller of these hooks, and it checks every answer: a pick
// outside the entity's hard affinity, of an entity that is not runnable, of one already running
// elsewhere, or on an unusable thread stops the run with the rule named.
//
// Choosing is split from committing (Linux's pick_task): pick_next() must not change runqueue
// membership, so the core-scheduling mechanism can ask every SMT sibling before anything is
// committed. set_next() commits the choice; put_prev() hands back the entity that was switched out.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

#include "hypervisor/entity.h"
#include "hypervisor/ids.h"
#include "sim/rng.h"
#include "sim/sim_time.h"
#include "topology/topology.h"

namespace vcpusim::hv {

/// A policy's answer for one pCPU: run `vcpu` (kIdle: idle) for at most `slice` (0: no limit,
/// run until something else reschedules this pCPU).
struct Pick {
  VcpuId vcpu = kIdle;
  sim::Duration slice = 0;
  /// The running entity goes on without a reschedule: the pick stands for a tick or a check that
  /// preempts nothing, where Linux runs no schedule() (core scheduling then makes no core-wide
  /// pick). A policy that cannot tell leaves it false.
  bool kept = false;
};

/// How core_priority normalises a candidate's value for a comparison across SMT siblings.
enum class CorePrio : std::uint8_t {
  kRaw,   ///< the per-runqueue value as it is (the early patch sets compared raw vruntimes; with a
          ///< core-wide root min_vruntime, Aaron Lu's comparison of root-level entities)
  kCore,  ///< normalised where the two candidates' hierarchies meet: with task groups, their
          ///< root-level entities by their root's floor (Tim Chen's, mainline's cfs_prio_less)
  kLeaf,  ///< normalised by the candidate's own runqueue's floor, its leaf cfs_rq (RFC v3)
};
/// A policy without task groups has one level, where kCore and kLeaf coincide.

/// A constraint the dispatcher may put on a pick (core scheduling passes a cookie).
struct PickFilter {
  bool match_cookie = false;
  std::uint64_t cookie = 0;
  /// Pick as core scheduling's pick_task() does for a sibling's runqueue, or after resched_curr:
  /// the running entity is one candidate by its key (CFS: pick_next_entity(cfs_rq, curr)), with
  /// no preference for keeping it. A policy without that notion ignores it.
  bool fresh = false;
  /// The pick is core scheduling's own pick_next_task for this pCPU, which ends in
  /// set_next_task(rq, next) even when next is the task that ran: a running entity picked again
  /// after a reschedule starts a new slice (CFS: set_next_entity sets prev_sum_exec_runtime).
  bool core = false;
  /// Under a cookie filter: the core_occupation a forced-idle pCPU's idle task gets from this
  /// core-wide pick (dst->idle->core_occupation), which try_steal_cookie compares.
  std::uint8_t occupation = 0;
  bool allows(const Vcpu& v) const { return !match_cookie || v.cookie == cookie; }
};

/// The wake-up pick_cpu is placing, as HypervisorView::wake_source() reports it.
struct WakeSource {
  Waker by;           ///< the waker (by.vcpu == kIdle: none; the wake-up runs on the wakee's prev)
  bool sync = false;  ///< WF_SYNC: the waker says it is about to sleep (a socket send)
};

/// Read-only access to the generic state, for policies.
class HypervisorView {
 public:
  virtual ~HypervisorView() = default;
  virtual const topo::Topology& topology() const = 0;
  virtual const Vcpu& vcpu(VcpuId v) const = 0;
  virtual const Pcpu& pcpu(PcpuId p) const = 0;
  virtual const Domain& domain(DomainId d) const = 0;
  virtual std::uint32_t num_vcpus() const = 0;
  virtual std::uint32_t num_domains() const = 0;
  /// Hardware threads the host may use (all, or one per core under nosmt).
  virtual const topo::CpuSet& usable_pcpus() const = 0;
  /// The host's online hardware threads (Xen's num_online_cpus()): usable_pcpus()'s count, but
  /// at sched-gran=core, where the policy sees one pCPU per core, every thread of those cores.
  virtual std::uint32_t online_threads() const { return usable_pcpus().count(); }
  /// Usable pCPUs that run nothing now.
  virtual const topo::CpuSet& idle_pcpus() const = 0;
  virtual sim::Time now() const = 0;
  /// Core scheduling, cookie-aware wake-up placement (Linux sched_cpu_cookie_match): false when
  /// core scheduling with cookie-aware wake-up is on and p's core runs another cookie than v's;
  /// true otherwise (also for a wholly idle core). Policies consult it in their idle-CPU scan.
  virtual bool wake_cookie_match(PcpuId /*p*/, VcpuId /*v*/) const { return true; }
  /// Core scheduling, cookie-aware balancing (RFC v5 can_migrate_task / mainline task_hot):
  /// false when core scheduling with a cookie-aware balance mode is on and p's core runs another
  /// cookie than v's. Policies consult it before pulling v onto p.
  virtual bool balance_cookie_match(PcpuId /*p*/, VcpuId /*v*/) const { return true; }
  /// Valid only during pick_cpu: who woke the entity being placed (GuestPort::kick_from) and
  /// whether the wake-up is synchronous. Outside pick_cpu, or for a plain kick (a timer, a
  /// device, the first wake-up): no waker. A named waker is never the entity itself and its pCPU
  /// is usable (Host::kick_from drops any other). Policies that place without a waker ignore it.
  virtual WakeSource wake_source() const { return {}; }
};

/// The port through which a policy acts.
class SchedActions {
 public:
  virtual ~SchedActions() = default;
  /// Ask for schedule() on p at the current instant (after the current event completes), as
  /// Xen's cpu_raise_softirq(SCHEDULE_SOFTIRQ). Repeated tickles of one pCPU coalesce.
  virtual void tickle(PcpuId p) = 0;
  /// Linux's resched_task() of a task running on ANOTHER pCPU (kernel/sched/core.c, 3.10: set
  /// TIF_NEED_RESCHED, then smp_send_reschedule(cpu)): p reschedules when the reschedule IPI
  /// arrives, ExecParams::resched_ipi later; until then its entity keeps running (a vCPU in
  /// guest mode leaves it on the IPI's external-interrupt exit). A pCPU that reschedules for
  /// another reason first honours the request then (the policy's own need_resched).
  /// Default: an immediate tickle.
  virtual void resched_remote(PcpuId p) { tickle(p); }
  /// (Re)arm the policy's timer t to fire at `when`; re-arming replaces the earlier setting.
  virtual void arm_timer(TimerId t, sim::Time when) = 0;
  virtual void cancel_timer(TimerId t) = 0;
  /// p's runqueue now holds more than one task (its current one included): a vCPU polling in
  /// KVM's halt path there stops (single_task_running(), halt_poll.h). Policies that report
  /// nr_running() call it whenever that count rises past one. Default: nothing to do.
  virtual void runqueue_grew(PcpuId /*p*/) {}
  /// p's root runqueue fell to a lone entity. Core scheduling's forced-idle tick rule fires only
  /// then (task_tick_core's "rq->cfs.nr_running == 1"), and the kernel checks it at every tick,
  /// so a rule found not to apply must be looked at again now (core_sched.cpp). Policies that
  /// answer forced_idle_tick() call it. Default: nothing to do.
  virtual void runqueue_fell_to_one(PcpuId /*p*/) {}
};

struct SchedContext {
  const HypervisorView& hv;
  SchedActions& act;
  sim::RngStream& rng;
};

class SchedulerPolicy {
 public:
  virtual ~SchedulerPolicy() = default;
  virtual std::string_view name() const = 0;

  /// Once, before any entity exists (Xen init + alloc_pdata). Called by Host::start().
  virtual void attach(const SchedContext& ctx) = 0;
  /// An entity joins (blocked). Called once per entity, in id order, by Host::start().
  virtual void insert_vcpu(VcpuId v) = 0;

  /// Choose a pCPU for a waking entity (Xen pick_resource, Linux select_task_rq). Must return a
  /// usable pCPU in v's hard affinity. Called by Host::wake() before wake().
  virtual PcpuId pick_cpu(VcpuId v, sim::Time now) = 0;
  /// v went Blocked -> Runnable and is assigned to vcpu(v).pcpu (as pick_cpu chose). Queue it;
  /// tickle whichever pCPU should reschedule (Xen runq_tickle).
  virtual void wake(VcpuId v, sim::Time now) = 0;
  /// v went Running or Runnable -> Blocked. Dequeue it if queued. If it was running, the
  /// dispatcher reschedules its pCPU itself.
  virtual void sleep(VcpuId v, sim::Time now) = 0;
  /// The running entity v gives up its pCPU (guest yield, pause-loop exit); `to` is the
  /// directed target or kIdle. Default: nothing; the dispatcher reschedules v's pCPU.
  /// Returns what Linux's yield_to() returns for a directed yield (kernel/sched/core.c; KVM's
  /// kvm_vcpu_on_spin acts on it, ple.cpp): > 0 the target was boosted, 0 nothing was done
  /// (target running or blocked, no directed yield in this policy), < 0 -ESRCH (both runqueues
  /// hold one task). For an undirected yield the value is not used.
  virtual int yield(VcpuId /*v*/, VcpuId /*to*/, sim::Time /*now*/) { return 0; }

  /// Choose what pCPU p runs next, WITHOUT committing. The current entity (pcpu(p).curr, if
  /// still Running) is a candidate. May return only kIdle, the current entity, or a Runnable
  /// entity not running elsewhere, in its hard affinity, allowed by the filter.
  virtual Pick pick_next(PcpuId p, sim::Time now, const PickFilter& filter) = 0;
  /// Commit: p runs v (kIdle: idle) from now. v was just returned by pick_next for p.
  virtual void set_next(PcpuId p, VcpuId v, sim::Time now) = 0;
  /// The slice of v, just committed on p by set_next, given the slice pick_next computed. A
  /// policy whose commit can change what that slice was computed from answers anew (credit2:
  /// Xen's csched2_runtime runs after the reset's balance_load, which may have pulled a vCPU
  /// onto this runqueue or pushed its head away). Called after set_next for a non-idle v.
  /// Default: the picked slice.
  virtual sim::Duration committed_slice(PcpuId /*p*/, VcpuId /*v*/, sim::Duration picked, sim::Time /*now*/) {
    return picked;
  }
  /// prev stopped running on p (it is Runnable, to be requeued, or Blocked). Called before
  /// set_next of its successor (Xen context_saved, Linux put_prev_task).
  virtual void put_prev(PcpuId p, VcpuId prev, sim::Time now) = 0;

  /// Core scheduling (a mechanism of the dispatcher, as Linux core.c): the priority of entity v,
  /// a candidate picked for pCPU p, in a comparison across the SMT siblings of p's core; the
  /// higher value wins the core. `how` says how the value is normalised across the core's
  /// runqueues (CorePrio). Credit2 answers with credit, CFS with negated (normalised) vruntime.
  /// Default: every entity equal.
  virtual double core_priority(PcpuId /*p*/, VcpuId /*v*/, CorePrio /*how*/) const { return 0.0; }
  /// The floor kCore normalises by on p's root runqueue, in priority units: core_priority(p, v,
  /// kCore) == core_priority(p, v, kRaw) + core_floor(p) (CFS: the root min_vruntime).
  /// Mainline core scheduling freezes it for a forced-idle episode (min_vruntime_fi).
  /// std::nullopt: the policy has no floor.
  virtual std::optional<double> core_floor(PcpuId /*p*/) const { return std::nullopt; }

  /// Tasks on p's runqueue, the current one included (Linux rq->nr_running), for KVM halt
  /// polling's single_task_running() (halt_poll.h). 0: the policy keeps no per-pCPU count, and
  /// no vCPU polls on it.
  virtual std::uint32_t nr_running(PcpuId /*p*/) const { return 0; }

  /// Core scheduling's forced-idle tick fix on p, whose sibling is forced idle: the first tick
  /// strictly after `after` at which p's tick reschedules its lone running entity because it has
  /// used 1/min_nr of its slice (mainline task_tick_core, min_nr 2; Aaron Lu's tick hack and v4,
  /// a full slice, min_nr 1), as things stand (nothing else switches on p meanwhile);
  /// sim::kNever if the rule cannot fire (p runs nothing or has more than one entity).
  /// std::nullopt: the policy has no such rule, and the mechanism counts
  /// CoreSchedParams::fi_slice from the core-wide pick instead.
  virtual std::optional<sim::Time> forced_idle_tick(PcpuId /*p*/, std::uint32_t /*min_nr*/, sim::Time /*after*/) const {
    return std::nullopt;
  }

  /// A timer this policy armed fired.
  virtual void on_timer(TimerId /*t*/, sim::Time /*now*/) {}
  /// Human-readable state, for debugging (Xen dump_settings).
  virtual void dump(std::ostream& /*os*/) const {}
};

}  // namespace vcpusim::hv
