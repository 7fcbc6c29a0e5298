// SPDX-License-Identifier: MIT
// This file defines the guest spinlocks: the ticket spinlock (Linux x86 before 4.2) and the
// paravirtualised ticket spinlock (Linux 3.12-4.1, KVM and Xen flavours), their parameters and
// their statistics. Reference: ../shared/reference/spinlocks-and-workloads.md section 1.1, cited
// as "note 1.1" below.
//
// A lock object here is only the lock word: who holds it, the queue of tickets, the PV slow-path
// flag. What a waiter's vCPU does (spin, halt, get kicked) is GuestOs's business (guest_os.h,
// "Locks"), because only GuestOs drives vCPUs; it keeps the rules below:
//  - ticket: FIFO by ticket. A waiter spins (its vCPU runs ONE Profile::kSpin segment: wall time
//    burned, no progress) until its ticket is served; the release re-times that segment (it
//    replaces it by the hand-over), never an event per loop. The release serves the next ticket
//    even if that waiter's vCPU is preempted (lock-waiter preemption): nobody else may take it.
//  - pvticket: as ticket, but a waiter spins at most SPIN_THRESHOLD loops (note 1.1: 2^15),
//    i.e. spin_threshold * spin_loop_ns, then sets the slow-path flag and halts its vCPU
//    (kvm_lock_spinning / xen_lock_spinning). The unlocker kicks the vCPU holding the next
//    ticket if it halted (unlock_kick: only that one), after `kick_latency`. KVM flavour: the
//    halt is safe_halt(), so any interrupt (another thread woken onto that vCPU) ends it and the
//    waiter spins another threshold; Xen flavour: SCHEDOP_poll on the kicker event channel, only
//    the kick ends it.
#pragma once

#include <cstdint>
#include <string>

#include "guest/fifo_ring.h"
#include "sim/sim_time.h"

namespace vcpusim::guest {

enum class LockKind : std::uint8_t { kTicket = 0, kPvTicket = 1, kMutex = 2, kAdaptive = 3 };
enum class PvFlavour : std::uint8_t { kKvm = 0, kXen = 1 };
const char* lock_kind_name(LockKind k);

struct LockParams {
  LockKind kind = LockKind::kTicket;
  /// Wall time of one spin loop (1 PAUSE + 1 load). Note 1.1 / header: 2^15 loops take about
  /// 0.13-0.2 ms with ~10-cycle PAUSE (before Skylake, e.g. the X7560 of calibration 002), so
  /// 5 ns; about 55 ns on Skylake (140-cycle PAUSE: 1.8 ms per 2^15 loops).
  double spin_loop_ns = 5.0;
  /// SPIN_THRESHOLD, loops before the PV slow path (note 1.1: 1 << 15, x86/riscv/loongarch).
  std::uint32_t spin_threshold = 1u << 15;
  /// From the unlocker's kick to the halted vCPU being woken in the host: the KICK_CPU
  /// hypercall (or event-channel send) exit, note 1.3: "VM exit + entry with a light handler
  /// 0.4-1.5 us" [R]/[E]. The host's own wake-up and scheduling delay comes on top, modelled.
  sim::Duration kick_latency = sim::us(1);
  /// Moving the lock (its cacheline) to the next waiter, paid by the waiter when its vCPU runs:
  /// note 1.4 step 1, "cost 20-50 ns" [E].
  double handoff_ns = 40.0;
  PvFlavour flavour = PvFlavour::kKvm;
  /// mutex only: glibc pthread semantics (mutex.h, "barging") instead of FIFO hand-off.
  bool barging = false;
  /// adaptive only: spin loops before the waiter sleeps. InnoDB's sync wait (note 1.1):
  /// innodb_sync_spin_loops = 30 rounds of ut_delay(ut_rnd_interval(0, innodb_spin_wait_delay = 6)),
  /// each delay unit 50 PAUSEs (ut_delay's `delay * 50`; 8.0.16+ innodb_spin_wait_pause_multiplier,
  /// default 50): 30 x 3 x 50 = 4500 loops on average, so 22.5 us at 5 ns a loop and ~250 us with
  /// Skylake's 140-cycle PAUSE (55 ns a loop).
  std::uint32_t spin_wait_loops = 30 * 3 * 50;
  /// Spin kinds: the lock is taken with interrupts off (spin_lock_irqsave / spin_lock_irq, or
  /// inside a section that disabled them). A KVM PV waiter then halts with `halt()`, not
  /// `safe_halt()` (V10 kvm_lock_spinning: "if (arch_irqs_disabled_flags(flags)) halt(); else
  /// safe_halt();"), so no interrupt ends its wait: an IPI or a reschedule IPI stays pending
  /// (KVM wakes the vCPU thread, finds it not runnable with IF=0 in kvm_arch_vcpu_runnable, and
  /// blocks it again) and only the kick wakes it, as a Xen poller. Set by the workload that
  /// owns the lock.
  bool irqs_off = false;
  /// mutex and adaptive only: the lock lives in user space (a pthread mutex, an InnoDB latch),
  /// so its holder is an ordinary user thread that the guest kernel preempts at the end of its
  /// slice like any other (scheduler_tick -> check_preempt_tick, honoured on the return to user
  /// space), and the lock stays held while the holder waits for its vCPU. A kernel lock is
  /// never cut: spinlocks disable preemption, and a kernel mutex or rwsem holder on the
  /// non-preemptible server kernels modelled here (CONFIG_PREEMPT_NONE / _VOLUNTARY) runs until
  /// it releases or sleeps. Set by the workload that owns the lock.
  bool user_space = false;
  /// Test hook for the lost-kick check: the unlocker "forgets" to kick (never set by app/).
  bool drop_kicks_for_test = false;

  /// The longest a PV waiter spins before it halts: spin_threshold x spin_loop_ns.
  double spin_threshold_ns() const { return static_cast<double>(spin_threshold) * spin_loop_ns; }
  /// The longest an adaptive waiter spins before it sleeps: spin_wait_loops x spin_loop_ns.
  double spin_wait_ns() const { return static_cast<double>(spin_wait_loops) * spin_loop_ns; }
};

struct LockSpec {
  std::string name;
  LockParams params;
};

/// Per lock (and, summed, per VM) over the measured interval. Times in ns.
struct LockStats {
  std::uint64_t acquisitions = 0;
  std::uint64_t contended = 0;   ///< acquisitions that had to wait
  double hold_ns = 0;            ///< from acquisition to release
  double wait_ns = 0;            ///< from the request to the acquisition (wall time)
  double spin_ns = 0;            ///< CPU time waiters burned spinning (their vCPU on a pCPU)
  std::uint64_t lhp = 0;         ///< holder's vCPU descheduled while waiters spin
  std::uint64_t lwp = 0;         ///< lock handed to a next waiter whose vCPU is preempted
  std::uint64_t halts = 0;       ///< PV waiters that halted their vCPU
  std::uint64_t kicks = 0;       ///< PV kicks sent by unlockers
  /// Kicked waiters that ran again, and their summed wait from the hand-off (the unlocker's
  /// kick) to their vCPU's next run: kick_latency, the host's wake-up and any queueing behind
  /// another vCPU. What a FIFO lock owned by a halted waiter sits unusable for.
  std::uint64_t kicked_runs = 0;
  double kick_wait_ns = 0;
  std::uint64_t spurious_wakeups = 0;  ///< halted PV waiters woken before their ticket was served
  LockStats& operator+=(const LockStats& o);
};

/// A ticket lock word: head (ticket now served), tail (next ticket), the thread holding it and
/// the waiters in ticket order. Used for ticket and PV ticket locks alike.
class TicketSpinlock {
 public:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  /// Thread t takes the next ticket (xadd on the tail). True: it was served at once (owns it).
  bool arrive(std::uint32_t t);
  /// The owner unlocks: head advances; returns the thread holding the new head, which now owns
  /// the lock whether or not it runs, or kNone when nobody waits (the slow-path flag clears).
  std::uint32_t release();
  std::uint32_t owner() const { return owner_; }
  bool has_waiters() const { return !waiters_.empty(); }
  std::size_t waiters() const { return waiters_.size(); }
  std::uint64_t head() const { return head_; }
  std::uint64_t tail() const { return tail_; }
  /// PV: TICKET_SLOWPATH_FLAG, set by a waiter going to halt, cleared when the queue drains.
  bool slowpath = false;

 private:
  struct Waiter {
    std::uint64_t ticket;
    std::uint32_t thread;
  };
  FifoRing<Waiter> waiters_;
  std::uint64_t head_ = 0, tail_ = 0;
  std::uint32_t owner_ = kNone;
};

}  // namespace vcpusim::guest
