// SPDX-License-Identifier: MIT
// This file defines the guest boundary: the calls a guest OS (or bare-metal task group) makes on
// the host, GuestPort, which are the hypercall-like operations a real guest has (set what the
// vCPU executes, halt, kick another vCPU, yield, arm a timer), and the notifications it gets,
// GuestHooks. A guest never sees a pCPU, a policy or the topology: it sees its own vCPUs.
#pragma once

#include <cstdint>
#include <string_view>
#include <stdexcept>

#include "hypervisor/exec_model.h"
#include "hypervisor/ids.h"
#include "sim/sim_time.h"

namespace vcpusim::hv {

class GuestPort {
 public:
  virtual ~GuestPort() = default;
  virtual sim::Time now() const = 0;
  /// Start of the measured interval (the end of warm-up): guests count results from here.
  virtual sim::Time measure_from() const = 0;
  /// Set the work the RUNNING vCPU v executes next; the host calls GuestHooks::on_work_done when
  /// it completes. Replaces any unfinished segment. `bandwidth_mbps` is the DRAM bandwidth the
  /// work would draw running alone at rate 1 (0: not bandwidth-bound); the host shares each
  /// node's bandwidth among the running work that draws on it. `user_mode`: the work runs in guest
  /// user mode (a user-space spin takes no pause-loop exits).
  virtual void set_work(VcpuId v, double work_ref_ns, Profile profile, double mem_intensity,
                        double bandwidth_mbps = 0.0, bool user_mode = false) = 0;
  /// The RUNNING vCPU v spends its next d ns of run time in the guest's own code, making no
  /// progress (the guest scheduler switching between two of its threads); the work set next
  /// starts after it. Returns when v's work can progress again: after any stall still under way
  /// too (the host's switch-in). MODEL: a host preemption inside those d ns drops what is left.
  virtual sim::Time stall(VcpuId v, sim::Duration d) = 0;
  /// The running vCPU v has nothing to do: it halts (HLT / SCHEDOP_block) and blocks on the host.
  virtual void halt(VcpuId v) = 0;
  /// Wake a halted vCPU (an IPI / event-channel notification). No effect if it is not blocked.
  /// No waker: the wake-up comes from a timer or a device (interrupt context on the wakee's
  /// last pCPU).
  virtual void kick(VcpuId v) = 0;
  /// The waker of a wake-up the running vCPU w sends now (a snapshot; see hv::Waker), for a
  /// kick_from() now or later. Default: w with no pCPU (the host ignores such a waker).
  virtual Waker waker(VcpuId w) const { return Waker{w, kNoPcpu}; }
  /// kick(v), woken by `by` (GuestPort::waker() taken when the wake-up was sent); `sync` is
  /// Linux's WF_SYNC (the waker is about to sleep: a socket send, sock_def_readable ->
  /// wake_up_interruptible_sync_poll). The host's policy may place v near the waker (CFS
  /// wake_affine). Default: a plain kick.
  virtual void kick_from(VcpuId v, Waker /*by*/, bool /*sync*/) { kick(v); }
  /// KVM_HC_KICK_CPU from the vCPU `by` names: kick_from(v, by, false), and on a host that
  /// boosts the kicked vCPU (HostSpec::kick_boost, KVM 5.3+) the kicker then yields to it.
  /// Only a KVM-flavour PV unlock calls it (a Xen event channel send yields nothing).
  virtual void kick_cpu(VcpuId v, Waker by) { kick_from(v, by, false); }
  /// Whether v is on a pCPU now (guests use it to tell a preempted lock holder, as the
  /// steal-time "preempted" flag does in Linux's vcpu_is_preempted()).
  virtual bool is_running(VcpuId v) const = 0;
  virtual bool is_blocked(VcpuId v) const = 0;
  /// KVM's steal-time flag KVM_VCPU_PREEMPTED, which the guest reads: set when the host takes v
  /// off its pCPU still Runnable (kvm_arch_vcpu_put -> kvm_steal_time_set_preempted, when
  /// vcpu->preempted), cleared when v next enters the guest. A vCPU that halted, or was woken
  /// from a halt and has not run since, is not flagged. Default: never.
  virtual bool steal_time_preempted(VcpuId /*v*/) const { return false; }
  /// Mark an instant on the host's trace, if one is attached ("lhp", "lwp", "pv-halt",
  /// "pv-kick"); no effect on the run.
  virtual void mark(std::string_view /*what*/, VcpuId /*v*/) {}
  /// Call GuestHooks::on_timer(token) at `when` (>= now).
  virtual void arm_guest_timer(DomainId d, sim::Time when, std::uint64_t token) = 0;
  /// Replace the unfinished segment of a vCPU that is preempted (Runnable, not on a pCPU): the
  /// new segment runs when the host next puts v on a pCPU (on_vcpu_scheduled(v, true) then, as
  /// for any kept work). Guest spinlocks use it to hand a lock to a waiter that the host has
  /// preempted mid-spin (lock-waiter preemption). Throws unless v is Runnable.
  virtual void set_preempted_work(VcpuId /*v*/, double /*work_ref_ns*/, Profile /*profile*/,
                                  double /*mem_intensity*/) {
    throw std::logic_error("this host does not support set_preempted_work");
  }
  /// Total time v has spent on a pCPU since the start (including the current stretch): guests
  /// measure the CPU time a spin burned from it without any event while it spins.
  virtual sim::Duration run_time(VcpuId /*v*/) const { return 0; }
  /// The part of run_time(v) inside the measured interval (0 before it starts): a spin that began
  /// in the warm-up counts in the figures only for what it burned after the warm-up.
  virtual sim::Duration measured_run_time(VcpuId v) const { return run_time(v); }
};

class GuestHooks {
 public:
  virtual ~GuestHooks() = default;
  /// vCPU v was put on a pCPU. If it has no work in progress, the guest must call set_work() or
  /// halt() for it (possibly later in the same instant). With work in progress (has_work) the
  /// work resumes by itself; the guest may note that v runs again (IPIs it owes, guest/ipi.h).
  virtual void on_vcpu_scheduled(VcpuId v, bool has_work) = 0;
  /// vCPU v was taken off its pCPU while still runnable (preempted); its work is kept.
  virtual void on_vcpu_preempted(VcpuId /*v*/) {}
  /// v's current work segment completed; set the next one or halt.
  virtual void on_work_done(VcpuId v) = 0;
  /// A timer the guest armed fired.
  virtual void on_timer(std::uint64_t token) = 0;
};

}  // namespace vcpusim::hv
