// SPDX-License-Identifier: MIT
// The table of workload models by kind. `program` is built by app/ from its phase list and is
// not in this table.
#include "guest/cassandra.h"
#include "guest/hammerdb.h"
#include "guest/lock_workloads.h"
#include "guest/mutilate.h"
#include "guest/specint_rate.h"
#include "guest/specvirt_mix.h"
#include "guest/sysbench.h"
#include "guest/workload.h"

namespace vcpusim::guest {

const std::vector<WorkloadInfo>& workloads() {
  static const std::vector<WorkloadInfo> table = {
      {"sysbench-cpu", "sysbench cpu: trial-division primes, pure CPU", "events/s",
       SysbenchCpu::param_specs(), &SysbenchCpu::make},
      {"sysbench-memory", "sysbench memory: sequential block writes, DRAM-bandwidth bound", "MiB/s",
       SysbenchMemory::param_specs(), &SysbenchMemory::make},
      {"ebizzy", "ebizzy: records of memcpy+search with mmap_lock critical sections", "records/s",
       Ebizzy::param_specs(), &Ebizzy::make},
      {"dbench", "dbench: file-system ops with hot kernel-lock critical sections", "MB/s",
       Dbench::param_specs(), &Dbench::make},
      {"mutilate", "memcached (4 workers) and mutilate clients over localhost, depth 1, 16 KiB GETs", "ops/s",
       Mutilate::param_specs(), &Mutilate::make},
      {"specint-rate", "SPECrate 2017 Integer: independent CPU-bound copies, straggler-bound score", "rate",
       SpecintRate::param_specs(), &SpecintRate::make},
      {"cassandra", "Cassandra: request threads handing off to read/write stage pools, SSTable I/O", "ops/s",
       Cassandra::param_specs(), &Cassandra::make},
      {"hammerdb", "HammerDB TPROC-C: OLTP with user-space-spinning latches and commit flushes", "TPM",
       Hammerdb::param_specs(), &Hammerdb::make},
      {"specvirt-mix", "one VM of a SPECvirt-like tile (role web|mail|app|db), normalised throughput", "normalised",
       SpecvirtMix::param_specs(), &SpecvirtMix::make},
  };
  return table;
}

const WorkloadInfo* find_workload(std::string_view kind) {
  for (const auto& w : workloads())
    if (w.kind == kind) return &w;
  return nullptr;
}

}  // namespace vcpusim::guest
