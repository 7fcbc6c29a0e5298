// SPDX-License-Identifier: MIT
// This file holds pause-loop exiting (ple.h): the window arithmetic and the Host glue that arms
// a vCPU's exit when it spins on a pCPU, takes the exit, and yields the spinner.
#include "hypervisor/ple.h"

#include <algorithm>
#include <cmath>

#include "hypervisor/host.h"

namespace vcpusim::hv {

sim::Duration PleParams::cycles_to_ns(std::uint64_t cycles) const {
  const double ns = std::ceil(static_cast<double>(cycles) / tsc_ghz);
  return std::max<sim::Duration>(1, static_cast<sim::Duration>(ns));
}

// arch/x86/kvm/x86.h __grow_ple_window(): "if (modifier < 1) return base; if (modifier < base)
// ret *= modifier; else ret += modifier; return min(ret, max)", in 64 bits.
std::uint32_t grow_ple_window(std::uint32_t val, std::uint32_t base, std::uint32_t modifier, std::uint32_t max) {
  if (modifier < 1) return base;
  std::uint64_t ret = val;
  if (modifier < base) ret *= modifier;
  else ret += modifier;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(ret, max));
}

// __shrink_ple_window(): "if (modifier < 1) return base; if (modifier < base) val /= modifier;
// else val -= modifier; return max(val, min)" (shrink_ple_window passes the base as min).
// MODEL: the unsigned wrap of `val -= modifier` below zero is clamped to 0 before the max.
std::uint32_t shrink_ple_window(std::uint32_t val, std::uint32_t base, std::uint32_t modifier, std::uint32_t min) {
  if (modifier < 1) return base;
  if (modifier < base) val /= modifier;
  else val = val > modifier ? val - modifier : 0;
  return std::max(val, min);
}

void PauseLoopExiting::init(const PleParams& p, std::uint32_t vcpus, std::uint32_t domains) {
  p_ = p;
  win_.assign(vcpus, p.window);
  gen_.assign(vcpus, 0);
  last_boosted_.assign(domains, 0);  // kvm->last_boosted_vcpu starts at 0
  in_spin_loop_.assign(vcpus, 0);    // kvm_vcpu_init(): both false
  dy_eligible_.assign(vcpus, 0);
  preempted_.assign(vcpus, 0);       // kvm_vcpu_init(): vcpu->preempted = false
  ready_.assign(vcpus, 0);           // and vcpu->ready = false
  in_kernel_.assign(vcpus, 0);
  stats_.assign(domains, PleStats{});
}

// virt/kvm/kvm_main.c kvm_vcpu_eligible_for_directed_yield() (3.6+): "eligible =
// !in_spin_loop || (in_spin_loop && dy_eligible); if (in_spin_loop) dy_eligible = !dy_eligible".
bool PauseLoopExiting::eligible_for_directed_yield(VcpuId v) {
  if (!in_spin_loop_[v]) return true;
  const bool eligible = dy_eligible_[v] != 0;
  dy_eligible_[v] = eligible ? 0 : 1;
  return eligible;
}

void PauseLoopExiting::sched_in(VcpuId v) {
  if (p_.flavour == PleFlavour::kKvm) win_[v] = shrink_ple_window(win_[v], p_.window, p_.shrink, p_.window);
}

void PauseLoopExiting::grow(VcpuId v) {
  if (p_.flavour == PleFlavour::kKvm) win_[v] = grow_ple_window(win_[v], p_.window, p_.grow, p_.max);
}

// ---------------------------------------------------------------------------------------------
// Host glue.

// Called whenever v's segment changes or v is switched in: arms the exit of a running spin at
// now + window, and invalidates any exit armed before (a new segment, or a new stretch on a
// pCPU, restarts the PAUSE-loop count).
void Host::ple_arm(Vcpu& v, bool sched_in) {
  if (!ple_.active() || domains_[v.domain].bare_metal) return;
  if (sched_in) {
    ple_.sched_in(v.id);
    ple_sched_done(v.id);  // back from yield_to's schedule(): the end of kvm_vcpu_on_spin
  }
  const std::uint64_t g = ple_.next_gen(v.id);
  // "The PAUSE-loop exiting VM-execution control is ignored if CPL > 0" (Intel SDM 25.1.3,
  // quoted at KVM's handle_pause()): a spin in guest user mode never exits.
  if (v.state != Runstate::kRunning || !v.work.active || v.work.profile != Profile::kSpin || v.work.user_mode ||
      v.polling)
    return;
  // The window counts guest execution: from VM entry, after a switch-in's or an exit's stall.
  const sim::Time entry = std::max(now_, v.stall_until);
  queue_.push(entry + ple_.params().cycles_to_ns(ple_.window(v.id)), sim::Phase::kHypervisorTimer, kPleExit, v.id, g);
}

// handle_pause() -> grow_ple_window(), kvm_vcpu_on_spin(vcpu, true); Xen: vcpu_yield().
void Host::ple_exit(VcpuId id) {
  Vcpu& v = vcpus_[id];
  const bool measuring = now_ >= spec_.warmup;
  PleStats& st = ple_.stats(v.domain);
  if (measuring) ++st.exits;
  if (trace_) trace_->instant("ple-exit", id, v.pcpu, now_);
  ple_.grow(id);
  if (ple_.params().flavour == PleFlavour::kXen) {
    if (measuring) ++st.yields;
    ple_yield(id, kIdle, ple_.params().exit_cost);
  } else {
    // kvm_vcpu_on_spin(me), virt/kvm/kvm_main.c of Linux 3.10, or of 5.10 with
    // yield_to_kernel_mode (ple.h lists each rule and where the two differ).
    const bool v510 = ple_.params().scan == PleScan::kLinux510;
    ple_.enter_handler(id);
    const Domain& d = domains_[v.domain];
    const auto n = static_cast<std::uint32_t>(d.vcpus.size());
    std::uint32_t& last = ple_.last_boosted(v.domain);
    const std::uint32_t start = last + 1;
    int yielded = 0;
    int tries = 3;  // 5.10's "int try = 3": -ESRCH answers the scan takes before it gives up
    // idx runs start, start+1, ... n-1, 0, ... start-1 (the kernel's two passes), wrapped by a
    // compare rather than `% n`: the scan runs on every exit and a division per vCPU dominated it.
    std::uint32_t idx = start >= n ? start - n : start;
    for (std::uint32_t i = 0; n > 1 && i < n; ++i, idx = idx + 1 == n ? 0 : idx + 1) {
      if (idx == v.index) continue;  // vcpu == me
      const VcpuId t = d.vcpus[idx];
      const Vcpu& c = vcpus_[t];
      if (v510) {
        if (!ple_.ready(t)) continue;  // !READ_ONCE(vcpu->ready): preempted or woken, not run since
      } else {
        // 3.10's first test (before `me`, which is running and so never preempted): only a vCPU
        // scheduled out while still Runnable (kvm_sched_out), and not switched in since, is a
        // candidate; it is what keeps a woken, not yet run vCPU out. The halted and in-guest
        // tests below can no longer refuse one that passed it; they stay as 3.10 has them.
        if (!ple_.preempted(t)) continue;
      }
      // 3.10 waitqueue_active(&vcpu->wq); 5.10 kvm_vcpu_is_blocking && !vcpu_dy_runnable: halted
      if (c.state == Runstate::kBlocked) continue;
      // 5.10 yield_to_kernel_mode: a vCPU preempted in guest user mode holds no kernel lock
      if (v510 && ple_.preempted(t) && !ple_.preempted_in_kernel(t)) continue;
      if (!ple_.eligible_for_directed_yield(t)) continue;
      // 3.10 kvm_vcpu_yield_to: PF_VCPU -> false (0); 5.10 yield_to: task_running -> 0
      if (c.state == Runstate::kRunning) continue;
      yielded = ple_yield(id, t, ple_.params().exit_cost);
      if (yielded > 0) {
        last = idx;  // kvm->last_boosted_vcpu = i, on success only
        if (measuring) ++st.yields;
        break;
      }
      if (yielded < 0 && v510) {
        if (--tries == 0) break;
      } else if (yielded < 0) {
        // -ESRCH (both runqueues hold one task). 3.10's yield_to() and kvm_vcpu_yield_to()
        // return bool, so it reaches the scan as true: "if (yielded > 0)" records this vCPU as
        // last boosted and stops, though nothing was boosted (yield_to() skips its schedule()).
        // The `try = 3` countdown for negative answers is dead code until a later "sched: Fix
        // signedness bug in yield_to()" made the return an int.
        last = idx;
        break;
      }
    }
    // Without a successful yield there is no schedule(): me leaves the handler now. With one,
    // it leaves when that schedule() returns (ple_sched_done).
    if (yielded <= 0) ple_.leave_handler(id);
  }
  // The exit's cost: the guest executes nothing until re-entry (a PV spin's threshold moves
  // out by as much). Then, still spinning (unless the yield deschedules it, which re-arms at
  // the next switch-in), the next exit comes one (grown) window after re-entry.
  if (v.state != Runstate::kRunning) return;
  advance(v);
  v.stall_until = std::max(v.stall_until, now_ + ple_.params().exit_cost);
  v.done_at = sim::kNever;
  retime(v);
  ple_arm(v, false);
}

// yield_to()'s schedule() returned to v (v was switched in again, or the reschedule kept it):
// the rest of kvm_vcpu_on_spin runs, "kvm_vcpu_set_in_spin_loop(me, false)" and "Ensure vcpu is
// not eligible during next spinloop: kvm_vcpu_set_dy_eligible(me, false)".
void Host::ple_sched_done(VcpuId v) {
  if (ple_.active()) ple_.leave_handler(v);
}

}  // namespace vcpusim::hv
