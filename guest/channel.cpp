// SPDX-License-Identifier: MIT
#include "guest/channel.h"

#include <stdexcept>

namespace vcpusim::guest {

std::uint32_t Channel::send(const Message& m) {
  if (!waiters_.empty()) {
    // A thread waits only while no message is queued (receive takes a queued one at once), so
    // the message goes straight to the first waiter.
    if (!messages_.empty()) throw std::logic_error("channel: a waiter and a queued message at once");
    return waiters_.pop();
  }
  messages_.push(m);
  return kNone;
}

bool Channel::receive(std::uint32_t t, Message& out) {
  if (!messages_.empty()) {
    out = messages_.pop();
    return true;
  }
  waiters_.push(t);
  return false;
}

}  // namespace vcpusim::guest
