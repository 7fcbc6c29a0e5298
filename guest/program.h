// SPDX-License-Identifier: MIT
// This file defines Program, the generic workload: every thread loops over a fixed list of
// phases, each either compute (a reference duration and a profile) or block (a drawn sleep:
// constant, exponential or uniform). It exists for scenarios no named benchmark covers, and for
// tests whose answers are computed by hand. Its result is compute phases completed ("loops/s"
// counts one per completed loop).
#pragma once

#include <vector>

#include "guest/workload.h"

namespace vcpusim::guest {

struct Phase {
  enum class Dist : std::uint8_t { kConst, kExp, kUniform };
  bool compute = true;
  double mean_ns = 0;       ///< compute: reference work; block: mean sleep
  Dist dist = Dist::kConst;
  hv::Profile profile = hv::Profile::kCpu;
  double mem_intensity = 0;
};

class Program final : public Workload {
 public:
  Program(std::uint32_t threads, std::vector<Phase> phases);
  std::string_view kind() const override { return "program"; }
  std::uint32_t threads() const override { return threads_; }
  Step next(std::uint32_t thread, sim::RngStream& rng) override;
  std::string_view unit() const override { return "loops/s"; }

 private:
  double draw(const Phase& p, sim::RngStream& rng) const;
  std::uint32_t threads_;
  std::vector<Phase> phases_;
  std::vector<std::uint32_t> pos_;  ///< next phase per thread
  std::size_t last_compute_ = 0;    ///< the compute phase that ends a loop
};

}  // namespace vcpusim::guest
