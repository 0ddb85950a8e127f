// The shared JSON encoding of tuning-record fields (record_json.h).
#include "database/record_json.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/dtype.h"
#include "ir/serialize_json.h"
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
  if (record.error != MeasureError::kNone && record.error_msg.empty()) {
    return FieldError(
        "error", absl::StrCat("a ", MeasureErrorName(record.error), " record needs a message"));
  }
  return absl::OkStatus();
}

json RecordToJsonLine(const Workload& workload, const TuningRecord& record) {
  return json{{"workload", {{"hash", workload.hash}, {"func", ToJson(workload.func)}}},
              {"target", record.target},
              {"trace", json::parse(record.trace_json)},
              {"run_secs", RunSecsToJson(record.run_secs)},
              {"error_kind", MeasureErrorName(record.error)},
              {"error", record.error_msg},
              {"args", ArgInfosToJson(record.args)},
              {"timestamp", record.timestamp},
              {"provenance", ProvenanceToJson(record.provenance)},
              {"verified", record.verified},
              {"job_id", record.job_id},
              {"stage_secs", StageSecondsToJson(record.stage_secs)}};
}

absl::StatusOr<JsonLineRecord> RecordFromJsonLine(const json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("expected a JSON object");
  JsonLineRecord out;
  TESSERA_ASSIGN_OR_RETURN(const json* workload, RequireMember(j, "workload"));
  if (!workload->is_object()) return FieldError("workload", "expected an object");
  const json* func = FindMember(*workload, "func");
  if (func == nullptr) return FieldError("workload.func", "missing");
  absl::StatusOr<PrimFunc> f = PrimFuncFromJson(*func);
  if (!f.ok()) return InField("workload.func", f.status());
  out.func = *std::move(f);

  TuningRecord& r = out.record;
  TESSERA_ASSIGN_OR_RETURN(r.target, StringField(j, "target", /*required=*/true));
  TESSERA_ASSIGN_OR_RETURN(const json* trace, RequireMember(j, "trace"));
  r.trace_json = trace->dump();
  TESSERA_ASSIGN_OR_RETURN(const json* run_secs, RequireMember(j, "run_secs"));
  TESSERA_ASSIGN_OR_RETURN(r.run_secs, RunSecsFromJson(*run_secs));
  TESSERA_ASSIGN_OR_RETURN(r.error_msg, StringField(j, "error", /*required=*/false));
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
  if (const json* stages = FindMember(j, "stage_secs")) {
    TESSERA_ASSIGN_OR_RETURN(r.stage_secs, StageSecondsFromJson(*stages));
  }
  TESSERA_RETURN_IF_ERROR(ValidateRecord(r));
  return out;
}

}  // namespace tessera
