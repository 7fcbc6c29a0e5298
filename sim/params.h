// SPDX-License-Identifier: MIT
// This file defines how a plug-in (a scheduler policy, a workload model) declares its tunables
// (name, kind, unit, default, range, help) and receives their values. Declaring them lets app/
// validate scenario files against the real list (unknown keys are errors) and lets the README and
// --help list them, as Xen's integer_param() boot parameters do.
#pragma once

#include <map>
#include <string>
#include <utility>
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
  /// Set where the key acts only under some values of another choice key of the same plug-in
  /// (a PV lock's kick latency only with lock: pvticket): given under any other value the loader
  /// refuses it rather than run as if it were not there. Empty: the key always acts.
  std::string only_with;
  std::vector<std::string> only_with_values;
  /// Set where the value must exceed another key's of the same plug-in (given or default), as
  /// the kernel keeps a per-CPU page list's high mark above its batch.
  std::string above;
  /// A count of bytes: the scenario may give it with a unit (16KiB), as other sizes.
  bool bytes = false;
  /// Set (> 0) where 0 means off and any other value must be at least this, as Xen's
  /// sched_ratelimit_us is 0 or 100 us .. 500 ms: the range [lo, hi] still bounds the value.
  double least_nonzero = 0;

  ParamSpec() = default;
  ParamSpec(std::string n, Kind k, double d, double low, double high, std::vector<std::string> c, std::string h)
      : name(std::move(n)), kind(k), def(d), lo(low), hi(high), choices(std::move(c)), help(std::move(h)) {}
  /// This spec, acting only while choice key `key` takes one of `values`.
  ParamSpec acting_only_with(std::string key, std::vector<std::string> values) && {
    only_with = std::move(key);
    only_with_values = std::move(values);
    return std::move(*this);
  }
  /// This spec, whose value must be greater than key `key`'s.
  ParamSpec greater_than(std::string key) && {
    above = std::move(key);
    return std::move(*this);
  }
  /// This spec, a size in bytes that takes units.
  ParamSpec in_bytes() && {
    bytes = true;
    return std::move(*this);
  }
  /// This spec, 0 (off) or at least `floor`.
  ParamSpec zero_or_at_least(double floor) && {
    least_nonzero = floor;
    return std::move(*this);
  }
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
