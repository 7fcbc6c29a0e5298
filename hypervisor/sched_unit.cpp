// SPDX-License-Identifier: MIT
// Core-granular co-scheduling (Xen sched-gran=core): the units' view the policy is attached to,
// and the dispatcher's part, which schedules a core as a whole (sched_unit.h has the design;
// reference ../shared/reference/xen-credit2.md section 8; xen/common/sched/core.c).
//
// The dispatcher's part, per event:
//   decision  unit_schedule(m): on a tickle of, or the slice end on, a core's master thread. One
//             pick_next for the core, counted as a rendezvous. A new unit: every vCPU of the old
//             one leaves its thread (Runnable), every non-blocked vCPU of the new one is switched
//             in on its slot's thread, paying the context switch and the rendezvous; its empty
//             and blocked slots leave their threads idle-in-unit. The same unit: its running
//             vCPUs only pay the rendezvous.
//   wake      unit_kick(v): the vCPU's unit runs -> v is switched in on its thread alone
//             (sched_force_context_switch: no decision, no rendezvous); the unit was blocked ->
//             it wakes in the policy (pick_cpu, wake); otherwise the unit is already queued.
//   block     unit_halt(v): v leaves its thread (idle-in-unit); the last vCPU of the unit to
//             block blocks the unit (policy sleep, the unit leaves its core); in every case the
//             core reschedules (vcpu_block raises SCHEDULE_SOFTIRQ: a full rendezvous).
//   yield     Host::yield: the policy's yield for the unit, and the core reschedules.
#include "hypervisor/sched_unit.h"

#include <algorithm>
#include <string>

#include "hypervisor/host.h"

namespace vcpusim::hv {

// ---------------------------------------------------------------------------------------------
// UnitView.

UnitView::UnitView(const HypervisorView& host, SchedActions& act, const topo::CpuSet& masters)
    : host_(host), act_(act), masters_(masters), idle_(masters) {
  const std::uint32_t n = host.topology().num_threads();
  pcpus_.resize(n);
  for (PcpuId p = 0; p < n; ++p) {
    pcpus_[p].id = p;
    pcpus_[p].usable = masters.test(p);
  }
  unit_of_.assign(host.num_vcpus(), kIdle);
}

bool UnitView::add_domain(const Domain& d, const std::vector<Vcpu>& vcpus, std::uint32_t g) {
  Domain view;
  view.id = d.id;
  view.name = d.name;
  view.bare_metal = d.bare_metal;
  view.weight = d.weight;
  view.cap_pct = d.cap_pct;
  view.memory_on_node = d.memory_on_node;
  view.numa_excess = d.numa_excess;
  // sched_alloc_unit(): vCPUs with equal vcpu_id / gran share a unit.
  for (std::size_t first = 0; first < d.vcpus.size(); first += g) {
    SchedUnit u;
    u.id = static_cast<UnitId>(units_.size());
    u.domain = d.id;
    u.slots.assign(g, kIdle);
    Vcpu e;
    e.id = u.id;
    e.domain = d.id;
    e.index = static_cast<std::uint32_t>(first / g);
    e.weight = d.weight;
    e.hard = masters_;
    topo::CpuSet soft = masters_;
    for (std::size_t i = 0; i < g && first + i < d.vcpus.size(); ++i) {
      const Vcpu& v = vcpus[d.vcpus[first + i]];
      u.slots[i] = v.id;
      unit_of_[v.id] = u.id;
      // Affinity is read at the master threads only (cpupool_domain_master_cpumask); the unit
      // has one affinity, so its vCPUs' masks meet.
      e.hard &= v.hard;
      soft &= v.soft;
    }
    if (e.hard.empty()) return false;
    // The soft mask stays as given, as Xen's sched_set_affinity() stores it: one that misses the
    // hard mask is not effective (has_soft_affinity()), and tickle_score() and runq_tickle()'s
    // "in new's soft affinity, just take it" test it raw, so no pCPU of the unit's is in it.
    // (An empty one, which the loader refuses, takes the hard mask, as a vCPU's does.)
    e.soft = soft.any() ? soft : e.hard;
    view.vcpus.push_back(u.id);
    units_.push_back(std::move(u));
    entities_.push_back(e);
  }
  if (domains_.size() <= d.id) domains_.resize(d.id + 1);
  domains_[d.id] = std::move(view);
  return true;
}

void UnitView::set_running(UnitId u, PcpuId m) {
  SchedUnit& su = units_[u];
  if (m == kNoPcpu) {
    pcpus_[su.core].curr = kIdle;
    idle_.set(su.core);
    su.core = kNoPcpu;
    return;
  }
  su.core = m;
  pcpus_[m].curr = u;
  idle_.reset(m);
  entities_[u].pcpu = m;
  entities_[u].last_ran = m;
}

// ---------------------------------------------------------------------------------------------
// The dispatcher's part.

void Host::unit_start() {
  topo::CpuSet masters;
  usable_.for_each([&](PcpuId p) {
    if (topo_.smt_mask(p).first() == p) masters.set(p);
  });
  units_ = std::make_unique<UnitView>(*this, *this, masters);
  const std::uint32_t g = topo_.threads_per_core();
  for (const Domain& d : domains_) {
    if (!units_->add_domain(d, vcpus_, g))
      violation("hard-affinity", d.vcpus.front(), kNoPcpu,
                "a unit of " + d.name + " has no core's first thread in its vCPUs' hard affinities (at sched-gran=core "
                "affinity is read at the cores' first threads, and one names the whole core)");
  }
  // A master in a unit's affinity names its whole core: widen its vCPUs' masks to the cores, so
  // the hard-affinity invariant holds for a vCPU on its slot's thread.
  for (UnitId u = 0; u < units_->num_units(); ++u) {
    const Vcpu& e = units_->vcpu(u);
    topo::CpuSet hard, soft;
    e.hard.for_each([&](PcpuId m) { hard |= topo_.smt_mask(m); });
    e.soft.for_each([&](PcpuId m) { soft |= topo_.smt_mask(m); });
    for (VcpuId v : units_->unit(u).slots) {
      if (v == kIdle) continue;
      vcpus_[v].hard = hard & usable_;
      vcpus_[v].soft = soft & usable_;
    }
  }
  unit_started_.reserve(g);
  unit_preempted_.reserve(g);
  policy_->attach(SchedContext{*units_, *units_, policy_rng_});
  for (UnitId u = 0; u < units_->num_units(); ++u) policy_->insert_vcpu(u);
}

// Like check_pick, for a unit picked for the core of master m (in the units' view).
void Host::check_unit_pick(PcpuId m, UnitId prev, const Pick& pick) const {
  const UnitId n = pick.vcpu;
  if (n == kIdle) return;
  if (n >= units_->num_units()) violation("runnable-pick", n, m, "policy picked a unit that does not exist");
  const Vcpu& e = units_->vcpu(n);
  if (!e.hard.test(m)) violation("hard-affinity", n, m, "picked a unit outside its hard affinity");
  if (n == prev) {
    if (e.state != Runstate::kRunning) violation("runnable-pick", n, m, "kept a current unit that is not running");
    return;
  }
  if (e.state == Runstate::kRunning)
    violation("one-unit-per-core", n, m, "picked a unit already running on the core of pCPU " +
                                             std::to_string(units_->unit(n).core));
  if (e.state != Runstate::kRunnable) violation("runnable-pick", n, m, "picked a blocked unit");
}

// The invariants of the core of master m: its threads run vCPUs of its unit only, each on its
// slot's thread; every non-blocked vCPU of that unit runs; no vCPU of another unit runs.
void Host::check_units(PcpuId m) const {
  const UnitId u = units_->curr(m);
  const auto& threads = topo_.smt_list(m);
  for (std::size_t i = 0; i < threads.size(); ++i) {
    const PcpuId t = threads[i];
    const VcpuId c = pcpus_[t].curr;
    if (c != kIdle && (u == kIdle || units_->unit_of(c) != u))
      violation("one-unit-per-core", c, t,
                "runs beside unit " + (u == kIdle ? std::string("none") : std::to_string(u)) + " of the core");
    if (u == kIdle) continue;
    const VcpuId s = units_->unit(u).slots[i];
    if (c != kIdle && c != s) violation("one-unit-per-core", c, t, "runs on another slot's thread");
    if (s != kIdle && vcpus_[s].state == Runstate::kRunnable)
      violation("unit-together", s, t, "waits while its unit " + std::to_string(u) + " holds the core");
  }
  if (u != kIdle && units_->vcpu(u).state != Runstate::kRunning)
    violation("unit-together", kIdle, m, "the core holds unit " + std::to_string(u) + ", which is not running");
}

void Host::unit_idle_begin(PcpuId t, DomainId d) {
  Pcpu& pc = pcpus_[t];
  pc.halt_idle = true;  // in a running unit: it halts (idle_exit)
  if (pc.forced_idle) return;
  pc.forced_idle = true;
  pc.fi_since = now_;
  pc.fi_domain = d;
}

// Thread t is idle and its core's unit leaves: the rendezvous IPI ends its halt, and it enters
// the idle loop anew, where the governor chooses (Xen's idle_loop, no urgent count).
void Host::unit_halt_end(PcpuId t) {
  Pcpu& pc = pcpus_[t];
  if (!pc.halt_idle) return;
  pc.halt_idle = false;
  pc.idle_since = now_;
}

void Host::unit_idle_end(PcpuId t) {
  Pcpu& pc = pcpus_[t];
  if (!pc.forced_idle) return;
  const sim::Duration d = now_ - pc.fi_since;
  pc.forced_idle_time += d;
  domains_[pc.fi_domain].forced_idle += d;
  pc.forced_idle = false;
}

// Puts v (Runnable) on thread t of its unit's core, ending t's idle-in-unit episode. The caller
// re-times v's kept work or notifies its guest once the core's state is consistent.
void Host::unit_run_vcpu(PcpuId t, VcpuId v) {
  unit_idle_end(t);
  switch_in(t, v);
}

void Host::unit_schedule(PcpuId m) {
  pcpus_[m].resched_pending = false;
  ++rendezvous_;
  const UnitId prev = units_->curr(m);
  const Pick pick = policy_->pick_next(m, now_, PickFilter{});
  check_unit_pick(m, prev, pick);
  unit_commit(m, prev, pick);
}

void Host::unit_commit(PcpuId m, UnitId prev, const Pick& pick) {
  const UnitId next = pick.vcpu;
  const sim::Duration rdv = spec_.sched_gran.rendezvous;
  const auto& threads = topo_.smt_list(m);
  unit_started_.clear();
  unit_preempted_.clear();
  if (next != prev) {
    if (prev != kIdle) {
      const SchedUnit& pu = units_->unit(prev);
      for (std::size_t i = 0; i < threads.size(); ++i) {
        unit_idle_end(threads[i]);
        const VcpuId w = pu.slots[i];
        if (w == kIdle || vcpus_[w].state != Runstate::kRunning) continue;
        stop_progress(vcpus_[w]);
        set_runstate(vcpus_[w], Runstate::kRunnable);
        switch_out(threads[i], w);
        if (trace_) trace_->instant("preempt", w, threads[i], now_);
        unit_preempted_.push_back(w);
      }
      if (next == kIdle)
        for (PcpuId t : threads) unit_halt_end(t);
      units_->set_state(prev, Runstate::kRunnable);
      units_->set_running(prev, kNoPcpu);
      policy_->put_prev(m, prev, now_);
    }
    if (next != kIdle) {
      const SchedUnit& nu = units_->unit(next);
      units_->set_state(next, Runstate::kRunning);
      units_->set_running(next, m);
      for (std::size_t i = 0; i < threads.size(); ++i) {
        const VcpuId w = nu.slots[i];
        if (w != kIdle && vcpus_[w].state == Runstate::kRunnable) {
          unit_run_vcpu(threads[i], w);
          vcpus_[w].stall_until += rdv;
          ple_arm(vcpus_[w], false);  // the PLE window counts from VM entry, after the rendezvous
          unit_started_.push_back(w);
        } else {
          unit_idle_begin(threads[i], nu.domain);
        }
      }
    }
  } else if (next != kIdle) {
    // The same unit goes on: its running vCPUs spin through the rendezvous.
    for (VcpuId w : units_->unit(next).slots) {
      if (w == kIdle || vcpus_[w].state != Runstate::kRunning) continue;
      Vcpu& v = vcpus_[w];
      advance(v);
      v.stall_until = std::max(v.stall_until, now_ + rdv);
      if (v.work.active) {
        v.done_at = sim::kNever;  // force a new completion event past the stall
        retime(v);
      }
      ple_arm(v, false);  // the rendezvous IPI exits the guest: PLE counts again from re-entry
    }
  }
  policy_->set_next(m, next, now_);
  const sim::Duration slice = next != kIdle ? policy_->committed_slice(m, next, pick.slice, now_) : 0;

  Pcpu& mp = pcpus_[m];
  ++mp.slice_gen;
  mp.slice_end = sim::kNever;
  if (next != kIdle && slice > 0) {
    mp.slice_end = now_ + slice;
    queue_.push_keyed(mp.slice_end, sim::Phase::kHypervisorTimer, kSliceEnd, m, mp.slice_gen);
  }
  check_units(m);

  // Work and guest notifications last, on a consistent core: a guest may halt or kick a vCPU
  // from on_vcpu_scheduled or on_vcpu_preempted.
  for (VcpuId w : unit_preempted_) guests_[vcpus_[w].domain]->on_vcpu_preempted(w);
  for (VcpuId w : unit_started_) {
    Vcpu& v = vcpus_[w];
    if (v.work.active) {
      retime(v);
      retime_siblings(v.pcpu);
    }
  }
  for (VcpuId w : unit_started_) {
    Vcpu& v = vcpus_[w];
    if (v.state == Runstate::kRunning && !v.work.active) guests_[v.domain]->on_vcpu_scheduled(w, false);
  }
}

void Host::unit_kick(VcpuId id) {
  Vcpu& v = vcpus_[id];
  const UnitId u = units_->unit_of(id);
  const SchedUnit& su = units_->unit(u);
  ++v.wakeups;
  const bool unit_blocked = units_->vcpu(u).state == Runstate::kBlocked;
  set_runstate(v, Runstate::kRunnable);
  if (su.core != kNoPcpu) {
    // vcpu_wake() of a vCPU whose unit runs: switched in on its own thread, no decision.
    const auto slot = static_cast<std::size_t>(std::find(su.slots.begin(), su.slots.end(), id) - su.slots.begin());
    const PcpuId t = unit_thread(su.core, slot);
    if (trace_) trace_->instant("wake", id, t, now_);
    unit_run_vcpu(t, id);
    check_units(su.core);
    if (v.work.active) {
      retime(v);
      retime_siblings(t);
    } else {
      guests_[v.domain]->on_vcpu_scheduled(id, false);
    }
    return;
  }
  if (!unit_blocked) {
    if (trace_) trace_->instant("wake", id, v.pcpu, now_);
    return;  // its unit is runnable already: it waits with it
  }
  // The unit wakes: the policy places and queues it (csched2_unit_wake).
  const PcpuId m = policy_->pick_cpu(u, now_);
  if (m >= pcpus_.size() || !units_->usable_pcpus().test(m))
    violation("usable-thread", id, m, "pick_cpu chose a pCPU that is not a core's first thread at sched-gran=core");
  if (!units_->vcpu(u).hard.test(m)) violation("hard-affinity", id, m, "pick_cpu chose a core outside the unit's affinity");
  units_->assign(u, m);
  units_->set_state(u, Runstate::kRunnable);
  if (trace_) trace_->instant("wake", id, m, now_);
  policy_->wake(u, now_);
}

void Host::unit_halt(VcpuId id) {
  Vcpu& v = vcpus_[id];
  const PcpuId t = v.pcpu;
  const UnitId u = units_->unit_of(id);
  const SchedUnit& su = units_->unit(u);
  const PcpuId m = su.core;
  stop_progress(v);
  v.work = WorkSegment{};
  set_runstate(v, Runstate::kBlocked);
  if (trace_) trace_->instant("halt", id, t, now_);
  switch_out(t, id);
  unit_idle_begin(t, su.domain);
  const bool all_blocked = std::all_of(su.slots.begin(), su.slots.end(), [&](VcpuId w) {
    return w == kIdle || vcpus_[w].state == Runstate::kBlocked;
  });
  if (all_blocked) {
    // The unit blocks: the policy learns it as Xen's csched2_schedule finds it not runnable.
    units_->set_state(u, Runstate::kBlocked);
    policy_->sleep(u, now_);
    for (PcpuId s : topo_.smt_list(m)) {
      unit_idle_end(s);
      unit_halt_end(s);
    }
    units_->set_running(u, kNoPcpu);
    policy_->put_prev(m, u, now_);
  }
  tickle(m);  // vcpu_block: SCHEDULE_SOFTIRQ, a full rendezvous and decision for the core
}

}  // namespace vcpusim::hv
