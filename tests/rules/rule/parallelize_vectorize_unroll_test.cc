// ParallelizeVectorizeUnroll (rules/rule/parallelize_vectorize_unroll.cc). Where it applies and
// where it does not, and that what it produces computes what the unscheduled function computes and
// replays from its trace JSON (testing::CheckScheduleCorrect).
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "rules/annotations.h"
#include "rules/schedule_rule.h"
#include "tests/rules/rule_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using rule_testing::ApplyAt;
using rule_testing::CountInsts;
using rule_testing::Cpu;
using rule_testing::Cuda;
using rule_testing::Make;
using rule_testing::ReductionWorkload;
using testing::CheckScheduleCorrect;
using testing::SmallWorkload;

template <typename T>
const T* RootAnnotation(const PrimFunc& func, const char* key) {
  const Block& root = func->body.as<BlockRealizeNode>()->block;
  auto it = root->annotations.find(key);
  return it == root->annotations.end() ? nullptr : std::get_if<T>(&it->second);
}

TEST(ParallelizeVectorizeUnrollTest, AnnotatesTheRootOnCpu) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(NewParallelizeVectorizeUnroll(Cpu(), {}));
  std::set<int64_t> steps;
  for (int seed = 0; seed < 16; ++seed) {
    Schedule sch = Schedule::Create(func, seed);
    std::vector<Schedule> out = ApplyAt(*rule, &sch, "root");
    ASSERT_EQ(out.size(), 1u);
    const PrimFunc& f = out[0].func();
    ASSERT_NE(RootAnnotation<int64_t>(f, attr::kParallel), nullptr);
    EXPECT_EQ(*RootAnnotation<int64_t>(f, attr::kParallel), 4 * 16);
    ASSERT_NE(RootAnnotation<int64_t>(f, attr::kVectorize), nullptr);
    EXPECT_EQ(*RootAnnotation<int64_t>(f, attr::kVectorize), 64);
    const int64_t* step = RootAnnotation<int64_t>(f, attr::kUnrollExplicit);
    ASSERT_NE(step, nullptr);
    steps.insert(*step);
    EXPECT_EQ(CountInsts(out[0], "SampleCategorical"), 1);
    EXPECT_TRUE(CheckScheduleCorrect(out[0], func).ok()) << CheckScheduleCorrect(out[0], func);
  }
  EXPECT_GT(steps.size(), 1u);
  for (int64_t s : steps) EXPECT_TRUE(s == 0 || s == 16 || s == 64 || s == 512) << s;
}

TEST(ParallelizeVectorizeUnrollTest, CudaUnrollsOnlyAndSpatialFunctionsGetNoUnroll) {
  ScheduleRulePtr cuda = Make(NewParallelizeVectorizeUnroll(Cuda(), {}));
  Schedule sch = Schedule::Create(ReductionWorkload("GEMV"), 1);
  PrimFunc f = ApplyAt(*cuda, &sch, "root")[0].func();
  EXPECT_EQ(RootAnnotation<int64_t>(f, attr::kParallel), nullptr);
  EXPECT_EQ(RootAnnotation<int64_t>(f, attr::kVectorize), nullptr);
  EXPECT_NE(RootAnnotation<int64_t>(f, attr::kUnrollExplicit), nullptr);

  ScheduleRulePtr implicit =
      Make(NewParallelizeVectorizeUnroll(Cpu(), {{"unroll_explicit", false}}));
  Schedule gemv = Schedule::Create(ReductionWorkload("GEMV"), 1);
  f = ApplyAt(*implicit, &gemv, "root")[0].func();
  EXPECT_NE(RootAnnotation<int64_t>(f, attr::kUnrollImplicit), nullptr);

  ScheduleRulePtr cpu = Make(NewParallelizeVectorizeUnroll(Cpu(), {}));
  Schedule elementwise = Schedule::Create(SmallWorkload("ELEMENTWISE"), 1);
  f = ApplyAt(*cpu, &elementwise, "root")[0].func();
  EXPECT_NE(RootAnnotation<int64_t>(f, attr::kParallel), nullptr);
  EXPECT_EQ(RootAnnotation<int64_t>(f, attr::kUnrollExplicit), nullptr);
}

TEST(ParallelizeVectorizeUnrollTest, IgnoresNonRootBlocks) {
  ScheduleRulePtr rule = Make(NewParallelizeVectorizeUnroll(Cpu(), {}));
  PrimFunc func = ReductionWorkload("GEMV");
  Schedule sch = Schedule::Create(func, 1);
  std::vector<Schedule> out = ApplyAt(*rule, &sch, testing::FirstReductionBlock(func));
  EXPECT_EQ(RootAnnotation<int64_t>(out[0].func(), attr::kParallel), nullptr);
  EXPECT_EQ(CountInsts(out[0], "Annotate"), 0);
}

}  // namespace
}  // namespace tessera
