#include "model/planner.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace tessera {
namespace {

constexpr int64_t kAlign = 64;

int64_t AlignUp(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

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

}  // namespace tessera
