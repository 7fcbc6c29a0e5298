// SPDX-License-Identifier: MIT
// Pins the event queue's order (sim/event_queue.h): events pop by time, then by phase, then in
// insertion order, so a run is a pure function of its scenario and seed; and the queue stops
// allocating once reserved (no growth in a steady push/pop loop). The reference for "sorted" is
// std::stable_sort of the same events by (time, phase): stability is insertion order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "sim/event_queue.h"

namespace vcpusim::sim {
namespace {

// What a test pushes: the insertion index travels in `target` so the pop order can be compared.
struct Pushed {
  Time time;
  Phase phase;
  std::uint32_t index;
};

std::vector<Pushed> drain(EventQueue& q) {
  std::vector<Pushed> out;
  while (!q.empty()) {
    Event e = q.pop();
    out.push_back({e.time, e.phase(), e.target});
  }
  return out;
}

bool same(const std::vector<Pushed>& a, const std::vector<Pushed>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].time != b[i].time || a[i].phase != b[i].phase || a[i].index != b[i].index) return false;
  return true;
}

TEST(EventQueue, PopsEarliestTimeFirst) {
  EventQueue q;
  const Time times[] = {50, 10, 40, 20, 30, 0, 1'000'000'000'000};
  std::uint32_t i = 0;
  for (Time t : times) q.push(t, Phase::kGuest, 0, i++, 0);
  std::vector<Time> got;
  while (!q.empty()) got.push_back(q.pop().time);
  EXPECT_EQ(got, (std::vector<Time>{0, 10, 20, 30, 40, 50, 1'000'000'000'000}));
}

TEST(EventQueue, SameInstantOrdersByPhase) {
  // Pushed in the reverse of the documented phase order; they must pop guest, hypervisor
  // timer, schedule, stats, whatever the insertion order.
  EventQueue q;
  q.push(100, Phase::kStats, 0, 0, 0);
  q.push(100, Phase::kSchedule, 0, 1, 0);
  q.push(100, Phase::kHypervisorTimer, 0, 2, 0);
  q.push(100, Phase::kGuest, 0, 3, 0);
  q.push(99, Phase::kStats, 0, 4, 0);  // an earlier time beats any phase
  std::vector<std::uint32_t> order;
  while (!q.empty()) order.push_back(q.pop().target);
  EXPECT_EQ(order, (std::vector<std::uint32_t>{4, 3, 2, 1, 0}));
}

TEST(EventQueue, SameInstantAndPhasePopInInsertionOrder) {
  EventQueue q;
  for (std::uint32_t i = 0; i < 100; ++i) q.push(7, Phase::kSchedule, 0, i, 0);
  for (std::uint32_t i = 0; i < 100; ++i) EXPECT_EQ(q.pop().target, i);
}

TEST(EventQueue, CarriesKindTargetGenerationAndPhase) {
  EventQueue q;
  q.push(5, Phase::kHypervisorTimer, 17, 42, 0xdeadbeefcafeULL);
  const Event& top = q.top();
  EXPECT_EQ(top.time, 5);
  Event e = q.pop();
  EXPECT_EQ(e.time, 5);
  EXPECT_EQ(e.kind, 17u);
  EXPECT_EQ(e.target, 42u);
  EXPECT_EQ(e.gen, 0xdeadbeefcafeULL);
  EXPECT_EQ(e.phase(), Phase::kHypervisorTimer);
}

TEST(EventQueue, SizeAndEmptyFollowPushesAndPops) {
  EventQueue q;
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.pushed(), 0u);
  q.push(3, Phase::kGuest, 0, 0, 0);
  q.push(1, Phase::kGuest, 0, 1, 0);
  q.push(2, Phase::kGuest, 0, 2, 0);
  EXPECT_FALSE(q.empty());
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.pushed(), 3u);
  q.pop();
  EXPECT_EQ(q.size(), 2u);
  q.pop();
  q.pop();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.pushed(), 3u);  // a count of pushes, not of pending events
}

TEST(EventQueue, RandomPushesPopLikeStableSortByTimeThenPhase) {
  // Times drawn from a small range so that most events tie on time and many on (time, phase):
  // the tie-breaking is what is under test, not only the heap order.
  std::mt19937_64 gen(12345);
  std::uniform_int_distribution<Time> time(0, 200);
  std::uniform_int_distribution<int> phase(0, 3);
  for (std::size_t n : {1u, 2u, 5u, 17u, 1000u, 20000u}) {
    EventQueue q;
    std::vector<Pushed> ref;
    for (std::uint32_t i = 0; i < n; ++i) {
      Pushed p{time(gen), static_cast<Phase>(phase(gen)), i};
      ref.push_back(p);
      q.push(p.time, p.phase, 0, p.index, 0);
    }
    std::stable_sort(ref.begin(), ref.end(), [](const Pushed& a, const Pushed& b) {
      return std::tie(a.time, a.phase) < std::tie(b.time, b.phase);
    });
    EXPECT_TRUE(same(drain(q), ref)) << "n = " << n;
  }
}

TEST(EventQueue, InterleavedPushAndPopMatchReferenceOrder) {
  // A simulator pushes while it pops (never into the past). The reference is an ordered set keyed
  // (time, phase, insertion index); the heap must agree on every pop.
  std::mt19937_64 gen(777);
  std::uniform_int_distribution<Time> delay(0, 50);
  std::uniform_int_distribution<int> phase(0, 3), burst(0, 3);
  EventQueue q;
  std::set<std::tuple<Time, int, std::uint32_t>> ref;
  std::uint32_t next = 0;
  Time now = 0;
  for (int step = 0; step < 50'000; ++step) {
    for (int k = burst(gen); k > 0; --k) {
      const Time t = now + delay(gen);
      const int ph = phase(gen);
      q.push(t, static_cast<Phase>(ph), 0, next, 0);
      ref.insert({t, ph, next});
      ++next;
    }
    if (q.empty()) continue;
    ASSERT_EQ(q.size(), ref.size());
    const Event e = q.pop();
    const auto want = *ref.begin();
    ref.erase(ref.begin());
    ASSERT_EQ(e.time, std::get<0>(want)) << "pop " << step;
    ASSERT_EQ(static_cast<int>(e.phase()), std::get<1>(want)) << "pop " << step;
    ASSERT_EQ(e.target, std::get<2>(want)) << "pop " << step;
    now = e.time;
  }
}

TEST(EventQueue, SteadyPushPopLoopDoesNotGrowAfterReserve) {
  // The design promises no allocation per event once the queue has reached its high-water mark.
  // A steady loop (pop one, push one) at 1000 pending events inside a reserve of 1024 must never
  // change the heap's capacity.
  EventQueue q;
  q.reserve(1024);
  const std::size_t cap = q.capacity();
  ASSERT_GE(cap, 1024u);
  std::mt19937_64 gen(99);
  std::uniform_int_distribution<Time> delay(1, 10'000);
  for (std::uint32_t i = 0; i < 1000; ++i) q.push(delay(gen), Phase::kGuest, 0, i, 0);
  EXPECT_EQ(q.capacity(), cap);
  for (int i = 0; i < 200'000; ++i) {
    const Event e = q.pop();
    q.push(e.time + delay(gen), static_cast<Phase>(i & 3), 0, e.target, 0);
    ASSERT_EQ(q.capacity(), cap) << "grew at iteration " << i;
  }
  EXPECT_EQ(q.size(), 1000u);
}

TEST(EventQueue, KeyedPushMovesThePendingEventInsteadOfLeavingAStaleOne) {
  // Three re-timings of one target's keyed event leave one event, at the last time, whether the
  // new time is earlier or later; another target's and an unkeyed kind's events are untouched.
  EventQueue q;
  q.set_keyed(1, 4);
  q.push_keyed(100, Phase::kGuest, 1, 2, 1);
  q.push(50, Phase::kGuest, 0, 2, 0);
  q.push_keyed(70, Phase::kGuest, 1, 3, 1);
  q.push_keyed(10, Phase::kGuest, 1, 2, 2);
  q.push_keyed(300, Phase::kGuest, 1, 2, 3);
  ASSERT_EQ(q.size(), 3u);
  std::vector<std::tuple<Time, std::uint32_t, std::uint32_t, std::uint64_t>> popped;
  while (!q.empty()) {
    const Event e = q.pop();
    popped.emplace_back(e.time, e.kind, e.target, e.gen);
  }
  using T = std::tuple<Time, std::uint32_t, std::uint32_t, std::uint64_t>;
  EXPECT_EQ(popped, (std::vector<T>{T{50, 0, 2, 0}, T{70, 1, 3, 1}, T{300, 1, 2, 3}}));
  // A popped keyed event frees its target's slot: the next push is a fresh one.
  q.push_keyed(5, Phase::kGuest, 1, 2, 4);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.pop().gen, 4u);
}

TEST(EventQueue, ACancelledKeyedEventNeverPopsAndTheRestKeepTheirOrder) {
  // Cancelling from the root, the middle and the last place of the heap, and a target with
  // nothing pending (a no-op); the events left pop in time order, and the slot is free again.
  EventQueue q;
  q.set_keyed(1, 8);
  for (std::uint32_t t = 0; t < 8; ++t) q.push_keyed(10 * (8 - t), Phase::kGuest, 1, t, 1);  // t = 7 at 10
  q.push(35, Phase::kGuest, 0, 0, 0);
  q.cancel_keyed(1, 7);  // the earliest: the root
  q.cancel_keyed(1, 3);  // at 50
  q.cancel_keyed(1, 0);  // at 80
  q.cancel_keyed(1, 0);  // nothing left: no-op
  ASSERT_EQ(q.size(), 6u);
  std::vector<std::pair<Time, std::uint32_t>> popped;
  while (!q.empty()) {
    const Event e = q.pop();
    popped.emplace_back(e.time, e.kind == 0 ? 99u : e.target);
  }
  using P = std::pair<Time, std::uint32_t>;
  EXPECT_EQ(popped, (std::vector<P>{P{20, 6}, P{30, 5}, P{35, 99}, P{40, 4}, P{60, 2}, P{70, 1}}));
  q.push_keyed(5, Phase::kGuest, 1, 3, 2);
  q.cancel_keyed(1, 3);
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, KeyedEventsFireAsLazyCancellationWouldFireThem) {
  // The engine's contract for a keyed kind: every push supersedes the target's last one (its
  // generation moves on). Against a plain queue that keeps every push and drops the superseded
  // ones at pop time (what the engine did before keyed kinds), the events that count must come
  // out the same, in the same order, with the same phases, over a random mix of keyed re-timings,
  // unkeyed events and pops.
  EventQueue keyed, lazy;
  keyed.set_keyed(1, 16);
  keyed.set_keyed(3, 8);
  std::vector<std::uint64_t> gen1(16, 0), gen3(8, 0);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> op(0, 9);
  std::uniform_int_distribution<Time> delay(0, 500);
  std::uniform_int_distribution<std::uint32_t> t16(0, 15), t8(0, 7), ph(0, 3);
  Time now = 0;
  std::size_t fired = 0;
  const auto live = [&](const Event& e) {
    return (e.kind == 1 && e.gen == gen1[e.target]) || (e.kind == 3 && e.gen == gen3[e.target]) || e.kind == 0;
  };
  for (int i = 0; i < 200'000; ++i) {
    const int o = op(rng);
    const Time at = now + delay(rng);
    const auto phase = static_cast<Phase>(ph(rng));
    if (o < 4) {
      const std::uint32_t t = t16(rng);
      keyed.push_keyed(at, phase, 1, t, ++gen1[t]);
      lazy.push(at, phase, 1, t, gen1[t]);
    } else if (o < 6) {
      const std::uint32_t t = t8(rng);
      keyed.push_keyed(at, phase, 3, t, ++gen3[t]);
      lazy.push(at, phase, 3, t, gen3[t]);
    } else if (o < 7) {
      keyed.push(at, phase, 0, t16(rng), 0);
      lazy.push(at, phase, 0, 0, 0);
    } else {
      // Pop the next event that counts from each; the keyed queue may still hold a superseded
      // one (a generation bumped without a push), which is dropped there as well.
      while (!lazy.empty() && !live(lazy.top())) lazy.pop();
      while (!keyed.empty() && !live(keyed.top())) keyed.pop();
      ASSERT_EQ(lazy.empty(), keyed.empty()) << "at step " << i;
      if (lazy.empty()) continue;
      const Event a = lazy.pop(), b = keyed.pop();
      ASSERT_EQ(std::make_tuple(a.time, a.kind, a.gen, a.phase()), std::make_tuple(b.time, b.kind, b.gen, b.phase()))
          << "at step " << i;
      if (a.kind != 0) {
        ASSERT_EQ(a.target, b.target) << "at step " << i;
      }
      now = a.time;
      ++fired;
    }
    if (o == 9) {
      // Superseded without a new push (work stopped): stale in both, unless the keyed queue is
      // told (cancel_keyed, half the time), when it is gone from it at once.
      const std::uint32_t t = t16(rng);
      ++gen1[t];
      if (i % 2 == 0) keyed.cancel_keyed(1, t);
    }
  }
  EXPECT_GT(fired, 10'000u);
  EXPECT_LT(keyed.size(), 16u + 8u + lazy.size() / 4) << "keyed queue " << keyed.size() << ", lazy " << lazy.size();
}

}  // namespace
}  // namespace vcpusim::sim
