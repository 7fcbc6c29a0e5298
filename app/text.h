// SPDX-License-Identifier: MIT
// Text the commands share: how a swept value prints as a row, label or message, and the
// comma lists that errors and tables print. One rule each, so that a value names the same
// row in a sweep, a compare table, a plot and a reproduction.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace vcpusim::app {

/// A swept value as it prints: a string as written; a number in the shortest form that reads
/// back as the same number (0.1234561, where %g printed 0.123456 and so made two points one row
/// of a compare table; 2.0 prints 2, the same setting as 2); anything else as JSON.
std::string value_label(const nlohmann::json& v);

/// Whether `s` holds a control character: C0 (tab and newline too), DEL, or C1 (U+0080-U+009F
/// in UTF-8). Names that head tables, CSV cells, SVG text and figure titles hold none: a
/// newline split a table's heading and a U+0001 made an SVG no XML parser reads.
bool has_control_character(std::string_view s);

/// "a, b, c".
std::string comma_join(const std::vector<std::string>& xs);
std::string comma_join(const std::vector<std::string_view>& xs);

}  // namespace vcpusim::app
