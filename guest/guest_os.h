// SPDX-License-Identifier: MIT
// This file defines GuestOs, the model of the operating system inside one VM (or of the host's
// own process scheduler for bare-metal tasks): it runs a Workload's threads on the domain's
// vCPUs. It is what makes a vCPU halt when it has nothing to run, and a thread's wake-up wake
// the vCPU it lands on.
//
// Guest scheduling, modelled on Linux CFS inside a guest at the level that matters to the host:
//  - threads start spread round-robin over the vCPUs (thread i on vCPU i mod n);
//  - a vCPU runs its current thread; when others wait on it, the threads rotate every guest
//    slice of executed work (MODEL: the slice counts reference work, not guest time);
//  - a waking thread goes to its previous vCPU if that is idle, else to any idle vCPU, else
//    queues on its previous vCPU (select_idle_sibling, coarsely); an idle vCPU steals a waiting
//    thread from the busiest vCPU (newidle balance) before it halts;
//  - bare metal: thread i is the host entity i, one-to-one, no guest scheduling at all.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "guest/guest_trace.h"
#include "guest/workload.h"
#include "hypervisor/workload_api.h"
#include "sim/rng.h"

namespace vcpusim::guest {

struct GuestParams {
  sim::Duration slice = sim::ms(3);  ///< Linux min_granularity 0.75 ms x (1 + log2(8)) = 3 ms
};

/// Results of one guest over the measured interval.
struct GuestResults {
  double results = 0;        ///< workload results (events, MiB, loops) completed in the interval
  double throughput = 0;     ///< results per measured second
  std::uint64_t steps = 0;   ///< compute steps completed (all time)
};

class GuestOs final : public hv::GuestHooks {
 public:
  /// `vcpus` are the domain's entity ids in vCPU order; `seed_name` names its RNG streams.
  GuestOs(hv::GuestPort& port, hv::DomainId domain, std::vector<hv::VcpuId> vcpus,
          std::unique_ptr<Workload> workload, bool bare_metal, GuestParams params,
          std::uint64_t master_seed, const std::string& seed_name);

  /// Puts every thread on its first vCPU and kicks the vCPUs that have work. After Host::start().
  void start();
  GuestResults results() const;
  const Workload& workload() const { return *workload_; }
  /// Attach an observer of thread placement (not owned; nullptr detaches).
  void set_trace(GuestTraceSink* sink) { trace_ = sink; }

  // hv::GuestHooks
  void on_vcpu_scheduled(hv::VcpuId v, bool has_work) override;
  void on_work_done(hv::VcpuId v) override;
  void on_timer(std::uint64_t token) override;

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Thread {
    Step step;                   ///< the current step
    double remaining = 0;        ///< compute work left in the current step
    double segment = 0;          ///< work handed to the host in the current segment
    double slice_used = 0;       ///< work executed since it last got its vCPU
    std::uint32_t vcpu = 0;      ///< local vCPU index it is on (or last ran on)
    std::uint32_t next = kNone;  ///< intrusive FIFO link in its vCPU's queue
    bool blocked = false;
    sim::RngStream rng;
  };
  struct VcpuState {
    hv::VcpuId id = 0;
    std::uint32_t curr = kNone;  ///< thread whose segment the vCPU executes
    std::uint32_t head = kNone, tail = kNone, queued = 0;
  };

  std::uint32_t local(hv::VcpuId v) const { return v - base_; }
  void enqueue(std::uint32_t vc, std::uint32_t t);
  std::uint32_t dequeue(std::uint32_t vc);
  /// Give the vCPU (which is running on the host) something to execute, or halt it.
  void run_next(std::uint32_t vc);
  void issue_segment(std::uint32_t vc, std::uint32_t t);
  void advance_thread(std::uint32_t t);  ///< draw the next step; blocks go to sleep
  void place_woken(std::uint32_t t);
  /// Makes thread t (or kNone) vCPU vc's current thread, telling the trace.
  void set_curr(std::uint32_t vc, std::uint32_t t);
  bool vcpu_idle(std::uint32_t vc) const { return vcpus_[vc].curr == kNone && vcpus_[vc].queued == 0; }

  hv::GuestPort& port_;
  hv::DomainId domain_;
  hv::VcpuId base_;
  std::vector<VcpuState> vcpus_;
  std::vector<Thread> threads_;
  std::unique_ptr<Workload> workload_;
  bool bare_metal_;
  GuestParams params_;
  GuestTraceSink* trace_ = nullptr;
  double results_ = 0;
  std::uint64_t steps_ = 0;
};

}  // namespace vcpusim::guest
