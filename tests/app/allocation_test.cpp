// SPDX-License-Identifier: MIT
// The event loop allocates nothing per event (the project's speed promise, README "Speed"). This
// executable replaces the global operator new with a counting one and runs each scenario twice,
// for T and 2T of simulated time: the second run handles about twice the events, so any
// allocation per event (or per lock hand-off, message, wake-up ...) shows up as thousands more
// allocations. What may legitimately differ is growth to a new high-water mark (a wait queue
// that once holds more waiters than before doubles its ring): O(log n) allocations per run, a
// handful. The bound, one allocation per 10^4 extra events, sits between the two: a std::deque
// used as a FIFO allocated about once per 250 events here before guest/fifo_ring.h.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <string>

#include "app/runner.h"
#include "loader_support.h"

namespace {
std::atomic<std::uint64_t> g_allocations{0};
}  // namespace

// These are the program's replacement allocation functions, so the library's `delete` of memory
// from `new` reaches the free() below for memory the malloc() below gave. GCC 12 sees only the
// library's new/delete pairing when it inlines (the sanitizer build does) and calls it mismatched.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// Every replaceable form is replaced, each pair on malloc/free (aligned_alloc for the aligned
// ones, which free() releases too): a form left out reaches the default one, and under the
// address sanitizer a nothrow new (std::stable_sort's buffer) freed here was a mismatch.
namespace {
void* counted(std::size_t n, std::size_t align = 0) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = 1;
  if (align > alignof(std::max_align_t)) return std::aligned_alloc(align, (n + align - 1) / align * align);
  return std::malloc(n);
}
void* counted_or_throw(std::size_t n, std::size_t align = 0) {
  if (void* p = counted(n, align)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return counted_or_throw(n); }
void* operator new[](std::size_t n) { return counted_or_throw(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted(n); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace vcpusim {
namespace {

struct Count {
  std::uint64_t events = 0, allocations = 0;
};

Count run_for(app::ScenarioSpec spec, sim::Duration d) {
  spec.duration = d;
  const std::uint64_t before = g_allocations.load();
  const app::RunResult r = app::run_scenario(spec, 7);
  return Count{r.events, g_allocations.load() - before};
}

// Runs `spec` for T and 2T and checks that the extra events came without extra allocations.
void expect_no_allocation_per_event(const app::ScenarioSpec& spec, sim::Duration t) {
  const Count a = run_for(spec, t);
  const Count b = run_for(spec, 2 * t);
  ASSERT_GT(b.events, a.events + 10'000) << "too few events to tell";
  const std::uint64_t extra_events = b.events - a.events;
  const std::uint64_t extra_allocs = b.allocations > a.allocations ? b.allocations - a.allocations : 0;
  EXPECT_LE(extra_allocs * 10'000, extra_events)
      << extra_allocs << " more allocations for " << extra_events << " more events (" << a.allocations << " in "
      << a.events << " events, " << b.allocations << " in " << b.events << ")";
}

TEST(Allocation, DefaultScenarioAllocatesNothingPerEvent) {
  expect_no_allocation_per_event(app::load_default_scenario(), sim::seconds(2));
}

// Ticket and PV ticket spinlocks, halts and kicks, TLB-shootdown IPIs and pause-loop exits; and
// the same with a 5.x stack's kick boost and PV TLB flush.
TEST(Allocation, SpinlocksIpisAndPleAllocateNothingPerEvent) {
  for (const char* lock : {"ticket", "pvticket"})
    for (const char* later : {"", ", kick_boost: true}\nguest: {pv_tlb_flush: true"}) {
      SCOPED_TRACE(std::string(lock) + later);
      expect_no_allocation_per_event(test::load(std::string(R"(
name: t
duration: 1s
warmup: 50ms
topology: desktop-4c8t
host: {scheduler: {policy: cfs}, ple: {enabled: true})") + later + R"(}
vms:
  - {name: eb, count: 2, vcpus: 8, workload: {kind: ebizzy, threads: 16, lock: )" + lock + R"(}}
)"),
                                     sim::ms(200));
    }
}

// dbench's clients under credit2: its locks, I/O waits and sleeps.
TEST(Allocation, DbenchUnderCredit2AllocatesNothingPerEvent) {
  expect_no_allocation_per_event(test::load(R"(
name: t
duration: 1s
warmup: 50ms
topology: desktop-4c8t
host: {scheduler: {policy: credit2}}
vms:
  - {name: db, count: 2, vcpus: 8, workload: {kind: dbench, threads: 8}}
)"),
                                 sim::ms(200));
}

// sysbench 0.4's barging pthread mutexes: futex sleeps and wake-ups of halted vCPUs.
TEST(Allocation, BlockingMutexesAllocateNothingPerEvent) {
  expect_no_allocation_per_event(test::load(R"(
name: t
duration: 1s
warmup: 50ms
topology: xeon-x5570-2s
host: {scheduler: {policy: credit2}}
vms:
  - name: db
    count: 10
    vcpus: 2
    workload: {kind: sysbench-memory, threads: 4, block_size: 1KiB, thread_bandwidth: 208.5, mem_intensity: 0.0,
               version: "0.4", events_per_step: 1}
)"),
                                 sim::ms(200));
}

// memcached and mutilate's request/reply channels, under cfs with cookie core scheduling, with
// flat runqueues and with each VM a task group (group runqueues, their averages, reweights), and
// with KVM halt polling (polls, their wake-ups and timeouts, polls cut by core-wide picks).
TEST(Allocation, ChannelsUnderCoreSchedulingAllocateNothingPerEvent) {
  for (const char* host : {"cgroups: none}", "cgroups: per-domain}", "cgroups: per-domain}, halt_poll: {enabled: true}"}) {
    SCOPED_TRACE(host);
    expect_no_allocation_per_event(test::load(std::string(R"(
name: t
duration: 1s
warmup: 50ms
topology: desktop-4c8t
host: {scheduler: {policy: cfs, )") + host + R"(, core_scheduling: cookie}
vms:
  - {name: vm, count: 2, vcpus: 8, workload: {kind: mutilate, threads: 4}}
)"),
                                   sim::ms(200));
  }
}

}  // namespace
}  // namespace vcpusim
