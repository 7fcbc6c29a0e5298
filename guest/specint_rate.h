// SPDX-License-Identifier: MIT
// This file defines the `specint-rate` workload, a SPECrate 2017 Integer run: N independent
// copies (one thread each, usually one per CPU the OS sees) that run the suite's 10 benchmarks
// one after another, never blocking and never communicating. Numbers cite
// ../shared/reference/spinlocks-and-workloads.md section 3 "SPECrate 2017 Integer" and
// section 4 ("note"); docs/workloads/specint-rate.md has the reasoning and the omissions.
//
// Each copy cycles through the benchmarks in suite order, each `benchmark_time` of reference
// work (MODEL: scaled down from the real minutes so that a run of seconds sees the whole mix;
// the copies are not re-synchronised between benchmarks), split into 10 ms compute steps
// (nothing a scheduler can see happens inside one). The memory-heavy group (mcf, omnetpp,
// xalancbmk, partly gcc) runs with the `mixed` profile and a memory-stall share, the compute
// group (perlbench, x264, deepsjeng, leela, exchange2) with `cpu`; xz is taken as mixed [E].
//
// Score: SPECrate is copies x ref_time / run_time, and a benchmark ends when its slowest copy
// ends, so the score follows the straggler: here `rate` = copies x (the reference seconds the
// slowest copy completed) / measured seconds. Alone on idle cores it equals the copy count.
#pragma once

#include "guest/workload.h"

namespace vcpusim::guest {

class SpecintRate final : public Workload {
 public:
  struct Benchmark {
    const char* name;
    hv::Profile profile;
    double mem_intensity;
  };
  /// The 10 benchmarks of SPECrate 2017 Integer in suite order, with their model profiles.
  static const std::vector<Benchmark>& suite();
  static std::vector<sim::ParamSpec> param_specs();
  static std::unique_ptr<Workload> make(const sim::ParamValues& v);
  SpecintRate(std::uint32_t copies, double benchmark_ns);

  std::string_view kind() const override { return "specint-rate"; }
  std::uint32_t threads() const override { return copies_; }
  Step next(std::uint32_t thread, sim::RngStream& rng) override;
  std::string_view unit() const override { return "rate"; }
  std::optional<double> aggregate(const std::vector<double>& per_thread) const override;
  std::string_view study_metric() const override { return "throughput"; }

 private:
  static constexpr double kStepNs = 10e6;  ///< 10 ms: far below a benchmark, far above a slice
  std::uint32_t copies_;
  double benchmark_ns_;
  std::vector<double> done_ns_;  ///< per copy: reference work done in its current benchmark
  std::vector<std::uint32_t> bench_;  ///< per copy: index into suite()
};

}  // namespace vcpusim::guest
