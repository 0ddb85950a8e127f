// The hand-written traces in examples/: each is canonical trace JSON, replays on its workload at
// the default shape into a parallel, vectorized program, computes what the unscheduled workload
// computes at a small shape (interpreter), and at the default shape compiled with the C builder
// matches the unscheduled workload compiled naively (-O0, serial).
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/random.h"
#include "base/status_macros.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "ir/functor.h"
#include "ir/ndarray.h"
#include "ir/printer.h"
#include "schedule/schedule.h"
#include "schedule/trace.h"
#include "tests/testing/schedule_testing.h"
#include "worker/builder.h"
#include "worker/host.h"
#include "worker/runner.h"

namespace tessera {
namespace {

struct Example {
  std::string file;                            // under examples/
  std::string workload;                        // its workload, default shape
  std::map<std::string, int64_t> small_shape;  // where the interpreter checks it
};

std::vector<Example> Examples() {
  return {
      {"gmm_cpu_tiled.json", "GMM", {{"B", 1}, {"M", 10}, {"N", 100}, {"K", 7}}},
      {"c2d_cpu_tiled.json", "C2D", {{"N", 1}, {"H", 16}, {"W", 16}, {"CI", 3}, {"CO", 16}}},
  };
}

std::string ReadExample(const std::string& file) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/examples/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<Schedule> Replay(const PrimFunc& func, const std::string& file) {
  TESSERA_ASSIGN_OR_RETURN(Trace trace, Trace::FromJson(ReadExample(file)));
  Schedule sch = Schedule::Create(func, /*seed=*/0);
  TESSERA_RETURN_IF_ERROR(trace.ApplyTo(&sch, /*remove_postproc=*/false));
  return sch;
}

std::vector<NDArray> SeededArgs(const PrimFunc& func) {
  Random rng(3);
  std::vector<NDArray> args;
  for (const ArgInfo& info : ArgInfosOf(func)) {
    args.push_back(NDArray::Empty(info.dtype, info.shape));
    args.back().FillRandom(&rng);
  }
  return args;
}

class ExamplesTest : public ::testing::TestWithParam<Example> {};

TEST_P(ExamplesTest, FileIsCanonicalTraceJson) {
  const std::string text = ReadExample(GetParam().file);
  ASSERT_FALSE(text.empty()) << "cannot read examples/" << GetParam().file;
  absl::StatusOr<Trace> trace = Trace::FromJson(text);
  ASSERT_TRUE(trace.ok()) << trace.status();
  // Hand-written, but exactly what Trace::ToJson writes (modulo whitespace).
  EXPECT_EQ(nlohmann::json::parse(text), nlohmann::json::parse(trace->ToJson()));
}

TEST_P(ExamplesTest, ReplaysAtDefaultShapeIntoParallelVectorizedLoops) {
  absl::StatusOr<PrimFunc> func = MakeWorkload(GetParam().workload);
  ASSERT_TRUE(func.ok()) << func.status();
  absl::StatusOr<Schedule> sch = Replay(*func, GetParam().file);
  ASSERT_TRUE(sch.ok()) << sch.status();
  int parallel = 0, vectorized = 0;
  PostOrderVisitStmts(sch->func().body(), [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) {
      parallel += loop->for_kind == ForKind::kParallel;
      vectorized += loop->for_kind == ForKind::kVectorized;
    }
  });
  EXPECT_GE(parallel, 1) << PrintFunc(sch->func());
  EXPECT_GE(vectorized, 1) << PrintFunc(sch->func());
  absl::Status replay = testing::CheckReplay(*sch, *func);
  EXPECT_TRUE(replay.ok()) << replay;
}

TEST_P(ExamplesTest, SameOutputsAsUnscheduledAtSmallShape) {
  absl::StatusOr<PrimFunc> func = MakeWorkload(GetParam().workload, GetParam().small_shape);
  ASSERT_TRUE(func.ok()) << func.status();
  absl::StatusOr<Schedule> sch = Replay(*func, GetParam().file);
  ASSERT_TRUE(sch.ok()) << sch.status();
  absl::Status same = testing::CheckSameOutputs(*func, sch->func());
  EXPECT_TRUE(same.ok()) << same << "\n" << PrintFunc(sch->func());
}

TEST_P(ExamplesTest, CompiledMatchesNaiveCompiledReferenceAtDefaultShape) {
  absl::StatusOr<PrimFunc> func = MakeWorkload(GetParam().workload);
  ASSERT_TRUE(func.ok()) << func.status();
  absl::StatusOr<Schedule> sch = Replay(*func, GetParam().file);
  ASSERT_TRUE(sch.ok()) << sch.status();
  absl::StatusOr<Target> target = ResolveTarget("cpu");
  ASSERT_TRUE(target.ok()) << target.status();

  CBuilderOptions naive_options;
  naive_options.optimization_flags = {"-O0"};
  naive_options.openmp = false;
  std::unique_ptr<Builder> naive = NewCBuilder(naive_options);
  std::unique_ptr<Builder> optimized = NewCBuilder();
  std::vector<BuildResult> reference = naive->Build({BuildInput{*func, *target}});
  std::vector<BuildResult> scheduled = optimized->Build({BuildInput{sch->func(), *target}});
  ASSERT_TRUE(reference[0].ok()) << reference[0].error_msg;
  ASSERT_TRUE(scheduled[0].ok()) << scheduled[0].error_msg;

  RunnerConfig once;
  once.warmup = 0;
  once.repeat = 1;
  once.timeout_sec = 120;
  std::vector<NDArray> expected = SeededArgs(*func), actual = SeededArgs(*func);
  absl::StatusOr<RunResult> ran =
      RunCpuKernel(reference[0].artifact_path, reference[0].symbol, &expected, once);
  ASSERT_TRUE(ran.ok() && ran->ok()) << (ran.ok() ? ran->error_msg : ran.status().ToString());
  ran = RunCpuKernel(scheduled[0].artifact_path, scheduled[0].symbol, &actual, once);
  ASSERT_TRUE(ran.ok() && ran->ok()) << (ran.ok() ? ran->error_msg : ran.status().ToString());
  for (int index : WrittenParamIndices(*func)) {
    absl::StatusOr<Comparison> cmp = Compare(actual[index], expected[index]);
    ASSERT_TRUE(cmp.ok()) << cmp.status();
    EXPECT_TRUE(cmp->ok()) << func->params()[index].name() << ": " << cmp->mismatches
                           << " mismatches, max abs error " << cmp->max_abs_error;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ExamplesTest, ::testing::ValuesIn(Examples()),
                         [](const auto& info) { return info.param.workload; });

}  // namespace
}  // namespace tessera
