// Matrix-multiply workloads: GMM (batched matmul), LINEAR (matmul by a constant weight), TBG
// (transpose + batched matmul), GEMV and DENSE_BIAS_RELU. The weights of LINEAR and
// DENSE_BIAS_RELU are layout-free (ir/prepack.h): a schedule may pack them once, outside the call.
// float16 and bfloat16 versions compute and accumulate in their dtype (TOPI's default when
// out_dtype equals the input dtype) unless the caller asks for float32 accumulation (the
// operands widened before multiplying and the result in float32, what cuBLAS's
// CUBLAS_COMPUTE_32F with a float32 C computes); int8 GMM and LINEAR widen to int32 before
// multiplying and accumulates in int32.
#include "frontend/compute.h"
#include "frontend/workloads_internal.h"
#include "ir/prepack.h"

namespace tessera {
namespace workloads_internal {
namespace {

absl::StatusOr<PrimFunc> BuildGmm(const ShapeMap& s, DataType dtype, DataType acc) {
  const int64_t b = s.at("B"), m = s.at("M"), n = s.at("N"), k = s.at("K");
  Tensor A = Placeholder({b, m, k}, dtype, "A");
  Tensor B = Placeholder({b, k, n}, dtype, "B");
  IterVar rk = ReduceAxis(k, "k");
  Tensor C = Compute(
      {b, m, n},
      [&](const std::vector<Var>& i) {
        return Sum(Widened(A({i[0], i[1], rk.var}), acc) * Widened(B({i[0], rk.var, i[2]}), acc),
                   {rk});
      },
      "C", {}, {"b", "i", "j"});
  return CreatePrimFunc(kFunctionName, {A, B, C});
}

absl::StatusOr<PrimFunc> BuildLinear(const ShapeMap& s, DataType dtype, DataType acc) {
  const int64_t m = s.at("M"), n = s.at("N"), k = s.at("K");
  Tensor X = Placeholder({m, k}, dtype, "X");
  Tensor W = Placeholder({k, n}, dtype, "W");
  IterVar rk = ReduceAxis(k, "k");
  Tensor Y =
      Compute({m, n},
              [&](const std::vector<Var>& i) {
                return Sum(Widened(X({i[0], rk.var}), acc) * Widened(W({rk.var, i[1]}), acc), {rk});
              },
              "Y", {}, {"i", "j"});
  return WithLayoutFree(CreatePrimFunc(kFunctionName, {X, W, Y}), {1});
}

absl::StatusOr<PrimFunc> BuildTbg(const ShapeMap& s, DataType dtype, DataType acc) {
  const int64_t batch = s.at("batch"), seq = s.at("seq_len"), heads = s.at("n_head"),
                dim = s.at("n_dim");
  Tensor query = Placeholder({batch, seq, heads, dim}, dtype, "query");
  Tensor value = Placeholder({batch, seq, heads, dim}, dtype, "value");
  Tensor query_t = Compute({batch, heads, seq, dim},
                           [&](const std::vector<Var>& i) {
                             return query({i[0], i[2], i[1], i[3]});
                           },
                           "query_T", {}, {"b", "h", "l", "d"});
  Tensor value_t = Compute({batch, heads, dim, seq},
                           [&](const std::vector<Var>& i) {
                             return value({i[0], i[3], i[1], i[2]});
                           },
                           "value_T", {}, {"b", "h", "d", "l"});
  IterVar k = ReduceAxis(dim, "k");
  Tensor C = Compute({batch, heads, seq, seq},
                     [&](const std::vector<Var>& i) {
                       return Sum(Widened(query_t({i[0], i[1], i[2], k.var}), acc) *
                                      Widened(value_t({i[0], i[1], k.var, i[3]}), acc),
                                  {k});
                     },
                     "C", {}, {"b", "h", "i", "j"});
  return CreatePrimFunc(kFunctionName, {query, value, C});
}

absl::StatusOr<PrimFunc> BuildGemv(const ShapeMap& s, DataType dtype, DataType acc) {
  const int64_t m = s.at("M"), k = s.at("K");
  Tensor A = Placeholder({m, k}, dtype, "A");
  Tensor x = Placeholder({k}, dtype, "x");
  IterVar rk = ReduceAxis(k, "k");
  Tensor y =
      Compute({m},
              [&](const std::vector<Var>& i) {
                return Sum(Widened(A({i[0], rk.var}), acc) * Widened(x({rk.var}), acc), {rk});
              },
              "y", {}, {"i"});
  return CreatePrimFunc(kFunctionName, {A, x, y});
}

absl::StatusOr<PrimFunc> BuildDenseBiasRelu(const ShapeMap& s, DataType dtype, DataType acc) {
  const int64_t m = s.at("M"), n = s.at("N"), k = s.at("K");
  Tensor X = Placeholder({m, k}, dtype, "X");
  Tensor W = Placeholder({n, k}, dtype, "W");
  Tensor bias = Placeholder({n}, dtype, "bias");
  IterVar rk = ReduceAxis(k, "k");
  Tensor dense =
      Compute({m, n},
              [&](const std::vector<Var>& i) {
                return Sum(Widened(X({i[0], rk.var}), acc) * Widened(W({i[1], rk.var}), acc), {rk});
              },
              "T_dense", {}, {"i", "j"});
  Tensor add = Compute({m, n},
                       [&](const std::vector<Var>& i) {
                         return dense({i[0], i[1]}) + Widened(bias({i[1]}), acc);
                       },
                       "T_add", {}, {"i", "j"});
  Tensor relu = Compute({m, n},
                        [&](const std::vector<Var>& i) {
                          return Max(add({i[0], i[1]}), Expr(0));
                        },
                        "T_relu", {}, {"i", "j"});
  return WithLayoutFree(CreatePrimFunc(kFunctionName, {X, W, bias, relu}), {1});
}

}  // namespace

absl::StatusOr<PrimFunc> WithLayoutFree(absl::StatusOr<PrimFunc> f, std::vector<int64_t> params) {
  if (!f.ok()) return f;
  return f->WithAttr(kLayoutFreeBuffers, std::move(params));
}

std::vector<WorkloadDef> MatmulWorkloads() {
  return {
      {{"GMM",
        "batched matrix multiply C[b,i,j] = sum_k A[b,i,k] * B[b,k,j]",
        {{"B", 1, "batch"},
         {"M", 512, "rows of A and C"},
         {"N", 512, "columns of B and C"},
         {"K", 512, "reduction length"}},
        {"float32", "float16", "bfloat16", "int8"},
        kFloat32Accumulation},
       BuildGmm},
      {{"LINEAR",
        "a layer's matmul by its weight Y[i,j] = sum_k X[i,k] * W[k,j] (W [K, N] as ONNX MatMul "
        "stores it; constant: tuned kernels may read it packed, outside the timed call)",
        {{"M", 128, "rows of X and Y (tokens)"},
         {"N", 768, "output features"},
         {"K", 768, "input features (reduction length)"}},
        {"float32", "float16", "bfloat16", "int8"},
        kFloat32Accumulation},
       BuildLinear},
      {{"TBG",
        "transpose + batched matmul: C[b,h,i,j] = sum_k query[b,i,h,k] * value[b,j,h,k]",
        {{"batch", 1, "batch"},
         {"seq_len", 128, "sequence length"},
         {"n_head", 12, "attention heads"},
         {"n_dim", 64, "head dimension (reduction length)"}},
        {"float32", "float16", "bfloat16"},
        kFloat32Accumulation},
       BuildTbg},
      {{"GEMV",
        "matrix-vector product y[i] = sum_k A[i,k] * x[k]",
        {{"M", 4096, "rows"}, {"K", 4096, "columns (reduction length)"}},
        {"float32", "float16", "bfloat16"},
        kFloat32Accumulation},
       BuildGemv},
      {{"DENSE_BIAS_RELU",
        "dense layer Y = relu(X W^T + bias), three blocks",
        {{"M", 128, "rows of X (batch)"},
         {"N", 768, "output features"},
         {"K", 768, "input features (reduction length)"}},
        {"float32", "float16", "bfloat16"},
        kFloat32Accumulation},
       BuildDenseBiasRelu},
  };
}

}  // namespace workloads_internal
}  // namespace tessera
