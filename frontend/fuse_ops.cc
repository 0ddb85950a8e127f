#include "frontend/fuse_ops.h"

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "ir/prepack.h"

namespace tessera {
namespace {

struct Group {
  std::vector<int> nodes;
  OpPattern pattern;
};

bool CanJoin(OpPattern node, OpPattern group) {
  switch (node) {
    case OpPattern::kElementwise:
      return true;
    case OpPattern::kInjective:
    case OpPattern::kReduction:
      return group <= OpPattern::kInjective;
    case OpPattern::kAnchor:
      return false;
  }
  return false;
}

std::string Snake(const std::string& op_type) {
  std::string out;
  for (size_t i = 0; i < op_type.size(); ++i) {
    const char c = op_type[i];
    if (absl::ascii_isupper(c) && i > 0 && !absl::ascii_isupper(op_type[i - 1])) out += '_';
    out += absl::ascii_tolower(c);
  }
  return out;
}

// Builds the PrimFunc of one group: a placeholder per distinct external non-scalar input, the
// nodes' computes in order, the last node's tensor as the result.
absl::StatusOr<FusedFunction> BuildGroup(const Graph& graph, const Group& group, int index) {
  FusedFunction f;
  f.nodes = group.nodes;
  f.pattern = group.pattern;
  std::map<int, Tensor> produced;       // value id -> tensor computed in this group
  std::map<int, Operand> placeholders;  // value id -> operand (placeholder or scalar)
  std::vector<Tensor> params;
  TensorNamer namer;
  Tensor result;
  std::vector<std::string> ops;
  for (int n : group.nodes) {
    const GraphNode& node = graph.nodes[n];
    std::vector<Operand> operands;
    for (int in : node.inputs) {
      const GraphValue& v = graph.values[in];
      auto p = produced.find(in);
      if (p != produced.end()) {
        Operand op;
        op.tensor = p->second;
        op.dtype = v.dtype;
        op.shape = p->second.shape();
        operands.push_back(op);
        continue;
      }
      auto it = placeholders.find(in);
      if (it == placeholders.end()) {
        Operand op;
        op.dtype = v.dtype;
        op.shape = v.shape.empty() ? std::vector<int64_t>{1} : v.shape;
        if (graph.IsScalarConstant(in)) {
          op.scalar = v.constant.GetFlat(0);
        } else {
          op.tensor = Placeholder(op.shape, v.dtype, absl::StrCat("p", params.size()));
          params.push_back(op.tensor);
          f.args.push_back(in);
        }
        it = placeholders.emplace(in, op).first;
      }
      operands.push_back(it->second);
    }
    result = node.compute(operands, &namer);
    produced[node.output] = result;
    ops.push_back(Snake(node.op_type));
  }
  // Keep names short: at most three op names.
  if (ops.size() > 3) ops.resize(3);
  f.name = absl::StrCat("fused_", absl::StrJoin(ops, "_"), "_", index);
  params.push_back(result);
  f.args.push_back(graph.nodes[group.nodes.back()].output);
  absl::StatusOr<PrimFunc> func = CreatePrimFunc(f.name, params);
  if (!func.ok()) {
    const GraphNode& last = graph.nodes[group.nodes.back()];
    return absl::InvalidArgumentError(
        absl::StrCat("node '", last.name, "' (", last.op_type, "): ", func.status().message()));
  }
  // A model's initializers are its weights: constant between calls, so layout-free.
  std::vector<int64_t> weights;
  for (size_t i = 0; i + 1 < f.args.size(); ++i) {
    if (graph.values[f.args[i]].is_constant()) weights.push_back(static_cast<int64_t>(i));
  }
  f.func = weights.empty() ? *func : func->WithAttr(kLayoutFreeBuffers, weights);
  return f;
}

// Diamonds: a group whose result is read by several nodes that all ended up in one other group
// (GELU's x in 0.5 * x * (1 + tanh(c * (x + 0.044715 * x^3))), RoPE's q in q * cos +
// rotate(q) * sin), or by one node that joined another input's group, joins that group when
// the patterns allow it as for one node. The merged group still has one result, and as nothing
// outside it reads the producer's result, no cycle can form.
void MergeDiamonds(const Graph& graph, const std::vector<int>& uses, std::vector<Group>* groups,
                   std::vector<int>* group_of) {
  auto merge_one = [&]() {
    for (int b = 0; b < static_cast<int>(groups->size()); ++b) {
      Group& into = (*groups)[b];
      for (int n : into.nodes) {
        for (int in : graph.nodes[n].inputs) {
          const GraphValue& v = graph.values[in];
          if (v.alias_of >= 0 || v.producer < 0) continue;
          const int a = (*group_of)[v.producer];
          Group& from = (*groups)[a];
          if (a == b || from.nodes.back() != v.producer) continue;
          if (!CanJoin(into.pattern, from.pattern)) continue;
          int readers = 0;
          for (int r : into.nodes) {
            for (int x : graph.nodes[r].inputs) readers += x == in ? 1 : 0;
          }
          if (readers != uses[in]) continue;
          for (int m : from.nodes) (*group_of)[m] = b;
          into.nodes.insert(into.nodes.end(), from.nodes.begin(), from.nodes.end());
          std::sort(into.nodes.begin(), into.nodes.end());
          into.pattern = std::max(into.pattern, from.pattern);
          from.nodes.clear();
          return true;
        }
      }
    }
    return false;
  };
  while (merge_one()) {
  }
  groups->erase(std::remove_if(groups->begin(), groups->end(),
                               [](const Group& g) { return g.nodes.empty(); }),
                groups->end());
}

}  // namespace

absl::StatusOr<FusedGraph> FuseGraph(const Graph& graph, const FuseOptions& options) {
  std::vector<int> uses(graph.values.size(), 0);
  for (const GraphNode& node : graph.nodes) {
    for (int in : node.inputs) ++uses[graph.Root(in)];
  }
  for (int out : graph.outputs) ++uses[graph.Root(out)];

  std::vector<Group> groups;
  std::vector<int> group_of(graph.nodes.size(), -1);
  for (int n = 0; n < static_cast<int>(graph.nodes.size()); ++n) {
    const GraphNode& node = graph.nodes[n];
    int join = -1;
    if (options.fuse) {
      for (int in : node.inputs) {
        const GraphValue& v = graph.values[in];
        if (v.alias_of >= 0 || v.producer < 0 || uses[in] != 1) continue;
        const int g = group_of[v.producer];
        if (groups[g].nodes.back() != v.producer) continue;
        if (!CanJoin(node.pattern, groups[g].pattern)) continue;
        // Prefer an anchor's group (an epilogue) over an elementwise chain.
        if (join < 0 || groups[g].pattern > groups[join].pattern) join = g;
      }
    }
    if (join < 0) {
      groups.push_back({{n}, node.pattern});
      group_of[n] = static_cast<int>(groups.size()) - 1;
    } else {
      groups[join].nodes.push_back(n);
      groups[join].pattern = std::max(groups[join].pattern, node.pattern);
      group_of[n] = join;
    }
  }
  if (options.fuse) MergeDiamonds(graph, uses, &groups, &group_of);
  // Execution order: by last node.
  std::sort(groups.begin(), groups.end(),
            [](const Group& a, const Group& b) { return a.nodes.back() < b.nodes.back(); });
  FusedGraph fused;
  for (size_t g = 0; g < groups.size(); ++g) {
    TESSERA_ASSIGN_OR_RETURN(FusedFunction f, BuildGroup(graph, groups[g], static_cast<int>(g)));
    fused.functions.push_back(std::move(f));
  }
  return fused;
}

}  // namespace tessera
