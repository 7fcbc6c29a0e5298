// SPDX-License-Identifier: MIT
// This file defines CpuSet, the fixed-capacity bitset used wherever a set of hardware threads
// appears (affinities, idle masks, siblings), as Xen's cpumask_t and Linux's struct cpumask.
// Fixed capacity keeps it a plain value: copying, and/or/and-not are a few word operations, and
// nothing allocates on the scheduler's hot path.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace vcpusim::topo {

using ThreadId = std::uint32_t;  ///< a hardware thread (pCPU), dense from 0

class CpuSet {
 public:
  static constexpr std::uint32_t kCapacity = 512;  ///< hardware threads per host, at most
  static constexpr ThreadId kNone = ~ThreadId{0};

  constexpr CpuSet() = default;
  static constexpr CpuSet first_n(std::uint32_t n) {
    CpuSet s;
    for (std::uint32_t i = 0; i < n; ++i) s.set(i);
    return s;
  }
  static constexpr CpuSet single(ThreadId t) {
    CpuSet s;
    s.set(t);
    return s;
  }

  constexpr void set(ThreadId t) { w_[t >> 6] |= bit(t); }
  constexpr void reset(ThreadId t) { w_[t >> 6] &= ~bit(t); }
  constexpr bool test(ThreadId t) const { return t < kCapacity && (w_[t >> 6] & bit(t)) != 0; }
  constexpr void clear() { w_ = {}; }

  constexpr bool empty() const {
    for (auto w : w_)
      if (w) return false;
    return true;
  }
  constexpr bool any() const { return !empty(); }
  constexpr std::uint32_t count() const {
    std::uint32_t n = 0;
    for (auto w : w_) n += static_cast<std::uint32_t>(std::popcount(w));
    return n;
  }
  /// The lowest member, or kNone.
  constexpr ThreadId first() const { return next(0); }
  /// The lowest member >= from, or kNone.
  constexpr ThreadId next(ThreadId from) const {
    if (from >= kCapacity) return kNone;
    std::uint32_t wi = from >> 6;
    std::uint64_t w = w_[wi] & (~std::uint64_t{0} << (from & 63));
    for (;;) {
      if (w) return (wi << 6) + static_cast<ThreadId>(std::countr_zero(w));
      if (++wi == kWords) return kNone;
      w = w_[wi];
    }
  }
  /// The n-th member in increasing order (0-based), or kNone.
  constexpr ThreadId nth(std::uint32_t n) const {
    for (ThreadId t = first(); t != kNone; t = next(t + 1))
      if (n-- == 0) return t;
    return kNone;
  }
  constexpr bool subset_of(const CpuSet& o) const {
    for (std::uint32_t i = 0; i < kWords; ++i)
      if (w_[i] & ~o.w_[i]) return false;
    return true;
  }
  constexpr bool intersects(const CpuSet& o) const {
    for (std::uint32_t i = 0; i < kWords; ++i)
      if (w_[i] & o.w_[i]) return true;
    return false;
  }

  constexpr CpuSet& operator|=(const CpuSet& o) {
    for (std::uint32_t i = 0; i < kWords; ++i) w_[i] |= o.w_[i];
    return *this;
  }
  constexpr CpuSet& operator&=(const CpuSet& o) {
    for (std::uint32_t i = 0; i < kWords; ++i) w_[i] &= o.w_[i];
    return *this;
  }
  /// Removes the members of o (and-not).
  constexpr CpuSet& operator-=(const CpuSet& o) {
    for (std::uint32_t i = 0; i < kWords; ++i) w_[i] &= ~o.w_[i];
    return *this;
  }
  friend constexpr CpuSet operator|(CpuSet a, const CpuSet& b) { return a |= b; }
  friend constexpr CpuSet operator&(CpuSet a, const CpuSet& b) { return a &= b; }
  friend constexpr CpuSet operator-(CpuSet a, const CpuSet& b) { return a -= b; }
  friend constexpr bool operator==(const CpuSet&, const CpuSet&) = default;

  /// Calls f(ThreadId) for each member in increasing order.
  template <typename F>
  constexpr void for_each(F&& f) const {
    for (std::uint32_t wi = 0; wi < kWords; ++wi) {
      std::uint64_t w = w_[wi];
      while (w) {
        f((wi << 6) + static_cast<ThreadId>(std::countr_zero(w)));
        w &= w - 1;
      }
    }
  }

 private:
  static constexpr std::uint32_t kWords = kCapacity / 64;
  static constexpr std::uint64_t bit(ThreadId t) { return std::uint64_t{1} << (t & 63); }
  std::array<std::uint64_t, kWords> w_{};
};

}  // namespace vcpusim::topo
