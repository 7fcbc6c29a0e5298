// SPDX-License-Identifier: MIT
// This file defines the dense ids of the hypervisor layer. Every table (policy state, accounting,
// guest state) is a vector indexed by these, as Xen's per-unit and per-pCPU private data are.
#pragma once

#include <cstdint>
#include <limits>

#include "topology/cpuset.h"

namespace vcpusim::hv {

using PcpuId = topo::ThreadId;    ///< a hardware thread, as the topology numbers it
using VcpuId = std::uint32_t;     ///< a host-schedulable entity: a vCPU, or a bare-metal task
using DomainId = std::uint32_t;   ///< a VM, or the bare-metal group of tasks
using TimerId = std::uint32_t;    ///< a policy's own timer, numbered by the policy

inline constexpr VcpuId kIdle = std::numeric_limits<VcpuId>::max();  ///< "run the idle loop"
inline constexpr PcpuId kNoPcpu = topo::CpuSet::kNone;

/// Who woke an entity, for a policy's wake-up placement (Linux: `current` in try_to_wake_up and
/// the CPU it runs on, smp_processor_id()). A guest takes it with GuestPort::waker() when the
/// wake-up is sent and hands it to GuestPort::kick_from(), so a kick delivered later (a PV kick
/// after kick_latency, a reschedule IPI after wake_ipi) still names the pCPU the waker was on
/// when it sent. The guest treats `pcpu` as opaque.
struct Waker {
  VcpuId vcpu = kIdle;    ///< the waking entity; kIdle: none (timer, device, first wake-up)
  PcpuId pcpu = kNoPcpu;  ///< the pCPU it ran on when it woke the wakee
};

}  // namespace vcpusim::hv
