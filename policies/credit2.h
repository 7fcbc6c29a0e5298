// SPDX-License-Identifier: MIT
// This file defines Credit2, the model of Xen's default scheduler (xen/common/sched/credit2.c):
// runqueues per core, socket (default), node, cpu or all, each ordering its runnable vCPUs by
// credit; credit burned at max_weight/weight per ns and reset per runqueue when the top credit
// runs out; slices from the credit gap; a context-switch rate limit; wake-up placement by
// runq_tickle(); load tracking and balance_load() between runqueues; per-VM caps. It is a class
// of its own because credit2's state (per-vCPU credit, per-runqueue lists and load, per-domain
// budget) is private to it, as Xen's alloc_{u,p,dom}data make it. credit2.cpp opens with the
// essay: design, parameters, invariants, what is not modelled.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <ostream>
#include <vector>

#include "hypervisor/policy_api.h"
#include "policies/credit2_runqueue.h"
#include "sim/params.h"
#include "sim/sim_time.h"
#include "topology/cpuset.h"

namespace vcpusim::policy {

namespace credit2 {

// Xen's constants and boot-parameter defaults (xen/common/sched/credit2.c unless noted), in ns.
/// CSCHED2_DEFAULT_WEIGHT: a domain's weight unless set (1..65535).
inline constexpr std::uint32_t kDefaultWeight = 256;
/// CSCHED2_CREDIT_INIT: credit at creation and the amount added at each reset, "so that
/// highest-weight VMs can only run for 10ms before a reset event".
inline constexpr std::int64_t kCreditInit = sim::ms(10);
/// CSCHED2_CREDIT_MIN: the floor; deeper undershoots are not tracked.
inline constexpr std::int64_t kCreditMin = -kCreditInit;
/// CSCHED2_IDLE_CREDIT: the idle vCPU's fixed credit, below any real vCPU's.
inline constexpr std::int64_t kIdleCredit = kCreditMin - 1;
/// CSCHED2_CREDIT_RESET: a runqueue resets when its top credit is at or below this.
inline constexpr std::int64_t kCreditReset = 0;
/// CSCHED2_MIN_TIMER: the shortest slice ("to achieve efficiency").
inline constexpr sim::Duration kMinTimer = sim::us(500);
/// CSCHED2_CARRYOVER_MAX (= CSCHED2_MIN_TIMER): credit kept above kCreditInit across a reset.
inline constexpr std::int64_t kCarryoverMax = kMinTimer;
/// CSCHED2_MAX_TIMER (= CSCHED2_CREDIT_INIT): the longest slice.
inline constexpr sim::Duration kMaxTimer = kCreditInit;
/// CSCHED2_MIGRATE_RESIST default (opt_migrate_resist = 500 us, sched_credit2_migrate_resist):
/// the credit lead a vCPU needs to move to, or be pulled onto, another pCPU.
inline constexpr sim::Duration kDefaultMigrateResist = sim::us(500);
/// CSCHED2_MIGRATE_COMPENSATION: credit given to a vCPU picked up by a pCPU other than its own.
inline constexpr std::int64_t kMigrateCompensation = sim::us(50);
/// CSCHED2_RATELIMIT_TICKLE_TOLERANCE: slack in is_preemptable()'s ratelimit test.
inline constexpr sim::Duration kRatelimitTickleTolerance = sim::us(50);
/// SCHED_DEFAULT_RATELIMIT_US (xen/common/sched/private.h): sched_ratelimit_us = 1000.
inline constexpr sim::Duration kDefaultRatelimit = sim::us(1000);
/// XEN_SYSCTL_SCHED_RATELIMIT_MIN/MAX (xen/include/public/sysctl.h): 100 us .. 500 ms.
inline constexpr sim::Duration kRatelimitMin = sim::us(100);
inline constexpr sim::Duration kRatelimitMax = sim::us(500'000);
/// CSCHED2_BDGT_REPL_PERIOD default (opt_cap_period = 10 ms, credit2_cap_period_ms).
inline constexpr sim::Duration kDefaultCapPeriod = sim::ms(10);
/// STIME_MAX as a vCPU's budget means "not capped" (csched2_alloc_udata, has_cap()).
inline constexpr std::int64_t kNoBudget = std::numeric_limits<std::int64_t>::max();
/// MAX_CPUS_RUNQ (sched_credit2_max_cpus_runqueue): the most pCPUs in one runqueue.
inline constexpr std::uint32_t kMaxCpusRunqueue = 16;
/// LOADAVG_GRANULARITY_SHIFT: load timestamps are ns >> 10.
inline constexpr unsigned kLoadavgGranularityShift = 10;
/// LOADAVG_WINDOW_SHIFT (credit2_load_window_shift): a 2^30 ns (~1.07 s) decaying window.
inline constexpr unsigned kLoadavgWindowShift = 30;
/// LOADAVG_PRECISION_SHIFT (credit2_load_precision_shift): Q18, a load of 1.0 is 2^18 ...
inline constexpr unsigned kLoadavgPrecisionShift = 18;
/// ... and LOADAVG_PRECISION_SHIFT_MIN, below which csched2_global_init() resets it.
inline constexpr unsigned kLoadavgPrecisionShiftMin = 4;
/// opt_underload_balance_tolerance (credit2_balance_under): below one vCPU of load per pCPU,
/// balance only for a load gap of 2^(18+0) = 1.0 vCPU.
inline constexpr int kBalanceUnder = 0;
/// opt_overload_balance_tolerance (credit2_balance_over): otherwise a gap of 2^(18-3) = 0.125.
inline constexpr int kBalanceOver = -3;

}  // namespace credit2

using sim::ParamSpec;
using sim::ParamValues;

class Credit2 final : public hv::SchedulerPolicy {
 public:
  /// Tunables, as Xen's boot parameters (credit2.cpp lists each with its Xen name).
  struct Config {
    credit2::RunqueueLayout runqueue = credit2::RunqueueLayout::kSocket;
    sim::Duration ratelimit = credit2::kDefaultRatelimit;          ///< 0: off
    sim::Duration migrate_resist = credit2::kDefaultMigrateResist;
    sim::Duration cap_period = credit2::kDefaultCapPeriod;
    std::uint32_t max_cpus_runqueue = credit2::kMaxCpusRunqueue;
    std::uint32_t load_window_shift = credit2::kLoadavgWindowShift;        ///< log2 of the window, ns
    std::uint32_t load_precision_shift = credit2::kLoadavgPrecisionShift;  ///< fractional bits of loads
    int balance_under = credit2::kBalanceUnder;  ///< log2 offset of the gap needed below full load
    int balance_over = credit2::kBalanceOver;    ///< log2 offset of the gap needed at full load
  };

  explicit Credit2(Config c);
  static std::vector<ParamSpec> param_specs();
  static std::unique_ptr<hv::SchedulerPolicy> make(const ParamValues& v);

  std::string_view name() const override { return "credit2"; }
  void attach(const hv::SchedContext& ctx) override;
  void insert_vcpu(hv::VcpuId v) override;
  hv::PcpuId pick_cpu(hv::VcpuId v, sim::Time now) override;
  void wake(hv::VcpuId v, sim::Time now) override;
  void sleep(hv::VcpuId v, sim::Time now) override;
  int yield(hv::VcpuId v, hv::VcpuId to, sim::Time now) override;
  hv::Pick pick_next(hv::PcpuId p, sim::Time now, const hv::PickFilter& f) override;
  void set_next(hv::PcpuId p, hv::VcpuId v, sim::Time now) override;
  sim::Duration committed_slice(hv::PcpuId p, hv::VcpuId v, sim::Duration picked, sim::Time now) override;
  void put_prev(hv::PcpuId p, hv::VcpuId prev, sim::Time now) override;
  void on_timer(hv::TimerId t, sim::Time now) override;
  /// Core scheduling's cross-sibling comparison: v's credit (ns). With core_wide, its credit
  /// less the best credit in its own runqueue, so runqueues at different points of their
  /// epochs compare (only matters with runqueue=cpu, where siblings have separate runqueues).
  double core_priority(hv::PcpuId p, hv::VcpuId v, hv::CorePrio how) const override;
  void dump(std::ostream& os) const override;

  // Read-only views, for tests and reports.
  const Config& config() const { return cfg_; }
  /// v's credit in ns (Xen's svc->credit), as of its last burn.
  std::int64_t credit(hv::VcpuId v) const { return vs_[v].credit; }
  std::uint32_t num_runqueues() const { return static_cast<std::uint32_t>(rqs_.size()); }
  std::uint32_t runqueue_of(hv::PcpuId p) const { return rq_of_[p]; }
  /// The runqueue v is assigned to (Xen's svc->rqd).
  std::uint32_t runqueue_of_vcpu(hv::VcpuId v) const { return vs_[v].rq; }
  const topo::CpuSet& runqueue_pcpus(std::uint32_t rq) const { return rqs_[rq].active; }
  /// Credit resets so far, over all runqueues.
  std::uint64_t resets() const { return resets_; }
  /// vCPUs balance_load() moved (or asked to move) to another runqueue.
  std::uint64_t balance_moves() const { return balance_moves_; }
  /// A runqueue's balancing load average (b_avgload), as a number of vCPUs.
  double b_avgload(std::uint32_t rq) const;
  std::uint32_t max_weight(std::uint32_t rq) const { return rqs_[rq].max_weight; }
  /// Whether v waits, off every runqueue, for its domain's budget.
  bool parked(hv::VcpuId v) const { return vs_[v].parked; }
  /// The budget left in a capped domain's pool (ns; may be negative after an overrun).
  std::int64_t domain_budget(hv::DomainId d) const { return ds_[d].budget; }

 private:
  /// Xen's struct csched2_unit.
  struct VcpuState {
    std::int64_t credit = 0;                 // ns of credit (CSCHED2_CREDIT_INIT at creation)
    std::uint32_t weight = 256;              // copied from Vcpu::weight, at least 1
    std::uint64_t residual = 0;              // remainder of the last t2c division
    sim::Time start_time = 0;                // credit burnt up to here (burn_credits)
    sim::Time dispatched_at = 0;             // Xen's unit->state_entry_time: last switch in
    std::int64_t avgload = 0;                // decaying load, Q(load_precision_shift)
    std::int64_t load_last_update = 0;       // in 2^10 ns units
    std::int64_t budget = 0;                 // ns left to run (kNoBudget: uncapped)
    std::int64_t budget_quota = 0;           // ns grabbed from the domain pool at a time
    hv::PcpuId processor = hv::kNoPcpu;      // Xen's v->processor (sched_unit_master)
    hv::PcpuId tickled_cpu = hv::kNoPcpu;    // pCPU tickled to pick it up (reservation)
    std::uint32_t rq = credit2::kNoRunqueue; // runqueue it is assigned to (svc->rqd)
    std::uint32_t migrate_rq = credit2::kNoRunqueue;  // target of a pending balance move
    bool on_runq = false;
    // Xen's CSFLAG_* and pause flags. Where each is set, cleared and read: credit2.cpp.
    bool scheduled = false;                  // CSFLAG_scheduled
    bool delayed_runq_add = false;           // CSFLAG_delayed_runq_add
    bool migrate_request = false;            // CSFLAG_runq_migrate_request (+ _VPF_migrating)
    bool yielded = false;                    // CSFLAG_unit_yield
    bool pinned = false;                     // CSFLAG_pinned: hard affinity is one pCPU
    bool parked = false;                     // _VPF_parked: no budget, off the runqueue
  };
  /// Xen's struct csched2_runqueue_data.
  struct Runqueue {
    topo::CpuSet active;                     // its pCPUs
    std::uint32_t nr_cpus = 0;
    hv::PcpuId pick_bias = 0;                // round-robin cursor over active
    credit2::VcpuList runq;                  // runnable, waiting, by credit descending
    credit2::VcpuList svc;                   // every vCPU assigned here, blocked ones too
    int load = 0;                            // runnable vCPUs, running ones included
    std::int64_t load_last_update = 0;       // in 2^10 ns units
    std::int64_t avgload = 0;                // decaying load, Q(load_precision_shift)
    std::int64_t b_avgload = 0;              // the same, adjusted by moves (for balancing)
    std::uint32_t max_weight = 1;            // max weight over svc, at least 1
  };
  /// Xen's struct csched2_dom (the cap part).
  struct DomainState {
    std::uint32_t cap = 0;                   // % of one pCPU, 0: uncapped
    std::uint32_t nr_units = 0;
    std::int64_t tot_budget = 0;             // ns per cap period
    std::int64_t budget = 0;                 // ns in the pool now (may be negative)
    sim::Time next_repl = 0;                 // next replenishment instant
    std::vector<hv::VcpuId> parked;          // parked_units (newest last), reserved at insert
  };
  /// What pick_next chose, for set_next to commit (Linux's pick_task / set_next_task split).
  struct Decision {
    bool valid = false;
    hv::VcpuId snext = hv::kIdle;
    hv::VcpuId requeued = hv::kIdle;         // the outgoing vCPU, if it goes back to the runq
    hv::VcpuId to_park = hv::kIdle;          // a queued vCPU found without budget: park at commit
  };

  // Accounting (credit2.cpp).
  void burn_credits(hv::VcpuId v, sim::Time now);
  void reset_credit(std::uint32_t rq, sim::Time now, hv::VcpuId snext);
  bool has_cap(hv::VcpuId v) const;
  bool grab_budget(hv::VcpuId v, bool defer_park, sim::Time now);
  void replenish(hv::DomainId d, sim::Time now);
  void park(hv::VcpuId v, sim::Time now);
  bool return_budget(hv::VcpuId v);
  void unpark_parked(hv::DomainId d, sim::Time now);
  // Runqueues and placement (credit2.cpp).
  void runq_insert(hv::VcpuId v);
  void runq_remove(hv::VcpuId v);
  void runq_tickle(hv::VcpuId v, sim::Time now);
  std::int64_t tickle_score(hv::VcpuId v, hv::PcpuId p, sim::Time now);
  void tickle_cpu(hv::PcpuId p);
  void smt_idle_set(hv::PcpuId p);
  void smt_idle_clear(hv::PcpuId p);
  bool runnable(hv::VcpuId v) const;
  bool has_soft(hv::VcpuId v) const { return has_soft_[v]; }
  topo::CpuSet soft_step_mask(hv::VcpuId v) const;
  Decision runq_candidate(hv::PcpuId p, hv::VcpuId scurr, sim::Time now, const hv::PickFilter& f);
  sim::Duration runtime(hv::PcpuId p, const Decision& d, sim::Time now) const;
  void context_saved(hv::VcpuId v, sim::Time now);
  void migrate_finish(hv::VcpuId v, sim::Time now);
  void flush_pending(hv::PcpuId p, sim::Time now);
  // Load tracking, balancing, placement across runqueues (credit2_load.cpp).
  void update_runq_load(std::uint32_t rq, int change, sim::Time now);
  void update_svc_load(hv::VcpuId v, int change, sim::Time now);
  void update_load(std::uint32_t rq, hv::VcpuId v, int change, sim::Time now);
  void runq_assign(hv::VcpuId v, std::uint32_t rq);
  void runq_deassign(hv::VcpuId v);
  void update_max_weight(std::uint32_t rq, std::uint32_t new_weight, std::uint32_t old_weight);
  hv::PcpuId res_pick(hv::VcpuId v);
  void balance_load(hv::PcpuId p, sim::Time now);
  void migrate(hv::VcpuId v, std::uint32_t trq, sim::Time now);
  bool migrateable(hv::VcpuId v, std::uint32_t rq) const;
  bool cookie_may_move(hv::VcpuId v, std::uint32_t rq) const;
  hv::PcpuId cycle_from(hv::PcpuId from, const topo::CpuSet& mask) const;

  Config cfg_;
  const hv::HypervisorView* hv_ = nullptr;
  hv::SchedActions* act_ = nullptr;
  unsigned load_window_shift_ = 20;  // in units of 2^kLoadavgGranularityShift ns, as prv->load_window_shift

  std::vector<VcpuState> vs_;
  std::vector<credit2::ListLinks> runq_links_, svc_links_;
  std::vector<bool> has_soft_;
  std::vector<Runqueue> rqs_;
  std::vector<std::uint32_t> rq_of_;
  std::vector<DomainState> ds_;
  // Per pCPU.
  std::vector<hv::VcpuId> curr_;             // Xen's curr_on_cpu(): set by set_next, cleared by put_prev
  std::vector<hv::VcpuId> pending_saved_;    // preempted vCPU whose context_saved waits for set_next
  std::vector<Decision> decision_;           // what pick_next chose, for set_next to commit
  std::vector<std::uint8_t> rebalanced_;     // set_next's balance_load moved a vCPU: re-slice
  std::vector<topo::CpuSet> sibling_mask_;   // SMT siblings in the same runqueue (csched2_pcpu)
  // Xen's per-runqueue masks, kept host-wide: runqueues partition the pCPUs, so rqd->idle is
  // idle_ & rqd->active, and so on.
  topo::CpuSet idle_, tickled_, smt_idle_;
  // smp_processor_id() of the hook running now: the pCPU a tickle of another one IPIs from.
  // Each hook that can tickle sets it; kNoPcpu (a cap replenishment timer, which Xen arms on
  // cpumask_any of the pool): every busy pCPU it tickles is remote.
  hv::PcpuId here_ = hv::kNoPcpu;
  std::vector<hv::VcpuId> unpark_scratch_;   // reserved at insert: unparking never allocates
  std::uint64_t resets_ = 0, balance_moves_ = 0;
};

}  // namespace vcpusim::policy
