// SPDX-License-Identifier: MIT
#include "guest/ipi.h"

#include <algorithm>

namespace vcpusim::guest {

IpiStats& IpiStats::operator+=(const IpiStats& o) {
  sent += o.sent;
  stalls += o.stalls;
  deferred += o.deferred;
  spin_ns += o.spin_ns;
  wait_ns += o.wait_ns;
  return *this;
}

void CallFunctionIpis::init(std::uint32_t vcpus, std::uint32_t threads) {
  pending_.assign(vcpus, {});
  // At most one request per sender thread per target is ever pending: reserve it, so the event
  // loop never allocates.
  for (auto& p : pending_) p.reserve(threads);
  unarmed_.assign(vcpus, 0);
  outstanding_.assign(threads, 0);
}

void CallFunctionIpis::send(std::uint32_t sender, std::uint32_t target, sim::Duration latency) {
  pending_[target].push_back(Request{sender, latency, sim::kNever});
  ++unarmed_[target];
  ++outstanding_[sender];
}

sim::Time CallFunctionIpis::arm(std::uint32_t target, sim::Time now) {
  sim::Time latest = sim::kNever;
  if (unarmed_[target] == 0) return latest;
  for (Request& r : pending_[target]) {
    if (r.due != sim::kNever) continue;
    r.due = now + r.latency;
    latest = latest == sim::kNever ? r.due : std::max(latest, r.due);
  }
  unarmed_[target] = 0;
  return latest;
}

void CallFunctionIpis::acknowledge(std::uint32_t target, sim::Time now, std::vector<std::uint32_t>& finished) {
  auto& reqs = pending_[target];
  std::size_t keep = 0;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const Request r = reqs[i];
    if (r.due != sim::kNever && r.due <= now) {
      if (--outstanding_[r.sender] == 0) finished.push_back(r.sender);
    } else {
      reqs[keep++] = r;  // keeps the order of sends
    }
  }
  reqs.resize(keep);
}

}  // namespace vcpusim::guest
