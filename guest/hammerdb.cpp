// SPDX-License-Identifier: MIT
#include "guest/hammerdb.h"

#include <algorithm>

#include "guest/lock_workloads.h"

namespace vcpusim::guest {

using sim::ParamSpec;

std::vector<ParamSpec> Hammerdb::param_specs() {
  const Params d;
  std::vector<ParamSpec> s = {
      {"threads", ParamSpec::Kind::kInt, static_cast<double>(d.users), 1, 4096, {},
       "virtual users, one database thread each (note 3: 1-4 x vCPUs)"},
      {"txn_time", ParamSpec::Kind::kDuration, d.txn_ns, 1e3, 1e9, {},
       "CPU per transaction (note 3: 0.2-2 ms) [E]"},
      {"sections", ParamSpec::Kind::kInt, static_cast<double>(d.sections), 1, 10000, {},
       "latch acquisitions per transaction, coarsened [E] (see hammerdb.h)"},
      {"cs_frac", ParamSpec::Kind::kDouble, d.cs_frac, 0.0, 0.9, {},
       "share of CPU time holding latches (note 3: 10-30% at high VU counts; the low end)"},
      {"latches", ParamSpec::Kind::kInt, static_cast<double>(d.latches), 1, 1024, {}, "hot latches (log, lock_sys, trx_sys, buffer pool) [E]"},
      {"commit_time", ParamSpec::Kind::kDuration, d.commit_ns, 0, 1e9, {},
       "mean redo flush wait per commit (note 3: 10-50% I/O wait; 0.4 ms on 1 ms of CPU is 29%) [E]"},
      {"mem_intensity", ParamSpec::Kind::kDouble, d.mem_intensity, 0.0, 1.0, {},
       "memory-stall share (note 3: buffer pool in GBs) [E]"},
  };
  for (auto& p : lock_param_specs()) {
    // InnoDB's latches spin a bounded while, then wait in the OS (note 1.1): adaptive.
    if (p.name == "lock") p.def = static_cast<double>(LockKind::kAdaptive);
    s.push_back(std::move(p));
  }
  return s;
}

std::unique_ptr<Workload> Hammerdb::make(const sim::ParamValues& v) {
  Params p;
  p.users = static_cast<std::uint32_t>(v.get("threads", p.users));
  p.txn_ns = v.get("txn_time", p.txn_ns);
  p.sections = static_cast<std::uint32_t>(v.get("sections", p.sections));
  p.cs_frac = v.get("cs_frac", p.cs_frac);
  p.latches = static_cast<std::uint32_t>(v.get("latches", p.latches));
  p.commit_ns = v.get("commit_time", p.commit_ns);
  p.mem_intensity = v.get("mem_intensity", p.mem_intensity);
  if (v.all().count("lock") == 0) {
    sim::ParamValues w = v;
    w.set("lock", static_cast<double>(LockKind::kAdaptive));
    p.lock = read_lock_params(w);
  } else {
    p.lock = read_lock_params(v);
  }
  p.lock.user_space = true;  // InnoDB's latches are mysqld's: a holder is a preemptible user thread
  return std::make_unique<Hammerdb>(p);
}

Hammerdb::Hammerdb(const Params& p) : p_(p), pos_(p.users, 0) {}

std::vector<LockSpec> Hammerdb::locks() const {
  std::vector<LockSpec> l;
  for (std::uint32_t i = 0; i < p_.latches; ++i) l.push_back(LockSpec{"latch" + std::to_string(i), p_.lock});
  return l;
}

Step Hammerdb::next(std::uint32_t thread, sim::RngStream& rng) {
  std::uint32_t& i = pos_[thread];
  Step s;
  if (i == p_.sections) {
    i = 0;
    if (p_.commit_ns >= 1.0) {
      s.kind = Step::Kind::kBlock;
      s.block = std::max<sim::Duration>(1, static_cast<sim::Duration>(rng.exponential(p_.commit_ns)));
      return s;
    }
  }
  ++i;
  s.work_ns = std::max(1.0, rng.exponential((1.0 - p_.cs_frac) * p_.txn_ns / p_.sections));
  s.profile = hv::Profile::kMixed;  // note 3: SMT 0.65-0.75 (the matrix's mixed/mixed 0.65)
  s.mem_intensity = p_.mem_intensity;
  s.lock = p_.latches > 1 ? static_cast<std::int32_t>(std::min<double>(p_.latches - 1, rng.uniform() * p_.latches)) : 0;
  s.hold_ns = hold_ns();
  s.result = i == p_.sections ? 60.0 : 0.0;  // per minute: 60 per transaction per second
  return s;
}

}  // namespace vcpusim::guest
