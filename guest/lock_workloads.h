// SPDX-License-Identifier: MIT
// This file defines the lock-bound workload models `ebizzy` (records/s) and `dbench` (MB/s),
// the standard PV-spinlock / lock-holder-preemption benchmarks. Every number cites
// ../shared/reference/spinlocks-and-workloads.md ("note" below; section 3 for the workloads,
// 1.1/1.3/1.4 for the lock parameters, 6 for the calibration targets); [E] marks the note's
// own estimates.
//
// ebizzy (note 3, "ebizzy"): a thread loops over records; one record is user work (memcpy and
// search of a chunk: "50-200 us of user time per record") and kernel memory-management
// sections under the dominant per-process lock ("1 dominant per-process mmap_lock", "kernel mm
// sections of 1-20 us"). MODEL: a record is `sections` steps; each step is user work drawn
// exponential with mean burst/sections, then one critical section of
//     hold = cs_frac / (1 - cs_frac) * burst / sections
// on lock 0, so the held share of a record's CPU time is cs_frac (note: "CS frac 20-50% at 16+
// vCPUs"; default 0.2, the low end, as the measured share already includes contention). With
// the defaults a hold is 6.25 us, inside the note's 1-20 us. The record is credited when its
// last section is released: "N records/s", records of all threads over the measured time.
// TLB shootdowns (note 3 ebizzy: "a TLB shootdown on each munmap"; note 2: the IPI waiter):
// after its last section a record frees its buffer, and the kernel flushes the TLBs of every
// other vCPU of the VM, the thread spinning until each has run the flush (guest/ipi.h). One
// per record [E]: the 512 KiB buffer is above glibc's initial mmap threshold (munmap), and once
// the dynamic threshold moves it onto the heap, freeing the top chunk trims the heap (brk
// shrink, also a flush). `shootdown` is the acknowledgement latency of a running target: the
// emulated ICR write, ~7k cycles (~2.8 us, note 1.3 "Guest IPI send", the X7560 of 002 has no
// posted interrupts), plus the flush handler [E], so 3 us; 0 turns shootdowns off.
// The rwsem's sleeping side and page faults are not modelled. This is `kernel: mmap-lock`, the
// default; `kernel: arena-trim` is EbizzyArenaTrim below.
//
// dbench (note 3, "dbench"): each client replays file-system operations; an op is a syscall
// of `op_time` CPU time ("Syscalls of 2-20 us"; default 10 us) with `sections` lock
// acquisitions ("several kernel lock acquisitions per op"; default 3), each on one of
// `hot_locks` global locks drawn uniformly ("a few hot global ones"; default 2; the many
// fine-grained locks are uncontended and folded into the unlocked work), holding cs_frac of the
// op ("CS frac 10-30%"; default 0.2). MB/s = ops x kb_per_op / 1000 per second. kb_per_op is
// CALIBRATED [E] from note 6 / calibration 002's commit: 15035.3 MB/s at 1x with a 32-vCPU
// guest, taken as 32 clients each running alone: 15035.3 / 32 MB/s per client at 1e5 ops/s
// = 4.7 KB per op. tmpfs-like: no I/O waits (note: "About 0 on tmpfs").
//
// Lock parameters, shared by both (`lock` picks the kind: ticket | pvticket | mutex):
//   spin_loop (ns per loop), spin_threshold (loops), kick_latency, handoff, pv_flavour
//   (kvm | xen): see spinlock.h, LockParams, for the source of each default.
#pragma once

#include "guest/workload.h"

namespace vcpusim::guest {

/// The lock ParamSpecs common to lock-bound workloads, and reading them back.
std::vector<sim::ParamSpec> lock_param_specs();
LockParams read_lock_params(const sim::ParamValues& v);

class Ebizzy final : public Workload {
 public:
  static std::vector<sim::ParamSpec> param_specs();
  static std::unique_ptr<Workload> make(const sim::ParamValues& v);
  Ebizzy(std::uint32_t threads, double burst_ns, double cs_frac, std::uint32_t sections, double mem_intensity,
         LockParams lock, double shootdown_ns = 0.0, double record_scale = 1.0);
  std::string_view kind() const override { return "ebizzy"; }
  std::uint32_t threads() const override { return threads_; }
  Step next(std::uint32_t thread, sim::RngStream& rng) override;
  std::string_view unit() const override { return "records/s"; }
  std::vector<LockSpec> locks() const override { return {LockSpec{"mmap_lock", lock_}}; }
  bool sends_ipis() const override { return shootdown_ > 0; }
  double hold_ns() const { return hold_; }

 private:
  std::uint32_t threads_;
  double burst_, hold_, mem_, shootdown_, record_scale_;
  std::uint32_t sections_;
  LockParams lock_;
  std::vector<std::uint32_t> pos_;  ///< next section per thread
};

/// ebizzy with `kernel: arena-trim`: a record follows the path glibc 2.17 and Linux 3.10 take
/// for ebizzy's default mode (no -m/-M); lock_workloads.cpp opens with the derivation and the
/// source of every number. Locks: 0 = the zone's lru_lock, 1 = the zone's (buddy) lock.
class EbizzyArenaTrim final : public Workload {
 public:
  struct Params {
    std::uint32_t threads = 4;
    double burst_ns = 100e3;            ///< user time per record (memcpy + bsearch)
    double mem_intensity = 0.5;
    std::uint32_t chunk_pages = 128;    ///< ebizzy -s 512 KiB / 4 KiB pages
    std::uint32_t top_pad_pages = 32;   ///< glibc DEFAULT_TOP_PAD 128 KiB: pages heap_trim keeps
    std::uint32_t pagevec = 14;         ///< PAGEVEC_SIZE (3.10)
    std::uint32_t gather_bundle = 8;    ///< MMU_GATHER_BUNDLE: mmu_gather's on-stack batch
    std::uint32_t pcp_batch = 31;       ///< zone_batchsize() for a zone of 2 GiB or more
    std::uint32_t pcp_high = 186;       ///< 6 x batch (setup_pageset)
    double fault_ns = 1500;             ///< one anonymous fault outside the locks [E]
    double zap_ns = 100;                ///< zap_pte_range per page [E]
    double free_ns = 50;                ///< free_hot_cold_page per page [E]
    double syscall_ns = 1000;           ///< madvise entry/exit, vma lookup, mmap_sem read [E]
    double lock_page_ns = 35;           ///< per page under lru_lock / zone->lock [E]
    double lock_miss_ns = 100;          ///< per acquisition: the lock's data on another socket
    double shootdown_ns = 3e3;          ///< as Ebizzy's `shootdown`
    double record_scale = 1.0;
  };
  /// One step of a record, before the user/kernel work is drawn.
  struct Segment {
    double work_ns = 0;   ///< mean unlocked work before the lock (or before the call / the end)
    std::int32_t lock = -1;
    double hold_ns = 0;
    bool shootdown = false;
    bool last = false;    ///< the record is credited when this step completes
    bool user = true;     ///< work_ns is mostly user time (the memcpy), not kernel (faults, madvise)
  };
  static constexpr std::int32_t kLruLock = 0;
  static constexpr std::int32_t kZoneLock = 1;

  explicit EbizzyArenaTrim(const Params& p, LockParams lock);
  std::string_view kind() const override { return "ebizzy"; }
  std::uint32_t threads() const override { return p_.threads; }
  Step next(std::uint32_t thread, sim::RngStream& rng) override;
  std::string_view unit() const override { return "records/s"; }
  std::vector<LockSpec> locks() const override {
    // Both with interrupts off in 3.10: lru_lock by spin_lock_irqsave (pagevec_lru_move_fn,
    // release_pages), zone->lock inside the local_irq_save of buffered_rmqueue and
    // free_hot_cold_page (rmqueue_bulk, free_pcppages_bulk).
    LockParams p = lock_;
    p.irqs_off = true;
    return {LockSpec{"lru_lock", p}, LockSpec{"zone_lock", p}};
  }
  bool sends_ipis() const override { return p_.shootdown_ns > 0; }
  /// The segments of `thread`'s next record into `out` (cleared first; its capacity is reused, so
  /// a run allocates nothing per record once every thread's vector has grown), advancing the
  /// thread's per-CPU-page-list count: what next() replays.
  void build_record(std::uint32_t thread, std::vector<Segment>& out);
  /// The same into a new vector, for tests that read a record's structure.
  std::vector<Segment> build_record(std::uint32_t thread) {
    std::vector<Segment> out;
    build_record(thread, out);
    return out;
  }
  /// Pages a record faults in and frees again: chunk - top pad.
  std::uint32_t faulted_pages() const { return p_.chunk_pages - p_.top_pad_pages; }
  double hold_ns(std::uint32_t pages) const { return pages * p_.lock_page_ns + p_.lock_miss_ns; }
  const Params& params() const { return p_; }

 private:
  struct ThreadState {
    std::vector<Segment> record;
    std::size_t pos = 0;
    std::uint32_t pcp = 0;  ///< pages on the per-CPU list (the thread's own: see the .cpp)
  };
  Params p_;
  LockParams lock_;
  std::vector<ThreadState> ts_;
};

class Dbench final : public Workload {
 public:
  static std::vector<sim::ParamSpec> param_specs();
  static std::unique_ptr<Workload> make(const sim::ParamValues& v);
  Dbench(std::uint32_t threads, double op_ns, double cs_frac, std::uint32_t sections, std::uint32_t hot_locks,
         double kb_per_op, LockParams lock);
  std::string_view kind() const override { return "dbench"; }
  std::uint32_t threads() const override { return threads_; }
  Step next(std::uint32_t thread, sim::RngStream& rng) override;
  std::string_view unit() const override { return "MB/s"; }
  std::vector<LockSpec> locks() const override;

 private:
  std::uint32_t threads_;
  double pre_, hold_, mb_per_op_;
  std::uint32_t sections_, hot_;
  LockParams lock_;
  std::vector<std::uint32_t> pos_;
};

}  // namespace vcpusim::guest
