// SPDX-License-Identifier: MIT
#include "guest/specint_rate.h"

#include <algorithm>

namespace vcpusim::guest {

using sim::ParamSpec;

const std::vector<SpecintRate::Benchmark>& SpecintRate::suite() {
  // Note 3: memory-heavy group mcf, omnetpp, xalancbmk, partly gcc; compute group exchange2,
  // leela, deepsjeng, x264, perlbench; xz unlisted, taken as mixed [E]. Memory-stall shares
  // from note 3's NUMA column, "1.0 (compute group) to 1.3 (mcf, omnetpp)", with note 5's rule
  // 1 + s_mem x (L_ratio - 1) and Skylake-SP's L_ratio ~1.65: 1.3 gives s_mem ~0.45; the
  // others are graded below it [E]. The mixed and cpu profiles pair at 0.65 and 0.525 per
  // thread (README SMT matrix), bracketing note 4's "SPECrate int, 2 copies per core: about
  // 0.55-0.63 per copy".
  static const std::vector<Benchmark> s = {
      {"500.perlbench_r", hv::Profile::kCpu, 0.0},   {"502.gcc_r", hv::Profile::kMixed, 0.15},
      {"505.mcf_r", hv::Profile::kMixed, 0.45},      {"520.omnetpp_r", hv::Profile::kMixed, 0.45},
      {"523.xalancbmk_r", hv::Profile::kMixed, 0.3}, {"525.x264_r", hv::Profile::kCpu, 0.0},
      {"531.deepsjeng_r", hv::Profile::kCpu, 0.0},   {"541.leela_r", hv::Profile::kCpu, 0.0},
      {"548.exchange2_r", hv::Profile::kCpu, 0.0},   {"557.xz_r", hv::Profile::kMixed, 0.15},
  };
  return s;
}

std::vector<ParamSpec> SpecintRate::param_specs() {
  return {
      {"threads", ParamSpec::Kind::kInt, 1, 1, 4096, {}, "copies (usually one per CPU the OS sees; note 3)"},
      {"benchmark_time", ParamSpec::Kind::kDuration, 50e6, 10e6, 1e12, {},
       "reference work of one copy of one benchmark, scaled down from minutes so a run of seconds covers the suite [E]"},
  };
}

std::unique_ptr<Workload> SpecintRate::make(const sim::ParamValues& v) {
  return std::make_unique<SpecintRate>(static_cast<std::uint32_t>(v.get("threads", 1)), v.get("benchmark_time", 50e6));
}

SpecintRate::SpecintRate(std::uint32_t copies, double benchmark_ns)
    : copies_(copies), benchmark_ns_(benchmark_ns), done_ns_(copies, 0.0), bench_(copies, 0) {}

Step SpecintRate::next(std::uint32_t thread, sim::RngStream&) {
  if (done_ns_[thread] >= benchmark_ns_ - 0.5) {
    done_ns_[thread] = 0;
    bench_[thread] = (bench_[thread] + 1) % static_cast<std::uint32_t>(suite().size());
  }
  const Benchmark& b = suite()[bench_[thread]];
  const double w = std::min(kStepNs, benchmark_ns_ - done_ns_[thread]);
  done_ns_[thread] += w;
  Step s;
  s.work_ns = w;
  s.profile = b.profile;
  s.mem_intensity = b.mem_intensity;
  s.result = w * 1e-9;  // reference seconds
  return s;
}

std::optional<double> SpecintRate::aggregate(const std::vector<double>& per_thread) const {
  if (per_thread.empty()) return 0.0;
  return static_cast<double>(per_thread.size()) * *std::min_element(per_thread.begin(), per_thread.end());
}

}  // namespace vcpusim::guest
