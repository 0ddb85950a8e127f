// Reducing ONNX operators: ReduceSum / ReduceMean / ReduceMax / ReduceMin (axes as an attribute
// or, from opset 13 for ReduceSum and 18 for the others, as a constant input), Softmax,
// LogSoftmax and LayerNormalization. Multi-stage operators are written as TOPI writes them
// (softmax: max, exp, sum, divide), each stage a block of the function.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "frontend/onnx_import_internal.h"

namespace tessera {
namespace onnx_internal {
namespace {

enum class ReduceOp { kSum, kMean, kMax, kMin, kSumSquare };

// Output indices `i` (of the reduced shape) and reduce axes -> input indices.
std::vector<Expr> InputIndex(const std::vector<Var>& i, const std::vector<bool>& reduced,
                             const std::vector<IterVar>& red, bool keepdims) {
  std::vector<Expr> idx;
  size_t out_d = 0, r = 0;
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (reduced[d]) {
      idx.push_back(red[r++].var);
      if (keepdims) ++out_d;
    } else {
      idx.push_back(i[out_d++]);
    }
  }
  return idx;
}

absl::Status Reduce(NodeContext* ctx, ReduceOp op) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"axes", "keepdims", "noop_with_empty_axes"}));
  TESSERA_ASSIGN_OR_RETURN(int64_t keepdims, ctx->Int("keepdims", 1));
  TESSERA_ASSIGN_OR_RETURN(int64_t noop, ctx->Int("noop_with_empty_axes", 0));
  const int axes_input_from = op == ReduceOp::kSum ? 13 : 18;
  std::vector<int64_t> axes;
  if (ctx->opset() >= axes_input_from) {
    if (ctx->HasAttr("axes"))
      return ctx->Error("axes is an input from this opset, not an attribute");
    if (ctx->has_input(1)) {
      TESSERA_ASSIGN_OR_RETURN(axes, ctx->ConstInts(1));
    }
  } else {
    TESSERA_ASSIGN_OR_RETURN(axes, ctx->Ints("axes", {}));
  }
  const int rank = ctx->rank(0);
  if (axes.empty()) {
    if (noop) return ctx->View(ctx->input(0), ctx->shape(0));
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    TESSERA_ASSIGN_OR_RETURN(int d, ctx->Axis(a, rank));
    reduced[d] = true;
  }
  std::vector<int64_t> out;
  std::vector<int64_t> red_extents;
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    if (reduced[d]) {
      red_extents.push_back(ctx->shape(0)[d]);
      count *= ctx->shape(0)[d];
      if (keepdims) out.push_back(1);
    } else {
      out.push_back(ctx->shape(0)[d]);
    }
  }
  const std::vector<int64_t> func_out = FuncShape(out);
  const bool keep = keepdims != 0 || out.empty();
  const bool all_reduced = out.empty();
  OpCompute compute = [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    std::vector<IterVar> red;
    for (size_t r = 0; r < red_extents.size(); ++r) {
      red.push_back(ReduceAxis(red_extents[r], absl::StrCat("k", r)));
    }
    auto load = [&](const std::vector<Var>& i) {
      if (all_reduced && keepdims == 0) {
        std::vector<Expr> idx;
        for (const IterVar& r : red) idx.push_back(r.var);
        return ops[0](idx);
      }
      return ops[0](InputIndex(i, reduced, red, keep));
    };
    const char* names[] = {"T_sum", "T_sum", "T_max", "T_min", "T_sum"};
    Tensor r = Compute(
        func_out,
        [&](const std::vector<Var>& i) -> ComputeBody {
          Expr x = load(i);
          switch (op) {
            case ReduceOp::kMax:
              return MaxReduce(x, red);
            case ReduceOp::kMin:
              return MinReduce(x, red);
            case ReduceOp::kSumSquare:
              return Sum(x * x, red);
            default:
              return Sum(x, red);
          }
        },
        (*namer)(names[static_cast<int>(op)]));
    if (op != ReduceOp::kMean) return r;
    return Compute(
        func_out,
        [&](const std::vector<Var>& i) {
          return r(Exprs(i)) * MakeConst(ops[0].dtype, 1.0 / static_cast<double>(count));
        },
        (*namer)("T_mean"));
  };
  return ctx->Compute(OpPattern::kReduction, {ctx->input(0)}, out, ctx->value(0).dtype, compute);
}

absl::Status ConvertReduceSum(NodeContext* ctx) { return Reduce(ctx, ReduceOp::kSum); }
absl::Status ConvertReduceMean(NodeContext* ctx) { return Reduce(ctx, ReduceOp::kMean); }
absl::Status ConvertReduceMax(NodeContext* ctx) { return Reduce(ctx, ReduceOp::kMax); }
absl::Status ConvertReduceMin(NodeContext* ctx) { return Reduce(ctx, ReduceOp::kMin); }
absl::Status ConvertReduceSumSquare(NodeContext* ctx) { return Reduce(ctx, ReduceOp::kSumSquare); }

// Shape without axis `axis`.
std::vector<int64_t> Drop(const std::vector<int64_t>& shape, int axis) {
  std::vector<int64_t> out;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d != axis) out.push_back(shape[d]);
  }
  return FuncShape(out);
}

// Indices `i` of the full shape without axis `axis`.
std::vector<Expr> Without(const std::vector<Var>& i, int axis, int rank) {
  std::vector<Expr> out;
  for (int d = 0; d < rank; ++d) {
    if (d != axis) out.push_back(i[d]);
  }
  if (out.empty()) out.push_back(Expr(0));
  return out;
}

// Indices of the full shape from indices `i` of the shape without axis `axis` (a single dummy
// index when that shape is rank 0) and `v` at `axis`.
std::vector<Expr> Insert(const std::vector<Var>& i, int axis, int rank, Expr v) {
  std::vector<Expr> out;
  for (int d = 0, src = 0; d < rank; ++d) out.push_back(d == axis ? v : Expr(i[src++]));
  return out;
}

absl::Status ConvertSoftmax(NodeContext* ctx, bool log) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"axis"}));
  const int rank = ctx->rank(0);
  TESSERA_ASSIGN_OR_RETURN(int64_t axis_attr, ctx->Int("axis", ctx->opset() >= 13 ? -1 : 1));
  TESSERA_ASSIGN_OR_RETURN(int axis, ctx->Axis(axis_attr, rank));
  if (ctx->opset() < 13 && axis != rank - 1) {
    return ctx->Unsupported(absl::StrCat("softmax over the flattened axes [", axis,
                                         ", rank) before opset 13 (only the last axis)"));
  }
  const std::vector<int64_t> shape = ctx->shape(0);
  OpCompute compute = [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    const Operand& x = ops[0];
    const int64_t n = shape[axis];
    const std::vector<int64_t> rows = Drop(shape, axis);
    IterVar k = ReduceAxis(n, "k");
    Tensor mx = Compute(
        rows,
        [&](const std::vector<Var>& i) { return MaxReduce(x(Insert(i, axis, rank, k.var)), {k}); },
        (*namer)("T_softmax_maxelem"));
    Tensor ex = Compute(
        shape,
        [&](const std::vector<Var>& i) {
          return Call(CallOp::kExp, {x(Exprs(i)) - mx(Without(i, axis, rank))});
        },
        (*namer)("T_softmax_exp"));
    IterVar k2 = ReduceAxis(n, "k");
    Tensor sum = Compute(
        rows,
        [&](const std::vector<Var>& i) { return Sum(ex(Insert(i, axis, rank, k2.var)), {k2}); },
        (*namer)("T_softmax_expsum"));
    return Compute(
        shape,
        [&](const std::vector<Var>& i) {
          Expr s = sum(Without(i, axis, rank));
          if (log) return x(Exprs(i)) - mx(Without(i, axis, rank)) - Call(CallOp::kLog, {s});
          return Div(ex(Exprs(i)), s);
        },
        (*namer)("T_softmax_norm"));
  };
  return ctx->Compute(OpPattern::kReduction, {ctx->input(0)}, shape, ctx->value(0).dtype, compute);
}

absl::Status ConvertSoftmaxOp(NodeContext* ctx) { return ConvertSoftmax(ctx, false); }
absl::Status ConvertLogSoftmax(NodeContext* ctx) { return ConvertSoftmax(ctx, true); }

absl::Status ConvertLayerNorm(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"axis", "epsilon", "stash_type"}));
  if (ctx->output_count() > 1) return ctx->Unsupported("the Mean and InvStdDev outputs");
  if (ctx->num_inputs() < 2) return ctx->Error("expects X and Scale");
  const int rank = ctx->rank(0);
  TESSERA_ASSIGN_OR_RETURN(int64_t axis_attr, ctx->Int("axis", -1));
  TESSERA_ASSIGN_OR_RETURN(int axis, ctx->Axis(axis_attr, rank));
  TESSERA_ASSIGN_OR_RETURN(float eps, ctx->Float("epsilon", 1e-5f));
  const std::vector<int64_t> shape = ctx->shape(0);
  std::vector<int> inputs = {ctx->input(0), ctx->input(1)};
  const bool has_bias = ctx->has_input(2);
  if (has_bias) inputs.push_back(ctx->input(2));
  std::vector<int64_t> rows(shape.begin(), shape.begin() + axis);
  std::vector<int64_t> cols(shape.begin() + axis, shape.end());
  int64_t count = 1;
  for (int64_t c : cols) count *= c;
  OpCompute compute = [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    const Operand& x = ops[0];
    const DataType t = x.dtype;
    std::vector<IterVar> red;
    for (size_t d = 0; d < cols.size(); ++d)
      red.push_back(ReduceAxis(cols[d], absl::StrCat("k", d)));
    auto row_index = [&](const std::vector<Var>& i, const std::vector<Expr>& tail) {
      std::vector<Expr> idx;
      for (int d = 0; d < axis; ++d) idx.push_back(i[d]);
      idx.insert(idx.end(), tail.begin(), tail.end());
      return idx;
    };
    std::vector<Expr> red_vars;
    for (const IterVar& r : red) red_vars.push_back(r.var);
    auto rows_of = [&](const std::vector<Var>& i) {
      std::vector<Expr> idx;
      for (int d = 0; d < axis; ++d) idx.push_back(i[d]);
      if (idx.empty()) idx.push_back(Expr(0));
      return idx;
    };
    const Expr inv_n = MakeConst(t, 1.0 / static_cast<double>(count));
    Tensor sum = Compute(
        FuncShape(rows),
        [&](const std::vector<Var>& i) { return Sum(x(row_index(i, red_vars)), red); },
        (*namer)("T_layer_norm_sum"));
    std::vector<IterVar> red2;
    for (size_t d = 0; d < cols.size(); ++d)
      red2.push_back(ReduceAxis(cols[d], absl::StrCat("k", d)));
    std::vector<Expr> red2_vars;
    for (const IterVar& r : red2) red2_vars.push_back(r.var);
    Tensor var = Compute(
        FuncShape(rows),
        [&](const std::vector<Var>& i) {
          Expr centered = x(row_index(i, red2_vars)) - sum(rows_of(i)) * inv_n;
          return Sum(centered * centered, red2);
        },
        (*namer)("T_layer_norm_var"));
    return Compute(
        shape,
        [&](const std::vector<Var>& i) {
          std::vector<Var> tail(i.begin() + axis, i.end());
          Expr mean = sum(rows_of(i)) * inv_n;
          Expr rstd = Call(CallOp::kRsqrt, {var(rows_of(i)) * inv_n + MakeConst(t, eps)});
          Expr y = (x(Exprs(i)) - mean) * rstd * ops[1].Broadcast(tail);
          if (has_bias) y = y + ops[2].Broadcast(tail);
          return y;
        },
        (*namer)("T_layer_norm"));
  };
  return ctx->Compute(OpPattern::kReduction, inputs, shape, ctx->value(0).dtype, compute);
}

}  // namespace

std::vector<ConverterRow> ReduceConverters() {
  return {
      {"LayerNormalization", ConvertLayerNorm},
      {"LogSoftmax", ConvertLogSoftmax},
      {"ReduceMax", ConvertReduceMax},
      {"ReduceMean", ConvertReduceMean},
      {"ReduceMin", ConvertReduceMin},
      {"ReduceSum", ConvertReduceSum},
      {"ReduceSumSquare", ConvertReduceSumSquare},
      {"Softmax", ConvertSoftmaxOp},
  };
}

}  // namespace onnx_internal
}  // namespace tessera
