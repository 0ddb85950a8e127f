// Operator fusion (after TVM's FuseOps): groups the nodes of a Graph into PrimFuncs, each an
// ordinary tunable function built with the compute DSL. Walking the nodes in order, a node
// joins the group that produced one of its inputs when
//   - that input is the group's only result (the group's last node) and nothing else uses it
//     (not another node, not a graph output), and it is not read through a view;
//   - the node is elementwise and the group is anything (an anchor — conv, matmul, pool —
//     takes it as an epilogue: bias, batch norm, activation, residual add), or
//   - the node is injective and the group is elementwise or injective, or
//   - the node is a reduction and the group is elementwise or injective (its prologue).
// Otherwise the node starts a group of its own. Then a group whose result only one other group
// reads (an elementwise diamond: GELU's x read by x^3, the sum and 0.5 * x) joins that group
// where the same patterns allow. A group has one result, so groups never form cycles, and they
// run in the order of their last nodes. Views (reshapes) are not nodes: they
// cost nothing and are group boundaries.
#ifndef TESSERA_FRONTEND_FUSE_OPS_H_
#define TESSERA_FRONTEND_FUSE_OPS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/model_graph.h"

namespace tessera {

// One function of a fused graph and how the runtime calls it.
struct FusedFunction {
  std::string name;        // "fused_conv_add_relu_3" (op types of its nodes, group number)
  PrimFunc func;           // parameters: `args` in order (inputs, then the result)
  std::vector<int> nodes;  // node ids, in order
  std::vector<int> args;   // value ids bound to the parameters; the last one is the result
  OpPattern pattern;       // the strongest pattern of its nodes
};

struct FusedGraph {
  std::vector<FusedFunction> functions;  // in execution order
};

struct FuseOptions {
  bool fuse = true;  // false: one function per node (the reference of `exec --check`)
};

// kInvalidArgument when a node's compute cannot be built into a function (names the node).
absl::StatusOr<FusedGraph> FuseGraph(const Graph& graph, const FuseOptions& options = {});

}  // namespace tessera

#endif  // TESSERA_FRONTEND_FUSE_OPS_H_
