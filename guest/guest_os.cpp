// SPDX-License-Identifier: MIT
#include "guest/guest_os.h"

#include <stdexcept>

namespace vcpusim::guest {

GuestOs::GuestOs(hv::GuestPort& port, hv::DomainId domain, std::vector<hv::VcpuId> vcpus,
                 std::unique_ptr<Workload> workload, bool bare_metal, GuestParams params,
                 std::uint64_t master_seed, const std::string& seed_name)
    : port_(port), domain_(domain), base_(vcpus.empty() ? 0 : vcpus.front()),
      workload_(std::move(workload)), bare_metal_(bare_metal), params_(params) {
  for (std::size_t i = 0; i < vcpus.size(); ++i)
    if (vcpus[i] != base_ + i) throw std::invalid_argument("a domain's vCPU ids must be contiguous");
  vcpus_.resize(vcpus.size());
  for (std::size_t i = 0; i < vcpus.size(); ++i) vcpus_[i].id = vcpus[i];
  const std::uint32_t n = workload_->threads();
  if (bare_metal_ && n != vcpus_.size()) throw std::invalid_argument("bare metal needs one entity per thread");
  threads_.resize(n);
  for (std::uint32_t t = 0; t < n; ++t)
    threads_[t].rng = sim::RngStream(master_seed, seed_name + "/thread/" + std::to_string(t));
}

void GuestOs::enqueue(std::uint32_t vc, std::uint32_t t) {
  VcpuState& s = vcpus_[vc];
  threads_[t].next = kNone;
  threads_[t].vcpu = vc;
  if (s.tail != kNone) threads_[s.tail].next = t; else s.head = t;
  s.tail = t;
  ++s.queued;
}

std::uint32_t GuestOs::dequeue(std::uint32_t vc) {
  VcpuState& s = vcpus_[vc];
  const std::uint32_t t = s.head;
  if (t == kNone) return kNone;
  s.head = threads_[t].next;
  if (s.head == kNone) s.tail = kNone;
  --s.queued;
  threads_[t].next = kNone;
  return t;
}

void GuestOs::start() {
  for (std::uint32_t t = 0; t < threads_.size(); ++t) {
    advance_thread(t);
    if (!threads_[t].blocked) enqueue(t % vcpus_.size(), t);
  }
  for (const VcpuState& s : vcpus_)
    if (s.queued > 0) port_.kick(s.id);
}

void GuestOs::advance_thread(std::uint32_t t) {
  Thread& th = threads_[t];
  th.step = workload_->next(t, th.rng);
  if (th.step.kind == Step::Kind::kCompute) {
    th.remaining = th.step.work_ns;
    th.blocked = false;
  } else {
    th.blocked = true;
    port_.arm_guest_timer(domain_, port_.now() + th.step.block, t);
  }
}

void GuestOs::issue_segment(std::uint32_t vc, std::uint32_t t) {
  Thread& th = threads_[t];
  set_curr(vc, t);
  th.vcpu = vc;
  // Cut the step at the guest slice only when another thread waits for this vCPU.
  double seg = th.remaining;
  const double slice_left = static_cast<double>(params_.slice) - th.slice_used;
  if (vcpus_[vc].queued > 0 && slice_left > 0 && seg > slice_left) seg = slice_left;
  th.segment = seg;
  port_.set_work(vcpus_[vc].id, seg, th.step.profile, th.step.mem_intensity, th.step.bandwidth_mbps);
}

void GuestOs::run_next(std::uint32_t vc) {
  VcpuState& s = vcpus_[vc];
  std::uint32_t t = dequeue(vc);
  if (t == kNone && !bare_metal_) {
    // Newidle balance: steal a waiting thread from the vCPU with the longest queue.
    std::uint32_t busiest = kNone, most = 0;
    for (std::uint32_t o = 0; o < vcpus_.size(); ++o)
      if (vcpus_[o].queued > most) {
        most = vcpus_[o].queued;
        busiest = o;
      }
    if (busiest != kNone) t = dequeue(busiest);
  }
  if (t == kNone) {
    set_curr(vc, kNone);
    port_.halt(s.id);
    return;
  }
  threads_[t].slice_used = 0;
  issue_segment(vc, t);
}

void GuestOs::on_vcpu_scheduled(hv::VcpuId v, bool has_work) {
  if (has_work) return;
  const std::uint32_t vc = local(v);
  if (vcpus_[vc].curr != kNone) issue_segment(vc, vcpus_[vc].curr);
  else run_next(vc);
}

void GuestOs::on_work_done(hv::VcpuId v) {
  const std::uint32_t vc = local(v);
  const std::uint32_t t = vcpus_[vc].curr;
  Thread& th = threads_[t];
  th.remaining -= th.segment;
  th.slice_used += th.segment;
  if (th.remaining <= 0.5) {
    ++steps_;
    if (port_.now() >= port_.measure_from()) results_ += th.step.result;
    advance_thread(t);
  }
  if (th.blocked) {
    set_curr(vc, kNone);
    run_next(vc);
    return;
  }
  // Rotate when the slice is used up and someone waits (Linux check_preempt_tick, coarsely).
  if (vcpus_[vc].queued > 0 && th.slice_used >= static_cast<double>(params_.slice)) {
    enqueue(vc, t);
    set_curr(vc, kNone);
    run_next(vc);
    return;
  }
  issue_segment(vc, t);
}

void GuestOs::place_woken(std::uint32_t t) {
  std::uint32_t target = threads_[t].vcpu;
  if (!bare_metal_ && !vcpu_idle(target)) {
    for (std::uint32_t i = 1; i < vcpus_.size(); ++i) {
      const std::uint32_t o = (target + i) % static_cast<std::uint32_t>(vcpus_.size());
      if (vcpu_idle(o)) {
        target = o;
        break;
      }
    }
  }
  enqueue(target, t);
  const hv::VcpuId id = vcpus_[target].id;
  if (port_.is_blocked(id)) port_.kick(id);
}

void GuestOs::on_timer(std::uint64_t token) {
  const auto t = static_cast<std::uint32_t>(token);
  advance_thread(t);
  if (!threads_[t].blocked) place_woken(t);
}

void GuestOs::set_curr(std::uint32_t vc, std::uint32_t t) {
  std::uint32_t& curr = vcpus_[vc].curr;
  if (curr == t) return;
  if (trace_) {
    if (curr != kNone) trace_->thread_off(vcpus_[vc].id, curr, port_.now());
    if (t != kNone) trace_->thread_on(vcpus_[vc].id, t, port_.now());
  }
  curr = t;
}

GuestResults GuestOs::results() const {
  GuestResults r;
  r.results = results_;
  r.steps = steps_;
  const double secs = sim::to_seconds(port_.now() - port_.measure_from());
  r.throughput = secs > 0 ? results_ / secs : 0.0;
  return r;
}

}  // namespace vcpusim::guest
