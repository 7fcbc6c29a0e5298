// SPDX-License-Identifier: MIT
// The table of workload models by kind. `program` is built by app/ from its phase list and is
// not in this table.
#include "guest/lock_workloads.h"
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
  };
  return table;
}

const WorkloadInfo* find_workload(std::string_view kind) {
  for (const auto& w : workloads())
    if (w.kind == kind) return &w;
  return nullptr;
}

}  // namespace vcpusim::guest
