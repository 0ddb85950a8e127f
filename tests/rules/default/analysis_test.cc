// Tests of rules/default/analysis.cc, the block analysis the default rules share: the normal
// form of a function's blocks, sum reductions along contiguous memory (what the GEMV and
// Reduction rules schedule), with or without an elementwise epilogue, and what is not one.
#include "rules/default/analysis.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace dlight {
namespace {

Schedule ScheduleOf(const std::string& workload) {
  return Schedule::Create(testing::SmallWorkload(workload), /*seed=*/1);
}

TEST(DefaultRuleAnalysisTest, NormalizeBlocksGivesEachBlockItsLoopsAndKinds) {
  Schedule sch = ScheduleOf("REDUCE_SUM");
  std::optional<std::vector<BlockInfo>> blocks = NormalizeBlocks(&sch);
  ASSERT_TRUE(blocks.has_value());
  ASSERT_EQ(blocks->size(), 1u);
  const BlockInfo& sum = (*blocks)[0];
  EXPECT_EQ(sum.kinds, "SR");
  EXPECT_EQ(sum.loops.size(), 2u);
  EXPECT_EQ(sum.extents.size(), 2u);
  EXPECT_TRUE(sum.IsReduction());
  EXPECT_FALSE(sum.IsInjective());
}

TEST(DefaultRuleAnalysisTest, RowSumAndGemvAreInnerSumReductions) {
  for (const char* workload : {"REDUCE_SUM", "GEMV"}) {
    Schedule sch = ScheduleOf(workload);
    std::optional<InnerSumReduction> found = FindInnerSumReduction(&sch);
    ASSERT_TRUE(found.has_value()) << workload;
    EXPECT_EQ(found->main.kinds, "SR") << workload;
    EXPECT_EQ(found->block->name, found->main.name) << workload;
    EXPECT_TRUE(IsSumReduction(found->block)) << workload;
    EXPECT_TRUE(IsInnerReduction(found->block)) << workload;
    EXPECT_FALSE(found->epilogue.has_value()) << workload;
  }
}

TEST(DefaultRuleAnalysisTest, FunctionsThatAreNotOneInnerSumReductionAreRefused) {
  // ELEMENTWISE has no reduction; TRANSPOSE neither; SFM and LAYER_NORM have several.
  for (const char* workload : {"ELEMENTWISE", "TRANSPOSE", "SFM", "LAYER_NORM"}) {
    Schedule sch = ScheduleOf(workload);
    EXPECT_FALSE(FindInnerSumReduction(&sch).has_value()) << workload;
  }
}

}  // namespace
}  // namespace dlight
}  // namespace tessera
