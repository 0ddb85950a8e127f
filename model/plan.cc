#include "model/plan.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace tessera {
namespace {

const char* KindName(StorageKind k) {
  switch (k) {
    case StorageKind::kInput:
      return "input";
    case StorageKind::kOutput:
      return "output";
    case StorageKind::kConstant:
      return "constant";
    case StorageKind::kIntermediate:
      return "intermediate";
  }
  return "?";
}

nlohmann::json ValueToJson(const PlanValue& v) {
  return {{"storage", v.storage}, {"dtype", v.dtype.ToString()}, {"shape", v.shape}};
}

absl::StatusOr<PlanValue> ValueFromJson(const nlohmann::json& j, size_t storages) {
  PlanValue v;
  if (!j.is_object() || !j.contains("storage") || !j.contains("dtype") || !j.contains("shape")) {
    return absl::InvalidArgumentError("plan: a value lacks storage, dtype or shape");
  }
  v.storage = j["storage"].get<int>();
  if (v.storage < 0 || static_cast<size_t>(v.storage) >= storages) {
    return absl::InvalidArgumentError(absl::StrCat("plan: storage ", v.storage, " out of range"));
  }
  TESSERA_ASSIGN_OR_RETURN(v.dtype, DataType::Parse(j["dtype"].get<std::string>()));
  v.shape = j["shape"].get<std::vector<int64_t>>();
  return v;
}

}  // namespace

nlohmann::json PlanToJson(const ModelPlan& plan) {
  nlohmann::json j;
  j["arena_bytes"] = plan.arena_bytes;
  j["unshared_bytes"] = plan.unshared_bytes;
  j["weights_bytes"] = plan.weights_bytes;
  for (const PlanStorage& s : plan.storages) {
    j["storages"].push_back(
        {{"kind", KindName(s.kind)}, {"name", s.name}, {"bytes", s.bytes}, {"offset", s.offset}});
  }
  for (const auto& [name, v] : plan.inputs) {
    nlohmann::json e = ValueToJson(v);
    e["name"] = name;
    j["inputs"].push_back(e);
  }
  for (const auto& [name, v] : plan.outputs) {
    nlohmann::json e = ValueToJson(v);
    e["name"] = name;
    j["outputs"].push_back(e);
  }
  for (const PlanCall& c : plan.calls) {
    nlohmann::json args = nlohmann::json::array();
    for (const PlanValue& v : c.args) args.push_back(ValueToJson(v));
    j["calls"].push_back({{"function", c.function}, {"task", c.task}, {"args", args}});
  }
  return j;
}

absl::StatusOr<ModelPlan> PlanFromJson(const nlohmann::json& j) {
  try {
    ModelPlan plan;
    for (const char* key :
         {"storages", "inputs", "outputs", "calls", "arena_bytes", "weights_bytes"}) {
      if (!j.contains(key)) return absl::InvalidArgumentError(absl::StrCat("plan: no ", key));
    }
    plan.arena_bytes = j["arena_bytes"].get<int64_t>();
    plan.weights_bytes = j["weights_bytes"].get<int64_t>();
    plan.unshared_bytes = j.value("unshared_bytes", int64_t{0});
    for (const nlohmann::json& s : j["storages"]) {
      PlanStorage st;
      const std::string kind = s.at("kind").get<std::string>();
      if (kind == "input")
        st.kind = StorageKind::kInput;
      else if (kind == "output")
        st.kind = StorageKind::kOutput;
      else if (kind == "constant")
        st.kind = StorageKind::kConstant;
      else if (kind == "intermediate")
        st.kind = StorageKind::kIntermediate;
      else
        return absl::InvalidArgumentError(absl::StrCat("plan: storage kind ", kind));
      st.name = s.at("name").get<std::string>();
      st.bytes = s.at("bytes").get<int64_t>();
      st.offset = s.at("offset").get<int64_t>();
      plan.storages.push_back(st);
    }
    const size_t n = plan.storages.size();
    for (const nlohmann::json& e : j["inputs"]) {
      TESSERA_ASSIGN_OR_RETURN(PlanValue v, ValueFromJson(e, n));
      plan.inputs.push_back({e.at("name").get<std::string>(), v});
    }
    for (const nlohmann::json& e : j["outputs"]) {
      TESSERA_ASSIGN_OR_RETURN(PlanValue v, ValueFromJson(e, n));
      plan.outputs.push_back({e.at("name").get<std::string>(), v});
    }
    for (const nlohmann::json& c : j["calls"]) {
      PlanCall call;
      call.function = c.at("function").get<std::string>();
      call.task = c.at("task").get<int>();
      for (const nlohmann::json& a : c.at("args")) {
        TESSERA_ASSIGN_OR_RETURN(PlanValue v, ValueFromJson(a, n));
        call.args.push_back(v);
      }
      plan.calls.push_back(std::move(call));
    }
    return plan;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("plan: ", e.what()));
  }
}

absl::StatusOr<PlanMemory> PlanMemory::Create(const ModelPlan& plan, const std::string& weights) {
  if (static_cast<int64_t>(weights.size()) != plan.weights_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights: ", weights.size(), " bytes, the plan expects ", plan.weights_bytes));
  }
  PlanMemory m;
  m.plan_ = &plan;
  m.arena_ = NDArray::Empty(DataType::UInt8(), {std::max<int64_t>(plan.arena_bytes, 1)});
  for (const PlanStorage& s : plan.storages) {
    if (s.kind == StorageKind::kIntermediate) {
      m.buffers_.emplace_back();
      continue;
    }
    NDArray b = NDArray::Empty(DataType::UInt8(), {std::max<int64_t>(s.bytes, 1)});
    if (s.kind == StorageKind::kConstant) {
      if (s.offset + s.bytes > plan.weights_bytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("weights: constant ", s.name, " out of range"));
      }
      std::memcpy(b.data(), weights.data() + s.offset, static_cast<size_t>(s.bytes));
    }
    m.buffers_.push_back(std::move(b));
  }
  return m;
}

void* PlanMemory::StorageData(int storage) {
  const PlanStorage& s = plan_->storages[storage];
  if (s.kind == StorageKind::kIntermediate) {
    return static_cast<char*>(arena_.data()) + s.offset;
  }
  return buffers_[storage].data();
}

absl::Status PlanMemory::SetInput(int index, const NDArray& value) {
  const auto& [name, v] = plan_->inputs[index];
  int64_t n = 1;
  for (int64_t d : v.shape) n *= d;
  if (value.dtype() != v.dtype || value.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input ", name, ": expects ", v.dtype.ToString(), " [", absl::StrJoin(v.shape, ", "),
        "], got ", value.dtype().ToString(), " ", value.ShapeString()));
  }
  std::memcpy(StorageData(v.storage), value.data(), static_cast<size_t>(value.nbytes()));
  return absl::OkStatus();
}

std::vector<void*> PlanMemory::Args(int call) {
  std::vector<void*> args;
  for (const PlanValue& v : plan_->calls[call].args) args.push_back(StorageData(v.storage));
  return args;
}

const void* PlanMemory::OutputData(int index) const {
  return const_cast<PlanMemory*>(this)->StorageData(plan_->outputs[index].second.storage);
}

NDArray PlanMemory::Output(int index) const {
  const PlanValue& v = plan_->outputs[index].second;
  NDArray out = NDArray::Empty(v.dtype, v.shape);
  std::memcpy(out.data(), OutputData(index), static_cast<size_t>(out.nbytes()));
  return out;
}

absl::Status ExecutePlan(const ModelPlan& plan, PlanMemory* memory, const KernelCaller& kernel) {
  for (size_t c = 0; c < plan.calls.size(); ++c) {
    TESSERA_RETURN_IF_ERROR(kernel(static_cast<int>(c), memory->Args(static_cast<int>(c))));
  }
  return absl::OkStatus();
}

}  // namespace tessera
