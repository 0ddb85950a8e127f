#include "model/compiled_model.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

nlohmann::json ScheduleToJson(const KernelSchedule& s) {
  nlohmann::json j = {{"kind", s.kind}};
  if (s.kind == "tuned") {
    j["record"] = s.record;
    j["record_seconds"] = s.record_seconds;
  }
  if (!s.rule.empty()) j["rule"] = s.rule;
  if (!s.note.empty()) j["note"] = s.note;
  return j;
}

nlohmann::json KernelToJson(const CompiledKernel& k) {
  nlohmann::json j = {{"task", k.task},
                      {"weight", k.weight},
                      {"flops", k.flops},
                      {"structural_hash", k.structural_hash},
                      {"schedule", ScheduleToJson(k.schedule)},
                      {"artifact", k.artifact},
                      {"symbol", k.symbol}};
  if (k.prepack.has_value()) {
    const KernelPrepack& p = *k.prepack;
    j["prepack"] = {{"symbol", p.symbol},
                    {"args", p.args},
                    {"kernel_symbol", p.kernel_symbol},
                    {"kernel_args", p.kernel_args},
                    {"packed_bytes", p.packed_bytes}};
  }
  return j;
}

// Throws nlohmann::json::exception on a missing or mistyped field (caught by the reader).
CompiledKernel KernelFromJson(const nlohmann::json& j) {
  CompiledKernel k;
  k.task = j.at("task").get<std::string>();
  k.weight = j.value("weight", 1);
  k.flops = j.value("flops", 0.0);
  k.structural_hash = j.value("structural_hash", std::string());
  const nlohmann::json how = j.value("schedule", nlohmann::json::object());
  k.schedule.kind = how.value("kind", std::string("unscheduled"));
  k.schedule.record = how.value("record", int64_t{-1});
  k.schedule.record_seconds = how.value("record_seconds", 0.0);
  k.schedule.rule = how.value("rule", std::string());
  k.schedule.note = how.value("note", std::string());
  k.artifact = j.at("artifact").get<std::string>();
  k.symbol = j.at("symbol").get<std::string>();
  if (j.contains("prepack")) {
    const nlohmann::json& p = j["prepack"];
    k.prepack = KernelPrepack{
        p.at("symbol").get<std::string>(), p.at("args").get<std::vector<int>>(),
        p.at("kernel_symbol").get<std::string>(), p.at("kernel_args").get<std::vector<int>>(),
        p.at("packed_bytes").get<std::vector<int64_t>>()};
  }
  return k;
}

}  // namespace

std::string DescribeSchedule(const KernelSchedule& s) {
  if (s.kind == "tuned") {
    return absl::StrCat("tuned record ", s.record, s.note.empty() ? "" : " (" + s.note + ")");
  }
  if (s.kind == "default") {
    return absl::StrCat("default rule ", s.rule, s.note.empty() ? "" : " (" + s.note + ")");
  }
  if (!s.note.empty()) return absl::StrCat(s.kind, " (the ", s.note, ")");
  return s.kind;
}

absl::Status WriteCompiledModel(const std::string& dir, const CompiledModel& model) {
  nlohmann::json out;
  out["format"] = kCompiledModelFormat;
  out["model"] = model.model;
  out["target"] = model.target;
  out["input_shapes"] = model.input_shapes;
  out["kernels"] = nlohmann::json::array();
  for (const CompiledKernel& k : model.kernels) out["kernels"].push_back(KernelToJson(k));
  out["plan"] = PlanToJson(model.plan);
  const std::string path = dir + "/plan.json";
  std::ofstream file(path, std::ios::binary);
  file << out.dump(1);
  if (!file) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<CompiledModel> ReadCompiledModel(const std::string& dir) {
  const std::string path = dir + "/plan.json";
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << file.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("plan") || !doc.contains("kernels")) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a plan written by tessera compile"));
  }
  const std::string format = doc.value("format", std::string());
  if (format != kCompiledModelFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": format '", format, "', this runtime reads ", kCompiledModelFormat));
  }
  CompiledModel model;
  absl::StatusOr<ModelPlan> plan = PlanFromJson(doc["plan"]);
  if (!plan.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", plan.status().message()));
  }
  model.plan = *std::move(plan);
  try {
    model.model = doc.value("model", model.model);
    model.target = doc.value("target", std::string());
    model.input_shapes = doc.value("input_shapes", model.input_shapes);
    for (const nlohmann::json& k : doc.at("kernels")) model.kernels.push_back(KernelFromJson(k));
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
  for (const PlanCall& c : model.plan.calls) {
    if (c.task < 0 || static_cast<size_t>(c.task) >= model.kernels.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": call ", c.function, " has no kernel"));
    }
  }
  return model;
}

}  // namespace tessera
