#include "frontend/model_plan.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "ir/interpreter.h"

namespace tessera {
namespace {

constexpr int64_t kAlign = 64;

int64_t AlignUp(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

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

}  // namespace

ModelPlan PlanModel(const Graph& graph, const FusedGraph& fused,
                    const std::vector<ExtractedTask>& tasks) {
  ModelPlan plan;
  std::map<int, int> storage_of;  // root value -> storage
  std::vector<int> first_use, last_use;
  auto storage = [&](int value, int call) {
    const int root = graph.Root(value);
    auto it = storage_of.find(root);
    if (it == storage_of.end()) {
      const GraphValue& v = graph.values[root];
      PlanStorage s;
      s.name = v.name;
      s.bytes = v.num_elements() * v.dtype.bytes();
      s.kind = v.is_input        ? StorageKind::kInput
               : v.is_constant() ? StorageKind::kConstant
                                 : StorageKind::kIntermediate;
      for (int out : graph.outputs) {
        if (graph.Root(out) == root && s.kind == StorageKind::kIntermediate) {
          s.kind = StorageKind::kOutput;
        }
      }
      plan.storages.push_back(s);
      first_use.push_back(call);
      last_use.push_back(call);
      it = storage_of.emplace(root, static_cast<int>(plan.storages.size()) - 1).first;
    }
    last_use[it->second] = std::max(last_use[it->second], call);
    return it->second;
  };
  auto plan_value = [&](int value, int call) {
    const GraphValue& v = graph.values[value];
    PlanValue p;
    p.storage = storage(value, call);
    p.dtype = v.dtype;
    p.shape = v.shape.empty() ? std::vector<int64_t>{1} : v.shape;
    return p;
  };
  for (int in : graph.inputs) plan.inputs.push_back({graph.values[in].name, plan_value(in, 0)});
  std::vector<int> task_of(fused.functions.size(), -1);
  for (size_t t = 0; t < tasks.size(); ++t) {
    for (int f : tasks[t].functions) task_of[f] = static_cast<int>(t);
  }
  for (size_t c = 0; c < fused.functions.size(); ++c) {
    const FusedFunction& f = fused.functions[c];
    PlanCall call;
    call.function = f.name;
    call.task = task_of[c];
    for (int a : f.args) call.args.push_back(plan_value(a, static_cast<int>(c)));
    plan.calls.push_back(std::move(call));
  }
  const int end = static_cast<int>(fused.functions.size());
  for (int out : graph.outputs) {
    plan.outputs.push_back({graph.values[out].name, plan_value(out, end)});
  }
  // Constants: back to back in the weights blob. Intermediates: first fit in the arena among
  // the storages whose lifetimes overlap.
  std::vector<int> placed;
  for (size_t s = 0; s < plan.storages.size(); ++s) {
    PlanStorage& st = plan.storages[s];
    if (st.kind == StorageKind::kConstant) {
      st.offset = plan.weights_bytes;
      plan.weights_bytes += AlignUp(st.bytes);
      continue;
    }
    if (st.kind != StorageKind::kIntermediate) continue;
    plan.unshared_bytes += AlignUp(st.bytes);
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (int p : placed) {
      if (first_use[p] <= last_use[s] && first_use[s] <= last_use[p]) {
        busy.push_back(
            {plan.storages[p].offset, plan.storages[p].offset + AlignUp(plan.storages[p].bytes)});
      }
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + AlignUp(st.bytes) <= lo) break;
      offset = std::max(offset, hi);
    }
    st.offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + AlignUp(st.bytes));
    placed.push_back(static_cast<int>(s));
  }
  return plan;
}

std::string WeightsBlob(const Graph& graph, const ModelPlan& plan) {
  std::string blob(static_cast<size_t>(plan.weights_bytes), '\0');
  std::map<std::string, const GraphValue*> by_name;
  for (const GraphValue& v : graph.values) {
    if (v.is_constant()) by_name[v.name] = &v;
  }
  for (const PlanStorage& s : plan.storages) {
    if (s.kind != StorageKind::kConstant) continue;
    const GraphValue* v = by_name.at(s.name);
    std::memcpy(&blob[static_cast<size_t>(s.offset)], v->constant.data(),
                static_cast<size_t>(s.bytes));
  }
  return blob;
}

namespace {

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

void* PlanMemory::Address(int storage) {
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
  std::memcpy(Address(v.storage), value.data(), static_cast<size_t>(value.nbytes()));
  return absl::OkStatus();
}

std::vector<void*> PlanMemory::Args(int call) {
  std::vector<void*> args;
  for (const PlanValue& v : plan_->calls[call].args) args.push_back(Address(v.storage));
  return args;
}

NDArray PlanMemory::Output(int index) const {
  const PlanValue& v = plan_->outputs[index].second;
  NDArray out = NDArray::Empty(v.dtype, v.shape);
  const void* src = const_cast<PlanMemory*>(this)->Address(v.storage);
  std::memcpy(out.data(), src, static_cast<size_t>(out.nbytes()));
  return out;
}

absl::Status ExecutePlan(const ModelPlan& plan, PlanMemory* memory, const KernelCaller& kernel) {
  for (size_t c = 0; c < plan.calls.size(); ++c) {
    TESSERA_RETURN_IF_ERROR(kernel(static_cast<int>(c), memory->Args(static_cast<int>(c))));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NDArray>> InterpretModel(const Graph& graph, const FusedGraph& fused,
                                                    const std::vector<NDArray>& inputs) {
  std::vector<ExtractedTask> tasks = ExtractTasks(fused);
  ModelPlan plan = PlanModel(graph, fused, tasks);
  TESSERA_ASSIGN_OR_RETURN(PlanMemory memory, PlanMemory::Create(plan, WeightsBlob(graph, plan)));
  if (inputs.size() != plan.inputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model has ", plan.inputs.size(), " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(memory.SetInput(static_cast<int>(i), inputs[i]));
  }
  TESSERA_RETURN_IF_ERROR(ExecutePlan(plan, &memory, [&](int call, const std::vector<void*>& args) {
    const PlanCall& c = plan.calls[call];
    std::vector<NDArray> views;
    for (size_t a = 0; a < args.size(); ++a) {
      views.push_back(NDArray::View(c.args[a].dtype, c.args[a].shape, args[a]));
    }
    std::vector<NDArray*> ptrs;
    for (NDArray& v : views) ptrs.push_back(&v);
    absl::Status s = Interpret(fused.functions[call].func, ptrs);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(c.function, ": ", s.message()));
    return absl::OkStatus();
  }));
  std::vector<NDArray> outputs;
  for (size_t o = 0; o < plan.outputs.size(); ++o)
    outputs.push_back(memory.Output(static_cast<int>(o)));
  return outputs;
}

}  // namespace tessera
