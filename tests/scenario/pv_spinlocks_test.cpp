// SPDX-License-Identifier: MIT
// Pins the PV-spinlock study (configs/reproduce/pv-spinlocks.yaml, calibration 002) at the
// study's own duration, as scenarios a user writes: ebizzy as the study runs it (`kernel:
// arena-trim`, the calibrated `burst`) in 32-vCPU guests on the 32-core X7560 with HT off, a CFS
// host with PLE, plain ticket locks (base) against PV ticket locks (patched).
//
// At 1x no vCPU is preempted and lru_lock is held a few us at a time, so no PV waiter spins the
// 2^15 x 5 ns = 164 us it takes to halt, and both kinds run the same hand-overs: the gap must lie
// within the model's own run-to-run spread (three seeds; 3 standard errors of the base mean as
// measured here, with a floor of 0.1% of the mean for a model that happens to be
// seed-insensitive). The published 2x win (+21.5%, above its noise) is the disabled test below.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "app/runner.h"
#include "app/scenario.h"
#include "app/yaml_reader.h"

namespace vcpusim {
namespace {

app::ScenarioSpec ebizzy(std::uint32_t guests, const std::string& lock) {
  return app::load_scenario(app::YamlReader::load_string(R"(
name: pv-ebizzy
duration: 300ms
warmup: 100ms
topology: xeon-x7560-4s
host:
  smt: off
  scheduler: {policy: cfs, hz: 1000}
  ple: {enabled: true, grow: 0, tsc_ghz: 2.26}
guest: {hz: 1000}
vms:
  - name: guest
    count: )" + std::to_string(guests) + R"(
    vcpus: 32
    workload: {kind: ebizzy, threads: 64, kernel: arena-trim, burst: 4.633ms, lock: )" + lock + R"(}
)", "<pv_spinlocks_test>"));
}

struct Sample {
  std::vector<double> tp;
  double halts = 0;
};

Sample run(std::uint32_t guests, const std::string& lock) {
  const app::ScenarioSpec s = ebizzy(guests, lock);
  Sample out;
  for (std::uint32_t rep = 0; rep < 3; ++rep) {
    const auto m = app::run_scenario(s, app::repetition_seed(1, rep)).metrics();
    out.tp.push_back(m.at("vm.guest.throughput"));
    out.halts += m.at("vm.guest.halts_per_s");
  }
  return out;
}

double mean(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return s / static_cast<double>(x.size());
}

double stderr_of(const std::vector<double>& x) {
  const double m = mean(x);
  double ss = 0;
  for (double v : x) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(x.size() - 1) / static_cast<double>(x.size()));
}

TEST(PvSpinlocks, GapIsWithinNoiseAtOnceOvercommitOnEbizzy) {
  const Sample base = run(1, "ticket"), pv = run(1, "pvticket");
  EXPECT_EQ(pv.halts, 0.0);  // nobody waits 164 us for a lock held a few us at a time
  const double tol = 3.0 * std::max(stderr_of(base.tp), 1e-3 * mean(base.tp) / 3.0);
  EXPECT_NEAR(mean(pv.tp), mean(base.tp), tol);
}

// NOT YET REPRODUCED since the PLE scan has 3.10's vcpu->preempted test (hypervisor/ple.h): a
// PV waiter kicked awake is Runnable but not preempted until it runs, so spinners' exits can no
// longer boost it, and the model's PV now loses at 2x (reproduction: Hmean -20.1%, 3 seeds;
// this test's run: -567 records/s against 3 standard errors of 234; -31.6% since ebizzy's locks
// halt their waiters with interrupts off and the host places wake-ups by their waker, README
// "The PV-spinlock study": a convoy; -24.5% with host and guests at HZ=1000, since no tick
// ends a halt taken with interrupts off; `kick_wait_us` shows the wait). Before the
// filter the model won by about +5% over five seed sets. Enable when PV wins again without
// tuning.
TEST(PvSpinlocks, DISABLED_PvBeatsTicketAtTwiceOvercommitOnEbizzy) {
  const Sample base = run(2, "ticket"), pv = run(2, "pvticket");
  EXPECT_GT(pv.halts, 0.0);  // the win comes with waiters that halted
  EXPECT_GT(mean(pv.tp) - mean(base.tp), 3.0 * std::hypot(stderr_of(base.tp), stderr_of(pv.tp)));
}

}  // namespace
}  // namespace vcpusim
