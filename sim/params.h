// SPDX-License-Identifier: MIT
// This file defines how a plug-in (a scheduler policy, a workload model) declares its tunables
// (name, kind, unit, default, range, help) and receives their values. Declaring them lets app/
// validate scenario files against the real list (unknown keys are errors) and lets the README and
// --help list them, as Xen's integer_param() boot parameters do.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace vcpusim::sim {

struct ParamSpec {
  enum class Kind { kDuration, kInt, kDouble, kChoice };
  std::string name;                  ///< key in the scenario, e.g. "ratelimit"
  Kind kind = Kind::kDouble;
  double def = 0;                    ///< default (durations in ns; choices: index into choices)
  double lo = 0, hi = 0;             ///< accepted range (inclusive)
  std::vector<std::string> choices;  ///< for kChoice
  std::string help;                  ///< one line, with the upstream equivalent
};

/// Values by name, durations in ns, choices as their index. Absent keys take the default.
class ParamValues {
 public:
  void set(const std::string& name, double v) { v_[name] = v; }
  double get(const std::string& name, double def) const {
    auto it = v_.find(name);
    return it == v_.end() ? def : it->second;
  }
  const std::map<std::string, double>& all() const { return v_; }

 private:
  std::map<std::string, double> v_;
};

}  // namespace vcpusim::sim
