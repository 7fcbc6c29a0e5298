// SPDX-License-Identifier: MIT
// This file defines the `hammerdb` workload: HammerDB TPROC-C virtual users driving an OLTP
// database (MySQL/InnoDB-like) in the same VM, back to back with no think time. Numbers cite
// ../shared/reference/spinlocks-and-workloads.md section 3 "HammerDB TPROC-C" and 1.1 (InnoDB
// spinning) ("note"); docs/workloads/hammerdb.md has the reasoning and the omissions.
//
// One database thread per virtual user (`threads`). A transaction is `txn_time` of CPU split
// into `sections` pieces, each followed by a short critical section on one of `latches` hot
// latches drawn uniformly (note: "very frequent short latches held with user-space spinning"),
// the latches holding cs_frac of the CPU time; then the commit waits for the redo-log flush
// (`commit_time`, a block: note "commit I/O (redo/WAL fsync with group commit), 10-50% wait").
// Latches are InnoDB's spin-then-wait mutexes by default (`lock: adaptive`, guest_os.h): the
// waiter spins in user space, which the host cannot see (note 1.1/1.2: PLE is ignored at CPL > 0
// on Intel), for innodb_sync_spin_loops (30) rounds of up to innodb_spin_wait_delay (6) units,
// then waits in the OS; acquisition is test-and-set, so a preempted waiter never stalls the
// latch. `lock: ticket` gives the unbounded FIFO spinning of earlier versions of this model. MODEL: latch acquisitions are coarsened (20 per transaction, holds of 5 us where the
// note gives 0.1-1 us) so that the held share stays cs_frac at a bounded event count.
// Result: transactions per minute ("TPM", the database's own counter), counted when a
// transaction's last latch is released, one commit before its flush completes.
#pragma once

#include "guest/workload.h"

namespace vcpusim::guest {

class Hammerdb final : public Workload {
 public:
  struct Params {
    std::uint32_t users = 8;
    double txn_ns = 1e6;
    std::uint32_t sections = 20;
    double cs_frac = 0.1;
    std::uint32_t latches = 4;
    double commit_ns = 400e3;
    double mem_intensity = 0.4;
    LockParams lock;
  };
  static std::vector<sim::ParamSpec> param_specs();
  static std::unique_ptr<Workload> make(const sim::ParamValues& v);
  explicit Hammerdb(const Params& p);

  std::string_view kind() const override { return "hammerdb"; }
  std::uint32_t threads() const override { return p_.users; }
  Step next(std::uint32_t thread, sim::RngStream& rng) override;
  std::string_view unit() const override { return "TPM"; }
  std::vector<LockSpec> locks() const override;
  std::string_view study_metric() const override { return "throughput"; }
  double hold_ns() const { return p_.cs_frac * p_.txn_ns / p_.sections; }

 private:
  Params p_;
  std::vector<std::uint32_t> pos_;  ///< per thread: the next section (== sections: the commit)
};

}  // namespace vcpusim::guest
