// SPDX-License-Identifier: MIT
// Cfs: the model of the Linux Completely Fair Scheduler on a KVM host, where every vCPU is an
// ordinary SCHED_OTHER host thread (a QEMU thread looping in KVM_RUN). It models the pre-EEVDF
// CFS of the 5.x kernels that the published core-scheduling runs used (RFC v3-v5 on 5.1-5.5,
// mainline 5.14), following kernel/sched/fair.c as of 5.6/5.7 (the tree read: 000619680c37) with
// the 5.1-5.9 constants; EEVDF (6.6+) replaced most of this and is not mixed in. Function names
// in comments are the kernel's; ../shared/reference/linux-core-scheduling.md (sections 1, 2.5, 4)
// is the project's digest. This file is the runqueue and its accounting; cfs_balance.cpp holds the
// scheduling domains, CPU selection (select_task_rq_fair) and load balancing.
//
// Design
// ------
// One runqueue per usable hardware thread (struct rq with its root cfs_rq). A runqueue orders its
// waiting entities by vruntime in a timeline (cfs_timeline.h: an indexed binary heap, leftmost
// cached at the root, FIFO among equal keys like the rbtree). The running entity is kept out of
// the timeline (set_next_entity) and put back when switched out (put_prev_entity), so "leftmost"
// is always the best *waiting* entity.
//
// Task groups (CONFIG_FAIR_GROUP_SCHED, `cgroups: per-domain`; default `none`: every vCPU a task
// at the root). Each VM, and each process of a bare-metal program (Vcpu::process: memcached and
// the mutilate clients are two), is a cgroup directly under the root, as libvirt's machine.slice
// scopes (or a tagged process group) are. A group has a runqueue and a
// group entity on every pCPU; the entity sits on that pCPU's root runqueue while the group's
// runqueue there holds a task, and carries the group's cpu.shares (the domain's weight mapped as
// `weights` says) split over the CPUs by load (calc_group_shares: shares * this runqueue's load
// / the group's load, clamped to [MIN_SHARES, shares]), the load being a PELT-style average
// (half-life 32 x 1024 us) so that a VM that runs a little on many CPUs keeps a large weight on
// each. Tasks inside a group are nice 0. Every rule below then works per level, as fair.c's
// for_each_sched_entity does: update_curr, min_vruntime, placement (a group entity that comes
// back is placed as a waking one), slices (sched_slice multiplies the shares of every level),
// tick preemption (checked at each level with more than one entity), wake-up preemption (the
// two tasks compared where their hierarchies meet, find_matching_se), buddies (set for every
// level up), picking (root first, then the chosen group's runqueue; a group entity stays
// current while its runqueue switches task) and migration (re-based by the group runqueues'
// min_vruntimes). A task that sleeps inside a group that keeps others makes its group entity the
// root's next buddy (dequeue_task_fair). The balancer counts a task's load as its share of the
// root's load through its group (task_h_load).
//
// Weights and vruntime. A vCPU's CFS weight comes from Vcpu::weight (a VM's weight, default 256):
// weights=linear (default) gives 1024 * weight / 256, so 256 is nice 0 = 1024 and 512 is twice
// that, as cgroup cpu.shares (libvirt's <shares>) would; weights=nice snaps that to the nearest
// sched_prio_to_weight entry (84 -> 336 -> 335 = nice 5). While it runs, an entity's vruntime
// grows by delta * 1024 / weight (update_curr, calc_delta_fair); update_curr runs wherever the
// kernel runs it: pick_next, put_prev, wake-up preemption checks, sleep, yield. A runqueue's
// min_vruntime follows min(curr, leftmost) and never decreases (update_min_vruntime).
//
// Placement. A waking entity is placed at max(its vruntime, min_vruntime - latency/2)
// (place_entity with GENTLE_FAIR_SLEEPERS): a long sleeper comes back half a latency behind the
// pack, not arbitrarily far behind, so it cannot monopolise the CPU. Sleeping on a runqueue keeps
// the absolute vruntime; waking on, or being balanced to, another runqueue re-bases it by the
// difference of the two min_vruntimes (migrate_task_rq_fair, enqueue_entity's renorm). The first
// wake-up is a fork (wake_up_new_task): the entity starts one virtual slice after min_vruntime
// (place_entity(initial), START_DEBIT).
//
// Slices and tick preemption. sched_slice = period * weight / runqueue load, period = latency for
// at most nr_latency runnable entities, else nr * min_granularity (__sched_period). The kernel
// checks preemption at every tick (check_preempt_tick, only when the runqueue has more than one
// entity): resched when the current ran more than its slice since it was picked, or, once it ran
// min_granularity, when its vruntime leads the leftmost's by more than the slice (virtual against
// wall time, as in the kernel). There is no tick event here: for the state at a pick, the policy
// computes the earliest instant either rule holds and arms the Pick's slice to end at the first
// tick (multiples of 1/hz, ticks aligned on every CPU) at or after it; at that slice end it
// re-evaluates the rule exactly and either preempts or re-arms. A lone entity gets no slice end
// at all. When an enqueue makes the due tick earlier (a shorter slice, a new leftmost), the pCPU is
// tickled to re-arm it; a state change that makes it later is found at the armed tick. So the tick
// shows only where it changes decisions: slices end on tick boundaries, never in between.
//
// Wake-up preemption (check_preempt_wakeup). A wakee preempts the current entity iff the
// current's vruntime exceeds the wakee's by more than wakeup_granularity converted to the
// *wakee's* virtual time (wakeup_preempt_entity, wakeup_gran). A preempting wakee becomes the next
// buddy; with at least nr_latency entities the preempted one becomes the last buddy. The same check
// runs for entities the balancer attaches (attach_task -> check_preempt_curr). An idle pCPU that
// gets an entity is tickled.
//
// Picking (pick_next_task_fair -> pick_next_entity). pick_next() only chooses: when no reschedule
// is pending and the armed tick has not come, it keeps the current entity. Otherwise it takes the
// leftmost (or the current if it is further left), prefers the second if the leftmost is the skip
// buddy and the second is within wakeup_gran of it, then the last buddy, then the next buddy,
// each only within wakeup_gran (in the leftmost's units) of the leftmost. Choosing the current
// entity again does not restart its slice (the CONFIG_FAIR_GROUP_SCHED path of 5.x skips
// set_next_entity when prev == p, and for a group entity that stays current), except under core
// scheduling, whose pick_next_task ends in set_next_task at every level (PickFilter::core).
// When nothing is runnable it chooses what newly-idle balancing would pull. set_next() commits:
// it dequeues the chosen entity (it becomes cfs_rq->curr), clears its buddy marks, moves a pulled
// or pushed entity between runqueues; put_prev() requeues the previous one if still runnable.
//
// Yield. sched_yield (yield(v, kIdle)): if the runqueue has another entity, mark the yielder as
// skip buddy and reschedule (yield_task_fair); no vruntime is charged. Directed yield (KVM's
// kvm_vcpu_on_spin -> yield_to(target, preempt=true)): nothing if both runqueues hold one entity
// (-ESRCH), or the target runs or is blocked; else the target becomes the next buddy on its
// runqueue, the yielder the skip buddy, and the yielder's pCPU reschedules. A remote target's
// pCPU is rescheduled by resched_task(p_rq->curr), i.e. a reschedule IPI (3.10 core.c:
// set_tsk_need_resched, then smp_send_reschedule): SchedActions::resched_remote, so its current
// entity runs on for ExecParams::resched_ipi. Whether the target then runs is pick_next_entity's
// call (3.10 fair.c): prev is put back first, so `left` is the smaller of prev's and the
// leftmost's vruntime, and the next buddy wins iff it is within wakeup_gran of `left`. Nothing
// shields an entity that was just picked (no minimum run on this path; min_granularity guards
// only tick preemption), so a vCPU switched in a moment before is preempted like any other.
// Wake-up preemption takes the same path: check_preempt_wakeup -> resched_task(rq->curr) runs on
// the CPU the wake-up runs on (the waker's, or the wakee's prev for a timer or device interrupt
// there; pick_cpu notes it), so a wakee placed on another CPU preempts that CPU's entity one
// reschedule IPI later, and one placed on the waking CPU at once.
// An idle CPU is woken at once. 3.16+ idles polling need_resched (TIF_POLLING_NRFLAG over mwait:
// no IPI). 3.10's cpu_idle_loop cleared TIF_POLLING_NRFLAG, so resched_task sent the IPI, but
// intel_idle's mwait monitors the thread_info flags word, so the flag's write itself ends the
// idle wait: either way, no IPI latency. MODEL: a wakee is enqueued at once, where a wake-up
// across last-level caches was queued on the target's wake_list until its IPI arrived (3.10's
// TTWU_QUEUE; 5.8+'s ttwu_queue_wakelist, without an IPI when the target idles polling).
//
// Core scheduling priority (core_priority, Linux prio_less -> cfs_prio_less). kRaw: -vruntime of
// the task's root-level entity (its group entity, or itself), the raw per-runqueue value the
// early patches compared across siblings (Aaron Lu's core-wide root min_vruntime makes the root
// values of siblings comparable). kCore: -(that vruntime - the root's min_vruntime), the lag
// behind the root's floor: Tim Chen's comparison and mainline 5.14's cfs_prio_less for tasks of
// different groups (they meet at the root) outside a forced-idle episode (its min_vruntime_fi
// snapshot is refreshed at every comparison then; during one the dispatcher freezes core_floor,
// the root min_vruntime, as se_fi_update does). kLeaf: -(the task's vruntime - its own
// runqueue's min_vruntime), RFC v3's leaf normalisation. Without groups kCore and kLeaf are one
// rule. A core-wide base (a constant added to every sibling's value) would not change any
// comparison, so none is added.
//
// Under core scheduling (hypervisor/core_sched.cpp, the dispatcher's mechanism) pick_next is
// asked for every sibling and again with a cookie PickFilter: the filtered pick takes the best
// entity of that cookie (the timeline is then scanned linearly; the kernel keeps a core_tree by
// cookie), and a pCPU left with queued entities of other cookies only -- forced idle -- steals one
// of the core's cookie from another runqueue (sched_core_balance / try_steal_cookie) instead of
// newly-idle balancing, which only an empty runqueue does.
//
// CPU selection and load balancing are described in cfs_balance.cpp.
//
// Parameters (scenario key under host.scheduler; unit; default; Linux equivalent)
// ----------
//   latency              duration  6 ms    sysctl_sched_latency (normalized; scaled, below)
//   min_granularity      duration  0.75 ms sysctl_sched_min_granularity (normalized; scaled)
//   wakeup_granularity   duration  1 ms    sysctl_sched_wakeup_granularity (normalized; scaled)
//   tunable_scaling      choice    log     sysctl_sched_tunable_scaling: none (x1), log
//                                          (x 1 + ilog2(min(ncpus, 8))), linear (x min(ncpus, 8));
//                                          ncpus = usable threads, so >= 8 threads give 24/3/4 ms
//   migration_cost       duration  0.5 ms  sysctl_sched_migration_cost (task_hot, newidle gate)
//   nr_migrate           integer   32      sysctl_sched_nr_migrate
//   hz                   integer   250     CONFIG_HZ (tick = 4 ms): tick preemption, balancing
//   busy_factor          integer   32      sd->busy_factor (5.1-5.9; 16 from 5.10)
//   reclaim_distance     integer   30      node_reclaim_distance (RECLAIM_DISTANCE; 32 on AMD Zen)
//   weights              choice    linear  how Vcpu::weight maps to load.weight: linear
//                                          (1024*w/256, cpu.shares) or nice (nearest nice level)
//   cgroups              choice    none    task groups: none, or per-domain (a cgroup per VM and
//                                          per bare-metal process; the mapped weight is its
//                                          cpu.shares, its tasks nice 0)
//   gentle_fair_sleepers choice    on      sched_feat GENTLE_FAIR_SLEEPERS (off: full latency credit)
//   wakeup_preemption    choice    on      sched_feat WAKEUP_PREEMPTION
//   balance_load         choice    pelt    what the balancer reads: pelt (PELT's averages, 5.5/5.6)
//                                          or instant (runnable weights, busy = capacity: 3.10)
// sched_nr_latency = DIV_ROUND_UP(latency, min_granularity) = 8 with the defaults.
//
// Invariants
// ----------
// - An entity is on at most one runqueue (on_rq), and while on_rq it is either that runqueue's
//   curr or in its timeline, never both; each runqueue's nr_running and load count exactly its
//   on_rq entities, rq->nr_running the CPU's on_rq tasks at every level. A group entity is on_rq
//   exactly while its group runqueue holds an entity; a group runqueue has a curr only while its
//   group entity is its root's curr; a group's load sum is its runqueues' contributions.
// - Entities are only ever on runqueues of pCPUs in their hard affinity: pick_cpu returns such a
//   pCPU and every migration (newly-idle pull, periodic pull, active push) checks it first
//   (can_migrate_task); so every pick is inside hard affinity, and inside the PickFilter.
// - min_vruntime never decreases. Buddy marks name on_rq entities of their own runqueue only:
//   they are cleared when that entity is dequeued or picked.
// - pick_next changes no runqueue membership (it updates the current entity's vruntime, as
//   update_curr does); set_next and put_prev commit.
// - Per event the work is O(log n) in one runqueue plus bitset operations over the machine's
//   idle masks; only balancing walks CPUs: newly-idle balancing the domains that hold an
//   overloaded runqueue, periodic balancing one domain level per due interval.
//
// Not modelled
// ------------
// - Deeper group hierarchies: libvirt's machine.slice level (one group above all VMs: it changes
//   nothing between VMs when every task is in a VM) and its per-vCPU vcpuN groups (one task each:
//   folded into the task, which loses their own min_vruntime level); autogroup; bandwidth
//   control (cpu.cfs_quota_us).
// - With `balance_load: instant`, PELT only behind calc_group_shares (the group runqueues' load
//   averages, with each group task's own average, which moves with it when it changes CPU):
//   balancing then reads instantaneous runqueue loads (sum of runnable weights) and counts a
//   busy CPU as fully utilised, as 3.10 did (below, "PELT for the balancer"; cfs_balance.cpp).
// - RT/deadline classes, SCHED_BATCH/IDLE, CFS bandwidth control, NUMA balancing (task_numa_fault),
//   ALT_PERIOD/BASE_SLICE (5.13+), sched_child_runs_first, HRTICK, nohz_full. Core scheduling's
//   cross-sibling comparison variants (min_vruntime_fi snapshots, forced-idle credit) belong to
//   the dispatcher's mechanism, which builds them from core_priority().
// - MODEL: vruntime and min_vruntime are signed 64-bit ns starting at 0 (the kernel uses u64 with
//   wrap-safe comparisons, starting min_vruntime at -2^20 to exercise the wrap).
// - MODEL: the fork parent's vruntime is taken to be the runqueue's min_vruntime.
// - MODEL: calc_delta_fair divides exactly (the kernel multiplies by a 32-bit inverse weight).
//
// References
// ----------
// torvalds/linux kernel/sched/fair.c: update_curr, calc_delta_fair, __calc_delta,
// update_min_vruntime, __sched_period, sched_slice, sched_vslice, place_entity, enqueue_entity,
// dequeue_entity, set_next_entity, put_prev_entity, check_preempt_tick, entity_tick,
// check_preempt_wakeup, wakeup_preempt_entity, wakeup_gran, pick_next_entity,
// pick_next_task_fair, yield_task_fair, yield_to_task_fair, migrate_task_rq_fair,
// get_update_sysctl_factor, update_sysctl, prio_less/cfs_prio_less (5.14); kernel/sched/core.c:
// sched_prio_to_weight, yield_to, ttwu_do_wakeup (avg_idle); kernel/sched/features.h.
#include "policies/cfs.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>

namespace vcpusim::policy {

using namespace cfs;  // NOLINT: this file is cfs
using hv::kIdle;
using hv::kNoPcpu;
using hv::PcpuId;
using hv::VcpuId;

namespace {
// PELT's decay: a load average moves toward the load it carries with a half-life of 32 periods
// of 1024 us (LOAD_AVG_PERIOD, y^32 = 1/2). MODEL: a continuous exponential instead of the
// kernel's sums over 1024 us periods.
double pelt_toward(double avg, double load, sim::Duration dt) {
  constexpr double kHalfLife = 32.0 * 1024e3;  // ns
  return load + (avg - load) * std::exp2(-static_cast<double>(dt) / kHalfLife);
}
}  // namespace

// ----------------------------------------------------------------------------------------------
// Construction and parameters.

Cfs::Cfs(Config c) : cfg_(c) {}

std::vector<ParamSpec> Cfs::param_specs() {
  using K = ParamSpec::Kind;
  return {
      {"latency", K::kDuration, static_cast<double>(kLatency), 100e3, 1e9, {},
       "targeted preemption latency before scaling (sysctl_sched_latency, default 6 ms)"},
      {"min_granularity", K::kDuration, static_cast<double>(kMinGranularity), 100e3, 1e9, {},
       "least run time before tick preemption, before scaling (sysctl_sched_min_granularity, 0.75 ms)"},
      {"wakeup_granularity", K::kDuration, static_cast<double>(kWakeupGranularity), 0, 1e9, {},
       "vruntime lead a wakee needs to preempt, before scaling (sysctl_sched_wakeup_granularity, 1 ms)"},
      {"tunable_scaling", K::kChoice, 1, 0, 2, {"none", "log", "linear"},
       "growth of the three granularities with CPUs (sysctl_sched_tunable_scaling, default log)"},
      {"migration_cost", K::kDuration, static_cast<double>(kMigrationCost), 0, 1e9, {},
       "cache-hot window and newly-idle gate (sysctl_sched_migration_cost, default 0.5 ms)"},
      {"nr_migrate", K::kInt, kNrMigrate, 1, 4096, {},
       "most tasks one balance pass examines (sysctl_sched_nr_migrate, default 32)"},
      {"hz", K::kInt, kDefaultHz, 100, 1000, {}, "tick rate (CONFIG_HZ, default 250 = 4 ms)"},
      {"busy_factor", K::kInt, kBusyFactor, 1, 1024, {},
       "balance-interval multiplier on busy CPUs (sd->busy_factor, 32 in 5.1-5.9)"},
      {"reclaim_distance", K::kInt, kReclaimDistance, 10, 255, {},
       "NUMA distance beyond which forks are not balanced (node_reclaim_distance, 30; 32 on AMD Zen)"},
      {"weights", K::kChoice, 0, 0, 1, {"linear", "nice"},
       "Vcpu weight to load.weight: 1024*w/256 (cpu.shares) or the nearest nice level"},
      {"cgroups", K::kChoice, 0, 0, 1, {"none", "per-domain"},
       "task groups: none (every vCPU a task at the root) or per-domain (each VM and bare-metal process a cgroup)"},
      {"gentle_fair_sleepers", K::kChoice, 1, 0, 1, {"off", "on"},
       "sleeper credit is half the latency (sched_feat GENTLE_FAIR_SLEEPERS, default on)"},
      {"wakeup_preemption", K::kChoice, 1, 0, 1, {"off", "on"},
       "wake-ups may preempt (sched_feat WAKEUP_PREEMPTION, default on)"},
      {"balance_load", K::kChoice, 1, 0, 1, {"instant", "pelt"},
       "CPU load and utilisation the balancer reads: summed runnable weights and busy/idle now, or PELT's averages"},
  };
}

std::unique_ptr<hv::SchedulerPolicy> Cfs::make(const ParamValues& v) {
  Config c;
  c.latency = static_cast<sim::Duration>(v.get("latency", static_cast<double>(kLatency)));
  c.min_granularity = static_cast<sim::Duration>(v.get("min_granularity", static_cast<double>(kMinGranularity)));
  c.wakeup_granularity =
      static_cast<sim::Duration>(v.get("wakeup_granularity", static_cast<double>(kWakeupGranularity)));
  c.scaling = static_cast<TunableScaling>(static_cast<int>(v.get("tunable_scaling", 1)));
  c.migration_cost = static_cast<sim::Duration>(v.get("migration_cost", static_cast<double>(kMigrationCost)));
  c.nr_migrate = static_cast<std::uint32_t>(v.get("nr_migrate", kNrMigrate));
  c.hz = static_cast<std::uint32_t>(v.get("hz", kDefaultHz));
  c.busy_factor = static_cast<std::uint32_t>(v.get("busy_factor", kBusyFactor));
  c.reclaim_distance = static_cast<std::uint32_t>(v.get("reclaim_distance", kReclaimDistance));
  c.weights = static_cast<WeightMap>(static_cast<int>(v.get("weights", 0)));
  c.cgroups = static_cast<Cgroups>(static_cast<int>(v.get("cgroups", 0)));
  c.gentle_fair_sleepers = v.get("gentle_fair_sleepers", 1) != 0;
  c.wakeup_preemption = v.get("wakeup_preemption", 1) != 0;
  c.pelt_balance = v.get("balance_load", 1) != 0;
  return std::make_unique<Cfs>(c);
}

void Cfs::attach(const hv::SchedContext& ctx) {
  hv_ = &ctx.hv;
  act_ = &ctx.act;
  const topo::Topology& topo = hv_->topology();
  const std::uint32_t np = topo.num_threads();
  const std::uint32_t nv = hv_->num_vcpus();
  usable_ = hv_->usable_pcpus();
  const std::uint32_t ncpus = std::max(1u, usable_.count());

  // get_update_sysctl_factor() + update_sysctl(): the granularities grow with the CPU count.
  const std::uint32_t capped = std::min(ncpus, 8u);
  std::uint32_t factor = 1;
  if (cfg_.scaling == TunableScaling::kLog) factor = 1 + static_cast<std::uint32_t>(std::bit_width(capped) - 1);
  else if (cfg_.scaling == TunableScaling::kLinear) factor = capped;
  latency_ = cfg_.latency * factor;
  min_gran_ = std::max<sim::Duration>(1, cfg_.min_granularity * factor);
  wakeup_gran_ = cfg_.wakeup_granularity * factor;
  // sched_proc_update_handler(): sched_nr_latency = DIV_ROUND_UP(latency, min_granularity).
  nr_latency_ = static_cast<std::uint32_t>(std::max<sim::Duration>(1, (latency_ + min_gran_ - 1) / min_gran_));
  jiffy_ = sim::seconds(1) / std::max(1u, cfg_.hz);
  // update_max_interval(): max_load_balance_interval = HZ * num_online_cpus() / 10 jiffies.
  max_lb_interval_ = std::max<std::int64_t>(1, static_cast<std::int64_t>(cfg_.hz) * ncpus / 10);

  nv_ = nv;
  np_ = np;
  // Task groups under `cgroups: per-domain`: one per VM and one per process of a bare-metal
  // program (Vcpu::process), in order of first task, each with an entity and a runqueue on every
  // pCPU (alloc_fair_sched_group); their entities follow the tasks in ents_.
  group_of_.clear();
  std::uint32_t ng = 0;
  if (cfg_.cgroups == Cgroups::kPerDomain) {
    group_of_.assign(nv, kNoGroup);
    std::vector<std::vector<std::uint32_t>> by_domain(hv_->num_domains());
    for (VcpuId v = 0; v < nv; ++v) {
      const hv::Vcpu& vc = hv_->vcpu(v);
      std::vector<std::uint32_t>& procs = by_domain[vc.domain];
      if (procs.size() <= vc.process) procs.resize(vc.process + 1, kNoGroup);
      if (procs[vc.process] == kNoGroup) procs[vc.process] = ng++;
      group_of_[v] = procs[vc.process];
    }
  }
  ents_.assign(nv + static_cast<std::size_t>(ng) * np, Entity{});
  heap_pos_.assign(ents_.size(), Timeline::kNotQueued);
  allowed_cores_.assign(nv, topo::CpuSet{});
  grqs_.clear();
  grqs_.resize(static_cast<std::size_t>(ng) * np);
  shares_.assign(ng, kNice0Load);
  tg_load_.assign(ng, 0);
  for (std::uint32_t g = 0; g < ng; ++g)
    for (PcpuId p = 0; p < np; ++p) {
      Entity& ge = ents_[gse_of(g, p)];
      ge.rq = p;
      ge.last_rq = p;
      ge.forked = true;
      ge.pelt = static_cast<double>(ge.weight);  // init_entity_runnable_average (balance_load: pelt)
      grq(g, p).timeline.bind(&heap_pos_);
    }
  rqs_.clear();
  rqs_.resize(np);
  // Each timeline grows to its largest queue once; reserve twice the average share up front.
  const std::size_t per_rq = std::min<std::size_t>(nv, 2 * ((nv + ncpus - 1) / ncpus) + 8);
  for (Runqueue& rq : rqs_) {
    rq.timeline.bind(&heap_pos_);
    rq.timeline.reserve(per_rq);
    rq.avg_idle = 2 * cfg_.migration_cost;  // sched_init(): rq->avg_idle = 2*sysctl_sched_migration_cost
  }
  decision_.assign(np, Decision{});
  newidle_.assign(np, NewidleBalance{});
  idle_ = usable_;
  overloaded_.clear();
  idle_cores_.clear();
  usable_.for_each([&](PcpuId p) { idle_cores_.set(topo.core_of(p)); });
  build_domains();

  // The periodic balance timers (one per usable CPU, TimerId = pCPU), first due one interval in.
  usable_.for_each([&](PcpuId p) {
    std::int64_t next = std::numeric_limits<std::int64_t>::max();
    for (std::uint32_t l = 0; l < levels_.size(); ++l)
      next = std::min(next, dom(p, l).last_balance + balance_interval_jiffies(dom(p, l), false));
    if (!levels_.empty()) arm_balance(p, next);
  });
}

void Cfs::insert_vcpu(VcpuId v) {
  if (v >= nv_) {
    // Group entities follow the tasks in ents_, so with groups every task must exist at attach.
    if (!grqs_.empty()) throw std::logic_error("cfs: vCPU " + std::to_string(v) + " joined after attach laid out the task groups");
    nv_ = v + 1;
    ents_.resize(nv_);
    heap_pos_.resize(nv_, Timeline::kNotQueued);
    allowed_cores_.resize(nv_);
  }
  const hv::Vcpu& vc = hv_->vcpu(v);
  const double linear = static_cast<double>(kNice0Load) * vc.weight / kVcpuWeightNice0;
  std::uint64_t w = static_cast<std::uint64_t>(kNice0Load) * vc.weight / kVcpuWeightNice0;
  if (cfg_.weights == WeightMap::kNice && linear > 0) {
    // The nice level whose weight is nearest on a log scale (each level is a ~1.25x step).
    double best = 1e300;
    for (std::uint32_t i = 0; i < 40; ++i) {
      const double d = std::fabs(std::log(kPrioToWeight[i] / linear));
      if (d < best) {
        best = d;
        w = kPrioToWeight[i];
      }
    }
  }
  const auto weight = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(w, kMinWeight, kMaxWeight));
  if (!group_of_.empty()) {
    // In a group the mapped weight is the group's cpu.shares (libvirt's <shares> of the VM
    // scope), and the task is nice 0 inside it. MODEL: libvirt's per-vCPU child cgroups (one
    // task each) are folded into their task.
    shares_[group_of_[v]] = weight;
    ents_[v].weight = kNice0Load;
  } else {
    ents_[v].weight = weight;
  }
  const topo::Topology& topo = hv_->topology();
  topo::CpuSet cores;
  (vc.hard & usable_).for_each([&](PcpuId p) { cores.set(topo.core_of(p)); });
  allowed_cores_[v] = cores;
}

// ----------------------------------------------------------------------------------------------
// Accounting: vruntime, min_vruntime, slices.

std::int64_t Cfs::calc_delta_fair(sim::Duration delta, std::uint32_t weight) const {
  if (weight == kNice0Load) return delta;
  return delta * static_cast<std::int64_t>(kNice0Load) / static_cast<std::int64_t>(weight);
}

sim::Duration Cfs::sched_period(std::uint32_t nr) const {
  // __sched_period(): stretch the period when more than sched_nr_latency tasks share it.
  if (nr > nr_latency_) return static_cast<sim::Duration>(nr) * min_gran_;
  return latency_;
}

sim::Duration Cfs::slice_of(std::uint32_t nr, std::uint64_t load, std::uint32_t weight) const {
  // sched_slice(): the entity's weighted share of the period (load includes the entity).
  if (load == 0) return sched_period(nr);
  // Weights are clamped to 2^20, so period * weight stays far below 2^63.
  return static_cast<sim::Duration>(static_cast<std::uint64_t>(sched_period(nr)) * weight / load);
}

sim::Duration Cfs::sched_slice(VcpuId v) const {
  const Entity& e = ents_[v];
  if (e.on_rq) return entity_slice(e.rq, v);
  // As if queued on the runqueue it last left (sched_slice adds a !on_rq entity's weight).
  const PcpuId r = e.last_rq != kNoPcpu ? e.last_rq : usable_.first();
  const CfsRq& q = cfs_rq_at(v, r);
  sim::Duration s = slice_of(q.nr + 1, q.load + e.weight, e.weight);
  if (group_of(v) != kNoGroup) {
    const Entity& ge = ents_[gse_of(group_of(v), r)];
    const std::uint64_t load = rqs_[r].load + (ge.on_rq ? 0 : ge.weight);
    if (load > 0) s = static_cast<sim::Duration>(static_cast<std::uint64_t>(s) * ge.weight / load);
  }
  return s;
}

sim::Duration Cfs::entity_slice(PcpuId p, VcpuId se) const {
  // sched_slice(): the period of se's own cfs_rq, scaled by se's share of that cfs_rq's load
  // and then by each ancestor's share of its own (for_each_sched_entity).
  const CfsRq& q = cfs_rq_at(se, p);
  sim::Duration s = slice_of(q.nr, q.load, ents_[se].weight);
  if (is_task(se) && group_of(se) != kNoGroup) {
    const Runqueue& rq = rqs_[p];
    if (rq.load > 0)
      s = static_cast<sim::Duration>(static_cast<std::uint64_t>(s) * ents_[gse_of(group_of(se), p)].weight / rq.load);
  }
  return s;
}

Cfs::CfsRq& Cfs::cfs_rq_at(VcpuId se, PcpuId p) {
  if (is_task(se) && group_of(se) != kNoGroup) return grq(group_of(se), p);
  return rqs_[p];
}

const Cfs::CfsRq& Cfs::cfs_rq_at(VcpuId se, PcpuId p) const {
  if (is_task(se) && group_of(se) != kNoGroup) return grq(group_of(se), p);
  return rqs_[p];
}

VcpuId Cfs::top_of(VcpuId v, PcpuId p) const {
  return is_task(v) && group_of(v) != kNoGroup ? gse_of(group_of(v), p) : v;
}

std::uint32_t Cfs::group_weight(VcpuId v, PcpuId p) const {
  return group_of(v) == kNoGroup ? ents_[v].weight : ents_[gse_of(group_of(v), p)].weight;
}

std::uint64_t Cfs::task_h_load(VcpuId v) const {
  // task_h_load(): the task's weight times its cfs_rq's share of the root's load (h_load), i.e.
  // for one group level weight * gse weight / group runqueue load. MODEL: instantaneous weights
  // for PELT's averages; a task not queued counts as if added to the runqueue it last left.
  const Entity& e = ents_[v];
  if (cfg_.pelt_balance) {
    // task_h_load(): se->avg.load_avg * cfs_rq->h_load / (cfs_rq_load_avg + 1), with one group
    // level h_load = the group entity's average (see PELT above).
    double h = load_avg_at(e, hv_->now());
    if (group_of(v) != kNoGroup) {
      const PcpuId r = e.on_rq ? e.rq : (e.last_rq != kNoPcpu ? e.last_rq : usable_.first());
      const CfsRq& q = grq(group_of(v), r);
      const double qa = pelt_toward(q.avg, static_cast<double>(q.load), hv_->now() - q.avg_stamp);
      h = h * load_avg_at(ents_[gse_of(group_of(v), r)], hv_->now()) / (qa + 1);
    }
    return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(h)));
  }
  if (group_of(v) == kNoGroup) return e.weight;
  const PcpuId r = e.on_rq ? e.rq : (e.last_rq != kNoPcpu ? e.last_rq : usable_.first());
  const CfsRq& q = grq(group_of(v), r);
  const std::uint64_t load = q.load + (e.on_rq ? 0 : e.weight);
  return load == 0 ? e.weight : std::max<std::uint64_t>(1, std::uint64_t{e.weight} * ents_[gse_of(group_of(v), r)].weight / load);
}

std::int64_t Cfs::leaf_min_vruntime(VcpuId v) const {
  const Entity& e = ents_[v];
  const PcpuId r = e.on_rq ? e.rq : (e.last_rq != kNoPcpu ? e.last_rq : usable_.first());
  return cfs_rq_at(v, r).min_vruntime;
}

int Cfs::wakeup_preempt_entity(VcpuId curr, VcpuId se) const {
  // "Should 'se' preempt 'curr'": -1 if se is not behind, 1 if behind by more than the
  // granularity in se's virtual time, else 0.
  const std::int64_t vdiff = ents_[curr].vruntime - ents_[se].vruntime;
  if (vdiff <= 0) return -1;
  return vdiff > wakeup_gran(se) ? 1 : 0;
}

void Cfs::update_curr(PcpuId p, sim::Time now) {
  // update_curr() of every level of the running hierarchy: the root's current entity and, when
  // that is a group entity, its runqueue's current task.
  Runqueue& rq = rqs_[p];
  if (rq.curr == kNil) return;
  if (!is_task(rq.curr)) {
    CfsRq& q = grqs_[rq.curr - nv_];
    if (q.curr != kNil) update_curr_entity(q, now);
  }
  update_curr_entity(rq, now);
}

void Cfs::update_curr_entity(CfsRq& q, sim::Time now) {
  Entity& e = ents_[q.curr];
  const sim::Duration delta = now - e.exec_start;
  if (delta <= 0) return;
  e.exec_start = now;
  e.sum_exec += delta;
  e.vruntime += calc_delta_fair(delta, e.weight);
  update_min_vruntime(q);
}

void Cfs::update_min_vruntime(CfsRq& q) {
  std::int64_t v = q.min_vruntime;
  bool have = false;
  if (q.curr != kNil && ents_[q.curr].on_rq) {
    v = ents_[q.curr].vruntime;
    have = true;
  }
  if (!q.timeline.empty()) {
    const std::int64_t lv = q.timeline.slot(0).vruntime;
    v = have ? std::min(v, lv) : lv;
  }
  q.min_vruntime = std::max(q.min_vruntime, v);  // "ensure we never gain time by being placed backwards"
}

void Cfs::set_nr_running(PcpuId p, std::uint32_t nr) {
  Runqueue& rq = rqs_[p];
  const std::uint32_t old = rq.nr_running;
  rq.nr_running = nr;
  if (nr >= 2 && nr > old) act_->runqueue_grew(p);  // a halt-polling vCPU there stops (halt_poll.h)
  if (nr >= 2) overloaded_.set(p);
  else overloaded_.reset(p);
  const topo::Topology& topo = hv_->topology();
  if (old == 0 && nr > 0) {
    idle_.reset(p);
    idle_cores_.reset(topo.core_of(p));
  } else if (old > 0 && nr == 0) {
    idle_.set(p);
    if ((topo.smt_mask(p) & usable_).subset_of(idle_)) idle_cores_.set(topo.core_of(p));
  }
}

void Cfs::lru_push_front(PcpuId p, VcpuId v) {
  Runqueue& rq = rqs_[p];
  Entity& e = ents_[v];
  e.lru_prev = kNil;
  e.lru_next = rq.lru_head;
  if (rq.lru_head != kNil) ents_[rq.lru_head].lru_prev = v;
  else rq.lru_tail = v;
  rq.lru_head = v;
}

void Cfs::lru_unlink(PcpuId p, VcpuId v) {
  Runqueue& rq = rqs_[p];
  Entity& e = ents_[v];
  if (e.lru_prev != kNil) ents_[e.lru_prev].lru_next = e.lru_next;
  else rq.lru_head = e.lru_next;
  if (e.lru_next != kNil) ents_[e.lru_next].lru_prev = e.lru_prev;
  else rq.lru_tail = e.lru_prev;
  e.lru_prev = e.lru_next = kNil;
}

void Cfs::account_entity(CfsRq& q, PcpuId p, VcpuId se, bool add) {
  // account_entity_enqueue/dequeue(): the cfs_rq's load and nr_running; a root runqueue's load is
  // also the CPU's load the balancer's span sums add up.
  const std::uint32_t w = ents_[se].weight;
  const bool root = &q == static_cast<CfsRq*>(&rqs_[p]);
  if (root && cfg_.pelt_balance) {
    pelt_age_rq(p);
    age_task_avg(se, clock_);  // queued until now when removed, not queued when added
  }
  if (add) {
    q.load += w;
    ++q.nr;
  } else {
    q.load -= w;
    --q.nr;
  }
  if (!root) return;
  if (cfg_.pelt_balance) {
    Runqueue& rq = rqs_[p];
    rq.pelt_load = add ? rq.pelt_load + ents_[se].pelt : std::max(0.0, rq.pelt_load - ents_[se].pelt);
  }
  if (!add && q.nr == 1) act_->runqueue_fell_to_one(p);  // core scheduling's tick rule may apply now
  for (std::uint32_t sp : spans_with_[p]) {
    if (add) sums_[sp].load += w;
    else sums_[sp].load -= w;
  }
}

void Cfs::account_enqueue(PcpuId p, VcpuId v) {
  // The task's side of enqueue_task(): rq->nr_running, the idle masks and the head of
  // rq->cfs_tasks.
  Entity& e = ents_[v];
  e.on_rq = true;
  e.rq = p;
  for (std::uint32_t sp : spans_with_[p]) {
    SpanSums& su = sums_[sp];
    su.idle -= rqs_[p].nr_running == 0 ? 1 : 0;
    ++su.nr;
  }
  set_nr_running(p, rqs_[p].nr_running + 1);
  lru_push_front(p, v);
}

void Cfs::account_dequeue(PcpuId p, VcpuId v) {
  Entity& e = ents_[v];
  e.on_rq = false;
  e.last_rq = p;
  for (std::uint32_t sp : spans_with_[p]) {
    SpanSums& su = sums_[sp];
    su.idle += rqs_[p].nr_running == 1 ? 1 : 0;
    --su.nr;
  }
  set_nr_running(p, rqs_[p].nr_running - 1);
  lru_unlink(p, v);
}

void Cfs::enqueue_task(PcpuId p, VcpuId v, sim::Time now) {
  // enqueue_task_fair(): enqueue_entity() up the hierarchy until an ancestor is already queued,
  // the ancestors entering as waking entities (ENQUEUE_WAKEUP: place_entity with sleeper
  // credit), each group entity's weight recomputed from its runqueue's new load first
  // (update_cfs_group inside enqueue_entity), then the queued ancestors' (second loop).
  Entity& e = ents_[v];
  CfsRq& q = cfs_rq_at(v, p);
  const std::uint32_t g = group_of(v);
  if (g != kNoGroup) {
    update_group_avg(g, p, now);
    follow_task_avg(g, p, v, now);
  }
  if (cfg_.pelt_balance) pelt_attach_util(v, p);
  account_entity(q, p, v, true);
  account_enqueue(p, v);
  q.timeline.insert(v, e.vruntime);
  if (g == kNoGroup) return;
  const VcpuId gse = gse_of(g, p);
  Entity& ge = ents_[gse];
  update_cfs_group(g, p);
  if (ge.on_rq) return;
  Runqueue& rq = rqs_[p];
  const sim::Duration thresh = cfg_.gentle_fair_sleepers ? latency_ / 2 : latency_;
  ge.vruntime = std::max(ge.vruntime, rq.min_vruntime - thresh);
  account_entity(rq, p, gse, true);
  ge.on_rq = true;
  if (rq.curr != gse) rq.timeline.insert(gse, ge.vruntime);
}

void Cfs::dequeue_task(PcpuId p, VcpuId v, bool sleep, sim::Time now) {
  // dequeue_task_fair(): dequeue_entity() -- a sleeping task keeps its absolute vruntime, a
  // migrating one leaves it relative to its runqueue's min_vruntime -- and the group entity too
  // (as a sleeper: DEQUEUE_SLEEP) when its runqueue is left empty; otherwise the group entity is
  // reweighted and, when the task went to sleep, becomes the root's next buddy ("Bias pick_next
  // to pick a task from this cfs_rq, as p is sleeping when it is within its sched_slice").
  Entity& e = ents_[v];
  CfsRq& q = cfs_rq_at(v, p);
  const std::uint32_t g = group_of(v);
  if (g != kNoGroup) {
    update_group_avg(g, p, now);
    age_task_avg(v, now);  // queued until now
  }
  if (sleep) {
    clear_buddies(p, v);
    if (q.curr != v) q.timeline.erase(v);
  } else {
    q.timeline.erase(v);
    clear_buddies(p, v);
  }
  account_entity(q, p, v, false);
  account_dequeue(p, v);
  if (!sleep) e.vruntime -= q.min_vruntime;
  update_min_vruntime(q);
  if (g == kNoGroup) return;
  const VcpuId gse = gse_of(g, p);
  Entity& ge = ents_[gse];
  Runqueue& rq = rqs_[p];
  if (q.nr > 0) {
    if (sleep) rq.next = gse;
    update_cfs_group(g, p);
    return;
  }
  clear_buddies(p, gse);
  if (rq.curr != gse) rq.timeline.erase(gse);
  account_entity(rq, p, gse, false);
  ge.on_rq = false;
  update_cfs_group(g, p);
  update_min_vruntime(rq);
}

void Cfs::update_group_avg(std::uint32_t g, PcpuId p, sim::Time now) {
  // PELT for a group runqueue: its load average follows the runnable weight it held (the sum of
  // its tasks' own averages, each of which follows that task's weight while queued there).
  // update_tg_load_avg(): the group's sum takes the change only when it exceeds 1/64 of the
  // last contribution.
  CfsRq& q = grq(g, p);
  if (now > q.avg_stamp) {
    q.avg = pelt_toward(q.avg, static_cast<double>(q.load), now - q.avg_stamp);
    q.avg_stamp = now;
  }
  const auto avg = static_cast<std::uint64_t>(std::llround(q.avg));
  const std::uint64_t delta = avg > q.contrib ? avg - q.contrib : q.contrib - avg;
  if (delta * 64 > q.contrib || (avg == 0) != (q.contrib == 0)) {
    tg_load_[g] = tg_load_[g] - q.contrib + avg;
    q.contrib = avg;
  }
}

void Cfs::follow_task_avg(std::uint32_t g, PcpuId p, VcpuId v, sim::Time now) {
  // A task's load average travels with it: 5.x's migrate_task_rq_fair() takes it off the
  // runqueue it left (remove_entity_load_avg on a wake-up, detach_entity_cfs_rq for a balance
  // move) and enqueue_entity() adds it to the new one (attach_entity_load_avg), so neither side
  // keeps a decaying ghost of it. MODEL: a wake-up's removal is applied at once, where the kernel
  // folds cfs_rq->removed in at that runqueue's next update. A new task arrives with its weight
  // as its average (wake(), init_entity_runnable_average).
  Entity& e = ents_[v];
  age_task_avg(v, now);  // not queued since it left
  if (e.pelt_rq == p) return;
  if (e.pelt_rq != kNoPcpu) {
    update_group_avg(g, e.pelt_rq, now);
    CfsRq& old = grq(g, e.pelt_rq);
    old.avg = std::max(0.0, old.avg - e.pelt);
    update_group_avg(g, e.pelt_rq, now);
  }
  grq(g, p).avg += e.pelt;
  e.pelt_rq = p;
  update_group_avg(g, p, now);
}

void Cfs::age_task_avg(VcpuId v, sim::Time now) {
  Entity& e = ents_[v];
  e.pelt = load_avg_at(e, now);
  e.pelt_stamp = now;
}

// ----------------------------------------------------------------------------------------------
// PELT for the balancer (balance_load: pelt, the default). The kernel sums 1024 us periods (decay y, y^32 =
// 1/2); here every average moves continuously toward what it carries (pelt_toward), so a sum of
// averages that carry their own targets is the average of the summed targets, and a runqueue's
// average is kept as one number: aged toward its current total before that total changes, with
// an entity's own average added or taken away where the kernel attaches or detaches it.
// - Load: a runqueue's runnable_load_avg (5.1-5.6 cpu_runnable_load, what the 5.5 balancer and
//   wake_affine_weight read) is the sum of the averages of its queued root-level entities (tasks,
//   or group entities under cgroups), each following its weight while queued and decaying while
//   not; enqueue adds it (enqueue_runnable_load_avg), dequeue removes it.
// - Utilisation: util_avg follows capacity (1024) while a task runs. A blocked task's stays
//   attached to the CPU it last ran on and decays there; it moves when the task is enqueued on
//   another CPU (a wake-up's remove_entity_load_avg, a balance's detach/attach). The CPU's
//   util_avg is the sum of its attached tasks', i.e. it follows 1024 while a task runs there.
// - A new task starts with its weight as load (init_entity_runnable_average) and half the CPU's
//   spare capacity as utilisation, or its weight's share of the CPU's utilisation when that is
//   smaller (post_init_entity_util_avg); a group entity starts with its weight (alloc_fair_sched_
//   group calls init_entity_runnable_average), and a reweight scales its average with the weight
//   (reweight_entity: load_avg = weight * load_sum / divider).
// - MODEL: no util_est (task_util_est is util_avg), no blocked load in the runnable sum (as 5.6),
//   and a task's share through its group (task_h_load) from the averages of its task, its group
//   entity and its group runqueue.

double Cfs::load_avg_at(const Entity& e, sim::Time t) const {
  return pelt_toward(e.pelt, e.on_rq ? static_cast<double>(e.weight) : 0.0, t - e.pelt_stamp);
}

double Cfs::util_avg_at(VcpuId v, sim::Time t) const {
  const Entity& e = ents_[v];
  const bool running = e.util_rq != kNoPcpu && rqs_[e.util_rq].running == v;
  return pelt_toward(e.util, running ? static_cast<double>(kCapacityScale) : 0.0, t - e.util_stamp);
}

double Cfs::rq_load_avg_at(PcpuId p, sim::Time t) const {
  const Runqueue& rq = rqs_[p];
  return pelt_toward(rq.pelt_load, static_cast<double>(rq.load), t - rq.pelt_stamp);
}

double Cfs::rq_util_avg_at(PcpuId p, sim::Time t) const {
  const Runqueue& rq = rqs_[p];
  return pelt_toward(rq.pelt_util, rq.running != kNil ? static_cast<double>(kCapacityScale) : 0.0, t - rq.pelt_stamp);
}

void Cfs::pelt_age_rq(PcpuId p) {
  Runqueue& rq = rqs_[p];
  if (clock_ <= rq.pelt_stamp) return;
  rq.pelt_load = rq_load_avg_at(p, clock_);
  rq.pelt_util = rq_util_avg_at(p, clock_);
  rq.pelt_stamp = clock_;
}

void Cfs::pelt_age_util(VcpuId v) {
  Entity& e = ents_[v];
  e.util = util_avg_at(v, clock_);
  e.util_stamp = clock_;
}

void Cfs::pelt_attach_util(VcpuId v, PcpuId p) {
  Entity& e = ents_[v];
  if (e.util_rq == p) return;
  pelt_age_util(v);
  if (e.util_rq != kNoPcpu) {
    pelt_age_rq(e.util_rq);
    Runqueue& old = rqs_[e.util_rq];
    old.pelt_util = std::max(0.0, old.pelt_util - e.util);
  }
  pelt_age_rq(p);
  rqs_[p].pelt_util += e.util;
  e.util_rq = p;
}

void Cfs::pelt_set_running(PcpuId p, VcpuId v) {
  Runqueue& rq = rqs_[p];
  if (rq.running == v) return;
  pelt_age_rq(p);
  if (rq.running != kNil) pelt_age_util(rq.running);
  if (v != kNil) {
    pelt_attach_util(v, p);
    pelt_age_util(v);
  }
  rq.running = v;
}

std::uint64_t Cfs::cpu_load(PcpuId p) const {
  const Runqueue& rq = rqs_[p];
  if (!cfg_.pelt_balance) return rq.load;
  return static_cast<std::uint64_t>(std::llround(rq_load_avg_at(p, hv_->now())));
}

std::uint64_t Cfs::cpu_util(PcpuId p) const {
  const Runqueue& rq = rqs_[p];
  if (!cfg_.pelt_balance) return rq.nr_running > 0 ? kCapacityScale : 0;
  return std::min<std::uint64_t>(kCapacityScale, static_cast<std::uint64_t>(std::llround(rq_util_avg_at(p, hv_->now()))));
}

std::uint64_t Cfs::task_util(VcpuId v) const {
  if (!cfg_.pelt_balance) return kCapacityScale;
  return std::min<std::uint64_t>(kCapacityScale, static_cast<std::uint64_t>(std::llround(util_avg_at(v, hv_->now()))));
}

double Cfs::group_avg(VcpuId v, PcpuId p) const {
  const std::uint32_t g = group_of(v);
  return g == kNoGroup ? 0.0 : grq(g, p).avg;
}

void Cfs::update_cfs_group(std::uint32_t g, PcpuId p) {
  // calc_group_shares() (5.x): load = max(this runqueue's weight, its load average); the
  // group's weight = its summed contributions with this runqueue's replaced by that load;
  // shares = tg->shares * load / that, clamped to [MIN_SHARES, tg->shares]. reweight_entity()
  // keeps the vruntime. A group entity is reweighted when its CPU enqueues or dequeues one of the
  // group's tasks, picks (standing for entity_tick's update_cfs_group) or balances (update_
  // blocked_averages), so the other CPUs' entities lag behind a change, as in the kernel.
  const VcpuId gse = gse_of(g, p);
  Entity& ge = ents_[gse];
  const CfsRq& q = grq(g, p);
  const std::uint64_t load = std::max<std::uint64_t>(q.load, static_cast<std::uint64_t>(std::llround(q.avg)));
  const std::uint64_t tg = tg_load_[g] - q.contrib + load;
  std::uint64_t w = shares_[g];
  if (tg > 0) w = std::uint64_t{shares_[g]} * load / tg;
  w = std::clamp<std::uint64_t>(w, kMinWeight, shares_[g]);
  if (w == ge.weight) return;
  if (ge.on_rq) account_entity(rqs_[p], p, gse, false);
  if (cfg_.pelt_balance) {  // reweight_entity(): the average scales with the weight
    age_task_avg(gse, clock_);
    ge.pelt = ge.pelt * static_cast<double>(w) / static_cast<double>(ge.weight);
  }
  ge.weight = static_cast<std::uint32_t>(w);
  if (ge.on_rq) account_entity(rqs_[p], p, gse, true);
}

void Cfs::clear_buddies(PcpuId p, VcpuId se) {
  // clear_buddies() -> __clear_buddies_{last,next,skip}(): the mark naming se, then upwards for
  // as long as the parent's runqueue names the parent.
  CfsRq& q = cfs_rq_at(se, p);
  const VcpuId parent = is_task(se) && group_of(se) != kNoGroup ? gse_of(group_of(se), p) : kNil;
  for (VcpuId CfsRq::*mark : {&CfsRq::last, &CfsRq::next, &CfsRq::skip}) {
    if (q.*mark != se) continue;
    q.*mark = kNil;
    if (parent != kNil && rqs_[p].*mark == parent) rqs_[p].*mark = kNil;
  }
}

void Cfs::set_buddy(PcpuId p, VcpuId se, VcpuId CfsRq::*mark) {
  // set_{next,last,skip}_buddy(): for_each_sched_entity, the mark on every level up.
  cfs_rq_at(se, p).*mark = se;
  if (is_task(se) && group_of(se) != kNoGroup) rqs_[p].*mark = gse_of(group_of(se), p);
}

VcpuId Cfs::running_curr(PcpuId p) const {
  // The task p runs: the root's current entity, or its group runqueue's current task.
  VcpuId c = rqs_[p].curr;
  if (c != kNil && !is_task(c)) c = my_q(c).curr;
  return c != kNil && ents_[c].on_rq ? c : kNil;
}

// ----------------------------------------------------------------------------------------------
// The timeline: leftmost, second, buddies.

VcpuId Cfs::tree_best_except(const CfsRq& q, VcpuId a, VcpuId b) const {
  // The 3 smallest entries of a binary heap lie in its first 7 slots, so with at most two
  // exclusions the best remaining entry is among them.
  const Timeline& t = q.timeline;
  const std::uint32_t n = std::min<std::uint32_t>(t.size(), 7);
  const Timeline::Slot* best = nullptr;
  for (std::uint32_t i = 0; i < n; ++i) {
    const Timeline::Slot& s = t.slot(i);
    if (s.v == a || s.v == b) continue;
    if (!best || Timeline::less(s, *best)) best = &s;
  }
  return best ? best->v : kNil;
}

bool Cfs::pickable(VcpuId se, VcpuId curr_task, VcpuId exclude, const hv::PickFilter& f) const {
  if (is_task(se)) return se != exclude && f.allows(hv_->vcpu(se));
  const CfsRq& q = my_q(se);
  if (q.curr != kNil && q.curr == curr_task && pickable(curr_task, curr_task, exclude, f)) return true;
  const Timeline& t = q.timeline;
  if (!f.match_cookie) {
    // Every queued task is allowed; only `exclude` may be missing.
    const bool ex_here = exclude != kNil && heap_pos_[exclude] != Timeline::kNotQueued && group_of(exclude) == (se - nv_) / np_ &&
                         ents_[exclude].rq == (se - nv_) % np_;
    return t.size() > (ex_here ? 1u : 0u);
  }
  for (std::uint32_t i = 0; i < t.size(); ++i)
    if (pickable(t.slot(i).v, curr_task, exclude, f)) return true;
  return false;
}

VcpuId Cfs::tree_best_filtered(const CfsRq& q, VcpuId ex, VcpuId curr_task, VcpuId exclude, const hv::PickFilter& f) const {
  if (!f.match_cookie) return tree_best_except(q, ex, kNil);
  // MODEL: under core scheduling's cookie filter the timeline is scanned linearly (the kernel
  // keeps a separate core_tree by cookie); only the dispatcher's core-wide pick filters.
  const Timeline& t = q.timeline;
  const Timeline::Slot* best = nullptr;
  for (std::uint32_t i = 0; i < t.size(); ++i) {
    const Timeline::Slot& s = t.slot(i);
    if (s.v == ex || !pickable(s.v, curr_task, exclude, f)) continue;
    if (!best || Timeline::less(s, *best)) best = &s;
  }
  return best ? best->v : kNil;
}

VcpuId Cfs::tree_second(const CfsRq& q, VcpuId first, VcpuId ex, VcpuId curr_task, VcpuId exclude,
                        const hv::PickFilter& f) const {
  // __pick_next_entity(first): `first` is the best allowed entry, so the next one in timeline
  // order is the best of the rest.
  if (!f.match_cookie) return tree_best_except(q, first, ex);
  const Timeline& t = q.timeline;
  const Timeline::Slot* best = nullptr;
  for (std::uint32_t i = 0; i < t.size(); ++i) {
    const Timeline::Slot& s = t.slot(i);
    if (s.v == first || s.v == ex || !pickable(s.v, curr_task, exclude, f)) continue;
    if (!best || Timeline::less(s, *best)) best = &s;
  }
  return best ? best->v : kNil;
}

VcpuId Cfs::pick_level(const CfsRq& q, PcpuId p, VcpuId curr, VcpuId curr_task, VcpuId exclude,
                       const hv::PickFilter& f) const {
  const auto before = [&](VcpuId a, VcpuId b) { return ents_[a].vruntime < ents_[b].vruntime; };  // entity_before
  // The entity this level must not offer: `exclude` itself, or at the root the group entity
  // whose only candidate it is.
  VcpuId ex = exclude;
  if (exclude != kNil && &q == static_cast<const CfsRq*>(&rqs_[p]) && group_of(exclude) != kNoGroup) {
    const VcpuId gse = gse_of(group_of(exclude), p);
    ex = pickable(gse, curr_task, exclude, f) ? kNil : gse;
  }
  // A buddy counts only if it is still a candidate here: the current entity (if it is one) or
  // queued in this timeline, not excluded, and allowed by the filter.
  const auto candidate = [&](VcpuId b) {
    if (b == kNil || b == ex || !pickable(b, curr_task, exclude, f)) return false;
    if (b == q.curr) return b == curr;
    return ents_[b].on_rq && ents_[b].rq == p;
  };
  VcpuId left = tree_best_filtered(q, ex, curr_task, exclude, f);
  // "If curr is set we have to see if its left of the leftmost entity still in the tree".
  if (left == kNil || (curr != kNil && before(curr, left))) left = curr;
  if (left == kNil) return kNil;
  VcpuId se = left;  // ideally we run the leftmost entity
  // Avoid running the skip buddy, if running something else can be done without getting too unfair.
  if (q.skip == se) {
    VcpuId second;
    if (se == curr) {
      second = tree_best_filtered(q, ex, curr_task, exclude, f);
    } else {
      second = tree_second(q, se, ex, curr_task, exclude, f);
      if (second == kNil || (curr != kNil && before(curr, second))) second = curr;
    }
    if (second != kNil && wakeup_preempt_entity(second, left) < 1) se = second;
  }
  // Prefer last buddy, try to return the CPU to a preempted task.
  if (candidate(q.last) && wakeup_preempt_entity(q.last, left) < 1) se = q.last;
  // Someone really wants this to run. If it's not unfair, run it.
  if (candidate(q.next) && wakeup_preempt_entity(q.next, left) < 1) se = q.next;
  return se;
}

VcpuId Cfs::pick_next_entity(PcpuId p, VcpuId curr_task, VcpuId exclude, const hv::PickFilter& f) const {
  // pick_next_task_fair(): pick_next_entity() at the root, then inside the chosen group entity's
  // runqueue; a level's current entity is a candidate while queued (and, for a group entity,
  // while its runqueue offers one).
  const Runqueue& rq = rqs_[p];
  VcpuId top_curr = kNil;
  if (rq.curr != kNil) {
    if (is_task(rq.curr)) top_curr = curr_task;
    else if (ents_[rq.curr].on_rq && pickable(rq.curr, curr_task, exclude, f)) top_curr = rq.curr;
  }
  const VcpuId top = pick_level(rq, p, top_curr, curr_task, exclude, f);
  if (top == kNil || is_task(top)) return top;
  const CfsRq& q = my_q(top);
  return pick_level(q, p, curr_task != kNil && q.curr == curr_task ? curr_task : kNil, curr_task, exclude, f);
}

// ----------------------------------------------------------------------------------------------
// Tick preemption, modelled at the ticks where it can fire.

bool Cfs::tick_preempts(PcpuId p, VcpuId& ran_past_slice) const {
  // entity_tick() at every level of the running hierarchy, from the task up ->
  // check_preempt_tick(), only on a level with more than one runnable entity. ran_past_slice
  // names the entity whose "ran > ideal" fired (its buddy marks go).
  const Runqueue& rq = rqs_[p];
  ran_past_slice = kNil;
  if (rq.curr == kNil) return false;
  const auto check = [&](const CfsRq& q) {
    if (q.nr <= 1 || q.curr == kNil) return false;
    const Entity& e = ents_[q.curr];
    const sim::Duration ideal = entity_slice(p, q.curr);
    const sim::Duration ran = e.sum_exec - e.prev_sum_exec;
    if (ran > ideal) {
      ran_past_slice = q.curr;
      return true;
    }
    // "Ensure that a task that missed wakeup preemption by a narrow margin doesn't have to wait
    // for a full slice."
    if (ran < min_gran_) return false;
    if (q.timeline.empty()) return false;
    const std::int64_t delta = e.vruntime - q.timeline.slot(0).vruntime;
    if (delta < 0) return false;
    return delta > ideal;
  };
  if (!is_task(rq.curr) && check(my_q(rq.curr))) return true;
  return check(rq);
}

sim::Time Cfs::preempt_due(sim::Time now, std::uint32_t nr, sim::Duration ideal, std::uint32_t weight,
                           sim::Duration ran, bool has_left, std::int64_t lead) const {
  if (nr <= 1) return sim::kNever;
  // Rule 1: ran > ideal.
  sim::Time t = now + std::max<sim::Duration>(0, ideal - ran + 1);
  if (has_left) {
    // Rule 2: ran >= min_granularity and the vruntime lead over the leftmost > ideal; the lead
    // grows by calc_delta_fair(dt), so it needs ceil(gap * weight / 1024) more ns of running.
    // (Clamped at 2^40 ns, ~18 min, so that gap * weight fits in 64 bits.)
    const std::int64_t gap = std::min<std::int64_t>(ideal - lead + 1, std::int64_t{1} << 40);
    sim::Duration dt = 0;
    if (gap > 0)
      dt = (gap * static_cast<std::int64_t>(weight) + kNice0Load - 1) / kNice0Load;
    dt = std::max(dt, min_gran_ - ran);
    t = std::min(t, now + std::max<sim::Duration>(0, dt));
  }
  return t;
}

sim::Time Cfs::next_tick_at_or_after(sim::Time t, sim::Time now) const {
  if (t == sim::kNever) return sim::kNever;
  sim::Time tick = (t + jiffy_ - 1) / jiffy_ * jiffy_;
  if (tick <= now) tick = (now / jiffy_ + 1) * jiffy_;
  return tick;
}

std::optional<sim::Time> Cfs::forced_idle_tick(PcpuId p, std::uint32_t min_nr, sim::Time after) const {
  // task_tick_core() (5.14 fair.c, Vineeth Pillai): "if (rq->core->core_forceidle_count &&
  // rq->cfs.nr_running == 1 && __entity_slice_used(&curr->se, MIN_NR_TASKS_DURING_FORCEIDLE))
  // resched_curr(rq)", where __entity_slice_used() is "rtime * min_nr_tasks > slice", rtime =
  // sum_exec_runtime - prev_sum_exec_runtime of the task (since its set_next_entity) and slice =
  // sched_slice(cfs_rq_of(se), se); MIN_NR_TASKS_DURING_FORCEIDLE = 2. Aaron Lu's tick hack and
  // v4's resched_forceidle_sibling resched after the full slice (min_nr 1). Checked at ticks.
  const Runqueue& rq = rqs_[p];
  const VcpuId c = running_curr(p);
  if (c == kNil || rq.nr != 1 || min_nr == 0) return sim::kNever;
  const Entity& e = ents_[c];
  // rtime grows at the wall rate while c runs: it passes slice / min_nr at `used`.
  const sim::Duration rtime = e.sum_exec - e.prev_sum_exec + std::max<sim::Duration>(0, after - e.exec_start);
  const sim::Time used = after + (entity_slice(p, c) / min_nr + 1 - rtime);  // rtime * min_nr > slice
  const sim::Time from = std::max(used, after + 1);
  return (from + jiffy_ - 1) / jiffy_ * jiffy_;
}

sim::Duration Cfs::keep_slice(PcpuId p, sim::Time now) const {
  // The slice end to arm for the current entity as things stand: the first tick at which
  // check_preempt_tick would resched it at some level (0: none, it is alone at every level).
  const Runqueue& rq = rqs_[p];
  sim::Time due = sim::kNever;
  const auto level = [&](const CfsRq& q) {
    if (q.curr == kNil) return;
    const Entity& e = ents_[q.curr];
    const bool has_left = !q.timeline.empty();
    const std::int64_t lead = has_left ? e.vruntime - q.timeline.slot(0).vruntime : 0;
    due = std::min(due, preempt_due(now, q.nr, entity_slice(p, q.curr), e.weight, e.sum_exec - e.prev_sum_exec,
                                    has_left, lead));
  };
  if (!is_task(rq.curr)) level(my_q(rq.curr));
  level(rq);
  due = next_tick_at_or_after(due, now);
  return due == sim::kNever ? 0 : due - now;
}

void Cfs::maybe_rearm(PcpuId p, sim::Time now) {
  // An enqueue can shorten the current slice (more entities, a new leftmost): if the tick at
  // which the current entity is now due comes before the armed one, have the pCPU re-pick so
  // the new end is armed (the kernel would see it at that tick).
  Runqueue& rq = rqs_[p];
  if (running_curr(p) == kNil || rq.need_resched) return;
  const sim::Duration s = keep_slice(p, now);
  if (s > 0 && now + s < rq.armed_end) act_->tickle(p);
}

void Cfs::check_preempt_curr(PcpuId p, VcpuId v, sim::Time now, PcpuId from) {
  // check_preempt_wakeup(), also reached from attach_task() for balanced entities. The two
  // tasks are compared where their hierarchies meet (find_matching_se): in their group's
  // runqueue when they share one, else as their root-level entities.
  Runqueue& rq = rqs_[p];
  const VcpuId curr = running_curr(p);
  if (curr == kNil) {  // resched_curr() of an idle CPU
    act_->tickle(p);
    return;
  }
  if (curr == v || rq.need_resched) return;
  const bool scale = cfs_rq_at(curr, p).nr >= nr_latency_;
  if (cfg_.wakeup_preemption) {
    update_curr(p, now);
    VcpuId se = curr, pse = v;
    if (group_of(curr) != group_of(v) || group_of(v) == kNoGroup) {
      se = top_of(curr, p);
      pse = top_of(v, p);
    }
    if (se != pse && wakeup_preempt_entity(se, pse) == 1) {
      // "Bias pick_next to pick the sched entity that is triggering this preemption"
      set_buddy(p, pse, &CfsRq::next);
      rq.need_resched = true;
      ++wakeup_preemptions_;
      if (scale && is_task(se)) set_buddy(p, se, &CfsRq::last);  // LAST_BUDDY, with nr_running >= sched_nr_latency
      // resched_task(curr): on this CPU, schedule() on the way out of the wake-up; on another,
      // smp_send_reschedule(), and p's current entity runs on until the IPI arrives.
      if (from != kNoPcpu && from != p) act_->resched_remote(p);
      else act_->tickle(p);
      return;
    }
  }
  maybe_rearm(p, now);
}

// ----------------------------------------------------------------------------------------------
// Hooks: wake, sleep, yield.

void Cfs::wake(VcpuId v, sim::Time now) {
  clock_ = now;
  const PcpuId p = hv_->vcpu(v).pcpu;
  Entity& e = ents_[v];
  Runqueue& rq = rqs_[p];
  update_curr(p, now);
  CfsRq& q = cfs_rq_at(v, p);  // its group's runqueue on p, or p's root
  if (!e.forked) {
    // wake_up_new_task(): task_fork_fair() + place_entity(initial): START_DEBIT puts a new task
    // one virtual slice (sched_vslice, as if already queued) after min_vruntime.
    e.forked = true;
    sim::Duration slice = slice_of(q.nr + 1, q.load + e.weight, e.weight);
    if (group_of(v) != kNoGroup) {
      const Entity& ge = ents_[gse_of(group_of(v), p)];
      const std::uint64_t load = rq.load + (ge.on_rq ? 0 : ge.weight);
      if (load > 0) slice = static_cast<sim::Duration>(static_cast<std::uint64_t>(slice) * ge.weight / load);
    }
    e.vruntime = q.min_vruntime + calc_delta_fair(slice, e.weight);
    // init_entity_runnable_average() (4.20-5.x): "Tasks are initialized with full load to be
    // seen as heavy tasks until they get a chance to stabilize to their real load level"; the
    // enqueue attaches that average to the group runqueue (follow_task_avg).
    e.pelt = static_cast<double>(e.weight);
    e.pelt_stamp = now;
    if (cfg_.pelt_balance) {
      // post_init_entity_util_avg(): half the spare capacity, or less by the task's weight's
      // share of the CPU's load when the CPU is already used.
      const double cpu_u = static_cast<double>(cpu_util(p));
      const double cap = (static_cast<double>(kCapacityScale) - cpu_u) / 2;
      e.util = cap <= 0 ? 0.0 : cpu_u == 0 ? cap : std::min(cap, cpu_u * e.weight / (static_cast<double>(cpu_load(p)) + 1));
      e.util_stamp = now;
    }
  } else {
    if (e.last_rq != kNoPcpu && e.last_rq != p) {
      // migrate_task_rq_fair() (TASK_WAKING) subtracts the old min_vruntime, enqueue_entity()
      // (ENQUEUE_MIGRATED) adds the new one; the task is no longer cache hot. (The old
      // runqueue's clock is brought up to date first, as its tick would have kept it.)
      update_curr(e.last_rq, now);
      e.vruntime += q.min_vruntime - cfs_rq_at(v, e.last_rq).min_vruntime;
      e.exec_start = kLongAgo;
      ++wake_migrations_;
    }
    // place_entity(initial = 0): an entity within latency/2 of min_vruntime keeps its vruntime
    // (no gain from a short sleep); one further behind comes back at most latency/2
    // (GENTLE_FAIR_SLEEPERS; a full latency without it) behind min_vruntime.
    const sim::Duration thresh = cfg_.gentle_fair_sleepers ? latency_ / 2 : latency_;
    e.vruntime = std::max(e.vruntime, q.min_vruntime - thresh);
  }
  enqueue_task(p, v, now);
  // ttwu_do_wakeup(): the idle period this wake-up ends feeds rq->avg_idle (update_avg, 1/8),
  // capped at 2 * max_idle_balance_cost (MODEL: balancing costs no time, so that is
  // 2 * migration_cost).
  if (rq.idle_stamp != kNoStamp) {
    const sim::Duration delta = now - rq.idle_stamp;
    rq.avg_idle += (delta - rq.avg_idle) / 8;
    rq.avg_idle = std::min(rq.avg_idle, 2 * cfg_.migration_cost);
    rq.idle_stamp = kNoStamp;
  }
  check_preempt_curr(p, v, now, std::exchange(wake_cpu_, kNoPcpu));
}

void Cfs::sleep(VcpuId v, sim::Time now) {
  clock_ = now;
  // dequeue_entity(DEQUEUE_SLEEP): the absolute vruntime is kept for place_entity at wake-up.
  Entity& e = ents_[v];
  if (!e.on_rq) return;
  const PcpuId p = e.rq;
  update_curr(p, now);
  dequeue_task(p, v, /*sleep=*/true, now);
}

int Cfs::yield(VcpuId v, VcpuId to, sim::Time now) {
  clock_ = now;
  Entity& e = ents_[v];
  if (!e.on_rq || running_curr(e.rq) != v) return 0;
  const PcpuId p = e.rq;
  Runqueue& rq = rqs_[p];
  const auto yield_task_fair = [&] {
    if (rq.nr_running == 1) return;  // "Are we the only task in the tree?"
    clear_buddies(p, v);
    update_curr(p, now);
    set_buddy(p, v, &CfsRq::skip);
  };
  if (to == kIdle || to >= nv_ || to == v) {
    yield_task_fair();  // sched_yield()
    if (rq.nr_running > 1) rq.need_resched = true;
    return 0;
  }
  // yield_to(p, preempt = true), as kvm_vcpu_yield_to() calls it; its return value, with 3.9's
  // -ESRCH ("sched: Bail out of yield_to when source and target runqueue has one task"). 3.10
  // still declares it bool, so its caller sees that as true (hypervisor/ple.cpp).
  const Entity& t = ents_[to];
  const PcpuId tp = t.on_rq ? t.rq : t.last_rq;
  if (rq.nr_running == 1 && tp != kNoPcpu && rqs_[tp].nr_running == 1) return -1;  // -ESRCH
  if (!t.on_rq || running_curr(tp) == to) return 0;  // blocked (p->state) or running: nothing
  set_buddy(tp, to, &CfsRq::next);  // yield_to_task_fair(): set_next_buddy(target)
  yield_task_fair();
  if (tp != p) {
    // resched_task(p_rq->curr), preempt = true: a reschedule IPI to the target's pCPU, whose
    // current entity runs on until it arrives (SchedActions::resched_remote).
    rqs_[tp].need_resched = true;
    act_->resched_remote(tp);
  }
  rq.need_resched = true;  // yielded > 0: schedule()
  return 1;
}

// ----------------------------------------------------------------------------------------------
// Hooks: pick, commit.

hv::Pick Cfs::pick_next(PcpuId p, sim::Time now, const hv::PickFilter& f) {
  clock_ = now;
  newidle_[p].levels = 0;  // this pick's newidle_balance, if it runs one
  Runqueue& rq = rqs_[p];
  Decision d;
  update_curr(p, now);
  // entity_tick()'s update_cfs_group(curr), here at the pick that stands for the tick.
  if (rq.curr != kNil && !is_task(rq.curr) && ents_[rq.curr].on_rq) {
    const std::uint32_t g = (rq.curr - nv_) / np_;
    update_group_avg(g, p, now);
    update_cfs_group(g, p);
  }
  const VcpuId curr = running_curr(p);
  d.prev = curr;
  const bool curr_ok = curr != kNil && f.allows(hv_->vcpu(curr));
  // A fresh pick (core scheduling's pick_task on a sibling, or after resched_curr) lets the
  // running entity compete by vruntime alone: pick_next_entity(cfs_rq, curr), no tick check.
  bool resched = rq.need_resched || (curr != kNil && !curr_ok) || (curr != kNil && f.fresh);
  if (rq.active_balance) {
    // The stopper (active_load_balance_cpu_stop) runs here first and pushes one entity, from the
    // cold end of cfs_tasks, to push_cpu; the push itself happens at commit.
    d.active_done = true;
    d.push = push_candidate(p);
    if (d.push != kNil && d.push == curr) resched = true;
  }
  if (curr_ok && !resched && now >= rq.armed_end) {
    VcpuId past = kNil;
    if (tick_preempts(p, past)) {
      resched = true;
      d.tick = true;
      d.clear_buddies_of = past;
    }
  }
  VcpuId se = kNil;
  if (curr_ok && !resched) {
    se = curr;
    d.keep = true;
  } else {
    se = pick_next_entity(p, curr_ok && curr != d.push ? curr : kNil, d.push, f);
    d.keep = se != kNil && se == curr;
    d.picked = se != kNil;
    d.restart = d.keep && f.core;
    d.whole_switch = !d.keep && (f.core || f.fresh);
    if (se == kNil) {
      // Nothing runnable here for this pick. An empty runqueue balances newly idle
      // (balance_fair -> newidle_balance; under a cookie filter only a matching entity can be
      // used). A runqueue that holds entities the cookie filter refuses is core scheduling's
      // forced idle: sched_core_balance steals an entity of the core's cookie instead.
      VcpuId pulled = kNil;
      PcpuId src = kNoPcpu;
      const bool forced_idle = rq.nr_running > (d.push != kNil && ents_[d.push].rq == p ? 1u : 0u);
      // Core scheduling's pick_task for a sibling (fresh, not the picking CPU's own pick) does no
      // balancing: pick_next_task balances only the local rq (put_prev_task_balance).
      const bool sibling_pick = f.fresh && !f.core;
      if (!forced_idle && !sibling_pick && newidle_choose(p, f, pulled, src, newidle_[p])) {
        se = pulled;
        d.pull_from = src;
      } else if (forced_idle && (pulled = steal_cookie(p, f, src)) != kNil) {
        se = pulled;
        d.pull_from = src;
        d.steal = true;
      }
    }
  }
  d.vcpu = se;
  if (se != kNil && !grqs_.empty()) {
    d.slice = group_slice(p, se, d, now);
  } else if (se != kNil) {
    // The slice to arm, for the state the commit will create: se running, the previous entity
    // requeued (unless it blocked or is pushed), a pushed entity gone, a pulled one added.
    const Entity& e = ents_[se];
    std::uint32_t nr = rq.nr;
    std::uint64_t load = rq.load;
    const bool push_here = d.push != kNil && ents_[d.push].on_rq && ents_[d.push].rq == p;
    if (push_here) {
      --nr;
      load -= ents_[d.push].weight;
    }
    std::int64_t v = e.vruntime;
    if (d.pull_from != kNoPcpu) {
      ++nr;
      load += e.weight;
      v += rq.min_vruntime - rqs_[d.pull_from].min_vruntime;
    }
    VcpuId left = tree_best_except(rq, se, d.push);
    bool has_left = left != kNil;
    std::int64_t left_v = has_left ? ents_[left].vruntime : 0;
    if (curr != kNil && curr != se && curr != d.push && (!has_left || ents_[curr].vruntime < left_v)) {
      has_left = true;
      left_v = ents_[curr].vruntime;
    }
    const sim::Duration ran = d.keep && !d.restart ? e.sum_exec - e.prev_sum_exec : 0;
    const sim::Time due =
        next_tick_at_or_after(preempt_due(now, nr, slice_of(nr, load, e.weight), e.weight, ran, has_left, v - left_v), now);
    d.slice = due == sim::kNever ? 0 : due - now;
  }
  decision_[p] = d;
  return {se == kNil ? kIdle : se, d.slice, d.keep && !d.picked && !d.active_done};
}

sim::Duration Cfs::group_slice(PcpuId p, VcpuId se, const Decision& d, sim::Time now) const {
  // pick_next's slice with task groups: check_preempt_tick's earliest instant at each level of
  // se's hierarchy (its group runqueue, then the root), for the state the commit will create:
  // se (and its group entity) current, the entity each level runs now requeued unless it blocked.
  // MODEL: with a pull or a push in the commit the slice ends at the next tick, where the exact
  // rule is evaluated on the new state (an early re-check costs nothing but an event).
  if (d.pull_from != kNoPcpu || d.push != kNil) {
    const sim::Time tick = next_tick_at_or_after(now + 1, now);
    return tick - now;
  }
  sim::Time due = sim::kNever;
  const auto level = [&](const CfsRq& q, VcpuId x, bool keep) {
    const Entity& e = ents_[x];
    VcpuId left = tree_best_except(q, x, kNil);
    bool has_left = left != kNil;
    std::int64_t left_v = has_left ? ents_[left].vruntime : 0;
    if (q.curr != kNil && q.curr != x && ents_[q.curr].on_rq && (!has_left || ents_[q.curr].vruntime < left_v)) {
      has_left = true;
      left_v = ents_[q.curr].vruntime;
    }
    const sim::Duration ran = keep ? e.sum_exec - e.prev_sum_exec : 0;
    due = std::min(due, preempt_due(now, q.nr, entity_slice(p, x), e.weight, ran, has_left, e.vruntime - left_v));
  };
  const Runqueue& rq = rqs_[p];
  const VcpuId top = top_of(se, p);
  if (top != se) level(cfs_rq_at(se, p), se, d.keep && !d.restart);
  level(rq, top, rq.curr == top && !d.restart && !d.whole_switch);
  due = next_tick_at_or_after(due, now);
  return due == sim::kNever ? 0 : due - now;
}

void Cfs::put_back_top(PcpuId p, sim::Time now) {
  // put_prev_entity() of a group entity that stops being the root's current one (the smart path
  // of pick_next_task_fair leaves it current while its runqueue changes task).
  Runqueue& rq = rqs_[p];
  const VcpuId c = rq.curr;
  if (c == kNil || is_task(c)) return;
  update_curr(p, now);
  CfsRq& q = grqs_[c - nv_];
  if (q.curr != kNil) {
    if (ents_[q.curr].on_rq) q.timeline.insert(q.curr, ents_[q.curr].vruntime);
    q.curr = kNil;
  }
  if (ents_[c].on_rq) rq.timeline.insert(c, ents_[c].vruntime);
  rq.curr = kNil;
}

VcpuId Cfs::current_task(PcpuId p) const {
  VcpuId c = rqs_[p].curr;
  if (c != kNil && !is_task(c)) c = my_q(c).curr;
  return c;
}

void Cfs::put_prev(PcpuId p, VcpuId prev, sim::Time now) {
  clock_ = now;
  if (cfg_.pelt_balance && rqs_[p].running == prev) pelt_set_running(p, kNil);  // it stops running here
  // put_prev_entity(): a still-runnable task goes back into its runqueue's timeline. Its group
  // entity stays the root's current one until set_next knows whether the next task is of the
  // same group (put_back_top).
  CfsRq& q = cfs_rq_at(prev, p);
  if (q.curr != prev) return;
  if (ents_[prev].on_rq) {
    update_curr(p, now);
    q.timeline.insert(prev, ents_[prev].vruntime);
  }
  q.curr = kNil;
}

void Cfs::set_next(PcpuId p, VcpuId v, sim::Time now) {
  clock_ = now;
  Runqueue& rq = rqs_[p];
  Decision d = decision_[p];
  decision_[p] = Decision{};
  const VcpuId want = v == kIdle ? kNil : v;
  // The decision must still describe the world: v is the current entity (keep), queued here, or
  // queued on the runqueue it is pulled from. Otherwise (no caller does this today) commit v
  // as found, with the slice pick_next gave.
  bool valid = d.vcpu == want;
  if (valid && want != kNil) {
    const Entity& w = ents_[want];
    const PcpuId from = d.pull_from != kNoPcpu ? d.pull_from : p;
    valid = d.keep ? want == current_task(p) : (w.on_rq && w.rq == from && current_task(from) != want);
  }
  if (!valid) {
    const sim::Duration slice = d.vcpu == want ? d.slice : 0;
    d = Decision{};
    d.vcpu = want;
    d.slice = slice;
    d.keep = want != kNil && want == current_task(p);
    if (want != kNil && !d.keep && ents_[want].on_rq && ents_[want].rq != p) d.pull_from = ents_[want].rq;
    newidle_[p].levels = 0;  // the pick that balanced is not the one committed
  }
  if (d.tick && want != d.prev) ++tick_preemptions_;
  rq.need_resched = false;
  // newidle_balance's exits at each level it visited (its pull is d.pull_from, below).
  for (std::uint32_t l = 0; l < newidle_[p].levels; ++l) {
    apply_group_flag(p, l, newidle_[p].at[l]);
    apply_lb_exit(p, l, newidle_[p].at[l]);
  }
  newidle_[p].levels = 0;
  // check_preempt_tick(): "ran > ideal" also clears the preempted entity's buddy marks.
  if (d.clear_buddies_of != kNil && ents_[d.clear_buddies_of].on_rq && ents_[d.clear_buddies_of].rq == p)
    clear_buddies(p, d.clear_buddies_of);
  if (d.active_done) {
    rq.active_balance = false;
    if (d.push != kNil && d.push != want && ents_[d.push].on_rq && ents_[d.push].rq == p && current_task(p) != d.push &&
        rq.push_cpu != kNoPcpu) {
      const PcpuId target = rq.push_cpu;
      move_queued(d.push, p, target, now);
      ++active_migrations_;
      // Active balancing done, reset the failure counter of the target's domain spanning p.
      for (std::uint32_t l = 0; l < levels_.size(); ++l)
        if (spans_[levels_[l].span_of[target]].test(p)) {
          dom(target, l).nr_balance_failed = 0;
          break;
        }
    }
    rq.push_cpu = kNoPcpu;
  }
  if (want == kNil) {
    put_back_top(p, now);
    rq.curr = kNil;
    rq.armed_end = sim::kNever;
    note_idle(p, now);
    return;
  }
  if (d.pull_from != kNoPcpu) {
    move_queued(want, d.pull_from, p, now, /*check_preempt=*/false);
    ++(d.steal ? cookie_steals_ : newidle_pulls_);
    rq.idle_stamp = kNoStamp;  // newidle_balance(): "if (pulled_task) this_rq->idle_stamp = 0"
  }
  Entity& e = ents_[want];
  const VcpuId top = top_of(want, p);
  if (!d.keep) {
    // set_next_entity() at each level that changes: out of the timeline, the slice starts now;
    // the task becomes MRU in cfs_tasks. A group entity already current stays so (its slice
    // goes on: pick_next_task_fair's smart path), except under core scheduling, whose
    // pick_next_task puts the whole hierarchy and ends in set_next_task(rq, next), and a
    // sibling taking its core_pick does "put_prev_task(rq, prev); set_next_task(rq, next)":
    // set_next_entity at every level, so the group entity starts a new slice too.
    if (rq.curr == top && top != want && d.whole_switch) ents_[top].prev_sum_exec = ents_[top].sum_exec;
    if (rq.curr != top) {
      put_back_top(p, now);
      if (top != want) {
        Entity& ge = ents_[top];
        rq.timeline.erase(top);
        rq.curr = top;
        ge.exec_start = now;
        ge.prev_sum_exec = ge.sum_exec;
      }
    }
    CfsRq& q = cfs_rq_at(want, p);
    q.timeline.erase(want);
    q.curr = want;
    e.exec_start = now;
    e.prev_sum_exec = e.sum_exec;
    lru_unlink(p, want);
    lru_push_front(p, want);
  }
  if (d.keep && d.restart) {
    // Core scheduling's set_next_task(rq, next) for the task that ran: set_next_entity at every
    // level of its hierarchy, so each starts a new slice (update_curr ran at the pick).
    e.prev_sum_exec = e.sum_exec;
    if (top != want) ents_[top].prev_sum_exec = ents_[top].sum_exec;
  }
  if (d.picked) {  // pick_next_entity() clears the chosen entity's marks, at each level
    if (top != want) clear_buddies(p, top);
    clear_buddies(p, want);
  }
  rq.armed_end = d.slice > 0 ? now + d.slice : sim::kNever;
  if (cfg_.pelt_balance) pelt_set_running(p, want);
}

void Cfs::move_queued(VcpuId v, PcpuId src, PcpuId dst, sim::Time now, bool check_preempt) {
  // detach_task() + attach_task(): dequeue_entity(0) leaves the vruntime relative to the source's
  // min_vruntime, enqueue_entity(0) adds the destination's; no sleeper placement (a group
  // entity that enters the destination's root is placed as a waking one, enqueue_task).
  Entity& e = ents_[v];
  update_curr(src, now);
  dequeue_task(src, v, /*sleep=*/false, now);
  e.exec_start = kLongAgo;  // migrate_task_rq_fair(): "We have migrated, no longer consider this task hot"
  update_curr(dst, now);
  e.vruntime += cfs_rq_at(v, dst).min_vruntime;
  enqueue_task(dst, v, now);
  if (check_preempt) check_preempt_curr(dst, v, now);
}

double Cfs::core_priority(PcpuId p, VcpuId v, hv::CorePrio how) const {
  const Entity& e = ents_[v];
  const PcpuId r = e.on_rq ? e.rq : p;
  const VcpuId top = top_of(v, r);
  switch (how) {
    case hv::CorePrio::kRaw: return -static_cast<double>(ents_[top].vruntime);
    case hv::CorePrio::kCore: return -static_cast<double>(ents_[top].vruntime - rqs_[r].min_vruntime);
    case hv::CorePrio::kLeaf: return -static_cast<double>(e.vruntime - cfs_rq_at(v, r).min_vruntime);
  }
  return 0.0;
}

void Cfs::on_timer(hv::TimerId t, sim::Time now) {
  clock_ = now;
  if (t < rqs_.size() && usable_.test(t)) rebalance_domains(t, now);
}

std::string Cfs::check_consistency() const {
  const auto at = [](const char* what, std::uint64_t i) { return std::string(what) + " " + std::to_string(i); };
  const std::size_t nq = rqs_.size() + grqs_.size();  // root runqueues, then group runqueues
  std::vector<std::uint32_t> nr(nq, 0), tasks(rqs_.size(), 0);
  std::vector<std::uint64_t> load(nq, 0);
  const auto q_index = [&](VcpuId se, PcpuId p) -> std::size_t {
    return is_task(se) && group_of(se) != kNoGroup ? rqs_.size() + group_of(se) * np_ + p : p;
  };
  const auto q_of = [&](std::size_t i) -> const CfsRq& {
    return i < rqs_.size() ? static_cast<const CfsRq&>(rqs_[i]) : grqs_[i - rqs_.size()];
  };
  for (VcpuId v = 0; v < ents_.size(); ++v) {
    const Entity& e = ents_[v];
    const bool queued = heap_pos_[v] != Timeline::kNotQueued;
    if (!e.on_rq) {
      if (queued) return at("blocked entity in a timeline:", v);
      continue;
    }
    if (!usable_.test(e.rq)) return at("entity on an unusable runqueue:", v);
    if (is_task(v)) {
      if (!hv_->vcpu(v).hard.test(e.rq)) return at("entity on a runqueue outside its hard affinity:", v);
      ++tasks[e.rq];
    } else if (grqs_[v - nv_].nr == 0) {
      return at("group entity queued with an empty runqueue:", v);
    }
    const std::size_t qi = q_index(v, e.rq);
    ++nr[qi];
    load[qi] += e.weight;
    const CfsRq& q = q_of(qi);
    const bool is_curr = q.curr == v;
    if (is_curr == queued) return at(is_curr ? "current entity in its timeline:" : "waiting entity not in its timeline:", v);
    if (queued) {
      const Timeline& t = q.timeline;
      if (heap_pos_[v] >= t.size() || t.slot(heap_pos_[v]).v != v) return at("timeline index broken for", v);
      if (t.slot(heap_pos_[v]).vruntime != e.vruntime) return at("timeline key differs from vruntime for", v);
    }
  }
  for (std::size_t i = 0; i < nq; ++i) {
    const CfsRq& q = q_of(i);
    if (q.nr != nr[i]) return at("nr_running wrong on runqueue", i);
    if (q.load != load[i]) return at("load wrong on runqueue", i);
    const std::uint32_t curr_on = q.curr != kNil && ents_[q.curr].on_rq ? 1 : 0;
    if (q.timeline.size() + curr_on != nr[i]) return at("timeline size wrong on runqueue", i);
    for (std::uint32_t k = 1; k < q.timeline.size(); ++k)
      if (Timeline::less(q.timeline.slot(k), q.timeline.slot((k - 1) / 2))) return at("heap order broken on runqueue", i);
    const PcpuId p = static_cast<PcpuId>(i < rqs_.size() ? i : (i - rqs_.size()) % np_);
    for (VcpuId b : {q.next, q.last, q.skip})
      if (b != kNil && (!ents_[b].on_rq || ents_[b].rq != p || q_index(b, p) != i)) return at("stale buddy on runqueue", i);
    if (i >= rqs_.size()) {
      const VcpuId gse = nv_ + static_cast<VcpuId>(i - rqs_.size());
      if (ents_[gse].on_rq != (nr[i] > 0)) return at("group entity's queued state wrong for runqueue", i);
      if (q.curr != kNil && rqs_[p].curr != gse) return at("group runqueue current while its entity is not:", i);
    }
  }
  for (std::uint32_t g = 0; g < tg_load_.size(); ++g) {
    std::uint64_t sum = 0;
    for (PcpuId p = 0; p < np_; ++p) sum += grq(g, p).contrib;
    if (sum != tg_load_[g]) return at("group load sum wrong for group", g);
  }
  for (PcpuId p = 0; p < rqs_.size(); ++p) {
    const Runqueue& rq = rqs_[p];
    if (rq.nr_running != tasks[p]) return at("nr_running (tasks) wrong on", p);
    std::uint32_t n = 0;
    for (VcpuId v = rq.lru_head; v != kNil; v = ents_[v].lru_next) {
      if (!ents_[v].on_rq || ents_[v].rq != p || ++n > tasks[p]) return at("cfs_tasks list wrong on", p);
      if (ents_[v].lru_next == kNil && rq.lru_tail != v) return at("cfs_tasks tail wrong on", p);
    }
    if (n != tasks[p]) return at("cfs_tasks list short on", p);
    if (!usable_.test(p)) continue;
    if (idle_.test(p) != (tasks[p] == 0)) return at("idle mask wrong for", p);
    if (overloaded_.test(p) != (tasks[p] >= 2)) return at("overload mask wrong for", p);
    const bool core_idle = (hv_->topology().smt_mask(p) & usable_).subset_of(idle_);
    if (idle_cores_.test(hv_->topology().core_of(p)) != core_idle) return at("idle-core mask wrong for", p);
  }
  for (std::uint32_t id = 0; id < spans_.size(); ++id) {
    SpanSums su;
    (spans_[id] & usable_).for_each([&](PcpuId p) {
      ++su.weight;
      su.nr += tasks[p];
      su.load += load[p];
      su.idle += tasks[p] == 0 ? 1 : 0;
    });
    const SpanSums& have = sums_[id];
    if (su.weight != have.weight || su.nr != have.nr || su.load != have.load || su.idle != have.idle)
      return at("span sums wrong for span", id);
  }
  if (cfg_.pelt_balance) {
    // PELT: each runqueue's averages are the sums of their entities' (queued root-level
    // entities' load averages; attached tasks' utilisations), all aged to now.
    std::vector<double> pl(rqs_.size(), 0.0), pu(rqs_.size(), 0.0);
    for (VcpuId v = 0; v < ents_.size(); ++v) {
      const Entity& e = ents_[v];
      if (e.on_rq && q_index(v, e.rq) == e.rq)
        pl[e.rq] += load_avg_at(e, hv_->now());
      if (is_task(v) && e.on_rq && e.util_rq != e.rq) return at("queued task's utilisation attached elsewhere:", v);
      if (is_task(v) && e.util_rq != kNoPcpu) {
        if (e.util_rq >= rqs_.size()) return at("utilisation attached to no runqueue:", v);
        pu[e.util_rq] += util_avg_at(v, hv_->now());
      }
    }
    for (PcpuId p = 0; p < rqs_.size(); ++p) {
      const Runqueue& rq = rqs_[p];
      if (rq.running != kNil && (!is_task(rq.running) || ents_[rq.running].util_rq != p))
        return at("PELT's running task not attached to", p);
      const double load = rq_load_avg_at(p, hv_->now());
      const double util = rq_util_avg_at(p, hv_->now());
      // The sums are kept by additions and subtractions: they drift by rounding over a run.
      if (std::fabs(load - pl[p]) > 1e-6 * std::max(1.0, load) + 1e-3) return at("PELT load average wrong on", p);
      if (std::fabs(util - pu[p]) > 1e-6 * std::max(1.0, util) + 1e-3) return at("PELT utilisation average wrong on", p);
    }
  }
  return "";
}

void Cfs::dump(std::ostream& os) const {
  os << "cfs latency=" << latency_ << "ns min_granularity=" << min_gran_ << "ns wakeup_granularity=" << wakeup_gran_
     << "ns nr_latency=" << nr_latency_ << " hz=" << cfg_.hz << " levels=" << levels_.size() << "\n";
  for (PcpuId p = 0; p < rqs_.size(); ++p) {
    const Runqueue& rq = rqs_[p];
    if (rq.nr_running == 0) continue;
    os << "  cpu " << p << ": nr_running=" << rq.nr_running << " entities=" << rq.nr << " load=" << rq.load
       << " min_vruntime=" << rq.min_vruntime
       << " curr=";
    if (rq.curr == kNil) os << "-";
    else os << rq.curr << "(v=" << ents_[rq.curr].vruntime << ")";
    os << " queued=" << rq.timeline.size() << "\n";
  }
  os << "  preemptions: wakeup=" << wakeup_preemptions_ << " tick=" << tick_preemptions_
     << "; migrations: wake=" << wake_migrations_ << " newidle=" << newidle_pulls_
     << " periodic=" << balance_migrations_ << " active=" << active_migrations_ << " cookie_steal=" << cookie_steals_
     << "\n";
}

}  // namespace vcpusim::policy
