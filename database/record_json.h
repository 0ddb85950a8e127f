// The JSON encoding of tuning-record fields, shared by the SQLite rows (which hold run_secs,
// args and provenance as JSON text) and the JSON-lines files (one object per record with its
// workload inlined). One encoder for both, so the two formats cannot drift apart; the formats
// are documented in docs/formats.md ("Tuning database").
//
// Decoders never throw: a malformed value gives kInvalidArgument naming the field, e.g.
// "args[1][2]: expected an array of integers".
#ifndef TESSERA_DATABASE_RECORD_JSON_H_
#define TESSERA_DATABASE_RECORD_JSON_H_

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

// One JSON-lines object: {"workload": {"hash", "func"}, "target", "trace", "run_secs",
// "error", "args", "timestamp", "provenance", "verified", "job_id", "stage_secs"}. The trace is
// embedded as JSON (not as a string). Requires record.trace_json to be valid JSON (ValidateRecord).
nlohmann::json RecordToJsonLine(const Workload& workload, const TuningRecord& record);

// The inverse of RecordToJsonLine: the workload's function (rebuilt from its IR JSON; the
// stored hash is informational and not trusted) and the record, whose id and workload_id are
// left unset. The record passes ValidateRecord.
struct JsonLineRecord {
  PrimFunc func;
  TuningRecord record;
};
absl::StatusOr<JsonLineRecord> RecordFromJsonLine(const nlohmann::json& j);

}  // namespace tessera

#endif  // TESSERA_DATABASE_RECORD_JSON_H_
