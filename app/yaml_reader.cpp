// SPDX-License-Identifier: MIT
#include "app/yaml_reader.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <system_error>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

namespace vcpusim::app {
namespace {

int line_of(const YAML::Node& n) { return n && !n.Mark().is_null() ? n.Mark().line + 1 : 0; }
int col_of(const YAML::Node& n) { return n && !n.Mark().is_null() ? n.Mark().column + 1 : 0; }

std::string join(std::initializer_list<std::string_view> xs) {
  std::string s;
  for (auto x : xs) {
    if (!s.empty()) s += ", ";
    s += x;
  }
  return s;
}

std::optional<double> parse_number(std::string_view t) {
  // from_chars for double is in libstdc++ 12; it rejects leading '+' and whitespace, as we want.
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Splits "12.5ms" into ("12.5", "ms").
std::pair<std::string_view, std::string_view> split_unit(std::string_view t) {
  std::size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.' ||
                          t[i] == '-' || t[i] == 'e' || t[i] == 'E' || t[i] == '+')) {
    // 'e' is only an exponent when followed by a digit or sign.
    if ((t[i] == 'e' || t[i] == 'E') &&
        !(i + 1 < t.size() && (std::isdigit(static_cast<unsigned char>(t[i + 1])) || t[i + 1] == '-' || t[i + 1] == '+')))
      break;
    ++i;
  }
  std::string_view num = t.substr(0, i), unit = t.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  return {num, unit};
}

}  // namespace

namespace {

// The duration `text` spells, in ns as a double (not yet range-checked); nullopt when it is not
// a number with a unit.
std::optional<double> duration_ns(std::string_view text) {
  auto [num, unit] = split_unit(text);
  auto v = parse_number(num);
  if (!v) {
    // A number past a double's range (1e400s) is a duration too long for the clock, not one
    // without a unit, which is what its error said; one below it (1e-400s) reads as 1e-20s does.
    double d = 0;
    const auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), d);
    if (num.empty() || ec != std::errc::result_out_of_range || p != num.data() + num.size()) return std::nullopt;
    const std::size_t e = num.find_first_of("eE");
    const bool tiny = e != std::string_view::npos && e + 1 < num.size() && num[e + 1] == '-';
    v = tiny ? 0.0 : (num.front() == '-' ? -HUGE_VAL : HUGE_VAL);
  }
  double scale;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else if (unit == "m" || unit == "min") scale = 60e9;
  else if (unit.empty() && *v == 0) scale = 0;
  else return std::nullopt;
  return *v * scale;
}

constexpr double kMaxDurationNs = 9.2e18;  // llround's range: about 292 years

// The model's clock counts whole nanoseconds; a fraction of one (0.5ns, 1.0000000001s) was rounded
// away in silence, so that 0.4ns ran as 0. The tolerance only absorbs the decimal-to-binary error
// of spellings such as 0.1s.
bool whole_ns(double ns) { return std::fabs(ns - std::nearbyint(ns)) <= 1e-6 + 1e-12 * std::fabs(ns); }

}  // namespace

std::optional<sim::Duration> parse_duration(std::string_view text) {
  const auto ns = duration_ns(text);
  if (!ns || std::fabs(*ns) > kMaxDurationNs || !whole_ns(*ns)) return std::nullopt;
  return static_cast<sim::Duration>(std::llround(*ns));
}

std::optional<std::uint64_t> parse_bytes(std::string_view text) {
  auto [num, unit] = split_unit(text);
  std::uint64_t scale;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "KiB") scale = 1ull << 10;
  else if (unit == "MiB") scale = 1ull << 20;
  else if (unit == "GiB") scale = 1ull << 30;
  else if (unit == "TiB") scale = 1ull << 40;
  else if (unit == "KB" || unit == "kB") scale = 1'000;
  else if (unit == "MB") scale = 1'000'000;
  else if (unit == "GB") scale = 1'000'000'000;
  else if (unit == "TB") scale = 1'000'000'000'000;
  else return std::nullopt;
  constexpr std::uint64_t kLimit = 1ull << 63;  // 8 EiB: sizes are below it
  // Digits alone are counted exactly: through a double, a size past 2^53 bytes was rounded
  // (9007199254740993B became ...992) and 2^63 - 1 was refused as not below 8 EiB.
  if (!num.empty() && std::all_of(num.begin(), num.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
    if (ec != std::errc() || p != num.data() + num.size() || n > (kLimit - 1) / scale) return std::nullopt;
    return n * scale;
  }
  auto v = parse_number(num);
  if (!v || *v < 0) return std::nullopt;
  const double bytes = *v * static_cast<double>(scale);
  if (bytes >= static_cast<double>(kLimit)) return std::nullopt;
  if (bytes != std::floor(bytes)) return std::nullopt;  // 0.5B was taken (and rounded)
  return static_cast<std::uint64_t>(bytes);  // a whole double below 2^63: exact
}

std::string out_of_range(std::int64_t v, std::int64_t lo, std::int64_t hi) {
  return std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

std::string duration_out_of_range(std::string_view text, sim::Duration lo, sim::Duration hi) {
  return "'" + std::string(text) + "' is out of range [" + duration_text(static_cast<double>(lo)) + ", " +
         duration_text(static_cast<double>(hi)) + "]";
}

std::string duration_text(double ns) {
  // Bounds are whole nanoseconds below 2^63; anything else (a plug-in's 1e300) prints as a number.
  if (!(std::fabs(ns) < 9.2e18) || ns != std::floor(ns)) {
    std::ostringstream os;
    os << ns << "ns";
    return os.str();
  }
  const auto v = static_cast<std::int64_t>(ns);
  for (const auto& [unit, scale] : {std::pair{"s", std::int64_t{1'000'000'000}}, {"ms", 1'000'000}, {"us", 1'000}})
    if (v != 0 && v % scale == 0) return std::to_string(v / scale) + unit;
  return std::to_string(v) + "ns";
}

YamlReader YamlReader::load_file(const std::string& path) {
  // Only a regular file of sane size: /dev/zero was read until memory ran out, /dev/urandom
  // forever. (A pipe such as <(cat f.yaml) is a FIFO, read as it is: it ends.)
  constexpr std::uintmax_t kMaxBytes = 64u << 20;
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::is_directory(st)) throw ConfigError(path, 0, 0, "", "is a directory, not a YAML file");
  if (!ec && std::filesystem::is_character_file(st)) throw ConfigError(path, 0, 0, "", "is a device, not a YAML file");
  if (!ec && std::filesystem::is_regular_file(st) && std::filesystem::file_size(path, ec) > kMaxBytes)
    throw ConfigError(path, 0, 0, "", "is larger than 64 MiB; no scenario is");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    // "cannot open file" alone left one to guess between a typo, a loop of symbolic links and
    // a file one may not read. The reason is the open's errno (libstdc++ opens with fopen, which
    // sets it), else status()'s: e.g. "Too many levels of symbolic links", "Permission denied".
    const int err = errno;
    const std::string why = err ? std::generic_category().message(err) : ec ? ec.message() : "";
    throw ConfigError(path, 0, 0, "", why.empty() ? "cannot open file" : "cannot open file: " + why);
  }
  // Read up to the same bound: a pipe has no size to ask for, and <(yes '#') was read until
  // memory ran out (exit 2 saying the scenario was too large for the machine, or the OOM killer).
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxBytes) throw ConfigError(path, 0, 0, "", "is larger than 64 MiB; no scenario is");
  }
  return load_string(text, path);
}

namespace {

// The offset of the first byte that does not continue valid UTF-8 in s, or npos. Overlong forms,
// surrogates and code points above U+10FFFF are invalid too (RFC 3629).
std::size_t invalid_utf8_at(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n;
    std::uint32_t cp;
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xC2 && c <= 0xDF) { n = 1; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 2; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 3; cp = c & 0x07; }
    else return i;
    if (i + n >= s.size()) return i;  // truncated sequence
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += n + 1;
  }
  return std::string_view::npos;
}

// What yaml-cpp lets through and a loader must not see: a key given twice in one mapping (YAML
// forbids it; yaml-cpp keeps both and every lookup here finds the first, so the second was
// silently ignored), and text that is not UTF-8 (the JSON records and reports would throw on
// it half-way through a run). yaml-cpp has already converted UTF-16 and UTF-32 input to UTF-8.
// Aliases make a document a graph: `x: &r [*r]` contains itself, and nine lines of aliases to
// aliases expand to 10^9 nodes ("billion laughs"). Every reader here walks the expansion, so it
// is bounded: no scenario comes near either limit.
constexpr int kMaxDepth = 64;
constexpr std::size_t kMaxNodes = 1'000'000;

// Counts a document's nodes from the parser's events, before yaml-cpp builds any: a 63 MiB file
// of one flow list ([1,1,1,...], 33 million entries) took 74 s and 15 GB to build before
// check_node refused it. Keys are counted too, which check_node does not count (it walks values
// and expansions), so past 2 x kMaxNodes events the document surely has more than kMaxNodes
// nodes, and nothing check_node accepts is refused here. Aliases count one each here.
class NodeCounter final : public YAML::EventHandler {
 public:
  struct TooMany {
    YAML::Mark mark;
  };
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { count(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { count(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { count(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    count(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    count(m);
  }
  void OnMapEnd() override {}

 private:
  void count(const YAML::Mark& m) {
    if (++events_ > 2 * kMaxNodes) throw TooMany{m};
  }
  std::size_t events_ = 0;
};

// The offset of the first control character in s, or npos: a C0 control other than tab, line
// feed and carriage return, DEL, or a C1 control (U+0080-U+009F, in UTF-8 0xC2 0x80-0x9F) other
// than NEL (U+0085). YAML's printable set (1.2 section 5.1, c-printable) excludes them, and
// yaml-cpp passes them into names, where reports and trace labels print them.
std::size_t control_at(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) return i;
    if (c == 0xC2 && i + 1 < s.size()) {
      const auto d = static_cast<unsigned char>(s[i + 1]);
      if (d >= 0x80 && d <= 0x9F && d != 0x85) return i;
    }
  }
  return std::string_view::npos;
}

// How an error names the control character at s[i]: its byte, or for a C1 control its code point.
std::string control_name(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::ostringstream os;
  if (c == 0xC2 && i + 1 < s.size())
    os << "U+" << std::uppercase << std::hex << std::setw(4) << std::setfill('0')
       << static_cast<unsigned>(static_cast<unsigned char>(s[i + 1]));
  else
    os << "byte 0x" << std::hex << static_cast<unsigned>(c);
  return os.str();
}

// The quoted scalar (or key) that starts last in the text. Plain values, not a YAML::Node: a
// Node's operator= writes through to the node it refers to.
struct LastQuoted {
  bool found = false;
  YAML::Mark mark;
  std::string field;
};

void check_node(const YAML::Node& n, const std::string& file, const std::string& path, int depth,
                std::size_t& nodes, LastQuoted& last) {
  if (depth > kMaxDepth || ++nodes > kMaxNodes)
    throw ConfigError(file, line_of(n), col_of(n), path,
                      depth > kMaxDepth ? "nested deeper than " + std::to_string(kMaxDepth) +
                                              " levels (an alias that contains itself?)"
                                        : "the document expands to more than " + std::to_string(kMaxNodes) +
                                              " nodes (aliases of aliases?)");
  auto child = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  // yaml-cpp keeps a tag and every reader here ignores it: `!include other.yaml` loaded as the
  // text "other.yaml", `!!float 5s` as a duration. So none is accepted. yaml-cpp tags an untagged
  // node "?" and a quoted scalar "!" (YAML's non-specific tags).
  auto check_tag = [&](const YAML::Node& at, const std::string& field) {
    std::string tag = at.Tag();
    if (tag.empty() || tag == "?" || tag == "!") return;
    constexpr std::string_view kCore = "tag:yaml.org,2002:";  // what yaml-cpp makes of `!!`
    if (tag.rfind(kCore, 0) == 0) tag = "!!" + tag.substr(kCore.size());
    throw ConfigError(file, line_of(at), col_of(at), field,
                      "a YAML tag ('" + tag + "'); tags are not read here, so write the value without it");
  };
  check_tag(n, path);
  auto check_text = [&](const YAML::Node& at, const std::string& text, const std::string& field) {
    const std::size_t bad = invalid_utf8_at(text);
    const std::size_t ctl = control_at(text);
    if (bad == std::string_view::npos && ctl == std::string_view::npos) return;
    std::ostringstream os;
    if (bad != std::string_view::npos)
      os << "not UTF-8 text (byte 0x" << std::hex << static_cast<unsigned>(static_cast<unsigned char>(text[bad]))
         << " at character " << std::dec << bad + 1 << " of this value); files are read as UTF-8";
    else
      os << "a control character (" << control_name(text, ctl) << ") at character " << ctl + 1
         << " of this value; YAML text is printable";
    throw ConfigError(file, line_of(at), col_of(at), field, os.str());
  };
  // The quoted scalar that comes last in the file is checked for its closing quote (below).
  auto note_last = [&](const YAML::Node& x, const std::string& field) {
    if (x.Mark().is_null() || x.Tag() != "!") return;  // yaml-cpp tags quoted scalars "!"
    if (!last.found || x.Mark().pos > last.mark.pos) last = LastQuoted{true, x.Mark(), field};
  };
  if (n.IsMap()) {
    // Hashed: a linear search of the keys before it made a mapping of n keys cost n^2 (300,000
    // one-line keys, 3 MB, ran for minutes before any error).
    std::unordered_map<std::string, YAML::Mark> seen;
    for (const auto& kv : n) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
      check_text(kv.first, key, child(shown_key(key)));
      check_tag(kv.first, child(shown_key(key)));
      if (kv.first.IsScalar()) {
        note_last(kv.first, child(shown_key(key)));
        const auto [first, added] = seen.try_emplace(key, kv.first.Mark());
        if (!added)
          throw ConfigError(file, line_of(kv.first), col_of(kv.first), child(key),
                            "duplicate key (first given on line " + std::to_string(first->second.line + 1) +
                                "): a mapping holds each key once");
      }
      check_node(kv.second, file, child(key), depth + 1, nodes, last);
    }
  } else if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i)
      check_node(n[i], file, path + "[" + std::to_string(i) + "]", depth + 1, nodes, last);
  } else if (n.IsScalar()) {
    check_text(n, n.Scalar(), path);
    note_last(n, path);
  }
}

// yaml-cpp 0.7 ends a quoted scalar that is never closed at the end of the input when the input
// ends with a line break (without one it reports "illegal EOF in scalar"): `name: "web` then
// went on to swallow every later line of the file into the name, and the keys on those lines
// silently took their defaults. Only the last quoted scalar of a document can have run to the
// end, so only it is checked: its closing quote must be in the text.
void check_closed(const LastQuoted& last, const std::string& text, const std::string& file) {
  if (!last.found) return;
  const std::size_t at = static_cast<std::size_t>(last.mark.pos);
  if (at >= text.size() || (text[at] != '"' && text[at] != '\'')) return;  // not where yaml-cpp said
  const char q = text[at];
  for (std::size_t i = at + 1; i < text.size(); ++i) {
    if (q == '"' && text[i] == '\\') ++i;  // an escape: \" does not close
    else if (q == '\'' && text[i] == '\'' && i + 1 < text.size() && text[i + 1] == '\'') ++i;  // '' is one quote
    else if (text[i] == q) return;
  }
  throw ConfigError(file, last.mark.line + 1, last.mark.column + 1, last.field,
                    std::string("this quoted string is never closed (no ") + (q == '"' ? "\"" : "'") +
                        " follows it), so the rest of the file would be read as its text");
}

// What the value checks above cannot see: a byte that is not UTF-8, or a control character, in a
// comment (or anywhere else yaml-cpp drops). YAML text is UTF-8 (or UTF-16/32, which yaml-cpp
// converts; such input has a NUL among its first two bytes or starts with a byte-order mark,
// and is left to the value checks) and printable. Runs after the value checks, so an error in a
// value still names its field.
void check_raw_text(const std::string& text, const std::string& file) {
  if (text.size() >= 2 && (text[0] == '\0' || text[1] == '\0' || (static_cast<unsigned char>(text[0]) == 0xFE &&
                                                                  static_cast<unsigned char>(text[1]) == 0xFF) ||
                           (static_cast<unsigned char>(text[0]) == 0xFF && static_cast<unsigned char>(text[1]) == 0xFE)))
    return;
  const std::size_t bad = std::min(invalid_utf8_at(text), control_at(text));
  if (bad == std::string_view::npos) return;
  int line = 1, col = 1;
  for (std::size_t i = 0; i < bad; ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++col;  // count characters, not bytes
  }
  std::ostringstream os;
  if (invalid_utf8_at(text) == bad)
    os << "not UTF-8 text (byte 0x" << std::hex << static_cast<unsigned>(static_cast<unsigned char>(text[bad]))
       << std::dec << ")";
  else
    os << "a control character (" << control_name(text, bad) << ")";
  os << "; files are UTF-8 text of printable characters, comments included";
  throw ConfigError(file, line, col, "", os.str());
}

}  // namespace

std::string shown_key(const std::string& key) {
  if (!key.empty() && control_at(key) == std::string_view::npos) return key;
  return nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string unknown_key_message(const YAML::Node& key, const std::string& allowed) {
  const std::string list = " (allowed here: " + allowed + ")";
  if (key.IsScalar() && key.Scalar() == "<<" && key.Tag() != "!")
    return "YAML merge keys (<<) are not read here: write the keys out" + list;
  if (key.IsNull()) return "a null key (~ or an empty one): keys are names" + list;
  if (!key.IsScalar()) return "a list or mapping as a key (? [...]): keys are names" + list;
  return "unknown key" + list;
}

YamlReader YamlReader::load_string(const std::string& text, const std::string& name) {
  // The file's name goes where its text does: into --json (`file`), and into `name:` and the
  // records when the scenario has none. Not UTF-8 there, they ended in a JSON type error (exit 1)
  // after the run.
  if (invalid_utf8_at(name) != std::string_view::npos)
    throw ConfigError(name, 0, 0, "",
                      "the file's name is not UTF-8 text, which --json results (and a scenario or topology "
                      "without name:, named after it) cannot hold: rename it");
  // yaml-cpp reads UTF-16 and UTF-32 too (by a byte-order mark or NUL bytes), which the README
  // says a scenario is not; such a file ran, and a bad surrogate in it named its field U+FFFD.
  if (text.rfind("\xFF\xFE", 0) == 0 || text.rfind("\xFE\xFF", 0) == 0 || text.find('\0') != std::string::npos)
    throw ConfigError(name, 0, 0, "", "is not UTF-8 text (a UTF-16 or UTF-32 byte-order mark or a NUL byte); save it as UTF-8");
  // yaml-cpp ends lines at LF (CRLF included) but not at a carriage return alone (classic Mac OS
  // line ends, or one stray in an edited file): `# note\rduration: 50ms` was one comment, and the
  // run took the default 10s in silence; `duration: 50ms\r` at the end was "got '50ms'".
  for (std::size_t i = text.find('\r'); i != std::string::npos; i = text.find('\r', i + 1)) {
    if (i + 1 < text.size() && text[i + 1] == '\n') continue;
    int line = 1, col = 1;
    for (std::size_t j = 0; j < i; ++j) {
      if (text[j] == '\n') ++line, col = 1;
      else if ((static_cast<unsigned char>(text[j]) & 0xC0) != 0x80) ++col;  // count characters, not bytes
    }
    throw ConfigError(name, line, col, "",
                      "a carriage return not followed by a line feed: lines end in LF or CRLF; a lone CR ends "
                      "no line here, so what follows it would be read as part of this line (in a comment, ignored)");
  }
  std::vector<YAML::Node> docs;
  try {
    {
      std::istringstream in(text);
      YAML::Parser parser(in);
      NodeCounter counter;
      while (parser.HandleNextDocument(counter)) {
      }
    }
    docs = YAML::LoadAll(text);
  } catch (const NodeCounter::TooMany& e) {
    throw ConfigError(name, e.mark.line + 1, e.mark.column + 1, "",
                      "the document has more than " + std::to_string(kMaxNodes) + " nodes (no scenario comes near)");
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's parser stops far deeper than the loader's own limit, saying only "bad file".
    throw ConfigError(name, e.mark.line + 1, e.mark.column + 1, "",
                      "nested deeper than " + std::to_string(kMaxDepth) + " levels (no scenario is)");
  } catch (const YAML::Exception& e) {
    throw ConfigError(name, e.mark.line + 1, e.mark.column + 1, "", "YAML syntax error: " + e.msg);
  }
  if (docs.size() > 1)
    throw ConfigError(name, line_of(docs[1]), col_of(docs[1]), "",
                      "a second YAML document (after '---'): a file holds one document, and the rest would be ignored");
  YAML::Node n = docs.empty() ? YAML::Node() : docs[0];
  std::size_t nodes = 0;
  LastQuoted last;
  check_node(n, name, "", 0, nodes, last);
  check_closed(last, text, name);
  check_raw_text(text, name);
  return YamlReader(n, name, "");
}

std::string YamlReader::child_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void YamlReader::fail(const std::string& what) const {
  throw ConfigError(file_, line_of(node_), col_of(node_), path_, what);
}

void YamlReader::require_map() const {
  if (!node_.IsMap()) fail("expected a mapping");
}
void YamlReader::require_sequence() const {
  if (!node_.IsSequence()) fail("expected a list");
}

bool YamlReader::has(std::string_view key) const {
  if (!node_.IsMap()) return false;
  for (const auto& kv : node_)
    if (kv.first.Scalar() == key) return true;
  return false;
}

YamlReader YamlReader::at(std::string_view key) const {
  require_map();
  for (const auto& kv : node_)
    if (kv.first.Scalar() == key) return YamlReader(kv.second, file_, child_path(key));
  fail("missing required key '" + std::string(key) + "'");
}

YamlReader YamlReader::at(std::size_t i) const {
  require_sequence();
  return YamlReader(node_[i], file_, path_ + "[" + std::to_string(i) + "]");
}

std::vector<std::string> YamlReader::keys() const {
  std::vector<std::string> out;
  if (node_.IsMap())
    for (const auto& kv : node_) out.push_back(kv.first.Scalar());
  return out;
}

void YamlReader::only(std::initializer_list<std::string_view> allowed) const {
  require_map();
  for (const auto& kv : node_) {
    const std::string& k = kv.first.Scalar();
    bool ok = false;
    for (auto a : allowed) ok = ok || a == k;
    const YAML::Node& at = kv.first.Mark().is_null() ? kv.second : kv.first;  // see scenario_loader
    if (!ok)
      throw ConfigError(file_, line_of(at), col_of(at), child_path(shown_key(k)), unknown_key_message(kv.first, join(allowed)));
  }
}

std::string YamlReader::as_string() const {
  if (!node_.IsScalar()) fail("expected a string");
  return node_.Scalar();
}

double YamlReader::as_double() const {
  if (!node_.IsScalar()) fail("expected a number");
  auto v = parse_number(node_.Scalar());
  if (!v) fail("expected a number, got '" + node_.Scalar() + "'");
  return *v;
}

std::int64_t YamlReader::as_int() const {
  if (!node_.IsScalar()) fail("expected an integer");
  const std::string& s = node_.Scalar();
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) fail("expected an integer, got '" + s + "'");
  return v;
}

bool YamlReader::as_bool() const {
  if (!node_.IsScalar()) fail("expected true/false");
  const std::string& s = node_.Scalar();
  if (s == "true" || s == "on" || s == "yes") return true;
  if (s == "false" || s == "off" || s == "no") return false;
  fail("expected true/false (or on/off), got '" + s + "'");
}

sim::Duration YamlReader::as_duration() const {
  if (!node_.IsScalar()) fail("expected a duration such as 30s or 200ms");
  auto v = parse_duration(node_.Scalar());
  if (const auto ns = duration_ns(node_.Scalar()); !v && ns) {  // a number with a unit, but no clock value
    if (std::fabs(*ns) > kMaxDurationNs)
      fail("'" + node_.Scalar() + "' is too long (durations go up to about 292 years, 9.2e18 ns)");
    fail("'" + node_.Scalar() + "' is not a whole number of nanoseconds (the model's clock counts ns)");
  }
  if (!v) fail("expected a duration with a unit (ns, us, ms, s, m or min), got '" + node_.Scalar() + "'");
  return *v;
}

std::uint64_t YamlReader::as_bytes() const {
  if (!node_.IsScalar()) fail("expected a size such as 1GiB");
  auto v = parse_bytes(node_.Scalar());
  if (!v) fail("expected a whole number of bytes such as 512MiB or 1GiB (below 8 EiB), got '" + node_.Scalar() + "'");
  return *v;
}

std::string YamlReader::get_string(std::string_view key, const std::string& def) const {
  return has(key) ? at(key).as_string() : def;
}

std::string YamlReader::get_enum(std::string_view key, const std::string& def,
                                 std::initializer_list<std::string_view> choices) const {
  if (!has(key)) return def;
  YamlReader r = at(key);
  std::string v = r.as_string();
  for (auto c : choices)
    if (c == v) return v;
  r.fail("'" + v + "' is not one of: " + join(choices));
}

double YamlReader::get_double(std::string_view key, double def, double lo, double hi) const {
  if (!has(key)) return def;
  YamlReader r = at(key);
  double v = r.as_double();
  if (v < lo || v > hi) {
    std::ostringstream os;
    os << r.node().Scalar() << " is out of range [" << lo << ", " << hi << "]";  // as written
    r.fail(os.str());
  }
  return v;
}

std::int64_t YamlReader::get_int(std::string_view key, std::int64_t def, std::int64_t lo,
                                 std::int64_t hi) const {
  if (!has(key)) return def;
  YamlReader r = at(key);
  std::int64_t v = r.as_int();
  if (v < lo || v > hi) r.fail(out_of_range(v, lo, hi));
  return v;
}

bool YamlReader::get_bool(std::string_view key, bool def) const {
  return has(key) ? at(key).as_bool() : def;
}

sim::Duration YamlReader::get_duration(std::string_view key, sim::Duration def, sim::Duration lo,
                                       sim::Duration hi) const {
  if (!has(key)) return def;
  YamlReader r = at(key);
  sim::Duration v = r.as_duration();
  if (v < lo || v > hi) r.fail(duration_out_of_range(r.node().Scalar(), lo, hi));
  return v;
}

std::uint64_t YamlReader::get_bytes(std::string_view key, std::uint64_t def) const {
  return has(key) ? at(key).as_bytes() : def;
}

}  // namespace vcpusim::app
