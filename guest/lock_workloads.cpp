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
      ParamSpec{"spin_threshold", ParamSpec::Kind::kInt, static_cast<double>(d.spin_threshold), 1, 1 << 30, {},
       "SPIN_THRESHOLD loops before a PV waiter halts (Linux 1 << 15, note 1.1)"}.acting_only_with("lock", {"pvticket"}),
      ParamSpec{"kick_latency", ParamSpec::Kind::kDuration, static_cast<double>(d.kick_latency), 0, 1e9, {},
       "PV kick hypercall/event send to wake-up in the host (note 1.3: exit 0.4-1.5 us)"}.acting_only_with("lock", {"pvticket"}),
      {"handoff", ParamSpec::Kind::kDouble, d.handoff_ns, 0, 1e6, {},
       "ns to move the lock to the next waiter (note 1.4: 20-50 ns)"},
      ParamSpec{"spin_wait", ParamSpec::Kind::kInt, static_cast<double>(d.spin_wait_loops), 1, 1 << 30, {},
       "spin loops before a waiter sleeps (InnoDB: 30 rounds x mean 3 units x 50 PAUSEs = 4500, note 1.1)"}.acting_only_with("lock", {"adaptive"}),
      ParamSpec{"pv_flavour", ParamSpec::Kind::kChoice, 0, 0, 1, {"kvm", "xen"},
       "PV slow path: kvm (halt, any interrupt wakes) or xen (poll the kicker event channel)"}.acting_only_with("lock", {"pvticket"}),
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
      ParamSpec{"cs_frac", ParamSpec::Kind::kDouble, 0.2, 0.0, 0.9, {},
       "share of a record's CPU time holding mmap_lock (note 3: 20-50% at 16+ vCPUs)"}.acting_only_with("kernel", {"mmap-lock"}),
      ParamSpec{"sections", ParamSpec::Kind::kInt, 4, 1, 1024, {},
       "mmap_lock critical sections per record [E] (4: holds of 6.25 us, note 3: 1-20 us)"}.acting_only_with("kernel", {"mmap-lock"}),
      {"mem_intensity", ParamSpec::Kind::kDouble, 0.5, 0.0, 1.0, {},
       "memory-stall share (note 3: high, ~1.5 MiB moved per record) [E]"},
      {"shootdown", ParamSpec::Kind::kDuration, 3e3, 0, 1e9, {},
       "TLB shootdown per record to every other vCPU, ack latency of a running target (note 1.3: ICR write "
       "~2.8 us + flush) [E]; 0: none"},
      {"record_scale", ParamSpec::Kind::kDouble, 1.0, 1e-6, 1e6, {},
       "published records per modelled record (a unit calibration, like dbench's kb_per_op)"},
      {"kernel", ParamSpec::Kind::kChoice, 0, 0, 1, {"mmap-lock", "arena-trim"},
       "mmap-lock: one exclusive mmap_lock section per step (cs_frac, sections); arena-trim: glibc 2.17 "
       "heap_trim + Linux 3.10 faults, lru_lock/zone->lock batches and one madvise shootdown per record"},
      ParamSpec{"chunk_pages", ParamSpec::Kind::kInt, 128, 2, 1 << 20, {},
       "pages per record's buffer (ebizzy -s 512 KiB / 4 KiB; above top_pad_pages)"}.acting_only_with("kernel", {"arena-trim"})
          .greater_than("top_pad_pages"),
      ParamSpec{"top_pad_pages", ParamSpec::Kind::kInt, 32, 0, 1 << 20, {},
       "pages heap_trim leaves mapped (glibc DEFAULT_TOP_PAD 131072 B)"}.acting_only_with("kernel", {"arena-trim"}),
      ParamSpec{"pagevec", ParamSpec::Kind::kInt, 14, 1, 4096, {}, "PAGEVEC_SIZE (Linux 3.10)"}.acting_only_with("kernel", {"arena-trim"}),
      ParamSpec{"gather_bundle", ParamSpec::Kind::kInt, 8, 1, 4096, {},
       "MMU_GATHER_BUNDLE, the mmu_gather's on-stack batch (Linux 3.10)"}.acting_only_with("kernel", {"arena-trim"}),
      ParamSpec{"pcp_batch", ParamSpec::Kind::kInt, 31, 1, 4096, {},
       "per-CPU page list batch (3.10 zone_batchsize() for a zone of 2 GiB or more)"}.acting_only_with("kernel", {"arena-trim"}),
      ParamSpec{"pcp_high", ParamSpec::Kind::kInt, 186, 2, 1 << 20, {},
       "per-CPU page list high mark (3.10 setup_pageset: 6 x batch; above the batch)"}.acting_only_with("kernel", {"arena-trim"})
          .greater_than("pcp_batch"),
      ParamSpec{"fault_cost", ParamSpec::Kind::kDuration, 1500, 0, 1e9, {},
       "one anonymous page fault outside the locks, 4 KiB clear included [E]"}.acting_only_with("kernel", {"arena-trim"}),
      ParamSpec{"zap_cost", ParamSpec::Kind::kDuration, 100, 0, 1e9, {}, "zap_pte_range per page [E]"}.acting_only_with("kernel", {"arena-trim"}),
      ParamSpec{"free_cost", ParamSpec::Kind::kDuration, 50, 0, 1e9, {},
       "free_hot_cold_page per page [E]"}.acting_only_with("kernel", {"arena-trim"}),
      ParamSpec{"syscall_cost", ParamSpec::Kind::kDuration, 1000, 0, 1e9, {},
       "madvise entry/exit, find_vma, mmap_sem read [E]"}.acting_only_with("kernel", {"arena-trim"}),
      ParamSpec{"lock_page_cost", ParamSpec::Kind::kDuration, 35, 0, 1e9, {},
       "per page under lru_lock or zone->lock (note 1.4: 20-50 ns, mid) [E]"}.acting_only_with("kernel", {"arena-trim"}),
      ParamSpec{"lock_miss", ParamSpec::Kind::kDuration, 100, 0, 1e9, {},
       "per acquisition, the lock's lines on another socket (note 1.4: +50-150 ns, mid) [E]"}.acting_only_with("kernel", {"arena-trim"}),
  };
  for (auto& p : lock_param_specs()) s.push_back(std::move(p));
  return s;
}

std::unique_ptr<Workload> Ebizzy::make(const sim::ParamValues& v) {
  if (static_cast<int>(v.get("kernel", 0)) == 1) {
    EbizzyArenaTrim::Params p;
    p.threads = static_cast<std::uint32_t>(v.get("threads", 4));
    p.burst_ns = v.get("burst", p.burst_ns);
    p.mem_intensity = v.get("mem_intensity", p.mem_intensity);
    p.chunk_pages = static_cast<std::uint32_t>(v.get("chunk_pages", p.chunk_pages));
    p.top_pad_pages = static_cast<std::uint32_t>(v.get("top_pad_pages", p.top_pad_pages));
    p.pagevec = static_cast<std::uint32_t>(v.get("pagevec", p.pagevec));
    p.gather_bundle = static_cast<std::uint32_t>(v.get("gather_bundle", p.gather_bundle));
    p.pcp_batch = static_cast<std::uint32_t>(v.get("pcp_batch", p.pcp_batch));
    p.pcp_high = static_cast<std::uint32_t>(v.get("pcp_high", p.pcp_high));
    p.fault_ns = v.get("fault_cost", p.fault_ns);
    p.zap_ns = v.get("zap_cost", p.zap_ns);
    p.free_ns = v.get("free_cost", p.free_ns);
    p.syscall_ns = v.get("syscall_cost", p.syscall_ns);
    p.lock_page_ns = v.get("lock_page_cost", p.lock_page_ns);
    p.lock_miss_ns = v.get("lock_miss", p.lock_miss_ns);
    p.shootdown_ns = v.get("shootdown", p.shootdown_ns);
    p.record_scale = v.get("record_scale", p.record_scale);
    return std::make_unique<EbizzyArenaTrim>(p, read_lock_params(v));
  }
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

// --- ebizzy, kernel: arena-trim ---------------------------------------------------------------
//
// What one record of ebizzy's default mode costs a 2013 guest (glibc 2.17, Linux 3.10), read in
// the sources (public copies; the versions are the nearest ones the library holds):
//
// ebizzy (ebizzy.c search_mem): per record alloc_mem(512 KiB) = malloc, memcpy a chunk into it,
//   bsearch, free_mem = free. 64 threads (-t default 2 x CPUs, note 3).
// glibc malloc/arena.c (the 2.15-2.17 form: copyright 2001-2011, PER_THREAD, public_mALLOc):
//   - a new thread's first malloc finds no arena in its TSD: arena_get2 -> _int_new_arena while
//     narenas < narenas_limit = NARENAS_FROM_NCORES(32) = 8 x 32 on 64-bit, so each of the 64
//     threads has its own arena and heap (HEAP_MAX_SIZE 64 MiB, new_heap). Distributions built
//     PER_THREAD with --enable-experimental-malloc (Fedora/RHEL spec files).
//   - malloc.c free(): the first 512 KiB buffer is above the initial mmap threshold (128 KiB)
//     and was mmapped; freeing it sets mp_.mmap_threshold = chunksize (and trim_threshold to
//     2x), so every later 512 KiB malloc comes from the thread's arena.
//   - _int_free of a chunk bordering top merges it into top; for a non-main arena it "always
//     tries heap_trim()" with pad = mp_.top_pad; heap_trim of this era has no trim_threshold
//     test (that came with commit c26efef9, "malloc: Consistently apply trim_threshold to all
//     heaps [BZ #17195]", 2015): extra = (top_size - pad - MINSIZE - 1) & ~(pagesz - 1), and
//     any extra >= one page goes to shrink_heap -> madvise(MADV_DONTNEED) (the MAP_FIXED
//     remap only for __libc_enable_secure). grow_heap mprotects only above mprotect_size,
//     which never shrinks here, so the next malloc makes no syscall.
//   - mp_.top_pad = DEFAULT_TOP_PAD = 131072 (sysdeps/generic/malloc-machine.h). So after each
//     free the heap keeps top_pad + MINSIZE (+ < 1 page) mapped and releases the rest: each
//     record re-faults and re-releases 512 KiB - 128 KiB = 96 pages (chunk_pages -
//     top_pad_pages).
// Linux 3.10 (AndreiLux/ref-3.10, a 3.10.9 tree, for mm/swap.c, swap_state.c, memory.c,
//   page_alloc.c):
//   - a fault: do_anonymous_page allocates a zeroed page (buffered_rmqueue: from the per-CPU
//     list; only an empty list is refilled, rmqueue_bulk(pcp->batch) under zone->lock), sets
//     the PTE under the split PTE lock of the thread's own heap (uncontended), and
//     lru_cache_add_lru -> __lru_cache_add: a per-CPU pagevec of PAGEVEC_SIZE 14, drained
//     (pagevec_lru_move_fn: the whole pagevec under zone->lru_lock) when it is already full.
//     mmap_sem is taken for read only.
//   - madvise(MADV_DONTNEED): madvise_need_mmap_write() is 0 for it (mm/madvise.c), so
//     down_read; zap_page_range: lru_add_drain() (the pagevec's remaining pages under
//     lru_lock), unmap the PTEs into the mmu_gather (an on-stack batch of MMU_GATHER_BUNDLE 8,
//     then one page-sized batch: no flush before the end for 96 pages), tlb_finish_mmu ->
//     tlb_flush_mmu: tlb_flush (x86 flush_tlb_mm_range -> flush_tlb_others ->
//     smp_call_function_many(mm_cpumask, flush_tlb_func, wait=1): the shootdown), then
//     free_pages_and_swap_cache per gather batch, which calls release_pages on at most
//     PAGEVEC_SIZE pages at a time, each call holding lru_lock across its pages; the freed
//     pages go to free_hot_cold_page: onto the per-CPU list, which drains pcp->batch pages to
//     the buddy lists under zone->lock once count >= pcp->high.
//   - zone_batchsize(): batch 31 for zones of 2 GiB or more, high = 6 x batch = 186 (the 2013
//     values Dave Hansen quotes from /proc/zoneinfo in his Sept 2013 linux-mm mail).
//   An 8 GB guest without guest NUMA allocates user pages from its Normal zone: one lru_lock
//   and one zone->lock for all 32 vCPUs.
//
// So a record, in order: copy the 32 resident pages; 96 x (fault: maybe a pcp refill under
// zone->lock; clear and map the page; every 14th fault drains the pagevec under lru_lock; copy
// the page); bsearch; madvise: lru_add_drain (12 pages under lru_lock), zap 96 PTEs, the
// shootdown, release_pages on 8 | 14 x 6 | 4 pages (8 lru_lock holds), each batch then freed to
// the per-CPU list (a drain under zone->lock when it reaches high). Per record in steady state:
// 15 lru_lock acquisitions holding 192 page-operations, 1 shootdown and no zone->lock: 96 pages
// taken from and returned to a per-CPU list whose high mark (186) exceeds 96, so the list, once
// it holds 96-185 pages after a record, absorbs the next one (the first record refills it).
//
// Costs. Holds: hold(n) = n x lock_page_cost + lock_miss: note 1.4's "cost 20-50 ns" per
// cache-hot list operation (35, the middle; the pages' own lines are the faulting CPU's) plus
// one "50-150 ns if the cacheline is on the other socket" (100) for the lock's and the list
// head's lines, which move between the X7560's four sockets at every hand-off; so 0.59 us for
// a full pagevec, inside note 1.3's "guest critical sections of ~0.1-2 us". Unlocked kernel
// work, folded into the segments between the holds: fault_cost 1.5 us per fault, zap_cost
// 0.1 us and free_cost 0.05 us per page, syscall_cost 1 us per madvise: [E] estimates (a 4 KiB
// clear at a few GB/s is ~0.5-1 us of the fault; no measurement of the X7560 guest is at
// hand). `burst` (default: note 3's 100 us of user time, as the mmap-lock model) is everything
// else a record costs outside those sections, spread evenly over the 128 pages the memcpy
// writes; a study calibrates it where a measured rate says what a record costs (the PV-spinlock
// reproduction: 5.74 ms of vCPU time per record from its 1x cell, configs/reproduce).
// MODEL: the per-CPU list is kept per thread, not per vCPU (a thread does not know its vCPU
// here); two threads that share a vCPU interleave records only at a guest context switch, so
// the steady state (no zone->lock) is what a vCPU sees too, give or take a refill or drain per
// switch. The mmap_sem read side (an atomic on one shared line per fault and per madvise), the
// PTE lock, the mmu_gather batch page and the memcg charge are folded into fault_cost /
// syscall_cost. The flush handler's own CPU time on the targets is not charged (guest/ipi.h).

EbizzyArenaTrim::EbizzyArenaTrim(const Params& p, LockParams lock) : p_(p), lock_(lock), ts_(p.threads) {
  // The loader refuses these pairs (ParamSpec::greater_than); kept for models built directly.
  if (p_.top_pad_pages >= p_.chunk_pages) p_.top_pad_pages = p_.chunk_pages - 1;
  if (p_.pcp_high <= p_.pcp_batch) p_.pcp_high = p_.pcp_batch + 1;
}

void EbizzyArenaTrim::build_record(std::uint32_t thread, std::vector<Segment>& out) {
  out.clear();
  std::uint32_t& pcp = ts_[thread].pcp;
  double acc = 0;       // unlocked work since the last emitted segment
  double acc_user = 0;  // the part of it that is user time (the memcpy)
  // A segment's guest mode is the one it spends most of its time in (Step::user_mode).
  auto emit = [&](std::int32_t lock, std::uint32_t pages) {
    Segment s;
    s.work_ns = acc;
    s.lock = lock;
    s.hold_ns = hold_ns(pages);
    s.user = acc_user >= acc - acc_user;
    out.push_back(s);
    acc = acc_user = 0;
  };
  const double per_page_user = p_.burst_ns / p_.chunk_pages;
  const std::uint32_t faults = faulted_pages();
  // memcpy over the pages heap_trim kept (no faults there).
  acc += p_.top_pad_pages * per_page_user;
  acc_user += p_.top_pad_pages * per_page_user;
  std::uint32_t pvec = 0;  // zap_page_range's lru_add_drain() emptied it at the last record's end
  for (std::uint32_t f = 0; f < faults; ++f) {
    if (pcp == 0) {  // buffered_rmqueue: empty per-CPU list -> rmqueue_bulk under zone->lock
      emit(kZoneLock, p_.pcp_batch);
      pcp += p_.pcp_batch;
    }
    --pcp;
    acc += p_.fault_ns;
    if (pvec == p_.pagevec) {  // __lru_cache_add: drain a full pagevec under lru_lock
      emit(kLruLock, pvec);
      pvec = 0;
    }
    ++pvec;
    acc += per_page_user;  // the memcpy of this page (the bsearch folds into the last one)
    acc_user += per_page_user;
  }
  // free() -> heap_trim -> madvise(MADV_DONTNEED) -> zap_page_range.
  acc += p_.syscall_ns;
  if (pvec > 0) emit(kLruLock, pvec);  // lru_add_drain()
  acc += faults * p_.zap_ns;
  Segment flush;  // tlb_finish_mmu -> tlb_flush: the shootdown, before any page is freed
  flush.work_ns = acc;
  flush.shootdown = true;
  flush.user = acc_user >= acc - acc_user;
  out.push_back(flush);
  acc = acc_user = 0;
  // free_pages_and_swap_cache per mmu_gather batch, release_pages per PAGEVEC_SIZE pages.
  const std::uint32_t batches[2] = {std::min(faults, p_.gather_bundle), faults - std::min(faults, p_.gather_bundle)};
  for (const std::uint32_t b : batches) {
    for (std::uint32_t done = 0; done < b;) {
      const std::uint32_t n = std::min(p_.pagevec, b - done);
      emit(kLruLock, n);
      for (std::uint32_t i = 0; i < n; ++i) {  // free_hot_cold_page_list
        acc += p_.free_ns;
        if (++pcp >= p_.pcp_high) {
          emit(kZoneLock, p_.pcp_batch);  // free_pcppages_bulk under zone->lock
          pcp -= p_.pcp_batch;
        }
      }
      done += n;
    }
  }
  Segment end;  // the last batch's frees; free() returns: the record is done
  end.work_ns = acc;
  end.last = true;
  end.user = false;  // release_pages and the per-CPU list, in madvise
  out.push_back(end);
}

Step EbizzyArenaTrim::next(std::uint32_t thread, sim::RngStream& rng) {
  ThreadState& t = ts_[thread];
  if (t.pos >= t.record.size()) {
    build_record(thread, t.record);
    t.pos = 0;
  }
  const Segment& g = t.record[t.pos++];
  Step s;
  s.work_ns = g.work_ns > 0 ? std::max(1.0, rng.exponential(g.work_ns)) : 1.0;
  s.profile = hv::Profile::kMemory;
  s.mem_intensity = p_.mem_intensity;
  s.lock = g.lock;
  s.hold_ns = g.lock >= 0 ? g.hold_ns : 0.0;
  s.shootdown_ns = g.shootdown ? p_.shootdown_ns : 0.0;
  s.result = g.last ? p_.record_scale : 0.0;
  s.user_mode = g.user;
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
       "KB moved per op, the unit calibration of MB/s: a study sets it from its measured 1x cell "
       "(configs/reproduce/pv-spinlocks.yaml: 21.70); the default is a placeholder"},
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
  s.user_mode = false;  // an op is file-system system calls (note 3: "Syscalls, VFS metadata")
  return s;
}

}  // namespace vcpusim::guest
