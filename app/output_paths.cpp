// SPDX-License-Identifier: MIT
#include "app/output_paths.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "app/config_error.h"

namespace vcpusim::app {

namespace fs = std::filesystem;

void check_output_file(const std::string& path, const std::string& option) {
  if (path == "-") return;
  auto fail = [&](const std::string& why) { throw ConfigError("<command line>", 0, 0, option, "'" + path + "' " + why); };
  if (path.empty()) fail("is empty: give a file name");
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (fs::is_directory(st)) fail("is a directory, not a file");
  if (fs::exists(st) && !fs::is_regular_file(st)) fail("is not a regular file");
  // What write_atomically will do first: create path.tmp beside it. Root passes every permission
  // test, and /proc refuses new files anyway, so trying is the only faithful check.
  const std::string tmp = path + ".tmp";
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

void write_atomically(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text;
    std::cout.flush();
    return;
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) throw ConfigError(path, 0, 0, "", "cannot write file");
    f << text;
    if (!f.flush()) throw ConfigError(path, 0, 0, "", "cannot write file");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw ConfigError(path, 0, 0, "", "cannot write file: " + ec.message());
  }
}

}  // namespace vcpusim::app
