// The JSON encoding of tuning-record fields, shared by the SQLite rows (which hold run_secs,
// args and provenance as JSON text) and the JSON-lines files (one object per record with its
// workload inlined). One encoder for both, so the two formats cannot drift apart; the formats
// are documented in docs/formats.md ("Tuning database").
//
// Decoders never throw: a malformed value gives kInvalidArgument naming the field, e.g.
// "args[1][2]: expected an array of integers".
#ifndef TESSERA_DATABASE_RECORD_JSON_H_
#define TESSERA_DATABASE_RECORD_JSON_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "database/database.h"
#include "ir/analysis.h"

namespace tessera {

// [0.00012, 0.00011]: seconds per repeat.
nlohmann::json RunSecsToJson(const std::vector<double>& run_secs);
absl::StatusOr<std::vector<double>> RunSecsFromJson(const nlohmann::json& j);

// [["TENSOR", "float32", [128, 128]], ...], one entry per parameter (MetaSchedule's layout).
nlohmann::json ArgInfosToJson(const std::vector<ArgInfo>& args);
absl::StatusOr<std::vector<ArgInfo>> ArgInfosFromJson(const nlohmann::json& j);

// {"tessera_version": ..., "compiler": ..., "device": ..., "driver": ...}; missing keys read
// as empty strings.
nlohmann::json ProvenanceToJson(const Provenance& provenance);
absl::StatusOr<Provenance> ProvenanceFromJson(const nlohmann::json& j);

// {"build": 0.41, "run": 0.02, "verify": 0, "search": 0.05}: wall seconds per stage; missing
// keys read as 0 (files written before stage times were stored have no "stage_secs" at all).
nlohmann::json StageSecondsToJson(const StageSeconds& stages);
absl::StatusOr<StageSeconds> StageSecondsFromJson(const nlohmann::json& j);

// The checks every Database::CommitRecord makes before storing: a non-empty target, a trace
// that Trace::FromJson accepts, and finite, non-negative run and stage times. kInvalidArgument
// names the field.
absl::Status ValidateRecord(const TuningRecord& record);

// The error kind of a record written before kinds were stored (schema 1, JSON lines without
// "error_kind"): from its message's "build:" / "run: timed out" / "run:" prefix.
MeasureError ErrorKindOfLegacyMessage(const std::string& error_msg);

// One JSON-lines object: the fields of the service's `Record` (proto/tessera.proto) under the
// same names — "id", "workload_hash", "target", "trace_json" (the trace's JSON text, as a
// string), "run_seconds", "error_kind", "error_msg", "verified", "timestamp", "provenance",
// "job_id", "mean_seconds", "stage_seconds" and, for a re-measurement only,
// "retimes_record_id" — plus what Record leaves out: "workload_func" (the function's IR JSON
// document) and "args". docs/formats.md, "JSON lines".
nlohmann::json RecordToJsonLine(const Workload& workload, const TuningRecord& record);

// The inverse of RecordToJsonLine, which also reads the lines of files written before the
// names followed Record ("workload": {"hash", "func"}, "trace" as JSON, "run_secs", "error",
// "stage_secs"): the workload's function (rebuilt from its IR JSON; the stored hash is
// informational and not trusted) and the record. The record's id is the line's "id" (-1
// without one) and its `retimes` the line's "retimes_record_id" (-1 without one): ids of the
// database that wrote the line, which an import maps to its own. workload_id is left unset.
// The record passes ValidateRecord.
struct JsonLineRecord {
  PrimFunc func;
  TuningRecord record;
};
absl::StatusOr<JsonLineRecord> RecordFromJsonLine(const nlohmann::json& j);

// What an import checks of a line beyond RecordFromJsonLine, as strictly as SubmitJob checks a
// workload: the function is well-formed and its accesses stay inside its buffers
// (ir/verify.h), the trace replays on it, args (when given) are the function's parameters, the
// target parses, the timestamp lies in [2020-01-01, `now` + 1 day], provenance strings and the
// job id are at most 1024 bytes of printable UTF-8 (what RegisterWorker accepts of a worker),
// the message at most 128 KiB of UTF-8, and a re-measurement's link names an earlier record.
// kInvalidArgument names the field: "timestamp: 170000000 (1975-05-22) is before 2020-01-01".
absl::Status CheckImportedRecord(const JsonLineRecord& entry, double now);

// Imports parsed lines into `db`: checks every one (CheckImportedRecord) before committing any,
// then commits them in order, skipping duplicates (the same measurement as a stored record or
// an earlier line: workload, target, trace compared as JSON, timestamp and run times) and
// mapping each "retimes_record_id" to the id, here, of the record it names by its "id" in the
// import (or of the stored record that line duplicated); a link to a record found nowhere
// becomes 0 (ImportStats::links_dropped). `where(i)` names line i in errors ("file.jsonl:3",
// "line 3"); `check` false skips CheckImportedRecord (records read back from a server).
struct NumberedLine {
  int64_t number;  // 1-based
  JsonLineRecord entry;
};
absl::StatusOr<ImportStats> ImportRecordLines(Database* db, std::vector<NumberedLine> lines,
                                              const std::function<std::string(int64_t)>& where,
                                              bool check = true);

}  // namespace tessera

#endif  // TESSERA_DATABASE_RECORD_JSON_H_
