// SPDX-License-Identifier: MIT
// This file defines GuestTraceSink, the observer of a guest's own scheduling: which of its
// threads a vCPU is running (whether or not the vCPU itself holds a pCPU at that moment).
#pragma once

#include <cstdint>

#include "hypervisor/ids.h"
#include "sim/sim_time.h"

namespace vcpusim::guest {

class GuestTraceSink {
 public:
  virtual ~GuestTraceSink() = default;
  /// Thread `thread` of the domain became vCPU v's current thread at t ...
  virtual void thread_on(hv::VcpuId v, std::uint32_t thread, sim::Time t) = 0;
  /// ... and stopped being it at t.
  virtual void thread_off(hv::VcpuId v, std::uint32_t thread, sim::Time t) = 0;
};

}  // namespace vcpusim::guest
