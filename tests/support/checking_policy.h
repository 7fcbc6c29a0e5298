// SPDX-License-Identifier: MIT
// This file defines CheckingPolicy, a test decorator of a SchedulerPolicy: it forwards every
// hook to the policy under test and checks each answer that places an entity (pick_cpu's pCPU,
// pick_next's candidate, set_next's commit) against the entity's hard affinity and the usable
// threads, before the dispatcher sees it. The dispatcher checks the same rules and stops the run;
// the decorator counts every decision and keeps the first violation, so a test can assert "never"
// over a whole run. Subclasses watch commits through the observe_* hooks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "hypervisor/policy_api.h"

namespace vcpusim::test {

class CheckingPolicy : public hv::SchedulerPolicy {
 public:
  explicit CheckingPolicy(std::unique_ptr<hv::SchedulerPolicy> inner) : inner_(std::move(inner)) {}

  std::uint64_t decisions = 0, affinity_violations = 0;
  std::string first_violation;
  hv::SchedulerPolicy& inner() { return *inner_; }

  std::string_view name() const override { return inner_->name(); }
  void attach(const hv::SchedContext& ctx) override {
    hv_ = &ctx.hv;
    observe_attach(ctx);
    inner_->attach(ctx);
  }
  void insert_vcpu(hv::VcpuId v) override { inner_->insert_vcpu(v); }
  hv::PcpuId pick_cpu(hv::VcpuId v, sim::Time now) override {
    const hv::PcpuId p = inner_->pick_cpu(v, now);
    check(v, p, "pick_cpu");
    return p;
  }
  void wake(hv::VcpuId v, sim::Time now) override { inner_->wake(v, now); }
  void sleep(hv::VcpuId v, sim::Time now) override { inner_->sleep(v, now); }
  int yield(hv::VcpuId v, hv::VcpuId to, sim::Time now) override { return inner_->yield(v, to, now); }
  hv::Pick pick_next(hv::PcpuId p, sim::Time now, const hv::PickFilter& f) override {
    const hv::Pick pk = inner_->pick_next(p, now, f);
    if (pk.vcpu != hv::kIdle) check(pk.vcpu, p, "pick_next");
    return pk;
  }
  void set_next(hv::PcpuId p, hv::VcpuId v, sim::Time now) override {
    if (v != hv::kIdle) check(v, p, "set_next");
    observe_set_next(p, v, now);
    inner_->set_next(p, v, now);
  }
  sim::Duration committed_slice(hv::PcpuId p, hv::VcpuId v, sim::Duration picked, sim::Time now) override {
    return inner_->committed_slice(p, v, picked, now);
  }
  void put_prev(hv::PcpuId p, hv::VcpuId prev, sim::Time now) override {
    observe_put_prev(p, prev, now);
    inner_->put_prev(p, prev, now);
  }
  double core_priority(hv::PcpuId p, hv::VcpuId v, hv::CorePrio how) const override {
    return inner_->core_priority(p, v, how);
  }
  void on_timer(hv::TimerId t, sim::Time now) override { inner_->on_timer(t, now); }
  void dump(std::ostream& os) const override { inner_->dump(os); }

 protected:
  virtual void observe_attach(const hv::SchedContext&) {}
  virtual void observe_set_next(hv::PcpuId, hv::VcpuId, sim::Time) {}
  virtual void observe_put_prev(hv::PcpuId, hv::VcpuId, sim::Time) {}
  const hv::HypervisorView* hv_ = nullptr;

 private:
  void check(hv::VcpuId v, hv::PcpuId p, const char* hook) {
    ++decisions;
    if (hv_->vcpu(v).hard.test(p) && hv_->usable_pcpus().test(p)) return;
    if (affinity_violations++ == 0)
      first_violation = std::string(hook) + " put entity " + std::to_string(v) + " on pCPU " + std::to_string(p) +
                        " at t=" + std::to_string(hv_->now());
  }
  std::unique_ptr<hv::SchedulerPolicy> inner_;
};

}  // namespace vcpusim::test
