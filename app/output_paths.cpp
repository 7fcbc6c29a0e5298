// SPDX-License-Identifier: MIT
#include "app/output_paths.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <stdexcept>

#include "app/config_error.h"

namespace vcpusim::app {

namespace fs = std::filesystem;

namespace {

/// The longest name of one directory entry (NAME_MAX, 255 bytes on Linux).
constexpr std::size_t kNameMax = 255;

/// The file `path` writes to: itself, or the file its chain of symbolic links ends at, so that
/// `--json link` updates the linked file (as a shell's `>` does) instead of replacing the link
/// with a file. A dangling link's target is created. At most 40 links (Linux's MAXSYMLINKS);
/// a longer chain or a loop is left to the open to refuse (ELOOP).
fs::path written_file(const std::string& path) {
  fs::path p = path;
  std::error_code ec;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) break;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return p;
}

/// The temporary file beside `file`: file.tmp, or, when file's name leaves no room for the
/// suffix within NAME_MAX (255 bytes on Linux), its first 200 bytes, a hash of the whole name and
/// .tmp, so that a name the system accepts can always be written.
fs::path temp_beside(const fs::path& file) {
  const std::string name = file.filename().string();
  if (name.size() + 4 <= kNameMax) return fs::path(file.string() + ".tmp");
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(std::hash<std::string>{}(name)));
  return file.parent_path() / (name.substr(0, 200) + "." + hash + ".tmp");
}

/// `p` made absolute, with `.`, `..` and the symbolic links of its existing part resolved; `p`
/// itself, normalised, when the file system cannot say (a removed working directory).
fs::path resolved(const fs::path& p) {
  std::error_code ec;
  const fs::path a = fs::absolute(p, ec);
  if (ec) return p.lexically_normal();
  const fs::path c = fs::weakly_canonical(a, ec);
  return ec ? a.lexically_normal() : c;
}

}  // namespace

// Two outputs not yet written clash when their resolved paths do.
bool same_file(const std::string& a, const std::string& b) {
  const fs::path fa = written_file(a), fb = written_file(b);
  std::error_code ea, eb;
  const bool a_exists = fs::exists(fa, ea), b_exists = fs::exists(fb, eb);
  if (a_exists && b_exists) {
    const bool same = fs::equivalent(fa, fb, ea);
    if (!ea) return same;
  } else if (a_exists != b_exists) {
    return false;
  }
  return resolved(fa) == resolved(fb);
}

void check_outputs_are_distinct(const std::vector<PathArg>& inputs, const std::vector<PathArg>& outputs) {
  auto named = [](const PathArg& p, const PathArg& other) {
    return p.path == other.path ? std::string() : " (" + p.path + ")";
  };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const PathArg& o = outputs[i];
    if (o.path == "-") {
      // Two texts on standard output (--json - --csv -) came out one after the other, a JSON
      // document and a CSV table in one stream that no reader of either format can take.
      for (std::size_t j = 0; j < i; ++j)
        if (outputs[j].path == "-")
          throw ConfigError("<command line>", 0, 0, o.what,
                            "'-' (standard output) is " + outputs[j].what + "'s too: two outputs would interleave there; "
                            "give one of them a file");
      continue;
    }
    if (o.path.empty()) continue;
    for (const PathArg& in : inputs)
      if (!in.path.empty() && in.path != "-" && same_file(o.path, in.path))
        throw ConfigError("<command line>", 0, 0, o.what,
                          "'" + o.path + "' is " + in.what + named(in, o) + ": the results would overwrite it");
    for (std::size_t j = 0; j < i; ++j)
      if (outputs[j].path != "-" && !outputs[j].path.empty() && same_file(o.path, outputs[j].path))
        throw ConfigError("<command line>", 0, 0, o.what,
                          "'" + o.path + "' is " + outputs[j].what + "'s file too" + named(outputs[j], o) +
                              "; each output needs its own");
  }
}

void check_output_file(const std::string& path, const std::string& option) {
  if (path == "-") return;
  auto fail = [&](const std::string& why) { throw ConfigError("<command line>", 0, 0, option, "'" + path + "' " + why); };
  if (path.empty()) fail("is empty: give a file name");
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec.value() == ELOOP) fail("is a loop of symbolic links");
  if (fs::is_directory(st)) fail("is a directory, not a file");
  if (fs::exists(st) && !fs::is_regular_file(st)) fail("is not a regular file");
  // What write_atomically will do first: create its temporary file beside the written file. Root
  // passes every permission test, and /proc refuses new files anyway, so trying is the only
  // faithful check.
  // The temporary file's name is shortened to fit, so creating it proves nothing about a name
  // past NAME_MAX: --json with a 256-byte name ran every repetition and then failed the rename
  // ("cannot write file: Success", no option named), and plot's gnuplot failed (exit 1).
  const fs::path file = written_file(path);
  if (file.filename().string().size() > kNameMax)
    fail("cannot be written: its name is " + std::to_string(file.filename().string().size()) +
         " bytes long, more than a file name may have (" + std::to_string(kNameMax) + ", NAME_MAX)");
  const fs::path tmp = temp_beside(file);
  const bool had_tmp = fs::exists(tmp, ec);
  std::ofstream f(tmp, std::ios::app);
  if (!f) fail(std::string("cannot be written: ") + std::strerror(errno));
  f.close();
  if (!had_tmp) fs::remove(tmp, ec);
}

void ensure_output_dir(const std::string& dir, const std::string& option) {
  auto fail = [&](const std::string& why) { throw ConfigError("<command line>", 0, 0, option, "'" + dir + "' " + why); };
  if (dir.empty()) fail("is empty: give a directory");
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) fail("is a file, not a directory");
  fs::create_directories(dir, ec);
  if (ec) fail("cannot be created: " + ec.message());
}

void ensure_records_dir(const std::string& dir, const std::string& option) {
  ensure_output_dir(dir, option);
  // A FIFO there blocked sweep and merge for ever, opening it to read the records to resume or
  // keep; a device or a directory is no records file either.
  const fs::path records = fs::path(dir) / "records.jsonl";
  std::error_code ec;
  const fs::file_status st = fs::status(records, ec);
  // A loop of symbolic links there ended the command in an uncaught filesystem error (exit 1).
  if (ec.value() == ELOOP)
    throw ConfigError("<command line>", 0, 0, option,
                      "'" + dir + "' holds '" + records.string() + "', which is a loop of symbolic links");
  if (!ec && fs::exists(st) && !fs::is_regular_file(st))
    throw ConfigError("<command line>", 0, 0, option,
                      "'" + dir + "' holds '" + records.string() +
                          "', which is not a regular file: the records are kept in a file there");
}

void write_atomically(const std::string& path, const std::string& text) {
  if (path == "-") {
    // Results sent to a full disk were lost without a word (exit 0); stop at the first such
    // repetition rather than run the rest for nothing.
    if (!(std::cout << text).flush()) throw std::runtime_error("writing standard output failed");
    return;
  }
  const fs::path file = written_file(path), tmp = temp_beside(file);
  std::error_code ec;
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) throw ConfigError(path, 0, 0, "", std::string("cannot write file: ") + std::strerror(errno));
    errno = 0;
    f << text;
    if (!f.flush()) {
      // A full disk left the half-written temporary file beside the result, which is promised
      // not to survive a failure.
      const std::string why = errno ? std::string(": ") + std::strerror(errno) : "";
      f.close();
      fs::remove(tmp, ec);
      throw ConfigError(path, 0, 0, "", "cannot write file" + why);
    }
  }
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw ConfigError(path, 0, 0, "", "cannot write file: " + ec.message());
  }
}

AtomicTarget atomic_target(const std::string& path) {
  const fs::path file = written_file(path);
  return {temp_beside(file).string(), file.string()};
}

}  // namespace vcpusim::app
