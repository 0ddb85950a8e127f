// Tests of worker/runner.cc, the CPU runner: each kernel runs in a child process, so a crash,
// a failed allocation, a missing library or a hang is that kernel's result (with the signal,
// the return code, the path or the time-out) and the next kernel still runs; the time-out
// covers one step, not the whole measurement; the timing fields follow the config; the kernel
// runs on private copies of its arguments and what it writes comes back; a function that packs
// layout-free weights is timed as its kernel on packed weights.
#include "worker/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "tests/codegen/test_funcs.h"
#include "tests/testing/schedule_testing.h"
#include "tests/testing/scoped_temp_dir.h"
#include "tests/worker/cpu_backend_testing.h"
#include "worker/builder.h"
#include "worker/check.h"

namespace tessera {
namespace {

using testing::BuildAll;
using testing::Once;
using testing::ScopedTempDir;
using testing::SmallBuiltMatmul;
using testing_funcs::ElementwiseNest;
using testing_funcs::MakeFunc;

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

TEST(CpuRunnerTest, CrashIsReportedAndTheNextRunWorks) {
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

TEST(CpuRunnerTest, FailedAllocationReturnsNonzero) {
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

TEST(CpuRunnerTest, TimeoutKillsTheKernel) {
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
  return MakeFunc(
      "spin", {a},
      For(i, Expr(steps), ForKind::kSerial, BlockRealize({}, True(), MakeBlock(block))));
}

TEST(CpuRunnerTest, SlowKernelIsTimedByItsFirstWarmupRunOnly) {
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

TEST(CpuRunnerTest, TimeoutCoversOneStepNotTheWholeMeasurement) {
  // A dependent chain of multiply-adds, timed once on this machine; the step time-out is then
  // 25 runs (at least 1 s) and the measurement about twice the time-out: all the repeats last
  // longer than the time-out, each step far less, however fast or loaded the machine is (with
  // 8 runs and 0.3 s, one step outlasted the time-out while other builds loaded the machine).
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
  config.timeout_sec = std::max(25 * per_run, 1.0);
  config.repeat = static_cast<int>(std::ceil(2 * config.timeout_sec / per_run));
  // Runs that got faster since the probe may end the measurement before the time-out, which
  // would prove nothing: then measure again with twice the repeats (twice at most).
  double wall = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<RunResult> ran =
        RunCpuKernel(built[0].artifact_path, built[0].symbol, &args, config);
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(ran.ok()) << ran.status();
    ASSERT_TRUE(ran->ok()) << ran->error_msg;
    EXPECT_EQ(ran->run_secs.size(), static_cast<size_t>(config.repeat));
    if (wall > config.timeout_sec) break;
    config.repeat *= 2;
  }
  EXPECT_GT(wall, config.timeout_sec);
  EXPECT_LT(wall, 8 * config.timeout_sec + 5) << "the measurement did not end";
  std::printf("%d runs of %.4f s in %.2f s under a %.2f s step time-out\n", config.repeat + 1,
              per_run, wall, config.timeout_sec);
}

TEST(CpuRunnerTest, TimingFieldsFollowTheConfig) {
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

// A kernel, compiled here, that finds its first argument's mapping in /proc/self/maps and
// writes that mapping's sharing flag ('p' private, 's' shared) into its first element: the
// runner times kernels on private memory, as a caller's process has it, not on the shared
// mapping the parent hands the arguments over in (docs/cpu-backend.md, "Runner").
TEST(CpuRunnerTest, TheKernelRunsOnPrivateCopiesAndItsOutputsComeBack) {
  ScopedTempDir dir("runner_private");
  const std::string source = dir.path() + "/where.c";
  const std::string library = dir.path() + "/where.so";
  {
    std::ofstream out(source);
    out << R"(#include <stdint.h>
#include <stdio.h>
int32_t where(void** args) {
  int64_t* flag = (int64_t*)args[0];
  uintptr_t p = (uintptr_t)args[0];
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return 1;
  char line[512];
  *flag = 0;
  while (fgets(line, sizeof line, maps) != NULL) {
    unsigned long start, end;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) == 3 && p >= start && p < end) {
      *flag = perms[3];
    }
  }
  fclose(maps);
  return 0;
}
)";
  }
  ASSERT_EQ(std::system(("cc -O1 -shared -fPIC -o " + library + " " + source).c_str()), 0);
  std::vector<NDArray> args = {NDArray::Empty(DataType::Int64(), {1})};
  static_cast<int64_t*>(args[0].data())[0] = -1;
  absl::StatusOr<RunResult> ran = RunCpuKernel(library, "where", &args, Once());
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->ok()) << ran->error_msg;
  EXPECT_EQ(static_cast<int64_t*>(args[0].data())[0], 'p')
      << "0: the argument is in no mapping; 's': the kernel ran on shared memory";
}

// LINEAR with its weight packed by a block of its own: measured as `<symbol>_prepacked` on
// arguments of the kernel's own shapes (the packed strips in the weight's place), which the
// built module has and the runner times; unsplit functions and cuda targets keep the whole.
TEST(TimedRunInputTest, APackingFunctionIsTimedAsItsKernelOnPackedWeights) {
  absl::StatusOr<PrimFunc> linear = MakeWorkload("LINEAR", {{"M", 4}, {"N", 32}, {"K", 8}});
  ASSERT_TRUE(linear.ok()) << linear.status();
  const PrimFunc packing = testing::LinearWithPackedWeight(*linear);
  absl::StatusOr<Target> cpu = Target::Parse("cpu");
  absl::StatusOr<Target> cuda = Target::Parse("cuda -arch=sm_80");
  ASSERT_TRUE(cpu.ok() && cuda.ok());

  const RunInput timed = TimedRunInput("k.so", "k", packing, *cpu);
  EXPECT_EQ(timed.symbol, "k_prepacked");
  ASSERT_EQ(timed.args.size(), 3u);
  EXPECT_EQ(timed.args[0].shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(timed.args[1].shape, (std::vector<int64_t>{2, 8, 16}));
  EXPECT_EQ(timed.args[2].shape, (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(TimedRunInput("k.so", "k", *linear, *cpu).symbol, "k");
  EXPECT_EQ(TimedRunInput("k.so", "k", packing, *cuda).symbol, "k");

  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = BuildAll(builder.get(), {packing});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;
  std::vector<RunResult> ran = NewCpuRunner()->Run(
      {TimedRunInput(built[0].artifact_path, built[0].symbol, packing, *cpu)}, Once());
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_TRUE(ran[0].ok()) << ran[0].error_msg;
}

}  // namespace
}  // namespace tessera
