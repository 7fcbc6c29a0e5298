// SPDX-License-Identifier: MIT
// This file is the execution-rate model applied (see exec_model.h for the model itself): it
// advances a running entity's work at its current rate and re-times its completion event
// whenever an input of the rate changes. Re-timing bumps the entity's work generation, so the
// old completion event is dropped when popped rather than searched for.
#include <algorithm>
#include <cmath>

#include "hypervisor/host.h"

namespace vcpusim::hv {

double Host::compute_rate(const Vcpu& v, PcpuId p) const {
  const ExecParams& x = spec_.exec;
  if (v.work.profile == Profile::kSpin) return 1.0;  // spinning is wall time, not progress
  const auto self = static_cast<std::size_t>(v.work.profile);
  double r = 1.0;
  // SMT: the most interfering busy sibling decides (a 2-thread core has one sibling).
  if (topo_.threads_per_core() > 1) {
    for (const PcpuId s : topo_.smt_list(p)) {
      if (s == p) continue;
      const VcpuId o = pcpus_[s].curr;
      if (o == kIdle) continue;
      const Vcpu& ov = vcpus_[o];
      if (ov.state != Runstate::kRunning || !ov.work.active) continue;
      r = std::min(r, x.smt[self][static_cast<std::size_t>(ov.work.profile)]);
    }
  }
  // NUMA: the memory-stall share stretches by the latency ratio to where the memory is.
  const Domain& d = domains_[v.domain];
  const double excess = d.numa_excess[topo_.node_of(p)];
  r /= 1.0 + v.work.mem_intensity * excess;
  // Bandwidth: when the work drawing on a node asks for more than the node delivers, each gets
  // its share; the memory-stall part of the time stretches by 1/share.
  if (v.bw_demand > 0) {
    double share = 0;
    for (NodeIdx n = 0; n < d.memory_on_node.size(); ++n)
      if (d.memory_on_node[n] > 0) share += d.memory_on_node[n] * bandwidth_share(n);
    if (share < 1.0) r /= (1.0 - v.work.mem_intensity) + v.work.mem_intensity / share;
  }
  if (now_ < v.cold_until) r *= x.cold_rate;
  return r;
}

void Host::advance(Vcpu& v) {
  if (v.rate > 0.0 && v.work.active) {
    const sim::Time from = std::max(v.progress_since, v.stall_until);
    if (now_ > from) v.work.remaining = std::max(0.0, v.work.remaining - v.rate * static_cast<double>(now_ - from));
  }
  v.progress_since = now_;
}

void Host::retime(Vcpu& v) {
  if (v.state != Runstate::kRunning || !v.work.active) {
    advance(v);
    ++v.work_gen;
    queue_.cancel_keyed(kWorkDone, v.id);  // superseded, with none to take its place
    v.rate = 0.0;
    v.done_at = sim::kNever;
    set_bandwidth_demand(v, 0.0);
    return;
  }
  set_bandwidth_demand(v, v.work.bandwidth_mbps);
  const double rate = compute_rate(v, v.pcpu);
  // Same rate and a valid pending completion: the event already fires at the right instant, so
  // keep it rather than push a duplicate (most sibling re-timings change nothing).
  if (rate == v.rate && v.done_at != sim::kNever) return;
  advance(v);
  ++v.work_gen;
  v.rate = rate;
  const sim::Time start = std::max(now_, v.stall_until);
  const double dt = std::ceil(v.work.remaining / v.rate);
  // A completion beyond the end of time (a rate near 0) is no event at all: casting it would
  // overflow into the past, and the loop would spin on it.
  if (!(dt < static_cast<double>(sim::kNever - start))) {
    v.done_at = sim::kNever;
    queue_.cancel_keyed(kWorkDone, v.id);
    return;
  }
  v.done_at = start + static_cast<sim::Duration>(dt);
  if (v.done_at > horizon_) {  // after the run's end: no event needed (set_horizon)
    queue_.cancel_keyed(kWorkDone, v.id);
    return;
  }
  queue_.push_keyed(v.done_at, sim::Phase::kGuest, kWorkDone, v.id, v.work_gen);
}

void Host::stop_progress(Vcpu& v) {
  advance(v);
  v.rate = 0.0;
  v.done_at = sim::kNever;
  ++v.work_gen;
  queue_.cancel_keyed(kWorkDone, v.id);
  set_bandwidth_demand(v, 0.0);
}

double Host::bandwidth_share(NodeIdx n) const {
  const double bw = node_bw_[n], load = node_load_[n];
  return bw > 0 && load > bw ? bw / load : 1.0;
}

// Changes what v draws from its domain's nodes. Every user reads the current share whenever it
// is timed, which bandwidth-bound work does at each of its steps (sysbench memory: 1 ms of
// work). The others are re-timed at once only when a node's share has moved by more than
// kShareTolerance since they were (each once, however many of its nodes moved).
// MODEL: a user may run on a share up to kShareTolerance stale until its next step; re-timing
// every user on every change (each preemption of a memory-bound vCPU, times every node its
// interleaved memory touches) made a 256-vCPU host 10x slower for no visible change.
void Host::set_bandwidth_demand(Vcpu& v, double demand) {
  if (v.bw_demand == demand) return;
  constexpr double kShareTolerance = 0.10;
  const Domain& d = domains_[v.domain];
  const double old = v.bw_demand;
  v.bw_demand = demand;
  ++bw_stamp_;
  bool any = false;
  for (NodeIdx n = 0; n < d.memory_on_node.size(); ++n) {
    const double frac = d.memory_on_node[n];
    if (frac <= 0 || node_bw_[n] <= 0) continue;
    node_load_[n] += (demand - old) * frac;
    if (node_load_[n] < 1e-9) node_load_[n] = 0;  // keep float residue from tripping the share
    auto& users = node_users_[n];
    if (old == 0) users.push_back(v.id);
    if (demand == 0) users.erase(std::find(users.begin(), users.end(), v.id));
    const double now_share = bandwidth_share(n);
    if (std::fabs(now_share - node_share_timed_[n]) > kShareTolerance * node_share_timed_[n]) {
      node_share_timed_[n] = now_share;
      for (VcpuId u : users) vcpus_[u].bw_stamp = bw_stamp_;
      any = true;
    }
  }
  if (!any) return;
  for (NodeIdx n = 0; n < d.memory_on_node.size(); ++n)
    for (VcpuId u : node_users_[n]) {
      Vcpu& uv = vcpus_[u];
      if (u == v.id || uv.bw_stamp != bw_stamp_) continue;
      uv.bw_stamp = 0;  // once
      retime(uv);
    }
}

bool Host::smt_shared_now(PcpuId p) const {
  if (pcpus_[p].curr == kIdle) return false;
  for (const PcpuId s : topo_.smt_list(p))
    if (s != p && pcpus_[s].curr != kIdle) return true;
  return false;
}

// SMT-shared time is what the co-run factors (exec_model.h) were applied to, so it is charged
// by the same rule: a thread's entity shares its core while any sibling runs an entity, whatever
// that entity does (a spinner too). Stretches end at every switch on the core.
void Host::fold_smt_shared(PcpuId p) {
  if (topo_.threads_per_core() < 2) return;
  const auto& core = topo_.smt_list(p);
  std::size_t busy = 0;
  for (const PcpuId s : core) busy += pcpus_[s].curr != kIdle;
  for (const PcpuId s : core) {
    Pcpu& sc = pcpus_[s];
    if (busy >= 2 && sc.curr != kIdle) vcpus_[sc.curr].smt_shared += now_ - sc.smt_mark;
    sc.smt_mark = now_;
  }
}

void Host::retime_siblings(PcpuId p) {
  if (topo_.threads_per_core() < 2) return;
  for (const PcpuId s : topo_.smt_list(p)) {
    if (s == p) continue;
    const VcpuId o = pcpus_[s].curr;
    if (o == kIdle) continue;
    Vcpu& ov = vcpus_[o];
    if (ov.state == Runstate::kRunning && ov.work.active) retime(ov);
  }
}

}  // namespace vcpusim::hv
