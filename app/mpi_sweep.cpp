// SPDX-License-Identifier: MIT
#include "app/mpi_sweep.h"

#include "app/config_error.h"

#ifdef VCPUSIM_HAVE_MPI

#include <chrono>
#include <cstdlib>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <mpi.h>

#include "app/records.h"
#include "hypervisor/host.h"

namespace vcpusim::app {
namespace {

// Worker -> rank 0: kReady (empty), kRecord (the record's JSON text), kError ("code\ntask\nmessage").
// Rank 0 -> worker: kTask, one long long: the task index, or kDone.
constexpr int kReady = 1, kRecord = 2, kError = 3, kTask = 4;
constexpr long long kDone = -1;

// Initializes MPI for the lifetime of the object (MPI_Finalize even when an exception unwinds).
class MpiSession {
 public:
  MpiSession() {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0, size_ = 1;
};

// Waits for a message without a blocking receive: polls MPI_Iprobe, sleeping briefly between
// polls so a waiting rank uses almost no CPU. If the peer dies, mpirun aborts the whole job.
MPI_Status wait_for(int source, int tag) {
  MPI_Status st;
  for (;;) {
    int flag = 0;
    MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &st);
    if (flag) return st;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

std::string receive_text(const MPI_Status& st) {
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  std::string text(static_cast<std::size_t>(n), '\0');
  MPI_Recv(text.data(), n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return text;
}

void send_text(const std::string& text, int tag) {
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, tag, MPI_COMM_WORLD);
}

// Test hook: VCPUSIM_MPI_FAIL_TASK=N makes task N throw, to exercise the failure path.
void maybe_inject_failure(std::size_t task) {
  const char* f = std::getenv("VCPUSIM_MPI_FAIL_TASK");
  if (f && *f && std::strtoull(f, nullptr, 10) == task)
    throw std::runtime_error("injected failure (VCPUSIM_MPI_FAIL_TASK=" + std::string(f) + ")");
}

// The exit status a task's exception stands for (main()'s convention).
int status_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const ConfigError&) {
    return 2;
  } catch (const hv::InvariantViolation&) {
    return 3;
  } catch (...) {
    return 1;
  }
}

std::string message_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

std::string describe_task(const SweepPlan& plan, std::size_t task) {
  const SweepRun& run = plan.runs.at(task / plan.repetitions);
  return fmt::format("task {} (column {}, point {}, repetition {})", task, run.column.empty() ? "-" : run.column,
                     run.point.dump(), task % plan.repetitions);
}

int run_worker(const std::optional<SweepPlan>& plan, const std::exception_ptr& plan_error) {
  std::map<std::size_t, ScenarioSpec> specs;  // loaded on first use
  MPI_Send(nullptr, 0, MPI_CHAR, 0, kReady, MPI_COMM_WORLD);
  for (;;) {
    const MPI_Status st = wait_for(0, kTask);
    long long task = kDone;
    MPI_Recv(&task, 1, MPI_LONG_LONG, 0, kTask, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    // A worker whose plan failed to load still exits 0: rank 0 prints the error and exits 2, which
    // mpirun returns. Were the worker to exit 2 first, mpirun would abort the job and could kill
    // rank 0 before its message reached the terminal (seen in CI: exit 2, no message).
    if (task == kDone) return 0;
    (void)st;
    const auto index = static_cast<std::size_t>(task);
    try {
      if (!plan) std::rethrow_exception(plan_error);
      maybe_inject_failure(index);
      const std::size_t run = index / plan->repetitions;
      auto it = specs.find(run);
      if (it == specs.end())
        it = specs.emplace(run, load_scenario(YamlReader(plan->runs.at(run).document, plan->file, ""))).first;
      send_text(run_sweep_task(*plan, it->second, index).dump(), kRecord);
    } catch (...) {
      const std::exception_ptr e = std::current_exception();
      send_text(fmt::format("{}\n{}\n{}", status_of(e), index, message_of(e)), kError);
    }
  }
}

int run_root(const MpiSession& mpi, const std::optional<SweepPlan>& plan, std::exception_ptr setup_error,
             const SweepOptions& o, std::ostream& progress, const std::function<void(const SweepSummary&)>& report) {
  SweepWork work;
  std::optional<RecordWriter> writer;
  if (!setup_error) {
    try {
      work = plan_sweep_work(*plan, o);
      load_sweep_specs(*plan);  // every point is validated before any work starts, as without --mpi
      writer.emplace(work.summary.records_path);
    } catch (...) {
      setup_error = std::current_exception();
      work.todo.clear();
    }
  }
  SweepProgress prog(progress, o.progress_bar, work.todo.size());
  std::size_t written = 0;

  if (mpi.size() == 1) {  // no workers: rank 0 runs the tasks itself
    if (setup_error) std::rethrow_exception(setup_error);
    const std::vector<ScenarioSpec> specs = load_sweep_specs(*plan);
    for (const std::size_t index : work.todo) {
      maybe_inject_failure(index);
      writer->append(run_sweep_task(*plan, specs[index / plan->repetitions], index));
      ++written;
      prog.done_one();
    }
    work.summary.written = written;
    report(work.summary);
    return 0;
  }

  std::size_t next = 0, failures = 0;
  int active = mpi.size() - 1, status = 0;
  std::exception_ptr root_error;  // rank 0 itself failed (e.g. cannot write): hand out no more work
  while (active > 0) {
    const MPI_Status st = wait_for(MPI_ANY_SOURCE, MPI_ANY_TAG);
    const int worker = st.MPI_SOURCE;
    const std::string text = receive_text(st);
    bool retire = false;
    if (st.MPI_TAG == kRecord) {
      try {
        writer->append(nlohmann::json::parse(text));
        ++written;
        prog.done_one();
      } catch (...) {
        if (!root_error) root_error = std::current_exception();
      }
    } else if (st.MPI_TAG == kError) {
      const auto a = text.find('\n'), b = text.find('\n', a + 1);
      const int code = std::atoi(text.substr(0, a).c_str());
      const std::size_t task = std::strtoull(text.substr(a + 1, b - a - 1).c_str(), nullptr, 10);
      fmt::print(progress, "sweep: {} failed on rank {}: {}\n", plan ? describe_task(*plan, task) : fmt::format("task {}", task),
                 worker, text.substr(b + 1));
      progress.flush();
      ++failures;
      if (status == 0) status = code ? code : 1;
      retire = true;  // the rest of the sweep goes on on the other ranks
    }
    long long reply = kDone;
    if (!retire && !root_error && !setup_error && next < work.todo.size()) reply = static_cast<long long>(work.todo[next++]);
    if (reply == kDone) --active;
    MPI_Send(&reply, 1, MPI_LONG_LONG, worker, kTask, MPI_COMM_WORLD);
  }
  if (setup_error) std::rethrow_exception(setup_error);
  if (root_error) std::rethrow_exception(root_error);
  work.summary.written = written;
  report(work.summary);
  if (failures) {
    fmt::print(progress, "sweep: {} task(s) failed and {} were not handed out (their ranks were retired); "
                         "re-run the same command to resume\n",
               failures, work.todo.size() - next);
    progress.flush();
  }
  return status;
}

}  // namespace

bool mpi_available() { return true; }

int run_mpi_sweep(const std::function<SweepPlan()>& make_plan, const SweepOptions& options, std::ostream& progress,
                  const std::function<void(const SweepSummary&)>& report) {
  MpiSession mpi;
  std::optional<SweepPlan> plan;
  std::exception_ptr plan_error;
  try {
    plan = make_plan();
  } catch (...) {
    plan_error = std::current_exception();
  }
  if (mpi.rank() != 0) return run_worker(plan, plan_error);
  return run_root(mpi, plan, plan_error, options, progress, report);
}

}  // namespace vcpusim::app

#else  // no MPI

namespace vcpusim::app {

bool mpi_available() { return false; }

int run_mpi_sweep(const std::function<SweepPlan()>&, const SweepOptions&, std::ostream&,
                  const std::function<void(const SweepSummary&)>&) {
  throw ConfigError("<command line>", 0, 0, "--mpi",
                    "this vcpusim was built without MPI; install libopenmpi-dev and openmpi-bin (scripts/setup.sh) "
                    "and rebuild (meson finds it), or use --jobs / --shard K/N");
}

}  // namespace vcpusim::app

#endif
