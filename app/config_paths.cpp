// SPDX-License-Identifier: MIT
// This file implements the configuration search path (see config_paths.h). Every lookup goes
// through std::filesystem with error codes: a missing or unreadable directory is just skipped
// (but not a VCPUSIM_CONFIG_DIR that is no directory: the user named it),
// and the caller reports "not found" with the list of places it looked, or the first place where
// something could not be reached and why (ConfigMiss).
#include "app/config_paths.h"

#include "app/config_error.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace vcpusim::app {
namespace fs = std::filesystem;

std::vector<std::string> config_search_dirs() {
  std::vector<std::string> dirs;
  // A user's override comes first, so a test or a packaged run can swap in other presets.
  if (const char* env = std::getenv("VCPUSIM_CONFIG_DIR"); env && *env) {
    // Named but not there (a typo, an unmounted share): skipping it ran the built-in presets in
    // place of the ones meant, exit 0.
    std::error_code ec;
    if (!fs::is_directory(env, ec))
      throw ConfigError("<environment>", 0, 0, "VCPUSIM_CONFIG_DIR",
                        "'" + std::string(env) + "' is not a directory" + (ec ? " (" + ec.message() + ")" : std::string()) +
                            "; unset it to use the built-in configs");
    dirs.emplace_back(env);
  }
#ifdef VCPUSIM_CONFIG_DIR
  // Set by app/meson.build to the source tree's configs/, so a build runs without installing.
  dirs.emplace_back(VCPUSIM_CONFIG_DIR);
#endif
  // An installed tree: <prefix>/bin/vcpusim next to <prefix>/share/vcpusim/configs.
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && !exe.empty())
    dirs.push_back((exe.parent_path() / ".." / "share" / "vcpusim" / "configs").lexically_normal().string());
  return dirs;
}

std::string find_config(const std::string& relative, ConfigMiss* miss) {
  if (relative.empty()) return "";
  for (const std::string& dir : config_search_dirs()) {
    fs::path p = fs::path(dir) / relative;
    std::error_code ec;
    if (fs::exists(p, ec)) return p.string();
    // exists() clears ec for a name that is simply not there; what is left is why nothing can be
    // read at it (a loop of symbolic links). A symbolic link to nothing is there too, though
    // exists() follows it and says not.
    std::string reason = ec ? ec.message() : "";
    if (reason.empty()) {
      std::error_code lec;
      if (fs::is_symlink(fs::symlink_status(p, lec))) {
        const fs::path target = fs::read_symlink(p, lec);
        reason = "a symbolic link to '" + target.string() + "', which does not exist";
      }
    }
    // Something broken at a name stops the search: going on put a later directory's file of that
    // name in the place of the one meant (a broken preset in VCPUSIM_CONFIG_DIR ran the built-in
    // one, exit 0), and finding none, "unknown preset" sent one looking for a typo in a name that
    // was right. The caller names the place and the reason.
    if (!reason.empty()) {
      if (miss) *miss = ConfigMiss{p.string(), reason};
      return "";
    }
  }
  return "";
}

std::vector<std::string> list_topology_presets() {
  std::vector<std::string> names;
  for (const std::string& dir : config_search_dirs()) {
    std::error_code ec;
    fs::directory_iterator it(fs::path(dir) / "topologies", ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      if (p.extension() == ".yaml" && it->is_regular_file(ec)) names.push_back(p.stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace vcpusim::app
