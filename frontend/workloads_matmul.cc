// Matrix-multiply workloads: GMM (batched matmul), LINEAR (matmul by a constant weight), TBG
// (transpose + batched matmul), GEMV and DENSE_BIAS_RELU. The weights of LINEAR and
// DENSE_BIAS_RELU are layout-free (ir/prepack.h): a schedule may pack them once, outside the call.
// float16 versions compute and accumulate in float16 (TOPI's default when out_dtype equals the
// input dtype); int8 GMM widens to int32 before multiplying and accumulates in int32.
#include "frontend/compute.h"
#include "frontend/workloads_internal.h"
#include "ir/prepack.h"

namespace tessera {
namespace workloads_internal {
namespace {

absl::StatusOr<PrimFunc> BuildGmm(const ShapeMap& s, DataType dtype) {
  const int64_t b = s.at("B"), m = s.at("M"), n = s.at("N"), k = s.at("K");
  const DataType acc = dtype.is_int() ? DataType::Int32() : dtype;
  Tensor A = Placeholder({b, m, k}, dtype, "A");
  Tensor B = Placeholder({b, k, n}, dtype, "B");
  IterVar rk = ReduceAxis(k, "k");
  Tensor C = Compute({b, m, n},
                     [&](const std::vector<Var>& i) {
                       Expr x = A({i[0], i[1], rk.var}), y = B({i[0], rk.var, i[2]});
                       if (acc != dtype) {
                         x = Cast(acc, x);
                         y = Cast(acc, y);
                       }
                       return Sum(x * y, {rk});
                     },
                     "C", {}, {"b", "i", "j"});
  return CreatePrimFunc(kFunctionName, {A, B, C});
}

absl::StatusOr<PrimFunc> BuildLinear(const ShapeMap& s, DataType dtype) {
  const int64_t m = s.at("M"), n = s.at("N"), k = s.at("K");
  Tensor X = Placeholder({m, k}, dtype, "X");
  Tensor W = Placeholder({k, n}, dtype, "W");
  IterVar rk = ReduceAxis(k, "k");
  Tensor Y = Compute({m, n},
                     [&](const std::vector<Var>& i) {
                       return Sum(X({i[0], rk.var}) * W({rk.var, i[1]}), {rk});
                     },
                     "Y", {}, {"i", "j"});
  return WithLayoutFree(CreatePrimFunc(kFunctionName, {X, W, Y}), {1});
}

absl::StatusOr<PrimFunc> BuildTbg(const ShapeMap& s, DataType dtype) {
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
  Tensor C = Compute(
      {batch, heads, seq, seq},
      [&](const std::vector<Var>& i) {
        return Sum(query_t({i[0], i[1], i[2], k.var}) * value_t({i[0], i[1], k.var, i[3]}), {k});
      },
      "C", {}, {"b", "h", "i", "j"});
  return CreatePrimFunc(kFunctionName, {query, value, C});
}

absl::StatusOr<PrimFunc> BuildGemv(const ShapeMap& s, DataType dtype) {
  const int64_t m = s.at("M"), k = s.at("K");
  Tensor A = Placeholder({m, k}, dtype, "A");
  Tensor x = Placeholder({k}, dtype, "x");
  IterVar rk = ReduceAxis(k, "k");
  Tensor y = Compute({m},
                     [&](const std::vector<Var>& i) {
                       return Sum(A({i[0], rk.var}) * x({rk.var}), {rk});
                     },
                     "y", {}, {"i"});
  return CreatePrimFunc(kFunctionName, {A, x, y});
}

absl::StatusOr<PrimFunc> BuildDenseBiasRelu(const ShapeMap& s, DataType dtype) {
  const int64_t m = s.at("M"), n = s.at("N"), k = s.at("K");
  Tensor X = Placeholder({m, k}, dtype, "X");
  Tensor W = Placeholder({n, k}, dtype, "W");
  Tensor bias = Placeholder({n}, dtype, "bias");
  IterVar rk = ReduceAxis(k, "k");
  Tensor dense = Compute({m, n},
                         [&](const std::vector<Var>& i) {
                           return Sum(X({i[0], rk.var}) * W({i[1], rk.var}), {rk});
                         },
                         "T_dense", {}, {"i", "j"});
  Tensor add = Compute({m, n},
                       [&](const std::vector<Var>& i) {
                         return dense({i[0], i[1]}) + bias({i[1]});
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
        {"float32", "float16", "int8"}},
       BuildGmm},
      {{"LINEAR",
        "a layer's matmul by its weight Y[i,j] = sum_k X[i,k] * W[k,j] (W [K, N] as ONNX MatMul "
        "stores it; constant: tuned kernels may read it packed, outside the timed call)",
        {{"M", 128, "rows of X and Y (tokens)"},
         {"N", 768, "output features"},
         {"K", 768, "input features (reduction length)"}},
        {"float32", "float16"}},
       BuildLinear},
      {{"TBG",
        "transpose + batched matmul: C[b,h,i,j] = sum_k query[b,i,h,k] * value[b,j,h,k]",
        {{"batch", 1, "batch"},
         {"seq_len", 128, "sequence length"},
         {"n_head", 12, "attention heads"},
         {"n_dim", 64, "head dimension (reduction length)"}},
        {"float32", "float16"}},
       BuildTbg},
      {{"GEMV",
        "matrix-vector product y[i] = sum_k A[i,k] * x[k]",
        {{"M", 4096, "rows"}, {"K", 4096, "columns (reduction length)"}},
        {"float32", "float16"}},
       BuildGemv},
      {{"DENSE_BIAS_RELU",
        "dense layer Y = relu(X W^T + bias), three blocks",
        {{"M", 128, "rows of X (batch)"},
         {"N", 768, "output features"},
         {"K", 768, "input features (reduction length)"}},
        {"float32", "float16"}},
       BuildDenseBiasRelu},
  };
}

}  // namespace workloads_internal
}  // namespace tessera
