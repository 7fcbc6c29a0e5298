// SPDX-License-Identifier: MIT
#include "guest/guest_os.h"

#include <algorithm>
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
  for (const LockSpec& l : workload_->locks()) {
    locks_.push_back(LockState{l, {}, Mutex(l.params.barging || l.params.kind == LockKind::kAdaptive), {}, false, {}});
    locks_.back().spinners.reserve(n);
  }
  kick_for_.assign(vcpus_.size(), kNone);
  kick_waker_.assign(vcpus_.size(), hv::Waker{});
  kicked_at_.assign(vcpus_.size(), -1);
  kicked_lock_.assign(vcpus_.size(), 0);
  channels_.resize(workload_->channels());
  thread_results_.assign(n, 0.0);
  ipis_.init(static_cast<std::uint32_t>(vcpus_.size()), n);
  ipi_finished_.reserve(n);
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
  threads_[t].woken_idle = false;
  return t;
}

std::uint32_t GuestOs::newidle_pull() {
  std::uint32_t busiest = kNone, most = 0;
  for (std::uint32_t o = 0; o < vcpus_.size(); ++o)
    if (vcpus_[o].queued > most) {
      most = vcpus_[o].queued;
      busiest = o;
    }
  if (busiest == kNone) return kNone;
  VcpuState& b = vcpus_[busiest];
  for (std::uint32_t prev = kNone, t = b.head; t != kNone; prev = t, t = threads_[t].next) {
    if (threads_[t].woken_idle) continue;
    (prev == kNone ? b.head : threads_[prev].next) = threads_[t].next;
    if (b.tail == t) b.tail = prev;
    --b.queued;
    threads_[t].next = kNone;
    return t;
  }
  return kNone;
}

void GuestOs::start() {
  for (std::uint32_t t = 0; t < threads_.size(); ++t) {
    // Its home vCPU even if its first step sleeps (a receive, a block): where it wakes first,
    // and on bare metal the entity that is this thread.
    threads_[t].vcpu = t % static_cast<std::uint32_t>(vcpus_.size());
    if (params_.start_jitter > 0) {
      // A start delay, as a sleep before the first step (on_timer then fetches that step).
      Thread& th = threads_[t];
      th.blocked = true;
      const auto delay = static_cast<sim::Duration>(th.rng.uniform() * static_cast<double>(params_.start_jitter));
      port_.arm_guest_timer(domain_, port_.now() + delay, t);
      continue;
    }
    advance_thread(t);
    if (!threads_[t].blocked) enqueue(t % vcpus_.size(), t);
  }
  for (const VcpuState& s : vcpus_)
    if (s.queued > 0) port_.kick(s.id);
}

void GuestOs::advance_thread(std::uint32_t t) {
  Thread& th = threads_[t];
  th.step = workload_->next(t, th.rng);
  while (th.step.kind == Step::Kind::kReceive) {
    if (!try_receive(t)) {
      th.blocked = true;  // asleep in its channel until a send hands it a message
      return;
    }
    th.step = workload_->next(t, th.rng);
  }
  if (th.step.kind == Step::Kind::kCompute) {
    th.remaining = th.step.work_ns;
    th.blocked = false;
    th.phase = LockPhase::kNone;
    if (th.step.lock >= 0) {
      if (static_cast<std::size_t>(th.step.lock) >= locks_.size())
        throw std::logic_error(std::string(workload_->kind()) + ": a step names lock " +
                               std::to_string(th.step.lock) + " of " + std::to_string(locks_.size()));
      th.phase = LockPhase::kPre;
    }
  } else {
    th.blocked = true;
    port_.arm_guest_timer(domain_, port_.now() + th.step.block, t);
  }
}

void GuestOs::issue_segment(std::uint32_t vc, std::uint32_t t) {
  Thread& th = threads_[t];
  set_curr(vc, t);
  th.vcpu = vc;
  switch (th.phase) {
    case LockPhase::kSpin: start_spin(vc, t, true); return;
    case LockPhase::kHalted:
      // Woken before its ticket was served (KVM safe_halt with IRQs on: any interrupt): spin
      // again.
      th.halted = false;
      if (measuring()) ++locks_[th.step.lock].stats.spurious_wakeups;
      th.phase = LockPhase::kSpin;
      start_spin(vc, t, true);
      return;
    case LockPhase::kSpinWait:  // its spin was cut off the vCPU: the lock first, else spin again
      if (locks_[th.step.lock].mutex.owner() == Mutex::kNone) {
        spinner_takes(t);
        return;
      }
      port_.set_work(vcpus_[vc].id, locks_[th.step.lock].spec.params.spin_wait_ns(), hv::Profile::kSpin, 0.0, 0.0,
                     locks_[th.step.lock].spec.params.user_space);
      return;
    case LockPhase::kTake:
    case LockPhase::kRetry:
      th.halted = false;
      port_.set_work(vcpus_[vc].id, locks_[th.step.lock].spec.params.handoff_ns, hv::Profile::kMixed, 0.0);
      return;
    case LockPhase::kHold:  // a kernel critical section is never cut at the guest slice
      if (preemptible_hold(th)) break;
      th.segment = th.remaining;
      port_.set_work(vcpus_[vc].id, th.remaining, th.step.profile, th.step.mem_intensity, th.step.bandwidth_mbps,
                     segment_user_mode(th));
      return;
    case LockPhase::kIpi:  // still waiting for acknowledgements: spin on
      port_.set_work(vcpus_[vc].id, 1e15, hv::Profile::kSpin, 0.0);
      return;
    case LockPhase::kIpiDone:  // acknowledged while off-CPU: finish the step when it runs
      port_.set_work(vcpus_[vc].id, 1.0, hv::Profile::kMixed, 0.0);
      return;
    case LockPhase::kPre:
      if (th.remaining <= 0.5) {
        begin_acquire(vc, t);
        return;
      }
      break;
    case LockPhase::kNone:
    case LockPhase::kSleep: break;
  }
  // Cut the step at the guest slice only when another thread waits for this vCPU.
  double seg = th.remaining;
  const double slice_left = static_cast<double>(params_.slice) - th.slice_used;
  if (vcpus_[vc].queued > 0 && slice_left > 0 && seg > slice_left) seg = slice_left;
  th.segment = seg;
  port_.set_work(vcpus_[vc].id, seg, th.step.profile, th.step.mem_intensity, th.step.bandwidth_mbps,
                 segment_user_mode(th));
}

// The guest mode of a thread's compute segment: a critical section's is its lock's, the rest
// the step's (Step::user_mode).
bool GuestOs::segment_user_mode(const Thread& th) const {
  if (th.phase == LockPhase::kHold && th.step.lock >= 0) return locks_[th.step.lock].spec.params.user_space;
  return th.step.user_mode;
}

void GuestOs::run_next(std::uint32_t vc) {
  VcpuState& s = vcpus_[vc];
  std::uint32_t t = dequeue(vc);
  if (t == kNone && !bare_metal_) t = newidle_pull();
  if (t == kNone) {
    set_curr(vc, kNone);
    port_.halt(s.id);
    return;
  }
  threads_[t].slice_used = 0;
  // Switching to a thread, from another or from the idle loop, costs the guest's scheduler its
  // trip (GuestParams::context_switch); on bare metal the thread is the host entity and the host
  // charges its own switch.
  if (!bare_metal_) {
    if (params_.context_switch > 0) s.switch_end = port_.stall(s.id, params_.context_switch);
    if (measuring()) ++thread_switches_;
  }
  issue_segment(vc, t);
}

void GuestOs::on_vcpu_scheduled(hv::VcpuId v, bool has_work) {
  const std::uint32_t vc = local(v);
  if (kicked_at_[vc] >= 0) {  // a kicked PV waiter's vCPU runs again: the hand-off's wait ends
    if (measuring()) {
      LockStats& st = locks_[kicked_lock_[vc]].stats;
      ++st.kicked_runs;
      st.kick_wait_ns += static_cast<double>(port_.now() - kicked_at_[vc]);
      kick_waits_.add(port_.now() - kicked_at_[vc]);
    }
    kicked_at_[vc] = -1;
  }
  if (ipis_.owes(vc)) arm_ipi(vc);
  const std::uint32_t c = vcpus_[vc].curr;
  if (has_work && c != kNone && threads_[c].phase == LockPhase::kSpinWait &&
      locks_[threads_[c].step.lock].mutex.owner() == Mutex::kNone) {
    spinner_takes(c);  // its next test of the lock word finds it free
    return;
  }
  if (has_work) return;
  if (vcpus_[vc].curr != kNone) issue_segment(vc, vcpus_[vc].curr);
  else run_next(vc);
}

void GuestOs::on_work_done(hv::VcpuId v) {
  const std::uint32_t vc = local(v);
  const std::uint32_t t = vcpus_[vc].curr;
  Thread& th = threads_[t];
  if (th.phase == LockPhase::kSpin) {
    spin_expired(vc, t);
    return;
  }
  if (th.phase == LockPhase::kSpinWait) {
    spin_wait_expired(vc, t);
    return;
  }
  if (th.phase == LockPhase::kTake) {
    lock_acquired(vc, t, true);
    return;
  }
  if (th.phase == LockPhase::kRetry) {
    retry_mutex(vc, t);
    return;
  }
  if (th.phase == LockPhase::kIpi) {  // the unbounded spin ran out (after 11 days): spin on
    port_.set_work(v, 1e15, hv::Profile::kSpin, 0.0);
    return;
  }
  if (th.phase == LockPhase::kIpiDone) {
    complete_step(vc, t);
    return;
  }
  th.remaining -= th.segment;
  th.slice_used += th.segment;
  if (th.remaining > 0.5) {
    continue_thread(vc, t);
    return;
  }
  if (th.phase == LockPhase::kPre) {
    begin_acquire(vc, t);
    return;
  }
  if (th.phase == LockPhase::kHold) {
    release_lock(t);
    if (ipis_.owes(vc)) arm_ipi(vc);  // spin_unlock_irqrestore(): the pending IPIs are taken now
  }
  complete_step(vc, t);
}

void GuestOs::complete_step(std::uint32_t vc, std::uint32_t t) {
  Thread& th = threads_[t];
  if (th.step.shootdown_ns > 0 && th.phase != LockPhase::kIpiDone && !bare_metal_ && vcpus_.size() > 1) {
    begin_ipi(vc, t);
    return;
  }
  ++steps_;
  credit(t, th.step.result);
  if (th.step.send_to >= 0) send_message(t);
  advance_thread(t);
  if (th.blocked) {
    set_curr(vc, kNone);
    run_next(vc);
    return;
  }
  continue_thread(vc, t);
}

void GuestOs::continue_thread(std::uint32_t vc, std::uint32_t t) {
  Thread& th = threads_[t];
  // Rotate when the slice is used up and someone waits (Linux check_preempt_tick, coarsely);
  // never inside a kernel critical section (spinlocks disable preemption), but a user-space
  // lock's holder goes like any thread and keeps the lock.
  const bool preemptible = th.phase == LockPhase::kNone || th.phase == LockPhase::kPre || preemptible_hold(th);
  if (preemptible && vcpus_[vc].queued > 0 && th.slice_used >= static_cast<double>(params_.slice)) {
    enqueue(vc, t);
    set_curr(vc, kNone);
    run_next(vc);
    return;
  }
  issue_segment(vc, t);
}

// ---------------------------------------------------------------------------------------------
// Locks (see guest_os.h, "Locks").

bool GuestOs::preemptible_hold(const Thread& th) const {
  if (th.phase != LockPhase::kHold || th.step.lock < 0) return false;
  const LockState& l = locks_[static_cast<std::size_t>(th.step.lock)];
  return !spin_kind(l) && l.spec.params.user_space;
}

void GuestOs::begin_acquire(std::uint32_t vc, std::uint32_t t) {
  Thread& th = threads_[t];
  LockState& l = locks_[th.step.lock];
  th.wait_since = port_.now();
  if (lock_observer_) lock_observer_->requested(static_cast<std::uint32_t>(th.step.lock), t, port_.now());
  const bool got = spin_kind(l) ? l.ticket.arrive(t) : adaptive(l) ? l.mutex.try_lock(t) : l.mutex.lock(t);
  if (got) {
    lock_acquired(vc, t, false);
    return;
  }
  if (adaptive(l)) {
    start_spin_wait(vc, t);
    return;
  }
  if (!spin_kind(l)) {
    th.phase = LockPhase::kSleep;
    th.blocked = true;
    set_curr(vc, kNone);
    run_next(vc);
    return;
  }
  th.phase = LockPhase::kSpin;
  // LHP seen on arrival: the holder's vCPU is already off its pCPU (counted once per preemption).
  const std::uint32_t o = l.ticket.owner();
  if (o != kNone && !l.lhp_counted && threads_[o].phase == LockPhase::kHold &&
      !port_.is_running(vcpus_[threads_[o].vcpu].id)) {
    l.lhp_counted = true;
    if (measuring()) ++l.stats.lhp;
    port_.mark("lhp", vcpus_[threads_[o].vcpu].id);
  }
  start_spin(vc, t, true);
}

void GuestOs::lock_acquired(std::uint32_t vc, std::uint32_t t, bool contended) {
  Thread& th = threads_[t];
  LockState& l = locks_[th.step.lock];
  if (measuring()) {
    ++l.stats.acquisitions;
    if (contended) ++l.stats.contended;
    l.stats.wait_ns += static_cast<double>(port_.now() - th.wait_since);
  }
  th.phase = LockPhase::kHold;
  th.halted = false;
  th.remaining = th.step.hold_ns;
  th.acquired_at = port_.now();
  l.lhp_counted = false;
  if (lock_observer_) lock_observer_->acquired(static_cast<std::uint32_t>(th.step.lock), t, port_.now());
  issue_segment(vc, t);
}

void GuestOs::release_lock(std::uint32_t t) {
  Thread& th = threads_[t];
  LockState& l = locks_[th.step.lock];
  const auto lock_index = static_cast<std::uint32_t>(th.step.lock);
  if (measuring()) l.stats.hold_ns += static_cast<double>(port_.now() - th.acquired_at);
  th.phase = LockPhase::kNone;
  if (lock_observer_) lock_observer_->released(lock_index, t, port_.now());
  if (!spin_kind(l)) {
    const std::uint32_t w = l.mutex.unlock();
    if (adaptive(l)) {
      // Test-and-set: the first spinner on a pCPU sees the lock free and takes it.
      for (const std::uint32_t s : l.spinners)
        if (port_.is_running(vcpus_[threads_[s].vcpu].id)) {
          spinner_takes(s);
          break;
        }
    }
    if (w == kNone) return;
    threads_[w].phase = l.mutex.barging() ? LockPhase::kRetry : LockPhase::kTake;
    threads_[w].blocked = false;
    place_woken(w, threads_[t].vcpu, false);  // a futex wake: not WF_SYNC
    return;
  }
  const std::uint32_t w = l.ticket.release();
  if (w == kNone) return;
  Thread& wt = threads_[w];
  const std::uint32_t wvc = wt.vcpu;
  const hv::VcpuId id = vcpus_[wvc].id;
  const bool running = port_.is_running(id), blocked = port_.is_blocked(id);
  // Lock-waiter preemption: the lock now belongs to a waiter whose vCPU waits for a pCPU.
  if (!running && !blocked) {
    if (measuring()) ++l.stats.lwp;
    port_.mark("lwp", id);
  }
  const LockPhase was = wt.phase;
  if (was == LockPhase::kSpin) end_spin(w);
  wt.phase = LockPhase::kTake;
  if (was == LockPhase::kHalted) {
    if (blocked) {
      // unlock_kick: the slow-path flag is set, kick the vCPU holding the new head.
      if (!l.spec.params.drop_kicks_for_test) {
        if (measuring()) ++l.stats.kicks;
        port_.mark("pv-kick", id);
        kick_for_[wvc] = w;
        kick_waker_[wvc] = port_.waker(vcpus_[threads_[t].vcpu].id);  // KVM_HC_KICK_CPU runs on the unlocker
        kicked_at_[wvc] = port_.now();
        kicked_lock_[wvc] = lock_index;
        port_.arm_guest_timer(domain_, port_.now() + l.spec.params.kick_latency, kKickToken | wvc);
      }
      if (kick_for_[wvc] != w)
        throw std::logic_error("lost kick: lock " + l.spec.name + " (" + lock_kind_name(l.spec.params.kind) +
                               ") handed to thread " + std::to_string(w) + " halted on vCPU " +
                               std::to_string(wvc) + " at t=" + std::to_string(port_.now()) +
                               "ns, and no kick is on its way");
    }
    // Otherwise it was woken already (spuriously) and takes the lock when it next runs.
    return;
  }
  if (running) port_.set_work(id, l.spec.params.handoff_ns, hv::Profile::kMixed, 0.0);
  else port_.set_preempted_work(id, l.spec.params.handoff_ns, hv::Profile::kMixed, 0.0);
}

void GuestOs::retry_mutex(std::uint32_t vc, std::uint32_t t) {
  Thread& th = threads_[t];
  LockState& l = locks_[th.step.lock];
  // The futex-woken waiter retries (glibc lll_lock's loop): a barger may have taken the lock
  // meanwhile, then it sleeps again, queued at the tail. Its wait runs from its first request.
  // An adaptive waiter goes back to its spin loop instead (InnoDB's wait loop spins again).
  if (adaptive(l)) {
    if (l.mutex.try_lock(t)) {
      lock_acquired(vc, t, true);
      return;
    }
    start_spin_wait(vc, t);
    return;
  }
  if (l.mutex.lock(t)) {
    lock_acquired(vc, t, true);
    return;
  }
  th.phase = LockPhase::kSleep;
  th.blocked = true;
  set_curr(vc, kNone);
  run_next(vc);
}

void GuestOs::start_spin(std::uint32_t vc, std::uint32_t t, bool new_period) {
  Thread& th = threads_[t];
  const LockParams& p = locks_[th.step.lock].spec.params;
  const hv::VcpuId id = vcpus_[vc].id;
  if (new_period) th.spin_run0 = spin_start(vc);
  // One segment for the whole spin: its end is the PV threshold, or (ticket) never: the
  // hand-over replaces it. 1e15 ns (11.6 days) stands for "until handed the lock".
  const double len = p.kind == LockKind::kPvTicket ? p.spin_threshold_ns() : 1e15;
  port_.set_work(id, len, hv::Profile::kSpin, 0.0);
}

sim::Duration GuestOs::spin_start(std::uint32_t vc) const {
  const sim::Duration ahead = vcpus_[vc].switch_end - port_.now();
  return port_.run_time(vcpus_[vc].id) + (ahead > 0 ? ahead : 0);
}

sim::Duration GuestOs::burned_in_window(std::uint32_t vc, sim::Duration run0) const {
  const hv::VcpuId id = vcpus_[vc].id;
  return std::min(port_.run_time(id) - run0, port_.measured_run_time(id));
}

void GuestOs::end_spin(std::uint32_t t) {
  Thread& th = threads_[t];
  if (measuring()) locks_[th.step.lock].stats.spin_ns += static_cast<double>(burned_in_window(th.vcpu, th.spin_run0));
}

void GuestOs::start_spin_wait(std::uint32_t vc, std::uint32_t t) {
  Thread& th = threads_[t];
  LockState& l = locks_[th.step.lock];
  th.phase = LockPhase::kSpinWait;
  l.spinners.push_back(t);
  th.spin_run0 = spin_start(vc);
  port_.set_work(vcpus_[vc].id, l.spec.params.spin_wait_ns(), hv::Profile::kSpin, 0.0, 0.0, l.spec.params.user_space);
}

void GuestOs::spinner_takes(std::uint32_t t) {
  Thread& th = threads_[t];
  LockState& l = locks_[th.step.lock];
  if (!l.mutex.try_lock(t)) throw std::logic_error("adaptive lock " + l.spec.name + ": a spinner took a held lock");
  l.spinners.erase(std::find(l.spinners.begin(), l.spinners.end(), t));
  end_spin(t);
  th.phase = LockPhase::kTake;
  port_.set_work(vcpus_[th.vcpu].id, l.spec.params.handoff_ns, hv::Profile::kMixed, 0.0);
}

void GuestOs::spin_wait_expired(std::uint32_t vc, std::uint32_t t) {
  Thread& th = threads_[t];
  LockState& l = locks_[th.step.lock];
  l.spinners.erase(std::find(l.spinners.begin(), l.spinners.end(), t));
  end_spin(t);
  if (l.mutex.try_lock(t)) {  // the last test of the lock word
    lock_acquired(vc, t, true);
    return;
  }
  l.mutex.wait(t);  // then os_event_wait / futex: sleep until an unlock wakes it
  th.phase = LockPhase::kSleep;
  th.blocked = true;
  set_curr(vc, kNone);
  run_next(vc);
}

void GuestOs::spin_expired(std::uint32_t vc, std::uint32_t t) {
  Thread& th = threads_[t];
  LockState& l = locks_[th.step.lock];
  if (l.spec.params.kind != LockKind::kPvTicket) {
    start_spin(vc, t, false);  // the unbounded spin ran out (after 11 days): keep spinning
    return;
  }
  // SPIN_THRESHOLD loops without the ticket: lock_spinning() sets the slow-path flag and halts.
  end_spin(t);
  l.ticket.slowpath = true;
  th.phase = LockPhase::kHalted;
  th.halted = true;
  if (measuring()) ++l.stats.halts;
  port_.mark("pv-halt", vcpus_[vc].id);
  port_.halt(vcpus_[vc].id);
  if (params_.hz > 0 && !polling(vc)) {  // safe_halt: the vCPU's next tick ends the halt
    const sim::Duration jiffy = sim::seconds(1) / params_.hz;
    port_.arm_guest_timer(domain_, (port_.now() / jiffy + 1) * jiffy, kTickToken | vc);
  }
}

void GuestOs::deliver_kick(std::uint32_t vc) {
  const std::uint32_t w = kick_for_[vc];
  kick_for_[vc] = kNone;
  if (w == kNone) return;
  const hv::VcpuId id = vcpus_[vc].id;
  if (vcpus_[vc].curr != w || !threads_[w].halted || !port_.is_blocked(id)) return;
  // KVM: the KVM_HC_KICK_CPU hypercall (which a 5.3+ host follows with a yield to the kicked
  // vCPU); Xen: an event channel send, a plain wake-up.
  if (locks_[kicked_lock_[vc]].spec.params.flavour == PvFlavour::kKvm) port_.kick_cpu(id, kick_waker_[vc]);
  else port_.kick_from(id, kick_waker_[vc], false);
}

bool GuestOs::polling(std::uint32_t vc) const {
  const std::uint32_t t = vcpus_[vc].curr;
  if (t == kNone || !threads_[t].halted) return false;
  const LockParams& p = locks_[threads_[t].step.lock].spec.params;
  return p.flavour == PvFlavour::kXen || p.irqs_off;
}

void GuestOs::on_vcpu_preempted(hv::VcpuId v) {
  const std::uint32_t t = vcpus_[local(v)].curr;
  if (t == kNone || threads_[t].phase != LockPhase::kHold) return;
  LockState& l = locks_[threads_[t].step.lock];
  if (!spin_kind(l) && !adaptive(l)) return;
  l.lhp_counted = adaptive(l) ? !l.spinners.empty() : l.ticket.has_waiters();
  if (l.lhp_counted && measuring()) ++l.stats.lhp;
  if (l.lhp_counted) port_.mark("lhp", v);
}

void GuestOs::check_lost_kicks() const {
  for (std::uint32_t t = 0; t < threads_.size(); ++t) {
    const Thread& th = threads_[t];
    if (th.phase != LockPhase::kTake || !th.halted) continue;
    const std::uint32_t vc = th.vcpu;
    if (port_.is_blocked(vcpus_[vc].id) && kick_for_[vc] != t)
      throw std::logic_error("lost kick: thread " + std::to_string(t) + " holds the served ticket of lock " +
                             locks_[th.step.lock].spec.name + " but its vCPU " + std::to_string(vc) +
                             " is halted with no kick on its way (t=" + std::to_string(port_.now()) + "ns)");
  }
}

void GuestOs::place_woken(std::uint32_t t, std::uint32_t waker_vc, bool sync) {
  const bool by_vcpu = waker_vc != kNone;
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
  VcpuState& ts = vcpus_[target];
  const hv::VcpuId id = vcpus_[target].id;
  if (!port_.is_blocked(id) || polling(target)) return;
  threads_[t].woken_idle = !bare_metal_;
  if (by_vcpu && !bare_metal_ && params_.wake_ipi > 0) {
    if (!ts.wake_ipi_pending) {
      ts.wake_ipi_pending = true;
      // KVM wakes the target's thread from the sender's ICR-write exit: the sender, on the pCPU
      // it runs on now, is the host waker (kvm_vcpu_kick: not WF_SYNC).
      ts.ipi_waker = port_.waker(vcpus_[waker_vc].id);
      port_.arm_guest_timer(domain_, port_.now() + params_.wake_ipi, kWakeToken | target);
    }
    return;
  }
  // Bare metal: the running task's send or futex wake is the host wake-up itself; in a VM with
  // no IPI cost the kick still comes from the sender's vCPU. A timer has no waker.
  port_.kick_from(id, by_vcpu ? port_.waker(vcpus_[waker_vc].id) : hv::Waker{}, sync && bare_metal_);
}

void GuestOs::deliver_wake_ipi(std::uint32_t vc) {
  VcpuState& s = vcpus_[vc];
  s.wake_ipi_pending = false;
  // The IPI wakes the vCPU if it is still halted (something else, a timer, may have woken it
  // meanwhile) and has work: the woken thread stays queued there (woken_idle), so it has.
  if (port_.is_blocked(s.id) && !polling(vc) && (s.queued > 0 || s.curr != kNone)) port_.kick_from(s.id, s.ipi_waker, false);
}

void GuestOs::on_timer(std::uint64_t token) {
  if (token & kKickToken) {
    deliver_kick(static_cast<std::uint32_t>(token & ~kKickToken));
    return;
  }
  if (token & kIpiToken) {
    ipi_acknowledged(static_cast<std::uint32_t>(token & ~kIpiToken));
    return;
  }
  if (token & kTickToken) {
    const auto vc = static_cast<std::uint32_t>(token & ~kTickToken);
    const std::uint32_t t = vcpus_[vc].curr;
    if (t != kNone && threads_[t].halted && !polling(vc) && port_.is_blocked(vcpus_[vc].id))
      port_.kick_from(vcpus_[vc].id, hv::Waker{}, false);  // a timer interrupt: no waker
    return;
  }
  if (token & kWakeToken) {
    deliver_wake_ipi(static_cast<std::uint32_t>(token & ~kWakeToken));
    return;
  }
  const auto t = static_cast<std::uint32_t>(token);
  advance_thread(t);
  if (!threads_[t].blocked) place_woken(t, kNone, false);
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

// ---------------------------------------------------------------------------------------------
// Channels (see guest_os.h, "Channels").

void GuestOs::credit(std::uint32_t t, double r) {
  if (!measuring()) return;
  results_ += r;
  thread_results_[t] += r;
}

bool GuestOs::try_receive(std::uint32_t t) {
  Thread& th = threads_[t];
  if (th.step.channel < 0 || static_cast<std::size_t>(th.step.channel) >= channels_.size())
    throw std::logic_error(std::string(workload_->kind()) + ": a receive names channel " +
                           std::to_string(th.step.channel) + " of " + std::to_string(channels_.size()));
  Message m;
  if (!channels_[th.step.channel].receive(t, m)) return false;
  credit(t, th.step.result);
  workload_->on_message(t, m, port_.now(), measuring());
  return true;
}

void GuestOs::send_message(std::uint32_t t) {
  const Step& s = threads_[t].step;
  if (static_cast<std::size_t>(s.send_to) >= channels_.size())
    throw std::logic_error(std::string(workload_->kind()) + ": a send names channel " + std::to_string(s.send_to) +
                           " of " + std::to_string(channels_.size()));
  const Message m{s.payload, port_.now()};
  const std::uint32_t w = channels_[s.send_to].send(m);
  if (w == Channel::kNone) return;
  // The first waiter owns the message: its receive completes now, and it wakes.
  Thread& wt = threads_[w];
  credit(w, wt.step.result);
  workload_->on_message(w, m, port_.now(), measuring());
  advance_thread(w);
  // A socket send wakes the receiver synchronously (sock_def_readable ->
  // wake_up_interruptible_sync_poll: WF_SYNC).
  if (!wt.blocked) place_woken(w, threads_[t].vcpu, true);
}

// ---------------------------------------------------------------------------------------------
// IPIs (see guest_os.h, "IPIs").

void GuestOs::begin_ipi(std::uint32_t vc, std::uint32_t t) {
  Thread& th = threads_[t];
  th.phase = LockPhase::kIpi;
  th.wait_since = port_.now();
  const auto latency = static_cast<sim::Duration>(th.step.shootdown_ns);
  bool stalled = false;
  std::uint64_t deferred = 0;
  for (std::uint32_t o = 0; o < vcpus_.size(); ++o) {
    if (o == vc) continue;
    const hv::VcpuId id = vcpus_[o].id;
    // kvm_flush_tlb_others: a target whose steal time reads KVM_VCPU_PREEMPTED gets
    // KVM_VCPU_FLUSH_TLB instead of the IPI (cleared from the flush mask).
    if (params_.pv_tlb_flush && port_.steal_time_preempted(id)) {
      ++deferred;
      continue;
    }
    ipis_.send(t, o, latency);
    if (port_.is_running(id)) {
      arm_ipi(o);
      continue;
    }
    stalled = true;  // preempted or halted: the call waits for the host to run it
    // The sender's IPI exit wakes the halted target (kvm_vcpu_kick from the sender's thread).
    if (port_.is_blocked(id) && !polling(o)) port_.kick_from(id, port_.waker(vcpus_[vc].id), false);
  }
  if (measuring()) {
    ++ipi_stats_.sent;
    if (stalled) ++ipi_stats_.stalls;
    ipi_stats_.deferred += deferred;
  }
  if (stalled) port_.mark("ipi-stall", vcpus_[vc].id);
  if (deferred > 0) port_.mark("ipi-defer", vcpus_[vc].id);
  th.spin_run0 = spin_start(vc);
  if (ipis_.outstanding(t) == 0) {  // every target deferred: native_flush_tlb_others(empty mask)
    ipi_finished(t);
    return;
  }
  port_.set_work(vcpus_[vc].id, 1e15, hv::Profile::kSpin, 0.0);
}

bool GuestOs::irqs_masked(std::uint32_t vc) const {
  const std::uint32_t t = vcpus_[vc].curr;
  if (t == kNone || threads_[t].step.lock < 0) return false;
  const Thread& th = threads_[t];
  if (th.phase != LockPhase::kSpin && th.phase != LockPhase::kHalted && th.phase != LockPhase::kTake &&
      th.phase != LockPhase::kHold)
    return false;
  const LockState& l = locks_[static_cast<std::size_t>(th.step.lock)];
  return spin_kind(l) && l.spec.params.irqs_off;
}

void GuestOs::arm_ipi(std::uint32_t vc) {
  if (irqs_masked(vc)) return;  // pending in the IRR until the irqrestore (on_work_done)
  const sim::Time due = ipis_.arm(vc, port_.now());
  if (due != sim::kNever) port_.arm_guest_timer(domain_, due, kIpiToken | vc);
}

void GuestOs::ipi_acknowledged(std::uint32_t vc) {
  ipi_finished_.clear();
  ipis_.acknowledge(vc, port_.now(), ipi_finished_);
  for (const std::uint32_t t : ipi_finished_) ipi_finished(t);
}

void GuestOs::ipi_finished(std::uint32_t t) {
  Thread& th = threads_[t];
  const std::uint32_t vc = th.vcpu;
  const hv::VcpuId id = vcpus_[vc].id;
  if (measuring()) {
    ipi_stats_.spin_ns += static_cast<double>(burned_in_window(vc, th.spin_run0));
    ipi_stats_.wait_ns += static_cast<double>(port_.now() - th.wait_since);
  }
  th.phase = LockPhase::kIpiDone;
  if (port_.is_running(id)) complete_step(vc, t);
  else port_.set_preempted_work(id, 1.0, hv::Profile::kMixed, 0.0);
}

GuestResults GuestOs::results() const {
  GuestResults r;
  r.ipis = ipi_stats_;
  r.kick_wait_p99_ns = kick_waits_.quantile_ns(0.99);
  r.results = workload_->aggregate(thread_results_).value_or(results_);
  r.steps = steps_;
  r.thread_switches = thread_switches_;
  const double secs = sim::to_seconds(port_.now() - port_.measure_from());
  r.throughput = secs > 0 ? r.results / secs : 0.0;
  for (const LockState& l : locks_) {
    r.per_lock.push_back(l.stats);
    r.locks += l.stats;
  }
  return r;
}

}  // namespace vcpusim::guest
