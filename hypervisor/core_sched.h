// SPDX-License-Identifier: MIT
// This file defines the switches of core scheduling, a mechanism of the hypervisor core (as
// Linux kernel/sched/core.c's pick_next_task under sched_core_enabled), and the named presets
// that stand for the 2019-2020 patch sets benchmarked on the lists (reference:
// ../shared/reference/linux-core-scheduling.md sections 2 and 3). The mechanism itself is
// Host::core_schedule() in core_sched.cpp.
//
// The mechanism: whenever a pCPU reschedules, the policy is asked (pick_next, no commit) for the
// best entity of EVERY SMT sibling; the highest by SchedulerPolicy::core_priority (per `compare`)
// sets the core cookie; every sibling then runs only an entity with that cookie (a filtered
// re-pick) or goes forced idle. Cookie 0 (untagged) matches only cookie 0. A core with no tagged
// entity running and an untagged pick takes the fast path (no sibling is touched), as mainline.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/sim_time.h"

namespace vcpusim::hv {

struct CoreSchedParams {
  bool enabled = false;

  /// How the candidates of different siblings are compared (the `cmp` column of section 3).
  enum class Compare : std::uint8_t {
    kNaive,       ///< core_priority(kRaw): raw per-runqueue value (of the root-level entity).
                  ///< Stands for Aaron Lu's core-wide root min_vruntime (RFC v4/v5, csc_vruntime),
                  ///< which makes raw vruntimes of siblings comparable on one base
                  ///< (cmp=core_min_vruntime).
    kCoreWide,    ///< core_priority(kLeaf): lag behind the candidate's own (leaf) runqueue's
                  ///< floor; RFC v3's leaf normalisation (cmp=v3_leaf_norm); one task per CPU
                  ///< ties at ~0.
    kFiSnapshot,  ///< mainline 5.14 min_vruntime_fi: core_priority(kCore), the lag where the
                  ///< candidates' hierarchies meet, outside forced idle; during an episode,
                  ///< kRaw plus the policy's core_floor frozen when the episode began (or first
                  ///< compared in it), so each side keeps its starting lag and adds its progress;
                  ///< a policy without a floor compares the progress (kRaw) since the episode
                  ///< began, so the runner loses at the next core-wide pick (cmp=fi_snapshot).
    kFiTime,      ///< Tim Chen #1 (Jul 2019): forced-idle time of a pCPU is added to its
                  ///< candidates' priority (kCore) and consumed by running
                  ///< (cmp=fi_time_in_min_vruntime).
    kFiBudget,    ///< Tim Chen #2 (Aug 2019): per-pCPU idle allowance (fi_allowance, 5 ms),
                  ///< consumed by running while a sibling is forced idle, refilled when all are
                  ///< exhausted; different cookies compare allowance, more left wins (cmp=fi_budget).
  };
  Compare compare = Compare::kFiSnapshot;

  /// Equal priorities between an untagged max and a tagged candidate (section 3, stall fix).
  enum class Tie : std::uint8_t {
    kPreferMax,     ///< the max so far (this CPU first) stays: CORESCHED_STALL_FIX, mainline.
    kPreferTagged,  ///< RFC v3 pick_task: a tagged pick of equal priority replaces an untagged max.
  };
  Tie tie = Tie::kPreferMax;

  /// What ends a forced-idle episode besides ordinary scheduling events on the core: a core-wide
  /// re-pick on the running sibling, rescheduled by its tick (section 2.6). When is the policy's
  /// rule (SchedulerPolicy::forced_idle_tick: CFS counts the task's own sched_slice since its
  /// set_next_entity, at ticks); a policy without one gets fi_slice from the core-wide pick.
  enum class Tick : std::uint8_t {
    kNone,       ///< RFC v3: nothing; a lone runner may keep its sibling idle indefinitely.
    kFullSlice,  ///< Aaron's 3rd patch (tick check with one task), v4 resched_forceidle_sibling:
                 ///< re-pick once the runner used its slice (fi_slice).
    kHalfSlice,  ///< mainline task_tick_core: re-pick once it used half (fi_slice / 2).
  };
  Tick tick = Tick::kHalfSlice;
  /// For policies without their own rule (rr, credit2): the slice a lone CFS task gets (24 ms:
  /// 6 ms latency scaled x4 on >= 8 CPUs).
  sim::Duration fi_slice = 24'000'000;
  /// Tim's SCHED_IDLE_ALLOWANCE (kFiBudget only).
  sim::Duration fi_allowance = 5'000'000;

  /// Cookie-aware wake-up placement (Aubrey Li, RFC v5+, mainline 5.14): the idle-CPU scan of a
  /// policy's pick_cpu skips CPUs whose core runs another cookie (HypervisorView::
  /// wake_cookie_match answers false for them).
  bool wake_cookie_aware = false;

  /// Cookie-aware load balancing.
  enum class Balance : std::uint8_t {
    kBlind,   ///< RFC v3/v4: load only.
    kRefuse,  ///< RFC v5-v9 can_migrate_task: a pull onto a core running another cookie is refused
              ///< outright (HypervisorView::balance_cookie_match answers false).
    kHot,     ///< mainline task_hot: a mismatch counts as cache-hot (overridable after failed
              ///< balances, ignored between SMT siblings). balance_cookie_match answers false;
              ///< a policy modelling nr_balance_failed may override it (credit2 keeps
              ///< no such count and refuses, per runqueue: credit2_load.cpp migrateable).
  };
  Balance balance = Balance::kBlind;

  /// Cookies from a scenario: every VM its own (per-vm), every bare-metal task its own
  /// (per-task; VMs still one per VM), or all untagged (none). Read by app/ only.
  enum class Cookies : std::uint8_t { kPerVm, kPerTask, kNone };
  Cookies cookies = Cookies::kPerVm;
};

/// Names of the presets, in documentation order.
const std::vector<std::string_view>& core_sched_presets();
/// The switch set of a preset (enabled = true); nullopt for an unknown name. Presets:
///   csc           RFC v3 as benchmarked (Desfossez, Faggioli "csc"): core_wide, prefer_tagged,
///                 no tick fix, cookie-blind placement and balancing.
///   csc-stallfix  csc + CORESCHED_STALL_FIX (Jun 2019): ties keep the untagged max.
///   csc-vruntime  Aaron's first 2 patches ("wrapper for cfs_rq->min_vruntime", "core vruntime
///   aaron-first-2 comparison", 25 Jul 2019) on v3: naive (core-wide min_vruntime), no tick fix.
///   aaron-3rd     Aaron's 3rd patch alone ("temp hack to make tick based schedule happen"):
///                 csc + full-slice re-pick.
///   aaron-full    all three: naive + full-slice re-pick.
///   tim           Tim Chen's first patch set (26 Jul 2019): fi_time, no tick fix.
///   tim-sched     tim + Aaron's tick hack (full-slice re-pick).
///   csc-tim       Aaron's push of Tim's branch (coresched-v3-v5.1.5-test-tim): fi_budget (5 ms),
///                 "probable" per the reference; re-pick when the runner's allowance is spent.
///   v4            RFC v4 (Oct 2019): naive (core min_vruntime), resched_forceidle_sibling.
///   v5            RFC v5 (Mar 2020): v4 + cookie-aware wake-up + refusing balancer.
///   mainline      5.14+: fi_snapshot, stall fix, task_tick_core, cookie-aware wake-up, cache-hot.
std::optional<CoreSchedParams> core_sched_preset(std::string_view name);

std::string_view to_string(CoreSchedParams::Compare c);
std::string_view to_string(CoreSchedParams::Tie t);
std::string_view to_string(CoreSchedParams::Tick t);
std::string_view to_string(CoreSchedParams::Balance b);

}  // namespace vcpusim::hv
