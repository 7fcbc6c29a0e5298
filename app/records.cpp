// SPDX-License-Identifier: MIT
#include "app/records.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>

#include "app/config_error.h"
#include "app/output_paths.h"
#include "app/scenario.h"
#include "app/sweep.h"
#include "app/text.h"

namespace vcpusim::app {

RecordKey key_of(const nlohmann::json& r) {
  const auto& c = r.at("column");
  return {c.is_null() ? std::string() : c.get<std::string>(), r.at("point").dump(), r.at("repetition").get<std::uint32_t>()};
}

std::string point_fields(const nlohmann::json& point) {
  std::string fields;
  for (const auto& [f, v] : point.items()) fields += (fields.empty() ? "" : ", ") + f;
  return fields;
}

std::string RecordPlace::named_from(const RecordPlace& here) const {
  // Within one file "in records.jsonl" named the same file twice, as if it were two.
  const std::string of = file == here.file ? std::string("this file") : file;
  if (line > 0) return "at line " + std::to_string(line) + " of " + of;
  return file == here.file ? std::string("in another record of this file") : "in " + file;
}

namespace {

// A cross-record error at the record it is about: its line, when it has one.
ConfigError error_at(const RecordPlace& at, const std::string& field, const std::string& what) {
  return ConfigError(at.file, at.line, at.line > 0 ? 1 : 0, field, what);
}

}  // namespace

void SweptFields::check(const nlohmann::json& r, const RecordPlace& at) {
  const std::string fields = point_fields(r.at("point"));
  if (first_) {
    first_ = false;
    fields_ = fields;
    from_ = at;
  } else if (fields != fields_) {
    throw error_at(at, "point",
                   "swept fields (" + fields + ") differ from those " + from_.named_from(at) + " (" + fields_ +
                       "): one sweep's points all name the same fields");
  }
}

std::string point_label(const nlohmann::json& point) {
  std::string out;
  for (const auto& [field, v] : point.items()) out += (out.empty() ? "" : ", ") + field + "=" + value_label(v);
  return "{" + out + "}";
}

RecordKey table_key_of(const nlohmann::json& r) {
  const auto& [column, point, repetition] = key_of(r);
  return {column, point_label(r.at("point")), repetition};
}

void check_same_run(const nlohmann::json& kept, const RecordPlace& kept_from, const nlohmann::json& again,
                    const RecordPlace& at) {
  for (const char* field : {"seed", "metrics"})
    if (kept.value(field, nlohmann::json()) != again.value(field, nlohmann::json())) {
      const auto& [column, point, repetition] = key_of(again);
      throw error_at(at, field,
                        "the run of point " + point + ", column '" + column + "', repetition " +
                            std::to_string(repetition) + " is also " + kept_from.named_from(at) + " with another " + field +
                            ": two different runs under one name (an edited or mixed file); refusing to drop one");
    }
}

namespace {

// A number in a record line that no double holds (1e999), at the field it was the value of.
struct RecordNumberOverflow {
  std::string field, what;
};

// A record line, refusing a key given twice in one object: the JSON parser kept the last one,
// silently (a hand-edited `"repetition": 5` after `"repetition": 0`), where YAML files refuse it.
nlohmann::json parse_record_line(const std::string& line) {
  // A record holds a scenario (at most 64 levels, yaml_reader.cpp) two levels down. A hand-made
  // one nested 200,000 deep was parsed, then overflowed the stack where it was written out
  // again (merge, and compare through its point): SIGSEGV.
  constexpr int kMaxRecordDepth = 100;
  std::vector<std::set<std::string>> keys;  // per open object
  std::vector<std::string> reading;         // per open object, the key whose value is being read
  try {
    return nlohmann::json::parse(line, [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      if (depth > kMaxRecordDepth)
        throw std::runtime_error("nested deeper than " + std::to_string(kMaxRecordDepth) + " levels, which no sweep writes");
      switch (event) {
        case nlohmann::json::parse_event_t::object_start:
          keys.emplace_back();
          reading.emplace_back();
          break;
        case nlohmann::json::parse_event_t::object_end:
          keys.pop_back();
          reading.pop_back();
          break;
        case nlohmann::json::parse_event_t::key:
          if (!keys.back().insert(parsed.get<std::string>()).second)
            throw std::runtime_error("the key '" + parsed.get<std::string>() + "' appears twice in one object");
          reading.back() = parsed.get<std::string>();
          break;
        default: break;
      }
      return true;
    });
  } catch (const nlohmann::json::out_of_range& e) {
    // 406, "number overflow parsing '1e999'": named at no field and no line's column, as the
    // library's text ("not a sweep record: [json.exception.out_of_range.406] ...").
    if (e.id != 406) throw;
    std::string field;
    for (const std::string& k : reading)
      if (!k.empty()) field += (field.empty() ? "" : ".") + k;
    const std::string what = e.what();
    const auto quote = what.find('\'');
    throw RecordNumberOverflow{field, (quote == std::string::npos ? std::string("a number") : what.substr(quote)) +
                                          " is beyond a double's range, which no sweep writes"};
  }
}

}  // namespace

std::vector<nlohmann::json> read_records(const std::string& path, std::vector<int>* lines) {
  std::vector<nlohmann::json> out;
  if (lines) lines->clear();
  // Records are files sweeps wrote: a device (/dev/zero was read for seconds, then "0 records")
  // or a directory is not one.
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st) && !std::filesystem::is_fifo(st))
    throw ConfigError(path, 0, 0, "", "is not a records file (records.jsonl) or a sweep directory");
  errno = 0;
  std::ifstream in(path);
  if (!in) {
    // Only a file that is not there is no records yet (a sweep not started). One that is there
    // but may not be read was "no records to compare (an empty file ...)", exit 2 for the wrong
    // reason, and a sweep's resume took it for a fresh start.
    const int err = errno;
    const bool absent = ec && (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory);
    if (absent) return out;
    const std::string why = err ? std::generic_category().message(err) : ec ? ec.message() : "";
    throw ConfigError(path, 0, 0, "", why.empty() ? "cannot open file" : "cannot open file: " + why);
  }
  std::string line;
  int lineno = 0;
  std::string first_fields;  // the swept fields of the file's first record, and its line
  int first_line = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const bool complete = !in.eof();  // getline hit a '\n'
    if (line.empty()) continue;
    try {
      out.push_back(parse_record_line(line));
      // The fields key_of reads, named: a column 7 or a repetition "1" was "type must be string,
      // but is number", which named neither.
      const nlohmann::json& r = out.back();
      // A line of JSON that is no record, or a record without a key every reader uses, was the
      // library's "key 'point' not found" or "cannot use at() with array", naming no field.
      if (!r.is_object())
        throw ConfigError(path, lineno, 1, "", r.dump().substr(0, 40) + " is not a sweep record (a JSON object)");
      for (const char* k : {"column", "point", "repetition"})
        if (!r.contains(k)) throw ConfigError(path, lineno, 1, k, "missing: every sweep record has it");
      if (!r.at("column").is_null() && !r.at("column").is_string())
        throw ConfigError(path, lineno, 1, "column", r.at("column").dump() + " is not a column label (a string, or null)");
      // Bounded as `repetitions:` is: key_of reads it as 32 bits, so 4294967296 was repetition 0,
      // a duplicate of it ("repetition 0 is also in ... with another seed").
      if (!r.at("repetition").is_number_unsigned() || r.at("repetition").get<std::uint64_t>() >= kMaxRepetitions)
        throw ConfigError(path, lineno, 1, "repetition",
                          r.at("repetition").dump() + " is not a repetition number (0 to " +
                              std::to_string(kMaxRepetitions - 1) + ": a sweep runs at most " +
                              std::to_string(kMaxRepetitions) + " repetitions)");
      key_of(r);
    } catch (const ConfigError&) {
      throw;
    } catch (const RecordNumberOverflow& e) {
      if (!complete) break;  // a torn last line, cut inside a number
      throw ConfigError(path, lineno, 1, e.field, e.what);
    } catch (const nlohmann::json::parse_error& e) {
      if (!complete) break;  // a torn last line: the run was killed while writing it
      // At the byte the parser stopped at, without the library's "[json.exception...] parse
      // error at line 1, column N:" prefix, which repeated the place wrongly (always line 1).
      const std::string what = e.what();
      const auto colon = what.find(": ", what.find("column "));
      const int col = static_cast<int>(std::min<std::size_t>(e.byte == 0 ? 1 : e.byte, 1u << 30));
      throw ConfigError(path, lineno, col, "", "not a sweep record: " + (colon == std::string::npos ? what : what.substr(colon + 2)));
    } catch (const std::exception& e) {
      // Not a torn line, even without its newline: the line is JSON (a torn record is a prefix of
      // one, never JSON), of the wrong shape. Breaking here kept the record just pushed, and key_of
      // threw on it again outside this loop: compare ended in "type must be string, but is number",
      // exit 1, with no file or line.
      throw ConfigError(path, lineno, 1, "", std::string("not a sweep record: ") + e.what());
    }
    // What compare, plot and merge compute from: a string metric ended compare with a JSON
    // type error (exit 1, no file or line), and a repetition of 0.5 or -1 was taken.
    const nlohmann::json& r = out.back();
    if (!r.at("repetition").is_number_unsigned())
      throw ConfigError(path, lineno, 1, "repetition", r.at("repetition").dump() + " is not a repetition number");
    // The seed tells two runs under one name apart (check_same_run); "x" there was taken.
    if (r.contains("seed") && !r.at("seed").is_number_unsigned())
      throw ConfigError(path, lineno, 1, "seed", r.at("seed").dump() + " is not a seed (a whole number, 0 or more)");
    if (!r.contains("metrics") || !r.at("metrics").is_object())
      throw ConfigError(path, lineno, 1, "metrics", "a sweep record has an object of metrics");
    // Bounded, as reproduction files bound published values: 1e308 printed as 309 digits, its
    // stddev as inf, and gnuplot failed on it (exit 1). No run reports a rate or a count near
    // 1e18 (an hour at 10^7 events a second is 3.6e10).
    constexpr double kMaxMetric = 1e18;
    for (const auto& [name, v] : r.at("metrics").items()) {
      // A name is printed as a table's row or column and a CSV header: "x\ny" split them (exit 0).
      if (has_control_character(name))
        throw ConfigError(path, lineno, 1, "metrics", nlohmann::json(name).dump() + " holds a control character, which no sweep writes");
      if (!v.is_number())
        throw ConfigError(path, lineno, 1, "metrics." + name, v.dump() + " is not a number");
      if (!std::isfinite(v.get<double>()) || std::fabs(v.get<double>()) > kMaxMetric)
        throw ConfigError(path, lineno, 1, "metrics." + name, v.dump() + " is beyond +/-1e18, more than any run reports");
    }
    // The indices order the columns and rows of compare and plot; a string or -1 there ended
    // them with a JSON type error, or put a column in another's place.
    for (const char* k : {"column_index", "point_index"})
      if (r.contains(k) && !r.at(k).is_number_unsigned())
        throw ConfigError(path, lineno, 1, k, r.at(k).dump() + " is not an index");
    // What merge counts missing tasks by, checked here where the line is known (merge named only
    // the file) and for every reader. A sweep has at most kMaxSweepRuns tasks: a hand-edited
    // tasks_total of 10^9 made merge's missing list a 4 GB allocation (std::bad_alloc, exit 1);
    // a task_index of 100 (of 8) made it report all 8 tasks missing beside the 8 records it wrote.
    for (const char* k : {"task_index", "tasks_total"})
      if (r.contains(k) && (!r.at(k).is_number_unsigned() || r.at(k).get<std::uint64_t>() > kMaxSweepRuns))
        throw ConfigError(path, lineno, 1, k,
                          r.at(k).dump() + " is not a task count of a sweep (an integer from 0 to " +
                              std::to_string(kMaxSweepRuns) + ")");
    if (r.contains("task_index") && r.contains("tasks_total") &&
        r.at("task_index").get<std::uint64_t>() >= r.at("tasks_total").get<std::uint64_t>())
      throw ConfigError(path, lineno, 1, "task_index",
                        r.at("task_index").dump() + " is not below the record's tasks_total (" + r.at("tasks_total").dump() +
                            "): a sweep numbers its tasks from 0");
    // Names the commands print and compare: a number there ended compare, plot and merge with
    // "type must be string" (exit 1, no file or line).
    for (const char* k : {"scenario", "scenario_hash", "vcpusim_build"})
      if (r.contains(k) && !r.at(k).is_string()) throw ConfigError(path, lineno, 1, k, r.at(k).dump() + " is not a string");
    // The names tables, CSV cells and SVG text print, as the sweep file's loader checks them.
    for (const char* k : {"scenario", "column"})
      if (r.contains(k) && r.at(k).is_string() && has_control_character(r.at(k).get<std::string>()))
        throw ConfigError(path, lineno, 1, k, r.at(k).dump() + " holds a control character, which no sweep writes");
    // Every point of one sweep names the same swept fields (each axis gives each of its values
    // all its fields): a point without the field a table is by ended compare and plot with
    // "key not found", and a point that is not an object ended plot.
    const nlohmann::json& point = r.at("point");
    if (!point.is_object())
      throw ConfigError(path, lineno, 1, "point", point.dump() + " is not an object of swept fields");
    // Its fields and values are printed too, as a table's operations, CSV cells and SVG text: a
    // value "x\n1" split a compare row in two (text, markdown and CSV alike), exit 0.
    const std::function<void(const nlohmann::json&, const std::string&)> check_printable = [&](const nlohmann::json& v,
                                                                                               const std::string& field) {
      if (v.is_string() && has_control_character(v.get<std::string>()))
        throw ConfigError(path, lineno, 1, field, v.dump() + " holds a control character, which no sweep writes");
      if (v.is_array())
        for (const auto& e : v) check_printable(e, field);
      if (v.is_object())
        for (const auto& [k, e] : v.items()) {
          if (has_control_character(k))
            throw ConfigError(path, lineno, 1, field, nlohmann::json(k).dump() + " holds a control character, which no sweep writes");
          check_printable(e, field + "." + k);
        }
    };
    check_printable(point, "point");
    const std::string fields = point_fields(point);
    if (first_line == 0) {
      first_fields = fields;
      first_line = lineno;
    } else if (fields != first_fields) {
      throw ConfigError(path, lineno, 1, "point",
                        "swept fields (" + fields + ") differ from line " + std::to_string(first_line) + "'s (" +
                            first_fields + "): one sweep's points all name the same fields");
    }
    if (lines) lines->push_back(lineno);
  }
  return out;
}

std::vector<PlacedRecord> read_placed_records(const std::string& path) {
  std::vector<int> lines;
  std::vector<nlohmann::json> records = read_records(path, &lines);
  std::vector<PlacedRecord> out;
  out.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) out.push_back({std::move(records[i]), {path, lines[i]}});
  return out;
}

void OneSweep::check(const nlohmann::json& r, const RecordPlace& at) {
  const std::string h = r.value("scenario_hash", std::string());
  const std::string b = r.value("vcpusim_build", std::string("(none)"));
  if (first_) {
    first_ = false;
    hash_ = h;
    first_from_ = at;
    build_ = b;
  } else if (h != hash_) {
    throw error_at(at, "scenario_hash",
                   "a record of a different scenario than the record " + first_from_.named_from(at) + " (" + h + " vs " + hash_ +
                       "); refusing to " + command_);
  } else if (b != build_) {  // shards of one sweep run by different builds mix two models
    throw error_at(at, "vcpusim_build",
                   "a record of vcpusim build " + b + ", where the record " + first_from_.named_from(at) + " is of build " + build_ +
                       "; refusing to " + command_);
  }
}

std::string records_file_of(const std::string& d) {
  // A loop of symbolic links, given or as DIR/records.jsonl, made every later std::filesystem
  // query of it throw: compare, plot, merge and reproduce --from ended in "filesystem error:
  // status: Too many levels of symbolic links" (exit 1).
  std::error_code ec;
  const bool dir = std::filesystem::is_directory(d, ec);
  if (ec.value() == ELOOP) throw ConfigError(d, 0, 0, "", "is a loop of symbolic links");
  const std::string path = dir ? (std::filesystem::path(d) / "records.jsonl").string() : d;
  (void)std::filesystem::status(path, ec);
  if (ec.value() == ELOOP) throw ConfigError(path, 0, 0, "", "is a loop of symbolic links");
  return path;
}

// One sweep gives each column one index and each index one column, and each point one index and
// each index one point: compare lists a table's columns and rows by index, and a record of point
// 4 carrying point 2's index made the rows of 4 vanish from the table (exit 0). Checked as each
// record is read, so that the message names the file (a check after the read could only say
// "<records>"). Points are told apart as tables print them (2 and 2.0 are one row).
void SweepIndices::OneToOne::check(const std::string& label, std::uint64_t index, const RecordPlace& at) {
  const std::string shown = quote_ ? "'" + label + "'" : label;
  const auto [li, fresh_index] = label_of_.try_emplace(index, label, at);
  if (!fresh_index && li->second.first != label)
    throw error_at(at, field_,
                      field_ + " " + std::to_string(index) + " is " + noun_ + " " + shown + " here and " +
                          (quote_ ? "'" + li->second.first + "'" : li->second.first) + " " + li->second.second.named_from(at) +
                          "; one sweep gives each " + noun_ + " its own index");
  const auto [il, fresh_label] = index_of_.try_emplace(label, index, at);
  if (!fresh_label && il->second.first != index)
    throw error_at(at, field_,
                      noun_ + " " + shown + " has " + field_ + " " + std::to_string(index) + " here and " +
                          std::to_string(il->second.first) + " " + il->second.second.named_from(at) + "; one sweep gives each " +
                          noun_ + " one index");
}

void SweepIndices::check(const nlohmann::json& record, const RecordPlace& at) {
  const auto& c = record.at("column");
  columns_.check(c.is_null() ? "" : c.get<std::string>(), record.value("column_index", std::uint64_t{0}), at);
  points_.check(point_label(record.at("point")), record.value("point_index", std::uint64_t{0}), at);
}

std::vector<nlohmann::json> read_sweep_outputs(const std::vector<std::string>& inputs, const std::string& command) {
  std::vector<nlohmann::json> all;
  SweepRecordChecks checks(command);
  std::string paths;
  std::map<RecordKey, std::pair<std::size_t, RecordPlace>> seen;  // key -> index in all, its place
  std::size_t duplicates = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string& in = inputs[i];
    const std::string path = records_file_of(in);
    // One output named twice (`A A`, `A A/`, a link to A) had its records read twice: every
    // sample counted twice, so stddevs shrank and a t-test found differences that are not there.
    for (std::size_t j = 0; j < i; ++j)
      if (same_file(path, records_file_of(inputs[j])))
        throw ConfigError("<command line>", 0, 0, "DIR",
                          "'" + in + "' and '" + inputs[j] + "' are one sweep output given twice: its records would be counted twice");
    if (!std::filesystem::exists(path)) throw ConfigError(path, 0, 0, "", "no records here (run `vcpusim sweep ... --out DIR` first)");
    paths += (paths.empty() ? "" : ", ") + path;
    for (auto& [r, place] : read_placed_records(path)) {
      // Across files a point without the field a table is by ended compare and plot with "key
      // 'x' not found" (exit 1).
      checks.check(r, place);
      // A run held twice (overlapping shards' outputs, or a line repeated) was counted twice:
      // the same sample twice shrank the stddevs. Kept once, as merge keeps it; its point is
      // read as the table prints it, since {"x": 2} and {"x": 2.0} (a file rewritten by a tool
      // that writes every number as a float) went into one row twice.
      const auto [at, fresh] = seen.try_emplace(table_key_of(r), all.size(), place);
      if (!fresh) {
        check_same_run(all[at->second.first], at->second.second, r, place);
        ++duplicates;
        continue;
      }
      all.push_back(std::move(r));
    }
  }
  if (duplicates > 0)
    std::cerr << command << ": " << duplicates << " duplicate record(s) dropped (the same run in two inputs, or twice in one)\n";
  // Named: "<records>: no records to compare" did not say which file was empty.
  if (all.empty())
    throw ConfigError(paths, 0, 0, "", "no records to " + command + " (an empty file, or one holding only a torn last line)");
  return all;
}

std::vector<std::string> metric_names_near(const std::set<std::string>& metrics, const std::string& wanted) {
  std::vector<std::string> names;
  const auto dot = wanted.rfind('.');
  if (dot != std::string::npos)
    for (const std::string& m : metrics)
      if (m.compare(0, dot + 1, wanted, 0, dot + 1) == 0) names.push_back(m);
  return names;
}

std::string metric_names_hint(const std::set<std::string>& metrics, const std::string& wanted) {
  std::vector<std::string> names = metric_names_near(metrics, wanted);
  if (names.empty()) names.assign(metrics.begin(), metrics.end());
  constexpr std::size_t kShown = 40;
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > kShown) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

void LackingMetric::count(const std::string& where) {
  ++total_;
  // By index, not by a scan of counts_: a large sweep's per-VM metric is missing from thousands
  // of records over as many cells.
  const auto [it, fresh] = slot_.try_emplace(where, counts_.size());
  if (fresh) counts_.emplace_back(where, 0);
  ++counts_[it->second].second;
}

std::string LackingMetric::note(const std::string& metric) const {
  if (counts_.empty()) return "";
  std::string places;
  for (const auto& [where, n] : counts_) places += (places.empty() ? "" : ", ") + where + " (" + std::to_string(n) + ")";
  return std::to_string(total_) + " record(s) have no metric '" + metric + "' and are left out: " + places;
}

std::vector<std::string> columns_in_order(const std::vector<nlohmann::json>& records) {
  std::map<std::uint64_t, std::string> by_index;
  for (const nlohmann::json* r : canonical_order(records)) {
    const auto& c = r->at("column");
    const std::string label = c.is_null() ? "" : c.get<std::string>();
    const auto [at, fresh] = by_index.emplace(r->value("column_index", std::uint64_t{0}), label);
    if (!fresh && at->second != label)
      throw ConfigError("<records>", 0, 0, "column_index",
                        "column_index " + std::to_string(at->first) + " is both column '" + at->second + "' and '" + label +
                            "'; one sweep gives each column its own index");
  }
  std::vector<std::string> out;
  for (const auto& [i, label] : by_index) {
    if (std::find(out.begin(), out.end(), label) != out.end())
      throw ConfigError("<records>", 0, 0, "column_index",
                        "column '" + label + "' has two column_index values; one sweep gives each column one index");
    out.push_back(label);
  }
  return out;
}

std::vector<const nlohmann::json*> canonical_order(const std::vector<nlohmann::json>& records) {
  std::vector<std::pair<RecordKey, const nlohmann::json*>> keyed;
  keyed.reserve(records.size());
  for (const auto& r : records) keyed.emplace_back(key_of(r), &r);
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const nlohmann::json*> out;
  out.reserve(keyed.size());
  for (const auto& [k, r] : keyed) out.push_back(r);
  return out;
}

RecordWriter::RecordWriter(const std::string& path) : path_(path) {
  if (std::filesystem::exists(path)) {
    // A last line without its newline: a record torn by a killed run is cut, so that appends
    // start on a fresh line; a complete one (a file edited or copied without its final newline)
    // gets the newline. read_records() counts the latter as done, so cutting it lost a finished
    // run while the resume said "0 left".
    std::ifstream in(path, std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(in)), {});
    in.close();
    if (!all.empty() && all.back() != '\n') {
      const auto nl = all.rfind('\n');
      const std::size_t from = nl == std::string::npos ? 0 : nl + 1;
      bool complete = false;
      try {
        key_of(nlohmann::json::parse(all.substr(from)));
        complete = true;
      } catch (const std::exception&) {
      }
      if (complete) std::ofstream(path, std::ios::app | std::ios::binary) << '\n';
      else std::filesystem::resize_file(path, from);
    }
  }
  out_.open(path, std::ios::app);
  if (!out_) throw ConfigError(path, 0, 0, "", "cannot open for writing");
}

void RecordWriter::append(const nlohmann::json& record) {
  const std::string line = record.dump() + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  // A failed write (a full disk) left the stream failed and every later append a no-op: the sweep
  // went on, said "160 records written" and exited 0 over a file cut inside its 13th record.
  // The first failure is kept and given to every later append: with --jobs 2 the other worker,
  // waiting on the lock, found the stream already failed and errno untouched, and its message
  // (without "File too large") could reach the user first (a CI sanitizer run did so).
  if (!failure_.empty()) throw std::runtime_error(failure_);
  errno = 0;
  out_ << line;
  out_.flush();
  const int error = errno;  // read before the message allocates
  if (!out_) {
    failure_ = path_ + ": writing a record failed" + (error ? std::string(": ") + std::strerror(error) : "") +
               "; the records before it are kept, and the same command resumes";
    throw std::runtime_error(failure_);
  }
}

}  // namespace vcpusim::app
