// SPDX-License-Identifier: MIT
#include "app/text.h"

#include <fmt/format.h>

namespace vcpusim::app {

std::string value_label(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  // fmt's default for a double is the shortest text that round-trips (Dragonbox), and it
  // drops a trailing ".0", which nlohmann's dump() keeps.
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return v.dump();
}

bool has_control_character(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) return true;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9F)
      return true;
  }
  return false;
}

namespace {
template <typename S>
std::string join_all(const std::vector<S>& xs) {
  std::string s;
  for (const auto& x : xs) {
    if (!s.empty()) s += ", ";
    s += x;
  }
  return s;
}
}  // namespace

std::string comma_join(const std::vector<std::string>& xs) { return join_all(xs); }
std::string comma_join(const std::vector<std::string_view>& xs) { return join_all(xs); }

}  // namespace vcpusim::app
