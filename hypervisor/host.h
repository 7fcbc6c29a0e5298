// SPDX-License-Identifier: MIT
// This file defines Host, the hypervisor core: the pCPUs, domains and entities, the event loop,
// the execution-rate model applied to running entities, and the dispatcher, which is the only
// caller of the SchedulerPolicy hooks and checks every decision they make.
//
// Invariants checked by the framework (a violation throws InvariantViolation naming the rule,
// the entity, the pCPU and the time):
//   hard-affinity   an entity runs, or is assigned, only inside its hard affinity;
//   one-per-thread  an entity runs on at most one pCPU, a pCPU runs at most one entity;
//   runnable-pick   a policy picks only Runnable entities (or keeps the current Running one);
//   usable-thread   nothing runs on a thread disabled by nosmt;
//   cookie-compatible  under core scheduling, never two different cookies running on one core
//                   at the same instant (checked after every core-wide pick, which commits
//                   every sibling of the core at one instant; see core_sched.cpp);
//   ple-same-vm     a pause-loop exit yields only to a Runnable vCPU of the spinner's own VM
//                   (ple.h, checked in dispatcher.cpp ple_yield);
//   one-unit-per-core, unit-together  under core-granular co-scheduling (sched_unit.h), a core
//                   runs vCPUs of one unit only, and a unit's vCPUs run exactly while it holds a
//                   core (checked after every core decision and thread-local switch);
//   cpu-conserved   at the end, entity run time equals pCPU busy time, and every entity's
//                   running + runnable + blocked time equals the elapsed time.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "hypervisor/core_sched.h"
#include "hypervisor/cpuidle.h"
#include "hypervisor/entity.h"
#include "hypervisor/exec_model.h"
#include "hypervisor/halt_poll.h"
#include "hypervisor/ple.h"
#include "hypervisor/policy_api.h"
#include "hypervisor/sched_unit.h"
#include "hypervisor/trace_sink.h"
#include "hypervisor/workload_api.h"
#include "sim/event_queue.h"
#include "sim/rng.h"
#include "topology/topology.h"

namespace vcpusim::hv {

struct HostSpec {
  bool smt = true;            ///< false: nosmt, only the first thread of each core is usable
  ExecParams exec;
  sim::Duration warmup = 0;   ///< accounting restarts here; guests count results from here
  CoreSchedParams core_sched; ///< core scheduling (enabled = false: off)
  PleParams ple;              ///< pause-loop exiting (enabled = false: off; ple.h)
  HaltPollParams halt_poll;   ///< KVM halt polling (enabled = false: off; halt_poll.h)
  CpuidleParams cpuidle;      ///< idle states and the menu governor (no states: off; cpuidle.h)
  SchedGranParams sched_gran; ///< Xen sched-gran=core units (core = false: per-vCPU scheduling)
  /// KVM 5.3+: a PV kick (KVM_HC_KICK_CPU) also yields the kicker to the kicked vCPU when that is
  /// `ready` (woken, not yet run): Wanpeng Li's "KVM: X86: Boost queue head vCPU to mitigate lock
  /// waiter preemption" (commit 266e85a5ec91, 2019-07-24, in 5.3; kvm_sched_yield in
  /// arch/x86/kvm/x86.c). false: 3.10-5.2, which only wake it (Host::kick_cpu).
  bool kick_boost = false;
};

struct DomainSpec {
  std::string name;
  bool bare_metal = false;
  std::uint32_t vcpus = 1;
  std::uint32_t weight = 256;
  std::uint32_t cap_pct = 0;  ///< % of one pCPU the whole domain may use (0 = uncapped)
  std::uint64_t cookie = 0;
  /// Per-entity cookies (core scheduling per task; empty: every entity has `cookie`).
  std::vector<std::uint64_t> cookies;
  /// Per-entity process of a bare-metal program of several processes (empty: one process).
  std::vector<std::uint32_t> processes;
  /// Per-entity hard and soft affinity (size vcpus; empty: every usable thread).
  std::vector<topo::CpuSet> hard, soft;
  /// Share of memory per node (size nodes, sums to 1; empty: all on node 0).
  std::vector<double> memory_on_node;
  /// Bytes of cache its entities refill after a migration (Workload::cache_footprint_bytes);
  /// 0: ExecParams::cold_footprint_bytes, the default window.
  double cache_footprint = 0;
};

class InvariantViolation : public std::runtime_error {
 public:
  InvariantViolation(std::string rule, VcpuId v, PcpuId p, sim::Time t, const std::string& detail);
  std::string rule;
  VcpuId vcpu;
  PcpuId pcpu;
  sim::Time time;
};

/// Accounting of one entity over the measured interval.
struct VcpuStats {
  sim::Duration running = 0, runnable = 0, blocked = 0;
  double remote_run = 0;  ///< running time weighted by the share of memory off its node (ns)
  /// Running time during which another entity ran on a sibling thread of its core: the time it
  /// ran at an SMT co-run factor rather than alone (exec_model.h). 0 without SMT.
  sim::Duration smt_shared = 0;
  std::uint64_t migrations = 0, context_switches = 0, wakeups = 0;
};

using NodeIdx = std::uint32_t;

class Host final : public HypervisorView, public SchedActions, public GuestPort {
 public:
  Host(const topo::Topology& topo, HostSpec spec, std::unique_ptr<SchedulerPolicy> policy,
       std::uint64_t seed);
  ~Host() override;
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  /// Adds a domain before start(); `guest` receives its notifications (not owned).
  DomainId add_domain(const DomainSpec& spec, GuestHooks* guest);
  /// Attaches the policy and inserts every entity (blocked). Guests start after this.
  void start();
  /// Processes every event up to and including `end`; the clock then stands at `end`. Throws
  /// std::logic_error past the horizon.
  void run_until(sim::Time end);
  /// Promises that run_until() never goes past `h` (the run's end), so a work completion later
  /// than that is not queued: an unbounded spin's completion, 11 days away and replaced long
  /// before it falls due, would otherwise stay in the queue for good, one per spin, and a long
  /// run of spinning guests grew by megabytes a simulated second. Default: no horizon.
  void set_horizon(sim::Time h) { horizon_ = h; }
  /// Checks cpu-conserved over the whole run so far; throws InvariantViolation.
  void check_conservation() const;

  // Results over the measured interval [warmup, now].
  VcpuStats vcpu_stats(VcpuId v) const;
  sim::Duration pcpu_busy(PcpuId p) const;
  sim::Duration measured() const { return now_ - measure_from_; }
  std::uint64_t events_processed() const { return events_; }
  /// Bandwidth (MB/s) the running work asks of node n now (for reports and tests).
  double bandwidth_load(NodeIdx n) const { return node_load_[n]; }
  std::uint64_t events_stale() const { return stale_; }
  /// Events queued now, live or stale (tests: the queue stays bounded in a long run).
  std::size_t events_pending() const { return queue_.size(); }
  // Core scheduling results over the measured interval (0 when it is off).
  /// Time pCPU p spent forced idle (idle while the policy had a runnable entity for it).
  sim::Duration pcpu_forced_idle(PcpuId p) const;
  /// Time a sibling idled while an entity of domain d was refused by the core-wide pick.
  /// Under core-granular units (sched_unit.h) both figures are the idle-in-unit time instead: a
  /// thread held idle by a unit of d whose vCPU for it is blocked or absent.
  sim::Duration domain_forced_idle(DomainId d) const;
  /// Forced idle charged to domain d's running entities as Linux 5.17+ charges it
  /// (core_forceidle_sum): each stretch between core-wide picks, the siblings' forced-idle time
  /// split evenly over the entities running beside them. Core scheduling (cookies) only.
  sim::Duration domain_forced_idle_caused(DomainId d) const;
  /// Core-granular units (null when scheduling is per vCPU), and the core decisions taken so
  /// far, each a rendezvous of the core's threads.
  const UnitView* units() const { return units_.get(); }
  std::uint64_t rendezvous() const { return rendezvous_; }
  const CoreSchedParams& core_sched() const { return spec_.core_sched; }
  /// Pause-loop exiting counters of domain d over the measured interval (zeros when off).
  const PleStats& ple_stats(DomainId d) const { return ple_.stats(d); }
  /// Halt-polling counters of domain d over the measured interval (zeros when off).
  const HaltPollStats& halt_poll_stats(DomainId d) const { return poll_stats_[d]; }
  /// Idle-state exits over the measured interval (cpuidle.h; zero with no idle states).
  const CpuidleStats& cpuidle_stats() const { return idle_stats_; }
  /// vCPU v's current PLE window in cycles (tests).
  std::uint32_t ple_window(VcpuId v) const { return ple_.window(v); }
  /// Whether v is inside KVM's PLE handler (in_spin_loop; tests).
  bool ple_in_spin_loop(VcpuId v) const { return ple_.in_spin_loop(v); }
  /// Whether v is marked preempted (vcpu->preempted: scheduled out Runnable, not run since; tests).
  bool ple_preempted(VcpuId v) const { return ple_.preempted(v); }
  /// Number of core-wide picks (the slow path, siblings asked) so far.
  std::uint64_t core_picks() const { return core_picks_; }
  SchedulerPolicy& policy() { return *policy_; }
  /// Attach an observer (not owned; nullptr detaches). See trace_sink.h.
  void set_trace(TraceSink* sink) { trace_ = sink; }
  /// Let observers mark an instant (guests and mechanisms use it; no-op without a sink).
  void trace_instant(std::string_view what, VcpuId v) {
    if (trace_) trace_->instant(what, v, vcpus_[v].pcpu, now_);
  }

  // HypervisorView
  const topo::Topology& topology() const override { return topo_; }
  const Vcpu& vcpu(VcpuId v) const override { return vcpus_[v]; }
  const Pcpu& pcpu(PcpuId p) const override { return pcpus_[p]; }
  const Domain& domain(DomainId d) const override { return domains_[d]; }
  std::uint32_t num_vcpus() const override { return static_cast<std::uint32_t>(vcpus_.size()); }
  std::uint32_t num_domains() const override { return static_cast<std::uint32_t>(domains_.size()); }
  const topo::CpuSet& usable_pcpus() const override { return usable_; }
  const topo::CpuSet& idle_pcpus() const override { return idle_; }
  sim::Time now() const override { return now_; }
  bool wake_cookie_match(PcpuId p, VcpuId v) const override;
  bool balance_cookie_match(PcpuId p, VcpuId v) const override;
  WakeSource wake_source() const override { return wake_src_; }

  // SchedActions
  void tickle(PcpuId p) override;
  void resched_remote(PcpuId p) override;
  void arm_timer(TimerId t, sim::Time when) override;
  void cancel_timer(TimerId t) override;
  void runqueue_grew(PcpuId p) override;
  void runqueue_fell_to_one(PcpuId p) override;

  // GuestPort
  /// The end of warm-up, known from the start: guests ask it during warm-up to decide not to
  /// count results yet, before measure_from_ itself moves there.
  sim::Time measure_from() const override { return spec_.warmup; }
  void set_work(VcpuId v, double work_ref_ns, Profile profile, double mem_intensity,
                double bandwidth_mbps = 0.0, bool user_mode = false) override;
  sim::Time stall(VcpuId v, sim::Duration d) override;
  void halt(VcpuId v) override;
  void kick(VcpuId v) override;
  Waker waker(VcpuId w) const override;
  void kick_from(VcpuId v, Waker by, bool sync) override;
  void kick_cpu(VcpuId v, Waker by) override;
  /// A vCPU polling in KVM's halt path is halted to its guest (halt_poll.h).
  bool is_running(VcpuId v) const override { return vcpus_[v].state == Runstate::kRunning && !vcpus_[v].polling; }
  bool is_blocked(VcpuId v) const override { return vcpus_[v].state == Runstate::kBlocked || vcpus_[v].polling; }
  bool steal_time_preempted(VcpuId v) const override {
    return ple_.preempted(v) && vcpus_[v].state == Runstate::kRunnable;
  }
  void arm_guest_timer(DomainId d, sim::Time when, std::uint64_t token) override;
  void mark(std::string_view what, VcpuId v) override { trace_instant(what, v); }
  void set_preempted_work(VcpuId v, double work_ref_ns, Profile profile, double mem_intensity) override;
  sim::Duration run_time(VcpuId v) const override { return vcpus_[v].clock.total(0, now_); }
  sim::Duration measured_run_time(VcpuId v) const override {
    return vcpu_base_.empty() ? 0 : run_time(v) - vcpu_base_[v].running;
  }

  /// Guest-initiated yield of a running vCPU (optionally directed at `to`). Returns the
  /// policy's yield_to() result (policy_api.h SchedulerPolicy::yield).
  /// `resched_after`: the yielder's pCPU reschedules that much later (the rest of the exit's
  /// handler runs first: a PLE exit's cost, ple.cpp); 0: at once.
  int yield(VcpuId v, VcpuId to, sim::Duration resched_after = 0);

 private:
  enum EventKind : std::uint32_t {
    kWorkDone,      // target vcpu, gen work_gen
    kColdEnd,       // target vcpu, gen cold_gen
    kSliceEnd,      // target pcpu, gen slice_gen
    kResched,       // target pcpu (coalesced by resched_pending)
    kPolicyTimer,   // target timer id, gen timer generation
    kGuestTimer,    // target domain, gen = the guest's token
    kMeasureStart,  // end of warm-up
    kCoreRepick,    // target: a core's first thread, gen core_gen_ (core scheduling tick)
    kPleExit,       // target vcpu, gen ple_.gen (pause-loop exit; ple.cpp)
    kReschedLater,  // target pcpu: the end of an exit handler, before its schedule() (ple.cpp)
    kReschedIpi,    // target pcpu, gen its ipi_gen when sent: a reschedule IPI arrives
    kPollWake,      // target vcpu, gen poll_gen: a successful halt poll resumes the guest (halt_poll.cpp)
    kPollCheck,     // target pcpu, gen its polling vCPU's poll_gen: its runqueue grew
  };

  void dispatch(const sim::Event& e);
  // The dispatcher (dispatcher.cpp).
  void schedule(PcpuId p);
  void check_pick(PcpuId p, VcpuId prev, const Pick& pick, const PickFilter& f) const;
  void switch_out(PcpuId p, VcpuId prev);
  void switch_in(PcpuId p, VcpuId next);
  sim::Duration idle_exit(PcpuId p, VcpuId next);  // cpuidle.h: the exit latency `next` waits for
  void commit(PcpuId p, VcpuId prev, const Pick& pick);
  void evict(PcpuId p);
  // Core scheduling (core_sched.cpp).
  bool core_sched_on() const { return spec_.core_sched.enabled && topo_.threads_per_core() > 1; }
  void core_schedule(PcpuId p);
  double core_prio(PcpuId s, VcpuId v, bool fi_before, PcpuId leader) const;
  bool core_beats(PcpuId cs, VcpuId c, PcpuId ms, VcpuId m, bool fi_before, PcpuId leader) const;
  bool core_account(const topo::CpuSet& core, PcpuId picker);
  void check_cookies(PcpuId p) const;
  bool core_runs_other_cookie(PcpuId p, std::uint64_t cookie) const;
  void core_repick(PcpuId leader);
  void arm_core_tick(const topo::CpuSet& core, PcpuId leader);
  void freeze_floor(PcpuId s, PcpuId leader);
  template <class Charge> void charge_forced_idle(const topo::CpuSet& core, Charge&& charge) const;
  void settle_forced_idle(PcpuId p);
  void core_task_changed(PcpuId p) {
    if (core_sched_on() && p != kNoPcpu) ++core_task_seq_[topo_.smt_mask(p).first()];
  }
  // Pause-loop exiting (ple.cpp; the check in dispatcher.cpp).
  void ple_arm(Vcpu& v, bool sched_in);
  void ple_exit(VcpuId v);
  int ple_yield(VcpuId v, VcpuId to, sim::Duration resched_after);
  void ple_sched_done(VcpuId v);  // v is back from a PLE yield's schedule(): it leaves the handler
  sim::Duration busy_total(PcpuId p) const;
  // Halt polling (halt_poll.cpp).
  bool halt_poll_on() const { return spec_.halt_poll.active() && !units_; }
  /// At a halt: starts v's poll if it may (true), else records the halt for the window's adjustment.
  bool halt_poll_begin(Vcpu& v);
  /// Ends v's poll (counters, work, generation); the caller says what follows.
  void halt_poll_end(Vcpu& v);
  /// The poll ended without a wake-up (its window ran out, another task came): v blocks.
  void halt_poll_block(Vcpu& v) {
    halt_poll_end(v);
    block_running(v);
  }
  /// A kick reached a polling vCPU: the guest resumes now.
  void halt_poll_wake(Vcpu& v);
  /// v ran again after a block: kvm_vcpu_block()'s window adjustment.
  void halt_poll_resumed(Vcpu& v);
  /// Blocks the running vCPU v on its pCPU (the halt path without polling).
  void block_running(Vcpu& v);
  /// prev, switched out of p while it polled, blocks instead (dispatcher.cpp).
  void poll_cut_block(PcpuId p, VcpuId prev);
  // Core-granular units (sched_unit.cpp).
  void unit_start();
  void unit_schedule(PcpuId m);
  void unit_commit(PcpuId m, UnitId prev, const Pick& pick);
  void check_unit_pick(PcpuId m, UnitId prev, const Pick& pick) const;
  void check_units(PcpuId m) const;
  void unit_kick(VcpuId v);
  void unit_halt(VcpuId v);
  void unit_run_vcpu(PcpuId t, VcpuId v);
  void unit_idle_begin(PcpuId t, DomainId d);
  void unit_halt_end(PcpuId t);
  void unit_idle_end(PcpuId t);
  PcpuId unit_thread(PcpuId m, std::size_t slot) const { return topo_.smt_list(m)[slot]; }
  void set_runstate(Vcpu& v, Runstate s);
  [[noreturn]] void violation(const char* rule, VcpuId v, PcpuId p, const std::string& detail) const;
  // The execution model (execution.cpp).
  double compute_rate(const Vcpu& v, PcpuId p) const;
  void advance(Vcpu& v);
  void retime(Vcpu& v);
  void stop_progress(Vcpu& v);
  void retime_siblings(PcpuId p);
  /// Folds the SMT-shared time of the entities on p's core up to now; called before any thread
  /// of the core switches, so each stretch is charged under the sibling state it ran with.
  void fold_smt_shared(PcpuId p);
  /// Whether p runs an entity and another thread of its core does too.
  bool smt_shared_now(PcpuId p) const;
  // Memory bandwidth sharing (execution.cpp).
  void set_bandwidth_demand(Vcpu& v, double demand);
  double bandwidth_share(NodeIdx n) const;
  void start_measurement();

  const topo::Topology& topo_;
  HostSpec spec_;
  std::unique_ptr<SchedulerPolicy> policy_;
  sim::RngStream policy_rng_;
  sim::EventQueue queue_;
  sim::Time now_ = 0;
  sim::Time measure_from_ = 0;
  bool started_ = false;
  std::uint64_t events_ = 0, stale_ = 0;
  WakeSource wake_src_;  ///< the wake-up being placed (kick_from), reset after its pick_cpu

  std::vector<Vcpu> vcpus_;
  std::vector<Pcpu> pcpus_;
  std::vector<Domain> domains_;
  std::vector<GuestHooks*> guests_;
  std::vector<std::uint64_t> timer_gen_;
  topo::CpuSet usable_, idle_;
  // Per node: bandwidth (MB/s, 0 = unlimited), the demand of the running work on it, its users.
  std::vector<double> node_bw_, node_load_;
  std::vector<double> node_share_timed_;  ///< the share the node's users were last re-timed with
  std::uint64_t bw_stamp_ = 0;            ///< marks users to re-time once per change
  std::vector<std::vector<VcpuId>> node_users_;

  // Baselines taken at the end of warm-up.
  TraceSink* trace_ = nullptr;
  std::vector<VcpuStats> vcpu_base_;
  std::vector<sim::Duration> pcpu_base_;

  // Core scheduling state (core_sched.cpp); per-core entries are indexed by the core's first thread.
  std::uint64_t core_picks_ = 0;
  bool via_tickle_ = false;                   ///< schedule() runs for a tickle (kResched)
  std::vector<std::uint64_t> core_task_seq_;  ///< per core: wake/sleep/yield count (Linux core_task_seq)
  std::vector<std::uint64_t> decided_seq_;    ///< per pCPU: core_task_seq_ + 1 when a pick decided it
  std::vector<sim::Time> decided_at_;         ///< per pCPU: when
  std::vector<std::uint64_t> core_gen_;       ///< generation of the core's pending re-pick
  std::vector<std::uint64_t> fi_seq_;         ///< forced-idle episode number (kFiSnapshot)
  std::vector<sim::Duration> last_busy_;      ///< per pCPU: busy time at the last core pick
  std::vector<double> fi_credit_;             ///< per pCPU: kFiTime credit (ns)
  std::vector<double> allowance_;             ///< per pCPU: kFiBudget allowance (ns)
  std::vector<double> snap_;                  ///< per entity: naive priority at episode start
  std::vector<std::uint64_t> snap_seq_;       ///< per entity: the episode snap_ belongs to (+1)
  std::vector<double> floor_;                 ///< per pCPU: core_floor frozen for the episode (min_vruntime_fi)
  std::vector<std::uint64_t> floor_seq_;      ///< per pCPU: the episode floor_ belongs to
  std::vector<sim::Duration> pcpu_fi_base_, dom_fi_base_, dom_fic_base_;
  std::vector<sim::Time> fic_since_;  ///< per core leader: forced idle before it is charged (caused)

  PauseLoopExiting ple_;  ///< ple.h
  std::vector<HaltPollStats> poll_stats_;  ///< per domain (halt_poll.h)
  std::vector<MenuGovernor> menu_;         ///< per pCPU (cpuidle.h)
  CpuidleStats idle_stats_;
  // Core-granular units (sched_unit.cpp): the policy's view, null when scheduling per vCPU.
  std::unique_ptr<UnitView> units_;
  std::uint64_t rendezvous_ = 0;
  sim::Time horizon_ = sim::kNever;  ///< set_horizon()
  std::vector<VcpuId> unit_started_;    ///< scratch: vCPUs a core decision switched in
  std::vector<VcpuId> unit_preempted_;  ///< scratch: vCPUs it switched out while runnable
};

}  // namespace vcpusim::hv
