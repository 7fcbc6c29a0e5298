// SPDX-License-Identifier: MIT
// This file defines the engine's one event queue: a 4-ary implicit min-heap of plain structs
// keyed by (time, phase, sequence). Ties at one instant break first by phase (a documented order
// of kinds of work, as SimPy's URGENT/NORMAL) and then by insertion order, so a run is a pure
// function of its scenario and seed. Events are never removed: an event carries the generation
// of the thing it targets and the handler drops it when the generation has moved on (lazy
// cancellation, as ns-3's EventId). Push and pop are O(log n) and allocate nothing once the
// vector has grown to the run's high-water mark.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/sim_time.h"

namespace vcpusim::sim {

/// Orders events that fall on the same nanosecond. Lower runs first.
enum class Phase : std::uint8_t {
  kGuest = 0,           ///< guest work completions and guest timers: state the schedulers will see
  kHypervisorTimer = 1, ///< policy timers, slice ends, wake-ups after a kick latency
  kSchedule = 2,        ///< deferred reschedules of a pCPU (Xen's SCHEDULE_SOFTIRQ)
  kStats = 3,           ///< sampling and end-of-warmup bookkeeping: sees the settled state
};

/// One pending event. `kind` and `target` say what to do and to whom; `gen` is the target's
/// generation when the event was made (stale if it differs at pop time).
struct Event {
  Time time;
  std::uint64_t order;   ///< phase in the top 8 bits, insertion sequence below: one compare
  std::uint32_t kind;
  std::uint32_t target;
  std::uint64_t gen;

  Phase phase() const { return static_cast<Phase>(order >> 56); }
};

class EventQueue {
 public:
  void reserve(std::size_t n) { heap_.reserve(n); }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  std::size_t capacity() const { return heap_.capacity(); }  ///< for tests: no growth after reserve
  std::uint64_t pushed() const { return seq_; }

  void push(Time t, Phase phase, std::uint32_t kind, std::uint32_t target, std::uint64_t gen) {
    Event e{t, (static_cast<std::uint64_t>(phase) << 56) | (seq_++ & kSeqMask), kind, target, gen};
    heap_.push_back(e);
    sift_up(heap_.size() - 1);
  }

  const Event& top() const { return heap_.front(); }

  Event pop() {
    Event out = heap_.front();
    Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) {
      heap_.front() = last;
      sift_down(0);
    }
    return out;
  }

 private:
  static constexpr std::uint64_t kSeqMask = (std::uint64_t{1} << 56) - 1;
  static constexpr std::size_t kArity = 4;  // 4-ary: shallower than binary, children share a line

  static bool before(const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.order < b.order;
  }

  void sift_up(std::size_t i) {
    Event e = heap_[i];
    while (i > 0) {
      std::size_t parent = (i - 1) / kArity;
      if (!before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }

  void sift_down(std::size_t i) {
    const std::size_t n = heap_.size();
    Event e = heap_[i];
    for (;;) {
      std::size_t first = i * kArity + 1;
      if (first >= n) break;
      std::size_t best = first;
      std::size_t end = first + kArity < n ? first + kArity : n;
      for (std::size_t c = first + 1; c < end; ++c)
        if (before(heap_[c], heap_[best])) best = c;
      if (!before(heap_[best], e)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
  }

  std::vector<Event> heap_;
  std::uint64_t seq_ = 0;
};

}  // namespace vcpusim::sim
