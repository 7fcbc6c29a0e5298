// SPDX-License-Identifier: MIT
// This file defines ConfigError, the one exception bad input becomes. It carries the file, line,
// column and the dotted field it is about, and renders as `file:line:col: field: what is wrong`,
// the message promised to users; main() prints it and exits with status 2.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace vcpusim::app {

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, int line, int col, std::string field, std::string what)
      : std::runtime_error(format(file, line, col, field, what)),
        file_(std::move(file)), line_(line), col_(col), field_(std::move(field)), message_(std::move(what)) {}

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int column() const { return col_; }
  const std::string& field() const { return field_; }
  /// What is wrong, without the location (what() is the whole line).
  const std::string& message() const { return message_; }

 private:
  static std::string format(const std::string& file, int line, int col, const std::string& field,
                            const std::string& what) {
    // An ostringstream rather than operator+ chains: g++ 12 -O3 misreports those (-Wrestrict).
    std::ostringstream os;
    os << file;
    if (line > 0) os << ':' << line << ':' << col;
    os << ": ";
    if (!field.empty()) os << field << ": ";
    os << what;
    return os.str();
  }
  std::string file_;
  int line_, col_;
  std::string field_;
  std::string message_;
};

}  // namespace vcpusim::app
