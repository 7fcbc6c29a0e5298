// SPDX-License-Identifier: MIT
// This file is the dispatcher: schedule() on one pCPU, modelled after Xen's schedule() in
// xen/common/sched/core.c (ask the policy, switch, arm the slice timer) with Linux's split of
// choosing from committing (pick_task / put_prev_task / set_next_task). Every answer of the
// policy is checked here before it takes effect.
#include <string>

#include "hypervisor/host.h"

namespace vcpusim::hv {

void Host::violation(const char* rule, VcpuId v, PcpuId p, const std::string& detail) const {
  throw InvariantViolation(rule, v, p, now_, detail);
}

void Host::set_runstate(Vcpu& v, Runstate s) {
  v.state = s;
  v.clock.enter(static_cast<std::uint8_t>(s), now_);
}

void Host::check_pick(PcpuId p, VcpuId prev, const Pick& pick, const PickFilter& f) const {
  const VcpuId n = pick.vcpu;
  if (n == kIdle) return;
  if (n >= vcpus_.size()) violation("runnable-pick", n, p, "policy picked an entity that does not exist");
  const Vcpu& v = vcpus_[n];
  if (!v.hard.test(p)) violation("hard-affinity", n, p, "picked outside its hard affinity");
  if (!f.allows(v)) violation("cookie-match", n, p, "picked an entity the core-wide filter refused");
  if (n == prev) {
    if (v.state != Runstate::kRunning) violation("runnable-pick", n, p, "kept a current entity that is not running");
    return;
  }
  if (v.state == Runstate::kRunning)
    violation("one-per-thread", n, p, "picked an entity already running on pCPU " + std::to_string(v.pcpu));
  if (v.state != Runstate::kRunnable) violation("runnable-pick", n, p, "picked a blocked entity");
}

void Host::schedule(PcpuId p) {
  Pcpu& pc = pcpus_[p];
  pc.resched_pending = false;
  if (!pc.usable) violation("usable-thread", kIdle, p, "schedule on a disabled SMT thread");
  if (core_sched_on()) {
    core_schedule(p);  // core_sched.cpp: the core-wide pick, commits every sibling
    return;
  }
  if (units_) {
    unit_schedule(topo_.smt_mask(p).first());  // sched_unit.cpp: one decision for the whole core
    return;
  }
  const VcpuId prev = pc.curr;
  const PickFilter filter{};
  const Pick pick = policy_->pick_next(p, now_, filter);
  check_pick(p, prev, pick, filter);
  commit(p, prev, pick);
}

// Commits a checked pick on p: switches prev out and pick.vcpu in (if they differ), tells the
// policy (set_next) and arms the slice timer.
void Host::commit(PcpuId p, VcpuId prev, const Pick& pick) {
  Pcpu& pc = pcpus_[p];
  const VcpuId next = pick.vcpu;

  bool poll_cut = false;  // prev was polling in KVM's halt path: it blocks, not preempted
  if (next != prev) {
    if (prev != kIdle) {
      Vcpu& pv = vcpus_[prev];
      poll_cut = pv.polling;
      if (poll_cut) halt_poll_end(pv);
      stop_progress(pv);
      set_runstate(pv, Runstate::kRunnable);
      switch_out(p, prev);
      if (trace_) trace_->instant("preempt", prev, p, now_);
      if (!poll_cut) guests_[pv.domain]->on_vcpu_preempted(prev);
    }
    if (next != kIdle) switch_in(p, next);
  } else if (next != kIdle) {
    ple_sched_done(next);  // a PLE yield's schedule() kept the spinner: it leaves the handler (ple.cpp)
  }
  policy_->set_next(p, next, now_);
  const sim::Duration slice = next != kIdle ? policy_->committed_slice(p, next, pick.slice, now_) : 0;
  if (poll_cut) poll_cut_block(p, prev);

  ++pc.slice_gen;
  pc.slice_end = sim::kNever;
  if (next != kIdle && slice > 0) {
    pc.slice_end = now_ + slice;
    queue_.push_keyed(pc.slice_end, sim::Phase::kHypervisorTimer, kSliceEnd, p, pc.slice_gen);
  }

  if (next != prev && next != kIdle) {
    Vcpu& nv = vcpus_[next];
    if (nv.work.active) {
      retime(nv);
      retime_siblings(p);
      guests_[nv.domain]->on_vcpu_scheduled(next, true);  // kept work resumes (IPIs it owes run)
    } else {
      guests_[nv.domain]->on_vcpu_scheduled(next, false);
    }
  }
}

// Core scheduling: takes p's current entity off at once (it is Runnable again, handed back to
// the policy), before the core-wide pick switches in an entity of another cookie on a sibling.
void Host::evict(PcpuId p) {
  Pcpu& pc = pcpus_[p];
  const VcpuId prev = pc.curr;
  if (prev == kIdle) return;
  Vcpu& pv = vcpus_[prev];
  const bool poll_cut = pv.polling;
  if (poll_cut) halt_poll_end(pv);
  stop_progress(pv);
  set_runstate(pv, Runstate::kRunnable);
  switch_out(p, prev);
  ++pc.slice_gen;
  pc.slice_end = sim::kNever;
  if (trace_) trace_->instant("preempt", prev, p, now_);
  if (poll_cut) poll_cut_block(p, prev);
  else guests_[pv.domain]->on_vcpu_preempted(prev);
}

// A vCPU switched out while it polled in KVM's halt path (halt_poll.h, MODEL): its poll ends
// there and it blocks, as a halted vCPU; the policy, which just put it back, dequeues it.
void Host::poll_cut_block(PcpuId p, VcpuId prev) {
  Vcpu& pv = vcpus_[prev];
  if (now_ >= spec_.warmup) ++poll_stats_[pv.domain].cut;
  set_runstate(pv, Runstate::kBlocked);
  ple_.clear_preempted(prev);  // it halted: kvm_sched_out found it TASK_INTERRUPTIBLE
  if (trace_) trace_->instant("halt", prev, p, now_);
  policy_->sleep(prev, now_);
  core_task_changed(p);
}

// Takes `prev` (already Runnable or Blocked) off p; p is idle until the next switch_in.
void Host::switch_out(PcpuId p, VcpuId prev) {
  fold_smt_shared(p);
  Pcpu& pc = pcpus_[p];
  Vcpu& v = vcpus_[prev];
  v.remote_run += static_cast<double>(now_ - pc.busy_since) * (1.0 - domains_[v.domain].memory_on_node[topo_.node_of(p)]);
  pc.busy += now_ - pc.busy_since;
  if (trace_) trace_->run_end(p, prev, now_);
  pc.curr = kIdle;
  pc.idle_since = now_;
  idle_.set(p);
  ++v.poll_gen;  // a pending poll wake-up is for a vCPU still on its pCPU
  // kvm_sched_out: preempted unless it halted; the guest's mode is its work's (ple.h, MODEL).
  ple_.sched_out(prev, v.state == Runstate::kRunnable, !(v.work.active && v.work.user_mode));
  if (!units_) policy_->put_prev(p, prev, now_);  // units: the policy is told per unit (sched_unit.cpp)
  retime_siblings(p);
}

// The exit latency of the idle state p leaves to run an entity (cpuidle.h): the state menu chose
// when p went idle, from the idle periods before this one, which it then records. 0 when p was
// not idle (a switch from one entity to the next) or has no idle states. A thread idle inside a
// running Xen unit halted instead (the shallowest state, C1) and the governor neither chose nor
// learns it: Xen's sched_guest_idle() raises the CPU's urgent count so that it can join the
// next rendezvous quickly, and acpi_processor_idle() / mwait_idle() then skip the governor and
// safe_halt() (xen/common/sched/core.c, xen/arch/x86/acpi/cpu_idle.c, cpu/mwait-idle.c).
sim::Duration Host::idle_exit(PcpuId p, VcpuId next) {
  const Pcpu& pc = pcpus_[p];
  if (!spec_.cpuidle.enabled() || pc.idle_since >= now_) return 0;
  MenuGovernor& gov = menu_[p];
  const IdleState& state = spec_.cpuidle.states[pc.halt_idle ? 0 : gov.select(spec_.cpuidle.states)];
  const sim::Duration exit = state.exit_latency;
  if (!pc.halt_idle) gov.record(now_ - pc.idle_since, exit);
  if (now_ >= spec_.warmup) {
    ++idle_stats_.exits;
    idle_stats_.exit_ns += exit;
  }
  if (trace_) trace_->instant("idle-exit", next, p, now_, state.name);
  return exit;
}

void Host::switch_in(PcpuId p, VcpuId next) {
  // Neither the switch-in nor the idle state's exit makes progress (exec_model.h, cpuidle.h).
  const sim::Duration entry = spec_.exec.context_switch + idle_exit(p, next);
  fold_smt_shared(p);
  Pcpu& pc = pcpus_[p];
  pc.halt_idle = false;
  Vcpu& v = vcpus_[next];
  pc.curr = next;
  pc.busy_since = now_;
  ++pc.switches;
  idle_.reset(p);
  set_runstate(v, Runstate::kRunning);
  ++v.context_switches;
  if (v.last_ran != kNoPcpu && !topo_.same_core(v.last_ran, p)) {
    // Moved to another core: its private caches are cold (and the LLC too when the move
    // leaves it: across nodes, or across a Zen CCX within one).
    ++v.migrations;
    sim::Duration cold = domains_[v.domain].cold_duration;
    if (!topo_.same_llc(v.last_ran, p)) cold = static_cast<sim::Duration>(cold * spec_.exec.cold_cross_node_factor);
    if (cold > 0) {
      v.cold_until = now_ + entry + cold;
      queue_.push(v.cold_until, sim::Phase::kGuest, kColdEnd, next, ++v.cold_gen);
    }
  } else if (v.last_ran != kNoPcpu && v.last_ran != p) {
    ++v.migrations;  // to the sibling thread: shares L1/L2, no cold window
  }
  if (trace_) {
    if (v.last_ran != kNoPcpu && v.last_ran != p) trace_->instant("migrate", next, p, now_);
    trace_->run_begin(p, next, now_);
  }
  v.pcpu = p;
  v.last_ran = p;
  v.stall_until = now_ + entry;
  v.progress_since = now_;
  ple_.clear_preempted(next);  // kvm_sched_in
  ple_arm(v, true);  // vmx_vcpu_load after a schedule-out: shrink the window, restart the count
  halt_poll_resumed(v);  // back from a block: kvm_vcpu_block() adjusts its poll window
}

// A pause-loop exit's yield (ple.cpp), checked: KVM's kvm_vcpu_on_spin only ever boosts a ready
// vCPU of the spinner's own VM (it walks kvm->vcpu_array); Xen yields the spinner itself.
int Host::ple_yield(VcpuId id, VcpuId to, sim::Duration resched_after) {
  const Vcpu& v = vcpus_[id];
  if (to != kIdle) {
    if (to >= vcpus_.size() || vcpus_[to].domain != v.domain)
      violation("ple-same-vm", id, v.pcpu, "pause-loop exit yielded to entity " + std::to_string(to) +
                                               " of another VM");
    if (vcpus_[to].state != Runstate::kRunnable)
      violation("ple-same-vm", id, v.pcpu, "pause-loop exit yielded to entity " + std::to_string(to) +
                                               ", which is " + std::string(runstate_name(vcpus_[to].state)));
  }
  return yield(id, to, resched_after);
}

}  // namespace vcpusim::hv
