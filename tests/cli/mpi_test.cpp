// SPDX-License-Identifier: MIT
// Pins `vcpusim sweep --mpi`: an MPI job writes exactly the records of a `--jobs 1` run (less
// `timing`, in any order); a task that fails is reported with its rank while the other ranks
// finish the sweep, the job exits non-zero, and a re-run resumes. Without MPI built in (or
// without mpirun on PATH) the MPI cases are skipped, saying so, and `--mpi` must be exit 2.
//
// Open MPI as root in a container: --allow-run-as-root, and --oversubscribe for more ranks than
// cores. ASAN_OPTIONS=detect_leaks=0: Open MPI's own allocations are not ours to report.
#include <gtest/gtest.h>

#include "cli_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace vcpusim::test;

// The command line that works as root in this project's containers (README, docs/distributed-and-figures.md).
const char* kMpirun = "mpirun --allow-run-as-root --oversubscribe";

Outcome mpirun(int ranks, const std::string& args, const std::string& env = "") {
  // `timeout` turns a hang into a failure (status 124) instead of a stuck suite.
  return shell("ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 " + env + " timeout 180 " + kMpirun + " -n " +
               std::to_string(ranks) + " " + binary() + " " + args);
}

const std::string kSweep = small_sweep("mp", 2);

bool have_mpirun() { return shell("command -v mpirun").status == 0; }

#ifdef VCPUSIM_HAVE_MPI
#define SKIP_WITHOUT_MPI() \
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not on PATH (apt-get install openmpi-bin): MPI sweeps not tested"
#else
#define SKIP_WITHOUT_MPI() \
  GTEST_SKIP() << "vcpusim was built without MPI (install libopenmpi-dev and reconfigure): MPI sweeps not tested"
#endif

}  // namespace

TEST(CliMpi, RecordsEqualAJobsOneRun) {
  SKIP_WITHOUT_MPI();
  const std::string f = write_temp("sweep.yaml", kSweep), ref = fresh_dir("j1"), mpi = fresh_dir("mpi");
  ASSERT_EQ(run("sweep " + f + " --out " + ref + " --jobs 1").status, 0);
  const Outcome o = mpirun(2, "sweep " + f + " --out " + mpi + " --mpi");
  ASSERT_EQ(o.status, 0) << o.output;
  EXPECT_NE(o.output.find("12 records written, 0 already present, 0 left"), std::string::npos) << o.output;
  EXPECT_EQ(count_lines(mpi + "/records.jsonl"), 12u);
  EXPECT_EQ(canonical_records(mpi), canonical_records(ref));
}

TEST(CliMpi, ResumesAndRunsOnOneRank) {
  SKIP_WITHOUT_MPI();
  const std::string f = write_temp("sweep2.yaml", kSweep), ref = fresh_dir("ref2"), d = fresh_dir("resume");
  ASSERT_EQ(run("sweep " + f + " --out " + ref + " --jobs 1").status, 0);
  const Outcome one = mpirun(1, "sweep " + f + " --out " + d + " --mpi --max-records 5");
  ASSERT_EQ(one.status, 0) << one.output;
  EXPECT_EQ(count_lines(d + "/records.jsonl"), 5u);
  const Outcome rest = mpirun(2, "sweep " + f + " --out " + d + " --mpi");
  ASSERT_EQ(rest.status, 0) << rest.output;
  EXPECT_NE(rest.output.find("7 records written, 5 already present"), std::string::npos) << rest.output;
  EXPECT_EQ(canonical_records(d), canonical_records(ref));
}

TEST(CliMpi, AFailedTaskIsReportedTheOtherRanksFinishAndTheJobFails) {
  SKIP_WITHOUT_MPI();
  const std::string f = write_temp("sweep3.yaml", kSweep), ref = fresh_dir("ref3"), d = fresh_dir("fail");
  ASSERT_EQ(run("sweep " + f + " --out " + ref + " --jobs 1").status, 0);
  // Task 3 throws on whichever worker gets it; that rank is retired and the other one finishes.
  const Outcome o = mpirun(3, "sweep " + f + " --out " + d + " --mpi", "VCPUSIM_MPI_FAIL_TASK=3");
  EXPECT_NE(o.status, 0) << o.output;
  EXPECT_NE(o.status, 124) << "the job hung: " << o.output;
  EXPECT_NE(o.output.find("sweep: task 3 (column HT, point {\"vms.web.count\":3}, repetition 1) failed on rank "),
            std::string::npos) << o.output;
  EXPECT_NE(o.output.find("injected failure"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("11 records written, 0 already present, 1 left"), std::string::npos) << o.output;
  EXPECT_EQ(count_lines(d + "/records.jsonl"), 11u);
  // The same command without the fault resumes and completes the sweep.
  const Outcome again = mpirun(2, "sweep " + f + " --out " + d + " --mpi");
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_EQ(canonical_records(d), canonical_records(ref));
}

TEST(CliMpi, BadInputIsPrintedByRankZeroAndTheJobExitsTwo) {
  SKIP_WITHOUT_MPI();
  const Outcome o = mpirun(2, "sweep " + (scratch() / "missing.yaml").string() + " --out " + fresh_dir("bad") + " --mpi");
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find("missing.yaml"), std::string::npos) << o.output;
}

TEST(CliMpi, ASetTheSweepOverridesInEveryRunIsExitTwoAsWithoutMpi) {
  // The sweep sets vms.web.count in every run, so --set cannot reach one; without --mpi this is
  // exit 2, and under --mpi the job ran and wrote records without the --set (exit 0).
  SKIP_WITHOUT_MPI();
  const std::string d = fresh_dir("mpi-set");
  const Outcome o = mpirun(2, "sweep " + write_temp("sweep-set.yaml", kSweep) + " --out " + d + " --mpi --set vms.web.count=2");
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find("--set vms.web.count: the sweep or a column sets this field in every run"), std::string::npos)
      << o.output;
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(d) / "records.jsonl"));
}

TEST(CliMpi, WithoutMpiBuiltInTheFlagIsExitTwo) {
#ifdef VCPUSIM_HAVE_MPI
  GTEST_SKIP() << "vcpusim was built with MPI; the without-MPI message is tested in builds without it";
#else
  const Outcome o = run("sweep " + write_temp("sweep4.yaml", kSweep) + " --out " + fresh_dir("nompi") + " --mpi");
  EXPECT_EQ(o.status, 2) << o.output;
  EXPECT_NE(o.output.find("--mpi: this vcpusim was built without MPI"), std::string::npos) << o.output;
#endif
}
