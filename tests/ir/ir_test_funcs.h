// Small functions built by hand for the serialization, structural and verifier tests: a
// matmul with an init statement and a reduction iteration variable, a two-block elementwise
// chain with an intermediate, and a tiled, thread-bound nest with a predicate, annotations of
// every type and most expression kinds. Every name takes a prefix, so tests can rebuild a
// function under other names; the tiled builder has knobs for the tests that change one thing.
#ifndef TESSERA_TESTS_IR_IR_TEST_FUNCS_H_
#define TESSERA_TESTS_IR_IR_TEST_FUNCS_H_

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ir/function.h"
#include "ir/stmt.h"

namespace tessera {
namespace testing {

// A BlockRealize of a fresh block.
inline Stmt Realize(std::vector<Expr> values, Expr predicate, const BlockNode& node) {
  return BlockRealize(std::move(values), std::move(predicate), MakeBlock(node));
}

inline Stmt RootRealize(Stmt body, std::vector<Buffer> allocs = {}) {
  BlockNode root;
  root.name = "root";
  root.body = std::move(body);
  root.alloc_buffers = std::move(allocs);
  return Realize({}, True(), root);
}

// C[i, j] = sum_k A[i, k] * B[k, j], with C initialized to 0 in the block's init.
inline PrimFunc Matmul(const std::string& p = "", int64_t m = 16, int64_t n = 8, int64_t k = 4) {
  DataType f32 = DataType::Float32();
  Buffer a = Buffer::Make(p + "A", f32, {m, k});
  Buffer b = Buffer::Make(p + "B", f32, {k, n});
  Buffer c = Buffer::Make(p + "C", f32, {m, n});
  Var i(p + "i"), j(p + "j"), r(p + "k");
  Var vi(p + "vi"), vj(p + "vj"), vk(p + "vk");
  BlockNode block;
  block.name = "C";
  block.iter_vars = {{vi, Range{0, m}, IterKind::kSpatial},
                     {vj, Range{0, n}, IterKind::kSpatial},
                     {vk, Range{0, k}, IterKind::kReduction}};
  block.reads = {BufferRegion{a, {Range{vi, 1}, Range{vk, 1}}},
                 BufferRegion{b, {Range{vk, 1}, Range{vj, 1}}}};
  block.writes = {BufferRegion{c, {Range{vi, 1}, Range{vj, 1}}}};
  block.init = BufferStore(c, FloatImm(f32, 0.0), {vi, vj});
  block.body = BufferStore(c, c.Load({vi, vj}) + a.Load({vi, vk}) * b.Load({vk, vj}), {vi, vj});
  Stmt nest = For(
      i, m, ForKind::kSerial,
      For(j, n, ForKind::kSerial, For(r, k, ForKind::kSerial, Realize({i, j, r}, True(), block))));
  return PrimFunc::Make(p + "matmul", {a, b, c}, RootRealize(nest),
                        {{"global_symbol", std::string(p + "matmul")}});
}

// T = A + 1 (an intermediate allocated by the root block); B = max(T, 0) as float16.
inline PrimFunc Elementwise(const std::string& p = "", int64_t n = 32) {
  DataType f32 = DataType::Float32();
  Buffer a = Buffer::Make(p + "A", f32, {n, n});
  Buffer t = Buffer::Make(p + "T", f32, {n, n}, "local");
  Buffer b = Buffer::Make(p + "B", DataType::Float16(), {n, n});
  auto stage = [&](const std::string& name, const Buffer& in, const Buffer& out, bool relu) {
    Var i(p + name + "_i"), j(p + name + "_j"), vi(p + "vi"), vj(p + "vj");
    BlockNode block;
    block.name = name;
    block.iter_vars = {{vi, Range{0, n}, IterKind::kSpatial},
                       {vj, Range{0, n}, IterKind::kSpatial}};
    block.reads = {BufferRegion{in, {Range{vi, 1}, Range{vj, 1}}}};
    block.writes = {BufferRegion{out, {Range{vi, 1}, Range{vj, 1}}}};
    Expr value = relu ? Cast(out.dtype(), Max(in.Load({vi, vj}), 0)) : in.Load({vi, vj}) + 1;
    block.body = BufferStore(out, value, {vi, vj});
    return For(i, n, ForKind::kParallel,
               For(j, n, ForKind::kVectorized, Realize({i, j}, True(), block)));
  };
  Stmt body = SeqStmt({stage("T", a, t, false), stage("B", t, b, true)});
  return PrimFunc::Make(p + "elementwise", {a, b}, RootRealize(body, {t}));
}

struct TiledOptions {
  std::string prefix;
  int64_t n = 100;  // rows of X and Y (over-covered by 4 * inner)
  DataType dtype = DataType::Float32();
  std::string scope = "shared";     // of the intermediate S
  int64_t inner = 32;               // extent of the thread loop
  int64_t offset = 0;               // added to one load index
  std::string tag = "threadIdx.x";  // of the inner thread loop
  int64_t unroll = 16;              // a loop annotation value
  std::string block_name = "Y";
  double scale = 0.5;  // a float immediate
};

// for bx in blockIdx.x(4): for tx in threadIdx.x(inner): for j in unroll(m):
//   block S (predicate bx*inner+tx < n): S[v, j] = X[v, j] * scale  (intermediate)
//   block Y: Y[v, j] = select(!(S[v, j] < 0), pow(S, 2), -0.0) with an if/evaluate
inline PrimFunc Tiled(const TiledOptions& o = {}) {
  const std::string& p = o.prefix;
  DataType dt = o.dtype;
  Var m(p + "m");  // symbolic column count
  Buffer x = Buffer::Make(p + "X", dt, {o.n, m}).WithStrides({m, 1});
  Buffer y = Buffer::Make(p + "Y", dt, {o.n, m});
  Buffer s = Buffer::Make(p + "S", dt, {o.n, m}, o.scope);
  Var bx(p + "bx"), tx(p + "tx"), j(p + "j");
  Expr row = bx * o.inner + tx;
  Expr predicate = LT(row, o.n);

  Var sv(p + "sv"), sj(p + "sj");
  BlockNode sblock;
  sblock.name = "S";
  sblock.iter_vars = {{sv, Range{0, o.n}, IterKind::kSpatial},
                      {sj, Range{0, m}, IterKind::kSpatial}};
  sblock.reads = {BufferRegion{x, {Range{sv + o.offset, 1}, Range{sj, 1}}}};
  sblock.writes = {BufferRegion{s, {Range{sv, 1}, Range{sj, 1}}}};
  sblock.body = BufferStore(s, x.Load({sv + o.offset, sj}) * FloatImm(dt, o.scale), {sv, sj});
  sblock.annotations = {{"meta_int", int64_t{7}},
                        {"meta_float", std::numeric_limits<double>::infinity()},
                        {"meta_str", std::string("hello")},
                        {"meta_expr", Expr(m * 2)},
                        {"meta_ints", std::vector<int64_t>{1, -2, 3}}};

  Var yv(p + "yv"), yj(p + "yj");
  BlockNode yblock;
  yblock.name = o.block_name;
  yblock.iter_vars = {{yv, Range{0, o.n}, IterKind::kSpatial},
                      {yj, Range{0, m}, IterKind::kSpatial}};
  yblock.reads = {BufferRegion{s, {Range{yv, 1}, Range{yj, 1}}}};
  yblock.writes = {BufferRegion{y, {Range{yv, 1}, Range{yj, 1}}}};
  Expr sval = s.Load({yv, yj});
  Expr value = Select(Not(LT(sval, FloatImm(dt, 0))), Call(CallOp::kPow, {sval, FloatImm(dt, 2)}),
                      FloatImm(dt, -0.0));
  yblock.body = IfThenElse(
      And(GE(yj, 0), NE(Cast(DataType::Int32(), yj), IntImm(DataType::Int32(), -1))),
      BufferStore(y, value, {yv, yj}), Evaluate(FloorMod(FloorDiv(yv, 3), Min(yj + 1, 7))));

  Stmt inner =
      SeqStmt({Realize({row, j}, predicate, sblock), Realize({row, j}, predicate, yblock)});
  Stmt nest =
      For(bx, 4, ForKind::kThreadBinding,
          For(tx, o.inner, ForKind::kThreadBinding,
              For(j, m, ForKind::kUnrolled, inner, "", {{"pragma_auto_unroll_max_step", o.unroll}}),
              o.tag),
          "blockIdx.x");
  return PrimFunc::Make(p + "tiled", {x, y}, RootRealize(nest, {s}),
                        {{"tessera.scheduled", int64_t{1}}});
}

// An opaque extern call (a tensor intrinsic) evaluated in the root block.
inline PrimFunc ExternCall(const std::string& p = "") {
  Buffer a = Buffer::Make(p + "A", DataType::Int8(), {4});
  Stmt body = Evaluate(CallExtern(DataType::Int32(), "__dp4a", {a.Load({0}), Expr(1), Expr(2)}));
  return PrimFunc::Make(p + "extern_call", {a}, RootRealize(body));
}

// Every hand-built function, for tests that loop.
inline std::vector<PrimFunc> HandBuiltFunctions() { return {Matmul(), Elementwise(), Tiled(), ExternCall()}; }

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_IR_IR_TEST_FUNCS_H_
