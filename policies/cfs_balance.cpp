// SPDX-License-Identifier: MIT
// Cfs, part two: scheduling domains, CPU selection and load balancing, after kernel/sched/
// topology.c (sd_init, the default x86 topology levels, sched_init_numa) and kernel/sched/fair.c
// (select_task_rq_fair, select_idle_sibling, find_idlest_cpu, load_balance, find_busiest_group,
// calculate_imbalance, find_busiest_queue, detach_tasks, active_load_balance_cpu_stop,
// rebalance_domains, newidle_balance) of 5.6/5.7, with the 5.1-5.9 constants. cfs.cpp has the
// overview, the parameters and the runqueue itself.
//
// Domains
// -------
// Every usable CPU gets the same ladder of levels, degenerate ones dropped (a level is kept if it
// is strictly wider than the one below for some CPU): SMT (the core's threads), MC (the last-level
// cache, Topology::llc_mask: the socket on Intel parts, by default a node within a socket, a
// 4-core CCX on the Rome preset, cores_per_llc), DIE (the node, cpu_cpu_mask: distinct where a
// node holds several LLCs, as a Rome NPS4 quadrant holds two CCXs, or several sockets. MODEL:
// x86 drops DIE when nodes lie inside a package and its first NUMA level spans the node; here
// that level has DIE's imbalance_pct and cache_nice_tries), then one NUMA level per distinct SLIT distance
// (the nodes within that distance, sched_init_numa). Per level (sd_init): imbalance_pct SMT 110,
// MC 117, DIE/NUMA 125; cache_nice_tries 0/1/1/2; balance_interval from the span's CPU count in
// ms (min = span, max = 2 x span), x busy_factor (32) on a busy CPU, in jiffies clamped to
// [1, HZ * ncpus / 10]; SD_PREFER_SIBLING on every non-NUMA level (read from the child level:
// sds->prefer_sibling); NUMA levels farther than node_reclaim_distance lose SD_BALANCE_FORK.
// The groups of a level are the spans of the level below (single CPUs for SMT).
//
// CPU selection (select_task_rq_fair)
// -----------------------------------
// A wake-up takes 5.10's fast path (read: v5.10-era fair.c text and the 5.15 patch that moved
// recent_used_cpu, Mel Gorman 2021-08). With a waker (HypervisorView::wake_source: the entity
// that kicked, the pCPU it was on, WF_SYNC), record_wakee counts the waker's wakee flips (halved
// once per HZ), and want_affine = !wake_wide (factor sd_llc_size) && the waker's CPU is allowed;
// the first domain of the waker's CPU with SD_WAKE_AFFINE (every level but NUMA levels beyond
// node_reclaim_distance, Level::fork) that spans prev runs wake_affine: WA_IDLE (waker's CPU
// idle and cache-affine -> prev if idle else it; sync and the waker alone -> the waker's CPU;
// 5.11's "prev idle -> prev", d8fcb81f1acf, is not in it), then WA_WEIGHT (wake_affine_weight, WA_BIAS with half the
// level's imbalance_pct; MODEL loads below), else prev. Then select_idle_sibling(p, prev,
// target): target if idle (nothing running or queued); nothing idle in target's LLC -> target;
// prev if idle and cache-affine; p->recent_used_cpu if idle, cache-affine, allowed (and it
// becomes prev); else the first fully idle core of the LLC (select_idle_core, scanning cores
// from target's, with a thread in the hard affinity), else the first idle thread of the LLC from
// target on (select_idle_cpu), else target. With want_affine the WAKER's recent_used_cpu becomes
// its CPU (5.10: current->recent_used_cpu; 5.15 changed it). Without a waker (a timer, a device)
// the wake-up runs on prev: target = prev, no flips counted. A first wake-up is a fork (wake_up_new_task,
// which also sets recent_used_cpu to the parent's CPU,
// SD_BALANCE_FORK): find_idlest_cpu walks down from the highest fork level, at each level
// choosing the idlest group (most idle CPUs among groups with spare capacity, lowest load among
// busy ones) unless the local group is as good -- at a NUMA level the local node is kept while it
// has any idle CPU -- and then the group's first idle CPU or least loaded one.
//
// Load balancing
// --------------
// Newly idle: when a pCPU has nothing to run, pick_next chooses what newidle_balance would pull:
// unless its avg_idle is below migration_cost or no runqueue is overloaded, each level from the
// bottom runs load_balance(CPU_NEWLY_IDLE): find_busiest_group / find_busiest_queue, and the
// first entity detach_tasks would take (from the cold end of the busiest runqueue's cfs_tasks: not
// running, allowed here, not cache-hot unless the level failed more than cache_nice_tries times)
// ends the walk. set_next moves it, and applies each visited level's exit: a balanced level
// clears its failure count, none is counted, past cache_nice_tries + 2 failures an active balance
// is kicked, and the interval resets or doubles as the periodic balancer's would.
// Periodic: a policy timer per CPU (TimerId = pCPU) fires at rq->next_balance on the tick grid;
// rebalance_domains walks the levels bottom-up, balancing each whose interval has passed;
// should_we_balance lets only the first idle CPU of the local group (else its first CPU) go on.
// load_balance classifies groups (has_spare / fully_busy / overloaded), picks the busiest and
// the imbalance as the 5.5+ balancer does (migrate tasks / util / load, prefer_sibling spreads
// task counts, a NUMA pair is left alone while the busiest runs <= 2 tasks), finds the busiest
// runqueue and detaches up to the imbalance (at most nr_migrate examined, entities it cannot move
// rotated to the head), retrying without a runqueue whose entities are all pinned elsewhere.
// Affinity: an entity that may not come to this CPU but may run on another CPU of its group is
// revisited for that CPU (LBF_DST_PINNED, new_dst_cpu) while imbalance is left; a balance that
// stays short for affinity (LBF_SOME_PINNED) marks the group imbalanced one level up
// (sgc->imbalance), where group_classify then calls it group_imbalanced and the balancer there
// moves any one task from it (force_balance); a later balance that finds balance clears it. When
// nothing moved, nr_balance_failed grows, and beyond cache_nice_tries + 2 an active balance asks
// the busiest CPU's stopper to push its coldest movable entity (its running one, if alone) here:
// the busiest pCPU is tickled, its pick_next chooses the push, set_next moves it. Intervals reset
// to the minimum when an imbalance was found and double (to the maximum) when balanced.
// An idle CPU's balancing runs at its idle interval, standing in for the nohz idle balancer
// that busy CPUs kick on behalf of tickless idle ones (nohz_balancer_kick).
//
// Spreading busy tasks over cores
// --------------------------------
// No rule here targets SMT siblings: spreading is a consequence of the rules above, as in the
// kernel. Forks fill every core of an LLC before pairing siblings (find_idlest_group at MC: the
// group with the most idle CPUs), and a wake-up takes a fully idle core before an idle sibling
// (select_idle_core). Running tasks left paired while a core idles (nothing queued anywhere)
// move only by active balance: the idle core's balancing CPU sees a has_spare local group and
// a fully busy core with 2 > 0 + 1 tasks (prefer_sibling forces it; the idle-CPU rule would give
// the same imbalance of 1), the busiest runqueue has nothing to detach, and the failure that
// takes nr_balance_failed above cache_nice_tries + 2 kicks the stopper (tests: CfsBalance.
// BusyTasksSpreadOnePerCoreBeforePairingSiblings, TwiceAsManyBusyTasksAsCoresKeepEveryThreadBusy).
// Across nodes this is slow, and it is 5.5-5.10's behaviour, not a shortcut of the model: a
// fork stays on its node while the node has an idle CPU, so busy tasks forked together fill one
// node's siblings first ("a local node can be allowed to fill completely and allow the periodic
// load balancer to fix the problem", Mel Gorman, "sched: Limit the amount of NUMA imbalance that
// can exist at fork time", Nov 2020, measured on 80 CPUs and two nodes; merged for 5.11). The
// NUMA level then pushes one running task per cache_nice_tries + 3 = 5 failed balances, and
// after each push the next idle CPU of the node (should_we_balance) starts counting from zero:
// on 80 CPUs (intervals 80-160 ms) one task per 320-480 ms, about 10 s to drain 20 (test:
// CfsBalance.ForkPackedNodeDrainsOneRunningTaskPerFiveNumaBalances).
//
// Core scheduling (the dispatcher's mechanism, hypervisor/core_sched.cpp)
// --------------------------------------------------------------------------
// With cookie-aware wake-up on, select_idle_cpu passes over idle threads whose core runs another
// cookie (HypervisorView::wake_cookie_match; 5.14's __select_idle_cpu); an idle prev and a fully
// idle core are taken without the test, as in the kernel. With a cookie-aware balance mode, an
// entity whose cookie does not match the destination core counts as cache-hot
// (HypervisorView::balance_cookie_match; 5.14 task_hot), so it moves only once the level has
// failed more than cache_nice_tries times -- except between SMT siblings, where 5.14's task_hot
// answers "cold" before the cookie test. A forced-idle pCPU steals an entity of the core's
// cookie (steal_cookie: sched_core_balance, try_steal_cookie).
//
// MODEL simplifications
// ---------------------
// - MODEL: the view does not say whether the balance mode refuses a mismatched pull outright
//   (RFC v5-v9's can_migrate_task) or calls it cache-hot (mainline); this policy always does the
//   latter.
// - Loads: with `balance_load: pelt` (the default) the balancer reads PELT's averages as 5.5/5.6
//   do (cfs.cpp, "PELT for the balancer"): cpu_runnable_load for a CPU's load, cpu_util (blocked
//   tasks' utilisation included) for its utilisation, task_h_load and task_util for a task's.
//   With `instant` (3.10's weighted_cpuload = rq->load.weight, without its cpu_load[] indices):
//   no PELT. A CPU's load is the sum of its runnable entities' weights
//   now, a task's load its weight, or under task groups its weight times its group entity's
//   share of its group runqueue's load (task_h_load), a busy CPU's utilisation its full capacity
//   and an idle one's 0 (cpu_util), an entity's utilisation one CPU (task_util_est).
//   find_busiest_queue for migrate_util, where every busy CPU's capped utilisation then ties,
//   takes the one with the most runnable entities (with PELT: the highest utilisation among
//   CPUs running more than one task).
// - wake_affine_weight: with PELT, 5.5's text (prev's load less the wakee's task_h_load, which
//   runnable_load_avg does not hold while it sleeps). MODEL (`instant`): the runqueues' summed
//   weights, with nothing taken from prev. Either way the waker counts as current only while on
//   the waker CPU's runqueue, and capacities are equal, so they cancel.
// - MODEL: a kick delivered after a latency (a PV kick after kick_latency, a wake IPI after
//   wake_ipi) is placed at delivery, with the waker's pCPU as it was when sent; the kernel places
//   it inside the waker's exit, so the waker may have halted meanwhile (then its CPU is idle and
//   WA_IDLE treats the wake-up like an interrupt's). A timer wake-up's interrupted task does not
//   record_wakee; there are no per-CPU kthread wakers (select_idle_sibling's kworker step).
// - MODEL: select_idle_cpu scans the whole LLC (SIS_PROP's depth depends on
//   measured scan cost), which makes the final select_idle_smt step unreachable; the
//   has_idle_cores hint is always exact.
// - MODEL: forks come from the lowest CPU of the entity's hard affinity (as if QEMU's main thread
//   ran there); find_idlest_group_cpu takes the first idle CPU (no C-state exit latencies or
//   idle timestamps); avg_load is computed for busy groups as update_sg_wakeup_stats' comment says.
// - MODEL: newly-idle balancing pulls one entity (CONFIG_PREEMPTION kernels stop after the
//   first; voluntary-preemption ones may take more) and has no per-domain cost cut-off
//   (max_newidle_lb_cost: balancing takes no time here), so it visits every level until one
//   pulls. Its effects on the domains' failure counters, intervals, group-imbalance flags and
//   stoppers are decided at the pick and applied when the pick commits (a pick not committed
//   leaves none), so the levels above a flag it sets see that flag from the next balance on.
// - MODEL: no misfit or asym packing groups; the stopper skips the cache-hot test only
//   through the failure counter, as the kernel does.
// - MODEL: a balanced or pushed entity keeps Vcpu::pcpu at its last pCPU until it runs again
//   (the policy API has no migrate hook to tell the dispatcher).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "policies/cfs.h"

namespace vcpusim::policy {

using namespace cfs;  // NOLINT: this file is cfs
using hv::kIdle;
using hv::kNoPcpu;
using hv::PcpuId;
using hv::VcpuId;

namespace {
/// MAX_PINNED_INTERVAL: how far the balance interval may back off while everything is pinned.
constexpr std::uint32_t kMaxPinnedInterval = 512;
}  // namespace

// ----------------------------------------------------------------------------------------------
// Domains.

void Cfs::build_domains() {
  const topo::Topology& topo = hv_->topology();
  const std::uint32_t np = topo.num_threads();
  levels_.clear();
  spans_.clear();
  groups_of_.clear();
  single_span_.assign(np, 0);
  llc_threads_.assign(np, topo::CpuSet{});
  llc_cores_.assign(np, topo::CpuSet{});

  usable_.for_each([&](PcpuId p) {
    single_span_[p] = static_cast<std::uint32_t>(spans_.size());
    spans_.push_back(topo::CpuSet::single(p));
    llc_threads_[p] = topo.llc_mask(p) & usable_;
    llc_threads_[p].for_each([&](PcpuId q) { llc_cores_[p].set(topo.core_of(q)); });
  });

  // Candidate levels, bottom-up, each a span per CPU.
  struct Candidate {
    LevelKind kind;
    double distance;  // NUMA levels: the SLIT distance they reach
  };
  std::vector<Candidate> cands = {{LevelKind::kSmt, 0}, {LevelKind::kMc, 0}, {LevelKind::kDie, 0}};
  std::vector<double> dists;
  for (std::uint32_t a = 0; a < topo.num_nodes(); ++a)
    for (std::uint32_t b = 0; b < topo.num_nodes(); ++b)
      if (a != b) dists.push_back(topo.distance(a, b));
  std::sort(dists.begin(), dists.end());
  dists.erase(std::unique(dists.begin(), dists.end()), dists.end());
  for (double d : dists) cands.push_back({LevelKind::kNuma, d});

  const auto span_for = [&](const Candidate& c, PcpuId p) {
    switch (c.kind) {
      case LevelKind::kSmt: return topo.smt_mask(p) & usable_;
      case LevelKind::kMc: return llc_threads_[p];
      case LevelKind::kDie: return topo.threads_of_node(topo.node_of(p)) & usable_;
      case LevelKind::kNuma: break;
    }
    topo::CpuSet s;
    for (std::uint32_t n = 0; n < topo.num_nodes(); ++n)
      if (topo.distance(topo.node_of(p), n) <= c.distance) s |= topo.threads_of_node(n);
    return s & usable_;
  };

  std::vector<topo::CpuSet> below(np);
  usable_.for_each([&](PcpuId p) { below[p] = topo::CpuSet::single(p); });
  for (const Candidate& c : cands) {
    std::vector<topo::CpuSet> span(np);
    bool wider = false;
    usable_.for_each([&](PcpuId p) {
      span[p] = span_for(c, p) | below[p];  // a domain spans its child
      if (span[p] != below[p]) wider = true;
    });
    if (!wider) continue;
    Level lv;
    lv.kind = c.kind;
    switch (c.kind) {
      case LevelKind::kSmt:
        lv.imbalance_pct = kImbalancePctSmt;
        lv.cache_nice_tries = kCacheNiceTriesSmt;
        break;
      case LevelKind::kMc:
        lv.imbalance_pct = kImbalancePctMc;
        lv.cache_nice_tries = kCacheNiceTriesMc;
        break;
      case LevelKind::kDie:
        lv.imbalance_pct = kImbalancePctDie;
        lv.cache_nice_tries = kCacheNiceTriesDie;
        break;
      case LevelKind::kNuma:
        lv.imbalance_pct = kImbalancePctNuma;
        lv.cache_nice_tries = kCacheNiceTriesNuma;
        lv.numa = true;
        lv.fork = c.distance <= cfg_.reclaim_distance;
        break;
    }
    // sds->prefer_sibling = child && (child->flags & SD_PREFER_SIBLING): set on every level but
    // NUMA ones, read from the level below.
    lv.prefer_sibling = !levels_.empty() && levels_.back().kind != LevelKind::kNuma;
    lv.span_of.assign(np, 0);
    const std::uint32_t first_id = static_cast<std::uint32_t>(spans_.size());
    usable_.for_each([&](PcpuId p) {
      // CPUs sharing a span share its id: the span's lowest member has been seen first.
      const PcpuId q = span[p].first();
      if (q != p && span[q] == span[p]) {
        lv.span_of[p] = lv.span_of[q];
        return;
      }
      std::uint32_t id = first_id;
      while (id < spans_.size() && spans_[id] != span[p]) ++id;
      if (id == spans_.size()) spans_.push_back(span[p]);
      lv.span_of[p] = id;
    });
    levels_.push_back(std::move(lv));
    below = span;
  }

  // Groups of every span: the distinct spans of the level below among its members.
  groups_of_.assign(spans_.size(), {});
  for (std::uint32_t l = 0; l < levels_.size(); ++l) {
    std::vector<bool> done(spans_.size(), false);
    usable_.for_each([&](PcpuId p) {
      const std::uint32_t s = levels_[l].span_of[p];
      if (done[s]) return;
      done[s] = true;
      std::vector<std::uint32_t>& groups = groups_of_[s];
      spans_[s].for_each([&](PcpuId q) {
        const std::uint32_t g = child_span(q, l);
        if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
      });
    });
  }

  // Span sums (all runqueues are empty now) and, per CPU, the spans that contain it.
  sums_.assign(spans_.size(), SpanSums{});
  group_imbalance_.assign(spans_.size(), 0);
  spans_with_.assign(np, {});
  for (std::uint32_t id = 0; id < spans_.size(); ++id) {
    const topo::CpuSet members = spans_[id] & usable_;
    sums_[id].weight = sums_[id].idle = members.count();
    members.for_each([&](PcpuId p) { spans_with_[p].push_back(id); });
  }

  dom_.assign(static_cast<std::size_t>(np) * levels_.size(), DomainState{});
  usable_.for_each([&](PcpuId p) {
    for (std::uint32_t l = 0; l < levels_.size(); ++l)
      dom(p, l).balance_interval = spans_[levels_[l].span_of[p]].count();  // sd_init: sd_weight ms
  });
}

std::int64_t Cfs::balance_interval_jiffies(const DomainState& d, bool busy) const {
  // get_sd_balance_interval(): ms, x busy_factor when busy, to jiffies (msecs_to_jiffies rounds
  // up), clamped to [1, max_load_balance_interval].
  const std::int64_t ms = static_cast<std::int64_t>(d.balance_interval) * (busy ? cfg_.busy_factor : 1);
  const std::int64_t j = (ms * cfg_.hz + 999) / 1000;
  return std::clamp<std::int64_t>(j, 1, max_lb_interval_);
}

void Cfs::arm_balance(PcpuId p, std::int64_t next_balance) {
  rqs_[p].next_balance = next_balance;
  act_->arm_timer(p, next_balance * jiffy_);
}

void Cfs::note_idle(PcpuId p, sim::Time now) {
  // The pCPU goes idle: newidle_balance() stamps idle_stamp and moves next_balance forward to
  // the idle intervals (update_next_balance with cpu_busy = 0).
  Runqueue& rq = rqs_[p];
  rq.idle_stamp = now;
  if (levels_.empty()) return;
  const std::int64_t j = jiffies(now);
  std::int64_t next = j + cfg_.hz;  // next_balance = jiffies + HZ
  for (std::uint32_t l = 0; l < levels_.size(); ++l)
    next = std::min(next, dom(p, l).last_balance + balance_interval_jiffies(dom(p, l), false));
  next = std::max(next, j + 1);
  if (next < rq.next_balance) arm_balance(p, next);
}

// ----------------------------------------------------------------------------------------------
// CPU selection.

PcpuId Cfs::pick_cpu(VcpuId v, sim::Time now) {
  clock_ = now;
  const hv::Vcpu& vc = hv_->vcpu(v);
  const topo::CpuSet allowed = vc.hard & usable_;
  const PcpuId prev = vc.pcpu;
  // The CPU this wake-up runs on (smp_processor_id() in try_to_wake_up): the waker's, or prev's
  // for a timer or device interrupt there. wake() reads it to tell a local preemption from one
  // that needs a reschedule IPI. MODEL: a fork (wake_up_new_task) counts as local.
  const PcpuId waker_cpu = hv_->wake_source().by.pcpu;
  wake_cpu_ = waker_cpu != kNoPcpu ? waker_cpu : prev;
  if (!ents_[v].forked || prev == kNoPcpu || !allowed.test(prev)) {
    // wake_up_new_task: p->recent_used_cpu = task_cpu(p) (the parent's CPU), then
    // SD_BALANCE_FORK.
    ents_[v].recent_used_cpu = allowed.first();
    return find_idlest_cpu(allowed.first(), allowed);
  }
  // select_task_rq_fair(SD_BALANCE_WAKE), 5.10. Without a waker the wake-up runs on prev (a
  // timer or device interrupt there: this_cpu = prev), so no domain can move it and nobody's
  // wakee_flips change (MODEL: the interrupted task's record_wakee is not modelled).
  const hv::WakeSource src = hv_->wake_source();
  const VcpuId waker = src.by.vcpu;
  if (waker == kNil)  // no waker (HypervisorView::wake_source: a named one is valid)
    return select_idle_sibling(v, prev, prev, allowed);
  const PcpuId cpu = src.by.pcpu;  // smp_processor_id()
  record_wakee(waker, v, now);
  const bool want_affine = !wake_wide(waker, v, cpu) && allowed.test(cpu);
  PcpuId new_cpu = prev;
  if (want_affine) {
    // for_each_domain(cpu): the first SD_WAKE_AFFINE domain spanning prev. No level has
    // SD_BALANCE_WAKE, so the slow path (find_idlest_cpu) is never taken for a wake-up.
    for (std::uint32_t l = 0; l < levels_.size(); ++l) {
      if (!levels_[l].fork || !spans_[levels_[l].span_of[cpu]].test(prev)) continue;
      if (cpu != prev) new_cpu = wake_affine(l, v, waker, cpu, prev, src.sync);
      break;
    }
  }
  new_cpu = select_idle_sibling(v, prev, new_cpu, allowed);
  // 5.10 writes the WAKER's field (current->recent_used_cpu = cpu); 5.15 moved it to the wakee.
  if (want_affine) ents_[waker].recent_used_cpu = cpu;
  return new_cpu;
}

void Cfs::record_wakee(VcpuId waker, VcpuId p, sim::Time now) {
  // record_wakee(p) on current: "Only decay a single time; tasks that have less then 1 wakeup
  // per jiffy will not have built up many flips."
  Entity& w = ents_[waker];
  const std::int64_t j = jiffies(now);
  if (j > w.wakee_flip_decay_ts + cfg_.hz) {  // time_after(jiffies, decay_ts + HZ)
    w.wakee_flips >>= 1;
    w.wakee_flip_decay_ts = j;
  }
  if (w.last_wakee != p) {
    w.last_wakee = p;
    ++w.wakee_flips;
  }
}

bool Cfs::wake_wide(VcpuId waker, VcpuId p, PcpuId this_cpu) const {
  // wake_wide(): factor = sd_llc_size of the waking CPU. A waker that flips among at least
  // factor wakees, and a wakee that flips too, fan out: no affine wake-up.
  std::uint32_t master = ents_[waker].wakee_flips, slave = ents_[p].wakee_flips;
  const std::uint32_t factor = llc_threads_[this_cpu].count();
  if (master < slave) std::swap(master, slave);
  return !(slave < factor || master < slave * factor);
}

PcpuId Cfs::wake_affine(std::uint32_t level, VcpuId p, VcpuId waker, PcpuId this_cpu, PcpuId prev, bool sync) {
  // wake_affine(): WA_IDLE, then WA_WEIGHT (both on by default); nr_cpumask_bits -> prev.
  ++wake_affine_attempts_;
  PcpuId target = wake_affine_idle(this_cpu, prev, sync);
  if (target == kNoPcpu) target = wake_affine_weight(level, p, waker, this_cpu, prev, sync);
  if (target == kNoPcpu) return prev;
  if (target == this_cpu) ++wake_affine_moves_;  // (ttwu_move_affine also counts an idle prev kept)
  return target;
}

PcpuId Cfs::wake_affine_idle(PcpuId this_cpu, PcpuId prev, bool sync) const {
  // "If this_cpu is idle, it implies the wakeup is from interrupt context. Only allow the move
  // if cache is shared." (Here this_cpu is idle when the waker halted before a delayed kick
  // arrived, see the MODEL note at the top.)
  if (idle_.test(this_cpu) && llc_threads_[this_cpu].test(prev)) return idle_.test(prev) ? prev : this_cpu;
  if (sync && rqs_[this_cpu].nr_running == 1) return this_cpu;
  // (d8fcb81f1acf, "sched/fair: Check for idle core in wake_affine", which keeps an idle prev
  // here, came with the 5.11 merge window: not in the 5.10 path modelled.)
  return kNoPcpu;
}

PcpuId Cfs::wake_affine_weight(std::uint32_t level, VcpuId p, VcpuId waker, PcpuId this_cpu, PcpuId prev,
                               bool sync) const {
  // wake_affine_weight(): cpu_load and task_h_load as the balance_load mode reads them (above).
  // The waker counts as current only while on this_cpu's runqueue.
  // All CPUs have capacity 1024 (capacity_of), so the two capacity factors cancel.
  std::int64_t this_eff_load = static_cast<std::int64_t>(cpu_load(this_cpu));
  if (sync) {
    const Entity& w = ents_[waker];
    const std::int64_t current_load = (w.on_rq && w.rq == this_cpu) ? static_cast<std::int64_t>(task_h_load(waker)) : 0;
    if (current_load > this_eff_load) return this_cpu;
    this_eff_load -= current_load;
  }
  const auto task_load = static_cast<std::int64_t>(task_h_load(p));
  this_eff_load += task_load;
  this_eff_load *= 100;                                         // WA_BIAS
  std::int64_t prev_eff_load = static_cast<std::int64_t>(cpu_load(prev));
  // "prev_eff_load -= task_load": with PELT's averages (the kernel's, where this line is; under
  // instant loads the sleeping wakee is in no runqueue's load and nothing is taken away).
  if (cfg_.pelt_balance) prev_eff_load -= task_load;
  prev_eff_load *= 100 + (levels_[level].imbalance_pct - 100) / 2;  // WA_BIAS
  if (sync) prev_eff_load += 1;
  return this_eff_load < prev_eff_load ? this_cpu : kNoPcpu;
}

PcpuId Cfs::select_idle_sibling(VcpuId v, PcpuId prev, PcpuId target, const topo::CpuSet& allowed) {
  // select_idle_sibling(p, prev, target), 5.10 (no asymmetric capacities; no per-CPU kthread
  // wakers, so the "stack with a kworker" step never applies).
  const topo::Topology& topo = hv_->topology();
  if (idle_.test(target)) return target;  // available_idle_cpu(target)
  if (!idle_.intersects(llc_threads_[target])) return target;  // nothing idle in the LLC (common when overcommitted)
  // "If the previous CPU is cache affine and idle, don't be stupid".
  if (prev != target && llc_threads_[target].test(prev) && idle_.test(prev)) return prev;
  // "Check a recently used CPU as a potential idle candidate".
  const PcpuId recent = ents_[v].recent_used_cpu;
  if (recent != prev && recent != target && recent != kNoPcpu && llc_threads_[target].test(recent) &&
      idle_.test(recent) && allowed.test(recent)) {
    ents_[v].recent_used_cpu = prev;  // "a potential candidate for the next wake"
    return recent;
  }
  // select_idle_core(): a core whose every thread is idle, scanning from the target's.
  if (topo.threads_per_core() > 1) {
    const topo::CpuSet cores = idle_cores_ & llc_cores_[target] & allowed_cores_[v];
    topo::ThreadId c = cores.next(topo.core_of(target));
    if (c == topo::CpuSet::kNone) c = cores.first();
    if (c != topo::CpuSet::kNone) return (topo.threads_of_core(c) & allowed).first();
  }
  // select_idle_cpu(): the first idle thread of the LLC from the target on (wrapping); under
  // cookie-aware core scheduling (5.14 __select_idle_cpu) only one whose core cookie matches.
  const topo::CpuSet cand = idle_ & llc_threads_[target] & allowed;
  for (PcpuId i = cand.next(target); i != topo::CpuSet::kNone; i = cand.next(i + 1))
    if (hv_->wake_cookie_match(i, v)) return i;
  for (PcpuId i = cand.first(); i != topo::CpuSet::kNone && i < target; i = cand.next(i + 1))
    if (hv_->wake_cookie_match(i, v)) return i;
  return target;
}

bool Cfs::find_idlest_group(std::uint32_t l, PcpuId this_cpu, const topo::CpuSet& allowed,
                            std::uint32_t& group) const {
  const Level& lv = levels_[l];
  const std::uint32_t local_span = child_span(this_cpu, l);
  GroupStats local, idlest;
  bool have_local = false, have_idlest = false;
  idlest.type = GroupType::kOverloaded;
  idlest.avg_load = std::numeric_limits<std::uint64_t>::max();
  for (std::uint32_t g : groups_of_[lv.span_of[this_cpu]]) {
    if (!spans_[g].intersects(allowed)) continue;  // no CPU of it is allowed
    GroupStats s;
    group_stats(g, usable_, lv.imbalance_pct, s);
    s.span = g;
    if (s.type != GroupType::kHasSpare) s.avg_load = s.load * kCapacityScale / std::max<std::uint64_t>(1, s.capacity);
    if (g == local_span) {
      local = s;
      have_local = true;
      continue;
    }
    // update_pick_idlest()
    bool better;
    if (!have_idlest || s.type < idlest.type) better = true;
    else if (s.type > idlest.type) better = false;
    else if (s.type == GroupType::kHasSpare) better = s.idle > idlest.idle;
    else if (s.type == GroupType::kImbalanced) better = false;  // "not used in the slow wakeup path"
    else better = s.avg_load < idlest.avg_load;
    if (better) {
      idlest = s;
      have_idlest = true;
    }
  }
  if (!have_idlest) return false;
  group = idlest.span;
  if (!have_local) return true;  // the local group is skipped because of affinity
  if (local.type < idlest.type) return false;
  if (local.type > idlest.type) return true;
  if (local.type == GroupType::kImbalanced) return false;  // "not used in the slow wakeup path"
  if (local.type == GroupType::kHasSpare) {
    // "Otherwise, keep the task on this node to stay close its wakeup source and improve locality."
    // (5.5-5.10: any idle CPU keeps the fork local, so a node fills its siblings before another
    // node gets a task; 5.11 keeps it local only while the node runs fewer tasks than a quarter of
    // the domain's CPUs, allow_numa_imbalance.)
    if (lv.numa && local.idle > 0) return false;
    return local.idle < idlest.idle;
  }
  const std::uint64_t imbalance = kCapacityScale * (lv.imbalance_pct - 100) / 100;
  if (lv.numa && idlest.avg_load + imbalance >= local.avg_load) return false;
  if (idlest.avg_load >= local.avg_load + imbalance) return false;
  if (100 * local.avg_load <= lv.imbalance_pct * idlest.avg_load) return false;
  return true;
}

PcpuId Cfs::find_idlest_group_cpu(const topo::CpuSet& group, const topo::CpuSet& allowed, PcpuId this_cpu) const {
  const topo::CpuSet cpus = group & allowed;
  if (group.count() == 1) return group.first();
  const topo::CpuSet idle = cpus & idle_;
  if (idle.any()) return idle.first();
  PcpuId least = this_cpu;
  std::uint64_t min_load = std::numeric_limits<std::uint64_t>::max();
  cpus.for_each([&](PcpuId i) {
    if (const std::uint64_t load = cpu_load(i); load < min_load) {
      min_load = load;
      least = i;
    }
  });
  return least;
}

PcpuId Cfs::find_idlest_cpu(PcpuId this_cpu, const topo::CpuSet& allowed) const {
  // select_task_rq_fair(SD_BALANCE_FORK): the highest domain of a contiguous run of fork levels.
  int top = -1;
  for (std::uint32_t l = 0; l < levels_.size() && levels_[l].fork; ++l) top = static_cast<int>(l);
  if (top < 0 || !spans_[levels_[top].span_of[this_cpu]].intersects(allowed)) return this_cpu;
  PcpuId cpu = this_cpu, new_cpu = this_cpu;
  int l = top;
  while (l >= 0) {
    std::uint32_t group = 0;
    if (!find_idlest_group(static_cast<std::uint32_t>(l), cpu, allowed, group)) {
      --l;
      continue;
    }
    new_cpu = find_idlest_group_cpu(spans_[group], allowed, cpu);
    if (new_cpu == cpu) {
      --l;  // now try balancing at a lower domain level of cpu
      continue;
    }
    // Now try balancing at a lower domain level of new_cpu.
    const std::uint32_t weight = spans_[levels_[l].span_of[cpu]].count();
    cpu = new_cpu;
    l = -1;
    for (std::uint32_t k = 0; k < levels_.size(); ++k) {
      if (spans_[levels_[k].span_of[cpu]].count() >= weight) break;
      if (levels_[k].fork) l = static_cast<int>(k);
    }
  }
  return allowed.test(new_cpu) ? new_cpu : allowed.first();
}

// ----------------------------------------------------------------------------------------------
// Load balancing: statistics.

void Cfs::group_stats(std::uint32_t group, const topo::CpuSet& cpus, std::uint32_t pct, GroupStats& s) const {
  // update_sg_lb_stats(). Instant loads: load = runnable weights, util = one CPU per busy CPU,
  // from the span's running sums unless some of its CPUs are excluded (a retry after an
  // all-pinned runqueue), which needs a walk. PELT: a walk over the CPUs, as the kernel's.
  const topo::CpuSet members = spans_[group] & usable_;
  if (cfg_.pelt_balance) {
    // update_sg_lb_stats() with PELT: group_load += cpu_runnable_load, group_util += cpu_util.
    members.for_each([&](PcpuId i) {
      ++s.weight;
      if (!cpus.test(i)) return;
      const Runqueue& rq = rqs_[i];
      s.nr += rq.nr_running;
      s.load += cpu_load(i);
      s.util += cpu_util(i);
      if (rq.nr_running == 0) ++s.idle;
      else ++s.busy;
    });
  } else if (members.subset_of(cpus)) {
    const SpanSums& su = sums_[group];
    s.weight = su.weight;
    s.nr = su.nr;
    s.load = su.load;
    s.idle = su.idle;
    s.busy = su.weight - su.idle;
  } else {
    members.for_each([&](PcpuId i) {
      ++s.weight;
      if (!cpus.test(i)) return;
      const Runqueue& rq = rqs_[i];
      s.nr += rq.nr_running;
      s.load += rq.load;
      if (rq.nr_running == 0) ++s.idle;
      else ++s.busy;
    });
  }
  s.capacity = s.weight * kCapacityScale;
  if (!cfg_.pelt_balance) s.util = s.busy * kCapacityScale;
  // group_classify(): group_is_overloaded, sg_imbalanced, group_has_capacity.
  if (s.nr > s.weight && s.capacity * 100 < s.util * pct) s.type = GroupType::kOverloaded;
  else if (group_imbalance_[group]) s.type = GroupType::kImbalanced;
  else if (s.nr < s.weight || s.capacity * 100 > s.util * pct) s.type = GroupType::kHasSpare;
  else s.type = GroupType::kFullyBusy;
  s.avg_load = s.type == GroupType::kOverloaded ? s.load * kCapacityScale / std::max<std::uint64_t>(1, s.capacity) : 0;
}

bool Cfs::pick_busiest(const GroupStats& s, const GroupStats& busiest) {
  // update_sd_pick_busiest()
  if (s.nr == 0) return false;  // "Make sure that there is at least one task to pull"
  if (s.type > busiest.type) return true;
  if (s.type < busiest.type) return false;
  switch (s.type) {
    case GroupType::kOverloaded:
    case GroupType::kFullyBusy:  // avg_load is 0 for fully busy groups: the first one stays
      return s.avg_load > busiest.avg_load;
    case GroupType::kImbalanced:
      // "Select the 1st imbalanced group as we don't have any way to choose one more appropriately"
      return false;
    case GroupType::kHasSpare:
      // The fewest idle CPUs, then the most running tasks.
      if (s.idle > busiest.idle) return false;
      if (s.idle == busiest.idle && s.nr <= busiest.nr) return false;
      return true;
  }
  return false;
}

bool Cfs::find_busiest_group(LbEnv& env, std::uint32_t& busiest_span) const {
  const Level& lv = levels_[env.level];
  GroupStats local, busiest;
  busiest.idle = std::numeric_limits<std::uint32_t>::max();
  bool have_busiest = false;
  std::uint64_t total_load = 0, total_capacity = 0;
  for (std::uint32_t g : groups_of_[lv.span_of[env.dst]]) {
    GroupStats s;
    group_stats(g, env.cpus, lv.imbalance_pct, s);
    s.span = g;
    total_load += s.load;
    total_capacity += s.capacity;
    if (g == env.local_span) {
      local = s;
      continue;
    }
    if (pick_busiest(s, busiest)) {
      busiest = s;
      have_busiest = true;
    }
  }
  if (!have_busiest) return false;  // "There is no busy sibling group to pull tasks from"
  if (busiest.type == GroupType::kImbalanced) {
    // "If the busiest group is imbalanced the below checks don't work because they assume all
    // things are equal, which typically isn't true due to cpus_ptr constraints and the like."
    // force_balance -> calculate_imbalance(): "try to move any task to fix the imbalance".
    env.type = MigrationType::kTask;
    env.imbalance = 1;
    busiest_span = busiest.span;
    return true;
  }
  if (local.type > busiest.type) return false;
  std::uint64_t sds_avg = 0;
  if (local.type == GroupType::kOverloaded) {
    if (local.avg_load >= busiest.avg_load) return false;
    sds_avg = total_load * kCapacityScale / std::max<std::uint64_t>(1, total_capacity);
    if (local.avg_load >= sds_avg) return false;
    if (100 * busiest.avg_load <= lv.imbalance_pct * local.avg_load) return false;
  }
  // "Try to move all excess tasks to child's sibling domain."
  const bool force = lv.prefer_sibling && local.type == GroupType::kHasSpare && busiest.nr > local.nr + 1;
  if (!force && busiest.type != GroupType::kOverloaded) {
    if (env.idle == IdleType::kNotIdle) return false;  // let an idle CPU pull
    if (busiest.weight > 1 && local.idle <= busiest.idle + 1) return false;
    if (busiest.nr == 1) return false;  // nothing waiting
  }
  // calculate_imbalance()
  if (local.type == GroupType::kHasSpare) {
    if (busiest.type > GroupType::kFullyBusy) {
      // Fill the local spare capacity.
      env.type = MigrationType::kUtil;
      env.imbalance = static_cast<std::int64_t>(std::max(local.capacity, local.util) - local.util);
      if (env.idle != IdleType::kNotIdle && env.imbalance == 0) {
        env.type = MigrationType::kTask;
        env.imbalance = 1;
      }
    } else {
      env.type = MigrationType::kTask;
      if (busiest.weight == 1 || lv.prefer_sibling) {
        // "When prefer sibling, evenly spread running tasks on groups."
        env.imbalance = busiest.nr > local.nr ? (busiest.nr - local.nr) >> 1 : 0;
      } else {
        // "If there is no overload, we just want to even the number of idle cpus."
        env.imbalance = std::max<std::int64_t>(0, (static_cast<std::int64_t>(local.idle) - busiest.idle) >> 1);
      }
      if (lv.numa && busiest.nr <= kNumaImbalanceMin) env.imbalance = 0;
    }
  } else {
    if (local.type < GroupType::kOverloaded) {
      local.avg_load = local.load * kCapacityScale / std::max<std::uint64_t>(1, local.capacity);
      sds_avg = total_load * kCapacityScale / std::max<std::uint64_t>(1, total_capacity);
    }
    env.type = MigrationType::kLoad;
    const std::int64_t over = static_cast<std::int64_t>(busiest.avg_load) - static_cast<std::int64_t>(sds_avg);
    const std::int64_t under = static_cast<std::int64_t>(sds_avg) - static_cast<std::int64_t>(local.avg_load);
    env.imbalance = std::min(over * static_cast<std::int64_t>(busiest.capacity),
                             under * static_cast<std::int64_t>(local.capacity)) /
                    static_cast<std::int64_t>(kCapacityScale);
  }
  if (env.imbalance <= 0) return false;
  busiest_span = busiest.span;
  return true;
}

PcpuId Cfs::find_busiest_queue(const LbEnv& env, std::uint32_t busiest_span) const {
  PcpuId busiest = kNoPcpu;
  std::uint64_t busiest_load = 0;
  std::uint32_t busiest_nr = 0;
  (spans_[busiest_span] & env.cpus).for_each([&](PcpuId i) {
    const Runqueue& rq = rqs_[i];
    switch (env.type) {
      case MigrationType::kLoad:
        // A lone task heavier than the imbalance stays (its CPU's capacity is never reduced here).
        if (const std::uint64_t load = cpu_load(i); !(rq.nr_running == 1 && static_cast<std::int64_t>(load) > env.imbalance) &&
                                                     load > busiest_load) {
          busiest_load = load;
          busiest = i;
        }
        return;
      case MigrationType::kUtil:
        if (cfg_.pelt_balance) {
          // The highest cpu_util; "Don't try to migrate a lone task" (nr_running <= 1 skipped,
          // 5.7's c32b4308295a; 5.5 would pick a lone runner's CPU and fail to detach it).
          if (rq.nr_running <= 1) return;
          if (const std::uint64_t util = cpu_util(i); busiest == kNoPcpu || util > busiest_load) {
            busiest_load = util;
            busiest = i;
          }
          return;
        }
        [[fallthrough]];  // MODEL (instant loads): utilisations tie at capacity; the longest queue
      case MigrationType::kTask:
        if (rq.nr_running > busiest_nr) {
          busiest_nr = rq.nr_running;
          busiest = i;
        }
        return;
    }
  });
  return busiest;
}

bool Cfs::task_hot(VcpuId v, PcpuId src, PcpuId dst) const {
  // CACHE_HOT_BUDDY: buddies (of the task's own runqueue) stay unless the destination is idle.
  const CfsRq& s = cfs_rq_at(v, src);
  if (rqs_[dst].nr_running > 0 && (v == s.next || v == s.last)) return true;
  if (cfg_.migration_cost == 0) return false;
  return hv_->now() - ents_[v].exec_start < cfg_.migration_cost;
}

bool Cfs::can_migrate(VcpuId v, PcpuId src, const LbEnv& env) const {
  // can_migrate_task(): allowed on dst, not running, and cold -- or the level keeps failing.
  // Under cookie-aware core scheduling a cookie that does not match dst's core counts as
  // cache-hot (5.14 task_hot), except between SMT siblings, where task_hot answers "cold" first.
  if (!hv_->vcpu(v).hard.test(env.dst)) return false;
  if (current_task(src) == v) return false;
  const bool cookie_hot = levels_[env.level].kind != LevelKind::kSmt && !hv_->balance_cookie_match(env.dst, v);
  if (!cookie_hot && !task_hot(v, src, env.dst)) return true;
  return dom(env.this_cpu, env.level).nr_balance_failed > levels_[env.level].cache_nice_tries;
}

VcpuId Cfs::steal_cookie(PcpuId p, const hv::PickFilter& f, PcpuId& src) const {
  // sched_core_balance() -> steal_cookie_task() -> try_steal_cookie(): p idles under core
  // scheduling; walk its domains bottom-up, their CPUs from p on (wrapping), for a queued (not
  // running) entity of the core's cookie that may run on p: the best such on the first CPU that
  // has one (sched_core_find). Untagged work is never stolen, nor an entity that last ran in a
  // fuller core than p's ("if (p->core_occupation > dst->idle->core_occupation) goto next": a
  // task that last ran in a core its cookie filled is not taken from there to fill a core its
  // cookie only partly fills). MODEL: a CPU
  // is not skipped for holding its core_pick (there is none between picks).
  // Only a CPU that is itself forced idle steals, as queue_core_balance() queues the balancer
  // only then ("if (!rq->nr_running) /* not forced idle */ return;"). The kernel steals in a
  // balance callback right after the switch to idle; here the pick that idles chooses the steal
  // (the switch is instantaneous in the model, so the two instants coincide).
  if (!f.match_cookie || f.cookie == 0) return kNil;
  topo::CpuSet seen = topo::CpuSet::single(p);
  for (std::uint32_t l = 0; l < levels_.size(); ++l) {
    const topo::CpuSet span = spans_[levels_[l].span_of[p]] & usable_;
    const auto scan = [&](PcpuId q) -> VcpuId {
      if (seen.test(q)) return kNil;
      seen.set(q);
      // The best queued task of the cookie: by the root's order, and inside a group entity by
      // its runqueue's (MODEL for sched_core_find's core_tree order).
      const auto best_in = [&](const Timeline& t, auto&& self) -> VcpuId {
        const Timeline::Slot* best = nullptr;
        VcpuId task = kNil;
        for (std::uint32_t i = 0; i < t.size(); ++i) {
          const Timeline::Slot& sl = t.slot(i);
          VcpuId cand = sl.v;
          if (is_task(cand)) {
            const hv::Vcpu& e = hv_->vcpu(cand);
            if (!f.allows(e) || !e.hard.test(p) || e.core_occupation > f.occupation) continue;
          } else if ((cand = self(my_q(cand).timeline, self)) == kNil) {
            continue;
          }
          if (!best || Timeline::less(sl, *best)) {
            best = &sl;
            task = cand;
          }
        }
        return task;
      };
      return best_in(rqs_[q].timeline, best_in);
    };
    for (PcpuId q = span.next(p + 1); q != topo::CpuSet::kNone; q = span.next(q + 1))
      if (const VcpuId v = scan(q); v != kNil) {
        src = q;
        return v;
      }
    for (PcpuId q = span.first(); q != topo::CpuSet::kNone && q < p; q = span.next(q + 1))
      if (const VcpuId v = scan(q); v != kNil) {
        src = q;
        return v;
      }
  }
  return kNil;
}

VcpuId Cfs::first_detachable(LbEnv& env, PcpuId src, const hv::PickFilter& f, bool& all_pinned) const {
  // detach_tasks() for a newly idle balance, which stops at its first detach (CONFIG_PREEMPTION):
  // the entity it would take, with env.imbalance reduced by it; a passed-over entity that may
  // not run on dst sets LBF_SOME_PINNED (no new_dst for a newly idle balance).
  const Runqueue& s = rqs_[src];
  const std::uint32_t loop_max = std::min(cfg_.nr_migrate, s.nr_running);
  const std::uint32_t tries = levels_[env.level].cache_nice_tries;
  const std::uint32_t failed = dom(env.this_cpu, env.level).nr_balance_failed;
  std::uint32_t loop = 0;
  for (VcpuId v = s.lru_tail; v != kNil; v = ents_[v].lru_prev) {
    if (++loop > loop_max) break;
    if (hv_->vcpu(v).hard.test(env.dst)) all_pinned = false;
    else env.some_pinned = true;
    if (!can_migrate(v, src, env) || !f.allows(hv_->vcpu(v))) continue;
    switch (env.type) {
      case MigrationType::kLoad: {
        const auto load = static_cast<std::int64_t>(task_h_load(v));
        if (load / 2 > env.imbalance && failed <= tries) continue;
        env.imbalance -= load;
        break;
      }
      case MigrationType::kUtil: {
        const auto util = static_cast<std::int64_t>(task_util(v));  // task_util_est
        if (util > env.imbalance) continue;
        env.imbalance -= util;
        break;
      }
      case MigrationType::kTask:
        env.imbalance -= 1;
        break;
    }
    return v;
  }
  return kNil;
}

std::uint32_t Cfs::detach_and_attach(LbEnv& env, PcpuId src, bool& all_pinned, sim::Time now) {
  // detach_tasks() + attach_tasks().
  Runqueue& s = rqs_[src];
  const std::uint32_t loop_max = std::min(cfg_.nr_migrate, s.nr_running);
  const std::uint32_t tries = levels_[env.level].cache_nice_tries;
  const std::uint32_t failed = dom(env.this_cpu, env.level).nr_balance_failed;
  std::uint32_t loop = 0, detached = 0;
  VcpuId moved[64];
  std::uint32_t nmoved = 0;
  while (s.lru_tail != kNil) {
    // "We don't want to steal all, otherwise we may be treated likewise."
    if (env.idle != IdleType::kNotIdle && s.nr_running <= 1) break;
    const VcpuId v = s.lru_tail;
    if (++loop > loop_max) break;
    bool take = false;
    if (const topo::CpuSet& hard = hv_->vcpu(v).hard; hard.test(env.dst)) {
      all_pinned = false;
    } else {
      // can_migrate_task(): remember a CPU of dst's group this task may run on, to revisit it
      // there if the balance falls short (not for a newly idle balance, nor twice per round).
      env.some_pinned = true;
      if (env.idle != IdleType::kNewlyIdle && !env.dst_pinned) {
        const topo::CpuSet alt = spans_[env.local_span] & env.cpus & hard & usable_;
        if (alt.any()) {
          env.dst_pinned = true;
          env.new_dst = alt.first();
        }
      }
    }
    if (can_migrate(v, src, env)) {
      switch (env.type) {
        case MigrationType::kLoad:
          // "Make sure that we don't migrate too much load."
          // load = task_h_load(p): its share of the CPU's load, through its group.
          if (const auto load = static_cast<std::int64_t>(task_h_load(v)); !(load / 2 > env.imbalance && failed <= tries)) {
            env.imbalance -= load;
            take = true;
          }
          break;
        case MigrationType::kUtil:
          if (const auto util = static_cast<std::int64_t>(task_util(v)); util <= env.imbalance) {  // task_util_est
            env.imbalance -= util;
            take = true;
          }
          break;
        case MigrationType::kTask:
          env.imbalance -= 1;
          take = true;
          break;
      }
    }
    if (!take) {  // list_move(&p->se.group_node, tasks): to the head, examined last
      lru_unlink(src, v);
      lru_push_front(src, v);
      continue;
    }
    move_queued(v, src, env.dst, now, /*check_preempt=*/false);
    if (nmoved < 64) moved[nmoved++] = v;
    ++detached;
    if (env.imbalance <= 0) break;
  }
  for (std::uint32_t i = 0; i < nmoved; ++i)
    if (ents_[moved[i]].on_rq && ents_[moved[i]].rq == env.dst) check_preempt_curr(env.dst, moved[i], now);
  balance_migrations_ += detached;
  return detached;
}

// ----------------------------------------------------------------------------------------------
// Load balancing: periodic, newly idle, active.

int Cfs::load_balance(PcpuId p, std::uint32_t l, IdleType idle, bool& continue_balancing, sim::Time now) {
  const Level& lv = levels_[l];
  DomainState& sd = dom(p, l);
  LbEnv env;
  env.dst = p;
  env.this_cpu = p;
  env.level = l;
  env.idle = idle;
  env.cpus = spans_[lv.span_of[p]] & usable_;
  env.local_span = child_span(p, l);
  const topo::CpuSet local = spans_[env.local_span] & usable_;
  LbOutcome out;  // out_balanced unless found otherwise
  int moved = 0;

  // should_we_balance(): the first idle CPU of the local group, else its first CPU.
  {
    const topo::CpuSet idle_local = local & idle_;
    const PcpuId balance_cpu = idle_local.any() ? idle_local.first() : local.first();
    if (balance_cpu != p) {
      continue_balancing = false;
      clear_group_imbalance(p, l, out);  // goto out_balanced
      apply_lb_exit(p, l, out);
      return 0;
    }
  }
  std::uint8_t* group_imbalance = group_imbalance_of(p, l);
  for (;;) {  // redo
    std::uint32_t busiest_span = 0;
    const PcpuId busiest = find_busiest_group(env, busiest_span) ? find_busiest_queue(env, busiest_span) : kNoPcpu;
    if (busiest == kNoPcpu) {
      clear_group_imbalance(p, l, out);  // out_balanced
      break;
    }
    if (rqs_[busiest].nr_running > 1) {
      out.all_pinned = true;  // LBF_ALL_PINNED, cleared by any entity allowed here
      for (;;) {  // more_balance
        moved += static_cast<int>(detach_and_attach(env, busiest, out.all_pinned, now));
        // "Revisit (affine) tasks on src_cpu that couldn't be moved to us and move them to an
        // alternate dst_cpu in our sched_group where they can run."
        if (!env.dst_pinned || env.imbalance <= 0) break;
        env.cpus.reset(env.dst);
        env.dst = env.new_dst;
        env.dst_pinned = false;
      }
      // "We failed to reach balance because of affinity."
      if (group_imbalance && env.some_pinned && env.imbalance > 0) *group_imbalance = 1;
      if (out.all_pinned) {
        // "All tasks on this runqueue were pinned by CPU affinity": retry without it.
        env.cpus.reset(busiest);
        if (!env.cpus.subset_of(local)) continue;
        break;  // out_all_pinned
      }
    }
    if (moved == 0) {
      ++sd.nr_balance_failed;
      failed_exit(p, l, busiest, out);
    } else {
      out.exit = LbExit::kMoved;
    }
    break;
  }
  apply_lb_exit(p, l, out);
  return moved;
}

bool Cfs::newidle_choose(PcpuId p, const hv::PickFilter& f, VcpuId& v, PcpuId& src, NewidleBalance& nb) const {
  // newidle_balance(): "Will wake up very soon" / nothing overloaded anywhere -> do not pull.
  nb.levels = 0;
  if (rqs_[p].avg_idle < cfg_.migration_cost || overloaded_.empty()) return false;
  // Then load_balance(CPU_NEWLY_IDLE) at every level from the bottom until one pulls (no
  // max_newidle_lb_cost cut-off: balancing takes no time here). should_we_balance lets every
  // newly idle CPU balance. Each level's exit path sets its domain's failure counter and
  // interval as the periodic balancer's would, except that a failure is not counted ("We do
  // not want newidle balance, which can be very frequent, pollute the failure counter"), and
  // past cache_nice_tries + 2 failures it kicks an active balance too (need_active_balance).
  topo::CpuSet kicked;  // stoppers this pass kicked already (busiest->active_balance)
  for (std::uint32_t l = 0; l < levels_.size() && l < nb.at.size(); ++l) {
    LbOutcome& out = nb.at[l];
    out = LbOutcome{};
    nb.levels = l + 1;
    LbEnv env;
    env.dst = p;
    env.this_cpu = p;
    env.level = l;
    env.idle = IdleType::kNewlyIdle;
    env.cpus = spans_[levels_[l].span_of[p]] & usable_;
    env.local_span = child_span(p, l);
    const topo::CpuSet local = spans_[env.local_span] & usable_;
    // out_balanced clears the level's group-imbalance flag unless every task was pinned.
    const auto balanced = [&out] {
      if (!out.all_pinned) out.group_flag = GroupFlag::kClear;
    };
    for (;;) {  // redo
      std::uint32_t busiest_span = 0;
      if (!find_busiest_group(env, busiest_span)) {
        balanced();
        break;
      }
      const PcpuId busiest = find_busiest_queue(env, busiest_span);
      if (busiest == kNoPcpu) {
        balanced();
        break;
      }
      if (rqs_[busiest].nr_running > 1) {
        out.all_pinned = true;  // LBF_ALL_PINNED, cleared by any entity allowed here
        const VcpuId c = first_detachable(env, busiest, f, out.all_pinned);
        // "We failed to reach balance because of affinity."
        if (env.some_pinned && env.imbalance > 0) out.group_flag = GroupFlag::kSet;
        if (c != kNil) {
          out.exit = LbExit::kMoved;
          out.all_pinned = false;
          v = c;
          src = busiest;
          return true;
        }
        if (out.all_pinned) {
          // "All tasks on this runqueue were pinned by CPU affinity": retry without it.
          env.cpus.reset(busiest);
          if (!env.cpus.subset_of(local)) continue;
          break;  // out_all_pinned
        }
      }
      // Nothing moved (no failure is counted).
      failed_exit(p, l, busiest, out);
      if (out.kick != kNoPcpu) {
        if (kicked.test(out.kick)) out.kick = kNoPcpu;  // a lower level of this pass kicked it
        else kicked.set(out.kick);
      }
      break;
    }
  }
  return false;
}

// load_balance()'s out_balanced: "We reach balance although we may have faced some affinity
// constraints. Clear the imbalance flag only if other tasks got a chance to move and fix the
// imbalance."
void Cfs::clear_group_imbalance(PcpuId p, std::uint32_t l, const LbOutcome& out) {
  if (std::uint8_t* flag = group_imbalance_of(p, l); flag && !out.all_pinned) *flag = 0;
}

// A newly idle balance's flag, decided at the pick and applied when the pick is committed. MODEL:
// the levels above in the same newidle_balance pass do not see a flag that a lower level sets
// (the kernel's would); they see it from the next balance on.
void Cfs::apply_group_flag(PcpuId p, std::uint32_t l, const LbOutcome& out) {
  std::uint8_t* flag = group_imbalance_of(p, l);
  if (!flag) return;
  if (out.group_flag == GroupFlag::kSet) *flag = 1;
  if (out.group_flag == GroupFlag::kClear) *flag = 0;
}

// sd_parent->groups->sgc->imbalance for p's domain at level l: the flag of that level's span,
// which is a group of the level above; nullptr at the top level (no parent).
std::uint8_t* Cfs::group_imbalance_of(PcpuId p, std::uint32_t l) {
  return l + 1 < levels_.size() ? &group_imbalance_[levels_[l].span_of[p]] : nullptr;
}

// need_active_balance() after a balance that moved nothing, with the failure already counted
// (or, newly idle, not): past cache_nice_tries + 2 failures, kick busiest's stopper unless it
// has one running ("Don't kick the active_load_balance_cpu_stop, if the curr task on busiest CPU
// can't be moved to this_cpu": out_one_pinned). No capacity-reduced CPUs here.
void Cfs::failed_exit(PcpuId p, std::uint32_t l, PcpuId busiest, LbOutcome& out) const {
  out.exit = LbExit::kFailed;
  if (dom(p, l).nr_balance_failed <= levels_[l].cache_nice_tries + 2) return;
  const VcpuId bc = running_curr(busiest);
  if (bc == kNil || !hv_->vcpu(bc).hard.test(p)) {
    out.exit = LbExit::kOnePinned;
    out.all_pinned = true;
    return;
  }
  out.exit = LbExit::kActive;
  if (!rqs_[busiest].active_balance) out.kick = busiest;
}

// load_balance()'s exit paths (5.7), for the periodic balancer and newidle_balance alike: the
// failure counter (a periodic failure was already counted) and the interval, which resets when
// the level was unbalanced and doubles when it was balanced or pinned, or when a stopper was
// kicked; the kick itself.
void Cfs::apply_lb_exit(PcpuId p, std::uint32_t l, const LbOutcome& out) {
  DomainState& sd = dom(p, l);
  const std::uint32_t min_interval = spans_[levels_[l].span_of[p]].count();
  const std::uint32_t max_interval = 2 * min_interval;
  switch (out.exit) {
    case LbExit::kMoved:
      sd.nr_balance_failed = 0;
      sd.balance_interval = min_interval;  // "We were unbalanced, so reset the balancing interval"
      break;
    case LbExit::kFailed:
      sd.balance_interval = min_interval;
      break;
    case LbExit::kActive:
      if (out.kick != kNoPcpu && !rqs_[out.kick].active_balance) {
        rqs_[out.kick].active_balance = true;
        rqs_[out.kick].push_cpu = p;
        act_->tickle(out.kick);  // stop_one_cpu_nowait(active_load_balance_cpu_stop)
        if (sd.balance_interval < max_interval) sd.balance_interval *= 2;
      } else {
        sd.balance_interval = min_interval;
      }
      sd.nr_balance_failed = levels_[l].cache_nice_tries + 1;  // "force task migration"
      break;
    case LbExit::kBalanced:  // out_balanced, out_all_pinned
      sd.nr_balance_failed = 0;
      [[fallthrough]];
    case LbExit::kOnePinned:  // out_one_pinned: tune up the balancing interval
      if ((out.all_pinned && sd.balance_interval < kMaxPinnedInterval) || sd.balance_interval < max_interval)
        sd.balance_interval *= 2;
      break;
  }
}

VcpuId Cfs::push_candidate(PcpuId p) const {
  // active_load_balance_cpu_stop() -> detach_one_task(): the first entity from the tail of
  // cfs_tasks that can_migrate_task() accepts for push_cpu (with the stopper running, the
  // preempted entity no longer counts as running).
  const Runqueue& rq = rqs_[p];
  const PcpuId target = rq.push_cpu;
  if (target == kNoPcpu || rq.nr_running == 0) return kNil;
  std::uint32_t level = 0;
  while (level < levels_.size() && !spans_[levels_[level].span_of[target]].test(p)) ++level;
  if (level == levels_.size()) return kNil;
  const bool force = dom(target, level).nr_balance_failed > levels_[level].cache_nice_tries;
  for (VcpuId v = rq.lru_tail; v != kNil; v = ents_[v].lru_prev) {
    if (!hv_->vcpu(v).hard.test(target)) continue;
    if (!force && task_hot(v, p, target) && v != current_task(p)) continue;
    return v;
  }
  return kNil;
}

void Cfs::rebalance_domains(PcpuId p, sim::Time now) {
  // run_rebalance_domains() -> rebalance_domains(): each level whose interval has passed. With
  // task groups, first entity_tick's update_cfs_group(curr), which the kernel runs every tick
  // and this timer, on the tick grid, stands for when no pick happens (a lone entity), and
  // update_blocked_averages(): every group runqueue of p brought up to date, its sleeping
  // groups' averages decaying.
  if (!grqs_.empty()) {
    update_curr(p, now);
    for (std::uint32_t g = 0; g < tg_load_.size(); ++g) update_group_avg(g, p, now);
    if (rqs_[p].curr != kNil && !is_task(rqs_[p].curr) && ents_[rqs_[p].curr].on_rq)
      update_cfs_group((rqs_[p].curr - nv_) / np_, p);
  }
  const std::int64_t j = jiffies(now);
  IdleType idle = idle_.test(p) ? IdleType::kIdle : IdleType::kNotIdle;
  bool busy = idle != IdleType::kIdle;
  bool continue_balancing = true;
  std::int64_t next = j + 60 * static_cast<std::int64_t>(cfg_.hz);
  for (std::uint32_t l = 0; l < levels_.size(); ++l) {
    if (!continue_balancing) break;
    DomainState& d = dom(p, l);
    std::int64_t interval = balance_interval_jiffies(d, busy);
    if (j >= d.last_balance + interval) {
      if (load_balance(p, l, idle, continue_balancing, now) > 0) {
        idle = idle_.test(p) ? IdleType::kIdle : IdleType::kNotIdle;
        busy = idle != IdleType::kIdle;
      }
      d.last_balance = j;
      interval = balance_interval_jiffies(d, busy);
    }
    next = std::min(next, d.last_balance + interval);
  }
  arm_balance(p, std::max(next, j + 1));
}

}  // namespace vcpusim::policy
