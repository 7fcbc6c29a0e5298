// SPDX-License-Identifier: MIT
// This file defines the two structural pieces of credit2 that are not scheduling decisions: how
// pCPUs are grouped into runqueues (Xen's cpu_add_to_runqueue(), with the credit2_runqueue and
// sched_credit2_max_cpus_runqueue boot parameters), and the intrusive vCPU lists a runqueue
// keeps (rqd->runq, sorted by credit, and rqd->svc, every vCPU assigned to it). They are apart
// from credit2.cpp because the grouping is pure topology and the lists are pure data structure:
// each is tested and reasoned about without credits, timers or the dispatcher.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hypervisor/ids.h"
#include "topology/cpuset.h"
#include "topology/topology.h"

namespace vcpusim::policy::credit2 {

/// Xen's credit2_runqueue= values (OPT_RUNQUEUE_*), in Xen's order: the scenario's `runqueue`
/// choice index is this enum's value.
enum class RunqueueLayout : std::uint8_t { kCpu = 0, kCore = 1, kSocket = 2, kNode = 3, kAll = 4 };
inline constexpr std::uint32_t kNoRunqueue = ~std::uint32_t{0};

/// The result of grouping: runqueue index per pCPU (kNoRunqueue for pCPUs the host cannot use)
/// and the pCPUs of each runqueue (Xen's rqd->active), indexed by runqueue id.
struct RunqueueMap {
  std::vector<std::uint32_t> rq_of;
  std::vector<topo::CpuSet> cpus;
};

/// Groups the usable pCPUs as cpu_add_to_runqueue() (xen/common/sched/credit2.c) does when CPUs
/// come online in id order at sched-gran=cpu: each pCPU joins an existing runqueue that matches
/// it by `layout` (same core/socket/node, any for kAll) and already holds one of its SMT
/// siblings; failing that the least-filled matching runqueue with room for it and all its
/// siblings (cpu_runqueue_siblings_match()) below max_cpus_runq = online / ceil(online / limit);
/// failing that a new runqueue. `online` is num_online_cpus() (0: usable's count): at
/// sched-gran=core `usable` holds one thread per core while Xen divides every online thread,
/// and a runqueue's fill, which counts cores, is then the only test (no sibling check).
RunqueueMap build_runqueues(const topo::Topology& topo, const topo::CpuSet& usable, RunqueueLayout layout,
                            std::uint32_t max_cpus_runqueue, std::uint32_t online = 0);

/// Links of one intrusive doubly linked list, stored per vCPU in a vector indexed by VcpuId, so
/// list operations never allocate (Xen embeds struct list_head in csched2_unit the same way).
struct ListLinks {
  hv::VcpuId prev = hv::kIdle;
  hv::VcpuId next = hv::kIdle;
};

/// The head of one intrusive list over ListLinks. kIdle is the nil link.
class VcpuList {
 public:
  hv::VcpuId front() const { return head_; }
  std::uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  static hv::VcpuId next(const std::vector<ListLinks>& l, hv::VcpuId v) { return l[v].next; }

  void push_back(std::vector<ListLinks>& l, hv::VcpuId v) { insert_before(l, hv::kIdle, v); }
  /// Inserts v before `pos` (kIdle: at the tail), as list_add_tail(&v, pos) does.
  void insert_before(std::vector<ListLinks>& l, hv::VcpuId pos, hv::VcpuId v) {
    const hv::VcpuId prev = pos == hv::kIdle ? tail_ : l[pos].prev;
    l[v].prev = prev;
    l[v].next = pos;
    if (prev != hv::kIdle) l[prev].next = v; else head_ = v;
    if (pos != hv::kIdle) l[pos].prev = v; else tail_ = v;
    ++size_;
  }
  void remove(std::vector<ListLinks>& l, hv::VcpuId v) {
    if (l[v].prev != hv::kIdle) l[l[v].prev].next = l[v].next; else head_ = l[v].next;
    if (l[v].next != hv::kIdle) l[l[v].next].prev = l[v].prev; else tail_ = l[v].prev;
    l[v] = ListLinks{};
    --size_;
  }

 private:
  hv::VcpuId head_ = hv::kIdle, tail_ = hv::kIdle;
  std::uint32_t size_ = 0;
};

}  // namespace vcpusim::policy::credit2
