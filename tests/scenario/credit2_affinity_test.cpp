// SPDX-License-Identifier: MIT
// Pins the credit2 affinity reproduction (configs/reproduce/credit2-affinity.yaml, calibration
// 004: sysbench 0.4 memory in 2, 6, 10 VMs of 2 vCPUs on two X5570, three affinity columns) at
// short duration, through the command a user runs. What it asserts is what the mail shows beyond
// its noise: in every column the 10-VM cell is far below the 2- and 6-VM cells (published: 21-25%
// below the 2-VM cell, 18-21% below the 6-VM one; three-run averages, no spread given, so only
// gaps of this size count). The 2-VM no-affinity cell is the calibration and must hold.
//
// Tolerances from the model: the workload has no random draws, so repetitions agree to within
// the steps cut at the ends of the measured interval (one 50 us step per thread over 1.5 s,
// < 0.1%); the calibration cell is held to 1% for that and the shorter warm-up.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli_support.h"

namespace vcpusim {
namespace {

using test::fresh_dir;
using test::Outcome;
using test::run;

TEST(Credit2Affinity, TenVmsFallFarBelowTwoAndSixInEveryColumn) {
  const std::string d = fresh_dir("credit2-affinity");
  const Outcome o = run("reproduce credit2-affinity --set duration=2s --set warmup=500ms --set repetitions=2 --out " +
                        d + " --json -");
  ASSERT_EQ(o.status, 0) << o.output;
  const auto j = nlohmann::json::parse(o.output.substr(o.output.find('{')));
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> cell;  // (row, column) -> (model, sd)
  for (const auto& c : j.at("cells"))
    cell[{c.at("row").get<std::string>(), c.at("column").get<std::string>()}] = {c.at("model").get<double>(),
                                                                                c.at("model_stddev").get<double>()};
  ASSERT_EQ(cell.size(), 9u);
  auto at = [&](const char* row, const char* col) { return cell.at({row, col}); };
  EXPECT_NEAR(at("2", "no-affinity").first, 417.01, 417.01 * 0.01);  // the calibration cell
  for (const char* col : {"no-affinity", "pinning", "numa-scheduling"}) {
    const auto [m2, s2] = at("2", col);
    const auto [m6, s6] = at("6", col);
    const auto [m10, s10] = at("10", col);
    // Below by more than 15% (the smallest published gap, 18%, less its rounding) and by more
    // than three run-to-run spreads.
    EXPECT_LT(m10, 0.85 * m2) << col;
    EXPECT_LT(m10, 0.85 * m6) << col;
    EXPECT_GT(m2 - m10, 3 * (s2 + s10)) << col;
    EXPECT_GT(m6 - m10, 3 * (s6 + s10)) << col;
  }
}

/// The reproduction's Hmean per cell, run with `extra` overrides.
std::map<std::pair<std::string, std::string>, double> cells(const std::string& name, const std::string& extra) {
  const Outcome o = run("reproduce credit2-affinity --set duration=600ms --set warmup=200ms --set repetitions=1 " +
                        extra + " --out " + fresh_dir(name) + " --json -");
  EXPECT_EQ(o.status, 0) << o.output;
  std::map<std::pair<std::string, std::string>, double> m;
  if (o.status != 0) return m;
  const auto j = nlohmann::json::parse(o.output.substr(o.output.find('{')));
  for (const auto& c : j.at("cells"))
    m[{c.at("row").get<std::string>(), c.at("column").get<std::string>()}] = c.at("model").get<double>();
  return m;
}

TEST(Credit2Affinity, PerEventStepsWithJitterKeepTheBatchedRowRatios) {
  // The reproduction runs sysbench 0.4 in steps of 11 events (50 us, guest/sysbench.h). Run one
  // event per step, with 10% event-time jitter so that no futex retry phase-locks (sysbench.h),
  // and the rows keep their ratios to the 2-VM row: both vCPUs of each VM stay busy either way,
  // so the rows differ by SMT sharing and steal, which the step size does not touch. Only the
  // per-event hand-offs (a guest switch per contended retry) change, and they scale every row
  // alike. The mutexes held 40% of each event (the reference note's figure, which the study
  // used before it took the sources' 2%): contended enough that without the jitter the 6-VM row
  // phase-locks (0.52 of the 2-VM row). Seen: 6/2 0.770 against 0.767, 10/2 0.515 against
  // 0.508; held to 3%. Only the pinning column: there hard affinity fixes which VMs share cores
  // (two VMs alone on cores, four on siblings, in both runs). In the other columns the wake-ups
  // place the vCPUs, and per-event steps, which block vCPUs briefly, can leave a VM with one
  // vCPU alone and one beside a busy sibling; under a mutex held 40% of each event that VM
  // runs at its slower vCPU's pace (294 MiB/s, where the two vCPUs alone would sum to about
  // 336), so the row moves with the placement, not with the step size.
  const std::string hot = "--set vms.db.workload.cs_frac=0.4";
  const auto batched = cells("c2a-batched", hot);
  const auto per_event = cells("c2a-per-event", hot + " --set vms.db.workload.events_per_step=1"
                                                      " --set vms.db.workload.event_cv=0.1");
  ASSERT_EQ(batched.size(), 9u);
  ASSERT_EQ(per_event.size(), 9u);
  for (const char* row : {"6", "10"}) {
    const double rb = batched.at({row, "pinning"}) / batched.at({"2", "pinning"});
    const double re = per_event.at({row, "pinning"}) / per_event.at({"2", "pinning"});
    EXPECT_NEAR(re, rb, 0.03 * rb) << row << " VMs";
  }
}

}  // namespace
}  // namespace vcpusim
