// SPDX-License-Identifier: MIT
// The coresched-sysbench reproduction (configs/reproduce/coresched-sysbench.yaml, kernel-thread
// noise included; ../shared/calibration/001) at short duration: 2 s runs, 2 repetitions. What the model
// reproduces is pinned; what it does not (the ordering of the patch-set rows in the tagged
// configurations) is a disabled test that says so, to be enabled when it holds (README,
// "Reproductions").
//
// Tolerances come from the model's spread: in the cells pinned here (untagged, Alone, nosmt and
// the full patch set, whose tick fix re-picks every slice) the only randomness is the start
// order (a 1 ms jitter), the kernel threads' rare wake-ups (one per CPU every 2 s on average, 20
// us each: at most 0.1% of a 2 s run) and the sysbench step cut at the interval's end (one 1 ms
// step of 2 s: 0.05%), so the 10% is all model error, and 2 s gives the per-second figures of
// 30 s within that. The cells without a tick fix hold the core for seconds at a time and are
// not pinned at 2 s.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "app/reproduce.h"
#include "app/sweep_runner.h"

namespace vcpusim::app {
namespace {

struct Study {
  Reproduction r;
  ReproductionResult res;
  std::map<std::pair<std::string, std::string>, double> model;  // (row, column) -> mean (arithmetic, as the mail)
};

const Study& study() {
  static const Study s = [] {
    Study st;
    st.r = load_reproduction("coresched-sysbench", parse_command_line_sets("--set", {"duration=2s", "repetitions=2"}));
    std::vector<nlohmann::json> records;
    const std::vector<ScenarioSpec> specs = load_sweep_specs(st.r.plan);
    for (std::size_t t = 0; t < specs.size() * st.r.plan.repetitions; ++t)
      records.push_back(run_sweep_task(st.r.plan, specs[t / st.r.plan.repetitions], t));
    st.res = evaluate(st.r, records);
    for (const CellResult& c : st.res.cells) st.model[{c.pub.row, c.pub.column}] = c.model;
    return st;
  }();
  return s;
}

const std::vector<std::string> kTagged{"cpu-tagged", "mem-tagged", "both-tagged"};
const std::vector<std::string> kPatchSets{"aaron-full", "aaron-first-2", "aaron-3rd", "tim", "tim-sched"};

}  // namespace

// Alone and nosmt in every tag configuration, and every row without tags, within 10%: one task
// per thread or two on one thread, and untagged tasks that co-run freely, leave nothing to the
// variants.
TEST(CoreschedSysbench, UntaggedAndSingleThreadRowsWithinTenPercent) {
  for (const CellResult& c : study().res.cells) {
    if (c.pub.row != "Alone" && c.pub.row != "nosmt" && c.pub.column != "no-tag") continue;
    EXPECT_EQ(c.samples, 2u) << c.pub.row << "/" << c.pub.column;
    EXPECT_LE(std::fabs(c.diff_pct), 10.0) << c.pub.row << "/" << c.pub.column << ": model " << c.model;
  }
}

// The published ordering of Alone, nosmt and the untagged patch-set rows: Alone above every row,
// nosmt below every row (sysbench memory on the sibling costs less than sharing one thread).
TEST(CoreschedSysbench, NoTagOrderingAloneAboveSiblingsAboveNosmt) {
  const auto& m = study().model;
  for (const auto& row : kPatchSets) {
    EXPECT_GT(m.at({"Alone", "no-tag"}), m.at({row, "no-tag"})) << row;
    EXPECT_GT(m.at({row, "no-tag"}), m.at({"nosmt", "no-tag"})) << row;
  }
}

// Tagging different cookies costs every patch set with a forced-idle fix what the publication
// shows it costs Aaron's full patch set: in every tagged configuration the full patch set falls
// below its untagged figure to about nosmt (the core alternates between the two).
TEST(CoreschedSysbench, TaggingCostsTheFullPatchSetAboutNosmt) {
  const auto& m = study().model;
  for (const auto& col : kTagged) {
    EXPECT_LT(m.at({"aaron-full", col}), m.at({"aaron-full", "no-tag"})) << col;
    EXPECT_NEAR(m.at({"aaron-full", col}), m.at({"nosmt", col}), 0.03 * m.at({"nosmt", col})) << col;
  }
}

// NOT YET REPRODUCED (README, "Reproductions"): the published ordering of the patch-set rows in
// each tagged configuration, and each Average within 10%. Enable when it holds.
TEST(CoreschedSysbench, DISABLED_PublishedOrderingInEveryTagConfiguration) {
  for (const auto& [col, counts] : study().res.order_by_column)
    EXPECT_EQ(counts.first, counts.second) << col << ": " << counts.first << "/" << counts.second << " pairs in order";
  EXPECT_EQ(study().res.within, study().res.cells.size());
}

}  // namespace vcpusim::app
