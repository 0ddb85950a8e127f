// End-to-end tests of the CPU backend: hand-built functions are lowered, emitted as C,
// compiled by the C builder, run by the CPU runner in a child process, and compared with
// references computed here. Also: build errors, crashes, timeouts and timing fields.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>

#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "tests/codegen/test_funcs.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/runner.h"

namespace tessera {
namespace {

using testing_funcs::ElementwiseNest;
using testing_funcs::MakeFunc;
using testing_funcs::Matmul;

Target Cpu() { return *Target::Parse("cpu"); }

std::vector<BuildResult> BuildAll(Builder* builder, const std::vector<PrimFunc>& funcs) {
  std::vector<BuildInput> inputs;
  for (const PrimFunc& f : funcs) inputs.push_back(BuildInput{f, Cpu()});
  return builder->Build(inputs);
}

RunnerConfig Once() {
  RunnerConfig config;
  config.warmup = 0;
  config.repeat = 1;
  return config;
}

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

TEST(CpuBackendTest, BuildErrorsAreResults) {
  auto [good, bound] = testing_funcs::ElementwiseAndThreadBound(32);

  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> results =
      builder->Build({BuildInput{bound, Cpu()}, BuildInput{good, Cpu()},
                      BuildInput{good, *Target::Parse("cuda -arch=sm_90")}});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].error_msg, "cpu codegen: loop i bound to threadIdx.x");
  EXPECT_TRUE(results[1].ok()) << results[1].error_msg;
  EXPECT_TRUE(std::filesystem::exists(results[1].artifact_path));
  EXPECT_NE(results[2].error_msg.find("is not a cpu target"), std::string::npos);

  CBuilderOptions bad_flag;
  bad_flag.extra_flags = {"-fno-such-flag-at-all"};
  results = NewCBuilder(bad_flag)->Build({BuildInput{good, Cpu()}});
  EXPECT_FALSE(results[0].ok());
  EXPECT_NE(results[0].error_msg.find("-fno-such-flag-at-all"), std::string::npos)
      << results[0].error_msg;
  EXPECT_TRUE(results[0].artifact_path.empty());

  CBuilderOptions no_compiler;
  no_compiler.compiler = "tessera-no-such-compiler";
  results = NewCBuilder(no_compiler)->Build({BuildInput{good, Cpu()}});
  EXPECT_NE(results[0].error_msg.find("cannot start compiler 'tessera-no-such-compiler'"),
            std::string::npos)
      << results[0].error_msg;
}

TEST(CpuBackendTest, WorkDirIsRemovedWithTheBuilderUnlessKept) {
  PrimFunc f = Matmul(2, 2, 2);
  std::string kept_dir;
  std::string removed_dir;
  {
    std::unique_ptr<Builder> builder = NewCBuilder();
    std::vector<BuildResult> r = BuildAll(builder.get(), {f});
    ASSERT_TRUE(r[0].ok()) << r[0].error_msg;
    removed_dir = std::filesystem::path(r[0].artifact_path).parent_path();
    CBuilderOptions keep;
    keep.keep_work_dir = true;
    keep.optimization_flags = {"-O0"};
    keep.openmp = false;
    std::unique_ptr<Builder> keeper = NewCBuilder(keep);
    r = BuildAll(keeper.get(), {f});
    ASSERT_TRUE(r[0].ok()) << r[0].error_msg;
    kept_dir = std::filesystem::path(r[0].artifact_path).parent_path();
  }
  EXPECT_FALSE(std::filesystem::exists(removed_dir));
  EXPECT_TRUE(std::filesystem::exists(kept_dir));
  std::filesystem::remove_all(kept_dir);
}

// out[0] = in[0]; then a store at element 2^40 of `out`, far outside any mapping.
PrimFunc OutOfBoundsStore() {
  Buffer in = Buffer::Make("in", DataType::Float32(), {1});
  Buffer out = Buffer::Make("out", DataType::Float32(), {int64_t{1} << 41});
  Var i("i");
  BlockNode block;
  block.name = "oob";
  block.body = BufferStore(out, in.Load({Expr(0)}), {i + (int64_t{1} << 40)});
  return MakeFunc("oob", {in, out},
                  For(i, Expr(1), ForKind::kSerial, BlockRealize({}, True(), MakeBlock(block))));
}

TEST(CpuBackendTest, CrashIsReportedAndTheNextRunWorks) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {8});
  Stmt s = ElementwiseNest(
      "A", a, {}, [&](const std::vector<Var>& v) { return Cast(DataType::Float32(), v[0]); });
  PrimFunc good = MakeFunc("iota", {a}, s);
  PrimFunc oob = OutOfBoundsStore();
  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = BuildAll(builder.get(), {oob, good});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;
  ASSERT_TRUE(built[1].ok()) << built[1].error_msg;

  // Run `oob` with a 1-element `out` (the runner only needs the ArgInfos).
  std::unique_ptr<Runner> runner = NewCpuRunner();
  std::vector<ArgInfo> oob_args = {{DataType::Float32(), {1}}, {DataType::Float32(), {1}}};
  std::vector<RunResult> results =
      runner->Run({RunInput{built[0].artifact_path, built[0].symbol, oob_args},
                   RunInput{built[1].artifact_path, built[1].symbol, ArgInfosOf(good)},
                   RunInput{"/nonexistent/kernel.so", "f", {}}},
                  Once());
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].error_msg, "kernel crashed: SIGSEGV (Segmentation fault)");
  EXPECT_TRUE(results[1].ok()) << results[1].error_msg;
  EXPECT_EQ(results[1].run_secs.size(), 1u);
  EXPECT_NE(results[2].error_msg.find("cannot load /nonexistent/kernel.so"), std::string::npos)
      << results[2].error_msg;
}

TEST(CpuBackendTest, FailedAllocationReturnsNonzero) {
  // A 4 PiB intermediate: aligned_alloc fails and the kernel returns -1.
  Buffer a = Buffer::Make("A", DataType::Float32(), {1});
  Buffer huge = Buffer::Make("huge", DataType::Float32(), {int64_t{1} << 50});
  BlockNode block;
  block.name = "use";
  block.body = SeqStmt({BufferStore(huge, FloatImm(DataType::Float32(), 1), {Expr(0)}),
                        BufferStore(a, huge.Load({Expr(0)}), {Expr(0)})});
  PrimFunc f = MakeFunc("huge", {a}, BlockRealize({}, True(), MakeBlock(block)), {huge});
  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = BuildAll(builder.get(), {f});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;
  std::vector<RunResult> results = NewCpuRunner()->Run(
      {RunInput{built[0].artifact_path, built[0].symbol, ArgInfosOf(f)}}, Once());
  EXPECT_EQ(results[0].error_msg, "kernel returned -1");
}

TEST(CpuBackendTest, TimeoutKillsTheKernel) {
  // 10^6 x 10^6 dependent float additions: far longer than the timeout.
  Buffer a = Buffer::Make("A", DataType::Float32(), {1});
  Var i("i"), j("j");
  BlockNode block;
  block.name = "spin";
  block.body =
      BufferStore(a, a.Load({Expr(0)}) * FloatImm(DataType::Float32(), 0.999) + 1, {Expr(0)});
  Stmt s = For(i, Expr(1000000), ForKind::kSerial,
               For(j, Expr(1000000), ForKind::kSerial, BlockRealize({}, True(), MakeBlock(block))));
  PrimFunc f = MakeFunc("spin", {a}, s);
  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = BuildAll(builder.get(), {f});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;
  RunnerConfig config = Once();
  config.timeout_sec = 0.3;
  auto start = std::chrono::steady_clock::now();
  std::vector<RunResult> results = NewCpuRunner()->Run(
      {RunInput{built[0].artifact_path, built[0].symbol, ArgInfosOf(f)}}, config);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(results[0].error_msg, "timed out after 0.3s");
  EXPECT_LT(waited, 5.0);
}

// A[0] = A[0] * 0.999 + 1, `steps` times in a dependent chain: a few cycles per step.
PrimFunc Spin(int64_t steps) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {1});
  Var i("i");
  BlockNode block;
  block.name = "spin";
  block.body =
      BufferStore(a, a.Load({Expr(0)}) * FloatImm(DataType::Float32(), 0.999) + 1, {Expr(0)});
  return MakeFunc("spin", {a},
                  For(i, Expr(steps), ForKind::kSerial, BlockRealize({}, True(), MakeBlock(block))));
}

// Matmul(16, 16, 16) built by the C builder, which it keeps: the builder owns the artifact.
struct SmallBuiltMatmul {
  PrimFunc func = Matmul(16, 16, 16);
  std::unique_ptr<Builder> builder = NewCBuilder();
  BuildResult built = BuildAll(builder.get(), {func})[0];

  RunInput Input() const { return RunInput{built.artifact_path, built.symbol, ArgInfosOf(func)}; }
};

TEST(CpuBackendTest, SlowKernelIsTimedByItsFirstWarmupRunOnly) {
  SmallBuiltMatmul matmul;
  ASSERT_TRUE(matmul.built.ok()) << matmul.built.error_msg;
  RunInput input = matmul.Input();
  std::unique_ptr<Runner> runner = NewCpuRunner();
  RunnerConfig config;
  config.repeat = 3;
  config.slow_run_secs = 1e-12;  // every run is "slow"
  std::vector<RunResult> results = runner->Run({input}, config);
  ASSERT_TRUE(results[0].ok()) << results[0].error_msg;
  ASSERT_EQ(results[0].run_secs.size(), 1u);
  EXPECT_GT(results[0].run_secs[0], 0);
  config.slow_run_secs = 10;  // none is
  results = runner->Run({input}, config);
  ASSERT_TRUE(results[0].ok()) << results[0].error_msg;
  EXPECT_EQ(results[0].run_secs.size(), 3u);
  config.warmup = 0;  // the rule needs a warm-up run
  config.slow_run_secs = 1e-12;
  results = runner->Run({input}, config);
  ASSERT_TRUE(results[0].ok()) << results[0].error_msg;
  EXPECT_EQ(results[0].run_secs.size(), 3u);
  config.slow_run_secs = -1;
  results = runner->Run({input}, config);
  EXPECT_NE(results[0].error_msg.find("slow_run_secs=-1"), std::string::npos)
      << results[0].error_msg;
}

TEST(CpuBackendTest, TimeoutCoversOneStepNotTheWholeMeasurement) {
  // A dependent chain of multiply-adds, timed once on this machine; the step time-out is then
  // 8 runs (at least 0.3 s) and the measurement about twice the time-out: all the repeats last
  // longer than the time-out, each step far less, however fast or loaded the machine is.
  PrimFunc f = Spin(5'000'000);
  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = BuildAll(builder.get(), {f});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;
  std::vector<NDArray> args = RandomArgs(f, 1);
  RunnerConfig config;
  config.repeat = 1;
  absl::StatusOr<RunResult> probe =
      RunCpuKernel(built[0].artifact_path, built[0].symbol, &args, config);
  ASSERT_TRUE(probe.ok()) << probe.status();
  ASSERT_TRUE(probe->ok()) << probe->error_msg;
  const double per_run = std::max(probe->run_secs[0], 1e-5);
  config.timeout_sec = std::max(8 * per_run, 0.3);
  config.repeat = static_cast<int>(std::ceil(2 * config.timeout_sec / per_run));
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<RunResult> ran =
      RunCpuKernel(built[0].artifact_path, built[0].symbol, &args, config);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_TRUE(ran->ok()) << ran->error_msg;
  EXPECT_EQ(ran->run_secs.size(), static_cast<size_t>(config.repeat));
  EXPECT_GT(wall, config.timeout_sec);
  EXPECT_LT(wall, 8 * config.timeout_sec + 5) << "the measurement did not end";
  std::printf("%d runs of %.4f s in %.2f s under a %.2f s step time-out\n", config.repeat + 1,
              per_run, wall, config.timeout_sec);
}

TEST(CpuBackendTest, TimingFieldsFollowTheConfig) {
  SmallBuiltMatmul matmul;
  ASSERT_TRUE(matmul.built.ok()) << matmul.built.error_msg;
  RunInput input = matmul.Input();
  std::unique_ptr<Runner> runner = NewCpuRunner();

  RunnerConfig config;
  config.repeat = 4;
  config.number = 3;
  config.enable_cpu_cache_flush = true;
  std::vector<RunResult> results = runner->Run({input}, config);
  ASSERT_TRUE(results[0].ok()) << results[0].error_msg;
  ASSERT_EQ(results[0].run_secs.size(), 4u);
  for (double s : results[0].run_secs) {
    EXPECT_GT(s, 0);
    EXPECT_LT(s, 1.0);
  }

  // A few microseconds per run: min_repeat_ms = 30 must grow `number` so that each of the
  // 3 repeats lasts >= 30 ms.
  config = RunnerConfig();
  config.repeat = 3;
  config.min_repeat_ms = 30;
  auto start = std::chrono::steady_clock::now();
  results = runner->Run({input}, config);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(results[0].ok()) << results[0].error_msg;
  EXPECT_EQ(results[0].run_secs.size(), 3u);
  EXPECT_GE(wall, 0.09);
  for (double s : results[0].run_secs) EXPECT_LT(s, 0.03);

  config.number = 0;
  results = runner->Run({input}, config);
  EXPECT_NE(results[0].error_msg.find("invalid config"), std::string::npos);
}

}  // namespace
}  // namespace tessera
