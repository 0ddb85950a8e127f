// JSON-lines export and import of tuning records (database.h: ExportJsonLines,
// ImportJsonLines). Each line is one record with its workload inlined (record_json.h), so a
// file is self-contained and files from several machines can be concatenated or merged.
//
// Import reads and checks the whole file before committing anything, so a malformed line
// leaves the database unchanged. A record is a duplicate when a stored record (or an earlier
// line) is the same measurement: the same workload, target, trace, timestamp and run times;
// traces compare as JSON values, so whitespace and key order do not matter. A runoff's
// re-measurement of a program is another measurement of the same trace, so it survives a
// round trip, and its link to the record it re-times is mapped to the ids of the importing
// database.
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "database/database.h"
#include "database/record_json.h"

namespace tessera {
namespace {

using json = nlohmann::json;

// The canonical text of a trace, for duplicate detection.
std::string CanonicalTrace(const std::string& trace_json) {
  json j = json::parse(trace_json, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? trace_json : j.dump();
}

// What makes two records the same measurement (within one workload and target).
std::string MeasurementKey(const TuningRecord& r) {
  return absl::StrCat(CanonicalTrace(r.trace_json), "\n", json(r.timestamp).dump(), "\n",
                      RunSecsToJson(r.run_secs).dump());
}

absl::StatusOr<std::vector<NumberedLine>> ReadJsonLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("import '", path, "': cannot open the file"));
  std::vector<NumberedLine> out;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto error = [&](const std::string& message) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", number, ": ", message));
    };
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      return error(absl::StrCat("malformed JSON: ", e.what()));
    }
    absl::StatusOr<JsonLineRecord> entry = RecordFromJsonLine(j);
    if (!entry.ok()) return error(std::string(entry.status().message()));
    out.push_back({number, *std::move(entry)});
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat("import '", path, "': read error"));
  return out;
}

}  // namespace

absl::StatusOr<int64_t> ExportJsonLines(Database* db, const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Workload> workloads, db->AllWorkloads());
  std::map<int64_t, const Workload*> by_id;
  for (const Workload& w : workloads) by_id[w.id] = &w;
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> records, db->AllRecords());

  std::ofstream out(path, std::ios::trunc);
  if (!out) {
    return absl::FailedPreconditionError(
        absl::StrCat("export '", path, "': cannot open the file for writing"));
  }
  for (const TuningRecord& r : records) {
    auto it = by_id.find(r.workload_id);
    if (it == by_id.end()) {
      return absl::DataLossError(absl::StrCat("export '", path, "': record ", r.id,
                                              " names unknown workload ", r.workload_id));
    }
    out << RecordToJsonLine(*it->second, r).dump() << '\n';
  }
  out.flush();
  if (!out) return absl::DataLossError(absl::StrCat("export '", path, "': write failed"));
  return static_cast<int64_t>(records.size());
}

absl::StatusOr<ImportStats> ImportRecordLines(Database* db, std::vector<NumberedLine> lines,
                                              const std::function<std::string(int64_t)>& where,
                                              bool check) {
  auto in_line = [&](int64_t number, const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(where(number), ": ", s.message()));
  };
  if (check) {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (const NumberedLine& line : lines) {
      absl::Status checked = CheckImportedRecord(line.entry, now);
      if (!checked.ok()) return in_line(line.number, checked);
    }
  }
  ImportStats stats;
  // (workload id, target) -> measurement key -> record id, loaded on first use.
  std::map<std::pair<int64_t, std::string>, std::map<std::string, int64_t>> seen;
  // A line's "id" -> the id of its record here (imported, or the stored one it duplicates).
  std::map<int64_t, int64_t> ids;
  for (NumberedLine& line : lines) {
    absl::StatusOr<Workload> workload = db->CommitWorkload(line.entry.func);
    if (!workload.ok()) return in_line(line.number, workload.status());
    TuningRecord& record = line.entry.record;
    const int64_t old_id = record.id;
    record.id = -1;
    record.workload_id = workload->id;

    auto key = std::make_pair(workload->id, record.target);
    auto it = seen.find(key);
    if (it == seen.end()) {
      absl::StatusOr<std::vector<TuningRecord>> stored = db->AllRecords(*workload, record.target);
      if (!stored.ok()) return in_line(line.number, stored.status());
      it = seen.emplace(key, std::map<std::string, int64_t>()).first;
      for (const TuningRecord& r : *stored) it->second.emplace(MeasurementKey(r), r.id);
    }
    const std::string measurement = MeasurementKey(record);
    if (auto same = it->second.find(measurement); same != it->second.end()) {
      ++stats.duplicates;
      if (old_id >= 0) ids[old_id] = same->second;
      continue;
    }
    if (record.retimes > 0) {
      auto target = ids.find(record.retimes);
      if (target != ids.end()) {
        record.retimes = target->second;
      } else {
        record.retimes = 0;  // a record this database does not hold
        ++stats.links_dropped;
      }
    }
    absl::StatusOr<int64_t> id = db->CommitRecord(record);
    if (!id.ok()) return in_line(line.number, id.status());
    it->second.emplace(measurement, *id);
    if (old_id >= 0) ids[old_id] = *id;
    ++stats.imported;
  }
  return stats;
}

absl::StatusOr<ImportStats> ImportJsonLines(Database* db, const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<NumberedLine> lines, ReadJsonLines(path));
  return ImportRecordLines(db, std::move(lines),
                           [&](int64_t number) { return absl::StrCat(path, ":", number); });
}

}  // namespace tessera
