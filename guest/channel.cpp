// SPDX-License-Identifier: MIT
#include "guest/channel.h"

#include <stdexcept>

namespace vcpusim::guest {

template <typename T>
void Channel::Ring<T>::push(const T& x) {
  if (size_ == buf_.size()) {
    // Grow by doubling, unrolling the ring so that it starts at 0 again.
    std::vector<T> bigger(buf_.empty() ? 4 : 2 * buf_.size());
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = buf_[(head_ + i) % buf_.size()];
    buf_.swap(bigger);
    head_ = 0;
  }
  buf_[(head_ + size_) % buf_.size()] = x;
  ++size_;
}

template <typename T>
T Channel::Ring<T>::pop() {
  if (size_ == 0) throw std::logic_error("channel: pop from an empty queue");
  T x = buf_[head_];
  head_ = (head_ + 1) % buf_.size();
  --size_;
  return x;
}

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
