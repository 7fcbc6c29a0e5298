// SPDX-License-Identifier: MIT
// Credit2: the model of Xen's credit2 scheduler (xen/common/sched/credit2.c, the default since
// Xen 4.12). Function names in comments are Xen's; ../shared/reference/xen-credit2.md is the
// project's digest of the algorithm (upstream c447b7308b) and the source this follows.
//
// Design
// ------
// pCPUs are grouped into runqueues (credit2_runqueue.cpp: per cpu, core, socket, node or all,
// at most 16 pCPUs each, SMT siblings together). Every vCPU is *assigned* to one runqueue
// (rqd->svc, blocked vCPUs included); the runnable ones that are not running wait in its runq,
// sorted by credit, highest first, FIFO among equals (runq_insert). There is no per-pCPU queue.
//
// Credit. A vCPU starts with 10 ms of credit. While it runs it burns credit at max_weight/weight
// per ns, max_weight being the largest weight assigned to its runqueue (burn_credits,
// t2c_update): the heaviest vCPU burns 1 ns per ns, one of half its weight 2 ns per ns, so over
// an epoch shares follow weights. Weight is per vCPU: a VM's share grows with its runnable vCPUs.
// There is no accounting tick: when a pCPU commits to a vCPU and the best credit in its runqueue
// (that vCPU's or the runq head's) is at or below 0, the runqueue resets (reset_credit): every
// assigned vCPU, blocked ones too, gets +10 ms (+20 ms if the chosen one sits at the -10 ms
// floor), clipped at 10.5 ms. Epochs therefore have variable length and are per runqueue; a
// sleeper wakes with at most 10.5 ms, usually ahead of CPU hogs.
//
// Choosing (csched2_schedule, runq_candidate). On a pCPU: burn the current vCPU; if it has run
// less than the ratelimit and is still runnable, keep it; else it is the default (idle if it is
// not runnable, or if it runs outside its soft affinity while an idle pCPU of its runqueue is
// inside it), and the runq is scanned in credit order for the first vCPU allowed here (hard
// affinity, not reserved by a tickle for another pCPU, at least migrate_resist ahead of the
// default if it last ran on another pCPU); it wins if it has more credit than the default (or
// the current vCPU yielded) and, if capped, gets budget. The slice (csched2_runtime) runs the
// winner until its credit falls to the next waiter's (the runq head, or the vCPU it displaced),
// converted to time at its burn rate, within [max(500 us, ratelimit), 10 ms] -- the floor wins.
// It is computed last, after a credit reset and the balance_load() it runs, so a vCPU pulled
// onto this runqueue there is the waiter (committed_slice).
//
// Waking (csched2_unit_wake, runq_tickle). A waking vCPU stays in its runqueue (no re-pick, no
// boost), joins the runq and tickles one pCPU of that runqueue: its own if it is pinned there
// and idle; else, first within its soft affinity and then within its hard affinity, a thread
// of a fully idle core, then any idle untickled thread (its own pCPU first, then the next one
// after it); else the busy pCPU where it scores best: its credit lead over the running vCPU,
// minus migrate_resist if not its own pCPU, must be positive, and running vCPUs younger than
// ratelimit - 50 us are not preempted. The tickled pCPU is reserved for it until it schedules.
// A tickle is raised from the pCPU the hook runs on (the waker's for a wake-up); a busy pCPU
// other than that one schedules when the event-check IPI arrives, ExecParams::resched_ipi later
// (cpu_raise_softirq -> smp_send_event_check_cpu), an idle one at once (tickle_cpu). At
// sched-gran=core every tickle is at once (the unit view has no IPI).
//
// Placement across runqueues (csched2_res_pick) happens when a vCPU is created and when
// balance_load() moves it. balance_load runs only right after a reset, on the pCPU that reset:
// it finds the runqueue whose decaying load (b_avgload, ~1 s window) differs most from its own
// and, if the gap is at least 1.0 vCPU (0.125 once either side has a vCPU per pCPU), makes the
// best single push, pull or swap of assigned vCPUs that hard affinity allows. A running vCPU
// moves when it is next descheduled.
//
// Caps (unit_grab_budget, park_unit, replenish_domain_budget). A VM capped at N% of a pCPU has
// a pool of N% of every 10 ms period, refilled by a per-domain timer; a vCPU takes a quota
// (the pool over its vCPUs, at least 500 us) before it runs, burns it in wall time, returns the
// rest when it stops; with the pool empty it is parked, off the runq, until a refill.
//
// Where Xen surprises, this model does what Xen does: balance_load ignores soft affinity (and
// moves blocked vCPUs too); wake-ups never leave their runqueue, so a wake finds idle pCPUs only
// in its own runqueue; an idle pCPU never pulls work (only a tickle or a slice end makes a pCPU
// scan, and an idle one has no timer); a reserved vCPU whose pCPU takes something else is not
// re-tickled; balance_load's threshold reads the runqueue its scan visited last.
//
// Mapping onto the policy boundary. Xen's csched2_schedule both chooses and commits; here
// pick_next() chooses (it burns credit, consumes the yield flag and takes budget, which are
// accounting, but changes no runq membership: a queued vCPU found without budget is parked at
// commit) and returns the slice computed for the state the commit will create (after the reset,
// the park and the migration compensation); set_next() commits (dequeue, idle masks, reset,
// balance_load); put_prev() is csched2_context_saved(), deferred to the end of the next
// set_next() for a preempted vCPU so that, as in Xen, it is requeued and re-tickled after the
// pCPU's new state is in place. Host::halt() is Xen's guest block: sleep() does what
// csched2_schedule does for a blocked current vCPU (burn, budget), put_prev() the rest.
//
// Parameters (scenario key under host.scheduler; unit; default; Xen equivalent)
// ----------
//   runqueue           choice     socket   credit2_runqueue=cpu|core|socket|node|all
//   ratelimit          duration   1 ms     sched_ratelimit_us=1000 (0 = off; 100 us..500 ms,
//                                          anything else falls back to 1 ms as scheduler_init())
//   migrate_resist     duration   500 us   sched_credit2_migrate_resist=500
//   cap_period         duration   10 ms    credit2_cap_period_ms=10 (below 500 us: back to 10 ms)
//   max_cpus_runqueue  integer    16       sched_credit2_max_cpus_runqueue=16
//   load_window_shift  integer    30       credit2_load_window_shift=30 (<= 10: back to 30)
//   load_precision_shift integer  18       credit2_load_precision_shift=18 (min 4)
//   balance_under      integer    0        credit2_balance_under=0
//   balance_over       integer    -3       credit2_balance_over=-3
// Weights are Vcpu::weight (the VM's weight, default 256, xl sched-credit2 -w); caps are
// Domain::cap_pct (xl sched-credit2 -c; above 100 x vCPUs Xen refuses it, and so does the scenario
// loader; a caller that builds a Host directly gets it clamped).
//
// Invariants
// ----------
// - A vCPU is on at most one runq, only while Runnable, not running, not parked; it is on the
//   runq of the runqueue it is assigned to, and that runqueue holds its processor.
// - Credits never fall below kCreditMin. A reset clips them to kCreditInit + kCarryoverMax;
//   between resets only the 50 us migration compensation raises one (it can stack for a
//   vCPU that runs briefly on several pCPUs in one epoch, as in Xen).
// - Only vCPUs whose hard affinity holds the pCPU, and that the PickFilter allows, are picked;
//   pick_cpu returns the vCPU's processor, always inside its hard affinity.
// - Runqueue load counts its runnable vCPUs, running ones included: +1 at wake and unpark, -1
//   when a queued vCPU sleeps or is parked and when a vCPU is switched out without requeue.
// - Per event the work is bounded by one runqueue (<= 16 pCPUs, its runq length); only a reset
//   and balance_load walk the assigned vCPUs of a runqueue (two, for balancing).
//
// sched-gran=core is the dispatcher's (hypervisor/sched_unit.h): credit2 is then attached to a
// view in which every entity is a unit and every pCPU a core's master thread, and runs unchanged
// on it, as csched2 does (one credit, weight and runq entry per unit; no SMT siblings).
//
// Not modelled
// ------------
// - sched-gran=socket, cpupools, CPU hotplug, tasklet work,
//   sched_smt_power_savings, runtime changes of weight, cap or affinity, vCPU removal.
// - Directed yield: Xen has none (SCHEDOP_yield only flags the caller); `to` is ignored.
// - Lock contention: Xen's trylocks in csched2_res_pick() and balance_load() always succeed
//   here, so get_fallback_cpu() is never needed.
// - MODEL: a parked vCPU is Runnable to the host (its time counts as runnable/steal), where
//   Xen's _VPF_parked pause flag would report it offline.
// - MODEL: PickFilter (core scheduling's cookie match) is applied like hard affinity, to the
//   current vCPU and to every runq candidate; upstream credit2 has no such filter. With the
//   cookie-aware switches on, runq_tickle's idle-thread scan and balance_load's moves consult
//   HypervisorView::wake_cookie_match / balance_cookie_match (runq_tickle, balance_load).
//
// References
// ----------
// xen-project/xen xen/common/sched/credit2.c: csched2_schedule, runq_candidate, csched2_runtime,
// burn_credits, t2c_update, reset_credit, runq_insert, runq_tickle, tickle_score,
// is_preemptable, csched2_unit_wake, csched2_unit_sleep, csched2_context_saved,
// csched2_res_pick, migrate, balance_load, consider, update_runq_load, update_svc_load,
// unit_grab_budget, unit_return_budget, park_unit, unpark_parked_units,
// replenish_domain_budget, csched2_dom_cntl, csched2_alloc_udata, cpu_add_to_runqueue.
// xen/common/sched/core.c (state_entry_time, sched_unit_migrate_finish); xen/common/sched/
// private.h (has_soft_affinity, affinity_balance_cpumask); ../shared/reference/xen-credit2.md.
// Two details follow that reference (upstream c447b7308b, Aug 2026) where the older credit2.c
// in the code index (07b0eb5d, before the October 2022 runqueue fix) differs: csched2_runtime()
// also runs snext only down to the credit of the vCPU it displaces (inflight_credit), and a
// continuing vCPU gets update_load(0). With the older rules the affinity study's 10-VM row
// moves by 0.04% (a helper's audit, 2026-12-03).
#include "policies/credit2.h"

#include <algorithm>
#include <ostream>
#include <utility>

namespace vcpusim::policy {

using namespace credit2;  // NOLINT: this file is credit2
using hv::kIdle;
using hv::kNoPcpu;
using hv::PcpuId;
using hv::VcpuId;

// ----------------------------------------------------------------------------------------------
// Construction and parameters.

Credit2::Credit2(Config c) : cfg_(c) {}

std::vector<ParamSpec> Credit2::param_specs() {
  using K = ParamSpec::Kind;
  return {
      {"runqueue", K::kChoice, 2, 0, 4, {"cpu", "core", "socket", "node", "all"},
       "pCPUs sharing a runqueue (Xen credit2_runqueue, default socket)"},
      ParamSpec{"ratelimit", K::kDuration, static_cast<double>(kDefaultRatelimit), 0, static_cast<double>(kRatelimitMax), {},
                "least run time before a vCPU may be preempted, 0 = off (Xen sched_ratelimit_us, default 1000)"}
          .zero_or_at_least(static_cast<double>(kRatelimitMin)),
      {"migrate_resist", K::kDuration, static_cast<double>(kDefaultMigrateResist), 0, 1e9, {},
       "credit lead needed to change pCPU (Xen sched_credit2_migrate_resist, default 500 us)"},
      {"cap_period", K::kDuration, static_cast<double>(kDefaultCapPeriod), static_cast<double>(kMinTimer), 10e9, {},
       "cap budget replenishment period (Xen credit2_cap_period_ms, default 10 ms)"},
      {"max_cpus_runqueue", K::kInt, kMaxCpusRunqueue, 1, 512, {},
       "most pCPUs per runqueue (Xen sched_credit2_max_cpus_runqueue, default 16)"},
      {"load_window_shift", K::kInt, kLoadavgWindowShift, kLoadavgGranularityShift + 1, 34, {},
       "log2 of the load-average window in ns (Xen credit2_load_window_shift, default 30)"},
      {"load_precision_shift", K::kInt, kLoadavgPrecisionShift, kLoadavgPrecisionShiftMin, 24, {},
       "fractional bits of load averages (Xen credit2_load_precision_shift, default 18)"},
      {"balance_under", K::kInt, kBalanceUnder, -4, 8, {},
       "log2 load gap (in vCPUs) to balance below full load (Xen credit2_balance_under, default 0)"},
      {"balance_over", K::kInt, kBalanceOver, -4, 8, {},
       "log2 load gap (in vCPUs) to balance at full load (Xen credit2_balance_over, default -3)"},
  };
}

std::unique_ptr<hv::SchedulerPolicy> Credit2::make(const ParamValues& v) {
  Config c;
  c.runqueue = static_cast<RunqueueLayout>(static_cast<int>(v.get("runqueue", 2)));
  c.ratelimit = static_cast<sim::Duration>(v.get("ratelimit", static_cast<double>(kDefaultRatelimit)));
  // scheduler_init() (core.c): an out-of-range sched_ratelimit_us falls back to the default.
  // (A scenario file cannot give one: the loader refuses it, zero_or_at_least above.)
  if (c.ratelimit != 0 && (c.ratelimit < kRatelimitMin || c.ratelimit > kRatelimitMax)) c.ratelimit = kDefaultRatelimit;
  c.migrate_resist = static_cast<sim::Duration>(v.get("migrate_resist", static_cast<double>(kDefaultMigrateResist)));
  c.cap_period = static_cast<sim::Duration>(v.get("cap_period", static_cast<double>(kDefaultCapPeriod)));
  // csched2_global_init(): a period below CSCHED2_MIN_TIMER is reset to 10 ms.
  if (c.cap_period < kMinTimer) c.cap_period = kDefaultCapPeriod;
  c.max_cpus_runqueue = static_cast<std::uint32_t>(v.get("max_cpus_runqueue", kMaxCpusRunqueue));
  c.load_window_shift = static_cast<std::uint32_t>(v.get("load_window_shift", kLoadavgWindowShift));
  if (c.load_window_shift <= kLoadavgGranularityShift) c.load_window_shift = kLoadavgWindowShift;
  c.load_precision_shift = static_cast<std::uint32_t>(v.get("load_precision_shift", kLoadavgPrecisionShift));
  c.load_precision_shift = std::max(c.load_precision_shift, kLoadavgPrecisionShiftMin);
  c.balance_under = static_cast<int>(v.get("balance_under", kBalanceUnder));
  c.balance_over = static_cast<int>(v.get("balance_over", kBalanceOver));
  return std::make_unique<Credit2>(c);
}

void Credit2::attach(const hv::SchedContext& ctx) {
  hv_ = &ctx.hv;
  act_ = &ctx.act;
  const topo::Topology& topo = hv_->topology();
  const topo::CpuSet& usable = hv_->usable_pcpus();
  const std::uint32_t np = topo.num_threads();
  RunqueueMap map = build_runqueues(topo, usable, cfg_.runqueue, cfg_.max_cpus_runqueue, hv_->online_threads());
  rq_of_ = std::move(map.rq_of);
  rqs_.assign(map.cpus.size(), Runqueue{});
  for (std::uint32_t r = 0; r < rqs_.size(); ++r) {
    rqs_[r].active = map.cpus[r];
    rqs_[r].nr_cpus = map.cpus[r].count();
    rqs_[r].pick_bias = map.cpus[r].first();  // init_cpu_runqueue: the first pCPU added
  }
  sibling_mask_.assign(np, topo::CpuSet{});
  usable.for_each([&](PcpuId p) { sibling_mask_[p] = topo.smt_mask(p) & rqs_[rq_of_[p]].active; });
  curr_.assign(np, kIdle);
  pending_saved_.assign(np, kIdle);
  decision_.assign(np, Decision{});
  rebalanced_.assign(np, 0);
  // init_cpu_runqueue(): every pCPU starts idle, and in smt_idle.
  idle_ = usable;
  smt_idle_ = usable;
  tickled_.clear();
  load_window_shift_ = cfg_.load_window_shift - kLoadavgGranularityShift;
  ds_.assign(hv_->num_domains(), DomainState{});
  const std::uint32_t nv = hv_->num_vcpus();
  vs_.reserve(nv);
  runq_links_.reserve(nv);
  svc_links_.reserve(nv);
  has_soft_.reserve(nv);
  unpark_scratch_.reserve(nv);
}

// csched2_alloc_udata + csched2_unit_insert (+ the cap part of csched2_dom_cntl).
void Credit2::insert_vcpu(VcpuId v) {
  if (v >= vs_.size()) {
    vs_.resize(v + 1);
    runq_links_.resize(v + 1);
    svc_links_.resize(v + 1);
    has_soft_.resize(v + 1, false);
  }
  const hv::Vcpu& e = hv_->vcpu(v);
  const topo::CpuSet& usable = hv_->usable_pcpus();
  const sim::Time now = hv_->now();
  VcpuState& s = vs_[v];
  s = VcpuState{};
  s.credit = kCreditInit;
  s.weight = std::max<std::uint32_t>(e.weight, 1);
  s.avgload = std::int64_t{1} << (cfg_.load_precision_shift - 1);  // "Starting load of 50%"
  s.load_last_update = now >> kLoadavgGranularityShift;
  s.budget = kNoBudget;
  const topo::CpuSet hard = e.hard & usable;
  s.pinned = hard.count() == 1;  // csched2_aff_cntl
  // has_soft_affinity() (private.h): soft counts only if it excludes part of hard, overlaps
  // hard and excludes part of the pool.
  has_soft_[v] = !hard.subset_of(e.soft) && e.soft.intersects(hard) && !usable.subset_of(e.soft);

  if (e.domain >= ds_.size()) ds_.resize(e.domain + 1);
  DomainState& d = ds_[e.domain];
  if (d.nr_units == 0) {
    const hv::Domain& dom = hv_->domain(e.domain);
    d.nr_units = static_cast<std::uint32_t>(dom.vcpus.size());
    d.parked.reserve(d.nr_units);
    // csched2_dom_cntl: a cap is valid up to 100 x nr_units (the loader refuses more, as Xen
    // does); clamped here for a Host built without the loader.
    d.cap = std::min(dom.cap_pct, 100 * d.nr_units);
    if (d.cap > 0) {
      d.tot_budget = cfg_.cap_period * d.cap / 100;
      d.budget = d.tot_budget;
      d.next_repl = now + cfg_.cap_period;
      act_->arm_timer(e.domain, d.next_repl);
    }
  }
  if (d.cap > 0) {
    // Each vCPU must grab before it runs; its quota is 1/N of the pool, "too small quotas ...
    // won't happen because, in csched2_runtime(), CSCHED2_MIN_TIMER is what would be used".
    s.budget = 0;
    s.budget_quota = std::max<std::int64_t>(d.tot_budget / d.nr_units, kMinTimer);
  }
  s.processor = res_pick(v);
  runq_assign(v, rq_of_[s.processor]);
}

// ----------------------------------------------------------------------------------------------
// Credit and budget.

// burn_credits() + t2c_update(): charge the run time since start_time at max_weight/weight,
// keeping the division's remainder so frequent short runs add up.
void Credit2::burn_credits(VcpuId v, sim::Time now) {
  VcpuState& s = vs_[v];
  const sim::Duration delta = now - s.start_time;
  if (delta <= 0) return;
  const std::uint64_t val = static_cast<std::uint64_t>(delta) * rqs_[s.rq].max_weight + s.residual;
  s.residual = val % s.weight;
  const auto burn = static_cast<std::int64_t>(val / s.weight);
  s.credit = std::max(s.credit - burn, kCreditMin);
  if (has_cap(v)) s.budget -= delta;
  s.start_time = now;
}

// reset_credit(): a new epoch for one runqueue.
void Credit2::reset_credit(std::uint32_t rq, sim::Time now, VcpuId snext) {
  // A vCPU at the floor "may be allowed to run long enough" to stay negative after +10 ms:
  // then everyone gets +20 ms so snext is in the black again.
  std::int64_t reset = kCreditInit;
  if (vs_[snext].credit == kCreditMin) reset += kCreditInit;
  Runqueue& r = rqs_[rq];
  for (VcpuId u = r.svc.front(); u != kIdle; u = VcpuList::next(svc_links_, u)) {
    VcpuState& s = vs_[u];
    if (curr_[s.processor] == u) {
      burn_credits(u, now);
      // Out of budget by this accounting: its pCPU must park it.
      if (s.budget <= 0) tickle_cpu(s.processor);
    }
    s.credit = std::min(s.credit + reset, kCreditInit + kCarryoverMax);
    s.start_time = now;
  }
  ++resets_;
  // "No need to resort runqueue, as everyone's order should be the same."
}

bool Credit2::has_cap(VcpuId v) const { return vs_[v].budget != kNoBudget; }

// unit_grab_budget(): charge any overrun to the pool, then take a quota; park if none is left.
// With defer_park the vCPU is queued and pick_next may not change runq membership: the caller
// parks it at commit (set_next).
bool Credit2::grab_budget(VcpuId v, bool defer_park, sim::Time now) {
  VcpuState& s = vs_[v];
  if (s.budget > 0) return true;
  DomainState& d = ds_[hv_->vcpu(v).domain];
  d.budget += s.budget;
  if (d.budget > 0) {
    const std::int64_t b = std::min(s.budget_quota, d.budget);
    s.budget = b;
    d.budget -= b;
  } else {
    s.budget = 0;
    if (!defer_park) park(v, now);
  }
  return s.budget > 0;
}

// park_unit(): off the runq (load -1) if queued; a current vCPU gets its -1 in context_saved.
void Credit2::park(VcpuId v, sim::Time now) {
  VcpuState& s = vs_[v];
  if (s.parked) return;
  s.parked = true;
  if (s.on_runq) {
    runq_remove(v);
    update_load(s.rq, v, -1, now);
  }
  ds_[hv_->vcpu(v).domain].parked.push_back(v);
}

// unit_return_budget(): unused budget goes back to the pool. True if parked vCPUs may go.
bool Credit2::return_budget(VcpuId v) {
  VcpuState& s = vs_[v];
  DomainState& d = ds_[hv_->vcpu(v).domain];
  d.budget += s.budget;
  s.budget = 0;
  return d.budget > 0 && !d.parked.empty();
}

// unpark_parked_units(): Xen adds parked units at the list head and walks from the head, so the
// most recently parked goes first.
void Credit2::unpark_parked(hv::DomainId dom, sim::Time now) {
  DomainState& d = ds_[dom];
  unpark_scratch_.assign(d.parked.rbegin(), d.parked.rend());
  d.parked.clear();
  for (VcpuId v : unpark_scratch_) {
    VcpuState& s = vs_[v];
    s.parked = false;
    if (s.scheduled) {
      // Between its pCPU's decision and context_saved: requeue it there.
      s.delayed_runq_add = true;
    } else if (hv_->vcpu(v).state == hv::Runstate::kRunnable && runnable(v) && !s.on_runq) {
      // Runnable, and off the runq only for want of budget (a blocked one waits for its wake).
      update_load(s.rq, v, +1, now);
      runq_insert(v);
      runq_tickle(v, now);
    }
  }
}

// replenish_domain_budget(): refill (more than once if the timer is late); unpark only if the
// pool is then positive, clamped to one period's worth.
void Credit2::replenish(hv::DomainId dom, sim::Time now) {
  DomainState& d = ds_[dom];
  do {
    d.next_repl += cfg_.cap_period;
    d.budget += d.tot_budget;
  } while (d.next_repl <= now);
  if (d.budget > 0) {
    d.budget = std::min(d.budget, d.tot_budget);
    unpark_parked(dom, now);
  }
  act_->arm_timer(dom, d.next_repl);
}

void Credit2::on_timer(hv::TimerId t, sim::Time now) {
  here_ = kNoPcpu;
  // Timer ids are domain ids: the per-domain cap replenishment timers (sdom->repl_timer).
  if (t < ds_.size() && ds_[t].cap > 0) replenish(t, now);
}

// ----------------------------------------------------------------------------------------------
// Runq and tickling.

// runq_insert(): before the first vCPU with strictly less credit, so equal credits stay FIFO.
void Credit2::runq_insert(VcpuId v) {
  VcpuState& s = vs_[v];
  Runqueue& r = rqs_[s.rq];
  VcpuId pos = r.runq.front();
  while (pos != kIdle && s.credit <= vs_[pos].credit) pos = VcpuList::next(runq_links_, pos);
  r.runq.insert_before(runq_links_, pos, v);
  s.on_runq = true;
}

void Credit2::runq_remove(VcpuId v) {
  VcpuState& s = vs_[v];
  rqs_[s.rq].runq.remove(runq_links_, v);
  s.on_runq = false;
}

// Xen's unit_runnable(): not blocked, parked or migrating.
bool Credit2::runnable(VcpuId v) const {
  const VcpuState& s = vs_[v];
  return hv_->vcpu(v).state != hv::Runstate::kBlocked && !s.parked && !s.migrate_request;
}

// affinity_balance_cpumask(BALANCE_SOFT_AFFINITY): soft & hard, or hard if they are disjoint.
topo::CpuSet Credit2::soft_step_mask(VcpuId v) const {
  const hv::Vcpu& e = hv_->vcpu(v);
  const topo::CpuSet m = e.soft & e.hard;
  return m.any() ? m : e.hard;
}

// smt_idle_mask_set(): a core's threads (in this runqueue) join smt_idle only when all are idle
// and untickled.
void Credit2::smt_idle_set(PcpuId p) {
  if (sibling_mask_[p].subset_of(idle_ - tickled_)) smt_idle_ |= sibling_mask_[p];
}

// smt_idle_mask_clear().
void Credit2::smt_idle_clear(PcpuId p) {
  if (sibling_mask_[p].subset_of(smt_idle_)) smt_idle_ -= sibling_mask_[p];
}

// tickle_cpu(): mark, take its core out of smt_idle, raise SCHEDULE_SOFTIRQ. cpu_raise_softirq()
// of another pCPU sends it an event-check IPI (smp_send_event_check_cpu), so a busy one runs its
// vCPU on until the IPI arrives (SchedActions::resched_remote); the mark is made at once, so no
// other tickle picks it meanwhile. An idle pCPU is woken at once: x86's arch_skip_send_event_check
// (xen/arch/x86/acpi/cpu_idle.c) sends no IPI to a CPU in cpuidle_mwait_flags, which watches its
// softirq word. MODEL: every idle pCPU counts as one in mwait.
void Credit2::tickle_cpu(PcpuId p) {
  tickled_.set(p);
  smt_idle_clear(p);
  if (p == here_ || idle_.test(p)) act_->tickle(p);
  else act_->resched_remote(p);
}

PcpuId Credit2::cycle_from(PcpuId from, const topo::CpuSet& mask) const {
  // cpumask_cycle(): the next member after `from`, wrapping around.
  const PcpuId n = mask.next(from + 1);
  return n != topo::CpuSet::kNone ? n : mask.first();
}

// tickle_score(): how much v deserves p, whose current vCPU is preempted if the score wins.
std::int64_t Credit2::tickle_score(VcpuId v, PcpuId p, sim::Time now) {
  const VcpuId cur = curr_[p];
  if (cur == kIdle) return -1;
  // is_preemptable(): not before it ran ratelimit - 50 us.
  if (cfg_.ratelimit > kRatelimitTickleTolerance &&
      now - vs_[cur].dispatched_at <= cfg_.ratelimit - kRatelimitTickleTolerance)
    return -1;
  burn_credits(cur, now);
  std::int64_t score = vs_[v].credit - vs_[cur].credit;
  if (vs_[v].processor != p) score -= cfg_.migrate_resist;
  if (score > 0) {
    // Soft-affinity bonuses: p in v's soft affinity, and p outside cur's.
    if (hv_->vcpu(v).soft.test(p)) score += kCreditInit;
    if (!hv_->vcpu(cur).soft.test(p)) score += kCreditInit;
  }
  return score;
}

// runq_tickle(): pick one pCPU of v's runqueue to reschedule for v, and reserve it.
void Credit2::runq_tickle(VcpuId v, sim::Time now) {
  VcpuState& s = vs_[v];
  const hv::Vcpu& e = hv_->vcpu(v);
  const Runqueue& r = rqs_[s.rq];
  const PcpuId cpu = s.processor;
  const topo::CpuSet online = r.active & hv_->usable_pcpus();
  PcpuId ipid = kNoPcpu;
  // test_or_cycle: v's own pCPU if in the mask, else the next one after it.
  auto test_or_cycle = [&](const topo::CpuSet& m) -> PcpuId {
    if (m.empty()) return kNoPcpu;
    return m.test(cpu) ? cpu : cycle_from(cpu, m);
  };

  // Exclusive pinning: its only pCPU, if idle and untickled.
  if (s.pinned && idle_.test(cpu) && !tickled_.test(cpu)) {
    ipid = cpu;
  } else {
    // Idle pCPUs: soft-affinity step (only with an effective soft affinity), then hard; in
    // each, fully idle cores first, then any idle untickled thread.
    for (int step = 0; step < 2 && ipid == kNoPcpu; ++step) {
      if (step == 0 && !has_soft(v)) continue;
      const topo::CpuSet aff = (step == 0 ? soft_step_mask(v) : e.hard) & online;
      // Core scheduling, cookie-aware wake-up (Aubrey Li's check, which the reference places in
      // select_idle_cpu's scan only; not in Xen, whose credit2 has no cookies): a wholly idle core
      // matches any cookie (Linux sched_core_cookie_match); an idle thread beside a busy sibling
      // only if HypervisorView::wake_cookie_match accepts it. MODEL: applied to this scan of idle
      // threads, credit2's counterpart; the exclusive-pin and busy-pCPU steps stay cookie-blind,
      // as Linux's prev/target shortcuts do.
      ipid = test_or_cycle(smt_idle_ & aff);
      if (ipid == kNoPcpu) {
        // The choice test_or_cycle would make, skipping threads whose core runs another cookie
        // (one query per wake-up when core scheduling is off).
        topo::CpuSet idle = (idle_ - tickled_) & aff;
        for (ipid = test_or_cycle(idle); ipid != kNoPcpu && !hv_->wake_cookie_match(ipid, v); ipid = test_or_cycle(idle))
          idle.reset(ipid);
      }
    }
    if (ipid == kNoPcpu) {
      // Busy pCPUs: the best tickle_score > 0; v's own pCPU first, taken at once if it wins
      // and is in v's soft affinity.
      topo::CpuSet busy = ((online - idle_) - tickled_) & e.hard;
      std::int64_t max = 0;
      bool done = false;
      if (busy.test(cpu)) {
        busy.reset(cpu);
        const std::int64_t score = tickle_score(v, cpu, now);
        if (score > max) {
          max = score;
          ipid = cpu;
          done = e.soft.test(cpu);
        }
      }
      if (!done) {
        busy.for_each([&](PcpuId i) {
          const std::int64_t score = tickle_score(v, i, now);
          if (score > max) {
            max = score;
            ipid = i;
          }
        });
      }
      if (ipid == kNoPcpu) return;  // nobody to preempt: v waits in the runq
    }
  }
  tickle_cpu(ipid);
  s.tickled_cpu = ipid;
}

// ----------------------------------------------------------------------------------------------
// Hooks: placement, wake, sleep, yield.

// Xen does not call csched2_res_pick() on an ordinary wake: the vCPU stays where it is
// assigned (its runqueue, via its processor); runq_tickle() then chooses the pCPU.
// The wake-up runs on the waker's pCPU (an event channel's sender), or on the vCPU's own for its
// timer (Xen keeps a vCPU's timers on v->processor); wake() tickles from there.
PcpuId Credit2::pick_cpu(VcpuId v, sim::Time) {
  const PcpuId waker_cpu = hv_->wake_source().by.pcpu;
  here_ = waker_cpu != kNoPcpu ? waker_cpu : vs_[v].processor;
  return vs_[v].processor;
}

// csched2_unit_wake().
void Credit2::wake(VcpuId v, sim::Time now) {
  VcpuState& s = vs_[v];
  if (curr_[s.processor] == v || s.on_runq) return;
  if (s.scheduled) {
    // Not yet context-switched out: requeue after context_saved.
    s.delayed_runq_add = true;
    return;
  }
  // _VPF_parked: vcpu_wake() finds it not runnable and does not call the scheduler; the refill
  // (unpark_parked_units) queues it. The host already counts it Runnable.
  if (s.parked) return;
  update_load(s.rq, v, +1, now);
  runq_insert(v);
  runq_tickle(v, now);
}

// A vCPU that blocks. The dispatcher only blocks running vCPUs (Host::halt, Xen's guest block:
// SCHEDOP_block/poll, HLT), which in Xen reach csched2_schedule() on their pCPU rather than
// csched2_unit_sleep(); the part of csched2_schedule() that concerns the outgoing vCPU is done
// here, the context_saved() part in put_prev(). A queued vCPU (Xen's sleep: pause) is dequeued.
void Credit2::sleep(VcpuId v, sim::Time now) {
  VcpuState& s = vs_[v];
  here_ = s.processor;
  if (curr_[s.processor] == v) {
    burn_credits(v, now);
    if (has_cap(v) && s.budget <= 0) grab_budget(v, false, now);
    s.yielded = false;  // runq_candidate consumes the flag
  } else if (s.on_runq) {
    update_load(s.rq, v, -1, now);
    runq_remove(v);
  } else {
    s.delayed_runq_add = false;
  }
}

// csched2_unit_yield(): a flag runq_candidate() consumes; the dispatcher reschedules v's pCPU
// (Xen's vcpu_yield raises SCHEDULE_SOFTIRQ locally). Xen has no directed yield: `to` is ignored.
int Credit2::yield(VcpuId v, VcpuId, sim::Time) {
  vs_[v].yielded = true;
  return 0;  // no directed yield in Xen: the result is never used
}

// ----------------------------------------------------------------------------------------------
// Choosing and committing.

// runq_candidate(): choose for p (no runq change; see grab_budget's defer_park).
Credit2::Decision Credit2::runq_candidate(PcpuId p, VcpuId scurr, sim::Time now, const hv::PickFilter& f) {
  Decision d;
  d.valid = true;
  const Runqueue& r = rqs_[rq_of_[p]];
  VcpuId snext = kIdle;
  bool yield = false;
  if (scurr != kIdle) {
    VcpuState& c = vs_[scurr];
    yield = std::exchange(c.yielded, false);
    const bool cur_ok = runnable(scurr) && f.allows(hv_->vcpu(scurr));
    // Ratelimit: keep a runnable current vCPU younger than ratelimit, without a scan (not if
    // it yielded: "it may be the case that scurr is about to spin").
    if (!yield && cfg_.ratelimit > 0 && cur_ok && now - c.dispatched_at < cfg_.ratelimit) {
      d.snext = scurr;
      return d;
    }
    // Soft-affinity kick: running outside its soft affinity while an idle untickled pCPU of
    // this runqueue is inside it: default to idle, so it is requeued and tickled over there.
    bool soft_aff_preempt = false;
    if (has_soft(scurr)) {
      const topo::CpuSet soft = soft_step_mask(scurr);
      if (!soft.test(p)) soft_aff_preempt = (soft & ((idle_ - tickled_) & r.active) & hv_->usable_pcpus()).any();
    }
    if (cur_ok && !soft_aff_preempt) snext = scurr;
  }
  std::int64_t snext_credit = snext == kIdle ? kIdleCredit : vs_[snext].credit;
  for (VcpuId u = r.runq.front(); u != kIdle; u = VcpuList::next(runq_links_, u)) {
    const VcpuState& su = vs_[u];
    const hv::Vcpu& e = hv_->vcpu(u);
    if (!runnable(u)) continue;
    if (!e.hard.test(p)) continue;
    if (!f.allows(e)) continue;  // MODEL: the core-scheduling filter acts like hard affinity
    // Reserved for another pCPU of this runqueue that has not scheduled yet (Xen tests
    // rqd->tickled: a tickle left in another runqueue, by a vCPU balance_load moved here since,
    // reserves nothing).
    if (su.tickled_cpu != kNoPcpu && su.tickled_cpu != p && tickled_.test(su.tickled_cpu) &&
        rq_of_[su.tickled_cpu] == rq_of_[p])
      continue;
    // From another pCPU only with a clear lead (CSCHED2_MIGRATE_RESIST).
    if (su.processor != p && snext_credit + cfg_.migrate_resist > su.credit) continue;
    if (yield || su.credit > snext_credit) {
      if (!has_cap(u) || grab_budget(u, /*defer_park=*/true, now)) {
        snext = u;
        snext_credit = su.credit;
      } else {
        d.to_park = u;
      }
    }
    break;  // "In any case, if we got this far, break."
  }
  d.snext = snext;
  if (snext != scurr && scurr != kIdle && runnable(scurr)) d.requeued = scurr;
  return d;
}

// csched2_runtime(), on the state set_next() will create: the queued vCPU without budget parked,
// snext off the runq, the reset (if due) applied, the migration compensation added.
sim::Duration Credit2::runtime(PcpuId p, const Decision& d, sim::Time now) const {
  if (d.snext == kIdle) return 0;  // idle: no timer; a tickle wakes it
  const VcpuState& s = vs_[d.snext];
  const Runqueue& r = rqs_[rq_of_[p]];
  VcpuId head = r.runq.front();
  while (head != kIdle && (head == d.snext || head == d.to_park)) head = VcpuList::next(runq_links_, head);
  const std::int64_t top = head == kIdle ? s.credit : std::max(s.credit, vs_[head].credit);
  std::int64_t reset = 0;
  if (top <= kCreditReset) reset = s.credit == kCreditMin ? 2 * kCreditInit : kCreditInit;
  auto after = [&](std::int64_t c) { return reset ? std::min(c + reset, kCreditInit + kCarryoverMax) : c; };
  const std::int64_t snext_credit = after(s.credit) + (s.processor != p ? kMigrateCompensation : 0);

  sim::Duration min_time = kMinTimer;
  if (cfg_.ratelimit > 0) {
    // A continuing vCPU only has the rest of its ratelimit to honour.
    const sim::Duration rl = curr_[p] == d.snext ? s.dispatched_at + cfg_.ratelimit - now : cfg_.ratelimit;
    min_time = std::max(min_time, rl);
  }
  // Run until snext's credit falls to the best waiter's: the runq head, or the vCPU it
  // displaces, which is requeued only after the switch (inflight credit, per the reference).
  std::int64_t w = 0;
  if (head != kIdle) w = std::max<std::int64_t>(after(vs_[head].credit), 0);
  if (d.requeued != kIdle) w = std::max(w, after(vs_[d.requeued].credit));
  const std::int64_t rt = w > 0 ? snext_credit - w : snext_credit;
  sim::Duration time = rt > 0 ? rt * s.weight / r.max_weight : 0;  // c2t()
  if (has_cap(d.snext)) time = std::min(time, s.budget);
  // The floor is tested first and wins over the ceiling.
  if (time < min_time) time = min_time;
  else if (time > kMaxTimer) time = kMaxTimer;
  return time;
}

// csched2_schedule(), the choosing half.
hv::Pick Credit2::pick_next(PcpuId p, sim::Time now, const hv::PickFilter& f) {
  here_ = p;
  flush_pending(p, now);
  // "Clear tickled bit now that we've been scheduled."
  if (tickled_.test(p)) {
    tickled_.reset(p);
    smt_idle_set(p);
  }
  const VcpuId scurr = curr_[p];
  if (scurr != kIdle) {
    burn_credits(scurr, now);
    // Overran its budget: take more, or be parked.
    if (vs_[scurr].budget <= 0) grab_budget(scurr, false, now);
  }
  const Decision d = runq_candidate(p, scurr, now, f);
  decision_[p] = d;
  return {d.snext, runtime(p, d, now)};
}

// csched2_schedule(), the committing half.
void Credit2::set_next(PcpuId p, VcpuId v, sim::Time now) {
  here_ = p;
  const Decision d = decision_[p];
  decision_[p].valid = false;
  const std::uint32_t rq = rq_of_[p];
  if (d.valid && d.snext == v && d.to_park != kIdle) park(d.to_park, now);
  if (v != kIdle) {
    VcpuState& s = vs_[v];
    if (curr_[p] != v) {
      if (s.on_runq) runq_remove(v);
      s.scheduled = true;
      s.dispatched_at = now;  // state_entry_time: not reset when the same vCPU continues
    } else {
      update_load(rq, v, 0, now);
    }
    if (idle_.test(p)) {
      idle_.reset(p);
      smt_idle_clear(p);
    }
    // End of an epoch: the best credit in the runqueue is used up.
    const VcpuId head = rqs_[rq].runq.front();
    const std::int64_t top = head == kIdle ? s.credit : std::max(s.credit, vs_[head].credit);
    if (top <= kCreditReset) {
      reset_credit(rq, now, v);
      const std::uint64_t moves = balance_moves_;
      balance_load(p, now);
      rebalanced_[p] = balance_moves_ != moves;
    }
    s.start_time = now;
    s.tickled_cpu = kNoPcpu;
    if (s.processor != p) {
      s.credit += kMigrateCompensation;
      s.processor = p;
    }
    curr_[p] = v;
  } else {
    if (!idle_.test(p)) {
      idle_.set(p);
      smt_idle_set(p);
    }
    update_load(rq, kIdle, 0, now);  // "make sure avgload gets updated periodically"
    curr_[p] = kIdle;
  }
  flush_pending(p, now);
}

// csched2_schedule() computes the slice last, after the reset check and its balance_load():
// a vCPU pulled onto this runqueue (migrate() queues it here) may be the waiter snext runs down
// to, and a pushed one no longer is. pick_next's slice foresaw the reset but not the moves, so
// after a move it is computed again on the committed state (the outgoing vCPU is back on the
// runq by now, which runtime() reads as it reads d.requeued).
sim::Duration Credit2::committed_slice(PcpuId p, VcpuId v, sim::Duration picked, sim::Time now) {
  if (!std::exchange(rebalanced_[p], std::uint8_t{0})) return picked;
  Decision d;
  d.valid = true;
  d.snext = v;
  return runtime(p, d, now);
}

// Xen's context switch completes with csched2_context_saved(prev). A preempted vCPU's is run at
// the end of its successor's set_next (see the essay); a blocked one's at once.
void Credit2::put_prev(PcpuId p, VcpuId prev, sim::Time now) {
  here_ = p;
  curr_[p] = kIdle;
  if (hv_->vcpu(prev).state == hv::Runstate::kRunnable) {
    // csched2_schedule: "If switching from a non-idle runnable unit, put it back on the runqueue."
    if (runnable(prev)) vs_[prev].delayed_runq_add = true;
    flush_pending(p, now);
    pending_saved_[p] = prev;
  } else {
    context_saved(prev, now);
  }
}

void Credit2::flush_pending(PcpuId p, sim::Time now) {
  const VcpuId v = std::exchange(pending_saved_[p], kIdle);
  if (v != kIdle) context_saved(v, now);
}

// csched2_context_saved(), then (for a vCPU balance_load asked to move) the migration core.c's
// sched_unit_migrate_finish() completes.
void Credit2::context_saved(VcpuId v, sim::Time now) {
  VcpuState& s = vs_[v];
  s.scheduled = false;
  const bool unpark = has_cap(v) && s.budget > 0 && return_budget(v);
  if (std::exchange(s.delayed_runq_add, false) && runnable(v)) {
    runq_insert(v);
    runq_tickle(v, now);
  } else {
    update_load(s.rq, v, -1, now);
  }
  if (unpark) unpark_parked(hv_->vcpu(v).domain, now);
  if (s.migrate_request) migrate_finish(v, now);
}

// Not a Xen function: Xen's core scheduling is sched-gran (whole-core units), with no cross-
// sibling comparison. Within one runqueue credit is the order runq_candidate uses. MODEL: across
// runqueues (core_wide), credit is taken relative to the runqueue's leader (its runq head and
// the vCPUs current on its pCPUs), because each runqueue resets on its own schedule.
double Credit2::core_priority(PcpuId, VcpuId v, hv::CorePrio how) const {
  const VcpuState& s = vs_[v];
  if (how == hv::CorePrio::kRaw) return static_cast<double>(s.credit);
  const Runqueue& r = rqs_[s.rq];
  std::int64_t top = kIdleCredit;
  if (!r.runq.empty()) top = vs_[r.runq.front()].credit;
  r.active.for_each([&](PcpuId q) {
    if (curr_[q] != kIdle) top = std::max(top, vs_[curr_[q]].credit);
  });
  if (top == kIdleCredit) top = s.credit;
  return static_cast<double>(s.credit - top);
}

void Credit2::dump(std::ostream& os) const {
  const std::int64_t one = std::int64_t{1} << cfg_.load_precision_shift;
  os << "credit2 runqueues=" << rqs_.size() << " ratelimit=" << cfg_.ratelimit << "ns resets=" << resets_
     << " balance_moves=" << balance_moves_ << "\n";
  for (std::uint32_t i = 0; i < rqs_.size(); ++i) {
    const Runqueue& r = rqs_[i];
    os << "  runqueue " << i << ": cpus=" << r.nr_cpus << " max_weight=" << r.max_weight << " load=" << r.load
       << " avgload=" << static_cast<double>(r.avgload) / static_cast<double>(one)
       << " b_avgload=" << static_cast<double>(r.b_avgload) / static_cast<double>(one) << " runq:";
    for (VcpuId u = r.runq.front(); u != kIdle; u = VcpuList::next(runq_links_, u))
      os << " " << u << "(" << vs_[u].credit << ")";
    os << "\n";
  }
}

double Credit2::b_avgload(std::uint32_t rq) const {
  return static_cast<double>(rqs_[rq].b_avgload) / static_cast<double>(std::int64_t{1} << cfg_.load_precision_shift);
}

}  // namespace vcpusim::policy
