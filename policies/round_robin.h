// SPDX-License-Identifier: MIT
// This file defines RoundRobin, the reference policy that proves the framework: per-pCPU FIFO
// runqueues, a fixed slice, wake-up onto an idle pCPU when there is one, and idle stealing. It
// is the smallest policy that is work-conserving and honours hard affinity (cf. sched_ext's
// scx_simple), and the baseline the real policies are benchmarked against.
#pragma once

#include <memory>
#include <vector>

#include "hypervisor/policy_api.h"
#include "sim/params.h"

namespace vcpusim::policy {

using sim::ParamSpec;
using sim::ParamValues;

class RoundRobin final : public hv::SchedulerPolicy {
 public:
  explicit RoundRobin(sim::Duration slice) : slice_(slice) {}
  static std::vector<ParamSpec> param_specs();
  static std::unique_ptr<hv::SchedulerPolicy> make(const ParamValues& v);

  std::string_view name() const override { return "rr"; }
  void attach(const hv::SchedContext& ctx) override;
  void insert_vcpu(hv::VcpuId v) override;
  hv::PcpuId pick_cpu(hv::VcpuId v, sim::Time now) override;
  void wake(hv::VcpuId v, sim::Time now) override;
  void sleep(hv::VcpuId v, sim::Time now) override;
  hv::Pick pick_next(hv::PcpuId p, sim::Time now, const hv::PickFilter& f) override;
  void set_next(hv::PcpuId p, hv::VcpuId v, sim::Time now) override;
  void put_prev(hv::PcpuId p, hv::VcpuId prev, sim::Time now) override;
  /// Core scheduling: how long v has waited in its queue (queued), or minus how long it has run
  /// since it was switched in (running), so that across siblings the longest waiter wins, as the
  /// FIFO order does within a queue. Naive and core-wide are the same (one clock).
  double core_priority(hv::PcpuId p, hv::VcpuId v, hv::CorePrio how) const override;
  void dump(std::ostream& os) const override;

  sim::Duration slice() const { return slice_; }
  std::uint32_t queue_length(hv::PcpuId p) const { return len_[p]; }

 private:
  static constexpr hv::VcpuId kNil = hv::kIdle;
  void enqueue(hv::PcpuId p, hv::VcpuId v);
  void dequeue(hv::VcpuId v);
  /// First queued entity of p's queue that may run on `on` and passes the filter.
  hv::VcpuId first_fit(hv::PcpuId p, hv::PcpuId on, const hv::PickFilter& f) const;
  /// Tickle an idle pCPU that could steal v, if any.
  void kick_idle_for(hv::VcpuId v);

  sim::Duration slice_;
  const hv::HypervisorView* hv_ = nullptr;
  hv::SchedActions* act_ = nullptr;
  // Intrusive FIFO per pCPU: no allocation after attach.
  std::vector<hv::VcpuId> head_, tail_, next_, prev_;
  std::vector<hv::PcpuId> queued_on_;  // kNoPcpu when not queued
  std::vector<std::uint32_t> len_;
  std::vector<sim::Time> slice_end_;
  std::vector<hv::VcpuId> running_;
  std::vector<sim::Time> since_;       // per entity: when it was queued, or switched in
  topo::CpuSet nonempty_;              // pCPUs whose queue holds something (steal candidates)
  // Idle pCPUs already tickled for some entity and not yet rescheduled: not offered again, so
  // a burst of wake-ups spreads instead of piling onto the first idle pCPU (Xen credit2 keeps
  // the same `tickled` mask for the same reason).
  topo::CpuSet tickled_;
  topo::CpuSet free_idle() const { return hv_->idle_pcpus() - tickled_; }
  void tickle(hv::PcpuId p) { tickled_.set(p); act_->tickle(p); }
};

}  // namespace vcpusim::policy
