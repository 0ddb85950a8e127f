// Hand-built PrimFuncs shared by the codegen and worker tests, in the form the compute DSL
// produces (root block, one block per computation, iter vars bound to loop variables).
#ifndef TESSERA_TESTS_CODEGEN_TEST_FUNCS_H_
#define TESSERA_TESTS_CODEGEN_TEST_FUNCS_H_

#include <string>
#include <utility>
#include <vector>

#include "ir/function.h"
#include "ir/stmt.h"

namespace tessera {
namespace testing_funcs {

// Wraps `body` in the root block, allocating `allocs`.
inline PrimFunc MakeFunc(const std::string& name, std::vector<Buffer> params, Stmt body,
                         std::vector<Buffer> allocs = {}) {
  BlockNode root;
  root.name = "root";
  root.body = std::move(body);
  root.alloc_buffers = std::move(allocs);
  return PrimFunc::Make(name, std::move(params), BlockRealize({}, True(), MakeBlock(root)));
}

// A block with spatial iter vars bound to `loops` (one per dimension of `out`) that stores
// value_fn(iter vars) into out[iter vars], wrapped in loops of the given kinds.
template <typename ValueFn>
Stmt ElementwiseNest(const std::string& block_name, const Buffer& out,
                     const std::vector<ForKind>& kinds, ValueFn value_fn,
                     std::vector<Buffer> block_allocs = {}) {
  std::vector<Var> loops, iters;
  BlockNode block;
  block.name = block_name;
  std::vector<Expr> bindings, indices;
  for (int d = 0; d < out.ndim(); ++d) {
    std::string axis = std::string(1, static_cast<char>('i' + d));
    loops.push_back(Var(axis));
    iters.push_back(Var("v" + axis));
    block.iter_vars.push_back(
        IterVar{iters.back(), Range{Expr(0), out.shape()[d]}, IterKind::kSpatial});
    bindings.push_back(loops.back());
    indices.push_back(iters.back());
  }
  block.writes.push_back(BufferRegion::Full(out));
  block.alloc_buffers = std::move(block_allocs);
  block.body = BufferStore(out, value_fn(iters), indices);
  Stmt s = BlockRealize(bindings, True(), MakeBlock(block));
  for (int d = out.ndim() - 1; d >= 0; --d) {
    ForKind kind = d < static_cast<int>(kinds.size()) ? kinds[d] : ForKind::kSerial;
    s = For(loops[d], out.shape()[d], kind, s);
  }
  return s;
}

// A[i] = float(i) over `n` elements, and the same loop bound to threadIdx.x, which the C
// builder must refuse: {good, bound}.
inline std::pair<PrimFunc, PrimFunc> ElementwiseAndThreadBound(int64_t n) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {n});
  Stmt s = ElementwiseNest(
      "A", a, {}, [&](const std::vector<Var>& v) { return Cast(DataType::Float32(), v[0]); });
  const auto* loop = s.as<ForNode>();
  PrimFunc bound = MakeFunc(
      "bound", {a},
      For(loop->loop_var, loop->extent, ForKind::kThreadBinding, loop->body, "threadIdx.x"));
  return {MakeFunc("good", {a}, s), bound};
}

// C[M, N] (+)= A[M, K] * B[K, N] with init, loops i, j, k of the given kinds. `in`/`acc` are
// the input and accumulator dtypes (inputs are cast to the accumulator type).
inline PrimFunc Matmul(int64_t m, int64_t n, int64_t k, DataType in = DataType::Float32(),
                       DataType acc = DataType::Float32(),
                       std::vector<ForKind> kinds = {ForKind::kSerial, ForKind::kSerial,
                                                     ForKind::kSerial},
                       Annotations i_annotations = {}) {
  Buffer a = Buffer::Make("A", in, {m, k});
  Buffer b = Buffer::Make("B", in, {k, n});
  Buffer c = Buffer::Make("C", acc, {m, n});
  Var i("i"), j("j"), r("k");
  Var vi("vi"), vj("vj"), vk("vk");
  BlockNode block;
  block.name = "C";
  block.iter_vars = {IterVar{vi, Range{Expr(0), Expr(m)}, IterKind::kSpatial},
                     IterVar{vj, Range{Expr(0), Expr(n)}, IterKind::kSpatial},
                     IterVar{vk, Range{Expr(0), Expr(k)}, IterKind::kReduction}};
  block.reads = {BufferRegion::Full(a), BufferRegion::Full(b)};
  block.writes = {BufferRegion::Full(c)};
  block.init = BufferStore(c, MakeConst(acc, 0), {vi, vj});
  Expr lhs = a.Load({vi, vk}), rhs = b.Load({vk, vj});
  if (in != acc) {
    lhs = Cast(acc, lhs);
    rhs = Cast(acc, rhs);
  }
  block.body = BufferStore(c, c.Load({vi, vj}) + lhs * rhs, {vi, vj});
  Stmt s = BlockRealize({i, j, r}, True(), MakeBlock(block));
  s = For(r, Expr(k), kinds[2], s);
  s = For(j, Expr(n), kinds[1], s);
  s = For(i, Expr(m), kinds[0], s, "", i_annotations);
  return MakeFunc("matmul", {a, b, c}, s);
}

// B[j, i] = A[i, j] * 2 + floordiv(i - 3, 2) for float32 A[m, n], B[n, m], with i and j fused
// and the fused loop split by `inner` (which must divide m * n): loops fo, fi with
// i = floordiv(fo * inner + fi, n), j = floormod(fo * inner + fi, n). The index math divides
// non-negative values; the value's floordiv has a dividend that can be negative.
inline PrimFunc FusedSplitTranspose(int64_t m, int64_t n, int64_t inner) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {m, n});
  Buffer b = Buffer::Make("B", DataType::Float32(), {n, m});
  Var fo("fo"), fi("fi"), vi("vi"), vj("vj");
  Expr fused = fo * inner + fi;
  BlockNode block;
  block.name = "B";
  block.iter_vars = {IterVar{vi, Range{Expr(0), Expr(m)}, IterKind::kSpatial},
                     IterVar{vj, Range{Expr(0), Expr(n)}, IterKind::kSpatial}};
  block.reads = {BufferRegion::Full(a)};
  block.writes = {BufferRegion::Full(b)};
  block.body = BufferStore(
      b, a.Load({vi, vj}) * 2 + Cast(DataType::Float32(), FloorDiv(vi - 3, Expr(2))), {vj, vi});
  Stmt s = BlockRealize({FloorDiv(fused, Expr(n)), FloorMod(fused, Expr(n))}, True(),
                        MakeBlock(block));
  s = For(fi, Expr(inner), ForKind::kSerial, s);
  s = For(fo, Expr(m * n / inner), ForKind::kSerial, s);
  return MakeFunc("fused_split_transpose", {a, b}, s);
}

}  // namespace testing_funcs
}  // namespace tessera

#endif  // TESSERA_TESTS_CODEGEN_TEST_FUNCS_H_
