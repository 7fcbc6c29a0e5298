// SPDX-License-Identifier: MIT
#include "policies/registry.h"

#include "policies/round_robin.h"

namespace vcpusim::policy {

const std::vector<PolicyInfo>& policies() {
  static const std::vector<PolicyInfo> table = {
      {"rr", "per-pCPU round robin with a fixed slice and idle stealing (the reference policy)",
       RoundRobin::param_specs(), &RoundRobin::make},
  };
  return table;
}

const PolicyInfo* find_policy(std::string_view name) {
  for (const auto& p : policies())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace vcpusim::policy
