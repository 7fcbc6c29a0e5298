// SPDX-License-Identifier: MIT
// This file defines Workload, the model of a benchmark program: for each of its threads, what it
// does next (compute some reference work with a resource profile, or block for a while), and how
// its completed work turns into the benchmark's own result (events/s, MB/s, records/s). A
// workload knows nothing of vCPUs or hosts; GuestOs runs its threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "guest/channel.h"
#include "guest/spinlock.h"
#include "hypervisor/exec_model.h"
#include "sim/params.h"
#include "sim/rng.h"
#include "sim/sim_time.h"

namespace vcpusim::guest {

/// One step of a thread's program.
struct Step {
  /// kReceive (channel.h): sleep until a message arrives on `channel` (at once if one is
  /// queued); `result` is credited when it arrives, and Workload::on_message sees it.
  enum class Kind : std::uint8_t { kCompute, kBlock, kReceive };
  Kind kind = Kind::kCompute;
  double work_ns = 0;                    ///< compute: reference ns
  hv::Profile profile = hv::Profile::kCpu;
  double mem_intensity = 0;              ///< compute: memory-stall share, 0..1
  sim::Duration block = 0;               ///< block: how long the thread sleeps
  double result = 0;                     ///< credited when this compute step completes
  double bandwidth_mbps = 0;             ///< compute: DRAM bandwidth drawn alone (0: not bandwidth-bound)
  /// compute with a critical section (GuestOs "Locks"): after `work_ns` the thread acquires the
  /// workload's lock number `lock` (index into Workload::locks()), holds it for `hold_ns`
  /// reference work (same profile), releases it; `result` is credited after the release.
  /// -1: no lock.
  std::int32_t lock = -1;
  double hold_ns = 0;
  /// receive: the channel (index below Workload::channels()).
  std::int32_t channel = -1;
  /// compute: when the step completes, send `payload` on channel `send_to` (-1: no send).
  std::int32_t send_to = -1;
  std::uint64_t payload = 0;
  /// > 0: when the step's work (and critical section) is done, the thread makes a synchronous
  /// cross-vCPU call to every other vCPU of its VM (a TLB shootdown, guest/ipi.h) and spins
  /// until each has acknowledged; a target on a pCPU acknowledges this long (ns) after the send.
  /// `result` is credited after the last acknowledgement. 0: no call.
  double shootdown_ns = 0;
  /// compute: the work runs in guest user mode (application code), not in the guest kernel (a
  /// system call, a page fault). A critical section runs in the lock's own mode (a kernel lock's
  /// in the kernel, LockParams::user_space in user mode). The host reads the mode only where a
  /// real one can: a 4.15+ KVM directed yield skips a vCPU preempted in user mode (ple.h).
  bool user_mode = true;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string_view kind() const = 0;
  virtual std::uint32_t threads() const = 0;
  /// The next step of `thread`, called when its previous step finished (or at start).
  virtual Step next(std::uint32_t thread, sim::RngStream& rng) = 0;
  /// The unit the results are reported in, per second ("events/s", "MB/s").
  virtual std::string_view unit() const = 0;
  /// The guest locks its steps name by index (Step::lock); GuestOs creates them at start.
  virtual std::vector<LockSpec> locks() const { return {}; }
  /// Whether any of its steps can end with a cross-vCPU call (Step::shootdown_ns > 0): a run
  /// reports IPI figures only then, and the names a run can give are known before it runs
  /// (app/runner.h metric_names).
  virtual bool sends_ipis() const { return false; }

  // Request/reply workloads (channel.h) and their own figures. The defaults fit a workload
  // that neither sends nor receives and whose result is the plain sum over its threads.

  /// How many channels its steps name (Step::channel, Step::send_to); GuestOs creates them.
  virtual std::uint32_t channels() const { return 0; }
  /// Thread `thread` received `m` at `now` (its kReceive step completes); called before next().
  /// `measuring`: now is inside the measured interval.
  virtual void on_message(std::uint32_t /*thread*/, const Message& /*m*/, sim::Time /*now*/, bool /*measuring*/) {}
  /// The process a thread belongs to (0 when it is a single process). On bare metal, core
  /// scheduling with per-VM cookies gives each process its own cookie (app/scenario_loader.cpp).
  virtual std::uint32_t process_of(std::uint32_t /*thread*/) const { return 0; }
  /// The benchmark's figure from the results each thread had credited over the measured
  /// interval, when it is not their sum (a straggler-bound score); nullopt: the sum.
  virtual std::optional<double> aggregate(const std::vector<double>& /*per_thread*/) const { return std::nullopt; }
  /// Extra figures the benchmark reports (latency percentiles), name -> value, measured interval.
  virtual std::vector<std::pair<std::string, double>> figures() const { return {}; }
  /// The name under which studies read this benchmark's figure as one run-level metric
  /// (app/runner.cpp: the mean over the domains running it), e.g. "ops_per_sec"; "" for none.
  virtual std::string_view study_metric() const { return {}; }
  /// Bytes of cache a thread refills after moving to another core: what it touches between
  /// sleeps. 0: the host's default (ExecParams::cold_footprint_bytes, an L2's worth).
  virtual double cache_footprint_bytes() const { return 0; }
};

struct WorkloadInfo {
  std::string_view kind;
  std::string_view description;
  std::string_view unit;
  std::vector<sim::ParamSpec> params;  ///< "threads" is always among them
  std::unique_ptr<Workload> (*make)(const sim::ParamValues&);
};

/// Every workload model, in a fixed order (one explicit table, as the policy registry).
const std::vector<WorkloadInfo>& workloads();
const WorkloadInfo* find_workload(std::string_view kind);

}  // namespace vcpusim::guest
