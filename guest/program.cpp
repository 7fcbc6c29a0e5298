// SPDX-License-Identifier: MIT
#include "guest/program.h"

#include <cmath>
#include <stdexcept>

namespace vcpusim::guest {

Program::Program(std::uint32_t threads, std::vector<Phase> phases)
    : threads_(threads), phases_(std::move(phases)), pos_(threads, 0) {
  bool any = false;
  for (std::size_t i = 0; i < phases_.size(); ++i)
    if (phases_[i].compute && phases_[i].mean_ns > 0) {
      last_compute_ = i;
      any = true;
    }
  // A program that never computes would loop through blocks forever without progress.
  if (!any) throw std::invalid_argument("a program needs at least one compute phase with work > 0");
}

double Program::draw(const Phase& p, sim::RngStream& rng) const {
  switch (p.dist) {
    case Phase::Dist::kConst: return p.mean_ns;
    case Phase::Dist::kExp: return rng.exponential(p.mean_ns);
    case Phase::Dist::kUniform: return rng.uniform(0.0, 2.0 * p.mean_ns);
  }
  return p.mean_ns;
}

Step Program::next(std::uint32_t thread, sim::RngStream& rng) {
  for (;;) {
    const std::size_t i = pos_[thread];
    pos_[thread] = static_cast<std::uint32_t>((i + 1) % phases_.size());
    const Phase& p = phases_[i];
    const double v = draw(p, rng);
    if (p.compute) {
      if (v <= 0) continue;
      return Step{Step::Kind::kCompute, v, p.profile, p.mem_intensity, 0, i == last_compute_ ? 1.0 : 0.0};
    }
    const auto d = static_cast<sim::Duration>(std::llround(v));
    if (d > 0) return Step{Step::Kind::kBlock, 0, hv::Profile::kCpu, 0, d, 0};
  }
}

}  // namespace vcpusim::guest
