// End-to-end tests of the CPU backend: hand-built functions are lowered, emitted as C,
// compiled by the C builder, run by the CPU runner in a child process, and compared with
// references computed here. The builder's and the runner's own contracts (build errors, work
// directories, crashes, time-outs, timing fields) are in builder_test.cc and runner_test.cc.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "tests/codegen/test_funcs.h"
#include "tests/worker/cpu_backend_testing.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/runner.h"

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace tessera {
namespace {

using testing_funcs::ElementwiseNest;
using testing_funcs::MakeFunc;
using testing_funcs::Matmul;

using testing::BuildAll;
using testing::Once;

// Builds `f`, runs it once on random inputs and returns the arguments after the run.
std::vector<NDArray> BuildAndRun(const PrimFunc& f, int64_t seed = 7) {
  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = BuildAll(builder.get(), {f});
  EXPECT_TRUE(built[0].ok()) << built[0].error_msg;
  std::vector<NDArray> args = RandomArgs(f, seed);
  absl::StatusOr<RunResult> ran =
      RunCpuKernel(built[0].artifact_path, built[0].symbol, &args, Once());
  EXPECT_TRUE(ran.ok()) << ran.status();
  if (ran.ok()) {
    EXPECT_TRUE(ran->ok()) << ran->error_msg;
  }
  return args;
}

void ExpectClose(const NDArray& actual, const NDArray& expected) {
  absl::StatusOr<Comparison> cmp = Compare(actual, expected);
  ASSERT_TRUE(cmp.ok()) << cmp.status();
  EXPECT_TRUE(cmp->ok()) << cmp->mismatches << " mismatches, first at " << cmp->first_mismatch
                         << ": " << actual.GetFlat(cmp->first_mismatch) << " vs "
                         << expected.GetFlat(cmp->first_mismatch);
}

// expected[flat] = fn(flat) over the elements of `like`, rounded to its dtype.
NDArray Expected(const NDArray& like, const std::function<double(int64_t)>& fn) {
  NDArray out = NDArray::Empty(like.dtype(), like.shape());
  for (int64_t i = 0; i < out.size(); ++i) out.SetFlat(i, fn(i));
  return out;
}

NDArray MatmulReference(const NDArray& a, const NDArray& b, const NDArray& like) {
  int64_t k = a.shape()[1], n = b.shape()[1];
  return Expected(like, [&](int64_t flat) {
    double sum = 0;
    for (int64_t r = 0; r < k; ++r) {
      sum += a.GetFlat(flat / n * k + r) * b.GetFlat(r * n + flat % n);
    }
    return sum;
  });
}

TEST(CpuBackendTest, MatmulSchedulesMatchTheReference) {
  std::vector<PrimFunc> funcs = {
      Matmul(33, 17, 9),
      Matmul(33, 17, 9, DataType::Float32(), DataType::Float32(),
             {ForKind::kParallel, ForKind::kVectorized, ForKind::kUnrolled}),
      Matmul(33, 17, 9, DataType::Float32(), DataType::Float32(),
             {ForKind::kParallel, ForKind::kParallel, ForKind::kSerial},
             {{"pragma_auto_unroll_max_step", int64_t{16}}}),
  };
  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = BuildAll(builder.get(), funcs);
  for (size_t i = 0; i < funcs.size(); ++i) {
    ASSERT_TRUE(built[i].ok()) << built[i].error_msg;
    EXPECT_GT(built[i].compile_seconds, 0);
    for (size_t j = 0; j < i; ++j) EXPECT_NE(built[i].artifact_path, built[j].artifact_path);
    std::vector<NDArray> args = RandomArgs(funcs[i], 3);
    absl::StatusOr<RunResult> ran =
        RunCpuKernel(built[i].artifact_path, built[i].symbol, &args, Once());
    ASSERT_TRUE(ran.ok()) << ran.status();
    ASSERT_TRUE(ran->ok()) << ran->error_msg;
    ExpectClose(args[2], MatmulReference(args[0], args[1], args[2]));
  }
}

TEST(CpuBackendTest, ParallelVectorizedElementwise) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {37, 29});
  Buffer b = Buffer::Make("B", DataType::Float32(), {37, 29});
  Stmt s = ElementwiseNest(
      "B", b, {ForKind::kParallel, ForKind::kVectorized}, [&](const std::vector<Var>& v) {
        Expr x = a.Load({v[0], v[1]});
        return Call(CallOp::kSigmoid, {x}) * 2 + Max(x, FloatImm(DataType::Float32(), 0)) +
               Call(CallOp::kRsqrt, {Call(CallOp::kAbs, {x}) + 1});
      });
  std::vector<NDArray> args = BuildAndRun(MakeFunc("ew", {a, b}, s));
  ExpectClose(args[1], Expected(args[1], [&](int64_t i) {
                double x = args[0].GetFlat(i);
                return 2 / (1 + std::exp(-x)) + std::max(x, 0.0) + 1 / std::sqrt(std::abs(x) + 1);
              }));
}

TEST(CpuBackendTest, IntermediateBuffersOnHeapAndStack) {
  // T = A + 1 (64 KiB: heap), then B = T * 2 with a small local scratch buffer per block.
  Buffer a = Buffer::Make("A", DataType::Float32(), {128, 128});
  Buffer t = Buffer::Make("T", DataType::Float32(), {128, 128});
  Buffer b = Buffer::Make("B", DataType::Float32(), {128, 128});
  Buffer scratch = Buffer::Make("scratch", DataType::Float32(), {1}, "local");
  Stmt first = ElementwiseNest("T", t, {ForKind::kParallel}, [&](const std::vector<Var>& v) {
    return a.Load({v[0], v[1]}) + 1;
  });
  // Block B: scratch[0] = T * 2; B = scratch[0].
  Var i("i"), j("j"), vi("vi"), vj("vj");
  BlockNode block;
  block.name = "B";
  block.iter_vars = {IterVar{vi, Range{Expr(0), Expr(128)}, IterKind::kSpatial},
                     IterVar{vj, Range{Expr(0), Expr(128)}, IterKind::kSpatial}};
  block.alloc_buffers = {scratch};
  block.body = SeqStmt({BufferStore(scratch, t.Load({vi, vj}) * 2, {Expr(0)}),
                        BufferStore(b, scratch.Load({Expr(0)}), {vi, vj})});
  Stmt second =
      For(i, Expr(128), ForKind::kParallel,
          For(j, Expr(128), ForKind::kSerial, BlockRealize({i, j}, True(), MakeBlock(block))));
  std::vector<NDArray> args = BuildAndRun(MakeFunc("two", {a, b}, SeqStmt({first, second}), {t}));
  ExpectClose(args[1], Expected(args[1], [&](int64_t k) { return (args[0].GetFlat(k) + 1) * 2; }));
}

TEST(CpuBackendTest, Float16AndBFloat16) {
  Buffer a = Buffer::Make("A", DataType::Float16(), {300});
  Buffer b = Buffer::Make("B", DataType::Float16(), {300});
  Buffer c = Buffer::Make("C", DataType::BFloat16(), {300});
  Stmt s = ElementwiseNest("C", c, {ForKind::kVectorized}, [&](const std::vector<Var>& v) {
    Expr x = a.Load({v[0]}) + b.Load({v[0]}) * a.Load({v[0]});
    return Cast(DataType::BFloat16(), x) * 3;
  });
  std::vector<NDArray> args = BuildAndRun(MakeFunc("half", {a, b, c}, s));
  ExpectClose(args[2], Expected(args[2], [&](int64_t i) {
                double x = args[0].GetFlat(i) + args[1].GetFlat(i) * args[0].GetFlat(i);
                return RoundToDType(DataType::BFloat16(), x) * 3;
              }));
}

TEST(CpuBackendTest, Int8MatmulAccumulatesInInt32) {
  PrimFunc f = Matmul(16, 24, 40, DataType::Int8(), DataType::Int32(),
                      {ForKind::kParallel, ForKind::kSerial, ForKind::kSerial});
  std::vector<NDArray> args = BuildAndRun(f);
  absl::StatusOr<Comparison> cmp =
      Compare(args[2], MatmulReference(args[0], args[1], args[2]), 0, 0);
  ASSERT_TRUE(cmp.ok());
  EXPECT_TRUE(cmp->ok());
}

TEST(CpuBackendTest, SignedFloorDivAndModRoundDown) {
  Buffer a = Buffer::Make("A", DataType::Int32(), {200});
  Buffer b = Buffer::Make("B", DataType::Int32(), {200});
  Stmt s = ElementwiseNest("B", b, {}, [&](const std::vector<Var>& v) {
    Expr x = a.Load({v[0]});
    return FloorDiv(x, IntImm(DataType::Int32(), 3)) * 100 +
           FloorMod(x, IntImm(DataType::Int32(), 4)) + Div(x, IntImm(DataType::Int32(), 5)) * 10000;
  });
  std::vector<NDArray> args = BuildAndRun(MakeFunc("fd", {a, b}, s));
  bool saw_negative = false;
  for (int64_t i = 0; i < 200; ++i) {
    int64_t x = static_cast<int64_t>(args[0].GetFlat(i));
    saw_negative |= x < 0;
    int64_t fdiv = static_cast<int64_t>(std::floor(x / 3.0));
    int64_t fmod = x - static_cast<int64_t>(std::floor(x / 4.0)) * 4;
    EXPECT_EQ(args[1].GetFlat(i), fdiv * 100 + fmod + (x / 5) * 10000) << "x = " << x;
  }
  EXPECT_TRUE(saw_negative);
}

TEST(CpuBackendTest, FusedSplitIndexDivisionMatchesTheInterpreter) {
  // Index floordiv/floormod of the fused loop print as C's / and %; the value's floordiv of a
  // negative dividend keeps rounding down.
  PrimFunc f = testing_funcs::FusedSplitTranspose(6, 8, 16);
  std::vector<NDArray> args = BuildAndRun(f, /*seed=*/5);
  std::vector<NDArray> expected = RandomArgs(f, /*seed=*/5);
  ASSERT_TRUE(Interpret(f, {&expected[0], &expected[1]}).ok());
  absl::StatusOr<Comparison> cmp = Compare(args[1], expected[1], 0, 0);
  ASSERT_TRUE(cmp.ok()) << cmp.status();
  EXPECT_TRUE(cmp->ok()) << cmp->mismatches << " mismatches, first at " << cmp->first_mismatch;
}

TEST(CpuBackendTest, GuardedPaddingLoadsStayCorrect) {
  // The padding loop of a 3-D convolution that GCC 12 -O3 -mavx2 miscompiles unless loop
  // if-conversion is off (see CBuilderOptions::optimization_flags).
  Buffer in = Buffer::Make("in", DataType::Float32(), {12, 12, 12, 3});
  Buffer pad = Buffer::Make("P", DataType::Float32(), {18, 18, 18, 3});
  Stmt s = ElementwiseNest("P", pad, {}, [&](const std::vector<Var>& v) {
    Expr inside = And(And(And(GE(v[0], 3), LT(v[0], 15)), And(GE(v[1], 3), LT(v[1], 15))),
                      And(GE(v[2], 3), LT(v[2], 15)));
    return Select(inside, in.Load({v[0] - 3, v[1] - 3, v[2] - 3, v[3]}),
                  FloatImm(DataType::Float32(), 0));
  });
  std::vector<NDArray> args = BuildAndRun(MakeFunc("pad", {in, pad}, s));
  ExpectClose(args[1], Expected(args[1], [&](int64_t flat) {
                int64_t c = flat % 3, x = flat / 3 % 18, y = flat / 54 % 18, z = flat / 972;
                bool inside = x >= 3 && x < 15 && y >= 3 && y < 15 && z >= 3 && z < 15;
                return inside ? args[0].GetFlat((((z - 3) * 12 + y - 3) * 12 + x - 3) * 3 + c)
                              : 0.0;
              }));
}

// B = (A * 1e-20) * 1e-20 and C = A * 1e30, the first nest in the calling thread, the second on
// the OpenMP team (512 x 512: enough iterations for it).
PrimFunc DenormalProducts() {
  Buffer a = Buffer::Make("A", DataType::Float32(), {512, 512});
  Buffer b = Buffer::Make("B", DataType::Float32(), {512, 512});
  Buffer c = Buffer::Make("C", DataType::Float32(), {512, 512});
  auto f32 = [](double v) { return FloatImm(DataType::Float32(), v); };
  Stmt tiny =
      ElementwiseNest("B", b, {ForKind::kSerial, ForKind::kSerial}, [&](const std::vector<Var>& v) {
        return a.Load({v[0], v[1]}) * f32(1e-20) * f32(1e-20);
      });
  Stmt scaled = ElementwiseNest("C", c, {ForKind::kParallel, ForKind::kVectorized},
                                [&](const std::vector<Var>& v) {
                                  return a.Load({v[0], v[1]}) * f32(1e30);
                                });
  return MakeFunc("denormals", {a, b, c}, SeqStmt({tiny, scaled}));
}

// Every other element of A a denormal (1e-39, signs alternating by four), the others as drawn.
void MakeEveryOtherDenormal(NDArray* a) {
  for (int64_t i = 0; i < a->size(); i += 2) a->SetFlat(i, (i / 2) % 4 < 2 ? 1e-39 : -1e-39);
}

// Kernels flush denormal floats to zero, as results (B: each product of a normal A is about
// 1e-40 unflushed) and as inputs (C: a denormal A times 1e30 is 1e-9 unflushed), in the calling
// thread and in the threads of a parallel loop (codegen/c_prelude.cc: Intel cores take a
// microcode assist per denormal FMA; a causal softmax's output made GPT-2's block 3x slower).
TEST(CpuBackendTest, DenormalsFlushToZeroInEveryThread) {
  const PrimFunc f = DenormalProducts();
  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = BuildAll(builder.get(), {f});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;
  std::vector<NDArray> args = RandomArgs(f, 5);
  MakeEveryOtherDenormal(&args[0]);
  const NDArray a = args[0];
  absl::StatusOr<RunResult> ran =
      RunCpuKernel(built[0].artifact_path, built[0].symbol, &args, Once());
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->ok()) << ran->error_msg;
  for (int64_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(args[1].GetFlat(i), 0.0) << "B[" << i << "] of A " << a.GetFlat(i);
  }
  ExpectClose(args[2], Expected(args[2], [&](int64_t i) {
                return std::fabs(a.GetFlat(i)) < std::numeric_limits<float>::min()
                           ? 0.0
                           : a.GetFlat(i) * 1e30;
              }));
}

#if defined(__SSE__)
// In a process whose OpenMP team exists already (started here while denormals were kept), each
// of the team's threads flushes them during the kernel's parallel loop, and the caller's
// floating-point environment is its own again when the kernel returns: an application that
// loads a compiled model keeps its denormals.
TEST(CpuBackendTest, TheTeamFlushesAndTheCallerGetsItsModeBack) {
  const PrimFunc f = DenormalProducts();
  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = BuildAll(builder.get(), {f});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;
  void* handle = dlopen(built[0].artifact_path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto kernel = reinterpret_cast<int32_t (*)(void**)>(dlsym(handle, built[0].symbol.c_str()));
  ASSERT_NE(kernel, nullptr) << built[0].symbol;
  // The kernel's libgomp, found through its dependencies: an empty region of two threads starts
  // the team from this thread, whose MXCSR keeps denormals.
  using GompParallel = void (*)(void (*)(void*), void*, unsigned, unsigned);
  auto gomp_parallel = reinterpret_cast<GompParallel>(dlsym(handle, "GOMP_parallel"));
  ASSERT_NE(gomp_parallel, nullptr);
  ASSERT_EQ(_mm_getcsr() & 0x8040u, 0u) << "the test process flushes denormals already";
  gomp_parallel([](void*) {}, nullptr, 2, 0);

  std::vector<NDArray> args = RandomArgs(f, 5);
  MakeEveryOtherDenormal(&args[0]);
  std::vector<void*> pointers;
  for (NDArray& arg : args) pointers.push_back(arg.data());
  // The control bits (the low six are sticky exception flags, which any float operation sets).
  const unsigned before = _mm_getcsr() & ~0x3Fu;
  EXPECT_EQ(kernel(pointers.data()), 0);
  EXPECT_EQ(_mm_getcsr() & ~0x3Fu, before);
  for (int64_t i = 0; i < args[0].size(); ++i) {
    ASSERT_EQ(args[1].GetFlat(i), 0.0) << "B[" << i << "]";
    if (std::fabs(args[0].GetFlat(i)) < std::numeric_limits<float>::min()) {
      ASSERT_EQ(args[2].GetFlat(i), 0.0) << "C[" << i << "] of a denormal A";
    }
  }
  // A denormal computed here after the call stays one.
  volatile float tiny = 1e-20f;
  EXPECT_GT(tiny * tiny, 0.0f);
  dlclose(handle);
}
#endif

}  // namespace
}  // namespace tessera
