// SPDX-License-Identifier: MIT
// Pins what defines each request/reply and benchmark workload model (docs/workloads/): the
// channel's hand-over rules; mutilate's closed loop (one client's QPS is bounded by one
// request's round trip, more clients raise it, everyone sleeps between requests, bare-metal
// cookies per process); specint-rate's copies never block and its score follows the straggler;
// cassandra's hand-offs put threads to sleep and wake them; hammerdb's latch waiters spin;
// specvirt-mix delivers its offered load on an idle machine; ebizzy's `kernel: arena-trim` record
// takes lru_lock once per pagevec drain and release_pages batch, zone->lock only when its per-CPU
// list crosses empty or high, and one shootdown between the zap and the frees.
#include <gtest/gtest.h>

#include "app/runner.h"
#include "app/scenario.h"
#include "guest/channel.h"
#include "guest/lock_workloads.h"
#include "guest/mutilate.h"
#include "guest/specint_rate.h"

namespace vcpusim {
namespace {

constexpr double kGuestCs = static_cast<double>(guest::GuestParams{}.context_switch);  // ns per switch to a thread

app::RunResult run(const std::string& yaml) {
  const app::ScenarioSpec s = app::load_scenario(app::YamlReader::load_string(yaml, "t.yaml"));
  return app::run_scenario(s, s.seed);
}

std::string vm_scenario(const std::string& workload, int vcpus, const std::string& extra_vm = "",
                        const std::string& duration = "1s") {
  return "name: t\nduration: " + duration + "\nwarmup: 100ms\ntopology: desktop-4c8t\n"
         "host: {scheduler: {policy: cfs}}\n"
         "vms:\n  - {name: g, vcpus: " + std::to_string(vcpus) + ", workload: " + workload + extra_vm + "}\n";
}

// One vCPU pinned per core (0-3 are the first threads of the four cores): no sibling sharing.
const char* kPinnedPerCore = ", affinity: {per_vcpu: [{hard: 'cpus:[0]'}, {hard: 'cpus:[1]'}, {hard: 'cpus:[2]'}, {hard: 'cpus:[3]'}]}";

}  // namespace

TEST(Channel, QueuedMessagesAreReceivedInOrder) {
  guest::Channel c;
  EXPECT_EQ(c.send({1, 10}), guest::Channel::kNone);
  EXPECT_EQ(c.send({2, 20}), guest::Channel::kNone);
  guest::Message m;
  ASSERT_TRUE(c.receive(7, m));
  EXPECT_EQ(m.payload, 1u);
  ASSERT_TRUE(c.receive(7, m));
  EXPECT_EQ(m.payload, 2u);
  EXPECT_FALSE(c.receive(7, m));  // empty: thread 7 now waits
  EXPECT_EQ(c.waiting(), 1u);
}

TEST(Channel, SendHandsTheMessageToTheFirstWaiter) {
  guest::Channel c;
  guest::Message m;
  EXPECT_FALSE(c.receive(3, m));
  EXPECT_FALSE(c.receive(5, m));
  EXPECT_EQ(c.send({9, 0}), 3u);  // FIFO of waiters: 3 first, and nothing is queued
  EXPECT_EQ(c.queued(), 0u);
  EXPECT_EQ(c.send({9, 0}), 5u);
  EXPECT_EQ(c.send({9, 0}), guest::Channel::kNone);
  EXPECT_EQ(c.queued(), 1u);
}

TEST(Channel, QueueGrowsPastItsFirstSizeAndKeepsOrder) {
  guest::Channel c;
  for (std::uint64_t i = 0; i < 100; ++i) c.send({i, 0});
  guest::Message m;
  for (std::uint64_t i = 0; i < 100; ++i) {
    ASSERT_TRUE(c.receive(0, m));
    EXPECT_EQ(m.payload, i);
  }
}

TEST(Mutilate, OneClientIsBoundByOneRequestsRoundTrip) {
  // Depth 1: the client's next request waits for the reply, so QPS <= 1 / (client + server
  // CPU per request). Exponential draws over ~50k requests move the mean by < 0.5%.
  const auto r = run(vm_scenario("{kind: mutilate, threads: 1}", 8));
  const guest::Mutilate m(guest::Mutilate::Params{});
  const double bound = 1e9 / m.round_trip_ns();
  const double qps = r.metrics().at("ops_per_sec");
  EXPECT_LT(qps, 1.01 * bound);
  // Switch-ins (the host's 2 us and the guest's 2 us, each way) and wake-ups are all that is
  // added on an idle box (the next test has the exact sum).
  EXPECT_GT(qps, 0.5 * bound);
  EXPECT_GT(r.metrics().at("vm.g.latency_p99_us"), r.metrics().at("vm.g.latency_p50_us"));
}

TEST(Mutilate, EachRequestWakesTwoHaltedVcpusThroughReschedulingIpis) {
  // One client, 8 vCPUs on 8 threads: the client's vCPU sends and halts, the worker's halted vCPU
  // is woken by the reschedule IPI (guest.wake_ipi after the send), switched in (2 us), leaves
  // its idle loop for the worker thread (the guest's switch, gcs = 2 us), serves and replies; the
  // client's vCPU is woken the same way. Newidle balancing on the waker's vCPU never pulls the
  // woken thread back from the halted vCPU it was woken onto, so every request costs
  // round trip + 2 (wake_ipi + 2 us + gcs). Exponential draws over ~30k requests move the mean
  // by < 1%.
  const guest::Mutilate m(guest::Mutilate::Params{});
  for (const double ipi_us : {2.8, 0.0}) {
    const auto r = run(vm_scenario("{kind: mutilate, threads: 1}", 8) + "guest: {wake_ipi: " +
                       std::to_string(ipi_us) + "us}\n");
    const double expect = 1e9 / (m.round_trip_ns() + 2 * (ipi_us * 1e3 + 2e3 + kGuestCs));
    EXPECT_NEAR(r.metrics().at("ops_per_sec"), expect, 0.015 * expect) << "wake_ipi " << ipi_us << " us";
  }
}

TEST(Mutilate, HaltPollingSavesEachWakeUpItsSwitchIn) {
  // The same single client on a KVM host that polls in its halt path (host.halt_poll, the kvm
  // defaults): each halted vCPU halted a few us before its wake-up, inside its window once the
  // window has grown, so the wake-up's IPI finds its thread polling on its pCPU and the guest
  // resumes with no switch-in, only the guest's own switch to the woken thread (gcs). Per
  // request: round trip + 2 x (wake_ipi + gcs).
  const guest::Mutilate m(guest::Mutilate::Params{});
  const auto r = run(
      "name: t\nduration: 1s\nwarmup: 100ms\ntopology: desktop-4c8t\n"
      "host: {scheduler: {policy: cfs}, halt_poll: {enabled: true}}\n"
      "vms:\n  - {name: g, vcpus: 8, workload: {kind: mutilate, threads: 1}}\n");
  const double expect = 1e9 / (m.round_trip_ns() + 2 * (2.8e3 + kGuestCs));
  EXPECT_NEAR(r.metrics().at("ops_per_sec"), expect, 0.015 * expect);
  EXPECT_GT(r.metrics().at("vm.g.poll_success_pct"), 99.0);
  // The request's two vCPUs never leave their pCPUs: each computes its part (and switches to
  // its thread) and polls the rest of the time (both poll while a wake-up IPI is on its way).
  // The other six block for good.
  const double qps = r.metrics().at("ops_per_sec");
  EXPECT_NEAR(r.metrics().at("vm.g.cpu"), 2.0, 0.01);
  const double polling_pcpus = 8 * r.metrics().at("vm.g.poll_pct") / 100;
  EXPECT_NEAR(polling_pcpus, 2.0 - qps * (m.round_trip_ns() + 2 * kGuestCs) * 1e-9, 0.01);
}

TEST(Mutilate, HaltPollingUnderCoreSchedulingIsDeterministic) {
  // Polls, their wake-ups, timeouts and cuts by core-wide picks are events like any other: the
  // same seed gives the same run, bit for bit.
  const std::string y =
      "name: t\nduration: 300ms\nwarmup: 50ms\ntopology: desktop-4c8t\n"
      "host: {scheduler: {policy: cfs, cgroups: per-domain}, halt_poll: {enabled: true}, core_scheduling: cookie}\n"
      "vms:\n  - {name: g, count: 2, vcpus: 8, workload: {kind: mutilate, threads: 5}}\n";
  const auto a = run(y), b = run(y);
  EXPECT_GT(a.metrics().at("vm.g.polls_per_s"), 0.0);
  EXPECT_EQ(a.metrics(), b.metrics());
}

TEST(Mutilate, MoreClientsRaiseQpsWhileCpusAreFree) {
  const double one = run(vm_scenario("{kind: mutilate, threads: 1}", 8)).metrics().at("ops_per_sec");
  const double three = run(vm_scenario("{kind: mutilate, threads: 3}", 8)).metrics().at("ops_per_sec");
  // Three clients on three of the four workers, 6 of 8 vCPUs at most busy: nearly 3x.
  EXPECT_GT(three, 2.4 * one);
}

TEST(Mutilate, ClientsAndWorkersSleepBetweenRequests) {
  // With one client, one of its request's two threads computes at a time: the other vCPUs halt.
  const auto r = run(vm_scenario("{kind: mutilate, threads: 1}", 8));
  EXPECT_GT(r.domains.at(0).blocked_pct, 75.0);
}

TEST(Mutilate, SameSeedGivesTheSameRun) {
  // Channels hand messages over in simulated order only: the closed loop is deterministic.
  const std::string y = vm_scenario("{kind: mutilate, threads: 5}", 8, "", "300ms");
  EXPECT_EQ(run(y).metrics(), run(y).metrics());
}

TEST(Mutilate, BareMetalCookiesAreOnePerProcess) {
  const app::ScenarioSpec s = app::load_scenario(app::YamlReader::load_string(
      "name: t\ntopology: desktop-4c8t\nhost: {scheduler: {policy: cfs}, core_scheduling: cookie}\n"
      "baremetal:\n  - {name: b, workload: {kind: mutilate, threads: 3}}\n",
      "t.yaml"));
  const hv::DomainSpec& d = s.groups.at(0).instances.at(0);
  ASSERT_EQ(d.vcpus, 7u);  // 4 memcached workers + 3 clients
  ASSERT_EQ(d.cookies.size(), 7u);
  for (int t = 1; t < 4; ++t) EXPECT_EQ(d.cookies[t], d.cookies[0]);
  for (int t = 5; t < 7; ++t) EXPECT_EQ(d.cookies[t], d.cookies[4]);
  EXPECT_NE(d.cookies[0], d.cookies[4]);
}

TEST(GuestOs, BareMetalThreadThatSleepsFirstWakesOnItsOwnEntity) {
  // Thread i is entity i on bare metal even when its first step is a sleep (a memcached worker
  // starts in epoll): two threads that mostly compute keep two entities busy, not one.
  const auto r = run(
      "name: t\nduration: 1s\ntopology: desktop-4c8t\nhost: {scheduler: {policy: cfs}}\n"
      "baremetal:\n  - {name: b, workload: {kind: program, threads: 2, phases: [{block: 10us}, {compute: 1ms}]}}\n");
  EXPECT_GT(r.domains.at(0).cpu, 1.9);
}

TEST(SpecintRate, CopiesNeverBlock) {
  const auto r = run(vm_scenario("{kind: specint-rate, threads: 6}", 4));
  EXPECT_EQ(r.domains.at(0).blocked_pct, 0.0);
  EXPECT_NEAR(r.domains.at(0).cpu, 4.0, 1e-6);  // every vCPU always busy
}

TEST(SpecintRate, AloneOnCoresEachCopyCountsOne) {
  // 4 copies pinned one per core, no sibling busy: rate = copies (10 ms steps: one step of
  // quantisation per copy over 1.9 s is 0.5%).
  const auto r = run(vm_scenario("{kind: specint-rate, threads: 4}", 4, kPinnedPerCore, "2s"));
  EXPECT_NEAR(r.domains.at(0).throughput, 4.0, 0.04);
}

TEST(SpecintRate, ScoreIsCopiesTimesTheSlowestCopy) {
  const guest::SpecintRate w(3, 200e6);
  EXPECT_DOUBLE_EQ(*w.aggregate({2.0, 1.0, 3.0}), 3.0);
  // Four copies, two of them on SMT siblings (vCPU 3 pinned to thread 4, core 0's second
  // thread): those two run at the pair factors (0.525 cpu, 0.65 mixed), the other two alone.
  // The work done is about 2 + 2 x 0.6 = 3.2 copies' worth, but the score is 4 x the slowest.
  const char* siblings = ", affinity: {per_vcpu: [{hard: 'cpus:[0]'}, {hard: 'cpus:[1]'}, {hard: 'cpus:[2]'}, {hard: 'cpus:[4]'}]}";
  const auto r = run(vm_scenario("{kind: specint-rate, threads: 4}", 4, siblings, "2s"));
  EXPECT_GT(r.domains.at(0).throughput, 4 * 0.5);
  EXPECT_LT(r.domains.at(0).throughput, 4 * 0.66);
  EXPECT_NEAR(r.domains.at(0).cpu, 4.0, 1e-6);
}

TEST(Cassandra, HandOffsPutThreadsToSleepAndWakeThem) {
  // Two connections: at most two threads runnable at a time (request thread or the stage
  // thread serving it), so the 4 vCPUs halt between hand-offs; every op is two hand-offs.
  const auto r = run(vm_scenario("{kind: cassandra, threads: 2}", 4));
  EXPECT_GT(r.domains.at(0).throughput, 1000.0);
  EXPECT_GT(r.domains.at(0).blocked_pct, 40.0);
  EXPECT_GT(r.domains.at(0).switches_per_s, r.domains.at(0).throughput);
}

TEST(Hammerdb, LatchWaitersSpin) {
  // 8 users on one hot latch in a 4-vCPU VM: contended latches are waited for by spinning.
  const auto r = run(vm_scenario("{kind: hammerdb, threads: 8, latches: 1}", 4));
  const auto& d = r.domains.at(0);
  EXPECT_GT(d.throughput, 0.0);
  EXPECT_GT(d.lock_acquisitions_per_s, 0.0);
  EXPECT_GT(d.spin_pct, 1.0);
  EXPECT_EQ(d.halts_per_s, 0.0);  // user-space spinning never halts the vCPU
}

TEST(Hammerdb, UserSpaceLatchSpinsTakeNoPauseLoopExits) {
  // The same hot latch with PLE on and 8 such VMs on the 8 threads: the waiters' PAUSE loops run
  // in guest user mode, where PLE is ignored (Intel SDM 25.1.3), so they never exit, however long
  // (a 250 us spin against a 1.6 us window) and whoever holds the latch.
  const auto r = run("name: t\nduration: 300ms\nwarmup: 50ms\ntopology: desktop-4c8t\n"
                     "host: {scheduler: {policy: cfs}, ple: {enabled: true}}\n"
                     "vms:\n  - {name: g, count: 8, vcpus: 4, workload: {kind: hammerdb, threads: 8, latches: 1, "
                     "spin_loop: 55}}\n");
  EXPECT_GT(r.metrics().at("vm.g.spin_pct"), 1.0);
  EXPECT_EQ(r.metrics().at("vm.g.ple_exits_per_s"), 0.0);
}

TEST(SpecvirtMix, EachRoleDeliversItsOfferedLoadOnAnIdleMachine) {
  for (const char* role : {"web", "mail", "app", "db"}) {
    SCOPED_TRACE(role);
    const auto r = run(vm_scenario(std::string("{kind: specvirt-mix, role: ") + role + ", threads: 2}", 4,
                                   kPinnedPerCore, "3s"));
    // ~1 ms user loops over 2.9 s with 2 users: exponential draws move the rate by ~2%.
    EXPECT_NEAR(r.domains.at(0).throughput, 1.0, 0.06);
  }
}

namespace {

struct RecordCount {
  int lru = 0, zone = 0, shootdowns = 0, last = 0;
  int lru_before_shootdown = 0;
  double lru_pages = 0;
};

RecordCount count(const guest::EbizzyArenaTrim& w, const std::vector<guest::EbizzyArenaTrim::Segment>& rec) {
  RecordCount c;
  const auto& p = w.params();
  for (const auto& g : rec) {
    if (g.lock == guest::EbizzyArenaTrim::kLruLock) {
      ++c.lru;
      if (c.shootdowns == 0) ++c.lru_before_shootdown;
      c.lru_pages += (g.hold_ns - p.lock_miss_ns) / p.lock_page_ns;
    }
    if (g.lock == guest::EbizzyArenaTrim::kZoneLock) ++c.zone;
    if (g.shootdown) ++c.shootdowns;
    if (g.last) ++c.last;
  }
  return c;
}

}  // namespace

TEST(EbizzyArenaTrim, SteadyRecordTakesLruLockFifteenTimesAndZoneLockNever) {
  // 96 faulted pages (512 KiB - glibc's 128 KiB top pad): pagevec drains at faults 15, 29, ...,
  // 85 (6) and zap_page_range's lru_add_drain of the last 12 (1); release_pages on the
  // mmu_gather's 8 + 88 pages, 14 at a time: 8 | 14 x 6 | 4 (8). Every page goes through
  // lru_lock twice. The per-CPU list (high 186 > 96) absorbs a record once it has been filled.
  guest::EbizzyArenaTrim w(guest::EbizzyArenaTrim::Params{}, guest::LockParams{});
  ASSERT_EQ(w.faulted_pages(), 96u);
  const RecordCount first = count(w, w.build_record(0));
  EXPECT_EQ(first.zone, 4);  // an empty list refilled 31 at a time: 124 >= 96
  for (int r = 0; r < 3; ++r) {
    const RecordCount c = count(w, w.build_record(0));
    EXPECT_EQ(c.lru, 15);
    EXPECT_EQ(c.zone, 0);
    EXPECT_NEAR(c.lru_pages, 192.0, 1e-9);
    EXPECT_EQ(c.shootdowns, 1);
    EXPECT_EQ(c.lru_before_shootdown, 7);  // the TLB flush comes before any page is released
    EXPECT_EQ(c.last, 1);
  }
  // Each thread keeps its own list: thread 1's first record refills too.
  EXPECT_EQ(count(w, w.build_record(1)).zone, 4);
}

TEST(EbizzyArenaTrim, FaultCountFollowsTheTopPadAndTheBatchesFollowTheirSizes) {
  // No top pad: 128 faults -> adds ceil(128 / 14) = 10 (9 full drains + 2 by lru_add_drain),
  // releases 1 (8) + ceil(120 / 14) = 9 -> 20.
  guest::EbizzyArenaTrim::Params p;
  p.top_pad_pages = 0;
  guest::EbizzyArenaTrim w(p, guest::LockParams{});
  w.build_record(0);
  EXPECT_EQ(count(w, w.build_record(0)).lru, 20);
  // A high mark below a record's pages: the list now drains to the buddy lists and refills from
  // them every record (zone->lock in the steady state too).
  p = guest::EbizzyArenaTrim::Params{};
  p.pcp_high = 40;
  guest::EbizzyArenaTrim small(p, guest::LockParams{});
  small.build_record(0);
  const RecordCount c = count(small, small.build_record(0));
  EXPECT_GE(c.zone, 4);
  EXPECT_EQ(c.lru, 15);  // the LRU side does not depend on the per-CPU list
}

TEST(EbizzyArenaTrim, HoldsAreBatchPagesTimesThePerPageCostPlusOneMiss) {
  guest::EbizzyArenaTrim w(guest::EbizzyArenaTrim::Params{}, guest::LockParams{});
  w.build_record(0);
  double longest = 0;
  for (const auto& g : w.build_record(0))
    if (g.lock >= 0) longest = std::max(longest, g.hold_ns);
  EXPECT_DOUBLE_EQ(longest, 14 * 35.0 + 100.0);  // a full pagevec: 0.59 us (note 1.3: ~0.1-2 us)
}

TEST(EbizzyArenaTrim, RunsFifteenLruAcquisitionsAndOneShootdownPerRecord) {
  // Four threads pinned one per core: the counts per credited record are the structure's.
  const auto r = run(vm_scenario("{kind: ebizzy, kernel: arena-trim, threads: 4}", 4, kPinnedPerCore));
  const auto& d = r.domains.at(0);
  ASSERT_GT(d.throughput, 1000.0);
  EXPECT_NEAR(d.lock_acquisitions_per_s / d.throughput, 15.0, 0.15);
  EXPECT_NEAR(d.ipis_per_s / d.throughput, 1.0, 0.01);
  // The default stays the one-mmap_lock model.
  sim::ParamValues v;
  v.set("threads", 4);
  EXPECT_EQ(guest::Ebizzy::make(v)->locks().size(), 1u);
  v.set("kernel", 1);
  EXPECT_EQ(guest::Ebizzy::make(v)->locks().size(), 2u);
}

}  // namespace vcpusim
