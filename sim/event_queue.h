// SPDX-License-Identifier: MIT
// This file defines the engine's one event queue: a 4-ary implicit min-heap of plain structs
// keyed by (time, phase, sequence). Ties at one instant break first by phase (a documented order
// of kinds of work, as SimPy's URGENT/NORMAL) and then by insertion order, so a run is a pure
// function of its scenario and seed. Events are never removed: an event carries the generation
// of the thing it targets and the handler drops it when the generation has moved on (lazy
// cancellation, as ns-3's EventId). Push and pop are O(log n) and allocate nothing once the
// vector has grown to the run's high-water mark.
//
// A kind may be keyed (set_keyed): each target has at most one event of it that can still count,
// because every push of it supersedes the last (a vCPU's work completion, re-timed at each rate
// change). push_keyed then moves that target's pending event to its new place in the heap
// instead of leaving it behind to be popped and dropped: the same events fire in the same order
// (the moved event takes a fresh sequence number, as a push does), but the heap holds no
// superseded copies of them. Without this, half of a credit2 host's pops were such copies.
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
static_assert(sizeof(Event) == 32, "the heap's layout comment (EventQueue::kArity) counts 32-byte events");

class EventQueue {
 public:
  void reserve(std::size_t n) { heap_.reserve(n); }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  std::size_t capacity() const { return heap_.capacity(); }  ///< for tests: no growth after reserve
  std::uint64_t pushed() const { return seq_; }

  void push(Time t, Phase phase, std::uint32_t kind, std::uint32_t target, std::uint64_t gen) {
    heap_.push_back(make(t, phase, kind, target, gen));
    sift_up(heap_.size() - 1);
  }

  /// Makes `kind` keyed for targets 0..targets-1 (before any event of it is pushed).
  void set_keyed(std::uint32_t kind, std::size_t targets) {
    if (kind >= key_base_.size()) key_base_.resize(kind + 1, kNotKeyed);
    key_base_[kind] = slot_of_.size();
    slot_of_.resize(slot_of_.size() + targets, 0);
  }

  /// A push of a keyed kind: the target's pending event of that kind, if any, is replaced by this
  /// one where it stands in the heap and sifted to its new place. Only for a kind set_keyed made
  /// keyed, and only where the caller has superseded the pending event (its generation moved on).
  void push_keyed(Time t, Phase phase, std::uint32_t kind, std::uint32_t target, std::uint64_t gen) {
    const std::size_t at = slot_of_[key_base_[kind] + target];
    if (at == 0) {
      push(t, phase, kind, target, gen);
      return;
    }
    const Event e = make(t, phase, kind, target, gen);
    const bool earlier = before(e, heap_[at - 1]);
    place(at - 1, e);
    if (earlier) sift_up(at - 1);
    else sift_down(at - 1);
  }

  /// Drops the target's pending event of a keyed kind, if it has one: for a caller that has
  /// superseded it (moved its generation on) with no new event to take its place, as when a
  /// vCPU's work stops at a switch-out. Otherwise the event would stay in the heap until its time
  /// came, to be popped and dropped then (on a credit2 host at 4x, a tenth of all pops).
  void cancel_keyed(std::uint32_t kind, std::uint32_t target) {
    std::size_t& slot = slot_of_[key_base_[kind] + target];
    if (slot == 0) return;
    const std::size_t i = slot - 1;
    slot = 0;
    const Event last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;  // it was the last one
    if (i > 0 && before(last, heap_[(i - 1) / kArity])) {
      sift_up_from(i, last);
    } else {
      place(i, last);
      sift_down(i);
    }
  }
  const Event& top() const { return heap_.front(); }

  Event pop() {
    Event out = heap_.front();
    if (const std::size_t s = slot(out); s != kNoSlot) slot_of_[s] = 0;
    Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) {
      // Floyd's bottom-up deletion: the hole left at the root goes down along the least child
      // to a leaf, and the last event, which almost always belongs near the leaves, rises from
      // there. A plain sift-down compares it with the least child at every level as well, a
      // quarter more comparisons of events scattered through memory. The pop order is the
      // same either way: (time, order) is a strict total order, as `order` holds a sequence.
      sift_up_from(hole_to_leaf(0), last);
    }
    return out;
  }

 private:
  static constexpr std::uint64_t kSeqMask = (std::uint64_t{1} << 56) - 1;
  // 4-ary: half a binary heap's depth, and a node's children are contiguous (4 x 32-byte
  // events: two or three 64-byte lines, as the heap array is not aligned to them).
  static constexpr std::size_t kArity = 4;

  static constexpr std::size_t kNotKeyed = ~std::size_t{0};
  static constexpr std::size_t kNoSlot = ~std::size_t{0};

  static bool before(const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.order < b.order;
  }

  Event make(Time t, Phase phase, std::uint32_t kind, std::uint32_t target, std::uint64_t gen) {
    return Event{t, (static_cast<std::uint64_t>(phase) << 56) | (seq_++ & kSeqMask), kind, target, gen};
  }

  /// The slot of a keyed event (its kind's base + its target), or kNoSlot.
  std::size_t slot(const Event& e) const {
    if (e.kind >= key_base_.size() || key_base_[e.kind] == kNotKeyed) return kNoSlot;
    return key_base_[e.kind] + e.target;
  }

  /// Every write of an event into the heap goes through here, so a keyed event's slot always
  /// holds its index (plus one; 0 is none).
  void place(std::size_t i, const Event& e) {
    heap_[i] = e;
    if (const std::size_t s = slot(e); s != kNoSlot) slot_of_[s] = i + 1;
  }

  /// Moves the hole at `i` down along the least child to a leaf, and gives the leaf's index.
  std::size_t hole_to_leaf(std::size_t i) {
    const std::size_t n = heap_.size();
    for (;;) {
      const std::size_t first = i * kArity + 1;
      if (first >= n) return i;
      std::size_t best = first;
      const std::size_t end = first + kArity < n ? first + kArity : n;
      for (std::size_t c = first + 1; c < end; ++c)
        if (before(heap_[c], heap_[best])) best = c;
      place(i, heap_[best]);
      i = best;
    }
  }
  void sift_up(std::size_t i) { sift_up_from(i, heap_[i]); }
  /// Puts `e` at the hole `i`, or above it while it is earlier than the parent.
  void sift_up_from(std::size_t i, Event e) {
    while (i > 0) {
      std::size_t parent = (i - 1) / kArity;
      if (!before(e, heap_[parent])) break;
      place(i, heap_[parent]);
      i = parent;
    }
    place(i, e);
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
      place(i, heap_[best]);
      i = best;
    }
    place(i, e);
  }

  std::vector<Event> heap_;
  std::uint64_t seq_ = 0;
  std::vector<std::size_t> key_base_;  ///< per kind: its first slot, or kNotKeyed
  std::vector<std::size_t> slot_of_;   ///< per slot: heap index + 1 of its pending event, 0 none
};

}  // namespace vcpusim::sim
