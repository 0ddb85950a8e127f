// The shared JSON encoding of tuning-record fields (record_json.h).
#include "database/record_json.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "base/utf8.h"
#include "ir/dtype.h"
#include "ir/serialize_json.h"
#include "ir/target.h"
#include "ir/verify.h"
#include "schedule/schedule.h"
#include "schedule/trace.h"

namespace tessera {
namespace {

using json = nlohmann::json;

absl::Status FieldError(const std::string& field, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

// `status` with "field: " prepended to its message (same code).
absl::Status InField(const std::string& field, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(field, ": ", status.message()));
}

// The member `key` of object `j`, or nullptr if absent.
const json* FindMember(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

absl::StatusOr<const json*> RequireMember(const json& j, const char* key) {
  const json* member = FindMember(j, key);
  if (member == nullptr) return FieldError(key, "missing");
  return member;
}

absl::StatusOr<std::string> StringField(const json& j, const char* key, bool required) {
  const json* member = FindMember(j, key);
  if (member == nullptr) {
    if (required) return FieldError(key, "missing");
    return std::string();
  }
  if (!member->is_string()) return FieldError(key, "expected a string");
  return member->get<std::string>();
}

}  // namespace

json RunSecsToJson(const std::vector<double>& run_secs) { return json(run_secs); }

absl::StatusOr<std::vector<double>> RunSecsFromJson(const json& j) {
  if (!j.is_array()) return FieldError("run_secs", "expected an array of numbers");
  std::vector<double> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number()) {
      return FieldError(absl::StrCat("run_secs[", i, "]"), "expected a number");
    }
    out.push_back(j[i].get<double>());
  }
  return out;
}

json ArgInfosToJson(const std::vector<ArgInfo>& args) {
  json out = json::array();
  for (const ArgInfo& arg : args) {
    out.push_back(json::array({"TENSOR", arg.dtype.ToString(), arg.shape}));
  }
  return out;
}

absl::StatusOr<std::vector<ArgInfo>> ArgInfosFromJson(const json& j) {
  if (!j.is_array()) return FieldError("args", "expected an array");
  std::vector<ArgInfo> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = absl::StrCat("args[", i, "]");
    const json& entry = j[i];
    if (!entry.is_array() || entry.size() != 3 || entry[0] != "TENSOR") {
      return FieldError(where, "expected [\"TENSOR\", dtype, shape]");
    }
    if (!entry[1].is_string()) return FieldError(absl::StrCat(where, "[1]"), "expected a dtype");
    absl::StatusOr<DataType> dtype = DataType::Parse(entry[1].get<std::string>());
    if (!dtype.ok()) return InField(absl::StrCat(where, "[1]"), dtype.status());
    ArgInfo arg{*dtype, {}};
    if (!entry[2].is_array()) {
      return FieldError(absl::StrCat(where, "[2]"), "expected an array of integers");
    }
    for (const json& dim : entry[2]) {
      if (!dim.is_number_integer()) {
        return FieldError(absl::StrCat(where, "[2]"), "expected an array of integers");
      }
      arg.shape.push_back(dim.get<int64_t>());
    }
    out.push_back(std::move(arg));
  }
  return out;
}

json ProvenanceToJson(const Provenance& provenance) {
  return json{{"tessera_version", provenance.tessera_version},
              {"compiler", provenance.compiler},
              {"device", provenance.device},
              {"driver", provenance.driver},
              {"worker_id", provenance.worker_id}};
}

absl::StatusOr<Provenance> ProvenanceFromJson(const json& j) {
  if (!j.is_object()) return FieldError("provenance", "expected an object");
  Provenance p;
  std::pair<const char*, std::string*> fields[] = {{"tessera_version", &p.tessera_version},
                                                   {"compiler", &p.compiler},
                                                   {"device", &p.device},
                                                   {"driver", &p.driver},
                                                   {"worker_id", &p.worker_id}};
  for (auto& [key, value] : fields) {
    absl::StatusOr<std::string> s = StringField(j, key, /*required=*/false);
    if (!s.ok()) return InField("provenance", s.status());
    *value = *std::move(s);
  }
  return p;
}

MeasureError ErrorKindOfLegacyMessage(const std::string& error_msg) {
  if (error_msg.empty()) return MeasureError::kNone;
  if (error_msg.rfind("build:", 0) == 0) return MeasureError::kBuild;
  if (error_msg.rfind("run: timed out", 0) == 0) return MeasureError::kTimeout;
  return MeasureError::kRun;
}

json StageSecondsToJson(const StageSeconds& stages) {
  return json{{"build", stages.build},
              {"run", stages.run},
              {"verify", stages.verify},
              {"search", stages.search}};
}

absl::StatusOr<StageSeconds> StageSecondsFromJson(const json& j) {
  if (!j.is_object()) return FieldError("stage_secs", "expected an object");
  StageSeconds out;
  for (auto [key, field] : {std::pair<const char*, double*>{"build", &out.build},
                            {"run", &out.run},
                            {"verify", &out.verify},
                            {"search", &out.search}}) {
    const json* member = FindMember(j, key);
    if (member == nullptr) continue;
    if (!member->is_number()) {
      return FieldError(absl::StrCat("stage_secs.", key), "expected a number");
    }
    *field = member->get<double>();
  }
  return out;
}

absl::Status ValidateRecord(const TuningRecord& record) {
  if (record.target.empty()) return FieldError("target", "empty");
  absl::StatusOr<Trace> trace = Trace::FromJson(record.trace_json);
  if (!trace.ok()) return InField("trace", trace.status());
  for (size_t i = 0; i < record.run_secs.size(); ++i) {
    double secs = record.run_secs[i];
    if (!std::isfinite(secs) || secs < 0) {
      return FieldError(absl::StrCat("run_secs[", i, "]"),
                        absl::StrCat("expected a finite time >= 0, got ", secs));
    }
  }
  if (!std::isfinite(record.timestamp)) return FieldError("timestamp", "not finite");
  const StageSeconds& stages = record.stage_secs;
  for (auto [name, secs] : {std::pair<const char*, double>{"build", stages.build},
                            {"run", stages.run},
                            {"verify", stages.verify},
                            {"search", stages.search}}) {
    if (!std::isfinite(secs) || secs < 0) {
      return FieldError(absl::StrCat("stage_secs.", name),
                        absl::StrCat("expected a finite time >= 0, got ", secs));
    }
  }
  if (record.retimes < -1) {
    return FieldError("retimes",
                      absl::StrCat("expected a record id, 0 or -1, got ", record.retimes));
  }
  if (record.error != MeasureError::kNone && record.error_msg.empty()) {
    return FieldError(
        "error", absl::StrCat("a ", MeasureErrorName(record.error), " record needs a message"));
  }
  return absl::OkStatus();
}

json RecordToJsonLine(const Workload& workload, const TuningRecord& record) {
  json line{{"workload_hash", workload.hash},
            {"workload_func", ToJson(workload.func)},
            {"target", record.target},
            {"trace_json", record.trace_json},
            {"run_seconds", RunSecsToJson(record.run_secs)},
            {"error_kind", MeasureErrorName(record.error)},
            {"error_msg", record.error_msg},
            {"args", ArgInfosToJson(record.args)},
            {"timestamp", record.timestamp},
            {"provenance", ProvenanceToJson(record.provenance)},
            {"verified", record.verified},
            {"job_id", record.job_id},
            {"mean_seconds", record.ok() ? record.mean_secs() : 0.0},
            {"stage_seconds", StageSecondsToJson(record.stage_secs)}};
  if (record.id >= 1) line["id"] = record.id;  // every stored record has one
  if (record.is_retiming()) line["retimes_record_id"] = record.retimes;
  return line;
}

namespace {

// The names a line's fields had before they followed the service's Record (files written
// before then): "workload": {"hash", "func"}, "trace" as JSON, "run_secs", "error",
// "stage_secs".
struct FieldNames {
  const char* run_secs;
  const char* error;
  const char* stages;
};
constexpr FieldNames kRecordNames{"run_seconds", "error_msg", "stage_seconds"};
constexpr FieldNames kLegacyNames{"run_secs", "error", "stage_secs"};

absl::StatusOr<int64_t> IdField(const json& j, const char* key, int64_t min) {
  const json* member = FindMember(j, key);
  if (member == nullptr) return int64_t{-1};
  if (!member->is_number_integer() || member->get<int64_t>() < min) {
    return FieldError(key, absl::StrCat("expected an integer >= ", min));
  }
  return member->get<int64_t>();
}

// "stage_secs.build: ..." -> "stage_seconds.build: ..." (and run_secs, error, trace) for a line
// that uses Record's names: errors name the fields as the line does.
absl::Status Renamed(const absl::Status& status, const FieldNames& names) {
  if (status.ok() || names.stages == kLegacyNames.stages) return status;
  std::string message(status.message());
  for (auto [from, to] : {std::pair<std::string, std::string>{"stage_secs", "stage_seconds"},
                          {"run_secs", "run_seconds"},
                          {"error", "error_msg"},
                          {"trace", "trace_json"}}) {
    if (message.rfind(from, 0) == 0 && message.size() > from.size() &&
        std::string(":[.").find(message[from.size()]) != std::string::npos) {
      message = absl::StrCat(to, message.substr(from.size()));
      break;
    }
  }
  return absl::Status(status.code(), message);
}

}  // namespace

absl::StatusOr<JsonLineRecord> RecordFromJsonLine(const json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("expected a JSON object");
  JsonLineRecord out;
  TuningRecord& r = out.record;
  const bool legacy = j.contains("workload");
  const FieldNames names = legacy ? kLegacyNames : kRecordNames;
  if (legacy) {
    const json& workload = j["workload"];
    if (!workload.is_object()) return FieldError("workload", "expected an object");
    const json* func = FindMember(workload, "func");
    if (func == nullptr) return FieldError("workload.func", "missing");
    absl::StatusOr<PrimFunc> f = PrimFuncFromJson(*func);
    if (!f.ok()) return InField("workload.func", f.status());
    out.func = *std::move(f);
  } else {
    TESSERA_ASSIGN_OR_RETURN(const json* func, RequireMember(j, "workload_func"));
    absl::StatusOr<PrimFunc> f = PrimFuncFromJson(*func);
    if (!f.ok()) return InField("workload_func", f.status());
    out.func = *std::move(f);
    TESSERA_ASSIGN_OR_RETURN(std::string hash, StringField(j, "workload_hash", false));
    (void)hash;  // informational: the importer finds the workload by structural equality
  }

  TESSERA_ASSIGN_OR_RETURN(r.id, IdField(j, "id", 1));
  TESSERA_ASSIGN_OR_RETURN(r.retimes, IdField(j, "retimes_record_id", 0));
  TESSERA_ASSIGN_OR_RETURN(r.target, StringField(j, "target", /*required=*/true));
  if (legacy) {
    TESSERA_ASSIGN_OR_RETURN(const json* trace, RequireMember(j, "trace"));
    r.trace_json = trace->dump();
  } else {
    TESSERA_ASSIGN_OR_RETURN(r.trace_json, StringField(j, "trace_json", /*required=*/true));
  }
  TESSERA_ASSIGN_OR_RETURN(const json* run_secs, RequireMember(j, names.run_secs));
  absl::StatusOr<std::vector<double>> secs = RunSecsFromJson(*run_secs);
  TESSERA_RETURN_IF_ERROR(Renamed(secs.status(), names));
  r.run_secs = *std::move(secs);
  TESSERA_ASSIGN_OR_RETURN(r.error_msg, StringField(j, names.error, /*required=*/false));
  TESSERA_ASSIGN_OR_RETURN(std::string error_kind, StringField(j, "error_kind", false));
  if (error_kind.empty() && !r.error_msg.empty()) {
    r.error = ErrorKindOfLegacyMessage(r.error_msg);  // files written before error kinds
  } else {
    absl::StatusOr<MeasureError> kind = ParseMeasureError(error_kind);
    if (!kind.ok()) return InField("error_kind", kind.status());
    r.error = *kind;
  }
  TESSERA_ASSIGN_OR_RETURN(r.job_id, StringField(j, "job_id", /*required=*/false));
  if (const json* args = FindMember(j, "args")) {
    TESSERA_ASSIGN_OR_RETURN(r.args, ArgInfosFromJson(*args));
  }
  if (const json* timestamp = FindMember(j, "timestamp")) {
    if (!timestamp->is_number()) return FieldError("timestamp", "expected a number");
    r.timestamp = timestamp->get<double>();
  }
  if (const json* provenance = FindMember(j, "provenance")) {
    TESSERA_ASSIGN_OR_RETURN(r.provenance, ProvenanceFromJson(*provenance));
  }
  if (const json* verified = FindMember(j, "verified")) {
    if (!verified->is_boolean()) return FieldError("verified", "expected true or false");
    r.verified = verified->get<bool>();
  }
  if (const json* mean = FindMember(j, "mean_seconds")) {
    // Informational: the mean of run_seconds, recomputed from them.
    if (!mean->is_number()) return FieldError("mean_seconds", "expected a number");
  }
  if (const json* stages = FindMember(j, names.stages)) {
    absl::StatusOr<StageSeconds> parsed = StageSecondsFromJson(*stages);
    TESSERA_RETURN_IF_ERROR(Renamed(parsed.status(), names));
    r.stage_secs = *parsed;
  }
  TESSERA_RETURN_IF_ERROR(Renamed(ValidateRecord(r), names));
  return out;
}

namespace {

// 2020-01-01T00:00:00Z: no Tessera record is older.
constexpr double kEarliestTimestamp = 1577836800;
constexpr double kLatestAheadSeconds = 86400;
constexpr size_t kMaxProvenanceChars = 1024;
// Workers' messages are cut to 64 KiB (and "..."); local tunes keep the compiler's.
constexpr size_t kMaxErrorMessageBytes = 128 * 1024;

std::string UtcDate(double timestamp) {
  if (!std::isfinite(timestamp) || std::fabs(timestamp) > 1e12) return "far off";
  std::time_t t = static_cast<std::time_t>(timestamp);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
  return buf;
}

absl::Status CheckText(const std::string& field, const std::string& value, size_t max_bytes,
                       bool printable) {
  if (value.size() > max_bytes) {
    return FieldError(field, absl::StrCat(value.size(), " bytes, more than ", max_bytes));
  }
  if (!IsUtf8(value, printable)) {
    return FieldError(field, printable ? "not printable UTF-8 text" : "not UTF-8 text");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckImportedRecord(const JsonLineRecord& entry, double now) {
  const TuningRecord& r = entry.record;
  absl::Status well_formed = VerifyWellFormed(entry.func);
  if (well_formed.ok()) well_formed = VerifyAccessesInBounds(entry.func);
  if (!well_formed.ok()) return InField("workload_func", well_formed);
  absl::StatusOr<Target> target = Target::Parse(r.target);
  if (!target.ok()) return InField("target", target.status());
  if (!r.args.empty()) {
    const std::vector<ArgInfo> params = ArgInfosOf(entry.func);
    bool same = params.size() == r.args.size();
    for (size_t i = 0; same && i < params.size(); ++i) {
      same = params[i].dtype == r.args[i].dtype && params[i].shape == r.args[i].shape;
    }
    if (!same) {
      return FieldError("args", absl::StrCat("do not match the parameters of workload_func (",
                                             ArgInfosToJson(params).dump(), ")"));
    }
  }
  {
    absl::StatusOr<Trace> trace = Trace::FromJson(r.trace_json);
    if (!trace.ok()) return InField("trace_json", trace.status());
    Schedule sch = Schedule::Create(entry.func, /*seed=*/0);
    absl::Status replayed = trace->ApplyTo(&sch, /*remove_postproc=*/false);
    if (!replayed.ok()) {
      return FieldError("trace_json",
                        absl::StrCat("does not replay on workload_func: ", replayed.message()));
    }
  }
  if (!(r.timestamp >= kEarliestTimestamp)) {
    return FieldError("timestamp", absl::StrFormat("%.15g (%s) is before 2020-01-01", r.timestamp,
                                                   UtcDate(r.timestamp)));
  }
  if (r.timestamp > now + kLatestAheadSeconds) {
    return FieldError("timestamp",
                      absl::StrFormat("%.15g (%s) is more than a day ahead of this clock",
                                      r.timestamp, UtcDate(r.timestamp)));
  }
  const Provenance& p = r.provenance;
  for (auto [key, value] :
       {std::pair<const char*, const std::string*>{"tessera_version", &p.tessera_version},
        {"compiler", &p.compiler},
        {"device", &p.device},
        {"driver", &p.driver},
        {"worker_id", &p.worker_id}}) {
    TESSERA_RETURN_IF_ERROR(CheckText(absl::StrCat("provenance.", key), *value, kMaxProvenanceChars,
                                      /*printable=*/true));
  }
  TESSERA_RETURN_IF_ERROR(CheckText("job_id", r.job_id, kMaxProvenanceChars, /*printable=*/true));
  TESSERA_RETURN_IF_ERROR(
      CheckText("error_msg", r.error_msg, kMaxErrorMessageBytes, /*printable=*/false));
  if (r.retimes >= 0 && r.id >= 0 && r.retimes >= r.id) {
    return FieldError("retimes_record_id",
                      absl::StrCat(r.retimes, " is not an earlier record than id ", r.id));
  }
  return absl::OkStatus();
}

}  // namespace tessera
