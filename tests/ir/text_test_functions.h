// Hand-built functions for the text printer and parser tests (printer_test.cc, parser_test.cc):
// together they use every dtype, expression kind, statement kind, loop kind and annotation
// value type of the IR, plus the awkward cases (clashing and non-identifier names, float
// specials, extreme integers, non-zero domain minimums).
#ifndef TESSERA_TESTS_IR_TEXT_TEST_FUNCTIONS_H_
#define TESSERA_TESTS_IR_TEXT_TEST_FUNCTIONS_H_

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ir/function.h"
#include "ir/stmt.h"

namespace tessera {
namespace text_test {

inline Range R(Expr min, Expr extent) { return Range{std::move(min), std::move(extent)}; }

// C[i, j] = sum_k A[i, k] * B[k, j] with an init statement.
inline PrimFunc Matmul(int64_t n = 64) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(n), Expr(n)});
  Buffer b = Buffer::Make("B", DataType::Float32(), {Expr(n), Expr(n)});
  Buffer c = Buffer::Make("C", DataType::Float32(), {Expr(n), Expr(n)});
  Var i("i"), j("j"), k("k"), vi("vi"), vj("vj"), vk("vk");
  BlockNode node;
  node.name = "C";
  node.iter_vars = {{vi, R(0, n), IterKind::kSpatial},
                    {vj, R(0, n), IterKind::kSpatial},
                    {vk, R(0, n), IterKind::kReduction}};
  node.reads = {{a, {R(vi, 1), R(vk, 1)}}, {b, {R(vk, 1), R(vj, 1)}}};
  node.writes = {{c, {R(vi, 1), R(vj, 1)}}};
  node.init = BufferStore(c, FloatImm(DataType::Float32(), 0.0), {vi, vj});
  node.body = BufferStore(c, c.Load({vi, vj}) + a.Load({vi, vk}) * b.Load({vk, vj}), {vi, vj});
  Stmt block = BlockRealize({i, j, k}, True(), MakeBlock(node));
  Stmt loops =
      For(i, n, ForKind::kSerial, For(j, n, ForKind::kSerial, For(k, n, ForKind::kSerial, block)));
  BlockNode root;
  root.name = "root";
  root.body = loops;
  return PrimFunc::Make("matmul", {a, b, c}, BlockRealize({}, True(), MakeBlock(root)),
                        {{"global_symbol", std::string("matmul")}});
}

// B[v] = A[v] * 2 + 1 over 100 elements, split into 4 x 32 loops with a predicate.
inline PrimFunc SplitWithPredicate() {
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(100)});
  Buffer b = Buffer::Make("B", DataType::Float32(), {Expr(100)});
  Var i0("i_0"), i1("i_1"), v("v");
  Expr fused = i0 * 32 + i1;
  BlockNode node;
  node.name = "B";
  node.iter_vars = {{v, R(0, 100), IterKind::kSpatial}};
  node.reads = {{a, {R(v, 1)}}};
  node.writes = {{b, {R(v, 1)}}};
  node.body = BufferStore(b, a.Load({v}) * 2 + 1, {v});
  Stmt block = BlockRealize({fused}, LT(fused, 100), MakeBlock(node));
  Stmt loops = For(i0, 4, ForKind::kSerial, For(i1, 32, ForKind::kVectorized, block), "",
                   {{"pragma_auto_unroll_max_step", int64_t{16}}});
  BlockNode root;
  root.name = "root";
  root.body = loops;
  return PrimFunc::Make("split", {a, b}, BlockRealize({}, True(), MakeBlock(root)));
}

// Elementwise float16 function bound to GPU threads, with exp, select and casts.
inline PrimFunc ThreadBoundElementwise() {
  Buffer a = Buffer::Make("A", DataType::Float16(), {Expr(1024)});
  Buffer b = Buffer::Make("B", DataType::Float16(), {Expr(1024)});
  Var bx("bx"), tx("tx"), v("v");
  BlockNode node;
  node.name = "B";
  node.iter_vars = {{v, R(0, 1024), IterKind::kSpatial}};
  node.reads = {{a, {R(v, 1)}}};
  node.writes = {{b, {R(v, 1)}}};
  Expr x = Cast(DataType::Float32(), a.Load({v}));
  Expr y = Select(GT(x, FloatImm(DataType::Float32(), 0.0)), Call(CallOp::kExp, {x}),
                  x * FloatImm(DataType::Float32(), 0.5));
  node.body = BufferStore(b, Cast(DataType::Float16(), y), {v});
  Stmt block = BlockRealize({bx * 128 + tx}, True(), MakeBlock(node));
  Stmt loops = For(bx, 8, ForKind::kThreadBinding,
                   For(tx, 128, ForKind::kThreadBinding, block, "threadIdx.x"), "blockIdx.x");
  BlockNode root;
  root.name = "root";
  root.body = loops;
  return PrimFunc::Make("elementwise", {a, b}, BlockRealize({}, True(), MakeBlock(root)),
                        {{"tessera.scheduled", int64_t{1}}});
}

// A block copying a tile into a shared-scope buffer it allocates, then computing from it.
inline PrimFunc SharedAlloc() {
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(64), Expr(64)});
  Buffer b = Buffer::Make("B", DataType::Float32(), {Expr(64), Expr(64)});
  Buffer shared = Buffer::Make("A.shared", DataType::Float32(), {Expr(64), Expr(64)}, "shared")
                      .WithStrides({Expr(65), Expr(1)});
  Var i("i"), j("j"), vi("vi"), vj("vj"), i2("i"), j2("j"), wi("vi"), wj("vj");
  BlockNode copy;
  copy.name = "A.shared";
  copy.iter_vars = {{vi, R(0, 64), IterKind::kSpatial}, {vj, R(0, 64), IterKind::kSpatial}};
  copy.reads = {{a, {R(vi, 1), R(vj, 1)}}};
  copy.writes = {{shared, {R(vi, 1), R(vj, 1)}}};
  copy.body = BufferStore(shared, a.Load({vi, vj}), {vi, vj});
  BlockNode compute;
  compute.name = "B";
  compute.iter_vars = {{wi, R(0, 64), IterKind::kSpatial}, {wj, R(0, 64), IterKind::kSpatial}};
  compute.reads = {{shared, {R(wi, 1), R(0, 64)}}};
  compute.writes = {{b, {R(wi, 1), R(wj, 1)}}};
  compute.body = BufferStore(b, shared.Load({wi, wj}) + shared.Load({wi, 63 - wj}), {wi, wj});
  Stmt s1 = For(i, 64, ForKind::kSerial,
                For(j, 64, ForKind::kSerial, BlockRealize({i, j}, True(), MakeBlock(copy))));
  Stmt s2 = For(i2, 64, ForKind::kParallel,
                For(j2, 64, ForKind::kSerial, BlockRealize({i2, j2}, True(), MakeBlock(compute))));
  BlockNode root;
  root.name = "root";
  root.alloc_buffers = {shared};
  root.body = SeqStmt({s1, s2});
  return PrimFunc::Make("shared_alloc", {a, b}, BlockRealize({}, True(), MakeBlock(root)));
}

// Every remaining construct: all dtypes and expression kinds, if/else, evaluate, allocate,
// unrolled loops, an int32 loop variable, a non-zero domain minimum, sliced regions, a 0-d
// buffer, all annotation value types, clashing and non-identifier names, float specials.
inline PrimFunc Everything() {
  Buffer x = Buffer::Make("A", DataType::Float32(), {Expr(16), Expr(8)});
  Buffer x2 = Buffer::Make("A", DataType::Float64(), {Expr(16)});  // same name as x
  Buffer h = Buffer::Make("1half", DataType::Float16(), {Expr(16)});
  Buffer bf = Buffer::Make("bf", DataType::BFloat16(), {Expr(16)});
  Buffer i8 = Buffer::Make("for", DataType::Int8(), {Expr(16)});
  Buffer i32 = Buffer::Make("i32", DataType::Int32(), {Expr(16)});
  Buffer u8 = Buffer::Make("u8", DataType::UInt8(), {Expr(16)});
  Buffer flag = Buffer::Make("flag", DataType::Bool(), {Expr(16)});
  Buffer scalar = Buffer::Make("s", DataType::Int64(), {}, "local");
  Var i("i"), i_other("i"), k("k", DataType::Int32()), vi("v.i"), vr("vr"), u("u");
  const DataType f32 = DataType::Float32();

  std::vector<Stmt> body;
  // Arithmetic and precedence.
  Expr xi = x.Load({i, Expr(0)});
  body.push_back(
      BufferStore(x, Div((xi + FloatImm(f32, 1.5)) * (xi - xi), xi * xi + xi) - (xi - (xi - xi)),
                  {i, FloorMod(i * 3 + 1, 8)}));
  body.push_back(BufferStore(x2,
                             Cast(DataType::Float64(), xi) + FloatImm(DataType::Float64(), -0.0),
                             {FloorDiv(i, 2) + Min(i, 3) - Max(i, -7)}));
  body.push_back(
      BufferStore(h, Call(CallOp::kPow, {h.Load({i}), FloatImm(DataType::Float16(), 2.0)}), {i}));
  body.push_back(BufferStore(bf, Call(CallOp::kSqrt, {bf.Load({i})}), {i}));
  body.push_back(BufferStore(i8, IntImm(DataType::Int8(), -128), {i}));
  body.push_back(BufferStore(
      i32, Cast(DataType::Int32(), Expr(std::numeric_limits<int64_t>::min()) + i), {i}));
  body.push_back(BufferStore(u8, IntImm(DataType::UInt8(), 255), {i}));
  Expr cmp = And(Or(LT(i, 3), GE(i, 10)), Not(EQ(FloorMod(i, 2), 0)));
  body.push_back(BufferStore(flag, Or(cmp, And(NE(i, 4), Not(flag.Load({i})))), {i}));
  body.push_back(BufferStore(flag, EQ(LT(i, 2), LE(i, 5)), {i}));
  body.push_back(BufferStore(flag, IntImm(DataType::Bool(), 2), {i}));
  body.push_back(BufferStore(scalar, Cast(DataType::Int64(), Expr(7)) * -3 - (0 - i), {}));
  // Float specials.
  body.push_back(Evaluate(FloatImm(f32, std::numeric_limits<double>::infinity())));
  body.push_back(Evaluate(FloatImm(f32, -std::numeric_limits<double>::infinity())));
  body.push_back(Evaluate(FloatImm(f32, std::numeric_limits<float>::max())));
  body.push_back(Evaluate(FloatImm(DataType::Float64(), std::numeric_limits<double>::max())));
  body.push_back(
      Evaluate(FloatImm(DataType::Float64(), std::numeric_limits<double>::denorm_min())));
  body.push_back(Evaluate(FloatImm(f32, 0.1f)));
  body.push_back(Evaluate(FloatImm(DataType::Float64(), 0.1)));
  body.push_back(Evaluate(Cast(f32, FloatImm(DataType::Float64(), 1e300))));
  body.push_back(Evaluate(Cast(DataType::Int32(), IntImm(DataType::Int64(), -5))));
  body.push_back(Evaluate(Cast(f32, IntImm(DataType::Bool(), 1))));
  for (CallOp op : {CallOp::kExp, CallOp::kLog, CallOp::kRsqrt, CallOp::kTanh, CallOp::kErf,
                    CallOp::kAbs, CallOp::kSigmoid, CallOp::kFloor, CallOp::kCeil}) {
    body.push_back(Evaluate(Call(op, {x.Load({i, 1})})));
  }
  body.push_back(Evaluate(CallExtern(
      DataType::Int32(), "__dp4a", {i32.Load({i}), i32.Load({i}), IntImm(DataType::Int32(), 0)})));
  body.push_back(Evaluate(CallExtern(DataType::Float32(), "wmma::fill \"x\"", {})));
  Stmt branches = IfThenElse(LT(i, 8), SeqStmt(body), IfThenElse(EQ(i, 9), Evaluate(Expr(0))));

  // A second loop reusing the name `i` for a different variable, an int32 loop variable,
  // an allocate, and a block with a non-zero domain minimum and sliced regions.
  Buffer tmp = Buffer::Make("tmp", DataType::Float32(), {Expr(4)}, "local");
  BlockNode blk;
  blk.name = "weird \"name\"";
  blk.iter_vars = {{vi, R(2, 12), IterKind::kSpatial}, {vr, R(u, 8), IterKind::kReduction}};
  blk.reads = {{x, {R(vi, 2), R(0, 8)}}, {x2, {R(vi * 2, vr + 1)}}, {scalar, {}}};
  blk.writes = {{tmp, {R(0, 4)}}};
  blk.init = BufferStore(tmp, Expr(0), {Expr(0)});
  blk.body = BufferStore(tmp, tmp.Load({Expr(0)}) + x.Load({vi, vr}), {Expr(0)});
  blk.annotations = {{"int", int64_t{-3}},
                     {"double", 2.5},
                     {"whole_double", 4.0},
                     {"string", std::string("a\tb\n\"c\"\\")},
                     {"expr", Expr(i_other * 2)},
                     {"ints", std::vector<int64_t>{1, -2, 3}},
                     {"empty_ints", std::vector<int64_t>{}}};
  blk.alloc_buffers = {Buffer::Make("local_acc", DataType::Float32(), {Expr(2)}, "local")};
  Stmt inner =
      BlockRealize({i_other + 2, Cast(DataType::Int64(), k)}, NE(i_other, 5), MakeBlock(blk));
  Stmt second =
      For(i_other, 10, ForKind::kUnrolled,
          For(u, 3, ForKind::kSerial,
              For(k, IntImm(DataType::Int32(), 8), ForKind::kParallel, Allocate(tmp, inner))));
  BlockNode root;
  root.name = "root";
  root.alloc_buffers = {scalar};
  root.annotations = {{"root_note", std::string("x")}};
  root.body = SeqStmt({For(i, 16, ForKind::kSerial, branches), second, SeqStmt({})});
  return PrimFunc::Make("every.thing", {x, x2, h, bf, i8, i32, u8, flag},
                        BlockRealize({}, True(), MakeBlock(root)),
                        {{"global_symbol", std::string("every.thing")},
                         {"ratio", 0.25},
                         {"tiles", std::vector<int64_t>{4, 8}}});
}

// All hand-built functions by name.
inline std::map<std::string, PrimFunc> HandBuiltFunctions() {
  return {{"matmul", Matmul()},
          {"split", SplitWithPredicate()},
          {"elementwise", ThreadBoundElementwise()},
          {"shared_alloc", SharedAlloc()},
          {"everything", Everything()}};
}

}  // namespace text_test
}  // namespace tessera

#endif  // TESSERA_TESTS_IR_TEXT_TEST_FUNCTIONS_H_
