// SPDX-License-Identifier: MIT
#include "guest/lock_workloads.h"

#include <algorithm>
#include <cmath>

namespace vcpusim::guest {

using sim::ParamSpec;

std::vector<ParamSpec> lock_param_specs() {
  const LockParams d;
  return {
      {"lock", ParamSpec::Kind::kChoice, 0, 0, 3, {"ticket", "pvticket", "mutex", "adaptive"},
       "guest lock kind: ticket (native ticket spinlock), pvticket (Linux 3.12 PV ticketlock), mutex (sleeping), "
       "adaptive (spin, then sleep; test-and-set: InnoDB's latches, glibc's adaptive mutex)"},
      {"spin_loop", ParamSpec::Kind::kDouble, d.spin_loop_ns, 0.1, 1000, {},
       "ns per spin loop (PAUSE + load): 2^15 loops = 0.13-0.2 ms before Skylake (note 1.1), so 5"},
      {"spin_threshold", ParamSpec::Kind::kInt, static_cast<double>(d.spin_threshold), 1, 1 << 30, {},
       "SPIN_THRESHOLD loops before a PV waiter halts (Linux 1 << 15, note 1.1)"},
      {"kick_latency", ParamSpec::Kind::kDuration, static_cast<double>(d.kick_latency), 0, 1e9, {},
       "PV kick hypercall/event send to wake-up in the host (note 1.3: exit 0.4-1.5 us)"},
      {"handoff", ParamSpec::Kind::kDouble, d.handoff_ns, 0, 1e6, {},
       "ns to move the lock to the next waiter (note 1.4: 20-50 ns)"},
      {"spin_wait", ParamSpec::Kind::kInt, static_cast<double>(d.spin_wait_loops), 1, 1 << 30, {},
       "adaptive: spin loops before a waiter sleeps (InnoDB: 30 rounds x mean 3 units x 50 PAUSEs = 4500, note 1.1)"},
      {"pv_flavour", ParamSpec::Kind::kChoice, 0, 0, 1, {"kvm", "xen"},
       "PV slow path: kvm (halt, any interrupt wakes) or xen (poll the kicker event channel)"},
  };
}

LockParams read_lock_params(const sim::ParamValues& v) {
  LockParams p;
  p.kind = static_cast<LockKind>(static_cast<int>(v.get("lock", 0)));
  p.spin_loop_ns = v.get("spin_loop", p.spin_loop_ns);
  p.spin_threshold = static_cast<std::uint32_t>(v.get("spin_threshold", p.spin_threshold));
  p.kick_latency = static_cast<sim::Duration>(v.get("kick_latency", static_cast<double>(p.kick_latency)));
  p.handoff_ns = v.get("handoff", p.handoff_ns);
  p.spin_wait_loops = static_cast<std::uint32_t>(v.get("spin_wait", p.spin_wait_loops));
  p.flavour = static_cast<PvFlavour>(static_cast<int>(v.get("pv_flavour", 0)));
  return p;
}

// --- ebizzy ----------------------------------------------------------------------------------

Ebizzy::Ebizzy(std::uint32_t threads, double burst_ns, double cs_frac, std::uint32_t sections, double mem_intensity,
               LockParams lock, double shootdown_ns, double record_scale)
    : threads_(threads), burst_(burst_ns), hold_(cs_frac / (1.0 - cs_frac) * burst_ns / sections),
      mem_(mem_intensity), shootdown_(shootdown_ns), record_scale_(record_scale), sections_(sections), lock_(lock),
      pos_(threads, 0) {}

std::vector<ParamSpec> Ebizzy::param_specs() {
  std::vector<ParamSpec> s = {
      {"threads", ParamSpec::Kind::kInt, 4, 1, 4096, {}, "-t; ebizzy's default is 2 x online CPUs (note 3)"},
      {"burst", ParamSpec::Kind::kDuration, 100e3, 1e3, 1e9, {},
       "user time per record, memcpy and search (note 3: 50-200 us)"},
      {"cs_frac", ParamSpec::Kind::kDouble, 0.2, 0.0, 0.9, {},
       "share of a record's CPU time holding mmap_lock (note 3: 20-50% at 16+ vCPUs)"},
      {"sections", ParamSpec::Kind::kInt, 4, 1, 1024, {},
       "mmap_lock critical sections per record [E] (4: holds of 6.25 us, note 3: 1-20 us)"},
      {"mem_intensity", ParamSpec::Kind::kDouble, 0.5, 0.0, 1.0, {},
       "memory-stall share (note 3: high, ~1.5 MiB moved per record) [E]"},
      {"shootdown", ParamSpec::Kind::kDuration, 3e3, 0, 1e9, {},
       "TLB shootdown per record to every other vCPU, ack latency of a running target (note 1.3: ICR write "
       "~2.8 us + flush) [E]; 0: none"},
      {"record_scale", ParamSpec::Kind::kDouble, 1.0, 1e-6, 1e6, {},
       "published records per modelled record (a unit calibration, like dbench's kb_per_op)"},
  };
  for (auto& p : lock_param_specs()) s.push_back(std::move(p));
  return s;
}

std::unique_ptr<Workload> Ebizzy::make(const sim::ParamValues& v) {
  return std::make_unique<Ebizzy>(static_cast<std::uint32_t>(v.get("threads", 4)), v.get("burst", 100e3),
                                  v.get("cs_frac", 0.2), static_cast<std::uint32_t>(v.get("sections", 4)),
                                  v.get("mem_intensity", 0.5), read_lock_params(v), v.get("shootdown", 3e3),
                                  v.get("record_scale", 1.0));
}

Step Ebizzy::next(std::uint32_t thread, sim::RngStream& rng) {
  const std::uint32_t i = pos_[thread];
  pos_[thread] = (i + 1) % sections_;
  Step s;
  s.work_ns = std::max(1.0, rng.exponential(burst_ / sections_));
  s.profile = hv::Profile::kMemory;
  s.mem_intensity = mem_;
  s.result = i + 1 == sections_ ? record_scale_ : 0.0;
  s.lock = 0;
  s.hold_ns = hold_;
  s.shootdown_ns = i + 1 == sections_ ? shootdown_ : 0.0;  // the record's buffer is freed
  return s;
}

// --- dbench ----------------------------------------------------------------------------------

Dbench::Dbench(std::uint32_t threads, double op_ns, double cs_frac, std::uint32_t sections, std::uint32_t hot_locks,
               double kb_per_op, LockParams lock)
    : threads_(threads), pre_((1.0 - cs_frac) * op_ns / sections), hold_(cs_frac * op_ns / sections),
      mb_per_op_(kb_per_op / 1000.0), sections_(sections), hot_(hot_locks), lock_(lock), pos_(threads, 0) {}

std::vector<ParamSpec> Dbench::param_specs() {
  std::vector<ParamSpec> s = {
      {"threads", ParamSpec::Kind::kInt, 8, 1, 4096, {}, "numclients (note 3: commonly 1-2 x vCPUs)"},
      {"op_time", ParamSpec::Kind::kDuration, 10e3, 100, 1e9, {}, "CPU time of one op (note 3: syscalls of 2-20 us)"},
      {"cs_frac", ParamSpec::Kind::kDouble, 0.2, 0.0, 0.9, {},
       "share of an op's CPU time holding the hot locks (note 3: 10-30%)"},
      {"sections", ParamSpec::Kind::kInt, 3, 1, 1024, {},
       "hot-lock acquisitions per op (note 3: several per op) [E]"},
      {"hot_locks", ParamSpec::Kind::kInt, 2, 1, 1024, {}, "hot global locks (note 3: a few) [E]"},
      {"kb_per_op", ParamSpec::Kind::kDouble, 4.7, 0.001, 1e6, {},
       "KB moved per op: calibrated to 15035.3 MB/s over 32 clients at 1x (note 6, commit 545ac13892ab)"},
  };
  for (auto& p : lock_param_specs()) s.push_back(std::move(p));
  return s;
}

std::unique_ptr<Workload> Dbench::make(const sim::ParamValues& v) {
  return std::make_unique<Dbench>(static_cast<std::uint32_t>(v.get("threads", 8)), v.get("op_time", 10e3),
                                  v.get("cs_frac", 0.2), static_cast<std::uint32_t>(v.get("sections", 3)),
                                  static_cast<std::uint32_t>(v.get("hot_locks", 2)), v.get("kb_per_op", 4.7),
                                  read_lock_params(v));
}

std::vector<LockSpec> Dbench::locks() const {
  std::vector<LockSpec> l;
  for (std::uint32_t i = 0; i < hot_; ++i) l.push_back(LockSpec{"hot" + std::to_string(i), lock_});
  return l;
}

Step Dbench::next(std::uint32_t thread, sim::RngStream& rng) {
  const std::uint32_t i = pos_[thread];
  pos_[thread] = (i + 1) % sections_;
  Step s;
  s.work_ns = std::max(1.0, rng.exponential(pre_));
  s.profile = hv::Profile::kMixed;
  s.mem_intensity = 0.3;  // note 3: "Memory: Moderate (page-cache copies)" [E]
  s.result = i + 1 == sections_ ? mb_per_op_ : 0.0;
  s.lock = hot_ > 1 ? static_cast<std::int32_t>(std::min<std::uint64_t>(hot_ - 1, static_cast<std::uint64_t>(rng.uniform() * hot_))) : 0;
  s.hold_ns = hold_;
  return s;
}

}  // namespace vcpusim::guest
