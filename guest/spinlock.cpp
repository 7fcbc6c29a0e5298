// SPDX-License-Identifier: MIT
#include "guest/spinlock.h"

#include <stdexcept>

namespace vcpusim::guest {

const char* lock_kind_name(LockKind k) {
  switch (k) {
    case LockKind::kTicket: return "ticket";
    case LockKind::kPvTicket: return "pvticket";
    case LockKind::kMutex: return "mutex";
    case LockKind::kAdaptive: return "adaptive";
  }
  return "?";
}

LockStats& LockStats::operator+=(const LockStats& o) {
  acquisitions += o.acquisitions;
  contended += o.contended;
  hold_ns += o.hold_ns;
  wait_ns += o.wait_ns;
  spin_ns += o.spin_ns;
  lhp += o.lhp;
  lwp += o.lwp;
  halts += o.halts;
  kicks += o.kicks;
  kicked_runs += o.kicked_runs;
  kick_wait_ns += o.kick_wait_ns;
  spurious_wakeups += o.spurious_wakeups;
  return *this;
}

bool TicketSpinlock::arrive(std::uint32_t t) {
  const std::uint64_t ticket = tail_++;
  if (ticket == head_) {
    owner_ = t;
    return true;
  }
  waiters_.push(Waiter{ticket, t});
  return false;
}

std::uint32_t TicketSpinlock::release() {
  if (owner_ == kNone) throw std::logic_error("ticket spinlock released while free");
  ++head_;
  owner_ = kNone;
  if (waiters_.empty()) {
    slowpath = false;
    return kNone;
  }
  const Waiter w = waiters_.front();
  // FIFO by ticket is the whole point of the lock: the next waiter holds the new head.
  if (w.ticket != head_) throw std::logic_error("ticket spinlock served out of ticket order");
  waiters_.pop();
  owner_ = w.thread;
  return owner_;
}

}  // namespace vcpusim::guest
