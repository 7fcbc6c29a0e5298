// SPDX-License-Identifier: MIT
// This file defines the execution-rate model. Work is measured in reference nanoseconds: how
// long it takes alone on an otherwise idle core with local memory. A running entity progresses
// at a rate of at most 1; the rate is the product of three factors:
//   SMT:   a busy sibling hardware thread slows it, by an interference matrix over the two
//          threads' resource profiles (ExecParams::smt);
//   NUMA:  remote memory slows the memory-stall share of its time:
//          1 / (1 + mem_intensity * sum_j frac_j * (latency_ratio(node, j) - 1));
//   cache: for a while after a migration to another core it runs cold (ExecParams::cold_*).
// The dispatcher recomputes a rate whenever one of its inputs changes and re-times the
// entity's completion event.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "sim/sim_time.h"

namespace vcpusim::hv {

/// What a piece of work mostly stresses; indexes the SMT interference matrix.
enum class Profile : std::uint8_t {
  kCpu = 0,     ///< execution-unit bound (sysbench cpu: trial division)
  kMemory = 1,  ///< memory-bandwidth bound (sysbench memory with large blocks)
  kMixed = 2,   ///< a blend (most server code)
  kSpin = 3,    ///< a PAUSE loop: yields issue slots to the sibling, makes no progress
};
inline constexpr std::size_t kNumProfiles = 4;

std::string_view profile_name(Profile p);
bool parse_profile(std::string_view s, Profile& out);

struct ExecParams {
  /// smt[a][b]: rate of a thread running profile a while its sibling runs profile b.
  /// Defaults (see exec_model.cpp for the source of each number).
  std::array<std::array<double, kNumProfiles>, kNumProfiles> smt = default_smt();
  /// A migration to another core leaves the entity cache-cold: it runs at cold_rate for
  /// cold_duration after it next starts. [E] estimate: an L2 refill of ~1 MiB at ~10 GB/s.
  sim::Duration cold_duration = sim::us(100);
  /// The working set whose refill cold_duration stands for (the 1 MiB above). A domain whose
  /// workload touches less (DomainSpec::cache_footprint) gets a window shortened in proportion:
  /// a task that touches 64 KiB between sleeps has no 1 MiB to refill.
  double cold_footprint_bytes = 1024.0 * 1024.0;
  double cold_rate = 0.5;
  /// Extra coldness when the move leaves the last-level cache (Topology::same_llc: across nodes,
  /// sockets, or a Zen CCX within a node): the window is multiplied. The scenario key is
  /// `cross_node_factor`, as on every machine but Zen an LLC is a node within a socket.
  double cold_cross_node_factor = 3.0;
  /// Time a pCPU spends switching from one entity to another, during which neither progresses
  /// (the incoming entity's first stretch on the pCPU, charged to its run time). What it stands
  /// for is the host's trip through its scheduler between two vCPUs: Xen's schedule() and
  /// context_switch(); on a KVM host the outgoing thread's __schedule()/context_switch() (vCPU
  /// threads of different VMs are different QEMU processes, so an mm switch), the incoming
  /// vCPU's kvm_sched_in -> vmx_vcpu_load (VMPTRLD; after a move to another pCPU a VMCLEAR IPI to
  /// the old one first) and its VM entry. The outgoing vCPU's VM exit is not in it: a PLE exit
  /// charges its own (PleParams::exit_cost), a reschedule IPI's exit is in resched_ipi.
  /// Interruptible: a reschedule requested before the entry cancels it (3.10
  /// vcpu_enter_guest() checks need_resched() with interrupts off), so the entity leaves with no
  /// progress. ONE source: the KVM halt-polling documentation's "a trip through the scheduler,
  /// normally on the order of a few micro-seconds" [S] (reference note 1.3), the only figure
  /// the notes give for this path; 2 us is its low end [E]. The measurement that should set it:
  /// on the modelled host, the time from a vCPU thread's sched_switch away to the next vCPU's
  /// kvm_entry on that pCPU (ftrace), which no calibration mail here gives. A bare-metal task
  /// (a host entity) pays it too, for the host's own switch between processes, and a guest's
  /// switch to one of its threads costs guest::GuestParams::context_switch, from the same
  /// source and of the same size.
  sim::Duration context_switch = sim::us(2);
  /// Delay from a resched_task() of a task running on another pCPU to that pCPU's schedule():
  /// the reschedule IPI's delivery and, for a vCPU in guest mode, its external-interrupt VM
  /// exit (SchedActions::resched_remote). [E] 1 us: the upper end of
  /// ../shared/reference/spinlocks-and-workloads.md 1.3, "IPI delivery to a running vCPU ... < 1 us"
  /// [R] (no measurement of the X7560's IPI latency is at hand). 0: at once.
  sim::Duration resched_ipi = sim::us(1);

  static std::array<std::array<double, kNumProfiles>, kNumProfiles> default_smt();
};

}  // namespace vcpusim::hv
