// SPDX-License-Identifier: MIT
// This file defines the guest's blocking mutex: a waiter sleeps (its thread blocks; the vCPU runs
// another thread or halts) instead of spinning, and the unlocker hands the mutex to the first
// waiter in FIFO order and wakes it (a wake-up, which may have to wake a halted vCPU: the
// blocked-waiter wake-up problem, reference note section 2). GuestOs drives the threads.
// Two hand-off disciplines:
//  - FIFO hand-off (default; a kernel mutex at its fairest): the unlocker makes the first waiter
//    the owner. MODEL: no optimistic owner spinning (Linux mutex_optimistic_spin) and strict
//    FIFO hand-off (Linux hands off only to a starving waiter).
//  - barging (glibc's default pthread mutex, PTHREAD_MUTEX_TIMED_NP: lll_lock / lll_unlock in
//    nptl/lowlevellock.h): the unlocker frees the lock and futex-wakes ONE waiter, which must
//    retry when it next runs; a thread that asks while the lock is free takes it, sleepers
//    queued or not. A retry that loses goes back to sleep at the tail of the futex queue.
// Either way a waiter never burns spin time.
#pragma once

#include <cstdint>

#include "guest/fifo_ring.h"

namespace vcpusim::guest {

class Mutex {
 public:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  explicit Mutex(bool barging = false) : barging_(barging) {}
  /// Thread t asks for the mutex. True: it was free (FIFO: and nobody queued) and t owns it;
  /// false: t queued.
  bool lock(std::uint32_t t);
  /// Takes the mutex if it is free (barging: sleepers or not), without queueing t otherwise.
  bool try_lock(std::uint32_t t);
  /// Queues t as a sleeper (after its spinning failed: an adaptive waiter).
  void wait(std::uint32_t t) { waiters_.push(t); }
  /// The owner unlocks; returns the first waiter (to be woken), or kNone. FIFO: that waiter is
  /// now the owner; barging: the lock is free and the waiter must call lock() again.
  std::uint32_t unlock();
  bool barging() const { return barging_; }
  std::uint32_t owner() const { return owner_; }
  bool has_waiters() const { return !waiters_.empty(); }

 private:
  FifoRing<std::uint32_t> waiters_;
  std::uint32_t owner_ = kNone;
  bool barging_ = false;
};

}  // namespace vcpusim::guest
