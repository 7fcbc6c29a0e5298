// SPDX-License-Identifier: MIT
// This file holds KVM halt polling (halt_poll.h): the window arithmetic of virt/kvm/kvm_main.c
// and the Host glue that starts a poll at a halt, ends it with a wake-up, a timeout or another
// task on the pCPU, and adjusts the vCPU's window when it runs again.
#include "hypervisor/halt_poll.h"

#include <algorithm>

#include "hypervisor/host.h"

namespace vcpusim::hv {

// grow_halt_poll_ns(): "if (!grow) goto out; val *= grow; if (val < grow_start) val =
// grow_start; if (val > halt_poll_ns) val = halt_poll_ns".
sim::Duration grow_halt_poll(sim::Duration val, const HaltPollParams& p) {
  if (p.grow == 0) return val;
  val *= static_cast<sim::Duration>(p.grow);
  if (val < p.grow_start) val = p.grow_start;
  return std::min(val, p.ns);
}

// shrink_halt_poll_ns(): "if (shrink == 0) val = 0; else val /= shrink".
sim::Duration shrink_halt_poll(sim::Duration val, const HaltPollParams& p) {
  return p.shrink == 0 ? 0 : val / static_cast<sim::Duration>(p.shrink);
}

// kvm_vcpu_block(), after the block (vcpu_valid_wakeup() is true on x86, and halt_poll_ns > 0
// whenever polling is on): "if (block_ns <= vcpu->halt_poll_ns) ; else if (vcpu->halt_poll_ns &&
// block_ns > halt_poll_ns) shrink; else if (vcpu->halt_poll_ns < halt_poll_ns && block_ns <
// halt_poll_ns) grow".
sim::Duration adjust_halt_poll(sim::Duration val, sim::Duration block_ns, const HaltPollParams& p) {
  if (block_ns <= val) return val;
  if (val > 0 && block_ns > p.ns) return shrink_halt_poll(val, p);
  if (val < p.ns && block_ns < p.ns) return grow_halt_poll(val, p);
  return val;
}

// ---------------------------------------------------------------------------------------------
// Host glue.

bool Host::halt_poll_begin(Vcpu& v) {
  if (!halt_poll_on() || domains_[v.domain].bare_metal) return false;
  v.halted_at = now_;
  // "if (vcpu->halt_poll_ns && ...)", then the loop's single_task_running().
  if (v.poll_window <= 0 || policy_->nr_running(v.pcpu) != 1) return false;
  if (now_ >= spec_.warmup) ++poll_stats_[v.domain].polls;
  stop_progress(v);
  v.polling = true;
  v.poll_since = now_;
  ++v.poll_gen;
  // The poll as a segment of wall time (kSpin runs at rate 1): its completion is the timeout.
  v.work = WorkSegment{static_cast<double>(v.poll_window), Profile::kSpin, 0.0, 0.0, true};
  v.done_at = sim::kNever;
  retime(v);
  retime_siblings(v.pcpu);
  ple_.next_gen(v.id);  // no pause-loop exit is pending for a vCPU in the host
  if (trace_) trace_->instant("poll", v.id, v.pcpu, now_);
  return true;
}

void Host::halt_poll_end(Vcpu& v) {
  if (now_ >= spec_.warmup)
    poll_stats_[v.domain].poll_ns += static_cast<double>(now_ - std::max(v.poll_since, spec_.warmup));
  stop_progress(v);
  v.work = WorkSegment{};
  v.polling = false;
  ++v.poll_gen;
  if (v.state == Runstate::kRunning) retime_siblings(v.pcpu);
}

void Host::halt_poll_wake(Vcpu& v) {
  if (now_ >= spec_.warmup) ++poll_stats_[v.domain].successes;
  halt_poll_end(v);
  if (trace_) trace_->instant("poll-wake", v.id, v.pcpu, now_);
  halt_poll_resumed(v);
  // The guest resumes at once, but not from inside the caller (a guest's own kick).
  queue_.push(now_, sim::Phase::kGuest, kPollWake, v.id, v.poll_gen);
}

void Host::halt_poll_resumed(Vcpu& v) {
  if (v.halted_at == sim::kNever) return;
  v.poll_window = adjust_halt_poll(v.poll_window, now_ - v.halted_at, spec_.halt_poll);
  v.halted_at = sim::kNever;
}

void Host::runqueue_grew(PcpuId p) {
  if (!halt_poll_on()) return;
  const VcpuId c = pcpus_[p].curr;
  if (c == kIdle || !vcpus_[c].polling) return;
  // The poll loop sees it at its next single_task_running(): this instant, after the policy
  // (which is still in the middle of the change) returns.
  queue_.push(now_, sim::Phase::kHypervisorTimer, kPollCheck, p, vcpus_[c].poll_gen);
}

}  // namespace vcpusim::hv
