// SPDX-License-Identifier: MIT
// Credit2 runqueue layout: which pCPUs share a runqueue. Modelled after cpu_add_to_runqueue(),
// cpu_runqueue_match() and cpu_runqueue_siblings_match() (xen/common/sched/credit2.c).
//
// Xen adds CPUs one at a time as they come online, in id order; the grouping depends on that
// order because each CPU joins the least-filled runqueue that qualifies at that moment. Our
// thread numbering puts every core's first thread before any second thread (topology.h), as
// Linux and Xen number them from the ACPI MADT on the servers modelled here, so the same order
// gives the same runqueues Xen builds on those machines: e.g. a 2-socket, 64-thread host with a
// 16-CPU limit gets 4 runqueues of 16 threads, siblings together.
//
// At sched-gran=core the caller passes one thread per core as `usable` and the online thread
// count, so a runqueue's fill counts cores and the siblings test reduces to the fill limit, as
// Xen's skip of cpu_runqueue_siblings_match() at gran != SCHED_GRAN_cpu gives.
#include "policies/credit2_runqueue.h"

namespace vcpusim::policy::credit2 {

namespace {

struct Building {
  topo::CpuSet active;
  topo::ThreadId peer = 0;     // Xen's rqd->pick_bias at creation: the first CPU, used for matching
  std::uint32_t refcnt = 0;
};

bool layout_match(const topo::Topology& t, RunqueueLayout layout, topo::ThreadId peer, topo::ThreadId cpu) {
  switch (layout) {
    case RunqueueLayout::kCpu: return false;  // OPT_RUNQUEUE_CPU never finds an existing runqueue
    case RunqueueLayout::kCore: return t.same_core(peer, cpu);
    case RunqueueLayout::kSocket: return t.same_socket(peer, cpu);
    case RunqueueLayout::kNode: return t.same_node(peer, cpu);
    case RunqueueLayout::kAll: return true;
  }
  return false;
}

// cpu_runqueue_siblings_match(): counting every CPU already in the runqueue together with all
// its (online) siblings, once per sibling group, is there room for cpu and its siblings?
bool siblings_match(const topo::Topology& t, const topo::CpuSet& usable, const Building& rq, topo::ThreadId cpu,
                    std::uint32_t max_cpus_runq) {
  topo::CpuSet counted;
  std::uint32_t tot_sibls = 0;
  rq.active.for_each([&](topo::ThreadId r) {
    const topo::CpuSet sib = t.smt_mask(r) & usable;
    if (!sib.intersects(counted)) {
      counted |= sib;
      tot_sibls += sib.count();
    }
  });
  const std::uint32_t nr_sibls = (t.smt_mask(cpu) & usable).count();
  return tot_sibls + nr_sibls <= max_cpus_runq;
}

}  // namespace

RunqueueMap build_runqueues(const topo::Topology& t, const topo::CpuSet& usable, RunqueueLayout layout,
                            std::uint32_t max_cpus_runqueue, std::uint32_t online_cpus) {
  const std::uint32_t online = online_cpus == 0 ? usable.count() : online_cpus;
  const std::uint32_t limit = max_cpus_runqueue == 0 ? 1 : max_cpus_runqueue;
  // "Spread the CPUs as evenly as possible": min_rqs = ceil(online / limit) runqueues at least,
  // each of at most online / min_rqs CPUs.
  const std::uint32_t min_rqs = online == 0 ? 1 : (online - 1) / limit + 1;
  const std::uint32_t max_cpus_runq = online / min_rqs;

  std::vector<Building> rqs;
  RunqueueMap out;
  out.rq_of.assign(t.num_threads(), kNoRunqueue);
  usable.for_each([&](topo::ThreadId cpu) {
    const topo::CpuSet sib = t.smt_mask(cpu) & usable;
    std::uint32_t valid = kNoRunqueue;
    for (std::uint32_t i = 0; i < rqs.size(); ++i) {
      Building& rq = rqs[i];
      if (!layout_match(t, layout, rq.peer, cpu)) continue;
      // A sibling is already there: always keep siblings together, even over the limit (Xen
      // warns and does it anyway).
      if (rq.active.intersects(sib)) {
        valid = i;
        break;
      }
      // Past the fill limit no runqueue takes it. Below it, at sched-gran=cpu the siblings must
      // fit too, except with `all` (Marczykowski-Gorecki's 2022 fix of 8e2aa76dc167, "try to
      // respect credit2_runqueue=all, as long as max_cpus_runq isn't violated"); at
      // sched-gran=core `usable` holds one thread per core, so the check counts the core alone,
      // as Xen skips it there (gran != SCHED_GRAN_cpu).
      if (rq.refcnt < max_cpus_runq &&
          (layout == RunqueueLayout::kAll || siblings_match(t, usable, rq, cpu, max_cpus_runq)) &&
          (valid == kNoRunqueue || rq.refcnt < rqs[valid].refcnt))
        valid = i;
    }
    if (valid == kNoRunqueue) {
      valid = static_cast<std::uint32_t>(rqs.size());
      rqs.push_back(Building{{}, cpu, 0});
    }
    rqs[valid].active.set(cpu);
    ++rqs[valid].refcnt;
    out.rq_of[cpu] = valid;
  });
  for (const Building& rq : rqs) out.cpus.push_back(rq.active);
  return out;
}

}  // namespace vcpusim::policy::credit2
