// SPDX-License-Identifier: MIT
// This file defines pause-loop exiting (PLE), a mechanism of the host, not of a policy or a
// guest: a vCPU that executes a PAUSE loop for longer than its window exits to the host, which
// then yields it. It exists because the host cannot see guest locks, and a spinning waiter is
// the only symptom of a preempted lock holder (or IPI target) it can see. Guests never see it:
// their spin segment goes on untouched; only where the host runs the vCPU changes.
//
// Design (KVM flavour, arch/x86/kvm/vmx/vmx.c handle_pause() and virt/kvm/kvm_main.c
// kvm_vcpu_on_spin(); ../shared/reference/spinlocks-and-workloads.md section 1.2, "note 1.2"):
//  - A guest spin is one Profile::kSpin segment. PAUSEs of a spin loop (one PAUSE + one load,
//    about 10 cycles before Skylake, note 1.1) are far closer together than ple_gap (128
//    cycles), so the whole spin is one "loop" in the VMX sense; it exits once the guest has
//    executed it for the vCPU's current window (in TSC cycles, converted with tsc_ghz). The
//    count runs in guest mode only: from VM entry, i.e. after the switch-in stall
//    (ExecParams::context_switch) or the previous exit's cost. After an exit the count
//    restarts; a spin cut by a deschedule restarts too. Only a spin in guest kernel mode exits:
//    "The PAUSE-loop exiting VM-execution control is ignored if CPL > 0" (Intel SDM 25.1.3,
//    quoted at KVM's handle_pause()), so a user-space spin (WorkSegment::user_mode: an InnoDB
//    latch, LockParams::user_space) never does.
//  - Each exit costs the spinner `exit_cost` of its pCPU (VM exit and entry, the candidate scan,
//    yield_to's double runqueue lock), during which the guest executes nothing. The whole
//    handler runs in the spinner's thread before yield_to's schedule(), so a spinner whose yield
//    succeeded keeps its pCPU for that cost and reschedules at its end (Host::yield's
//    resched_after), not at the exit.
//  - Each exit first grows that vCPU's window (grow_ple_window: x ple_window_grow, capped at
//    ple_window_max; 3.10's handle_pause() has no growth, which a scenario gets with grow 0),
//    then runs kvm_vcpu_on_spin(me) as Linux 3.10 has it (the reproduced mail's host):
//      * me enters the handler: in_spin_loop = true;
//      * one round-robin pass over the other vCPUs of the SAME VM, starting after
//        kvm->last_boosted_vcpu and wrapping (3.10 writes it as two passes);
//      * skip a vCPU whose vcpu->preempted is clear ("if (!ACCESS_ONCE(vcpu->preempted))
//        continue", the first test of the loop). kvm_sched_out sets the flag when the vCPU
//        thread is scheduled out still TASK_RUNNING (preempted, or descheduled by its own
//        yield_to/yield: Runnable here); kvm_sched_in clears it, kvm_vcpu_init starts it clear.
//        So a vCPU that is running, one that halted (blocked in kvm_vcpu_block), one that was
//        woken from a halt but has not run since, and one that has never run are all skipped:
//        only a vCPU taken off its pCPU while it still wanted it is a candidate;
//      * skip me; skip a vCPU halted in kvm_vcpu_block (plain waitqueue_active(&vcpu->wq), with
//        no kvm_arch_vcpu_runnable() exception in 3.10; a halted vCPU is never preempted, so
//        the test above already skips it);
//      * skip a vCPU that kvm_vcpu_eligible_for_directed_yield() refuses: one that is itself
//        inside the handler (in_spin_loop) is eligible only if its dy_eligible is set, and every
//        such check toggles dy_eligible, so a fellow spinner is a target every other time;
//      * kvm_vcpu_yield_to(): a target in guest mode (PF_VCPU, here Running) gives false (0)
//        without calling yield_to; otherwise yield_to(task, 1) through the policy (CFS:
//        yield_to_task_fair makes it the next buddy, the spinner the skip buddy; -ESRCH when
//        both runqueues hold one task; 0 when the target runs or is blocked; a target on
//        another pCPU gets resched_task(p_rq->curr), a reschedule IPI, so the vCPU running
//        there keeps running until it arrives, ExecParams::resched_ipi later);
//      * > 0: remember the target as last boosted and stop; 0: go on; -ESRCH: the same as > 0
//        (remember, stop), with nothing boosted, because 3.10's yield_to() and
//        kvm_vcpu_yield_to() return bool, so the scan's `try = 3` countdown never runs;
//      * me leaves the handler: in_spin_loop = false, dy_eligible = false. After a successful
//        yield that is when yield_to's schedule() returns, i.e. when me is next switched in
//        (or kept by that reschedule): until then a descheduled spinner is in the handler.
//    Source [S]: torvalds/linux virt/kvm/kvm_main.c at db6ae6158186, the tip of tag
//    kvm-3.10-1 that Linus merged on 2013-05-05 (01227a889ed5, the 3.10 merge window):
//    kvm_vcpu_on_spin tests preempted, me, waitqueue_active, eligibility, in that order
//    (kvm_sched_out / kvm_sched_in as above, read at 7bc7ae25b143). The flag came with Raghavendra
//    K T's "kvm: Record the preemption status of vcpus using preempt notifiers" and "kvm:
//    Iterate over only vcpus that are preempted" (7bc7ae25b143, authored 2013-03-04, committed
//    by Gleb Natapov 2013-03-11, after v3.9-rc1 of 2013-03-03), so 3.10 is the first release
//    with it and 3.9 has none. The `&& !kvm_arch_vcpu_runnable(vcpu)` exception to the halted
//    test and the user-mode filter of yield_to_kernel_mode (4.15) are later; [R] for the former
//    coming with the PV-unhalt host patches (3.12).
//  - `scan: 5.10` runs kvm_vcpu_on_spin(me, yield_to_kernel_mode = true) as Linux 5.10 has it
//    (virt/kvm/kvm_main.c; VMX's handle_pause() always passes true, since a PAUSE exit means
//    CPL 0). Where it differs from 3.10:
//      * the first test is vcpu->ready, not vcpu->preempted. kvm_sched_out sets both when the
//        thread is scheduled out still on its runqueue; kvm_sched_in clears both; and
//        kvm_vcpu_wake_up() sets ready when it wakes the vCPU from a halt ("KVM: Boost vCPUs
//        that are delivering interrupts", d73eb57b80b9, 5.3). So a vCPU woken from a halt
//        (a kicked PV waiter, an IPI target) and not yet run is a candidate;
//      * a halted vCPU is skipped (kvm_vcpu_is_blocking / rcuwait_active, unless
//        vcpu_dy_runnable: an event already pending, which here makes it Runnable at once);
//      * a vCPU preempted in guest user mode is skipped ("if (READ_ONCE(vcpu->preempted) &&
//        yield_to_kernel_mode && !kvm_arch_vcpu_in_kernel(vcpu)) continue", 4.15: 199b5763d329;
//        x86 records preempted_in_kernel = !get_cpl() in kvm_arch_vcpu_put). The guest says
//        which work runs in user mode (WorkSegment::user_mode); the mode a vCPU had when it was
//        switched out is what the test reads. A woken vCPU that was not preempted passes;
//      * yield_to() and kvm_vcpu_yield_to() return int: > 0 boosted (remember it, stop); < 0,
//        -ESRCH (both runqueues hold one task), spends one of `try = 3` attempts, and the scan
//        stops when they are gone; 0 goes on. kvm_vcpu_yield_to has no PF_VCPU test (a running
//        vCPU is not ready, so it is skipped earlier anyway).
//    Source [S]: kvm_vcpu_on_spin of 5.10 (rcuwait_active form, 5.8-5.15), read in public copies.
//  - When the vCPU is next loaded after being scheduled out, its window shrinks
//    (vmx_vcpu_load -> shrink_ple_window; ple_window_shrink 0 resets it to ple_window).
// Xen flavour (xen/arch/x86/hvm/vmx/vmx.c, the PAUSE exit -> vcpu_yield(); vmcs.c ple_gap /
// ple_window): a fixed window, no growth, and an undirected yield of the spinner (credit2's
// yield flag), since Xen has no directed yield.
//
// Parameters (host.ple; defaults from arch/x86/kvm/x86.h and vmx.c):
//   enabled  false    off unless a scenario asks (existing figures stay put)
//   gap      128      KVM_DEFAULT_PLE_GAP, cycles; 0 turns PLE off, as ple_gap=0 does in KVM
//   window   4096     KVM_VMX_DEFAULT_PLE_WINDOW, cycles ("most spinlocks are held < 2^12 cycles")
//   grow     2        KVM_DEFAULT_PLE_WINDOW_GROW (< window: multiply, else add; 0: reset to window)
//   shrink   0        KVM_DEFAULT_PLE_WINDOW_SHRINK (< window: divide, else subtract; 0: reset)
//   max      UINT_MAX KVM_VMX_DEFAULT_PLE_WINDOW_MAX, cycles
//   exit_cost 1.5 us  note 1.3 "VM exit + entry with a light handler 0.4-1.5 us" [R]/[E]: the
//                     upper end, since this handler scans the VM's vCPUs and locks two runqueues
//   tsc_ghz  2.5      the conversion note 1.2 uses ("4096 cycles = 1.6 us at 2.5 GHz"); set
//                     the modelled CPU's TSC rate (X7560: 2.26 GHz, Intel's specification)
//   flavour  kvm      kvm | xen (the loader makes credit2 hosts xen unless told otherwise)
//   scan     3.10     3.10 | 5.10: which kvm_vcpu_on_spin the KVM flavour runs (above)
//
// Invariants (checked by the dispatcher, ple.cpp): a PLE yield targets a vCPU of the spinner's
// own VM ("ple-same-vm"), and only a Runnable one (which the preempted test implies).
//
// MODEL: the guest mode at a switch-out is that of the work segment the vCPU was running
// (WorkSegment::user_mode: a workload's user computation, a user-space lock); a vCPU with no work
// in progress is in the guest kernel. The handler itself takes no simulated time apart from
// exit_cost, so a vCPU is inside it only for that cost and while it is descheduled by its own
// yield. The scan and yield_to's decisions are taken at the exit instant (the runqueue state
// they read is that of the exit, not of exit_cost later).
// The vCPU thread's other sleeps (exits to user space, QEMU I/O) are not modelled, so halting is
// the only way a vCPU leaves its pCPU without being marked preempted.
// Bare-metal tasks never PLE-exit (PLE is a VMX control).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "hypervisor/ids.h"
#include "sim/sim_time.h"

namespace vcpusim::hv {

enum class PleFlavour : std::uint8_t { kKvm = 0, kXen = 1 };
/// Which kvm_vcpu_on_spin() the KVM flavour runs (the header lists the differences).
enum class PleScan : std::uint8_t { kLinux310 = 0, kLinux510 = 1 };

struct PleParams {
  bool enabled = false;
  std::uint32_t gap = 128;        ///< cycles; 0: PLE off
  std::uint32_t window = 4096;    ///< cycles, the base (and minimum) window
  std::uint32_t grow = 2;
  std::uint32_t shrink = 0;
  std::uint32_t max = std::numeric_limits<std::uint32_t>::max();  ///< cycles
  double tsc_ghz = 2.5;           ///< TSC cycles per ns
  sim::Duration exit_cost = sim::ns(1500);  ///< the spinner's pCPU time per exit
  PleFlavour flavour = PleFlavour::kKvm;
  PleScan scan = PleScan::kLinux310;

  bool active() const { return enabled && gap > 0 && window > 0; }
  /// Cycles to simulated ns at the TSC rate (at least 1 ns).
  sim::Duration cycles_to_ns(std::uint64_t cycles) const;
};

/// Per VM, over the measured interval.
struct PleStats {
  std::uint64_t exits = 0;   ///< PLE exits taken by the VM's vCPUs
  std::uint64_t yields = 0;  ///< KVM: directed yields that boosted a target (yield_to > 0); Xen: yields
  /// HostSpec::kick_boost: PV kicks whose kicker yielded to the kicked vCPU (yield_to > 0).
  std::uint64_t kick_yields = 0;
};

/// KVM's window arithmetic (arch/x86/kvm/x86.h __grow_ple_window / __shrink_ple_window).
std::uint32_t grow_ple_window(std::uint32_t val, std::uint32_t base, std::uint32_t modifier, std::uint32_t max);
std::uint32_t shrink_ple_window(std::uint32_t val, std::uint32_t base, std::uint32_t modifier, std::uint32_t min);

/// The host's PLE state: per-vCPU windows and exit generations, per-VM last boosted vCPU and
/// counters. Host drives it (ple.cpp holds the Host glue); it holds no pointer to the host.
class PauseLoopExiting {
 public:
  void init(const PleParams& p, std::uint32_t vcpus, std::uint32_t domains);
  const PleParams& params() const { return p_; }
  bool active() const { return p_.active(); }
  std::uint32_t window(VcpuId v) const { return win_[v]; }
  /// Invalidates v's pending exit and returns the new generation to arm one with.
  std::uint64_t next_gen(VcpuId v) { return ++gen_[v]; }
  std::uint64_t gen(VcpuId v) const { return gen_[v]; }
  /// vmx_vcpu_load after a schedule-out: shrink (KVM) or nothing (Xen, fixed window).
  void sched_in(VcpuId v);
  /// kvm_sched_in: v is on a pCPU again, so neither preempted nor ready. Called at every
  /// switch-in (and when a halt ends v's stay on its pCPU).
  void clear_preempted(VcpuId v) { preempted_[v] = 0; ready_[v] = 0; }
  /// kvm_sched_out: "if (current->state == TASK_RUNNING) vcpu->preempted = true" (5.3+: and
  /// vcpu->ready), with kvm_arch_vcpu_put's preempted_in_kernel. Called at every switch-out;
  /// `still_runnable` is false for a vCPU that halted (TASK_INTERRUPTIBLE); `in_kernel`: the
  /// guest was in kernel mode.
  void sched_out(VcpuId v, bool still_runnable, bool in_kernel) {
    if (!still_runnable) return;
    preempted_[v] = 1;
    ready_[v] = 1;
    in_kernel_[v] = in_kernel ? 1 : 0;
  }
  /// kvm_vcpu_wake_up() woke v from a halt: "WRITE_ONCE(vcpu->ready, true)" (5.3+).
  void woken(VcpuId v) { ready_[v] = 1; }
  /// vcpu->preempted: v was last taken off a pCPU while Runnable and has not run since.
  bool preempted(VcpuId v) const { return preempted_[v] != 0; }
  /// vcpu->ready (5.3+): preempted, or woken from a halt, and not run since.
  bool ready(VcpuId v) const { return ready_[v] != 0; }
  /// kvm_arch_vcpu_in_kernel (x86: preempted_in_kernel), meaningful while preempted(v).
  bool preempted_in_kernel(VcpuId v) const { return in_kernel_[v] != 0; }
  /// handle_pause: grow (KVM) or nothing (Xen).
  void grow(VcpuId v);
  std::uint32_t& last_boosted(DomainId d) { return last_boosted_[d]; }
  /// kvm_vcpu_set_in_spin_loop(v, true): v entered kvm_vcpu_on_spin.
  void enter_handler(VcpuId v) { in_spin_loop_[v] = 1; }
  /// The end of kvm_vcpu_on_spin: in_spin_loop and dy_eligible both false.
  void leave_handler(VcpuId v) { in_spin_loop_[v] = 0; dy_eligible_[v] = 0; }
  bool in_spin_loop(VcpuId v) const { return in_spin_loop_[v] != 0; }
  /// kvm_vcpu_eligible_for_directed_yield(v): true unless v is in the handler with dy_eligible
  /// clear; toggles dy_eligible of a vCPU in the handler on every call.
  bool eligible_for_directed_yield(VcpuId v);
  PleStats& stats(DomainId d) { return stats_[d]; }
  const PleStats& stats(DomainId d) const { return stats_[d]; }

 private:
  PleParams p_;
  std::vector<std::uint32_t> win_;
  std::vector<std::uint64_t> gen_;
  std::vector<std::uint32_t> last_boosted_;  ///< per domain: index within the domain
  std::vector<std::uint8_t> in_spin_loop_;   ///< per vCPU: vcpu->spin_loop.in_spin_loop
  std::vector<std::uint8_t> dy_eligible_;    ///< per vCPU: vcpu->spin_loop.dy_eligible
  std::vector<std::uint8_t> preempted_;      ///< per vCPU: vcpu->preempted (set at switch-out if
                                             ///< Runnable, cleared at switch-in; read by the scan)
  std::vector<std::uint8_t> ready_;          ///< per vCPU: vcpu->ready (5.3+)
  std::vector<std::uint8_t> in_kernel_;      ///< per vCPU: arch.preempted_in_kernel
  std::vector<PleStats> stats_;
};

}  // namespace vcpusim::hv
