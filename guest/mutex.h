// SPDX-License-Identifier: MIT
// This file defines the guest's blocking mutex: a waiter sleeps (its thread blocks; the vCPU runs
// another thread or halts) instead of spinning, and the unlocker hands the mutex to the first
// waiter in FIFO order and wakes it (a wake-up, which may have to wake a halted vCPU: the
// blocked-waiter wake-up problem, reference note section 2). GuestOs drives the threads.
// MODEL: no optimistic owner spinning (Linux mutex_optimistic_spin) and strict FIFO hand-off
// (Linux hands off only to a starving waiter); a waiter never burns spin time.
#pragma once

#include <cstdint>
#include <deque>

namespace vcpusim::guest {

class Mutex {
 public:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  /// Thread t asks for the mutex. True: it was free and t owns it; false: t queued.
  bool lock(std::uint32_t t);
  /// The owner unlocks; returns the first waiter, now the owner (to be woken), or kNone.
  std::uint32_t unlock();
  std::uint32_t owner() const { return owner_; }
  bool has_waiters() const { return !waiters_.empty(); }

 private:
  std::deque<std::uint32_t> waiters_;
  std::uint32_t owner_ = kNone;
};

}  // namespace vcpusim::guest
