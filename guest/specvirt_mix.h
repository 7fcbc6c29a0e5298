// SPDX-License-Identifier: MIT
// This file defines the `specvirt-mix` workload: one VM of a SPECvirt-like consolidation tile.
// A tile is a set of VMs running different workloads (note: ../shared/reference/
// spinlocks-and-workloads.md section 3 "SPECvirt": sc2013 web, IMAP mail, a Java application
// server with a database VM, [R] a batch job; Datacenter 2021 mail, web, collaboration,
// HammerDB OLTP, BigBench), so the composition is made at the scenario level: a tile is four VM
// groups, each running this workload with its own `role` (configs/studies/
// coresched-v4-overcommit.yaml). That keeps each role a VM of its own, with its own cookie
// under core scheduling, which is what a consolidation study measures; a workload mixing the
// profiles inside one VM would put them all under one cookie.
//
// Each role is a closed loop of `threads` users, each user: think (a block), then the role's
// request: compute and wait steps (mail waits on its mailbox store, the application server on
// its database VM, the database on its log flush). Every number of the role table is [E]: the
// note gives the tile's composition, not per-request figures; each role keeps its VM about half
// busy when threads = vCPUs, as a tile sized below saturation is (note: tiles are added until
// QoS fails).
// Result: normalised throughput, requests completed over the requests the same users would
// complete on an idle machine (1.0 = the offered load, unhindered), so the figures of the
// different roles add up as SPECvirt's aggregate of normalised per-workload throughput does.
// Per-request QoS limits are not modelled.
#pragma once

#include "guest/workload.h"

namespace vcpusim::guest {

class SpecvirtMix final : public Workload {
 public:
  enum class Role : std::uint8_t { kWeb = 0, kMail = 1, kApp = 2, kDb = 3 };
  struct Phase {
    bool compute;
    double mean_ns;
    hv::Profile profile = hv::Profile::kMixed;
    double mem_intensity = 0;
  };
  /// The role's user loop, think time first; the request ends with the last phase.
  static const std::vector<Phase>& program(Role r);
  static std::vector<sim::ParamSpec> param_specs();
  static std::unique_ptr<Workload> make(const sim::ParamValues& v);
  SpecvirtMix(std::uint32_t users, Role role);

  std::string_view kind() const override { return "specvirt-mix"; }
  std::uint32_t threads() const override { return users_; }
  Step next(std::uint32_t thread, sim::RngStream& rng) override;
  std::string_view unit() const override { return "normalised"; }
  std::string_view study_metric() const override { return "throughput"; }
  /// Mean time of one user's loop on an idle machine (think, work, waits), ns.
  double cycle_ns() const { return cycle_ns_; }

 private:
  std::uint32_t users_;
  Role role_;
  double cycle_ns_ = 0, per_request_ = 0;
  std::vector<std::uint32_t> pos_;
};

}  // namespace vcpusim::guest
