// SPDX-License-Identifier: MIT
// Round robin, the reference policy.
//
// Design: each usable pCPU has a FIFO runqueue. A waking entity goes to its previous pCPU's
// queue unless that pCPU is busy and an idle pCPU in its hard affinity exists (then there,
// preferring the same core, then the same node). A pCPU runs its queue head for one slice; at
// slice end the current entity goes to the tail. A pCPU about to idle steals the first entity
// it may run from another queue, and whenever an entity is queued while a pCPU that could run
// it idles, that pCPU is tickled so it steals (work conservation).
//
// Parameters: slice (default 30 ms, the default of Xen credit1's sched_credit_tslice_ms,
// xen/common/sched/credit.c CSCHED_DEFAULT_TSLICE_MS).
//
// Invariants: an entity is queued on at most one pCPU, never while running; only entities whose
// hard affinity contains the pCPU are picked.
//
// Not modelled: weights, caps, priorities. Wake-ups never preempt.
#include "policies/round_robin.h"

#include <ostream>

namespace vcpusim::policy {

using hv::kIdle;
using hv::kNoPcpu;
using hv::PcpuId;
using hv::VcpuId;

std::vector<ParamSpec> RoundRobin::param_specs() {
  return {{"slice", ParamSpec::Kind::kDuration, 30e6, 100e3, 10e9, {},
           "time slice (Xen credit1 sched_credit_tslice_ms default 30 ms)"}};
}

std::unique_ptr<hv::SchedulerPolicy> RoundRobin::make(const ParamValues& v) {
  return std::make_unique<RoundRobin>(static_cast<sim::Duration>(v.get("slice", 30e6)));
}

void RoundRobin::attach(const hv::SchedContext& ctx) {
  hv_ = &ctx.hv;
  act_ = &ctx.act;
  const auto np = hv_->topology().num_threads();
  head_.assign(np, kNil);
  tail_.assign(np, kNil);
  len_.assign(np, 0);
  slice_end_.assign(np, 0);
  running_.assign(np, kIdle);
}

void RoundRobin::insert_vcpu(VcpuId v) {
  if (v >= next_.size()) {
    next_.resize(v + 1, kNil);
    prev_.resize(v + 1, kNil);
    queued_on_.resize(v + 1, kNoPcpu);
    since_.resize(v + 1, 0);
  }
}

void RoundRobin::enqueue(PcpuId p, VcpuId v) {
  next_[v] = kNil;
  prev_[v] = tail_[p];
  if (tail_[p] != kNil) next_[tail_[p]] = v; else head_[p] = v;
  tail_[p] = v;
  queued_on_[v] = p;
  since_[v] = hv_->now();
  ++len_[p];
  nonempty_.set(p);
}

void RoundRobin::dequeue(VcpuId v) {
  const PcpuId p = queued_on_[v];
  if (p == kNoPcpu) return;
  if (prev_[v] != kNil) next_[prev_[v]] = next_[v]; else head_[p] = next_[v];
  if (next_[v] != kNil) prev_[next_[v]] = prev_[v]; else tail_[p] = prev_[v];
  queued_on_[v] = kNoPcpu;
  if (--len_[p] == 0) nonempty_.reset(p);
}

VcpuId RoundRobin::first_fit(PcpuId p, PcpuId on, const hv::PickFilter& f) const {
  for (VcpuId v = head_[p]; v != kNil; v = next_[v]) {
    const hv::Vcpu& e = hv_->vcpu(v);
    // Core scheduling: stealing onto a core that runs another cookie may be refused (a no-op
    // unless cookie-aware balancing is on; a pCPU's own queue is never refused).
    if (e.hard.test(on) && f.allows(e) && (p == on || hv_->balance_cookie_match(on, v))) return v;
  }
  return kNil;
}

PcpuId RoundRobin::pick_cpu(VcpuId v, sim::Time) {
  const hv::Vcpu& e = hv_->vcpu(v);
  const auto& topo = hv_->topology();
  const topo::CpuSet allowed = e.hard & hv_->usable_pcpus();
  const PcpuId last = e.pcpu;
  const bool last_ok = last != kNoPcpu && allowed.test(last);
  if (last_ok && free_idle().test(last)) return last;
  topo::CpuSet idle = allowed & free_idle();
  // Core scheduling, cookie-aware wake-up (Linux __select_idle_cpu + sched_cpu_cookie_match): the
  // idle scan skips CPUs whose core runs another cookie (the previous CPU above is taken anyway).
  // A no-op unless core scheduling with cookie-aware wake-up is on.
  const topo::CpuSet scan = idle;
  scan.for_each([&](PcpuId q) {
    if (!hv_->wake_cookie_match(q, v)) idle.reset(q);
  });
  if (idle.any()) {
    if (last_ok) {
      const topo::CpuSet core = idle & topo.smt_mask(last);
      if (core.any()) return core.first();
      const topo::CpuSet node = idle & topo.threads_of_node(topo.node_of(last));
      if (node.any()) return node.first();
    }
    return idle.first();
  }
  if (last_ok) return last;
  // Everything allowed is busy: the shortest queue (ties: the lowest id).
  PcpuId best = allowed.first();
  allowed.for_each([&](PcpuId p) {
    if (len_[p] < len_[best]) best = p;
  });
  return best;
}

void RoundRobin::kick_idle_for(VcpuId v) {
  const topo::CpuSet idle = hv_->vcpu(v).hard & free_idle();
  if (idle.any()) tickle(idle.first());
}

void RoundRobin::wake(VcpuId v, sim::Time) {
  const PcpuId p = hv_->vcpu(v).pcpu;
  enqueue(p, v);
  if (free_idle().test(p)) tickle(p);
  else kick_idle_for(v);
}

void RoundRobin::sleep(VcpuId v, sim::Time) { dequeue(v); }

hv::Pick RoundRobin::pick_next(PcpuId p, sim::Time now, const hv::PickFilter& f) {
  const VcpuId curr = hv_->pcpu(p).curr;
  const bool curr_ok = curr != kIdle && hv_->vcpu(curr).state == hv::Runstate::kRunning &&
                       f.allows(hv_->vcpu(curr));
  // Mid-slice reschedules (a tickle while busy) keep the current entity.
  if (curr_ok && now < slice_end_[p]) return {curr, slice_end_[p] - now};
  VcpuId v = first_fit(p, p, f);
  if (v == kNil && curr_ok) return {curr, slice_};
  if (v == kNil) {
    // Idle stealing: the first entity this pCPU may run, from the other queues in id order.
    for (PcpuId q = nonempty_.first(); q != topo::CpuSet::kNone && v == kNil; q = nonempty_.next(q + 1))
      if (q != p) v = first_fit(q, p, f);
  }
  if (v == kNil) return {kIdle, 0};
  return {v, slice_};
}

void RoundRobin::set_next(PcpuId p, VcpuId v, sim::Time now) {
  tickled_.reset(p);
  if (v != kIdle) {
    dequeue(v);
    if (v != running_[p]) since_[v] = now;
    if (v != running_[p] || now >= slice_end_[p]) slice_end_[p] = now + slice_;
  }
  running_[p] = v;
}

void RoundRobin::put_prev(PcpuId p, VcpuId prev, sim::Time) {
  running_[p] = kIdle;
  if (hv_->vcpu(prev).state != hv::Runstate::kRunnable) return;
  enqueue(p, prev);
  kick_idle_for(prev);
}

double RoundRobin::core_priority(PcpuId, VcpuId v, hv::CorePrio) const {
  const double age = static_cast<double>(hv_->now() - since_[v]);
  return hv_->vcpu(v).state == hv::Runstate::kRunning ? -age : age;
}

void RoundRobin::dump(std::ostream& os) const {
  os << "rr slice=" << slice_ << "ns\n";
  for (PcpuId p = 0; p < len_.size(); ++p)
    if (len_[p]) os << "  pcpu " << p << ": " << len_[p] << " queued\n";
}

}  // namespace vcpusim::policy
