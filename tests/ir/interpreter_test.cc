#include "ir/interpreter.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "base/random.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

// ---- Hand-built IR helpers -------------------------------------------------------------

IterVar Spatial(const std::string& name, int64_t extent) {
  return IterVar{Var(name), Range{Expr(0), Expr(extent)}, IterKind::kSpatial};
}

// A block realize with the given iteration variables bound to `values`.
Stmt MakeBlockRealize(const std::string& name, std::vector<IterVar> iters, std::vector<Expr> values,
                      Stmt body, Expr predicate = True(), std::vector<Buffer> allocs = {},
                      Stmt init = Stmt()) {
  BlockNode node;
  node.name = name;
  node.iter_vars = std::move(iters);
  node.body = std::move(body);
  node.init = std::move(init);
  node.alloc_buffers = std::move(allocs);
  return BlockRealize(std::move(values), std::move(predicate), MakeBlock(node));
}

PrimFunc MakeFunc(std::vector<Buffer> params, Stmt body, std::vector<Buffer> root_allocs = {}) {
  return PrimFunc::Make(
      "main", std::move(params),
      MakeBlockRealize("root", {}, {}, std::move(body), True(), std::move(root_allocs)));
}

// for i in range(n): block "B": B[vi] = A[vi] * 2 with float32 buffers of `n` elements.
PrimFunc Scale(int64_t n, int64_t load_offset = 0) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(n)});
  Buffer b = Buffer::Make("B", DataType::Float32(), {Expr(n)});
  Var i("i");
  IterVar vi = Spatial("vi", n);
  Stmt store = BufferStore(b, a.Load({vi.var + Expr(load_offset)}) * Expr(2), {vi.var});
  Stmt loop = For(i, Expr(n), ForKind::kSerial, MakeBlockRealize("B", {vi}, {i}, store));
  return MakeFunc({a, b}, loop);
}

NDArray RandomArray(DataType dtype, std::vector<int64_t> shape, uint64_t seed) {
  NDArray a = NDArray::Empty(dtype, std::move(shape));
  Random rng(seed);
  a.FillRandom(&rng);
  return a;
}

// ---- Workloads through the interpreter -----------------------------------------------

TEST(InterpreterTest, GmmMatchesNaiveLoop) {
  const int64_t n = 256;
  absl::StatusOr<PrimFunc> f = MakeWorkload("GMM", {{"M", n}, {"N", n}, {"K", n}});
  ASSERT_TRUE(f.ok()) << f.status();
  NDArray a = RandomArray(DataType::Float32(), {1, n, n}, 1);
  NDArray b = RandomArray(DataType::Float32(), {1, n, n}, 2);
  NDArray c = RandomArray(DataType::Float32(), {1, n, n}, 3);  // garbage: init must overwrite it
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(Interpret(*f, {&a, &b, &c}).ok());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("GMM %ld^3: %.3f s, %.1f M innermost statements/s\n", static_cast<long>(n), seconds,
              n * n * n / seconds / 1e6);
  NDArray expected = NDArray::Empty(DataType::Float32(), {1, n, n});
  const float* pa = static_cast<const float*>(a.data());
  const float* pb = static_cast<const float*>(b.data());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += double(pa[i * n + k]) * pb[k * n + j];
      expected.SetFlat(i * n + j, sum);
    }
  }
  absl::StatusOr<Comparison> cmp = Compare(c, expected);
  ASSERT_TRUE(cmp.ok());
  EXPECT_TRUE(cmp->ok()) << "max abs error " << cmp->max_abs_error;
}

TEST(InterpreterTest, Int8GmmIsExact) {
  const int64_t m = 7, n = 5, k = 33;
  absl::StatusOr<PrimFunc> f = MakeWorkload("GMM", {{"M", m}, {"N", n}, {"K", k}}, "int8");
  ASSERT_TRUE(f.ok()) << f.status();
  NDArray a = RandomArray(DataType::Int8(), {1, m, k}, 4);
  NDArray b = RandomArray(DataType::Int8(), {1, k, n}, 5);
  NDArray c = NDArray::Empty(DataType::Int32(), {1, m, n});
  ASSERT_TRUE(Interpret(*f, {&a, &b, &c}).ok());
  const int8_t* pa = static_cast<const int8_t*>(a.data());
  const int8_t* pb = static_cast<const int8_t*>(b.data());
  const int32_t* pc = static_cast<const int32_t*>(c.data());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int32_t sum = 0;
      for (int64_t x = 0; x < k; ++x) sum += int32_t(pa[i * k + x]) * int32_t(pb[x * n + j]);
      EXPECT_EQ(pc[i * n + j], sum) << i << "," << j;
    }
  }
}

TEST(InterpreterTest, Float16RoundsOnEveryStore) {
  // Summing 4096 ones in float16 stalls at 2048: 2048 + 1 rounds back to 2048 (to even).
  absl::StatusOr<PrimFunc> f = MakeWorkload("GEMV", {{"M", 1}, {"K", 4096}}, "float16");
  ASSERT_TRUE(f.ok()) << f.status();
  NDArray a = NDArray::Empty(DataType::Float16(), {1, 4096});
  NDArray x = NDArray::Empty(DataType::Float16(), {4096});
  for (int64_t i = 0; i < 4096; ++i) {
    a.SetFlat(i, 1.0);
    x.SetFlat(i, 1.0);
  }
  NDArray y = NDArray::Empty(DataType::Float16(), {1});
  ASSERT_TRUE(Interpret(*f, {&a, &x, &y}).ok());
  EXPECT_EQ(y.GetFlat(0), 2048.0);
}

// ---- Argument checks -------------------------------------------------------------------

TEST(InterpreterTest, RejectsWrongArgumentCount) {
  NDArray a = NDArray::Empty(DataType::Float32(), {8});
  absl::Status s = Interpret(Scale(8), {&a});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("expected 2 arguments, got 1"), std::string::npos) << s;
}

TEST(InterpreterTest, RejectsWrongDtype) {
  NDArray a = NDArray::Empty(DataType::Float32(), {8});
  NDArray b = NDArray::Empty(DataType::Float16(), {8});
  absl::Status s = Interpret(Scale(8), {&a, &b});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("(B) has dtype float16, expected float32"),
            std::string::npos)
      << s;
}

TEST(InterpreterTest, RejectsWrongShape) {
  NDArray a = NDArray::Empty(DataType::Float32(), {8});
  NDArray b = NDArray::Empty(DataType::Float32(), {4, 2});
  absl::Status s = Interpret(Scale(8), {&a, &b});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("has shape [4, 2], expected [8]"), std::string::npos)
      << s;
}

TEST(InterpreterTest, ReportsOutOfBoundsAccess) {
  NDArray a = NDArray::Empty(DataType::Float32(), {8});
  NDArray b = NDArray::Empty(DataType::Float32(), {8});
  absl::Status s = Interpret(Scale(8, /*load_offset=*/1), {&a, &b});
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(std::string(s.message()).find("A[8] is out of bounds of shape [8]"), std::string::npos)
      << s;
}

TEST(InterpreterTest, ReportsUnboundVariable) {
  Buffer b = Buffer::Make("B", DataType::Int64(), {Expr(4)});
  Var n("n");
  PrimFunc f = MakeFunc({b}, BufferStore(b, n, {Expr(0)}));
  NDArray arr = NDArray::Empty(DataType::Int64(), {4});
  absl::Status s = Interpret(f, {&arr});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("variable n"), std::string::npos) << s;
}

// ---- Semantics -------------------------------------------------------------------------

TEST(InterpreterTest, IntegerOpsWrapAndRoundLikeC) {
  Buffer r = Buffer::Make("R", DataType::Int32(), {Expr(6)});
  Buffer x = Buffer::Make("X", DataType::Int32(), {Expr(2)});  // {INT32_MAX, -7}
  DataType i32 = DataType::Int32();
  Expr big = x.Load({Expr(0)}), neg = x.Load({Expr(1)}), two = IntImm(i32, 2);
  Stmt body = SeqStmt({
      BufferStore(r, big + IntImm(i32, 1), {Expr(0)}),
      BufferStore(r, Div(neg, two), {Expr(1)}),
      BufferStore(r, FloorDiv(neg, two), {Expr(2)}),
      BufferStore(r, FloorMod(neg, two), {Expr(3)}),
      BufferStore(r, Cast(i32, Cast(DataType::Int8(), IntImm(i32, 200))), {Expr(4)}),
      BufferStore(r, Cast(i32, FloatImm(DataType::Float32(), -2.7)), {Expr(5)}),
  });
  NDArray xs = NDArray::Empty(i32, {2});
  static_cast<int32_t*>(xs.data())[0] = INT32_MAX;
  static_cast<int32_t*>(xs.data())[1] = -7;
  NDArray rs = NDArray::Empty(i32, {6});
  ASSERT_TRUE(Interpret(MakeFunc({x, r}, body), {&xs, &rs}).ok());
  const int32_t* out = static_cast<const int32_t*>(rs.data());
  EXPECT_EQ(out[0], INT32_MIN);
  EXPECT_EQ(out[1], -3);
  EXPECT_EQ(out[2], -4);
  EXPECT_EQ(out[3], 1);
  EXPECT_EQ(out[4], -56);
  EXPECT_EQ(out[5], -2);
}

TEST(InterpreterTest, ReportsDivisionByZero) {
  Buffer r = Buffer::Make("R", DataType::Int64(), {Expr(1)});
  Stmt body = BufferStore(r, FloorDiv(r.Load({Expr(0)}), r.Load({Expr(0)})), {Expr(0)});
  NDArray rs = NDArray::Empty(DataType::Int64(), {1});
  EXPECT_EQ(Interpret(MakeFunc({r}, body), {&rs}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(InterpreterTest, SplitLoopsWithPredicateAndThreadBinding) {
  // for bx in blockIdx.x(3): for tx in threadIdx.x(4): block B(vi = bx*4+tx) where vi < 10.
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(10)});
  Buffer b = Buffer::Make("B", DataType::Float32(), {Expr(10)});
  Var bx("bx"), tx("tx");
  IterVar vi = Spatial("vi", 10);
  Expr binding = bx * Expr(4) + tx;
  Stmt block =
      MakeBlockRealize("B", {vi}, {binding}, BufferStore(b, a.Load({vi.var}) + Expr(1), {vi.var}),
                       LT(binding, Expr(10)));
  Stmt loops = For(bx, Expr(3), ForKind::kThreadBinding,
                   For(tx, Expr(4), ForKind::kThreadBinding, block, "threadIdx.x"), "blockIdx.x");
  NDArray in = RandomArray(DataType::Float32(), {10}, 6);
  NDArray out = NDArray::Empty(DataType::Float32(), {10});
  ASSERT_TRUE(Interpret(MakeFunc({a, b}, loops), {&in, &out}).ok());
  for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(out.GetFlat(i), float(in.GetFlat(i) + 1));
}

TEST(InterpreterTest, ReportsIterationOutsideDomain) {
  // Same as above without the predicate: vi reaches 11.
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(12)});
  Var i("i");
  IterVar vi = Spatial("vi", 10);
  Stmt loop = For(i, Expr(12), ForKind::kSerial,
                  MakeBlockRealize("A", {vi}, {i}, BufferStore(a, Expr(0), {vi.var})));
  NDArray arr = NDArray::Empty(DataType::Float32(), {12});
  absl::Status s = Interpret(MakeFunc({a}, loop), {&arr});
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(std::string(s.message()).find("block A: vi = 10 is outside its domain [0, 10)"),
            std::string::npos)
      << s;
}

TEST(InterpreterTest, BlockAllocationsStartPoisoned) {
  // for i: block row(vi) allocates L[1]; for k: block acc: L[0] += A[vi, k]; B[vi] = L[0].
  // L is never initialized: compiled code would read garbage, so the interpreter reads NaN.
  const int64_t m = 3, n = 4;
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(m), Expr(n)});
  Buffer b = Buffer::Make("B", DataType::Float32(), {Expr(m)});
  Buffer l = Buffer::Make("L", DataType::Float32(), {Expr(1)}, "local");
  Var i("i"), k("k");
  IterVar vi = Spatial("vi", m), vk = Spatial("vk", n);
  vk.kind = IterKind::kReduction;
  Stmt acc = For(
      k, Expr(n), ForKind::kUnrolled,
      MakeBlockRealize("acc", {vk}, {k},
                       BufferStore(l, l.Load({Expr(0)}) + a.Load({vi.var, vk.var}), {Expr(0)})));
  Stmt row = MakeBlockRealize(
      "row", {vi}, {i}, SeqStmt({acc, BufferStore(b, l.Load({Expr(0)}), {vi.var})}), True(), {l});
  NDArray in = RandomArray(DataType::Float32(), {m, n}, 7);
  NDArray out = NDArray::Empty(DataType::Float32(), {m});
  ASSERT_TRUE(
      Interpret(MakeFunc({a, b}, For(i, Expr(m), ForKind::kParallel, row)), {&in, &out}).ok());
  for (int64_t r = 0; r < m; ++r) EXPECT_TRUE(std::isnan(out.GetFlat(r))) << r;
}

TEST(InterpreterTest, HonoursStridesAllocateAndIfThenElse) {
  // T (strides [8, 1], allocated by Allocate) = A; B = T where T > 0 else -1.
  const int64_t n = 4;
  Buffer a =
      Buffer::Make("A", DataType::Float32(), {Expr(n), Expr(n)}).WithStrides({Expr(1), Expr(n)});
  Buffer b = Buffer::Make("B", DataType::Float32(), {Expr(n), Expr(n)});
  Buffer t =
      Buffer::Make("T", DataType::Float32(), {Expr(n), Expr(n)}).WithStrides({Expr(8), Expr(1)});
  Var i("i"), j("j"), i2("i2"), j2("j2");
  Stmt copy = For(i, Expr(n), ForKind::kSerial,
                  For(j, Expr(n), ForKind::kVectorized, BufferStore(t, a.Load({i, j}), {i, j})));
  Stmt select =
      For(i2, Expr(n), ForKind::kSerial,
          For(j2, Expr(n), ForKind::kSerial,
              IfThenElse(GT(t.Load({i2, j2}), Expr(0)), BufferStore(b, t.Load({i2, j2}), {i2, j2}),
                         BufferStore(b, Expr(-1), {i2, j2}))));
  PrimFunc f = MakeFunc({a, b}, Allocate(t, SeqStmt({copy, select})));
  NDArray in = RandomArray(DataType::Float32(), {n, n}, 8);
  NDArray out = NDArray::Empty(DataType::Float32(), {n, n});
  ASSERT_TRUE(Interpret(f, {&in, &out}).ok());
  for (int64_t e = 0; e < n * n; ++e) {
    double v = in.GetFlat(e);
    EXPECT_EQ(out.GetFlat(e), v > 0 ? v : -1.0);
  }
}

}  // namespace
}  // namespace tessera
