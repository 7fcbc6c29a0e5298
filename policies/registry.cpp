// SPDX-License-Identifier: MIT
#include "policies/registry.h"

#include "policies/cfs.h"
#include "policies/credit2.h"
#include "policies/round_robin.h"

namespace vcpusim::policy {

const std::vector<PolicyInfo>& policies() {
  static const std::vector<PolicyInfo> table = {
      {"rr", "per-pCPU round robin with a fixed slice and idle stealing (the reference policy)",
       RoundRobin::param_specs(), &RoundRobin::make},
      {"credit2", "Xen credit2: credit by weight, runqueues per cpu|core|socket|node|all, ratelimit, caps, load balancing",
       Credit2::param_specs(), &Credit2::make},
      {"cfs", "Linux CFS on a KVM host (5.x, pre-EEVDF): vruntime runqueues per pCPU, wake-up and tick preemption, idle/periodic/active balancing over SMT/MC/NUMA domains",
       Cfs::param_specs(), &Cfs::make},
  };
  return table;
}

const PolicyInfo* find_policy(std::string_view name) {
  for (const auto& p : policies())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace vcpusim::policy
