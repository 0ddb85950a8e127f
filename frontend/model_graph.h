// A model as a dataflow graph of operators over statically shaped tensors, the form the ONNX
// importer produces and fusion (frontend/fuse_ops.h) consumes. Every operator carries its
// meaning as a compute-DSL function (frontend/compute.h), so any group of operators becomes an
// ordinary PrimFunc by calling those functions in order and CreatePrimFunc on the result.
//
// Values are tensors: graph inputs, constants (initializers and everything folded at import)
// or node outputs. A value may be a *view* of another one (`alias_of`): Reshape, Flatten,
// Squeeze, Unsqueeze, Identity and Dropout only renumber the elements of a row-major tensor,
// so they compute nothing and share the storage of the value they view.
#ifndef TESSERA_FRONTEND_MODEL_GRAPH_H_
#define TESSERA_FRONTEND_MODEL_GRAPH_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/compute.h"
#include "ir/ndarray.h"

namespace tessera {

// How an operator may fuse (TVM's OpPatternKind, in increasing order).
enum class OpPattern : uint8_t {
  kElementwise = 0,  // out[i] = f(in[i]) with numpy broadcasting of the inputs
  kInjective = 2,    // every output element reads input elements by an index map (transpose)
  kReduction = 3,    // reduces axes, possibly with elementwise stages (softmax, layer norm)
  kAnchor = 4,       // conv, matmul, pooling: takes elementwise epilogues, nothing else
};
const char* OpPatternName(OpPattern pattern);

// One input of an operator's compute: a tensor of the function being built, or a constant
// scalar (a one-element constant, inlined as an immediate).
struct Operand {
  Tensor tensor;  // defined unless `scalar` is set
  std::optional<double> scalar;
  DataType dtype;
  std::vector<int64_t> shape;

  int ndim() const { return static_cast<int>(shape.size()); }
  // this[indices] (the immediate for a scalar).
  Expr operator()(const std::vector<Expr>& indices) const;
  // The element that numpy broadcasting reads for the output element `out` of a result of
  // rank out.size() >= ndim(): trailing axes aligned, extent-1 axes read at 0.
  Expr Broadcast(const std::vector<Var>& out) const;
};

// The loop variables of a compute function as index expressions.
std::vector<Expr> Exprs(const std::vector<Var>& vars);

// Unique tensor names inside the function being built ("T_add", "T_add_1", ...), since block
// names (= tensor names) must be unique in a PrimFunc.
class TensorNamer {
 public:
  std::string operator()(const std::string& base);

 private:
  std::vector<std::pair<std::string, int>> used_;
};

// Builds the operator's output from its inputs (in node input order).
using OpCompute = std::function<Tensor(const std::vector<Operand>& inputs, TensorNamer* namer)>;

// How a node's input is given to the operator's channels-last form (ChannelsLastForm).
enum class ChannelsLastInput : uint8_t {
  kUnchanged,  // as in the graph (a bias indexed by the output channel)
  kPermuted,   // a rank-4 activation as NHWC; a constant of rank <= 4 first aligned to rank 4
               // (leading 1s, as numpy broadcasting aligns it) and then permuted the same way
  kHwio,       // a constant convolution weight [O, I, KH, KW] as [KH, KW, I, O]
};

// The window of a 2-D convolution (rewrites of its channels-last form read it:
// frontend/winograd.h).
struct Conv2dWindow {
  std::array<int64_t, 2> kernel, strides, dilations, pads_begin, pads_end;
  int64_t groups = 1;
};

// The operator on channels-last data, where it has such a form: its rank-4 NCHW output computed
// as NHWC from its inputs given as `inputs` says (frontend/channels_last.h).
struct ChannelsLastForm {
  OpCompute compute;                      // empty: the operator has no channels-last form
  std::vector<ChannelsLastInput> inputs;  // one per node input
  std::optional<Conv2dWindow> conv2d = std::nullopt;  // a 2-D convolution's window
};

// The NHWC shape of an NCHW one: (N, C, H, W) -> (N, H, W, C).
std::vector<int64_t> ChannelsLastShape(const std::vector<int64_t>& nchw);

struct GraphValue {
  std::string name;  // the ONNX value name
  DataType dtype;
  std::vector<int64_t> shape;
  bool is_input = false;  // a graph input (fed by the caller)
  NDArray constant;       // has data: a constant (initializer or folded)
  int producer = -1;      // the node computing it, or -1
  int alias_of = -1;      // a view of this value (never itself a view), or -1

  bool is_constant() const { return constant.data() != nullptr; }
  int64_t num_elements() const;
};

struct GraphNode {
  std::string name;     // the ONNX node name (or "<op_type>_<index>" when it has none)
  std::string op_type;  // "Conv"
  OpPattern pattern;
  std::vector<int> inputs;  // value ids
  int output = -1;          // value id
  OpCompute compute;
  ChannelsLastForm channels_last;
  // Set where the channels-last form of a 2-D convolution replaced `compute`: its window.
  std::optional<Conv2dWindow> conv2d;
  // Floating-point work is counted on the built functions (ir/flops.h); nodes carry none.
};

struct Graph {
  std::vector<GraphValue> values;
  std::vector<GraphNode> nodes;  // in topological order
  std::vector<int> inputs;       // graph input value ids, in the model's order
  std::vector<int> outputs;      // graph output value ids, in the model's order

  // The value a view stands for (itself when it is not a view).
  int Root(int value) const;
  // Number of uses of `value` (or of views of it) as a node input or graph output.
  int Uses(int value) const;
  // Whether the node's input `value` is inlined as a scalar immediate (a one-element constant).
  bool IsScalarConstant(int value) const;
};

// Evaluates one operator on constant inputs with the reference interpreter (constant folding:
// shape arithmetic, weights transformed at import). kInvalidArgument if an input is not
// constant; interpreter errors as they come.
absl::StatusOr<NDArray> EvaluateConstant(const std::vector<const GraphValue*>& inputs,
                                         const OpCompute& compute);

}  // namespace tessera

#endif  // TESSERA_FRONTEND_MODEL_GRAPH_H_
