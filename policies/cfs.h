// SPDX-License-Identifier: MIT
// This file defines Cfs, the model of the Linux Completely Fair Scheduler of a KVM host (every
// vCPU is a SCHED_OTHER host thread), as in the pre-EEVDF 5.x kernels that the published
// core-scheduling runs used (kernel/sched/fair.c of 5.4-5.9): per-pCPU runqueues ordered by
// vruntime, weights from the nice table, min_vruntime, sleeper placement, sched_slice and tick
// preemption, wake-up preemption with buddies, select_idle_sibling, fork placement, newly-idle,
// periodic and active load balancing over SMT / MC / DIE / NUMA domains, sched_yield and
// yield_to, and optionally one level of task groups (a cgroup per VM: group entities, group
// runqueues, calc_group_shares). It is a class of its own because CFS's state (per-entity vruntime, per-runqueue
// timelines, per-domain balancing state) is private to it, as struct sched_entity and struct
// cfs_rq are private to fair.c. cfs.cpp opens with the essay (design, parameters, invariants,
// what is not modelled); cfs_balance.cpp holds the domains, CPU selection and load balancing.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "hypervisor/policy_api.h"
#include "policies/cfs_timeline.h"
#include "sim/params.h"
#include "sim/sim_time.h"
#include "topology/cpuset.h"

namespace vcpusim::policy {

namespace cfs {

// The kernel's constants and sysctl defaults (kernel/sched/fair.c, core.c, topology.c of 5.x
// unless noted). Durations in ns. The three granularities are the *normalized* (unscaled)
// values; the policy multiplies them by the tunable-scaling factor at attach.
/// normalized_sysctl_sched_latency: the targeted preemption latency for CPU-bound tasks.
inline constexpr sim::Duration kLatency = sim::us(6000);
/// normalized_sysctl_sched_min_granularity: the least a task runs before tick preemption.
inline constexpr sim::Duration kMinGranularity = sim::us(750);
/// normalized_sysctl_sched_wakeup_granularity: the vruntime lead a wakee needs to preempt.
inline constexpr sim::Duration kWakeupGranularity = sim::us(1000);
/// sysctl_sched_migration_cost: a task that ran this recently is cache-hot (task_hot), and a
/// CPU whose average idle time is below it does not newly-idle balance (newidle_balance).
inline constexpr sim::Duration kMigrationCost = sim::us(500);
/// sched_nr_latency = DIV_ROUND_UP(latency, min_granularity): above this many runnable tasks
/// the period stretches to nr * min_granularity (__sched_period).
inline constexpr std::uint32_t kNrLatency = 8;
/// sysctl_sched_nr_migrate: the most tasks one load_balance pass examines (detach_tasks).
inline constexpr std::uint32_t kNrMigrate = 32;
/// NICE_0_LOAD (scale_load_down'ed): the weight of a nice-0 task; vruntime advances 1 ns per ns
/// at this weight (calc_delta_fair).
inline constexpr std::uint32_t kNice0Load = 1024;
/// SCHED_CAPACITY_SCALE: the capacity of one CPU (every hardware thread: smt_gain is gone since
/// 765d0af19f5f, 2018).
inline constexpr std::uint64_t kCapacityScale = 1024;
/// CONFIG_HZ=250 (a 4 ms tick): upstream's Kconfig default, built by Debian, Ubuntu and SUSE;
/// RHEL and Fedora build 1000 (guest_os.h GuestParams::hz cites the configs), set per scenario.
inline constexpr std::uint32_t kDefaultHz = 250;
/// sd->busy_factor (sd_init): a busy CPU balances 32x less often (16 from 5.10).
inline constexpr std::uint32_t kBusyFactor = 32;
/// sd->imbalance_pct (sd_init, 5.1-5.9): SMT 110, MC/LLC 117, DIE and NUMA 125 (117 from 5.10).
inline constexpr std::uint32_t kImbalancePctSmt = 110;
inline constexpr std::uint32_t kImbalancePctMc = 117;
inline constexpr std::uint32_t kImbalancePctDie = 125;
inline constexpr std::uint32_t kImbalancePctNuma = 125;
/// sd->cache_nice_tries (sd_init): failed balances before cache-hot tasks may move anyway.
inline constexpr std::uint32_t kCacheNiceTriesSmt = 0;
inline constexpr std::uint32_t kCacheNiceTriesMc = 1;
inline constexpr std::uint32_t kCacheNiceTriesDie = 1;
inline constexpr std::uint32_t kCacheNiceTriesNuma = 2;
/// RECLAIM_DISTANCE (include/linux/topology.h, node_reclaim_distance): NUMA levels farther
/// than this lose SD_BALANCE_FORK/EXEC and SD_WAKE_AFFINE (sd_init). AMD Zen sets 32
/// (arch/x86/kernel/cpu/amd.c, 5.4+).
inline constexpr std::uint32_t kReclaimDistance = 30;
/// NUMA_IMBALANCE_MIN (calculate_imbalance, 5.7+): a NUMA pair of groups is left alone while
/// the busiest runs at most this many tasks (communicating pairs stay local).
inline constexpr std::uint32_t kNumaImbalanceMin = 2;
/// MIN_SHARES: the smallest weight a group entity can have; CFS weights are clamped to it.
inline constexpr std::uint32_t kMinWeight = 2;
/// The largest CFS weight accepted (Vcpu::weight 65535 maps to 262140): keeps period * weight
/// and lead * weight within 64 bits.
inline constexpr std::uint32_t kMaxWeight = 1u << 20;
/// Xen's (and this simulator's) default Vcpu::weight, mapped onto NICE_0_LOAD.
inline constexpr std::uint32_t kVcpuWeightNice0 = 256;

/// sched_prio_to_weight[40] (kernel/sched/core.c), nice -20 .. 19; each step is ~1.25x.
inline constexpr std::uint32_t kPrioToWeight[40] = {
    88761, 71755, 56483, 46273, 36291,  // -20
    29154, 23254, 18705, 14949, 11916,  // -15
    9548,  7620,  6100,  4904,  3906,   // -10
    3121,  2501,  1991,  1586,  1277,   //  -5
    1024,  820,   655,   526,   423,    //   0
    335,   272,   215,   172,   137,    //   5
    110,   87,    70,    56,    45,     //  10
    36,    29,    23,    18,    15,     //  15
};

/// sysctl_sched_tunable_scaling: how the granularities grow with the number of CPUs.
enum class TunableScaling : std::uint8_t { kNone = 0, kLog = 1, kLinear = 2 };
/// How Vcpu::weight becomes a CFS weight.
enum class WeightMap : std::uint8_t {
  kLinear = 0,  ///< 1024 * weight / 256, as cgroup cpu.shares (libvirt <shares>): 256 = 1024
  kNice = 1,    ///< the nearest sched_prio_to_weight entry, as if the admin reniced the thread
};
/// Task groups (CONFIG_FAIR_GROUP_SCHED): where the host's cgroups put the entities.
enum class Cgroups : std::uint8_t {
  kNone = 0,       ///< every entity a task at the root (no cpu cgroups, or all in one)
  kPerDomain = 1,  ///< each VM, and each process of a bare-metal program, one cgroup under the
                   ///< root (libvirt's machine.slice/VM scope; a tagged process group); its weight
                   ///< is the group's cpu.shares, its tasks are nice 0 inside it
};

/// Scheduling-domain levels (kernel/sched/topology.c, default_topology + NUMA levels).
enum class LevelKind : std::uint8_t { kSmt, kMc, kDie, kNuma };

}  // namespace cfs

using sim::ParamSpec;
using sim::ParamValues;

class Cfs final : public hv::SchedulerPolicy {
 public:
  struct Config {
    sim::Duration latency = cfs::kLatency;                      ///< unscaled
    sim::Duration min_granularity = cfs::kMinGranularity;       ///< unscaled
    sim::Duration wakeup_granularity = cfs::kWakeupGranularity; ///< unscaled
    cfs::TunableScaling scaling = cfs::TunableScaling::kLog;
    sim::Duration migration_cost = cfs::kMigrationCost;
    std::uint32_t nr_migrate = cfs::kNrMigrate;
    std::uint32_t hz = cfs::kDefaultHz;
    std::uint32_t busy_factor = cfs::kBusyFactor;
    std::uint32_t reclaim_distance = cfs::kReclaimDistance;
    cfs::WeightMap weights = cfs::WeightMap::kLinear;
    cfs::Cgroups cgroups = cfs::Cgroups::kNone;
    bool gentle_fair_sleepers = true;   ///< sched_feat GENTLE_FAIR_SLEEPERS
    bool wakeup_preemption = true;      ///< sched_feat WAKEUP_PREEMPTION
    /// What the balancer and wake_affine read as a CPU's load and utilisation: PELT's averages
    /// (true, the default, as 3.11+ kernels) or the runqueue's instantaneous weights and busy
    /// state (false, as 3.10's rq->load.weight).
    bool pelt_balance = true;
  };

  explicit Cfs(Config c);
  Cfs(const Cfs&) = delete;
  Cfs& operator=(const Cfs&) = delete;
  static std::vector<ParamSpec> param_specs();
  static std::unique_ptr<hv::SchedulerPolicy> make(const ParamValues& v);

  std::string_view name() const override { return "cfs"; }
  void attach(const hv::SchedContext& ctx) override;
  void insert_vcpu(hv::VcpuId v) override;
  hv::PcpuId pick_cpu(hv::VcpuId v, sim::Time now) override;
  void wake(hv::VcpuId v, sim::Time now) override;
  void sleep(hv::VcpuId v, sim::Time now) override;
  int yield(hv::VcpuId v, hv::VcpuId to, sim::Time now) override;
  hv::Pick pick_next(hv::PcpuId p, sim::Time now, const hv::PickFilter& f) override;
  void set_next(hv::PcpuId p, hv::VcpuId v, sim::Time now) override;
  void put_prev(hv::PcpuId p, hv::VcpuId prev, sim::Time now) override;
  double core_priority(hv::PcpuId p, hv::VcpuId v, hv::CorePrio how) const override;
  std::optional<double> core_floor(hv::PcpuId p) const override { return static_cast<double>(rqs_[p].min_vruntime); }
  void on_timer(hv::TimerId t, sim::Time now) override;
  void dump(std::ostream& os) const override;

  // Read-only views, for tests and reports.
  const Config& config() const { return cfg_; }
  /// The scaled tunables in force (sysctl_sched_latency etc. after update_sysctl()).
  sim::Duration sched_latency() const { return latency_; }
  sim::Duration min_granularity() const { return min_gran_; }
  sim::Duration wakeup_granularity() const { return wakeup_gran_; }
  std::uint32_t nr_latency() const { return nr_latency_; }
  /// The tick period (1 s / hz): tick preemption and balancing happen on this grid.
  sim::Duration tick() const { return jiffy_; }
  /// v's CFS weight (load.weight): within its group's runqueue when it is in one.
  std::uint32_t weight(hv::VcpuId v) const { return ents_[v].weight; }
  /// Under `cgroups: per-domain`: the weight of v's group entity on pCPU p (calc_group_shares as
  /// last updated there), and v's share of its CPU's load (task_h_load). Without groups: v's weight.
  std::uint32_t group_weight(hv::VcpuId v, hv::PcpuId p) const;
  std::uint64_t task_h_load(hv::VcpuId v) const;
  /// What the balancer reads (cfs_balance.cpp): with `balance_load: pelt` (the default), p's PELT runnable load
  /// average (cpu_runnable_load, 5.1-5.6) and utilisation (cpu_util: running time of the tasks
  /// attached to p, blocked ones included, capped at capacity) and v's utilisation (task_util);
  /// otherwise p's summed runnable weights, capacity when busy else 0, and one CPU.
  std::uint64_t cpu_load(hv::PcpuId p) const;
  std::uint64_t cpu_util(hv::PcpuId p) const;
  std::uint64_t task_util(hv::VcpuId v) const;
  /// Under `cgroups: per-domain`: the load average of v's group runqueue on pCPU p as last
  /// updated (PELT's cfs_rq->avg.load_avg); 0 without groups.
  double group_avg(hv::VcpuId v, hv::PcpuId p) const;
  /// Whether p's scheduling group at level `level` + 1 is marked imbalanced (sgc->imbalance: a
  /// balance of p's level-`level` domain fell short for affinity); false at the top level.
  bool group_imbalanced(hv::PcpuId p, std::uint32_t level) const {
    return level + 1 < levels_.size() && group_imbalance_[levels_[level].span_of[p]] != 0;
  }
  /// v's vruntime (absolute, in the frame of the runqueue it is on or last slept on).
  std::int64_t vruntime(hv::VcpuId v) const { return ents_[v].vruntime; }
  /// The runqueue v is on (queued or running); kNoPcpu when blocked.
  hv::PcpuId runqueue_of(hv::VcpuId v) const { return ents_[v].on_rq ? ents_[v].rq : hv::kNoPcpu; }
  std::int64_t min_vruntime(hv::PcpuId p) const { return rqs_[p].min_vruntime; }
  /// The min_vruntime of the runqueue v sits on (its group's on v's pCPU, else the root's).
  std::int64_t leaf_min_vruntime(hv::VcpuId v) const;
  std::uint32_t nr_running(hv::PcpuId p) const override { return rqs_[p].nr_running; }
  std::optional<sim::Time> forced_idle_tick(hv::PcpuId p, std::uint32_t min_nr, sim::Time after) const override;
  /// sched_slice() of v on its runqueue (as if queued there).
  sim::Duration sched_slice(hv::VcpuId v) const;
  /// Number of scheduling-domain levels and the span of p's domain at level l.
  std::uint32_t num_levels() const { return static_cast<std::uint32_t>(levels_.size()); }
  cfs::LevelKind level_kind(std::uint32_t l) const { return levels_[l].kind; }
  const topo::CpuSet& domain_span(hv::PcpuId p, std::uint32_t l) const { return spans_[levels_[l].span_of[p]]; }
  /// Recomputes every derived structure (runqueue counts and loads, timelines, cfs_tasks lists,
  /// idle/overload masks, span sums, buddy marks) and returns the first inconsistency, or ""
  /// if there is none. For tests; O(entities + pCPUs x levels).
  std::string check_consistency() const;
  // Counters.
  std::uint64_t wakeup_preemptions() const { return wakeup_preemptions_; }
  std::uint64_t tick_preemptions() const { return tick_preemptions_; }
  std::uint64_t balance_migrations() const { return balance_migrations_; }   ///< periodic pulls
  std::uint64_t newidle_pulls() const { return newidle_pulls_; }
  std::uint64_t active_migrations() const { return active_migrations_; }
  std::uint64_t wake_migrations() const { return wake_migrations_; }
  /// wake_affine() calls (the waker's CPU differs from prev inside an SD_WAKE_AFFINE domain)
  /// and those that chose the waker's CPU (sd->ttwu_move_affine).
  std::uint64_t wake_affine_attempts() const { return wake_affine_attempts_; }
  std::uint64_t wake_affine_moves() const { return wake_affine_moves_; }
  /// record_wakee's state of v as a waker (tests).
  std::uint32_t wakee_flips(hv::VcpuId v) const { return ents_[v].wakee_flips; }
  std::uint64_t cookie_steals() const { return cookie_steals_; }

 private:
  static constexpr hv::VcpuId kNil = hv::kIdle;
  /// exec_start of an entity that has just migrated: "no longer consider this task hot".
  static constexpr sim::Time kLongAgo = -(sim::Time{1} << 60);
  static constexpr sim::Time kNoStamp = -1;

  /// struct sched_entity (the fields CFS reads), plus the cfs_tasks list links. Ids below
  /// num_vcpus are tasks (vCPUs); from there on, group entities: num_vcpus + g * pCPUs + p is
  /// group g's entity on pCPU p, on p's root runqueue while its group's runqueue there holds a
  /// task.
  struct Entity {
    std::int64_t vruntime = 0;          // ns of virtual time, nice-0 scale
    std::uint32_t weight = cfs::kNice0Load;  // load.weight
    sim::Duration sum_exec = 0;         // sum_exec_runtime
    sim::Duration prev_sum_exec = 0;    // sum_exec_runtime when last picked (set_next_entity)
    sim::Time exec_start = kLongAgo;    // last update_curr while running; task_hot reads it
    hv::PcpuId rq = hv::kNoPcpu;        // the pCPU whose cfs_rq it is on (meaningful while on_rq)
    hv::PcpuId last_rq = hv::kNoPcpu;   // the cfs_rq it last left (its vruntime's frame)
    bool on_rq = false;                 // queued or running (se->on_rq)
    // A task in a group: its own load average (se->avg.load_avg: its weight while on_rq, decayed
    // otherwise) as of pelt_stamp, and the pCPU whose group runqueue carries it (kNoPcpu: none
    // yet). It moves with the task (attach/detach_entity_load_avg).
    // With `balance_load: pelt` every root-level entity (task or group entity) keeps pelt too,
    // and every task its utilisation average (se->avg.util_avg: capacity while it runs, decayed
    // otherwise) and the pCPU it is attached to, which keeps it while blocked.
    double pelt = 0;
    sim::Time pelt_stamp = 0;
    hv::PcpuId pelt_rq = hv::kNoPcpu;
    double util = 0;
    sim::Time util_stamp = 0;
    hv::PcpuId util_rq = hv::kNoPcpu;
    bool forked = false;                // has been placed once (wake_up_new_task done)
    hv::VcpuId lru_prev = kNil, lru_next = kNil;  // rq->cfs_tasks, most recently picked first
    // Wake-up placement (task_struct fields, written when this entity WAKES another one).
    std::uint32_t wakee_flips = 0;      // record_wakee: switches of last_wakee, halved each second
    std::int64_t wakee_flip_decay_ts = 0;  // jiffies of the last halving
    hv::VcpuId last_wakee = kNil;
    hv::PcpuId recent_used_cpu = hv::kNoPcpu;  // set at fork, by its own affine wakes, by SIS
  };
  /// struct cfs_rq: a root runqueue's, or a group's on one pCPU.
  struct CfsRq {
    cfs::Timeline timeline;             // queued entities, curr excluded (tasks_timeline)
    hv::VcpuId curr = kNil;             // cfs_rq->curr: set at set_next, cleared at put_prev
    std::uint32_t nr = 0;               // cfs_rq->nr_running: on_rq entities, curr included
    std::uint64_t load = 0;             // sum of their weights (cfs_rq->load.weight)
    std::int64_t min_vruntime = 0;      // monotonic (update_min_vruntime)
    hv::VcpuId next = kNil, last = kNil, skip = kNil;  // buddies; see cfs.cpp
    // A group runqueue's load average (PELT's cfs_rq->avg.load_avg: its runnable weight, decayed
    // with a 32-period half-life) as of avg_stamp, and what it last told the group's sum
    // (tg_load_avg_contrib).
    double avg = 0;
    sim::Time avg_stamp = 0;
    std::uint64_t contrib = 0;
  };
  /// struct rq + its root struct cfs_rq (the base).
  struct Runqueue : CfsRq {
    std::uint32_t nr_running = 0;       // rq->nr_running: on_rq TASKS, at any level (h_nr_running)
    bool need_resched = false;          // TIF_NEED_RESCHED: the next pick is a full pick
    sim::Time armed_end = sim::kNever;  // the tick at which the current slice was armed to end
    hv::VcpuId lru_head = kNil, lru_tail = kNil;
    // Idle tracking (newidle_balance / ttwu_do_wakeup).
    sim::Time idle_stamp = kNoStamp;    // when it last went idle, until the next wake-up here
    sim::Duration avg_idle = 0;         // rq->avg_idle
    // Load balancing.
    bool active_balance = false;        // rq->active_balance: a push of curr is pending
    hv::PcpuId push_cpu = hv::kNoPcpu;  // rq->push_cpu
    std::int64_t next_balance = 0;      // rq->next_balance, in jiffies
    // PELT (balance_load: pelt), as of pelt_stamp: the runnable load average (the sum of the
    // queued root-level entities' own averages; runnable_load_avg), the utilisation average
    // (the sum of the attached tasks' own; util_avg) and the task it counts as running.
    double pelt_load = 0;
    double pelt_util = 0;
    sim::Time pelt_stamp = 0;
    hv::VcpuId running = kNil;
  };
  /// Per-CPU, per-level struct sched_domain state.
  struct DomainState {
    std::uint32_t balance_interval = 1; // ms
    std::int64_t last_balance = 0;      // jiffies
    std::uint32_t nr_balance_failed = 0;
  };
  /// A level of the domain hierarchy, the same for every CPU (degenerate spans allowed).
  struct Level {
    cfs::LevelKind kind = cfs::LevelKind::kSmt;
    std::uint32_t imbalance_pct = 125;
    std::uint32_t cache_nice_tries = 1;
    bool prefer_sibling = false;        // sds->prefer_sibling: the CHILD level has SD_PREFER_SIBLING
    bool numa = false;                  // SD_NUMA
    bool fork = true;                   // SD_BALANCE_FORK and SD_WAKE_AFFINE (sd_init clears both
                                        // beyond node_reclaim_distance; set on every other level)
    std::vector<std::uint32_t> span_of; // span id per pCPU
  };
  /// What pick_next chose, for set_next / put_prev to commit (pick_task vs set_next_task).
  /// How one load_balance() call at a level ended: its exit path sets the domain's failure
  /// counter and interval (apply_lb_exit), and may kick the busiest CPU's stopper. The periodic
  /// balancer applies it at once; newidle_balance's is decided at the pick and applied when it
  /// commits.
  enum class LbExit : std::uint8_t {
    kBalanced,   // out_balanced / out_all_pinned: nr_balance_failed = 0, the interval doubles
    kOnePinned,  // out_one_pinned (busiest's current task cannot come here): the interval doubles
    kMoved,      // pulled: nr_balance_failed = 0, interval = min
    kFailed,     // nothing moved, no active balance: interval = min (newidle does not count a failure)
    kActive,     // need_active_balance: nr_balance_failed = cache_nice_tries + 1, kick `kick`
  };
  /// What a balance does to its domain's group-imbalance flag one level up (sgc->imbalance).
  enum class GroupFlag : std::uint8_t { kKeep, kClear, kSet };
  struct LbOutcome {
    LbExit exit = LbExit::kBalanced;
    bool all_pinned = false;            // LBF_ALL_PINNED at the exit (the longer pinned interval)
    hv::PcpuId kick = hv::kNoPcpu;      // kActive: the stopper kicked (kNoPcpu: busiest already had one)
    GroupFlag group_flag = GroupFlag::kKeep;  // newidle_balance's, applied with its exits
  };
  /// newidle_balance's outcome at each level it visited, bottom-up.
  struct NewidleBalance {
    std::uint32_t levels = 0;           // levels visited; 0: newidle_balance did not run
    std::array<LbOutcome, 16> at{};
  };

  struct Decision {
    hv::VcpuId vcpu = kNil;
    bool keep = false;                  // curr continues: no set_next_entity, no new slice start
    bool picked = false;                // chosen by pick_next_entity (which clears its buddy marks)
    hv::VcpuId prev = kNil;             // the current entity when pick_next ran
    bool tick = false;                  // check_preempt_tick asked for a reschedule
    hv::VcpuId clear_buddies_of = kNil; // check_preempt_tick found this entity ran > ideal
    hv::PcpuId pull_from = hv::kNoPcpu; // vcpu is queued there: newly-idle pull at commit
    bool steal = false;                 // ... by core scheduling's cookie steal, not newidle
    hv::VcpuId push = kNil;             // active balance: move this entity to rq.push_cpu
    bool active_done = false;           // the stopper ran: clear rq.active_balance at commit
    bool restart = false;               // keep, but set_next_task restarts the slice (PickFilter::core)
    bool whole_switch = false;          // a switch by core scheduling's pick_next_task (own pick or
                                        // a sibling's core_pick): set_next_task at every level,
                                        // so a group entity that stays current restarts its slice
    sim::Duration slice = 0;
  };

  // Accounting and the timeline (cfs.cpp).
  static constexpr std::uint32_t kNoGroup = ~std::uint32_t{0};
  bool is_task(hv::VcpuId se) const { return se < nv_; }
  std::uint32_t group_of(hv::VcpuId v) const { return v < group_of_.size() ? group_of_[v] : kNoGroup; }
  hv::VcpuId gse_of(std::uint32_t g, hv::PcpuId p) const { return nv_ + g * np_ + p; }
  CfsRq& grq(std::uint32_t g, hv::PcpuId p) { return grqs_[g * np_ + p]; }
  const CfsRq& grq(std::uint32_t g, hv::PcpuId p) const { return grqs_[g * np_ + p]; }
  /// The cfs_rq entity se is (or would be) on when on pCPU p: its group's there, else p's root.
  CfsRq& cfs_rq_at(hv::VcpuId se, hv::PcpuId p);
  const CfsRq& cfs_rq_at(hv::VcpuId se, hv::PcpuId p) const;
  /// The root-level entity that stands for task v on pCPU p: its group's entity, or v itself.
  hv::VcpuId top_of(hv::VcpuId v, hv::PcpuId p) const;
  /// The group runqueue a group entity represents.
  const CfsRq& my_q(hv::VcpuId gse) const { return grqs_[gse - nv_]; }
  std::int64_t calc_delta_fair(sim::Duration delta, std::uint32_t weight) const;
  sim::Duration sched_period(std::uint32_t nr) const;
  sim::Duration slice_of(std::uint32_t nr, std::uint64_t load, std::uint32_t weight) const;
  sim::Duration wakeup_gran(hv::VcpuId se) const { return calc_delta_fair(wakeup_gran_, ents_[se].weight); }
  int wakeup_preempt_entity(hv::VcpuId curr, hv::VcpuId se) const;
  void update_curr(hv::PcpuId p, sim::Time now);
  void update_curr_entity(CfsRq& q, sim::Time now);
  void update_min_vruntime(CfsRq& q);
  void update_min_vruntime(hv::PcpuId p) { update_min_vruntime(rqs_[p]); }
  /// Task v joins / leaves p (rq->nr_running, the idle masks, span sums, cfs_tasks).
  void account_enqueue(hv::PcpuId p, hv::VcpuId v);
  void account_dequeue(hv::PcpuId p, hv::VcpuId v);
  /// account_entity_enqueue/dequeue on cfs_rq q (of pCPU p): nr, load; a root's load feeds the
  /// span sums.
  void account_entity(CfsRq& q, hv::PcpuId p, hv::VcpuId se, bool add);
  void set_nr_running(hv::PcpuId p, std::uint32_t nr);
  void lru_push_front(hv::PcpuId p, hv::VcpuId v);
  void lru_unlink(hv::PcpuId p, hv::VcpuId v);
  /// clear_buddies: the marks naming se on its cfs_rq, and upwards while they name its parents.
  void clear_buddies(hv::PcpuId p, hv::VcpuId se);
  /// set_next_buddy / set_last_buddy / set_skip_buddy: se's cfs_rq and every level above.
  void set_buddy(hv::PcpuId p, hv::VcpuId se, hv::VcpuId CfsRq::*mark);
  /// Task v (on_rq == false, vruntime in p's frame) joins p: its cfs_rq, and its group entity
  /// at p's root (placed as a waking entity) if the group had nothing there; then the group
  /// entity's weight (update_cfs_group).
  void enqueue_task(hv::PcpuId p, hv::VcpuId v, sim::Time now);
  /// Task v leaves p, to sleep (its vruntime stays absolute) or to migrate (it becomes relative
  /// to its runqueue's min_vruntime); its group entity leaves p's root with its last task.
  void dequeue_task(hv::PcpuId p, hv::VcpuId v, bool sleep, sim::Time now);
  /// update_load_avg + update_tg_load_avg for group g's runqueue on p: its average brought to
  /// now (under the load it held since the last update), and the group's sum told when it moved
  /// by more than 1/64.
  void update_group_avg(std::uint32_t g, hv::PcpuId p, sim::Time now);
  /// Task v (in a group) is being enqueued on p: its own average brought to now, and moved from
  /// the group runqueue that carried it to p's if that is another (migrate_task_rq_fair's
  /// remove_entity_load_avg / detach_entity_cfs_rq, then attach_entity_load_avg).
  void follow_task_avg(std::uint32_t g, hv::PcpuId p, hv::VcpuId v, sim::Time now);
  /// Task v's own load average brought to now, under the load it carried since its last update
  /// (its weight while queued, else 0).
  void age_task_avg(hv::VcpuId v, sim::Time now);
  /// balance_load: pelt. Bring p's averages to clock_ (before its load or running task
  /// changes), v's utilisation to clock_, and attach v's utilisation to p (taking it from the
  /// pCPU it was attached to: migrate_task_rq_fair's remove, attach_entity_load_avg).
  /// PELT's averages as they stand at t (>= their stamps), without storing them: an entity's
  /// load, a task's utilisation, a runqueue's runnable load and utilisation.
  double load_avg_at(const Entity& e, sim::Time t) const;
  double util_avg_at(hv::VcpuId v, sim::Time t) const;
  double rq_load_avg_at(hv::PcpuId p, sim::Time t) const;
  double rq_util_avg_at(hv::PcpuId p, sim::Time t) const;
  void pelt_age_rq(hv::PcpuId p);
  void pelt_age_util(hv::VcpuId v);
  void pelt_attach_util(hv::VcpuId v, hv::PcpuId p);
  void pelt_set_running(hv::PcpuId p, hv::VcpuId v);

  /// calc_group_shares + reweight_entity for group g's entity on p.
  void update_cfs_group(std::uint32_t g, hv::PcpuId p);
  /// The best queued entity of q (leftmost) that is neither a nor b; kNil if none.
  hv::VcpuId tree_best_except(const CfsRq& q, hv::VcpuId a, hv::VcpuId b) const;
  /// Whether se may be picked under filter f with `exclude` taken away (a group entity: whether
  /// its runqueue holds such a task; `curr_task` counts there if it is that runqueue's curr).
  bool pickable(hv::VcpuId se, hv::VcpuId curr_task, hv::VcpuId exclude, const hv::PickFilter& f) const;
  /// The best queued entity after `after` in timeline order (for the skip buddy), filtered.
  hv::VcpuId tree_second(const CfsRq& q, hv::VcpuId first, hv::VcpuId ex, hv::VcpuId curr_task, hv::VcpuId exclude,
                         const hv::PickFilter& f) const;
  hv::VcpuId tree_best_filtered(const CfsRq& q, hv::VcpuId ex, hv::VcpuId curr_task, hv::VcpuId exclude,
                                const hv::PickFilter& f) const;
  /// pick_next_entity(cfs_rq, curr) at one level with buddies; kNil if nothing is runnable.
  hv::VcpuId pick_level(const CfsRq& q, hv::PcpuId p, hv::VcpuId curr, hv::VcpuId curr_task, hv::VcpuId exclude,
                        const hv::PickFilter& f) const;
  /// pick_next_task_fair's walk: the task p would run (curr_task: its running task if still a
  /// candidate); kNil if nothing is runnable.
  hv::VcpuId pick_next_entity(hv::PcpuId p, hv::VcpuId curr_task, hv::VcpuId exclude, const hv::PickFilter& f) const;
  bool tick_preempts(hv::PcpuId p, hv::VcpuId& ran_past_slice) const;
  /// The earliest instant check_preempt_tick would fire for an entity with this state (its
  /// sched_slice `ideal`), or kNever.
  sim::Time preempt_due(sim::Time now, std::uint32_t nr, sim::Duration ideal, std::uint32_t weight,
                        sim::Duration ran, bool has_left, std::int64_t lead) const;
  /// sched_slice() of an on_rq entity se on p: its share of its cfs_rq's period, times its
  /// group entity's share of the root's load.
  sim::Duration entity_slice(hv::PcpuId p, hv::VcpuId se) const;
  /// pick_next's slice to arm with task groups (cfs.cpp).
  sim::Duration group_slice(hv::PcpuId p, hv::VcpuId se, const Decision& d, sim::Time now) const;
  sim::Time next_tick_at_or_after(sim::Time t, sim::Time now) const;
  sim::Duration keep_slice(hv::PcpuId p, sim::Time now) const;
  void maybe_rearm(hv::PcpuId p, sim::Time now);
  /// check_preempt_wakeup() of v on p's runqueue, run on CPU `from` (kNoPcpu: on p itself); a
  /// preemption of a remote p's current entity goes by reschedule IPI (resched_remote).
  void check_preempt_curr(hv::PcpuId p, hv::VcpuId v, sim::Time now, hv::PcpuId from = hv::kNoPcpu);
  hv::VcpuId running_curr(hv::PcpuId p) const;
  /// The task at the bottom of p's current entities, running or not (cfs_rq->curr chain).
  hv::VcpuId current_task(hv::PcpuId p) const;
  /// A group entity that is the root's current one goes back into the root's timeline.
  void put_back_top(hv::PcpuId p, sim::Time now);
  /// Moves a queued entity from src's timeline to dst's (detach_task + attach_task), re-based,
  /// then lets it preempt dst's current entity (check_preempt_curr) unless told not to.
  void move_queued(hv::VcpuId v, hv::PcpuId src, hv::PcpuId dst, sim::Time now, bool check_preempt = true);

  // Domains, CPU selection and balancing (cfs_balance.cpp).
  enum class IdleType : std::uint8_t { kNotIdle, kIdle, kNewlyIdle };  // enum cpu_idle_type
  enum class GroupType : std::uint8_t { kHasSpare = 0, kFullyBusy = 1, kImbalanced = 4, kOverloaded = 5 };
  enum class MigrationType : std::uint8_t { kLoad, kUtil, kTask };
  struct GroupStats {
    std::uint32_t span = 0;
    std::uint32_t weight = 0, nr = 0, idle = 0, busy = 0;
    std::uint64_t load = 0, util = 0, capacity = 0, avg_load = 0;
    GroupType type = GroupType::kHasSpare;
  };
  struct LbEnv {
    hv::PcpuId dst = hv::kNoPcpu;
    hv::PcpuId this_cpu = hv::kNoPcpu;  // the balancing CPU, whose domain is env->sd (dst until retargeted)
    std::uint32_t level = 0;
    IdleType idle = IdleType::kNotIdle;
    topo::CpuSet cpus;                  // env->cpus: CPUs still considered
    MigrationType type = MigrationType::kTask;
    std::int64_t imbalance = 0;
    std::uint32_t local_span = 0;       // dst's group (dst_grpmask)
    bool some_pinned = false;           // LBF_SOME_PINNED: a task could not come to dst for affinity
    bool dst_pinned = false;            // LBF_DST_PINNED: ... but could go to new_dst, of dst's group
    hv::PcpuId new_dst = hv::kNoPcpu;
  };
  void build_domains();
  void clear_group_imbalance(hv::PcpuId p, std::uint32_t l, const LbOutcome& out);
  void apply_group_flag(hv::PcpuId p, std::uint32_t l, const LbOutcome& out);
  std::uint8_t* group_imbalance_of(hv::PcpuId p, std::uint32_t l);
  hv::PcpuId select_idle_sibling(hv::VcpuId v, hv::PcpuId prev, hv::PcpuId target, const topo::CpuSet& allowed);
  void record_wakee(hv::VcpuId waker, hv::VcpuId p, sim::Time now);
  bool wake_wide(hv::VcpuId waker, hv::VcpuId p, hv::PcpuId this_cpu) const;
  hv::PcpuId wake_affine(std::uint32_t level, hv::VcpuId p, hv::VcpuId waker, hv::PcpuId this_cpu,
                         hv::PcpuId prev, bool sync);
  hv::PcpuId wake_affine_idle(hv::PcpuId this_cpu, hv::PcpuId prev, bool sync) const;
  hv::PcpuId wake_affine_weight(std::uint32_t level, hv::VcpuId p, hv::VcpuId waker, hv::PcpuId this_cpu,
                                hv::PcpuId prev, bool sync) const;
  hv::PcpuId find_idlest_cpu(hv::PcpuId this_cpu, const topo::CpuSet& allowed) const;
  bool find_idlest_group(std::uint32_t level, hv::PcpuId this_cpu, const topo::CpuSet& allowed,
                         std::uint32_t& group) const;
  hv::PcpuId find_idlest_group_cpu(const topo::CpuSet& group, const topo::CpuSet& allowed, hv::PcpuId this_cpu) const;
  static bool pick_busiest(const GroupStats& s, const GroupStats& busiest);
  void group_stats(std::uint32_t group, const topo::CpuSet& cpus, std::uint32_t pct, GroupStats& s) const;
  /// find_busiest_group + calculate_imbalance: the busiest group's span id, or none (false).
  bool find_busiest_group(LbEnv& env, std::uint32_t& busiest_span) const;
  hv::PcpuId find_busiest_queue(const LbEnv& env, std::uint32_t busiest_span) const;
  bool task_hot(hv::VcpuId v, hv::PcpuId src, hv::PcpuId dst) const;
  bool can_migrate(hv::VcpuId v, hv::PcpuId src, const LbEnv& env) const;
  /// The first entity detach_tasks would take from src (newly-idle, without moving it).
  hv::VcpuId first_detachable(LbEnv& env, hv::PcpuId src, const hv::PickFilter& f, bool& all_pinned) const;
  std::uint32_t detach_and_attach(LbEnv& env, hv::PcpuId src, bool& all_pinned, sim::Time now);
  int load_balance(hv::PcpuId p, std::uint32_t level, IdleType idle, bool& continue_balancing, sim::Time now);
  /// Newly-idle balancing for p, as a choice (entity and its runqueue) that set_next commits.
  bool newidle_choose(hv::PcpuId p, const hv::PickFilter& f, hv::VcpuId& v, hv::PcpuId& src, NewidleBalance& nb) const;
  void failed_exit(hv::PcpuId p, std::uint32_t level, hv::PcpuId busiest, LbOutcome& out) const;
  void apply_lb_exit(hv::PcpuId p, std::uint32_t level, const LbOutcome& out);
  /// Core scheduling's forced-newidle balancer: a queued entity of the filter's (non-zero) cookie
  /// that p may steal, and its runqueue; kNil if none.
  hv::VcpuId steal_cookie(hv::PcpuId p, const hv::PickFilter& f, hv::PcpuId& src) const;
  /// The entity the stopper would push off p (detach_one_task from the cfs_tasks tail).
  hv::VcpuId push_candidate(hv::PcpuId p) const;
  void rebalance_domains(hv::PcpuId p, sim::Time now);
  std::int64_t balance_interval_jiffies(const DomainState& d, bool busy) const;
  void arm_balance(hv::PcpuId p, std::int64_t next_balance_jiffies);
  void note_idle(hv::PcpuId p, sim::Time now);
  std::int64_t jiffies(sim::Time now) const { return now / jiffy_; }
  DomainState& dom(hv::PcpuId p, std::uint32_t l) { return dom_[p * levels_.size() + l]; }
  const DomainState& dom(hv::PcpuId p, std::uint32_t l) const { return dom_[p * levels_.size() + l]; }
  /// Span of the group p belongs to at level l (its child level's span, or {p} at level 0).
  std::uint32_t child_span(hv::PcpuId p, std::uint32_t l) const {
    return l == 0 ? single_span_[p] : levels_[l - 1].span_of[p];
  }

  Config cfg_;
  const hv::HypervisorView* hv_ = nullptr;
  hv::SchedActions* act_ = nullptr;
  sim::Duration latency_ = 0, min_gran_ = 0, wakeup_gran_ = 0;  // scaled
  std::uint32_t nr_latency_ = cfs::kNrLatency;
  sim::Duration jiffy_ = 0;
  std::int64_t max_lb_interval_ = 1;   // max_load_balance_interval, jiffies

  std::vector<Entity> ents_;             // tasks, then group entities
  std::vector<std::uint32_t> heap_pos_;  // shared by every runqueue's Timeline
  std::vector<Runqueue> rqs_;
  std::uint32_t nv_ = 0, np_ = 0;        // tasks (vCPUs), pCPUs
  // Task groups (cgroups: per-domain): one per domain that has tasks.
  std::vector<std::uint32_t> group_of_;  // by task: its group, or kNoGroup
  std::vector<CfsRq> grqs_;              // by group * pCPUs + pCPU
  std::vector<std::uint32_t> shares_;    // by group: tg->shares
  std::vector<std::uint64_t> tg_load_;   // by group: its runqueues' contributions summed (tg->load_avg)
  std::vector<Decision> decision_;
  std::vector<NewidleBalance> newidle_;  ///< per pCPU: the pending pick's newidle_balance, applied by set_next
  topo::CpuSet usable_;
  topo::CpuSet idle_;                  // usable CPUs with nr_running == 0 (available_idle_cpu)
  topo::CpuSet overloaded_;            // CPUs with nr_running >= 2 (rd->overload when any)
  topo::CpuSet idle_cores_;            // by CoreId: every usable thread idle
  std::vector<topo::CpuSet> llc_threads_;   // by pCPU: its LLC's usable threads
  std::vector<topo::CpuSet> llc_cores_;     // by pCPU: its LLC's cores (CoreId set)
  std::vector<topo::CpuSet> allowed_cores_; // by entity: cores with a thread in its hard affinity

  std::vector<Level> levels_;
  std::vector<topo::CpuSet> spans_;
  std::vector<std::uint32_t> single_span_;               // span id of {p}
  std::vector<std::vector<std::uint32_t>> groups_of_;    // by span id: its groups' span ids
  std::vector<DomainState> dom_;
  /// Per span: the sums group statistics need, kept up to date on every enqueue and dequeue
  /// (O(levels) per change), so a group costs O(1) to evaluate instead of O(its CPUs).
  struct SpanSums {
    std::uint32_t weight = 0;           // usable CPUs
    std::uint32_t nr = 0;               // sum of nr_running
    std::uint32_t idle = 0;             // CPUs with nr_running == 0
    std::uint64_t load = 0;             // sum of runqueue loads
  };
  std::vector<SpanSums> sums_;                           // by span id
  // By span id: sgc->imbalance of the sched_group that span is at the level above it, set when a
  // balance inside the span failed for affinity (LBF_SOME_PINNED) and cleared when one there
  // found balance; group_classify() then calls the group imbalanced.
  std::vector<std::uint8_t> group_imbalance_;
  std::vector<std::vector<std::uint32_t>> spans_with_;   // by pCPU: every span id containing it

  /// The CPU the wake-up being placed runs on (pick_cpu sets it, wake() takes it); kNoPcpu: local.
  hv::PcpuId wake_cpu_ = hv::kNoPcpu;
  /// The time of the call being served (set on entry to every call that carries one): PELT's
  /// averages are read and aged to it.
  sim::Time clock_ = 0;
  std::uint64_t wakeup_preemptions_ = 0, tick_preemptions_ = 0, balance_migrations_ = 0;
  std::uint64_t newidle_pulls_ = 0, active_migrations_ = 0, wake_migrations_ = 0, cookie_steals_ = 0;
  std::uint64_t wake_affine_attempts_ = 0, wake_affine_moves_ = 0;
};

}  // namespace vcpusim::policy
