#include "frontend/model_graph.h"

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "ir/interpreter.h"

namespace tessera {

const char* OpPatternName(OpPattern pattern) {
  switch (pattern) {
    case OpPattern::kElementwise:
      return "elementwise";
    case OpPattern::kInjective:
      return "injective";
    case OpPattern::kReduction:
      return "reduction";
    case OpPattern::kAnchor:
      return "anchor";
  }
  return "?";
}

Expr Operand::operator()(const std::vector<Expr>& indices) const {
  if (scalar.has_value()) return MakeConst(dtype, *scalar);
  return tensor(indices);
}

Expr Operand::Broadcast(const std::vector<Var>& out) const {
  if (scalar.has_value()) return MakeConst(dtype, *scalar);
  const int offset = static_cast<int>(out.size()) - ndim();
  TESSERA_CHECK(offset >= 0) << "broadcast of rank " << ndim() << " to rank " << out.size();
  std::vector<Expr> indices;
  for (int d = 0; d < ndim(); ++d) {
    indices.push_back(shape[d] == 1 ? Expr(0) : Expr(out[offset + d]));
  }
  return tensor(indices);
}

std::vector<Expr> Exprs(const std::vector<Var>& vars) {
  return std::vector<Expr>(vars.begin(), vars.end());
}

std::string TensorNamer::operator()(const std::string& base) {
  for (auto& [name, count] : used_) {
    if (name == base) return absl::StrCat(base, "_", ++count);
  }
  used_.push_back({base, 0});
  return base;
}

std::vector<int64_t> ChannelsLastShape(const std::vector<int64_t>& nchw) {
  return {nchw[0], nchw[2], nchw[3], nchw[1]};
}

int64_t GraphValue::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int Graph::Root(int value) const {
  return values[value].alias_of >= 0 ? values[value].alias_of : value;
}

int Graph::Uses(int value) const {
  const int root = Root(value);
  int uses = 0;
  for (const GraphNode& node : nodes) {
    for (int in : node.inputs) uses += Root(in) == root ? 1 : 0;
  }
  for (int out : outputs) uses += Root(out) == root ? 1 : 0;
  return uses;
}

bool Graph::IsScalarConstant(int value) const {
  const GraphValue& v = values[value];
  return v.is_constant() && v.num_elements() == 1;
}

absl::StatusOr<NDArray> EvaluateConstant(const std::vector<const GraphValue*>& inputs,
                                         const OpCompute& compute) {
  std::vector<Operand> operands;
  std::vector<Tensor> params;
  std::vector<NDArray> arrays;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const GraphValue& v = *inputs[i];
    if (!v.is_constant()) {
      return absl::InvalidArgumentError(
          absl::StrCat("constant folding: input ", v.name, " is not a constant"));
    }
    Operand op;
    op.dtype = v.dtype;
    op.shape = v.shape;
    // Rank-0 values are held as shape {1} tensors inside functions.
    std::vector<int64_t> shape = v.shape.empty() ? std::vector<int64_t>{1} : v.shape;
    op.tensor = Placeholder(shape, v.dtype, absl::StrCat("p", i));
    if (v.shape.empty()) op.shape = {1};
    params.push_back(op.tensor);
    arrays.push_back(v.constant);
    operands.push_back(std::move(op));
  }
  TensorNamer namer;
  Tensor out = compute(operands, &namer);
  params.push_back(out);
  TESSERA_ASSIGN_OR_RETURN(PrimFunc func, CreatePrimFunc("fold", params));
  NDArray result = NDArray::Empty(out.dtype(), out.shape());
  std::vector<NDArray> args;
  std::vector<NDArray*> arg_ptrs;
  for (const NDArray& a : arrays) {
    args.push_back(
        NDArray::View(a.dtype(), params[args.size()].shape(), const_cast<void*>(a.data())));
  }
  for (NDArray& a : args) arg_ptrs.push_back(&a);
  arg_ptrs.push_back(&result);
  TESSERA_RETURN_IF_ERROR(Interpret(func, arg_ptrs));
  return result;
}

}  // namespace tessera
