// SPDX-License-Identifier: MIT
// This file defines Xen's core-granular co-scheduling (sched-gran=core, `host.core_scheduling:
// core`), a mechanism of the hypervisor core as in xen/common/sched/core.c, not a policy
// (reference ../shared/reference/xen-credit2.md section 8):
//
//  - Scheduling units. vCPUs k*g .. k*g+g-1 of a domain (g = threads per core) always form one
//    fixed unit (sched_alloc_unit); the last unit of a domain whose vCPU count is not a multiple
//    of g has empty slots. vCPU k*g+i runs on the i-th thread of whatever core the unit runs on
//    (sched_set_res, unit2vcpu_cpu).
//  - The policy sees units, not vCPUs. UnitView is the HypervisorView (and SchedActions port) the
//    policy is attached to: one entity per unit (Runnable if any of its vCPUs is, as
//    unit_runnable()), one pCPU per core, its master (lowest-numbered) thread. Credit2 therefore
//    keeps one credit, weight and runq entry per unit, and sees no SMT siblings, exactly as Xen's
//    csched2 does at gran=core. Affinity is read only at master threads
//    (cpupool_domain_master_cpumask): a unit's hard affinity is the masters in all its vCPUs'
//    hard affinities, and naming a master means the whole core.
//  - The dispatcher (Host, sched_unit.cpp) schedules a core as a whole: one policy decision per
//    core, every thread of the core then runs its vCPU of the chosen unit, or idles if that vCPU
//    is blocked or does not exist (Xen runs idle_vcpu[cpu] there: no other domain may use the
//    thread). A vCPU of a running unit that wakes is switched in on its thread alone, with no
//    decision (vcpu_wake -> SCHED_SLAVE_SOFTIRQ -> sched_force_context_switch); a vCPU that
//    blocks leaves its thread idle and makes the whole core reschedule (vcpu_block raises
//    SCHEDULE_SOFTIRQ); the unit blocks only when its last vCPU does.
//  - Rendezvous. Every scheduling event of a core (a decision, whether or not the unit changes)
//    IPIs all siblings, which spin until the last arrives and again until the last has switched
//    (schedule, sched_slave, sched_wait_rendezvous_in, sched_context_switched): the running vCPUs
//    of the core lose `rendezvous` of progress at each one.
//  - Idle-in-unit time, the analogue of core scheduling's forced idle: a thread held idle by the
//    unit on its core, charged to the unit's domain (Host::pcpu_forced_idle, domain_forced_idle).
//
// Invariants the dispatcher checks after every decision and every thread-local switch:
//   one-unit-per-core  a core runs vCPUs of at most one unit (so of one domain), each on its own
//                      slot's thread;
//   unit-together      a unit's vCPUs run exactly while the unit holds a core: none runs while its
//                      unit is off, none waits (Runnable) while its unit is on.
//
// Credit2's runqueue size limit divides every usable thread (online_threads(): Xen's
// num_online_cpus() in cpu_add_to_runqueue), not only the masters (8be1dfb).
// MODEL: tasklet work and RCU retries (which idle or delay a whole core in Xen) do not exist here.
#pragma once

#include <cstdint>
#include <vector>

#include "hypervisor/entity.h"
#include "hypervisor/ids.h"
#include "hypervisor/policy_api.h"
#include "sim/sim_time.h"
#include "topology/cpuset.h"
#include "topology/topology.h"

namespace vcpusim::hv {

/// A unit's id: dense from 0, in domain order (the policy sees it as a VcpuId).
using UnitId = VcpuId;

struct SchedGranParams {
  bool core = false;  ///< true: sched-gran=core (units of a core's worth of vCPUs); false: per vCPU
  /// What one rendezvous of a core's threads costs each running vCPU of the core. [E] an IPI to
  /// the sibling and its acknowledgement (~1 us on Intel x2APIC), spun through twice (on the way
  /// in, sched_wait_rendezvous_in, and out, sched_context_switched): 2 us. Gross's XPDDS19 figures,
  /// which would calibrate it, were not retrievable (xen-credit2.md section 8).
  sim::Duration rendezvous = sim::us(2);
};

/// One scheduling unit: the domain's vCPUs on slots 0..g-1 (kIdle: no such vCPU).
struct SchedUnit {
  UnitId id = 0;
  DomainId domain = 0;
  std::vector<VcpuId> slots;   ///< slot i runs on the i-th thread of the unit's core
  PcpuId core = kNoPcpu;       ///< master thread of the core it runs on (kNoPcpu: not running)
};

/// The generic state the policy sees at gran=core: units as entities, cores (their master
/// threads) as pCPUs. Host keeps it current; it forwards actions to the host, which schedules
/// the tickled core as a whole.
class UnitView final : public HypervisorView, public SchedActions {
 public:
  /// `host`: the real view and port (the Host); `masters`: the first usable thread of each core.
  UnitView(const HypervisorView& host, SchedActions& act, const topo::CpuSet& masters);

  /// Builds the units of domain d from its vCPUs (in the host's view). Returns false if a unit's
  /// vCPUs share no master thread in their hard affinities.
  bool add_domain(const Domain& d, const std::vector<Vcpu>& vcpus, std::uint32_t threads_per_core);

  // State the dispatcher keeps current.
  SchedUnit& unit(UnitId u) { return units_[u]; }
  const SchedUnit& unit(UnitId u) const { return units_[u]; }
  UnitId unit_of(VcpuId v) const { return unit_of_[v]; }
  std::uint32_t num_units() const { return static_cast<std::uint32_t>(units_.size()); }
  /// The unit on the core whose master is m (kIdle: none).
  UnitId curr(PcpuId m) const { return pcpus_[m].curr; }
  void set_state(UnitId u, Runstate s) { entities_[u].state = s; }
  /// Unit u runs on (or, when m is kNoPcpu, left) the core of master m.
  void set_running(UnitId u, PcpuId m);
  /// The policy chose m for waking unit u.
  void assign(UnitId u, PcpuId m) { entities_[u].pcpu = m; }

  // HypervisorView (what the policy reads).
  const topo::Topology& topology() const override { return host_.topology(); }
  const Vcpu& vcpu(VcpuId u) const override { return entities_[u]; }
  const Pcpu& pcpu(PcpuId p) const override { return pcpus_[p]; }
  const Domain& domain(DomainId d) const override { return domains_[d]; }
  std::uint32_t num_vcpus() const override { return static_cast<std::uint32_t>(entities_.size()); }
  std::uint32_t num_domains() const override { return static_cast<std::uint32_t>(domains_.size()); }
  const topo::CpuSet& usable_pcpus() const override { return masters_; }
  std::uint32_t online_threads() const override { return host_.usable_pcpus().count(); }
  const topo::CpuSet& idle_pcpus() const override { return idle_; }
  sim::Time now() const override { return host_.now(); }

  // SchedActions (forwarded: a tickle of a master reschedules its whole core).
  void tickle(PcpuId p) override { act_.tickle(p); }
  void arm_timer(TimerId t, sim::Time when) override { act_.arm_timer(t, when); }
  void cancel_timer(TimerId t) override { act_.cancel_timer(t); }

 private:
  const HypervisorView& host_;
  SchedActions& act_;
  topo::CpuSet masters_, idle_;
  std::vector<SchedUnit> units_;
  std::vector<Vcpu> entities_;     ///< per unit: what the policy reads as its "vCPU"
  std::vector<Pcpu> pcpus_;        ///< per thread; only masters' curr is meaningful
  std::vector<Domain> domains_;    ///< per domain: vcpus = its units
  std::vector<UnitId> unit_of_;    ///< per vCPU
};

}  // namespace vcpusim::hv
