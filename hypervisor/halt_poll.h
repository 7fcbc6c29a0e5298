// SPDX-License-Identifier: MIT
// This file defines KVM's halt polling, a mechanism of a KVM host (not of a policy or a guest):
// a vCPU that halts does not give up its pCPU at once; its thread polls for a wake-up for a
// while, so a wake-up that comes soon costs no trip through the host scheduler. The price is
// the pCPU time the poll burns, which nothing else may use, and which a busy sibling thread
// feels as a spinning neighbour.
//
// Design (virt/kvm/kvm_main.c kvm_vcpu_block(), grow_halt_poll_ns(), shrink_halt_poll_ns() of
// Linux 5.4-5.10, the hosts of the 2019-2020 core-scheduling studies; [S] the 5.4 text quoted in
// Marc Zyngier's "KVM: Move kvm_arch_vcpu_blocking/unblocking calls" patch, 2019):
//  - Each vCPU has its own window, vcpu->halt_poll_ns, which starts at 0 (kvm_vcpu_init).
//  - At a halt, "if (vcpu->halt_poll_ns && !kvm_arch_no_poll(vcpu))" the thread polls: "do {
//    if (kvm_vcpu_check_block(vcpu) < 0) goto out; cur = ktime_get(); } while
//    (single_task_running() && ktime_before(cur, stop))". So it polls while its pCPU runs no
//    other task, for at most its window; a wake-up in that time (an interrupt, a PV kick, its
//    timer: whatever makes kvm_vcpu_check_block() negative, here any host kick) resumes the
//    guest on the spot: no schedule(), no switch-in. Otherwise it blocks as without polling.
//  - When the vCPU runs again, block_ns (from the halt to then, the runqueue wait included:
//    "cur = ktime_get()" after schedule() returns) adjusts the window: "if (block_ns <=
//    vcpu->halt_poll_ns) ; else if (vcpu->halt_poll_ns && block_ns > halt_poll_ns) shrink; else
//    if (vcpu->halt_poll_ns < halt_poll_ns && block_ns < halt_poll_ns) grow". grow: "val *=
//    grow; if (val < grow_start) val = grow_start; if (val > halt_poll_ns) val = halt_poll_ns"
//    (grow 0: unchanged); shrink: "if (shrink == 0) val = 0; else val /= shrink". On x86
//    vcpu_valid_wakeup() is always true, so the invalid-wakeup shrink never applies.
//  - The poll stops on single_task_running() only; 5.11's need_resched() test (262de4102c7b) is
//    later. A guest that turns host polling off (MSR_KVM_POLL_CONTROL, cpuidle-haltpoll on a
//    KVM_HINTS_REALTIME guest) is not modelled: guests leave it on by default.
//
// Parameters (host.halt_poll; the kvm module parameters and their 5.x defaults):
//   enabled     false   off unless a scenario asks (the PV-spinlock study's 3.10 host had no
//                       polling; it came with 4.0; Xen has none)
//   ns          200 us  halt_poll_ns = KVM_HALT_POLL_NS_DEFAULT, 200000 on x86
//                       (arch/x86/include/asm/kvm_host.h); the cap of every window
//   grow        2       halt_poll_ns_grow
//   grow_start  10 us   halt_poll_ns_grow_start ("10000; /* 10us */", 5.1+)
//   shrink      0       halt_poll_ns_shrink ("Default resets per-vcpu halt_poll_ns", until
//                       6.11 made it 2: "Enable halt poll shrinking by default")
//
// MODEL: the poll loop runs on the pCPU as a spinning thread (Profile::kSpin for its SMT
// sibling; it makes no guest progress and takes no pause-loop exits, being in the host). A
// polling vCPU is Running to the host and its policy (its thread is current and burns vruntime)
// and halted to its guest (GuestPort::is_blocked). A successful poll resumes the guest at the
// wake-up's instant: the VM entry costs nothing here (a blocked vCPU pays
// ExecParams::context_switch at its switch-in).
// MODEL: a reschedule that switches a polling vCPU out ends its poll there, and the vCPU blocks
// (HaltPollStats::cut counts them). Another task on its own runqueue ends the poll anyway, so the
// only such reschedule here is core scheduling's core-wide pick evicting a sibling's task. The
// 5.4-5.10 loop does not test need_resched() (262de4102c7b added that in 5.11), so on a host
// kernel without full preemption the real thread would go on polling, in host mode beside the
// sibling's other cookie, until its window ran out or a wake-up came, and only then schedule.
#pragma once

#include <cstdint>

#include "sim/sim_time.h"

namespace vcpusim::hv {

struct HaltPollParams {
  bool enabled = false;
  sim::Duration ns = sim::us(200);         ///< halt_poll_ns: the largest window
  std::uint32_t grow = 2;                  ///< halt_poll_ns_grow
  sim::Duration grow_start = sim::us(10);  ///< halt_poll_ns_grow_start
  std::uint32_t shrink = 0;                ///< halt_poll_ns_shrink (0: reset to 0)

  bool active() const { return enabled && ns > 0; }
};

/// Per VM, over the measured interval.
struct HaltPollStats {
  std::uint64_t polls = 0;      ///< halts that polled (halt_attempted_poll)
  std::uint64_t successes = 0;  ///< polls a wake-up ended (halt_successful_poll)
  std::uint64_t cut = 0;        ///< polls a reschedule ended by switching the vCPU out (MODEL, above)
  double poll_ns = 0;           ///< pCPU time spent polling, successful or not
};

/// grow_halt_poll_ns(): the next window after a short block.
sim::Duration grow_halt_poll(sim::Duration val, const HaltPollParams& p);
/// shrink_halt_poll_ns(): the next window after a long block.
sim::Duration shrink_halt_poll(sim::Duration val, const HaltPollParams& p);
/// kvm_vcpu_block()'s adjustment of a vCPU's window `val` after a block of `block_ns`.
sim::Duration adjust_halt_poll(sim::Duration val, sim::Duration block_ns, const HaltPollParams& p);

}  // namespace vcpusim::hv
