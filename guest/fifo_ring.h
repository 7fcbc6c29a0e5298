// SPDX-License-Identifier: MIT
// This file defines FifoRing, the first-in first-out queue of the guest's wait queues (a lock's
// waiters, a channel's messages and receivers). It is a ring buffer that only grows: it allocates
// when it holds more than ever before and never otherwise, so a queue in steady state allocates
// nothing per push or pop, which the event loop's no-allocation promise needs (std::deque
// allocates a block every few hundred pushes and frees one on the pops behind them).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

namespace vcpusim::guest {

template <typename T>
class FifoRing {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  /// The oldest element; the queue must not be empty.
  const T& front() const {
    if (size_ == 0) throw std::logic_error("FifoRing: front of an empty queue");
    return buf_[head_];
  }
  void push(const T& x) {
    if (size_ == buf_.size()) grow();
    buf_[wrap(head_ + size_)] = x;
    ++size_;
  }
  /// Removes and returns the oldest element; the queue must not be empty.
  T pop() {
    T x = front();
    head_ = wrap(head_ + 1);
    --size_;
    return x;
  }

 private:
  std::size_t wrap(std::size_t i) const { return i >= buf_.size() ? i - buf_.size() : i; }
  void grow() {
    // Double, unrolling the ring so that it starts at 0 again.
    std::vector<T> bigger(buf_.empty() ? 4 : 2 * buf_.size());
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = std::move(buf_[wrap(head_ + i)]);
    buf_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> buf_;
  std::size_t head_ = 0, size_ = 0;
};

}  // namespace vcpusim::guest
