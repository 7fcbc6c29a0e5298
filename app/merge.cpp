// SPDX-License-Identifier: MIT
#include "app/merge.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "app/config_error.h"
#include "app/output_paths.h"
#include "app/records.h"
#include "app/sweep.h"

namespace vcpusim::app {

MergeReport merge_records(const std::vector<std::string>& inputs, const std::string& out_dir) {
  MergeReport rep;
  // A merged file of two field sets or of indices that disagree was refused by compare, plot and
  // a resume, which named the merged file: which input was it?
  SweepRecordChecks checks("merge");
  std::map<RecordKey, nlohmann::json> kept;
  std::map<RecordKey, RecordPlace> kept_from;  // where each kept record came from
  std::set<std::size_t> seen_tasks;
  // The merged file replaces DIR/records.jsonl whole: records already there were lost without a
  // word when they were another sweep's. They are read as one more input instead, so a merge
  // into a directory holding the same sweep's records keeps them, and another sweep's are
  // refused as any foreign input is.
  std::vector<std::string> all_inputs = inputs;
  const std::string out_records = (std::filesystem::path(out_dir) / "records.jsonl").string();
  if (std::filesystem::exists(out_records) &&
      std::none_of(inputs.begin(), inputs.end(), [&](const std::string& in) { return same_file(records_file_of(in), out_records); }))
    all_inputs.push_back(out_records);
  for (const std::string& in : all_inputs) {
    const std::string path = records_file_of(in);
    if (!std::filesystem::exists(path)) throw ConfigError(path, 0, 0, "", "no records here");
    for (auto& [r, place] : read_placed_records(path)) {
      checks.check(r, place);
      // read_records bounds both by kMaxSweepRuns and a task_index by its tasks_total, at their line.
      if (r.contains("tasks_total")) rep.tasks_total = std::max(rep.tasks_total, r.at("tasks_total").get<std::size_t>());
      if (r.contains("task_index")) seen_tasks.insert(r.at("task_index").get<std::size_t>());
      const RecordKey k = table_key_of(r);  // {"x": 2} and {"x": 2.0} are one run, as compare reads them
      if (const auto it = kept.find(k); it != kept.end()) {
        check_same_run(it->second, kept_from.at(k), r, place);
        ++rep.duplicates;
        continue;
      }
      kept_from.emplace(k, place);
      kept.emplace(k, std::move(r));
    }
  }
  // Nothing to merge (shards that ran no task, empty files): it wrote an empty records.jsonl
  // and reported "0 of 0 tasks missing", exit 0, where compare on the same input is exit 2.
  if (kept.empty()) {
    std::string paths;
    for (const std::string& in : all_inputs) paths += (paths.empty() ? "" : ", ") + records_file_of(in);
    throw ConfigError(paths, 0, 0, "", "no records to merge (empty files, shards that ran no task, or only torn last lines)");
  }
  for (std::size_t i = 0; i < rep.tasks_total; ++i)
    if (!seen_tasks.count(i)) rep.missing.push_back(i);
  std::vector<nlohmann::json> out;
  for (auto& [k, r] : kept) out.push_back(std::move(r));
  std::sort(out.begin(), out.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a.value("task_index", std::size_t{0}) < b.value("task_index", std::size_t{0});
  });
  std::filesystem::create_directories(out_dir);
  rep.out_path = (std::filesystem::path(out_dir) / "records.jsonl").string();
  std::string text;
  for (const auto& r : out) text += r.dump() + "\n";
  write_atomically(rep.out_path, text);
  rep.records = out.size();
  return rep;
}

}  // namespace vcpusim::app
