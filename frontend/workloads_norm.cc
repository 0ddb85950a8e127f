// Reductions, normalizations and data movement: NRM, SFM (as topi.nn.softmax: max, exp, sum,
// divide), LAYER_NORM and RMS_NORM (reductions, then one elementwise block), TRANSPOSE,
// REDUCE_SUM and ELEMENTWISE. float32 only.
#include "frontend/compute.h"
#include "frontend/workloads_internal.h"

namespace tessera {
namespace workloads_internal {
namespace {

constexpr double kNormEpsilon = 1e-5;

absl::StatusOr<PrimFunc> BuildNrm(const ShapeMap& s, DataType dtype, DataType /*acc*/) {
  const int64_t b = s.at("B"), m = s.at("M"), n = s.at("N");
  Tensor A = Placeholder({b, m, n}, dtype, "A");
  IterVar i = ReduceAxis(m, "i"), j = ReduceAxis(n, "j");
  Tensor C = Compute({b},
                     [&](const std::vector<Var>& v) {
                       Expr x = A({v[0], i.var, j.var});
                       return Sum(x * x, {i, j});
                     },
                     "C", {}, {"b"});
  Tensor D =
      Compute({b}, [&](const std::vector<Var>& v) { return Call(CallOp::kSqrt, {C({v[0]})}); }, "D",
              {}, {"b"});
  return CreatePrimFunc(kFunctionName, {A, D});
}

absl::StatusOr<PrimFunc> BuildSfm(const ShapeMap& s, DataType dtype, DataType /*acc*/) {
  const int64_t m = s.at("M"), n = s.at("N");
  Tensor A = Placeholder({m, n}, dtype, "A");
  IterVar k = ReduceAxis(n, "k");
  Tensor maxelem = Compute({m},
                           [&](const std::vector<Var>& v) {
                             return MaxReduce(A({v[0], k.var}), {k});
                           },
                           "T_softmax_maxelem", {}, {"i0"});
  Tensor exp = Compute({m, n},
                       [&](const std::vector<Var>& v) {
                         return Call(CallOp::kExp, {A({v[0], v[1]}) - maxelem({v[0]})});
                       },
                       "T_softmax_exp", {}, {"i0", "i1"});
  IterVar k2 = ReduceAxis(n, "k");
  Tensor expsum = Compute({m},
                          [&](const std::vector<Var>& v) {
                            return Sum(exp({v[0], k2.var}), {k2});
                          },
                          "T_softmax_expsum", {}, {"i0"});
  Tensor norm = Compute({m, n},
                        [&](const std::vector<Var>& v) {
                          return Div(exp({v[0], v[1]}), expsum({v[0]}));
                        },
                        "T_softmax_norm", {}, {"i0", "i1"});
  return CreatePrimFunc(kFunctionName, {A, norm});
}

// Sum over the last axis of f(A[i, k]) for each row i.
Tensor RowSum(const Tensor& A, const std::string& name, bool squared) {
  IterVar k = ReduceAxis(A.shape()[1], "k");
  return Compute({A.shape()[0]},
                 [&](const std::vector<Var>& v) {
                   Expr x = A({v[0], k.var});
                   return Sum(squared ? x * x : x, {k});
                 },
                 name, {}, {"i"});
}

absl::StatusOr<PrimFunc> BuildLayerNorm(const ShapeMap& s, DataType dtype, DataType /*acc*/) {
  const int64_t m = s.at("M"), n = s.at("N");
  Tensor A = Placeholder({m, n}, dtype, "A");
  Tensor gamma = Placeholder({n}, dtype, "gamma");
  Tensor beta = Placeholder({n}, dtype, "beta");
  Tensor sum = RowSum(A, "A_red_sum", /*squared=*/false);
  Tensor sqsum = RowSum(A, "A_red_sqsum", /*squared=*/true);
  const Expr inv_n = MakeConst(dtype, 1.0 / static_cast<double>(n));
  Tensor out = Compute({m, n},
                       [&](const std::vector<Var>& v) {
                         Expr mean = sum({v[0]}) * inv_n;
                         Expr var = sqsum({v[0]}) * inv_n - mean * mean;
                         Expr rstd = Call(CallOp::kRsqrt, {var + MakeConst(dtype, kNormEpsilon)});
                         return (A({v[0], v[1]}) - mean) * rstd * gamma({v[1]}) + beta({v[1]});
                       },
                       "T_layer_norm", {}, {"i", "j"});
  return CreatePrimFunc(kFunctionName, {A, gamma, beta, out});
}

absl::StatusOr<PrimFunc> BuildRmsNorm(const ShapeMap& s, DataType dtype, DataType /*acc*/) {
  const int64_t m = s.at("M"), n = s.at("N");
  Tensor A = Placeholder({m, n}, dtype, "A");
  Tensor gamma = Placeholder({n}, dtype, "gamma");
  Tensor sqsum = RowSum(A, "A_red_sqsum", /*squared=*/true);
  const Expr inv_n = MakeConst(dtype, 1.0 / static_cast<double>(n));
  Tensor out = Compute({m, n},
                       [&](const std::vector<Var>& v) {
                         Expr rms = Call(CallOp::kRsqrt,
                                         {sqsum({v[0]}) * inv_n + MakeConst(dtype, kNormEpsilon)});
                         return A({v[0], v[1]}) * rms * gamma({v[1]});
                       },
                       "T_rms_norm", {}, {"i", "j"});
  return CreatePrimFunc(kFunctionName, {A, gamma, out});
}

absl::StatusOr<PrimFunc> BuildTranspose(const ShapeMap& s, DataType dtype, DataType /*acc*/) {
  const int64_t m = s.at("M"), n = s.at("N");
  Tensor A = Placeholder({m, n}, dtype, "A");
  Tensor B = Compute({n, m},
                     [&](const std::vector<Var>& v) {
                       return A({v[1], v[0]});
                     },
                     "T_transpose", {}, {"i", "j"});
  return CreatePrimFunc(kFunctionName, {A, B});
}

absl::StatusOr<PrimFunc> BuildReduceSum(const ShapeMap& s, DataType dtype, DataType /*acc*/) {
  Tensor A = Placeholder({s.at("M"), s.at("N")}, dtype, "A");
  Tensor B = RowSum(A, "A_red", /*squared=*/false);
  return CreatePrimFunc(kFunctionName, {A, B});
}

absl::StatusOr<PrimFunc> BuildElementwise(const ShapeMap& s, DataType dtype, DataType /*acc*/) {
  const int64_t m = s.at("M"), n = s.at("N");
  Tensor A = Placeholder({m, n}, dtype, "A");
  Tensor B = Placeholder({m, n}, dtype, "B");
  Tensor C = Compute({m, n},
                     [&](const std::vector<Var>& v) {
                       return Max(A({v[0], v[1]}) * Expr(2) + B({v[0], v[1]}), Expr(0));
                     },
                     "C", {}, {"i", "j"});
  return CreatePrimFunc(kFunctionName, {A, B, C});
}

std::vector<WorkloadParam> Matrix(int64_t m, int64_t n) {
  return {{"M", m, "rows"}, {"N", n, "columns"}};
}

}  // namespace

std::vector<WorkloadDef> NormWorkloads() {
  const std::vector<std::string> f32 = {"float32"};
  return {
      {{"NRM",
        "norm: D[b] = sqrt(sum_ij A[b,i,j]^2)",
        {{"B", 1, "batch"}, {"M", 256, "rows"}, {"N", 256, "columns"}},
        f32},
       BuildNrm},
      {{"SFM", "softmax over the last axis (max, exp, sum, divide: four blocks)", Matrix(256, 256),
        f32},
       BuildSfm},
      {{"LAYER_NORM", "layer norm over the last axis with gamma and beta (eps 1e-5)",
        Matrix(512, 768), f32},
       BuildLayerNorm},
      {{"RMS_NORM", "RMS norm over the last axis with gamma (eps 1e-5)", Matrix(512, 768), f32},
       BuildRmsNorm},
      {{"TRANSPOSE", "matrix transpose B[j,i] = A[i,j]", Matrix(1024, 1024), f32}, BuildTranspose},
      {{"REDUCE_SUM", "row sum B[i] = sum_j A[i,j]", Matrix(1024, 1024), f32}, BuildReduceSum},
      {{"ELEMENTWISE", "C = max(A * 2 + B, 0)", Matrix(1024, 1024), f32}, BuildElementwise},
  };
}

}  // namespace workloads_internal
}  // namespace tessera
