// Tests of the C emitter's output text: ABI, pragmas per loop kind, dtypes, allocations and
// errors. Compiling and running generated code is tested in tests/worker.
#include "codegen/codegen_c.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "tests/codegen/test_funcs.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using testing_funcs::ElementwiseNest;
using testing_funcs::FusedSplitTranspose;
using testing_funcs::MakeFunc;
using testing_funcs::Matmul;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CodegenCTest, MatmulHasTheAbiAndReadableLoops) {
  absl::StatusOr<std::string> code = GenerateC(Matmul(8, 4, 16), "mm");
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_TRUE(Contains(*code, "int32_t mm(void** args) {")) << *code;
  EXPECT_TRUE(Contains(*code, "float* restrict A = (float*)args[0];")) << *code;
  EXPECT_TRUE(Contains(*code, "float* restrict C = (float*)args[2];")) << *code;
  EXPECT_TRUE(Contains(*code, "for (int64_t k = 0; k < 16; ++k) {")) << *code;
  EXPECT_TRUE(Contains(*code, "if (k == 0) {")) << *code;
  EXPECT_TRUE(Contains(*code, "C[(i * 4) + j] = 0.0f;")) << *code;
  EXPECT_TRUE(Contains(*code, "return 0;")) << *code;
}

TEST(CodegenCTest, LoopKindsBecomePragmas) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {512, 512});
  Buffer b = Buffer::Make("B", DataType::Float32(), {512, 512});
  Stmt s = ElementwiseNest("B", b, {ForKind::kParallel, ForKind::kVectorized},
                           [&](const std::vector<Var>& v) {
                             return Call(CallOp::kSigmoid, {a.Load({v[0], v[1]})});
                           });
  absl::StatusOr<std::string> code = GenerateC(MakeFunc("ew", {a, b}, s), "ew");
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_TRUE(Contains(*code, "#pragma omp parallel\n")) << *code;
  EXPECT_TRUE(Contains(*code, "#pragma omp simd\n")) << *code;
  EXPECT_TRUE(
      Contains(*code, "B[(i * 512) + j] = 1.0f / (1.0f + tessera_exp_f32(-A[(i * 512) + j]));"))
      << *code;

  PrimFunc unrolled = Matmul(128, 128, 16, DataType::Float32(), DataType::Float32(),
                             {ForKind::kParallel, ForKind::kParallel, ForKind::kUnrolled});
  code = GenerateC(unrolled, "mm");
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_TRUE(Contains(*code, "#pragma omp for collapse(2) nowait")) << *code;
  EXPECT_TRUE(Contains(*code, "#pragma GCC unroll 16")) << *code;
}

// A parallel loop over a few thousand iterations (8 x 16 here), or over one, runs on one thread:
// the team's fork and join would cost more than the work. It stays an OpenMP region (outlined),
// so that GCC compiles it as it compiles a parallel one.
TEST(CodegenCTest, SmallParallelNestsRunOnOneThread) {
  for (int64_t rows : {1, 8}) {
    Buffer a = Buffer::Make("A", DataType::Float32(), {rows, 16});
    Buffer b = Buffer::Make("B", DataType::Float32(), {rows, 16});
    Stmt s = ElementwiseNest("B", b, {ForKind::kParallel, ForKind::kVectorized},
                             [&](const std::vector<Var>& v) {
                               return a.Load({v[0], v[1]});
                             });
    absl::StatusOr<std::string> code = GenerateC(MakeFunc("ew", {a, b}, s), "ew");
    ASSERT_TRUE(code.ok()) << code.status();
    EXPECT_TRUE(Contains(*code, "#pragma omp parallel num_threads(1)\n")) << *code;
    EXPECT_TRUE(Contains(*code, "#pragma omp simd\n")) << *code;
  }
}

// Beside a nest that wakes the team anyway, a smaller one (64 x 256 here, a convolution's padded
// copy of its input) runs on the team too: it costs the team only a join. Alone it runs on one.
TEST(CodegenCTest, NestsBesideALargeParallelNestShareItsTeam) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {64, 256});
  Buffer b = Buffer::Make("B", DataType::Float32(), {64, 256});
  Buffer c = Buffer::Make("C", DataType::Float32(), {512, 512});
  Buffer d = Buffer::Make("D", DataType::Float32(), {512, 512});
  auto copy = [](const Buffer& from, const Buffer& to) {
    return ElementwiseNest(to.name(), to, {ForKind::kParallel, ForKind::kVectorized},
                           [&](const std::vector<Var>& v) {
                             return from.Load({v[0], v[1]});
                           });
  };
  absl::StatusOr<std::string> alone = GenerateC(MakeFunc("small", {a, b}, copy(a, b)), "small");
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_TRUE(Contains(*alone, "#pragma omp parallel num_threads(1)\n")) << *alone;
  absl::StatusOr<std::string> beside =
      GenerateC(MakeFunc("both", {a, b, c, d}, SeqStmt({copy(a, b), copy(c, d)})), "both");
  ASSERT_TRUE(beside.ok()) << beside.status();
  EXPECT_FALSE(Contains(*beside, "num_threads(1)")) << *beside;
  EXPECT_TRUE(Contains(*beside, "#pragma omp parallel\n")) << *beside;
}

// A nest whose inner extents are not constants (a loop split at a padding edge runs `9 - rx`
// times) counts each with its largest value: the 8-row nest of a small convolution's default
// schedule ran on two threads, 57 us against 6.6 us on one. A large such nest stays parallel.
TEST(CodegenCTest, SmallNestsWithVariableExtentsRunOnOneThread) {
  for (int64_t cols : {16, 1 << 16}) {
    Buffer a = Buffer::Make("A", DataType::Float32(), {8, cols});
    Buffer b = Buffer::Make("B", DataType::Float32(), {8, cols});
    Var i("i"), j("j");
    Stmt s = For(i, Expr(8), ForKind::kParallel,
                 For(j, Expr(cols) - i, ForKind::kSerial, BufferStore(b, a.Load({i, j}), {i, j})));
    absl::StatusOr<std::string> code = GenerateC(MakeFunc("tri", {a, b}, s), "tri");
    ASSERT_TRUE(code.ok()) << code.status();
    EXPECT_EQ(Contains(*code, "#pragma omp parallel num_threads(1)\n"), cols == 16) << *code;
    EXPECT_TRUE(Contains(*code, "#pragma omp parallel")) << *code;
  }
}

// pow(x, 3) with an immediate small integer exponent is x * x * x (vectorizable), not a scalar
// powf call per element; a fractional exponent, or an x that calls a function, stays powf.
TEST(CodegenCTest, SmallIntegerPowersAreProducts) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {64});
  Buffer b = Buffer::Make("B", DataType::Float32(), {64});
  auto code_of = [&](Expr exponent, bool call_inside) {
    Stmt s = ElementwiseNest("B", b, {ForKind::kVectorized}, [&](const std::vector<Var>& v) {
      Expr x = a.Load({v[0]});
      if (call_inside) x = Call(CallOp::kTanh, {x});
      return Call(CallOp::kPow, {x, exponent});
    });
    absl::StatusOr<std::string> code = GenerateC(MakeFunc("ew", {a, b}, s), "ew");
    EXPECT_TRUE(code.ok()) << code.status();
    return code.ok() ? *code : "";
  };
  const std::string cube = code_of(FloatImm(DataType::Float32(), 3.0), false);
  EXPECT_TRUE(Contains(cube, "B[i] = A[i] * A[i] * A[i];")) << cube;
  EXPECT_FALSE(Contains(cube, "powf(")) << cube;
  EXPECT_TRUE(Contains(code_of(FloatImm(DataType::Float32(), 2.5), false), "powf(A[i], 2.5f)"));
  EXPECT_TRUE(Contains(code_of(FloatImm(DataType::Float32(), 2.0), true), "powf(tanhf(A[i])"));
}

// The prelude gives logf & co. their libmvec vector variants, so GCC vectorizes a simd loop
// calling logf instead of calling the scalar function per element (x86-64 glibc with GCC only).
// (A float exp is the prelude's own, inline: c_prelude_test.cc.)
TEST(CodegenCTest, VectorizedLogCallsTheVectorMathLibrary) {
#if !defined(__x86_64__) || !defined(__GLIBC__)
  GTEST_SKIP() << "libmvec variants are declared for x86-64 glibc only";
#endif
  Buffer a = Buffer::Make("A", DataType::Float32(), {64});
  Buffer b = Buffer::Make("B", DataType::Float32(), {64});
  Stmt s = ElementwiseNest("B", b, {ForKind::kVectorized}, [&](const std::vector<Var>& v) {
    return Call(CallOp::kLog, {a.Load({v[0]})});
  });
  absl::StatusOr<std::string> code = GenerateC(MakeFunc("ew", {a, b}, s), "ew");
  ASSERT_TRUE(code.ok()) << code.status();
  const std::string stem = ::testing::TempDir() + "/vector_log_" + std::to_string(getpid());
  std::ofstream(stem + ".c") << *code;
  const std::string command =
      "cc -O3 -march=x86-64 -fopenmp -std=gnu11 -S -o " + stem + ".s " + stem + ".c 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::stringstream assembly;
  assembly << std::ifstream(stem + ".s").rdbuf();
  std::remove((stem + ".c").c_str());
  std::remove((stem + ".s").c_str());
  const std::string text = assembly.str();
  if (Contains(text, "clang")) GTEST_SKIP() << "cc is clang: no simd attribute";
  EXPECT_TRUE(Contains(text, "_ZGVbN4v_logf")) << text;
}

// A float max in a vectorized loop is the keyed helper (a vector integer max); in a serial loop
// it is the scalar one (one maxss), which a chain of maxes across lanes waits on less.
TEST(CodegenCTest, FloatMaxIsKeyedInVectorLoopsAndScalarElsewhere) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {4, 16});
  Buffer b = Buffer::Make("B", DataType::Float32(), {4, 16});
  auto relu = [&](const std::vector<Var>& v) {
    return Max(a.Load({v[0], v[1]}), FloatImm(DataType::Float32(), 0.0));
  };
  for (ForKind inner : {ForKind::kVectorized, ForKind::kSerial}) {
    Stmt s = ElementwiseNest("B", b, {ForKind::kSerial, inner}, relu);
    absl::StatusOr<std::string> code = GenerateC(MakeFunc("relu", {a, b}, s), "relu");
    ASSERT_TRUE(code.ok()) << code.status();
    const std::string body = code->substr(code->find("int32_t relu("));
    const bool vectorized = inner == ForKind::kVectorized;
    EXPECT_EQ(Contains(body, "tessera_max_f32("), vectorized) << body;
    EXPECT_EQ(Contains(body, "tessera_max_scalar_f32("), !vectorized) << body;
  }
}

TEST(CodegenCTest, AutoUnrollAnnotationUnrollsSmallInnerLoops) {
  Annotations ann = {{"pragma_auto_unroll_max_step", int64_t{64}}};
  absl::StatusOr<std::string> code =
      GenerateC(Matmul(4, 8, 4, DataType::Float32(), DataType::Float32(),
                       {ForKind::kSerial, ForKind::kSerial, ForKind::kSerial}, ann),
                "mm");
  ASSERT_TRUE(code.ok()) << code.status();
  // j * k = 32 <= 64: j and k unroll; i carries the annotation itself and is left alone.
  EXPECT_TRUE(Contains(*code, "#pragma GCC unroll 8\n")) << *code;
  EXPECT_TRUE(Contains(*code, "#pragma GCC unroll 4\n")) << *code;
  EXPECT_FALSE(Contains(*code, "#pragma GCC unroll 4\n  for (int64_t i")) << *code;
}

// A clipped tail of an unrolled tile has an extent that is not a constant (`5 - i`): it is
// unrolled up to its largest extent, in full wherever the compiler finds the extent constant.
TEST(CodegenCTest, UnrolledLoopOfVariableExtentUnrollsUpToItsLargestExtent) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {3, 5});
  Var i("i"), j("j");
  Stmt store = BufferStore(a, FloatImm(DataType::Float32(), 1.0), {i, j});
  Stmt s = For(i, Expr(3), ForKind::kSerial, For(j, Expr(5) - i, ForKind::kUnrolled, store));
  absl::StatusOr<std::string> code = GenerateC(MakeFunc("tail", {a}, s), "tail");
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_TRUE(Contains(*code, "#pragma GCC unroll 5\n")) << *code;
}

TEST(CodegenCTest, VectorizedLoopWithLoopInvariantStoreHasNoSimdPragma) {
  // The reduction loop k vectorized: C[i, j] is stored in every iteration of k.
  PrimFunc f = Matmul(4, 4, 4, DataType::Float32(), DataType::Float32(),
                      {ForKind::kSerial, ForKind::kSerial, ForKind::kVectorized});
  absl::StatusOr<std::string> code = GenerateC(f, "mm");
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_FALSE(Contains(*code, "#pragma omp simd")) << *code;
}

TEST(CodegenCTest, ThreadBoundLoopIsAnError) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {32});
  Stmt s = ElementwiseNest(
      "A", a, {}, [&](const std::vector<Var>& v) { return Cast(DataType::Float32(), v[0]); });
  const auto* loop = s.as<ForNode>();
  Stmt bound =
      For(loop->loop_var, loop->extent, ForKind::kThreadBinding, loop->body, "threadIdx.x");
  absl::StatusOr<std::string> code = GenerateC(MakeFunc("f", {a}, bound), "f");
  ASSERT_FALSE(code.ok());
  EXPECT_EQ(code.status().message(), "cpu codegen: loop i bound to threadIdx.x");
}

TEST(CodegenCTest, HalfTypesComputeInFloat) {
  Buffer a = Buffer::Make("A", DataType::Float16(), {16});
  Buffer b = Buffer::Make("B", DataType::BFloat16(), {16});
  Stmt s = ElementwiseNest("B", b, {}, [&](const std::vector<Var>& v) {
    return Cast(DataType::BFloat16(), a.Load({v[0]})) * 2;
  });
  absl::StatusOr<std::string> code = GenerateC(MakeFunc("half", {a, b}, s), "half");
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_TRUE(Contains(*code, "_Float16* restrict A = (_Float16*)args[0];")) << *code;
  EXPECT_TRUE(Contains(*code, "uint16_t* restrict B = (uint16_t*)args[1];")) << *code;
  EXPECT_TRUE(Contains(*code, "B[i] = tessera_f32_to_bf16(")) << *code;
  EXPECT_TRUE(Contains(*code, "tessera_bf16_round((float)A[i])")) << *code;
}

// A bfloat16 copy, and a padding select between a bfloat16 element and a constant, move the 16
// bits (the constant encoded at code generation) instead of converting through float; both still
// compute what the interpreter computes.
TEST(CodegenCTest, Bfloat16CopiesAndPaddingMoveBits) {
  Buffer a = Buffer::Make("A", DataType::BFloat16(), {16});
  Buffer copy = Buffer::Make("Copy", DataType::BFloat16(), {16});
  Buffer padded = Buffer::Make("Padded", DataType::BFloat16(), {18});
  Stmt copy_nest =
      ElementwiseNest("Copy", copy, {}, [&](const std::vector<Var>& v) { return a.Load({v[0]}); });
  Stmt pad_nest = ElementwiseNest("Padded", padded, {}, [&](const std::vector<Var>& v) {
    return Select(And(GE(v[0], Expr(1)), LT(v[0], Expr(17))), a.Load({v[0] - 1}),
                  FloatImm(DataType::BFloat16(), 1.5));
  });
  const PrimFunc func = MakeFunc("bits", {a, copy, padded}, SeqStmt({copy_nest, pad_nest}));
  absl::StatusOr<std::string> code = GenerateC(func, "bits");
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_TRUE(Contains(*code, "Copy[i] = A[i];")) << *code;
  EXPECT_TRUE(Contains(*code, " : (uint16_t)0x3fc0;")) << *code;  // 1.5
  EXPECT_FALSE(Contains(*code, "= tessera_f32_to_bf16(")) << *code;
  absl::Status built = testing::CheckCBackendMatches(func, func);
  EXPECT_TRUE(built.ok()) << built;
}

TEST(CodegenCTest, SignedFloorDivUsesHelpers) {
  Buffer a = Buffer::Make("A", DataType::Int32(), {16});
  Buffer b = Buffer::Make("B", DataType::Int32(), {16});
  Stmt s = ElementwiseNest("B", b, {}, [&](const std::vector<Var>& v) {
    return FloorDiv(a.Load({v[0]}), IntImm(DataType::Int32(), 3)) +
           Div(a.Load({v[0]}), IntImm(DataType::Int32(), 3));
  });
  absl::StatusOr<std::string> code = GenerateC(MakeFunc("fd", {a, b}, s), "fd");
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_TRUE(Contains(*code, "((int32_t)tessera_floordiv_i64(A[i], 3))")) << *code;
  EXPECT_TRUE(Contains(*code, "(A[i] / 3)")) << *code;
}

TEST(CodegenCTest, NonNegativeIndexDivisionIsPlainC) {
  absl::StatusOr<std::string> code = GenerateC(FusedSplitTranspose(6, 8, 16), "t");
  ASSERT_TRUE(code.ok()) << code.status();
  std::string body = code->substr(code->find("int32_t t(void** args)"));
  // The fused index (fo * 16 + fi) is >= 0: C's / and % round as floordiv/floormod do.
  EXPECT_TRUE(Contains(body, " / 8)")) << body;
  EXPECT_TRUE(Contains(body, " % 8)")) << body;
  EXPECT_FALSE(Contains(body, "tessera_floormod_i64(")) << body;
  // floordiv(i - 3, 2) can have a negative dividend: it keeps the helper.
  EXPECT_TRUE(Contains(body, "tessera_floordiv_i64(")) << body;
}

TEST(CodegenCTest, SmallAllocationsOnStackLargeOnHeap) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {128, 128});
  Buffer big = Buffer::Make("T", DataType::Float32(), {128, 128});
  Buffer b = Buffer::Make("B", DataType::Float32(), {128, 128});
  Buffer small = Buffer::Make("acc", DataType::Float32(), {4}, "local");
  Stmt t = ElementwiseNest("T", big, {ForKind::kParallel}, [&](const std::vector<Var>& v) {
    return a.Load({v[0], v[1]}) + 1;
  });
  Stmt out = ElementwiseNest("B", b, {ForKind::kParallel},
                             [&](const std::vector<Var>& v) {
                               return big.Load({v[0], v[1]}) * 2;
                             },
                             {small});
  absl::StatusOr<std::string> code =
      GenerateC(MakeFunc("two", {a, b}, SeqStmt({t, out}), {big}), "two");
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_TRUE(Contains(*code, "float* restrict T = (float*)tessera_alloc(65536);")) << *code;
  EXPECT_TRUE(Contains(*code, "if (T == NULL) return -1;")) << *code;
  EXPECT_TRUE(Contains(*code, "free(T);")) << *code;
  EXPECT_TRUE(Contains(*code, "float acc[4] __attribute__((aligned(64)));")) << *code;
}

// A copy allocated inside a parallel loop (scope "global": a packed panel, a padded input) goes
// on the heap at any size, where a stack array beside the register tile made gcc keep the tile's
// accumulators in memory (docs/cpu-backend.md "Micro-kernels by core"); the tile ("local")
// stays on the stack.
TEST(CodegenCTest, CopiesInsideParallelLoopsOnHeapTilesOnStack) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {8, 8});
  Buffer b = Buffer::Make("B", DataType::Float32(), {8, 8});
  Buffer tile = Buffer::Make("acc", DataType::Float32(), {4}, "local");
  Buffer panel = Buffer::Make("panel", DataType::Float32(), {4}, "global");
  Stmt out = ElementwiseNest("B", b, {ForKind::kParallel},
                             [&](const std::vector<Var>& v) {
                               return a.Load({v[0], v[1]}) * 2;
                             },
                             {tile, panel});
  absl::StatusOr<std::string> code = GenerateC(MakeFunc("copies", {a, b}, out), "copies");
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_TRUE(Contains(*code, "float* restrict panel = (float*)tessera_alloc(16);")) << *code;
  EXPECT_TRUE(Contains(*code, "if (panel == NULL) __builtin_trap();")) << *code;
  EXPECT_TRUE(Contains(*code, "free(panel);")) << *code;
  EXPECT_TRUE(Contains(*code, "float acc[4] __attribute__((aligned(64)));")) << *code;
}

TEST(CodegenCTest, ModuleHoldsSeveralFunctionsAndRejectsDuplicates) {
  absl::StatusOr<std::string> code =
      GenerateCModule({{Matmul(2, 2, 2), "first"}, {Matmul(4, 4, 4), "second"}});
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_TRUE(Contains(*code, "int32_t first(void** args)"));
  EXPECT_TRUE(Contains(*code, "int32_t second(void** args)"));
  EXPECT_EQ(code->find("#include <math.h>"), code->rfind("#include <math.h>"));

  EXPECT_FALSE(GenerateCModule({{Matmul(2, 2, 2), "f"}, {Matmul(2, 2, 2), "f"}}).ok());
  EXPECT_FALSE(GenerateC(Matmul(2, 2, 2), "not an identifier").ok());
  EXPECT_FALSE(GenerateC(Matmul(2, 2, 2), "tessera_alloc").ok());
}

// A function that packs a layout-free weight (ir/prepack.h): the packing and the kernel get
// entries of their own, and the function's own entry allocates the packed strips, packs, runs
// the kernel on them and frees them; a symbol of another function may not take their names.
TEST(CodegenCTest, PackedWeightsGetPackingAndKernelEntries) {
  absl::StatusOr<PrimFunc> linear = MakeWorkload("LINEAR", {{"M", 4}, {"N", 32}, {"K", 8}});
  ASSERT_TRUE(linear.ok()) << linear.status();
  const PrimFunc packing = testing::LinearWithPackedWeight(*linear);
  absl::StatusOr<std::string> code = GenerateC(packing, "lin");
  ASSERT_TRUE(code.ok()) << code.status();
  const size_t prepack = code->find("int32_t lin_prepack(void** args)");
  const size_t kernel = code->find("int32_t lin_prepacked(void** args)");
  const size_t whole = code->find("int32_t lin(void** args)");
  ASSERT_NE(prepack, std::string::npos) << *code;
  ASSERT_NE(kernel, std::string::npos) << *code;
  ASSERT_NE(whole, std::string::npos) << *code;
  EXPECT_LT(kernel, whole);
  const std::string composition = code->substr(whole);
  EXPECT_TRUE(Contains(composition, "packed[0] = tessera_alloc(1024);")) << composition;
  EXPECT_TRUE(Contains(composition, "void* prepack_args[] = {args[1], packed[0]};")) << composition;
  EXPECT_TRUE(Contains(composition, "void* kernel_args[] = {args[0], packed[0], args[2]};"))
      << composition;
  EXPECT_LT(composition.find("lin_prepack(prepack_args)"),
            composition.find("lin_prepacked(kernel_args)"));
  EXPECT_TRUE(Contains(composition, "free(packed[p]);")) << composition;
  // Without packing, one entry as before.
  absl::StatusOr<std::string> plain = GenerateC(*linear, "lin");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(Contains(*plain, "lin_prepack"));

  absl::StatusOr<std::string> clash =
      GenerateCModule({{packing, "lin"}, {Matmul(2, 2, 2), "lin_prepacked"}});
  ASSERT_FALSE(clash.ok());
  EXPECT_TRUE(Contains(std::string(clash.status().message()), "lin_prepacked appears twice"));
}

TEST(CodegenCTest, NamesAreMadeValidAndUnique) {
  Buffer a = Buffer::Make("in.0", DataType::Float32(), {4});
  Buffer b = Buffer::Make("exp", DataType::Float32(), {4});
  Stmt s = ElementwiseNest("exp", b, {}, [&](const std::vector<Var>& v) {
    return Call(CallOp::kExp, {a.Load({v[0]})});
  });
  absl::StatusOr<std::string> code = GenerateC(MakeFunc("names", {a, b}, s), "names");
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_TRUE(Contains(*code, "float* restrict in_0 = (float*)args[0];")) << *code;
  EXPECT_TRUE(Contains(*code, "float* restrict exp_1 = (float*)args[1];")) << *code;
  EXPECT_TRUE(Contains(*code, "exp_1[i] = tessera_exp_f32(in_0[i]);")) << *code;
}

}  // namespace
}  // namespace tessera
