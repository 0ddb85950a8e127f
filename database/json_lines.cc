// JSON-lines export and import of tuning records (database.h: ExportJsonLines,
// ImportJsonLines). Each line is one record with its workload inlined (record_json.h), so a
// file is self-contained and files from several machines can be concatenated or merged.
//
// Import reads and checks the whole file before committing anything, so a malformed line
// leaves the database unchanged. A record is a duplicate when a stored record (or an earlier
// line) has the same workload, target and trace; traces compare as JSON values, so
// whitespace and key order do not matter.
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
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

struct ParsedLine {
  int64_t line_number;
  JsonLineRecord entry;
};

absl::StatusOr<std::vector<ParsedLine>> ReadJsonLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("import '", path, "': cannot open the file"));
  std::vector<ParsedLine> out;
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

absl::StatusOr<ImportStats> ImportJsonLines(Database* db, const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<ParsedLine> lines, ReadJsonLines(path));
  ImportStats stats;
  // (workload id, target) -> canonical traces stored, loaded on first use.
  std::map<std::pair<int64_t, std::string>, std::set<std::string>> seen;
  for (ParsedLine& line : lines) {
    auto in_line = [&](const absl::Status& s) {
      return absl::Status(s.code(), absl::StrCat(path, ":", line.line_number, ": ", s.message()));
    };
    absl::StatusOr<Workload> workload = db->CommitWorkload(line.entry.func);
    if (!workload.ok()) return in_line(workload.status());
    TuningRecord& record = line.entry.record;
    record.workload_id = workload->id;

    auto key = std::make_pair(workload->id, record.target);
    auto it = seen.find(key);
    if (it == seen.end()) {
      absl::StatusOr<std::vector<TuningRecord>> stored = db->AllRecords(*workload, record.target);
      if (!stored.ok()) return in_line(stored.status());
      it = seen.emplace(key, std::set<std::string>()).first;
      for (const TuningRecord& r : *stored) it->second.insert(CanonicalTrace(r.trace_json));
    }
    if (!it->second.insert(CanonicalTrace(record.trace_json)).second) {
      ++stats.duplicates;
      continue;
    }
    absl::StatusOr<int64_t> id = db->CommitRecord(record);
    if (!id.ok()) return in_line(id.status());
    ++stats.imported;
  }
  return stats;
}

}  // namespace tessera
