// SPDX-License-Identifier: MIT
// This file defines the checks of output paths given on the command line (--json, --csv, --out,
// --plot): made before any work, so that a path that cannot be written, or one that would
// overwrite the scenario being read or another output, is a bad-input error (exit 2) naming the
// option, not an uncaught filesystem error after a sweep has run or a lost input; and
// write_atomically(), how every result file is written so that an interrupted run leaves the
// previous file whole.
#pragma once

#include <string>
#include <vector>

namespace vcpusim::app {

/// `path` (given to `option`) can be written as a file: it is "-" (stdout), an existing regular
/// file, or a new file in an existing directory where one can be created. A ConfigError on the
/// command line naming the option otherwise.
void check_output_file(const std::string& path, const std::string& option);

/// A file a command reads or writes, and what it is: for an output its option ("--json"), for an
/// input a phrase for the message ("the scenario it reads").
struct PathArg {
  std::string path;
  std::string what;
};

/// Refuses an output that is one of the command's inputs (the results would replace the scenario
/// being read), the same file as an earlier output (one would silently replace the other) or,
/// for "-", standard output when an earlier output has it (two formats would interleave there):
/// a ConfigError on the command line naming the output's option and the other's. Two names are
/// the same file when they lead to one (symbolic links, hard links, `./`, `..` all count); empty
/// paths are left to the other checks.
void check_outputs_are_distinct(const std::vector<PathArg>& inputs, const std::vector<PathArg>& outputs);

/// Whether names `a` and `b` lead to one file, as check_outputs_are_distinct compares them: the
/// same inode when both exist (symbolic and hard links, `./`, `..`, a trailing `/`), else the same
/// resolved path.
bool same_file(const std::string& a, const std::string& b);

/// Creates directory `dir` (given to `option`) if it is missing; a ConfigError naming the option
/// if it cannot be, or if it is a file.
void ensure_output_dir(const std::string& dir, const std::string& option);
/// ensure_output_dir for a directory of records (sweep, merge and reproduce --out): its
/// records.jsonl, read to resume and then written, must be a regular file (or a link to one) if
/// it exists; a ConfigError naming the option otherwise.
void ensure_records_dir(const std::string& dir, const std::string& option);

/// Writes `text` to `path` ("-": stdout) through a temporary file beside it (`path`.tmp) and a
/// rename, so a reader never sees half a file; the temporary file does not survive a failure. A
/// symbolic link stays a link: the file it points at is the one replaced.
/// A failed write to stdout (a full disk) is a std::runtime_error, "writing standard output failed".
void write_atomically(const std::string& path, const std::string& text);
/// How write_atomically writes `path`, for a writer it cannot drive itself (gnuplot draws into a
/// file it names): the temporary file to write, and the file to rename it over (the end of
/// path's chain of symbolic links, so that a link stays a link).
struct AtomicTarget {
  std::string temp, file;
};
AtomicTarget atomic_target(const std::string& path);

}  // namespace vcpusim::app
