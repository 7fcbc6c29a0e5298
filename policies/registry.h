// SPDX-License-Identifier: MIT
// This file defines the policy registry: one explicit table of every scheduler policy by name
// (no static-initialisation self-registration, which static libraries silently drop).
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "hypervisor/policy_api.h"
#include "sim/params.h"

namespace vcpusim::policy {

using sim::ParamSpec;
using sim::ParamValues;

struct PolicyInfo {
  std::string_view name;
  std::string_view description;
  std::vector<ParamSpec> params;
  std::unique_ptr<hv::SchedulerPolicy> (*make)(const ParamValues&);
};

/// Every policy, in a fixed order.
const std::vector<PolicyInfo>& policies();
/// The policy called `name`, or nullptr.
const PolicyInfo* find_policy(std::string_view name);

}  // namespace vcpusim::policy
