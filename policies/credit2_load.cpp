// SPDX-License-Identifier: MIT
// Credit2 load tracking and balancing between runqueues: the decaying load averages
// (update_runq_load, update_svc_load), runqueue assignment (_runq_assign, update_max_weight),
// placement of a vCPU on a runqueue (csched2_res_pick) and balance_load() with migrate()
// (xen/common/sched/credit2.c). Apart from credit2.cpp because it is the one part of credit2
// that looks across runqueues.
//
// The load average, as the comment above update_runq_load() derives it: with time in units of
// 2^10 ns, a window of W = 2^(30-10) units (~1.07 s), loads in Q18 fixed point (1.0 = 2^18),
// and delta the time since the last update,
//     avg += (delta * (load << 18)) >> W  -  (delta * avg) >> W      if delta <= 2^W,
//     avg  = load << 18                                              otherwise,
// each term truncated on its own, the interval charged at the load *before* the change. Overflow
// needs load >= 2^(63-20-18) = 2^25 vCPUs in one runqueue.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <utility>

#include "policies/credit2.h"

namespace vcpusim::policy {

using namespace credit2;  // NOLINT: this file is credit2
using hv::kIdle;
using hv::PcpuId;
using hv::VcpuId;

// update_runq_load().
void Credit2::update_runq_load(std::uint32_t rq, int change, sim::Time now) {
  Runqueue& r = rqs_[rq];
  const unsigned w = load_window_shift_, p = cfg_.load_precision_shift;
  const std::int64_t t = now >> kLoadavgGranularityShift;
  const std::int64_t load = r.load;
  if (r.load_last_update + (std::int64_t{1} << w) < t) {
    r.avgload = load << p;
    r.b_avgload = load << p;
  } else {
    const std::int64_t delta = std::max<std::int64_t>(t - r.load_last_update, 0);
    r.avgload = r.avgload + ((delta * (load << p)) >> w) - ((delta * r.avgload) >> w);
    r.b_avgload = r.b_avgload + ((delta * (load << p)) >> w) - ((delta * r.b_avgload) >> w);
  }
  r.load += change;
  r.load_last_update = t;
}

// update_svc_load(): the sample is 1 for a vCPU that was runnable until now (change -1), 0 for
// one that was not (+1), its runnability otherwise.
void Credit2::update_svc_load(VcpuId v, int change, sim::Time now) {
  VcpuState& s = vs_[v];
  const unsigned w = load_window_shift_, p = cfg_.load_precision_shift;
  const std::int64_t sample = change == -1 ? 1 : change == 1 ? 0 : (runnable(v) ? 1 : 0);
  const std::int64_t t = now >> kLoadavgGranularityShift;
  if (s.load_last_update + (std::int64_t{1} << w) < t) {
    s.avgload = sample << p;
  } else {
    const std::int64_t delta = std::max<std::int64_t>(t - s.load_last_update, 0);
    s.avgload = s.avgload + ((delta * (sample << p)) >> w) - ((delta * s.avgload) >> w);
  }
  s.load_last_update = t;
}

// update_load(): the runqueue, and the vCPU if there is one.
void Credit2::update_load(std::uint32_t rq, VcpuId v, int change, sim::Time now) {
  update_runq_load(rq, change, now);
  if (v != kIdle) update_svc_load(v, change, now);
}

// _runq_assign(): b_avgload becomes the load expected with v here.
void Credit2::runq_assign(VcpuId v, std::uint32_t rq) {
  VcpuState& s = vs_[v];
  Runqueue& r = rqs_[rq];
  s.rq = rq;
  r.svc.push_back(svc_links_, v);
  update_max_weight(rq, s.weight, 0);
  r.b_avgload += s.avgload;
}

// _runq_deassign().
void Credit2::runq_deassign(VcpuId v) {
  VcpuState& s = vs_[v];
  Runqueue& r = rqs_[s.rq];
  r.svc.remove(svc_links_, v);
  update_max_weight(s.rq, 0, s.weight);
  r.b_avgload = std::max<std::int64_t>(r.b_avgload - s.avgload, 0);
  s.rq = kNoRunqueue;
}

// update_max_weight(): a brute-force search only when the heaviest vCPU may have left.
void Credit2::update_max_weight(std::uint32_t rq, std::uint32_t new_weight, std::uint32_t old_weight) {
  Runqueue& r = rqs_[rq];
  if (new_weight > r.max_weight) {
    r.max_weight = new_weight;
  } else if (old_weight == r.max_weight) {
    std::uint32_t m = 1;
    for (VcpuId u = r.svc.front(); u != kIdle; u = VcpuList::next(svc_links_, u)) m = std::max(m, vs_[u].weight);
    r.max_weight = m;
  }
}

// csched2_res_pick(): a pending balance move goes to its target runqueue; otherwise the least
// loaded runqueue (b_avgload; its own counted without v) that v's hard affinity reaches, where
// one that also reaches its soft affinity always wins if there is one, even if more loaded. The
// pCPU is the next after the least loaded runqueue's pick_bias, which takes it, also when the
// soft minimum's runqueue won: Xen cycles "cpumask_cycle(min_rqd->pick_bias, ...)" over the
// soft runqueue's pCPUs and stores the result in min_rqd->pick_bias, so a soft pick moves the
// other runqueue's cursor (runq_tickle chooses the real pCPU later).
PcpuId Credit2::res_pick(VcpuId v) {
  VcpuState& s = vs_[v];
  const hv::Vcpu& e = hv_->vcpu(v);
  const topo::CpuSet hard = e.hard & hv_->usable_pcpus();
  if (std::exchange(s.migrate_request, false)) {
    Runqueue& t = rqs_[s.migrate_rq];
    const topo::CpuSet m = hard & t.active;
    if (m.any()) {
      t.pick_bias = cycle_from(t.pick_bias, m);
      return t.pick_bias;
    }
  }
  constexpr std::int64_t kMaxLoad = std::numeric_limits<std::int64_t>::max();
  std::int64_t min_load = kMaxLoad, min_s_load = kMaxLoad;
  std::uint32_t min_rq = kNoRunqueue, min_s_rq = kNoRunqueue;
  const bool soft = has_soft(v);
  for (std::uint32_t i = 0; i < rqs_.size(); ++i) {
    const Runqueue& r = rqs_[i];
    if (!hard.intersects(r.active)) continue;
    const std::int64_t load = i == s.rq ? std::max<std::int64_t>(r.b_avgload - s.avgload, 0) : r.b_avgload;
    if (soft && load < min_s_load && (hard & r.active).intersects(e.soft)) {
      min_s_load = load;
      min_s_rq = i;
    }
    if (load < min_load) {
      min_load = load;
      min_rq = i;
    }
  }
  topo::CpuSet m = hard;
  std::uint32_t rq = min_rq;
  if (soft && min_s_rq != kNoRunqueue) {
    m &= e.soft;
    rq = min_s_rq;
  }
  Runqueue& cursor = rqs_[min_rq];
  cursor.pick_bias = cycle_from(cursor.pick_bias, m & rqs_[rq].active);
  return cursor.pick_bias;
}

// unit_is_migrateable(): not already moving, and allowed somewhere in rq.
bool Credit2::migrateable(VcpuId v, std::uint32_t rq) const {
  return !vs_[v].migrate_request && (hv_->vcpu(v).hard & hv_->usable_pcpus()).intersects(rqs_[rq].active);
}

// Not Xen's: core scheduling with a cookie-aware balance mode refuses to move v to rq unless
// some allowed pCPU of rq has a core v's cookie may join (HypervisorView::balance_cookie_match),
// as Linux's sched_group_cookie_match asks of a group. MODEL: credit2 moves vCPUs between
// runqueues, not onto pCPUs, so the refusal (RFC v5 can_migrate_task) is per runqueue; credit2
// keeps no nr_balance_failed, so mainline's overridable cache-hot mode refuses the same way.
// balance_load asks it only of a move that would become the best, to keep its O(n*m) scan free
// of queries.
bool Credit2::cookie_may_move(VcpuId v, std::uint32_t rq) const {
  const topo::CpuSet allowed = hv_->vcpu(v).hard & hv_->usable_pcpus() & rqs_[rq].active;
  for (PcpuId p = allowed.first(); p != topo::CpuSet::kNone; p = allowed.next(p + 1))
    if (hv_->balance_cookie_match(p, v)) return true;  // at once when core scheduling is off
  return false;
}

// migrate(): a scheduled vCPU gets a request and moves when its pCPU switches it out; any other
// moves now, to the next pCPU of the target after its pick_bias (soft affinity ignored), and if
// it was queued it is requeued and tickled there.
void Credit2::migrate(VcpuId v, std::uint32_t trq, sim::Time now) {
  VcpuState& s = vs_[v];
  if (s.scheduled) {
    s.migrate_rq = trq;
    s.migrate_request = true;  // also Xen's _VPF_migrating: not runnable until moved
    tickle_cpu(s.processor);
    return;
  }
  const bool on_runq = s.on_runq;
  if (on_runq) {
    runq_remove(v);
    update_runq_load(s.rq, -1, now);
  }
  runq_deassign(v);
  Runqueue& t = rqs_[trq];
  t.pick_bias = cycle_from(t.pick_bias, hv_->vcpu(v).hard & hv_->usable_pcpus() & t.active);
  s.processor = t.pick_bias;
  runq_assign(v, trq);
  if (on_runq) {
    update_runq_load(trq, +1, now);
    runq_insert(v);
    runq_tickle(v, now);
  }
}

// sched_unit_migrate_finish() (core.c) for a vCPU switched out with a balance request:
// csched2_res_pick(), csched2_unit_migrate() (-> migrate() if the runqueue changes), vcpu_wake().
void Credit2::migrate_finish(VcpuId v, sim::Time now) {
  VcpuState& s = vs_[v];
  const PcpuId cpu = res_pick(v);
  if (rq_of_[cpu] != s.rq) migrate(v, rq_of_[cpu], now);
  else s.processor = cpu;
  if (hv_->vcpu(v).state == hv::Runstate::kRunnable && runnable(v) && !s.on_runq) {
    update_load(s.rq, v, +1, now);
    runq_insert(v);
    runq_tickle(v, now);
  }
}

// balance_load(): run on p right after its runqueue reset.
void Credit2::balance_load(PcpuId p, sim::Time now) {
  const std::uint32_t l = rq_of_[p];
  Runqueue& lr = rqs_[l];
  update_runq_load(l, 0, now);

  // The runqueue whose b_avgload differs most from ours.
  std::uint32_t max_delta_rq = kNoRunqueue, last = kNoRunqueue;
  std::int64_t load_delta = 0;
  for (std::uint32_t i = 0; i < rqs_.size(); ++i) {
    last = i;
    if (i == l) continue;
    update_runq_load(i, 0, now);
    const std::int64_t delta = std::abs(lr.b_avgload - rqs_[i].b_avgload);
    if (delta > load_delta) {
      load_delta = delta;
      max_delta_rq = i;
    }
  }
  if (max_delta_rq == kNoRunqueue) return;

  // Below one vCPU of load per pCPU, move only for a gap of 2^(P+under) (1.0 vCPU); otherwise
  // 2^(P+over) (0.125) is enough. Upstream quirk, kept: the test reads st.orqd, the runqueue
  // the scan visited *last* (it may even be our own), not the one it chose.
  {
    const Runqueue& lastr = rqs_[last];
    const unsigned prec = cfg_.load_precision_shift;
    const std::int64_t load_max = std::max(lr.b_avgload, lastr.b_avgload);
    const std::int64_t cpus_max = std::max(lr.nr_cpus, lastr.nr_cpus);
    const int tol = load_max < (cpus_max << prec) ? cfg_.balance_under : cfg_.balance_over;
    if (load_delta < (std::int64_t{1} << (static_cast<int>(prec) + tol))) return;
  }

  // The best push, pull or swap: the one that leaves the smallest gap, if smaller than now.
  // Soft affinity is ignored (as in Xen); blocked vCPUs are candidates too.
  const std::uint32_t o = max_delta_rq;
  Runqueue& orr = rqs_[o];
  VcpuId best_push = kIdle, best_pull = kIdle;
  auto consider = [&](VcpuId push, VcpuId pull) {
    std::int64_t l_load = lr.b_avgload, o_load = orr.b_avgload;
    if (push != kIdle) {
      l_load -= vs_[push].avgload;
      o_load += vs_[push].avgload;
    }
    if (pull != kIdle) {
      l_load += vs_[pull].avgload;
      o_load -= vs_[pull].avgload;
    }
    const std::int64_t delta = std::abs(l_load - o_load);
    if (delta < load_delta && (push == kIdle || cookie_may_move(push, o)) && (pull == kIdle || cookie_may_move(pull, l))) {
      load_delta = delta;
      best_push = push;
      best_pull = pull;
    }
  };
  // O(n*m), as Xen's "FIXME: O(n^2)!". Upstream quirk, kept: the pull side's averages are
  // refreshed only in the first migrateable push vCPU's inner loop.
  bool inner_load_updated = false;
  for (VcpuId push = lr.svc.front(); push != kIdle; push = VcpuList::next(svc_links_, push)) {
    update_svc_load(push, 0, now);
    if (!migrateable(push, o)) continue;
    for (VcpuId pull = orr.svc.front(); pull != kIdle; pull = VcpuList::next(svc_links_, pull)) {
      if (!inner_load_updated) update_svc_load(pull, 0, now);
      if (!migrateable(pull, l)) continue;
      consider(push, pull);
    }
    inner_load_updated = true;
    consider(push, kIdle);
  }
  for (VcpuId pull = orr.svc.front(); pull != kIdle; pull = VcpuList::next(svc_links_, pull))
    if (migrateable(pull, l)) consider(kIdle, pull);

  if (best_push != kIdle) {
    migrate(best_push, o, now);
    ++balance_moves_;
  }
  if (best_pull != kIdle) {
    migrate(best_pull, l, now);
    ++balance_moves_;
  }
}

}  // namespace vcpusim::policy
