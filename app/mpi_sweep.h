// SPDX-License-Identifier: MIT
// This file defines `vcpusim sweep ... --mpi`: a sweep spread over the ranks of an MPI job
// (`mpirun -n R vcpusim sweep SCENARIO --out DIR --mpi`). Rank 0 expands the plan, reads what is
// finished (resume), and hands out tasks with dynamic scheduling: a worker sends "ready" (or the
// record or error of its last task) and rank 0 answers with the next task index or "done", so
// work goes to whichever rank asks next. Rank 0 alone writes DIR/records.jsonl, with exactly the
// records of the thread-pool path (run_sweep_task). With R == 1, rank 0 runs the tasks itself.
//
// A task that throws on a worker is sent to rank 0, which prints it (task, rank, message),
// retires that rank (answers it "done") and goes on with the others; at the end it reports the
// failures and the tasks left, and the job exits non-zero (re-running it resumes). Nothing
// blocks forever on a dead rank: both sides wait with MPI_Iprobe in a polling loop, and a
// process that dies makes mpirun abort the whole job (Open MPI's default).
//
// Built only when Meson finds MPI (VCPUSIM_HAVE_MPI); otherwise --mpi is a ConfigError (exit 2).
#pragma once

#include <functional>

#include "app/sweep.h"
#include "app/sweep_runner.h"

namespace vcpusim::app {

/// Whether this binary was built with MPI.
bool mpi_available();

/// Initializes MPI, runs the sweep over the job's ranks and finalizes MPI. `make_plan` is
/// called on every rank (expansion is deterministic). Returns the exit status of this rank:
/// 0 success; 1 (or 2/3, the first failed task's kind) when tasks failed. Rank 0 prints the
/// summary line with `report`. Errors before any task runs (bad scenario, foreign records)
/// are thrown on rank 0 (ConfigError: exit 2); the other ranks then return 2 quietly.
int run_mpi_sweep(const std::function<SweepPlan()>& make_plan, const SweepOptions& options, std::ostream& progress,
                  const std::function<void(const SweepSummary&)>& report);

}  // namespace vcpusim::app
