// SPDX-License-Identifier: MIT
#include "guest/mutex.h"

#include <stdexcept>

namespace vcpusim::guest {

bool Mutex::lock(std::uint32_t t) {
  if (owner_ == kNone && (barging_ || waiters_.empty())) {
    owner_ = t;
    return true;
  }
  waiters_.push(t);
  return false;
}

bool Mutex::try_lock(std::uint32_t t) {
  if (owner_ != kNone || (!barging_ && !waiters_.empty())) return false;
  owner_ = t;
  return true;
}

std::uint32_t Mutex::unlock() {
  if (owner_ == kNone) throw std::logic_error("mutex unlocked while free");
  owner_ = kNone;
  if (waiters_.empty()) return kNone;
  const std::uint32_t w = waiters_.pop();
  if (!barging_) owner_ = w;
  return w;
}

}  // namespace vcpusim::guest
