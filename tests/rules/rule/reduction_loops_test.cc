// Tests of rules/rule/reduction_loops.h (ReorderAndFuseReductionLoops): spatial loops end up
// outside in their order, the reduction loops fused into one innermost loop, the program still
// computes the same; blocks without a reduction loop or with a loop of mixed kind are refused.
#include "rules/rule/reduction_loops.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "rules/analysis.h"
#include "schedule/state.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using testing::CheckScheduleCorrect;
using testing::FirstReductionBlock;
using testing::SmallWorkload;

int CountKind(const std::vector<std::optional<IterKind>>& kinds, IterKind kind) {
  int n = 0;
  for (const std::optional<IterKind>& k : kinds) n += (k == kind) ? 1 : 0;
  return n;
}

// Runs ReorderAndFuseReductionLoops on the first reduction block of `func` and checks the
// loop nest it leaves and that the schedule still computes what `func` computes.
void ExpectSpatialOutsideOneReductionInside(Schedule sch, const PrimFunc& func) {
  BlockRV block = *sch.GetBlock(FirstReductionBlock(func));
  const int spatial = CountKind(LoopIterKinds(sch, block), IterKind::kSpatial);
  absl::StatusOr<FusedReduction> fused = ReorderAndFuseReductionLoops(&sch, block);
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(fused->num_spatial_loops, spatial);
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  ASSERT_EQ(loops.size(), static_cast<size_t>(spatial) + 1);
  EXPECT_EQ(*sch.Get(loops.back()), *sch.Get(fused->reduction_loop));  // the same loop
  std::vector<std::optional<IterKind>> kinds = LoopIterKinds(sch, block);
  for (int i = 0; i < spatial; ++i) EXPECT_EQ(kinds[i], IterKind::kSpatial) << "loop " << i;
  EXPECT_EQ(kinds.back(), IterKind::kReduction);
  absl::Status correct = CheckScheduleCorrect(sch, func);
  EXPECT_TRUE(correct.ok()) << correct;
}

TEST(ReorderAndFuseReductionLoopsTest, MovesAnOuterReductionLoopInside) {
  PrimFunc gmm = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(gmm, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<LoopRV> reduction_first = {loops.back()};
  reduction_first.insert(reduction_first.end(), loops.begin(), loops.end() - 1);
  ASSERT_TRUE(sch.Reorder(reduction_first).ok());
  ExpectSpatialOutsideOneReductionInside(sch, gmm);
}

TEST(ReorderAndFuseReductionLoopsTest, FusesSeveralReductionLoopsIntoOne) {
  PrimFunc conv = SmallWorkload("C2D");
  Schedule sch = Schedule::Create(conv, 0);
  BlockRV block = *sch.GetBlock(FirstReductionBlock(conv));
  ASSERT_GT(CountKind(LoopIterKinds(sch, block), IterKind::kReduction), 1);
  ExpectSpatialOutsideOneReductionInside(sch, conv);
}

TEST(ReorderAndFuseReductionLoopsTest, RefusesABlockWithoutReductionLoop) {
  PrimFunc f = SmallWorkload("ELEMENTWISE");
  Schedule sch = Schedule::Create(f, 0);
  BlockRV block = *sch.GetBlock(AllBlockNames(f).back());
  absl::StatusOr<FusedReduction> fused = ReorderAndFuseReductionLoops(&sch, block);
  ASSERT_FALSE(fused.ok());
  EXPECT_EQ(fused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(fused.status().message().find("has no reduction loop"), std::string::npos)
      << fused.status();
}

TEST(ReorderAndFuseReductionLoopsTest, RefusesALoopOfMixedKind) {
  Schedule sch = Schedule::Create(SmallWorkload("GMM"), 0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  // The innermost spatial loop fused with the reduction loop is both.
  ASSERT_TRUE(sch.Fuse({loops[loops.size() - 2], loops.back()}).ok());
  absl::StatusOr<FusedReduction> fused = ReorderAndFuseReductionLoops(&sch, c);
  ASSERT_FALSE(fused.ok());
  EXPECT_EQ(fused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(fused.status().message().find("is both spatial and reduction"), std::string::npos)
      << fused.status();
}

}  // namespace
}  // namespace tessera
