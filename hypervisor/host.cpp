// SPDX-License-Identifier: MIT
// This file holds Host's construction, its event loop and the ports it offers to policies and
// guests. The dispatcher proper is in dispatcher.cpp, the rate model in execution.cpp.
#include "hypervisor/host.h"

#include <sstream>

namespace vcpusim::hv {

std::string_view runstate_name(Runstate s) {
  switch (s) {
    case Runstate::kRunning: return "running";
    case Runstate::kRunnable: return "runnable";
    case Runstate::kBlocked: return "blocked";
  }
  return "?";
}

InvariantViolation::InvariantViolation(std::string r, VcpuId v, PcpuId p, sim::Time t,
                                       const std::string& detail)
    : std::runtime_error([&] {
        std::ostringstream os;
        os << "invariant '" << r << "' violated at t=" << t << "ns";
        if (v != kIdle) os << " by entity " << v;
        if (p != kNoPcpu) os << " on pCPU " << p;
        os << ": " << detail;
        return os.str();
      }()),
      rule(std::move(r)), vcpu(v), pcpu(p), time(t) {}

Host::Host(const topo::Topology& topo, HostSpec spec, std::unique_ptr<SchedulerPolicy> policy,
           std::uint64_t seed)
    : topo_(topo), spec_(spec), policy_(std::move(policy)), policy_rng_(seed, "host/policy") {
  pcpus_.resize(topo_.num_threads());
  for (PcpuId p = 0; p < pcpus_.size(); ++p) {
    pcpus_[p].id = p;
    // nosmt: Linux's cpu_smt_control=off leaves the first (lowest-numbered) thread of each core.
    pcpus_[p].usable = spec_.smt || topo_.smt_mask(p).first() == p;
    if (pcpus_[p].usable) usable_.set(p);
  }
  idle_ = usable_;
  queue_.reserve(1024);
  node_bw_.assign(topo_.num_nodes(), topo_.node_bandwidth_mbps());
  node_load_.assign(topo_.num_nodes(), 0.0);
  node_share_timed_.assign(topo_.num_nodes(), 1.0);
  node_users_.resize(topo_.num_nodes());
}

Host::~Host() = default;

DomainId Host::add_domain(const DomainSpec& spec, GuestHooks* guest) {
  if (started_) throw std::logic_error("add_domain after start");
  Domain d;
  d.id = static_cast<DomainId>(domains_.size());
  d.name = spec.name;
  d.bare_metal = spec.bare_metal;
  d.weight = spec.weight;
  d.cap_pct = spec.cap_pct;
  d.cold_duration = spec_.exec.cold_duration;
  if (spec.cache_footprint > 0 && spec.cache_footprint < spec_.exec.cold_footprint_bytes)
    d.cold_duration = static_cast<sim::Duration>(static_cast<double>(spec_.exec.cold_duration) * spec.cache_footprint /
                                                 spec_.exec.cold_footprint_bytes);
  const std::uint32_t nodes = topo_.num_nodes();
  d.memory_on_node = spec.memory_on_node;
  if (d.memory_on_node.empty()) {
    d.memory_on_node.assign(nodes, 0.0);
    d.memory_on_node[0] = 1.0;
  }
  d.numa_excess.assign(nodes, 0.0);
  for (std::uint32_t n = 0; n < nodes; ++n)
    for (std::uint32_t j = 0; j < nodes; ++j)
      d.numa_excess[n] += d.memory_on_node[j] * (topo_.latency_ratio(n, j) - 1.0);
  for (std::uint32_t i = 0; i < spec.vcpus; ++i) {
    Vcpu v;
    v.id = static_cast<VcpuId>(vcpus_.size());
    v.domain = d.id;
    v.index = i;
    v.weight = spec.weight;
    v.cookie = i < spec.cookies.size() ? spec.cookies[i] : spec.cookie;
    v.process = i < spec.processes.size() ? spec.processes[i] : 0;
    v.hard = (i < spec.hard.size() ? spec.hard[i] : usable_) & usable_;
    v.soft = (i < spec.soft.size() ? spec.soft[i] : usable_) & usable_;
    if (v.hard.empty())
      throw InvariantViolation("hard-affinity", v.id, kNoPcpu, 0,
                               "hard affinity of " + spec.name + " vCPU " + std::to_string(i) +
                                   " contains no usable hardware thread");
    if (v.soft.empty()) v.soft = v.hard;
    d.vcpus.push_back(v.id);
    vcpus_.push_back(v);
  }
  domains_.push_back(std::move(d));
  guests_.push_back(guest);
  return domains_.back().id;
}

void Host::start() {
  started_ = true;
  // Each vCPU has at most one work completion that counts, and each pCPU one slice end: every push
  // of either bumps its generation first. Keyed, a re-timing moves the pending one in the queue
  // instead of leaving it to be popped and dropped as stale (sim/event_queue.h).
  queue_.set_keyed(kWorkDone, vcpus_.size());
  queue_.set_keyed(kSliceEnd, pcpus_.size());
  // sched-gran=core needs more than one usable thread per core; otherwise Xen falls back to
  // per-CPU granularity (cpupool_gran_init), and so does this.
  if (spec_.sched_gran.core && spec_.core_sched.enabled)
    throw std::invalid_argument("core scheduling by cookie and by core-granular units exclude each other");
  if (spec_.sched_gran.core && spec_.smt && topo_.threads_per_core() > 1) {
    unit_start();  // sched_unit.cpp: the policy is attached to the units' view
  } else {
    policy_->attach(SchedContext{*this, *this, policy_rng_});
    for (VcpuId v = 0; v < vcpus_.size(); ++v) policy_->insert_vcpu(v);
  }
  vcpu_base_.assign(vcpus_.size(), VcpuStats{});
  pcpu_base_.assign(pcpus_.size(), 0);
  core_gen_.assign(pcpus_.size(), 0);
  core_task_seq_.assign(pcpus_.size(), 0);
  decided_seq_.assign(pcpus_.size(), 0);
  decided_at_.assign(pcpus_.size(), sim::kNever);
  fi_seq_.assign(pcpus_.size(), 0);
  last_busy_.assign(pcpus_.size(), 0);
  fi_credit_.assign(pcpus_.size(), 0.0);
  allowance_.assign(pcpus_.size(), static_cast<double>(spec_.core_sched.fi_allowance));
  snap_.assign(vcpus_.size(), 0.0);
  snap_seq_.assign(vcpus_.size(), 0);
  floor_.assign(pcpus_.size(), 0.0);
  floor_seq_.assign(pcpus_.size(), 0);
  pcpu_fi_base_.assign(pcpus_.size(), 0);
  dom_fi_base_.assign(domains_.size(), 0);
  dom_fic_base_.assign(domains_.size(), 0);
  fic_since_.assign(pcpus_.size(), 0);
  ple_.init(spec_.ple, static_cast<std::uint32_t>(vcpus_.size()), static_cast<std::uint32_t>(domains_.size()));
  poll_stats_.assign(domains_.size(), HaltPollStats{});
  menu_.assign(pcpus_.size(), MenuGovernor{});
  if (spec_.warmup > 0) queue_.push(spec_.warmup, sim::Phase::kStats, kMeasureStart, 0, 0);
}

void Host::run_until(sim::Time end) {
  if (end > horizon_) throw std::logic_error("run_until past the horizon the run promised (set_horizon)");
  while (!queue_.empty() && queue_.top().time <= end) {
    sim::Event e = queue_.pop();
    now_ = e.time;
    ++events_;
    dispatch(e);
  }
  if (end > now_) now_ = end;
}

void Host::dispatch(const sim::Event& e) {
  switch (e.kind) {
    case kWorkDone: {
      Vcpu& v = vcpus_[e.target];
      if (v.work_gen != e.gen || v.state != Runstate::kRunning) break;
      if (v.polling) {  // the poll's window ran out: the vCPU blocks (halt_poll.h)
        halt_poll_block(v);
        return;
      }
      advance(v);
      v.work.active = false;
      v.work.remaining = 0;
      v.done_at = sim::kNever;
      guests_[v.domain]->on_work_done(v.id);
      return;
    }
    case kColdEnd: {
      Vcpu& v = vcpus_[e.target];
      if (v.cold_gen != e.gen || v.state != Runstate::kRunning) break;
      if (v.work.active) retime(v);
      return;
    }
    case kSliceEnd: {
      Pcpu& p = pcpus_[e.target];
      if (p.slice_gen != e.gen) break;
      schedule(p.id);
      return;
    }
    case kResched: {
      if (!pcpus_[e.target].resched_pending) break;
      via_tickle_ = true;
      schedule(e.target);
      via_tickle_ = false;
      return;
    }
    case kPolicyTimer:
      if (timer_gen_[e.target] != e.gen) break;
      policy_->on_timer(e.target, now_);
      return;
    case kGuestTimer:
      guests_[e.target]->on_timer(e.gen);
      return;
    case kMeasureStart:
      start_measurement();
      return;
    case kCoreRepick:
      if (core_gen_[e.target] != e.gen) break;
      core_repick(e.target);
      return;
    case kReschedLater:
      tickle(e.target);
      return;
    case kReschedIpi: {
      // Every IPI that arrives makes the pCPU leave the guest and check need_resched, so each
      // one schedules (the policy's own flag decides whether anything changes).
      Pcpu& pc = pcpus_[e.target];
      if (pc.ipi_gen == e.gen) pc.ipi_in_flight = false;
      tickle(e.target);
      return;
    }
    case kPollWake: {  // halt_poll.cpp: a poll a wake-up ended; the guest runs on
      Vcpu& v = vcpus_[e.target];
      if (v.poll_gen != e.gen || v.state != Runstate::kRunning || v.polling || v.work.active) break;
      guests_[v.domain]->on_vcpu_scheduled(v.id, false);
      return;
    }
    case kPollCheck: {  // halt_poll.cpp: another task joined the polling vCPU's runqueue
      const VcpuId c = pcpus_[e.target].curr;
      if (c == kIdle || !vcpus_[c].polling || vcpus_[c].poll_gen != e.gen) break;
      if (policy_->nr_running(e.target) <= 1) break;
      halt_poll_block(vcpus_[c]);
      return;
    }
    case kPleExit:  // ple.cpp; a deschedule or a new segment re-arms with a new generation
      if (ple_.gen(e.target) != e.gen || vcpus_[e.target].state != Runstate::kRunning) break;
      ple_exit(e.target);
      return;
  }
  ++stale_;
}

void Host::start_measurement() {
  measure_from_ = now_;
  for (VcpuId v = 0; v < vcpus_.size(); ++v) {
    vcpu_base_[v] = VcpuStats{};
    vcpu_base_[v] = vcpu_stats(v);
  }
  for (PcpuId p = 0; p < pcpus_.size(); ++p) {
    pcpu_base_[p] = 0;
    pcpu_base_[p] = pcpu_busy(p);
    pcpu_fi_base_[p] = 0;
    pcpu_fi_base_[p] = pcpu_forced_idle(p);
  }
  for (DomainId d = 0; d < domains_.size(); ++d) {
    dom_fi_base_[d] = 0;
    dom_fi_base_[d] = domain_forced_idle(d);
    dom_fic_base_[d] = 0;
    dom_fic_base_[d] = domain_forced_idle_caused(d);
  }
}

VcpuStats Host::vcpu_stats(VcpuId id) const {
  const Vcpu& v = vcpus_[id];
  const VcpuStats& b = vcpu_base_.empty() ? VcpuStats{} : vcpu_base_[id];
  VcpuStats s;
  s.running = v.clock.total(0, now_) - b.running;
  s.remote_run = v.remote_run - b.remote_run;
  if (v.state == Runstate::kRunning)  // the current stretch, not yet folded in at switch-out
    s.remote_run += static_cast<double>(now_ - pcpus_[v.pcpu].busy_since) *
                    (1.0 - domains_[v.domain].memory_on_node[topo_.node_of(v.pcpu)]);
  s.smt_shared = v.smt_shared - b.smt_shared;
  if (v.state == Runstate::kRunning && smt_shared_now(v.pcpu)) s.smt_shared += now_ - pcpus_[v.pcpu].smt_mark;
  s.runnable = v.clock.total(1, now_) - b.runnable;
  s.blocked = v.clock.total(2, now_) - b.blocked;
  s.migrations = v.migrations - b.migrations;
  s.context_switches = v.context_switches - b.context_switches;
  s.wakeups = v.wakeups - b.wakeups;
  return s;
}

sim::Duration Host::pcpu_busy(PcpuId id) const {
  const Pcpu& p = pcpus_[id];
  sim::Duration total = p.busy + (p.curr != kIdle ? now_ - p.busy_since : 0);
  return total - (pcpu_base_.empty() ? 0 : pcpu_base_[id]);
}

void Host::check_conservation() const {
  sim::Duration run_sum = 0, busy_sum = 0;
  for (const Vcpu& v : vcpus_) {
    sim::Duration r = v.clock.total(0, now_), q = v.clock.total(1, now_), b = v.clock.total(2, now_);
    if (r + q + b != now_)
      violation("cpu-conserved", v.id, kNoPcpu,
                "running+runnable+blocked = " + std::to_string(r + q + b) + "ns, elapsed " +
                    std::to_string(now_) + "ns");
    run_sum += r;
  }
  for (const Pcpu& p : pcpus_) {
    sim::Duration b = p.busy + (p.curr != kIdle ? now_ - p.busy_since : 0);
    if (b > now_) violation("cpu-conserved", kIdle, p.id, "busy longer than the run");
    busy_sum += b;
  }
  if (run_sum != busy_sum)
    violation("cpu-conserved", kIdle, kNoPcpu,
              "entity run time " + std::to_string(run_sum) + "ns != pCPU busy time " +
                  std::to_string(busy_sum) + "ns");
}

void Host::tickle(PcpuId p) {
  Pcpu& pc = pcpus_[p];
  if (!pc.usable) violation("usable-thread", kIdle, p, "policy tickled a disabled SMT thread");
  if (pc.resched_pending) return;
  pc.resched_pending = true;
  queue_.push(now_, sim::Phase::kSchedule, kResched, p, 0);
}

// resched_task(p_rq->curr) of a remote pCPU's current task (3.10 kernel/sched/core.c): "if
// (test_tsk_need_resched(p)) return; set_tsk_need_resched(p); ... smp_send_reschedule(cpu)".
// The policy keeps the flag itself (its need_resched); here, the IPI: p schedules when it
// arrives. A current task already flagged gets no second IPI (the early return); the flag
// goes with the task, so a new current task on p gets its own.
void Host::resched_remote(PcpuId p) {
  const sim::Duration ipi = spec_.exec.resched_ipi;
  if (ipi <= 0) {
    tickle(p);
    return;
  }
  Pcpu& pc = pcpus_[p];
  if (!pc.usable) violation("usable-thread", kIdle, p, "policy rescheduled a disabled SMT thread");
  if (pc.ipi_in_flight && pc.ipi_for == pc.curr) return;
  pc.ipi_in_flight = true;
  pc.ipi_for = pc.curr;
  queue_.push(now_ + ipi, sim::Phase::kSchedule, kReschedIpi, p, ++pc.ipi_gen);
}

void Host::arm_timer(TimerId t, sim::Time when) {
  if (t >= timer_gen_.size()) timer_gen_.resize(t + 1, 0);
  queue_.push(when < now_ ? now_ : when, sim::Phase::kHypervisorTimer, kPolicyTimer, t, ++timer_gen_[t]);
}

void Host::cancel_timer(TimerId t) {
  if (t < timer_gen_.size()) ++timer_gen_[t];
}

void Host::arm_guest_timer(DomainId d, sim::Time when, std::uint64_t token) {
  queue_.push(when < now_ ? now_ : when, sim::Phase::kGuest, kGuestTimer, d, token);
}

void Host::set_work(VcpuId id, double work_ref_ns, Profile profile, double mem_intensity, double bandwidth_mbps,
                    bool user_mode) {
  Vcpu& v = vcpus_[id];
  if (v.state != Runstate::kRunning)
    violation("runnable-pick", id, v.pcpu, "guest set work on a vCPU that is not running");
  if (v.polling) violation("runnable-pick", id, v.pcpu, "guest set work on a halted (polling) vCPU");
  advance(v);
  const bool changed = !v.work.active || v.work.profile != profile;
  v.work = WorkSegment{work_ref_ns < 1.0 ? 1.0 : work_ref_ns, profile, mem_intensity, bandwidth_mbps, true, user_mode};
  v.done_at = sim::kNever;  // a new segment always needs a new completion event
  retime(v);
  if (changed) retime_siblings(v.pcpu);
  ple_arm(v, false);  // a spin segment starts the PAUSE-loop count; any other cancels it
}

sim::Time Host::stall(VcpuId id, sim::Duration d) {
  Vcpu& v = vcpus_[id];
  if (v.state != Runstate::kRunning)
    violation("runnable-pick", id, v.pcpu, "guest stalled a vCPU that is not running");
  if (v.polling) violation("runnable-pick", id, v.pcpu, "guest stalled a halted (polling) vCPU");
  if (d <= 0) return std::max(v.stall_until, now_);
  advance(v);  // what ran before counts at the old stall
  v.stall_until = std::max(v.stall_until, now_) + d;
  // The vCPU is about to get new work (set_work re-times it); re-time what it has meanwhile.
  v.done_at = sim::kNever;
  retime(v);
  return v.stall_until;
}

void Host::set_preempted_work(VcpuId id, double work_ref_ns, Profile profile, double mem_intensity) {
  Vcpu& v = vcpus_[id];
  if (v.state != Runstate::kRunnable)
    violation("runnable-pick", id, v.pcpu, "guest replaced the work of a vCPU that is not preempted");
  // Not running: no progress, no pending completion, no bandwidth drawn (stop_progress at
  // switch-out). The dispatcher re-times the new segment at the next switch-in.
  v.work = WorkSegment{work_ref_ns < 1.0 ? 1.0 : work_ref_ns, profile, mem_intensity, 0.0, true};
  v.done_at = sim::kNever;
  ++v.work_gen;
  queue_.cancel_keyed(kWorkDone, v.id);
}

void Host::halt(VcpuId id) {
  Vcpu& v = vcpus_[id];
  if (v.state != Runstate::kRunning)
    violation("runnable-pick", id, v.pcpu, "guest halted a vCPU that is not running");
  if (v.polling) violation("runnable-pick", id, v.pcpu, "guest halted a vCPU that is already halted (polling)");
  if (units_) {
    unit_halt(id);  // sched_unit.cpp
    return;
  }
  if (halt_poll_begin(v)) return;  // KVM: the thread polls first (halt_poll.cpp)
  block_running(v);
}

void Host::block_running(Vcpu& v) {
  const PcpuId p = v.pcpu;
  stop_progress(v);
  v.work = WorkSegment{};
  set_runstate(v, Runstate::kBlocked);
  if (trace_) trace_->instant("halt", v.id, p, now_);
  policy_->sleep(v.id, now_);
  core_task_changed(p);
  if (core_sched_on()) settle_forced_idle(p);  // it caused the forced idle until now
  switch_out(p, v.id);
  tickle(p);
}

void Host::kick(VcpuId id) {
  Vcpu& v = vcpus_[id];
  if (v.polling) {
    halt_poll_wake(v);  // kvm_vcpu_check_block() < 0 inside the poll loop
    return;
  }
  if (v.state != Runstate::kBlocked) return;
  ple_.woken(id);  // kvm_vcpu_wake_up(): vcpu->ready (5.3+; ple.h)
  if (units_) {
    unit_kick(id);  // sched_unit.cpp
    return;
  }
  const PcpuId p = policy_->pick_cpu(id, now_);
  if (p >= pcpus_.size() || !usable_.test(p))
    violation("usable-thread", id, p, "pick_cpu chose a pCPU the host cannot use");
  if (!v.hard.test(p)) violation("hard-affinity", id, p, "pick_cpu chose a pCPU outside hard affinity");
  v.pcpu = p;
  ++v.wakeups;
  if (trace_) trace_->instant("wake", id, p, now_);
  set_runstate(v, Runstate::kRunnable);
  core_task_changed(p);
  policy_->wake(id, now_);
}

Waker Host::waker(VcpuId w) const {
  // Only a vCPU on a pCPU wakes anything (its thread runs the KVM exit or the syscall).
  const Vcpu& v = vcpus_[w];
  return Waker{w, v.state == Runstate::kRunning ? v.pcpu : kNoPcpu};
}

void Host::kick_from(VcpuId id, Waker by, bool sync) {
  // A waker without a pCPU, or the wakee itself, is no waker: a plain kick.
  if (by.vcpu != id && by.vcpu < vcpus_.size() && by.pcpu < pcpus_.size() && usable_.test(by.pcpu))
    wake_src_ = WakeSource{by, sync};
  kick(id);
  wake_src_ = WakeSource{};
}

// KVM_HC_KICK_CPU: kvm_pv_kick_cpu_op wakes the target, then (5.3+) kvm_sched_yield(kvm, a1):
// "if (target && READ_ONCE(target->ready)) kvm_vcpu_yield_to(target)", yield_to(task, 1) in the
// kicker's thread. `ready` is set only by a wake-up from a halt (kvm_vcpu_wake_up), so a target
// that was polling in the halt path, or that was already Runnable, is not yielded to.
// MODEL: the wake lands kick_latency after the unlock (guest/spinlock.h); the kicker yields then,
// if it still runs (it is in the hypercall's exit in the kernel; a kicker descheduled in that
// microsecond yields nothing).
void Host::kick_cpu(VcpuId id, Waker by) {
  kick_from(id, by, false);
  if (!spec_.kick_boost || by.vcpu >= vcpus_.size() || by.vcpu == id || !ple_.ready(id)) return;
  if (vcpus_[by.vcpu].domain != vcpus_[id].domain)
    violation("ple-same-vm", by.vcpu, vcpus_[by.vcpu].pcpu,
              "a PV kick yielded to entity " + std::to_string(id) + " of another VM");
  if (yield(by.vcpu, id) <= 0) return;
  trace_instant("kick-yield", by.vcpu);
  if (now_ >= spec_.warmup) ++ple_.stats(vcpus_[id].domain).kick_yields;
}

int Host::yield(VcpuId id, VcpuId to, sim::Duration resched_after) {
  Vcpu& v = vcpus_[id];
  if (v.state != Runstate::kRunning) return 0;
  if (units_) {
    // Xen's vcpu_yield flags the unit (csched2_unit_yield) and reschedules the whole core.
    const int r = policy_->yield(units_->unit_of(id), to == kIdle ? kIdle : units_->unit_of(to), now_);
    const PcpuId master = topo_.smt_mask(v.pcpu).first();
    if (resched_after > 0) queue_.push(now_ + resched_after, sim::Phase::kSchedule, kReschedLater, master, 0);
    else tickle(master);
    return r;
  }
  const int r = policy_->yield(id, to, now_);
  core_task_changed(v.pcpu);
  if (resched_after > 0) queue_.push(now_ + resched_after, sim::Phase::kSchedule, kReschedLater, v.pcpu, 0);
  else tickle(v.pcpu);
  return r;
}

}  // namespace vcpusim::hv
