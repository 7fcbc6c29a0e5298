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
//  - every switch to a thread (from another, or from the idle loop after a halt) costs
//    GuestParams::context_switch of run time with no progress (GuestPort::stall); a vCPU that
//    resumes the thread it was running (host preemption, a PV waiter's halt) pays none;
//  - a waking thread goes to its previous vCPU if that is idle, else to any idle vCPU, else
//    queues on its previous vCPU (select_idle_sibling, coarsely);
//  - a vCPU about to go idle first takes a waiting thread from the vCPU with the longest queue
//    (newidle balance), but never one woken onto a halted vCPU that has not run it yet. In Linux, task_hot (ran within sysctl_sched_migration_cost, 500 us, fair.c)
//    keeps newidle balancing from pulling a just-woken thread, and in later kernels a wakee
//    bound for an idle CPU is queued on that CPU's wake list (ttwu_queue_wakelist), off any
//    runqueue, until that CPU takes the IPI. So
//    the ping-pong of request/reply workloads goes through real halts and wake-ups. MODEL: no
//    avg_idle or task_hot test otherwise, standing in for the periodic and nohz balancing the
//    guest model does not have;
//  - bare metal: thread i is the host entity i, one-to-one, no guest scheduling at all.
//
// Locks (spinlock.h, mutex.h). A compute Step with `lock` >= 0 is "work_ns, then acquire lock
// `lock`, hold it for hold_ns, release"; its result is credited after the release. A thread goes
// through phases: kPre (the work before the lock, an ordinary compute segment) -> acquire ->
// [waiting] -> kHold (the critical section: compute segments that progress only while its vCPU
// runs) -> release -> the step completes. Waiting by lock kind:
//  - ticket / pvticket, kSpin: the thread stays its vCPU's current thread (spinlocks disable
//    preemption: no guest rotation while waiting or holding) and the vCPU runs ONE kSpin segment
//    (ticket: unbounded; pvticket: spin_threshold x spin_loop_ns). Spin CPU time is measured as
//    the vCPU's run time across the spin (GuestPort::run_time), never per loop.
//  - pvticket, kHalted: the threshold segment completed: slow-path flag set, vCPU halted. The
//    unlocker kicks it (guest timer at now + kick_latency, then GuestPort::kick). KVM with
//    IRQs on (safe_halt): a wake by anything else (an IPI, its vCPU's next tick at
//    GuestParams::hz) is spurious, it spins another threshold; Xen
//    (poll) and KVM with IRQs off (halt(), LockParams::irqs_off): only the kick wakes it
//    (GuestOs does not kick such a vCPU to place a woken thread or deliver an IPI).
//  - mutex, kSleep: the thread blocks (the vCPU runs another thread or halts); the unlocker
//    hands over and wakes it like any waking thread.
//  - adaptive, kSpinWait then kSleep: a barging mutex whose waiter first spins (its vCPU burns
//    CPU, preemption stays on: user-space spinning) for spin_wait_ns, then sleeps as a barging
//    mutex waiter does (InnoDB's TTASEventMutex, glibc's PTHREAD_MUTEX_ADAPTIVE_NP). Acquisition
//    is test-and-set: at a release the first spinner whose vCPU is running takes the lock (a
//    kTake segment: the cacheline moving); a spinner whose vCPU is preempted cannot, and takes a
//    free lock when its vCPU runs again. The unlocker still futex-wakes one sleeper to retry.
//    MODEL: InnoDB's os_event_set wakes every sleeper; one is woken here, as glibc does. A barging mutex (glibc pthread, mutex.h)
//    does not hand over: the woken waiter enters kRetry (a handoff_ns segment when it runs, the
//    lock word's cacheline), then takes the lock if it is still free or sleeps again.
// Hand-over (release with waiters): the next waiter in FIFO order owns the lock at once and
// enters kTake, a handoff_ns segment (the lock cacheline moving), replacing its spin segment on
// a running vCPU (the spin's re-timing), on a preempted one through set_preempted_work (it
// runs when the host next runs that vCPU: the lock sits unusable meanwhile, lock-waiter
// preemption), or issued when a halted/sleeping waiter is next scheduled. The acquisition
// counts when kTake completes. LHP: a holder's vCPU preempted while its lock has waiters
// (on_vcpu_preempted), or a waiter arriving while the holder's vCPU is off-CPU (once per
// preemption). LWP: the new owner's vCPU is preempted (Runnable) at the release.
// IPIs (ipi.h). A step with shootdown_ns > 0 ends, after its critical section, with a call to
// every other vCPU of the VM: the thread enters kIpi and spins (one kSpin segment, preemption
// off as in smp_call_function_many) until the last target acknowledges (a guest timer at the
// target's due time); then kIpiDone, and the step completes (at once if its vCPU runs, else
// through a 1 ns set_preempted_work segment when the host next runs it). Targets: a running
// one is due at once + latency; a preempted or halted one when it is next put on a pCPU
// (on_vcpu_scheduled, with or without kept work); a halted one is kicked, unless it waits for
// a kick only (polling()). A target whose thread is inside a spin lock taken with interrupts
// off (LockParams::irqs_off: spinning, halted, taking or holding it) takes the IPI only at the
// unlock's irqrestore: x86's arch_spin_lock_flags() ignores the flags, so IF stays 0 from the
// spin_lock_irqsave to the spin_unlock_irqrestore (irqs_masked()).
// A holder of a user-space mutex or adaptive lock (LockParams::user_space: pthread mutexes,
// InnoDB latches) is rotated out at its slice like any thread, still holding the lock; a kernel
// lock's holder never is. MODEL: the unlocker pays no cost for
// a kick (the exit is folded into kick_latency, which delays the waiter instead); statistics of
// a wait or spin are counted when it ends, if that is inside the measured interval.
//
// Channels (channel.h). A kReceive step takes a queued message at once, or sleeps its thread
// until one is sent: the sender's compute step with `send_to` completes, the message goes to
// the first waiter, which is woken and placed like any waking thread (a halted vCPU is kicked).
// The receive's `result` is credited on arrival. A wake-up by a running vCPU (a send, a mutex
// hand-over) onto a halted vCPU reaches it after GuestParams::wake_ipi, the reschedule IPI's
// cost; MODEL: the sender is not charged for it (its compute step already ended).
//
// Wakers. Every host wake-up a running vCPU (or bare-metal task) causes names it, through
// GuestPort::waker() taken when it sends and GuestPort::kick_from() when the wake-up lands: a PV
// unlock kick (the unlocker), a shootdown IPI to a halted target (the sender), a reschedule IPI
// for a woken thread (the waking vCPU) and, on bare metal, a channel send (WF_SYNC: a socket's
// sock_def_readable) or a mutex hand-off (a futex wake, not sync). The host policy may then place
// the wakee near its waker (cfs: wake_affine). Timers wake with no waker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "guest/guest_trace.h"
#include "guest/ipi.h"
#include "guest/latency_histogram.h"
#include "guest/mutex.h"
#include "guest/spinlock.h"
#include "guest/workload.h"
#include "hypervisor/workload_api.h"
#include "sim/rng.h"

namespace vcpusim::guest {

struct GuestParams {
  sim::Duration slice = sim::ms(3);  ///< Linux min_granularity 0.75 ms x (1 + log2(8)) = 3 ms
  /// Each thread starts after a delay drawn uniformly from [0, start_jitter) (its own random
  /// stream): processes "started at the same time" by a script start a fork and exec apart, and
  /// which one runs first can decide an unfair scheduler's outcome. 0: all start at once.
  sim::Duration start_jitter = 0;
  /// A thread woken by another running vCPU onto a halted vCPU waits for the reschedule IPI:
  /// the waker's x2APIC ICR write exits and KVM kicks the target's thread. "~7k cycles (~2.8 us
  /// at 2.5 GHz) per send" through the emulated ICR (KVM-list posting, Sept 2020; the 5.6
  /// single-target fast path saves only 200+ cycles): ../shared/reference/spinlocks-and-workloads.md
  /// section 1.3, "Per-event costs". MODEL: folded into the wake-up's latency, as kick_latency is
  /// for PV kicks; the waker is not charged. Timer and device wake-ups need no IPI. 0: none.
  sim::Duration wake_ipi = 2800;
  /// The guest kernel's CONFIG_HZ. A PV lock waiter halted with interrupts on (KVM's safe_halt)
  /// is woken by its vCPU's next scheduler tick: NO_HZ stops the tick only in the idle loop
  /// (tick_nohz_idle_enter), and this halt is in the lock's slow path, not there. The tick is
  /// the local APIC timer, so the host wakes the vCPU for it like any interrupt; ticks are on
  /// one grid for every vCPU (no skew_tick). Default 250, upstream's Kconfig default (HZ_250;
  /// Debian, Ubuntu and SUSE build it); RHEL and Fedora build 1000 (CentOS 6's 2.6.32 config,
  /// Fedora's config-generic, RHEL 7's 3.10.0 config), which a scenario sets for such guests, as
  /// the cfs host's `hz` is set for such hosts. 0: no tick. MODEL: only these waiters see the
  /// tick; every other guest timing is event-driven.
  std::uint32_t hz = 250;
  /// A vCPU switching to one of the guest's threads, from another (the first blocked, or its
  /// slice ran out with another waiting) or from the idle loop (a halted vCPU woken for it),
  /// spends this long in the guest kernel's __schedule()/context_switch() before the thread's
  /// work progresses (GuestPort::stall). It is the guest's half of a wake-up: the host's half
  /// is the vCPU's switch-in (ExecParams::context_switch, which halt polling saves) and the
  /// reschedule IPI (wake_ipi). A vCPU resuming the thread it was running (after a host
  /// preemption, or a PV lock waiter's halt inside its thread) pays none. 2 us, ONE source with
  /// the host's: "a trip through the scheduler, normally on the order of a few micro-seconds"
  /// (KVM halt-polling documentation [S], ../shared/reference/spinlocks-and-workloads.md
  /// section 1.3), its low end, which a bare-metal task (a host entity) pays for the same
  /// switch, from another task or from idle. 0: free, as the model had it until 2026-12-01.
  /// MODEL: one cost for every switch; Linux's switch from idle or between threads of one
  /// process skips the address-space switch and costs somewhat less.
  sim::Duration context_switch = sim::us(2);
  /// KVM PV TLB flush (Linux 4.16+ guests on a host with KVM_FEATURE_PV_TLB_FLUSH): a TLB
  /// shootdown skips every target whose steal-time record says the host preempted it
  /// (GuestPort::steal_time_preempted) and leaves it KVM_VCPU_FLUSH_TLB, which the host honours
  /// at its next entry (kvm_flush_tlb_others, arch/x86/kernel/kvm.c, commit 858a43aae2367, 4.16;
  /// record_steal_time flushes). So the sender waits only for the running and the halted
  /// targets. false: the native flush_tlb_others of the 2013 guests, which waits for all.
  /// MODEL: the deferred flush costs the target nothing (one local flush at its entry).
  bool pv_tlb_flush = false;
};

/// Results of one guest over the measured interval.
struct GuestResults {
  double results = 0;        ///< workload results (events, MiB, loops) completed in the interval
  double throughput = 0;     ///< results per measured second
  std::uint64_t steps = 0;   ///< compute steps completed (all time)
  /// Switches to a thread on its vCPUs (GuestParams::context_switch), measured interval.
  std::uint64_t thread_switches = 0;
  LockStats locks;           ///< all of the guest's locks together, measured interval
  std::vector<LockStats> per_lock;  ///< by Workload::locks() index
  IpiStats ipis;             ///< synchronous cross-vCPU calls, measured interval
  /// The 99th percentile of kicked PV waiters' waits from hand-off to run (LockStats::kick_wait_ns
  /// holds their sum), all locks, measured interval; 0 without kicks. A mean of a few us can hide
  /// a tail of ms-long waits, each of which holds the FIFO lock for nobody.
  double kick_wait_p99_ns = 0;
};

/// Observer of lock hand-overs (tests): every acquisition and release, in simulated order.
class LockObserver {
 public:
  virtual ~LockObserver() = default;
  virtual void requested(std::uint32_t /*lock*/, std::uint32_t /*thread*/, sim::Time /*t*/) {}
  virtual void acquired(std::uint32_t lock, std::uint32_t thread, sim::Time t) = 0;
  virtual void released(std::uint32_t lock, std::uint32_t thread, sim::Time t) = 0;
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
  void set_lock_observer(LockObserver* o) { lock_observer_ = o; }
  /// The framework's lost-kick check: throws std::logic_error if a PV waiter whose ticket is
  /// served sits halted with no kick on its way. Also checked at every hand-over.
  void check_lost_kicks() const;

  // hv::GuestHooks
  void on_vcpu_scheduled(hv::VcpuId v, bool has_work) override;
  void on_vcpu_preempted(hv::VcpuId v) override;
  void on_work_done(hv::VcpuId v) override;
  void on_timer(std::uint64_t token) override;

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  static constexpr std::uint64_t kKickToken = std::uint64_t{1} << 63;  ///< | local vCPU index
  static constexpr std::uint64_t kIpiToken = std::uint64_t{1} << 62;   ///< | local target vCPU
  static constexpr std::uint64_t kWakeToken = std::uint64_t{1} << 61;  ///< | local target vCPU
  static constexpr std::uint64_t kTickToken = std::uint64_t{1} << 60;  ///< | local vCPU
  enum class LockPhase : std::uint8_t { kNone, kPre, kSpin, kHalted, kSleep, kTake, kRetry, kHold, kIpi, kIpiDone, kSpinWait };
  struct LockState {
    LockSpec spec;
    TicketSpinlock ticket;
    Mutex mutex;
    LockStats stats;
    bool lhp_counted = false;  ///< this preemption of the holder was counted
    std::vector<std::uint32_t> spinners;  ///< adaptive: threads in their spin phase (reserved)
  };
  struct Thread {
    Step step;                   ///< the current step
    double remaining = 0;        ///< compute work left in the current step
    double segment = 0;          ///< work handed to the host in the current segment
    double slice_used = 0;       ///< work executed since it last got its vCPU
    std::uint32_t vcpu = 0;      ///< local vCPU index it is on (or last ran on)
    std::uint32_t next = kNone;  ///< intrusive FIFO link in its vCPU's queue
    bool blocked = false;
    bool woken_idle = false;     ///< woken onto a halted vCPU that has not run it yet
    sim::RngStream rng;
    LockPhase phase = LockPhase::kNone;
    bool halted = false;            ///< its vCPU halted in the PV slow path, not run since
    sim::Time wait_since = 0;       ///< when it asked for the lock
    sim::Time acquired_at = 0;
    sim::Duration spin_run0 = 0;    ///< its vCPU's run time when the current spin began
  };
  struct VcpuState {
    hv::VcpuId id = 0;
    std::uint32_t curr = kNone;  ///< thread whose segment the vCPU executes
    std::uint32_t head = kNone, tail = kNone, queued = 0;
    bool wake_ipi_pending = false;  ///< a reschedule IPI to it is on its way (GuestParams::wake_ipi)
    sim::Time switch_end = 0;       ///< when its last switch to a thread ended (with the switch-in's stall)
    hv::Waker ipi_waker;            ///< who sent that IPI, from where (the host's waker)
  };

  std::uint32_t local(hv::VcpuId v) const { return v - base_; }
  void enqueue(std::uint32_t vc, std::uint32_t t);
  std::uint32_t dequeue(std::uint32_t vc);
  /// Newidle balance: the first waiting thread of the longest queue that was not woken onto
  /// its (then halted) vCPU, unlinked, or kNone.
  std::uint32_t newidle_pull();
  /// Give the vCPU (which is running on the host) something to execute, or halt it.
  void run_next(std::uint32_t vc);
  void issue_segment(std::uint32_t vc, std::uint32_t t);
  void advance_thread(std::uint32_t t);  ///< draw the next step; blocks go to sleep
  /// Queue a woken thread (select_idle_sibling, coarsely) and wake its vCPU if halted: at once
  /// for a timer wake-up (waker_vc == kNone), after the reschedule IPI when the running vCPU
  /// waker_vc woke it. The host sees waker_vc as the waker (GuestPort::kick_from); `sync` (a
  /// socket send) reaches the host only on bare metal, where the task's wake-up is the host's.
  void place_woken(std::uint32_t t, std::uint32_t waker_vc, bool sync);
  /// Makes thread t (or kNone) vCPU vc's current thread, telling the trace.
  void set_curr(std::uint32_t vc, std::uint32_t t);
  bool vcpu_idle(std::uint32_t vc) const { return vcpus_[vc].curr == kNone && vcpus_[vc].queued == 0; }
  // Steps and locks.
  void complete_step(std::uint32_t vc, std::uint32_t t);
  void continue_thread(std::uint32_t vc, std::uint32_t t);  ///< rotate or issue the next segment
  void begin_acquire(std::uint32_t vc, std::uint32_t t);
  void lock_acquired(std::uint32_t vc, std::uint32_t t, bool contended);
  void release_lock(std::uint32_t t);
  void retry_mutex(std::uint32_t vc, std::uint32_t t);
  void start_spin(std::uint32_t vc, std::uint32_t t, bool new_period);
  void spin_expired(std::uint32_t vc, std::uint32_t t);
  void end_spin(std::uint32_t t);  ///< folds the spin CPU time into the lock's stats
  void start_spin_wait(std::uint32_t vc, std::uint32_t t);    ///< adaptive: spin before sleeping
  void spin_wait_expired(std::uint32_t vc, std::uint32_t t);  ///< adaptive: spun out, sleep
  bool adaptive(const LockState& l) const { return l.spec.params.kind == LockKind::kAdaptive; }
  /// adaptive: thread t (spinning, its vCPU running) takes the free lock after the hand-off.
  void spinner_takes(std::uint32_t t);
  void deliver_kick(std::uint32_t vc);
  void deliver_wake_ipi(std::uint32_t vc);  ///< GuestParams::wake_ipi has passed: kick vc
  // Channels (see "Channels" above).
  bool try_receive(std::uint32_t t);       ///< a kReceive step: take a queued message, or wait
  void send_message(std::uint32_t t);      ///< its completed step's send_to
  void credit(std::uint32_t t, double r);  ///< a step's result, inside the measured interval
  bool measuring() const { return port_.now() >= port_.measure_from(); }
  /// vc's run time at which a spin starting now begins: after the switch to its thread (and the
  /// vCPU's switch-in before it), when one is still under way: that stall is run time, but not
  /// the thread's spinning.
  sim::Duration spin_start(std::uint32_t vc) const;
  /// CPU time vc burned since its run time was run0, clipped to the measured interval.
  sim::Duration burned_in_window(std::uint32_t vc, sim::Duration run0) const;
  bool spin_kind(const LockState& l) const {
    return l.spec.params.kind == LockKind::kTicket || l.spec.params.kind == LockKind::kPvTicket;
  }
  /// Thread t holds a user-space sleeping lock (LockParams::user_space): the guest may rotate it
  /// out at its slice inside the critical section.
  bool preemptible_hold(const Thread& th) const;
  bool segment_user_mode(const Thread& th) const;  // Step::user_mode, or the held lock's mode
  /// A PV waiter on vc waits for the kick only (Xen poll, or KVM halt() with IRQs off:
  /// LockParams::irqs_off): other wake-ups must not kick vc.
  bool polling(std::uint32_t vc) const;
  /// vc's current thread is inside a spin lock taken with interrupts off (spinning, halted,
  /// taking or holding it): interrupts stay pending until its unlock.
  bool irqs_masked(std::uint32_t vc) const;
  // IPIs (ipi.h, "IPIs" above).
  void begin_ipi(std::uint32_t vc, std::uint32_t t);
  void arm_ipi(std::uint32_t vc);        ///< vc runs with IRQs on: its owed acknowledgements become due
  void ipi_acknowledged(std::uint32_t vc);
  void ipi_finished(std::uint32_t t);    ///< the sender's last target acknowledged

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
  std::uint64_t thread_switches_ = 0;
  std::vector<LockState> locks_;
  std::vector<std::uint32_t> kick_for_;  ///< per vCPU: the thread a pending kick is for, or kNone
  std::vector<hv::Waker> kick_waker_;    ///< per vCPU: the unlocker that armed that kick
  /// per vCPU: when an unlocker handed a lock to its halted waiter and kicked it (-1: none since
  /// it last ran), and which lock, for LockStats::kick_wait_ns
  std::vector<sim::Time> kicked_at_;
  std::vector<std::uint32_t> kicked_lock_;
  LatencyHistogram kick_waits_;          ///< those waits, measured interval (GuestResults::kick_wait_p99_ns)
  LockObserver* lock_observer_ = nullptr;
  std::vector<Channel> channels_;        ///< Workload::channels() of them
  std::vector<double> thread_results_;   ///< per thread, measured interval (Workload::aggregate)
  CallFunctionIpis ipis_;
  IpiStats ipi_stats_;
  std::vector<std::uint32_t> ipi_finished_;  ///< scratch for acknowledge(), reserved
};

}  // namespace vcpusim::guest
