// Elementwise ONNX operators (numpy broadcasting): arithmetic, activations, comparisons,
// Where, Cast. Each is one Compute over the broadcast output shape.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "frontend/onnx_import_internal.h"

namespace tessera {
namespace onnx_internal {
namespace {

using ElementFn = std::function<Expr(const std::vector<Expr>&)>;

OpCompute ElementwiseCompute(std::vector<int64_t> func_shape, std::string tensor_name,
                             ElementFn fn) {
  return [func_shape, tensor_name, fn](const std::vector<Operand>& ops, TensorNamer* namer) {
    return tessera::Compute(
        func_shape,
        [&](const std::vector<Var>& i) {
          std::vector<Expr> xs;
          for (const Operand& op : ops) xs.push_back(op.Broadcast(i));
          return fn(xs);
        },
        (*namer)(tensor_name));
  };
}

// Adds an elementwise node over `inputs` (value ids, broadcast together). A rank-4 result has a
// channels-last form: the same function of the inputs permuted alike.
absl::Status Elementwise(NodeContext* ctx, std::vector<int> inputs, DataType dtype,
                         const std::string& tensor_name, ElementFn fn) {
  std::vector<int64_t> shape;
  for (int in : inputs) {
    TESSERA_ASSIGN_OR_RETURN(shape, BroadcastShapes(*ctx, shape, ctx->graph()->values[in].shape));
  }
  ChannelsLastForm channels_last;
  if (shape.size() == 4) {
    channels_last = {ElementwiseCompute(ChannelsLastShape(shape), tensor_name, fn),
                     std::vector<ChannelsLastInput>(inputs.size(), ChannelsLastInput::kPermuted)};
  }
  OpCompute compute = ElementwiseCompute(FuncShape(shape), tensor_name, std::move(fn));
  return ctx->Compute(OpPattern::kElementwise, std::move(inputs), shape, dtype, std::move(compute),
                      0, std::move(channels_last));
}

std::vector<int> AllInputs(NodeContext* ctx, int count) {
  std::vector<int> ids;
  for (int i = 0; i < count; ++i) ids.push_back(ctx->input(i));
  return ids;
}

absl::Status ExpectInputs(NodeContext* ctx, int min, int max) {
  int present = 0;
  for (int i = 0; i < ctx->num_inputs(); ++i) present += ctx->has_input(i) ? 1 : 0;
  if (ctx->num_inputs() < min || ctx->num_inputs() > max || !ctx->has_input(0)) {
    return ctx->Error(absl::StrCat("expects ", min, min == max ? "" : absl::StrCat("..", max),
                                   " inputs, has ", ctx->num_inputs()));
  }
  return absl::OkStatus();
}

absl::Status CheckFloat(NodeContext* ctx, int i) {
  if (!ctx->value(i).dtype.is_float()) {
    return ctx->Unsupported(absl::StrCat("input ", ctx->value(i).name, " has type ",
                                         ctx->value(i).dtype.ToString(),
                                         "; only floating-point inputs are supported"));
  }
  return absl::OkStatus();
}

absl::Status Binary(NodeContext* ctx, const std::string& name,
                    std::function<Expr(Expr, Expr, DataType)> fn) {
  TESSERA_RETURN_IF_ERROR(ExpectInputs(ctx, 2, 2));
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({}));
  DataType dtype = ctx->value(0).dtype;
  if (ctx->value(1).dtype != dtype) {
    return ctx->Error(absl::StrCat("inputs have different types ", dtype.ToString(), " and ",
                                   ctx->value(1).dtype.ToString()));
  }
  return Elementwise(ctx, AllInputs(ctx, 2), dtype, name,
                     [fn, dtype](const std::vector<Expr>& x) { return fn(x[0], x[1], dtype); });
}

absl::Status ConvertAdd(NodeContext* ctx) {
  return Binary(ctx, "T_add", [](Expr a, Expr b, DataType) { return a + b; });
}
absl::Status ConvertSub(NodeContext* ctx) {
  return Binary(ctx, "T_subtract", [](Expr a, Expr b, DataType) { return a - b; });
}
absl::Status ConvertMul(NodeContext* ctx) {
  return Binary(ctx, "T_multiply", [](Expr a, Expr b, DataType) { return a * b; });
}
absl::Status ConvertDiv(NodeContext* ctx) {
  // Integer division (shape arithmetic on non-negative sizes) floors.
  return Binary(ctx, "T_divide", [](Expr a, Expr b, DataType t) {
    return t.is_float() ? Div(a, b) : FloorDiv(a, b);
  });
}
absl::Status ConvertMax(NodeContext* ctx) {
  return Binary(ctx, "T_maximum", [](Expr a, Expr b, DataType) { return Max(a, b); });
}
absl::Status ConvertMin(NodeContext* ctx) {
  return Binary(ctx, "T_minimum", [](Expr a, Expr b, DataType) { return Min(a, b); });
}

absl::Status ConvertPow(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ExpectInputs(ctx, 2, 2));
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({}));
  TESSERA_RETURN_IF_ERROR(CheckFloat(ctx, 0));
  const DataType dtype = ctx->value(0).dtype;
  // x^2, x^3 and x^0.5 (what exporters emit for variance, GELU's tanh form and norms) as
  // products and a sqrt.
  if (ctx->graph()->IsScalarConstant(ctx->input(1))) {
    const double e = ctx->value(1).constant.GetFlat(0);
    if (e == 2.0) {
      return Elementwise(ctx, {ctx->input(0)}, dtype, "T_power",
                         [](const std::vector<Expr>& x) { return x[0] * x[0]; });
    }
    if (e == 3.0) {
      return Elementwise(ctx, {ctx->input(0)}, dtype, "T_power",
                         [](const std::vector<Expr>& x) { return x[0] * x[0] * x[0]; });
    }
    if (e == 0.5) {
      return Elementwise(ctx, {ctx->input(0)}, dtype, "T_power",
                         [](const std::vector<Expr>& x) { return Call(CallOp::kSqrt, {x[0]}); });
    }
  }
  if (ctx->value(1).dtype != dtype) {
    return ctx->Unsupported("exponent of a different type than the base");
  }
  return Elementwise(ctx, AllInputs(ctx, 2), dtype, "T_power", [](const std::vector<Expr>& x) {
    return Call(CallOp::kPow, {x[0], x[1]});
  });
}

absl::Status Unary(NodeContext* ctx, const std::string& name, std::function<Expr(Expr)> fn,
                   std::vector<std::string> attrs = {}) {
  TESSERA_RETURN_IF_ERROR(ExpectInputs(ctx, 1, 1));
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs(attrs));
  TESSERA_RETURN_IF_ERROR(CheckFloat(ctx, 0));
  return Elementwise(ctx, {ctx->input(0)}, ctx->value(0).dtype, name,
                     [fn](const std::vector<Expr>& x) { return fn(x[0]); });
}

Expr Half(const Expr& like, double v) { return MakeConst(like.dtype(), v); }

absl::Status ConvertSqrt(NodeContext* ctx) {
  return Unary(ctx, "T_sqrt", [](Expr x) { return Call(CallOp::kSqrt, {x}); });
}
absl::Status ConvertExp(NodeContext* ctx) {
  return Unary(ctx, "T_exp", [](Expr x) { return Call(CallOp::kExp, {x}); });
}
absl::Status ConvertLog(NodeContext* ctx) {
  return Unary(ctx, "T_log", [](Expr x) { return Call(CallOp::kLog, {x}); });
}
absl::Status ConvertErf(NodeContext* ctx) {
  return Unary(ctx, "T_erf", [](Expr x) { return Call(CallOp::kErf, {x}); });
}
absl::Status ConvertTanh(NodeContext* ctx) {
  return Unary(ctx, "T_tanh", [](Expr x) { return Call(CallOp::kTanh, {x}); });
}
absl::Status ConvertSigmoid(NodeContext* ctx) {
  return Unary(ctx, "T_sigmoid", [](Expr x) { return Call(CallOp::kSigmoid, {x}); });
}
absl::Status ConvertRelu(NodeContext* ctx) {
  return Unary(ctx, "T_relu", [](Expr x) { return Max(x, Half(x, 0)); });
}
absl::Status ConvertNeg(NodeContext* ctx) {
  return Unary(ctx, "T_negative", [](Expr x) { return -x; });
}
absl::Status ConvertAbs(NodeContext* ctx) {
  return Unary(ctx, "T_abs", [](Expr x) { return Call(CallOp::kAbs, {x}); });
}
absl::Status ConvertReciprocal(NodeContext* ctx) {
  return Unary(ctx, "T_reciprocal", [](Expr x) { return Div(Half(x, 1), x); });
}

absl::Status ConvertLeakyRelu(NodeContext* ctx) {
  TESSERA_ASSIGN_OR_RETURN(float alpha, ctx->Float("alpha", 0.01f));
  return Unary(ctx, "T_leaky_relu",
               [alpha](Expr x) { return Select(GT(x, Half(x, 0)), x, x * Half(x, alpha)); },
               {"alpha"});
}

absl::Status ConvertGelu(NodeContext* ctx) {
  TESSERA_ASSIGN_OR_RETURN(std::string approximate, ctx->String("approximate", "none"));
  if (approximate == "tanh") {
    return Unary(ctx, "T_gelu",
                 [](Expr x) {
                   Expr inner =
                       Half(x, std::sqrt(2.0 / M_PI)) * (x + Half(x, 0.044715) * x * x * x);
                   return Half(x, 0.5) * x * (Half(x, 1) + Call(CallOp::kTanh, {inner}));
                 },
                 {"approximate"});
  }
  if (approximate != "none") {
    return ctx->Unsupported(absl::StrCat("unsupported attribute approximate=", approximate));
  }
  return Unary(ctx, "T_gelu",
               [](Expr x) {
                 return Half(x, 0.5) * x *
                        (Half(x, 1) + Call(CallOp::kErf, {x * Half(x, M_SQRT1_2)}));
               },
               {"approximate"});
}

absl::Status ConvertClip(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ExpectInputs(ctx, 1, 3));
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({}));
  TESSERA_RETURN_IF_ERROR(CheckFloat(ctx, 0));
  double lo = -INFINITY, hi = INFINITY;
  if (ctx->has_input(1)) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<double> v, ctx->ConstDoubles(1));
    lo = v.at(0);
  }
  if (ctx->has_input(2)) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<double> v, ctx->ConstDoubles(2));
    hi = v.at(0);
  }
  return Elementwise(ctx, {ctx->input(0)}, ctx->value(0).dtype, "T_clip",
                     [lo, hi](const std::vector<Expr>& x) {
                       Expr y = x[0];
                       if (std::isfinite(lo)) y = Max(y, Half(y, lo));
                       if (std::isfinite(hi)) y = Min(y, Half(y, hi));
                       return y;
                     });
}

absl::Status Compare(NodeContext* ctx, const std::string& name,
                     std::function<Expr(Expr, Expr)> fn) {
  TESSERA_RETURN_IF_ERROR(ExpectInputs(ctx, 2, 2));
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({}));
  return Elementwise(ctx, AllInputs(ctx, 2), DataType::Bool(), name,
                     [fn](const std::vector<Expr>& x) { return fn(x[0], x[1]); });
}
absl::Status ConvertEqual(NodeContext* ctx) {
  return Compare(ctx, "T_equal", [](Expr a, Expr b) { return EQ(a, b); });
}
absl::Status ConvertLess(NodeContext* ctx) {
  return Compare(ctx, "T_less", [](Expr a, Expr b) { return LT(a, b); });
}
absl::Status ConvertGreater(NodeContext* ctx) {
  return Compare(ctx, "T_greater", [](Expr a, Expr b) { return GT(a, b); });
}

absl::Status ConvertWhere(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ExpectInputs(ctx, 3, 3));
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({}));
  if (!ctx->value(0).dtype.is_bool()) return ctx->Error("condition is not bool");
  return Elementwise(ctx, AllInputs(ctx, 3), ctx->value(1).dtype, "T_where",
                     [](const std::vector<Expr>& x) {
                       return Select(NE(Cast(DataType::Int32(), x[0]), Expr(0)), x[1], x[2]);
                     });
}

absl::Status ConvertCast(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ExpectInputs(ctx, 1, 1));
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"to", "saturate"}));
  TESSERA_ASSIGN_OR_RETURN(int64_t to, ctx->Int("to", -1));
  absl::StatusOr<DataType> dtype = FromOnnxType(static_cast<int32_t>(to));
  if (!dtype.ok()) return ctx->Unsupported(std::string(dtype.status().message()));
  if (*dtype == ctx->value(0).dtype) return ctx->View(ctx->input(0), ctx->shape(0));
  DataType t = *dtype;
  return Elementwise(ctx, {ctx->input(0)}, t, "T_cast",
                     [t](const std::vector<Expr>& x) { return Cast(t, x[0]); });
}

}  // namespace

std::vector<ConverterRow> ElementwiseConverters() {
  return {
      {"Abs", ConvertAbs},
      {"Add", ConvertAdd},
      {"Cast", ConvertCast},
      {"Clip", ConvertClip},
      {"Div", ConvertDiv},
      {"Equal", ConvertEqual},
      {"Erf", ConvertErf},
      {"Exp", ConvertExp},
      {"Gelu", ConvertGelu},
      {"Greater", ConvertGreater},
      {"LeakyRelu", ConvertLeakyRelu},
      {"Less", ConvertLess},
      {"Log", ConvertLog},
      {"Max", ConvertMax},
      {"Min", ConvertMin},
      {"Mul", ConvertMul},
      {"Neg", ConvertNeg},
      {"Pow", ConvertPow},
      {"Reciprocal", ConvertReciprocal},
      {"Relu", ConvertRelu},
      {"Sigmoid", ConvertSigmoid},
      {"Sqrt", ConvertSqrt},
      {"Sub", ConvertSub},
      {"Tanh", ConvertTanh},
      {"Where", ConvertWhere},
  };
}

}  // namespace onnx_internal
}  // namespace tessera
