// SPDX-License-Identifier: MIT
#include "guest/specvirt_mix.h"

#include <algorithm>

namespace vcpusim::guest {

using sim::ParamSpec;

const std::vector<SpecvirtMix::Phase>& SpecvirtMix::program(Role r) {
  using P = hv::Profile;
  // [E] throughout (see specvirt_mix.h). Profiles: web and the application server are mixed
  // (interpreters and a JVM heap), mail is short CPU bursts around storage waits, the database
  // is memory-bound between log flushes, as note 3's HammerDB row describes.
  static const std::vector<Phase> web = {{false, 400e3}, {true, 400e3, P::kMixed, 0.3}};
  static const std::vector<Phase> mail = {{false, 0}, {true, 150e3, P::kMixed, 0.2}, {false, 1e6},
                                          {true, 150e3, P::kMixed, 0.2}};
  static const std::vector<Phase> app = {{false, 300e3}, {true, 600e3, P::kMixed, 0.4}, {false, 300e3},
                                         {true, 300e3, P::kMixed, 0.4}};
  static const std::vector<Phase> db = {{false, 0}, {true, 300e3, P::kMemory, 0.5}, {false, 300e3}};
  switch (r) {
    case Role::kWeb: return web;
    case Role::kMail: return mail;
    case Role::kApp: return app;
    case Role::kDb: return db;
  }
  return web;
}

std::vector<ParamSpec> SpecvirtMix::param_specs() {
  return {
      {"threads", ParamSpec::Kind::kInt, 4, 1, 4096, {}, "users driving this VM (a user: think, then one request)"},
      {"role", ParamSpec::Kind::kChoice, 0, 0, 3, {"web", "mail", "app", "db"},
       "the tile VM this is: web server, IMAP mail, Java application server, database (note 3, SPECvirt)"},
  };
}

std::unique_ptr<Workload> SpecvirtMix::make(const sim::ParamValues& v) {
  return std::make_unique<SpecvirtMix>(static_cast<std::uint32_t>(v.get("threads", 4)),
                                       static_cast<Role>(static_cast<int>(v.get("role", 0))));
}

SpecvirtMix::SpecvirtMix(std::uint32_t users, Role role) : users_(users), role_(role), pos_(users, 0) {
  for (const Phase& p : program(role)) cycle_ns_ += p.mean_ns;
  // Idle-machine rate of the VM: users / cycle; each request is credited 1 / that rate's
  // per-second value, so throughput reads 1.0 at the offered load.
  per_request_ = cycle_ns_ * 1e-9 / static_cast<double>(users_);
}

Step SpecvirtMix::next(std::uint32_t thread, sim::RngStream& rng) {
  const std::vector<Phase>& prog = program(role_);
  std::size_t last = 0;
  for (std::size_t i = 0; i < prog.size(); ++i)
    if (prog[i].compute) last = i;
  for (;;) {
    const std::size_t i = pos_[thread];
    pos_[thread] = static_cast<std::uint32_t>((i + 1) % prog.size());
    const Phase& p = prog[i];
    if (p.mean_ns <= 0) continue;
    const double v = std::max(1.0, rng.exponential(p.mean_ns));
    Step s;
    if (!p.compute) {
      s.kind = Step::Kind::kBlock;
      s.block = static_cast<sim::Duration>(v);
      return s;
    }
    s.work_ns = v;
    s.profile = p.profile;
    s.mem_intensity = p.mem_intensity;
    s.result = i == last ? per_request_ : 0.0;
    return s;
  }
}

}  // namespace vcpusim::guest
