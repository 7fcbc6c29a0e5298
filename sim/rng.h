// SPDX-License-Identifier: MIT
// This file defines the random streams. Every entity that draws owns a stream derived from the
// master seed and a stable name ("vm/db/thread/3"), so adding a VM leaves every other VM's draws
// unchanged (ns-3's per-object streams). The generator is xoshiro256** seeded through SplitMix64;
// the distributions are written here rather than taken from <random> because libstdc++ does not
// promise the same std::exponential_distribution sequence across versions, and runs must be
// reproducible across machines.
#pragma once

#include <cstdint>
#include <string_view>

namespace vcpusim::sim {

/// SplitMix64 step: the standard seeder for xoshiro (Vigna), also used to mix names into seeds.
constexpr std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// FNV-1a over a name: stable across runs, platforms and compilers.
constexpr std::uint64_t stable_hash(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

/// Derives the seed of a named stream from a master seed.
constexpr std::uint64_t derive_seed(std::uint64_t master, std::string_view name) {
  std::uint64_t s = master ^ stable_hash(name);
  splitmix64(s);
  return splitmix64(s);
}

class RngStream {
 public:
  RngStream() : RngStream(0) {}
  explicit RngStream(std::uint64_t seed) {
    std::uint64_t s = seed;
    for (auto& w : s_) w = splitmix64(s);
  }
  RngStream(std::uint64_t master, std::string_view name) : RngStream(derive_seed(master, name)) {}

  std::uint64_t next_u64() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Exponential with the given mean (inverse transform; 1 - u avoids log(0)).
  double exponential(double mean);
  /// Normal by Box-Muller (one value per call; the twin is discarded for simplicity).
  double normal(double mean, double stddev);

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace vcpusim::sim
