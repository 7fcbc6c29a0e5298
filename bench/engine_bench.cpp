// SPDX-License-Identifier: MIT
// Micro-benchmarks of the engine: the event queue's hold operation (pop the earliest event, push
// a successor) at several steady queue sizes, and a whole short default-scenario run.
#include <benchmark/benchmark.h>

#include "app/runner.h"
#include "app/scenario.h"
#include "sim/event_queue.h"
#include "sim/rng.h"

namespace {

void BM_EventQueueHold(benchmark::State& state) {
  using namespace vcpusim::sim;
  EventQueue q;
  RngStream rng(1);
  const auto n = static_cast<std::size_t>(state.range(0));
  q.reserve(n + 1);
  for (std::size_t i = 0; i < n; ++i) q.push(static_cast<Time>(rng.next_u64() % 1'000'000), Phase::kGuest, 0, 0, 0);
  for (auto _ : state) {
    Event e = q.pop();
    q.push(e.time + 1 + static_cast<Time>(rng.next_u64() % 1'000'000), e.phase(), e.kind, e.target, e.gen);
    benchmark::DoNotOptimize(e);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EventQueueHold)->Arg(64)->Arg(1024)->Arg(16384)->Arg(262144);

void BM_DefaultScenario1s(benchmark::State& state) {
  auto spec = vcpusim::app::load_default_scenario();
  spec.duration = vcpusim::sim::seconds(1);
  spec.warmup = vcpusim::sim::ms(100);
  spec.host.warmup = spec.warmup;
  std::uint64_t events = 0;
  for (auto _ : state) events += vcpusim::app::run_scenario(spec, 1).events;
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
}
BENCHMARK(BM_DefaultScenario1s)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
