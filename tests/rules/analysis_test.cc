// Tests of rules/analysis.h: the block and loop predicates the rules match on (which blocks
// need multi-level tiling or rfactor, trivial bindings, loop kinds, extents), read/write
// patterns and write caches.
#include "rules/analysis.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "schedule/state.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using testing::SmallWorkload;

// Blocks of `func` that MultiLevelTiling matches.
int CountMatchedBlocks(const PrimFunc& func) {
  Schedule sch = Schedule::Create(func, 0);
  int count = 0;
  for (const std::string& name : AllBlockNames(func)) {
    count += NeedsMultiLevelTiling(sch, *sch.GetBlock(name)) ? 1 : 0;
  }
  return count;
}

TEST(AnalysisTest, MatmulNeedsTilingButRowSumAndElementwiseDoNot) {
  PrimFunc gmm = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(gmm, 0);
  BlockRV c = *sch.GetBlock("C");
  EXPECT_TRUE(NeedsMultiLevelTiling(sch, c));
  EXPECT_TRUE(HasTrivialBinding(sch, c));
  EXPECT_FALSE(IsSpatialBlock(*sch.Get(c)));
  EXPECT_FALSE(IsSpatialFunc(gmm));
  EXPECT_EQ(BlockIterKinds(*sch.Get(c)),
            (std::vector<IterKind>{IterKind::kSpatial, IterKind::kSpatial, IterKind::kSpatial,
                                   IterKind::kReduction}));
  for (const char* name : {"REDUCE_SUM", "ELEMENTWISE"}) {
    PrimFunc f = SmallWorkload(name);
    EXPECT_EQ(CountMatchedBlocks(f), 0) << name;
  }
  EXPECT_TRUE(IsSpatialFunc(SmallWorkload("ELEMENTWISE")));
}

TEST(AnalysisTest, TrivialBindingIsLostBySplit) {
  Schedule sch = Schedule::Create(SmallWorkload("GMM"), 0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  ASSERT_TRUE(sch.Split(loops[1], {InstValue(), InstValue::Int(2)}).ok());
  EXPECT_FALSE(HasTrivialBinding(sch, c));
  EXPECT_FALSE(NeedsMultiLevelTiling(sch, c));
  std::vector<std::optional<IterKind>> kinds = LoopIterKinds(sch, c);
  ASSERT_EQ(kinds.size(), 5u);
  EXPECT_EQ(kinds.back(), IterKind::kReduction);
  EXPECT_EQ(kinds[2], IterKind::kSpatial);
}

TEST(AnalysisTest, RFactorMatchesRowSumAndSmallSpaceMatmul) {
  PrimFunc sum = SmallWorkload("REDUCE_SUM");
  Schedule sch = Schedule::Create(sum, 0);
  std::string name = testing::FirstReductionBlock(sum);
  BlockRV block = *sch.GetBlock(name);
  EXPECT_TRUE(NeedsRFactorOrCrossThreadReduction(sch, block, 32));
  std::optional<SpaceReductionExtents> extents = CumulativeExtents(sch, block);
  ASSERT_TRUE(extents.has_value());
  EXPECT_GT(extents->reduction, 1);
  // A matmul with plenty of spatial parallelism is left to multi-level tiling.
  Schedule gmm = Schedule::Create(SmallWorkload("GMM"), 0);
  EXPECT_FALSE(NeedsRFactorOrCrossThreadReduction(gmm, *gmm.GetBlock("C"), 1 << 20));
  // A GEMV with 1 output row and a long reduction does get rfactor.
  PrimFunc gemv = *MakeWorkload("GEMV", {{"M", 1}});
  Schedule g = Schedule::Create(gemv, 0);
  BlockRV gb = *g.GetBlock(testing::FirstReductionBlock(gemv));
  EXPECT_TRUE(NeedsRFactorOrCrossThreadReduction(g, gb, 16));
}

TEST(AnalysisTest, ReadWritePatternOfCopiesAndTransposes) {
  Var i("i"), j("j");
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(4), Expr(4)});
  Buffer b = Buffer::Make("B", DataType::Float32(), {Expr(4), Expr(4)});
  auto region = [](const Buffer& buf, std::vector<Expr> mins) {
    BufferRegion r{buf, {}};
    for (Expr& m : mins) r.region.push_back(Range::FromMinExtent(m, Expr(1)));
    return r;
  };
  ReadWritePattern copy = AnalyzeReadWritePattern(region(a, {i, j}), region(b, {i, j}));
  EXPECT_TRUE(copy.exists && copy.injective && copy.ordered && copy.surjective);
  ReadWritePattern transpose = AnalyzeReadWritePattern(region(a, {j, i}), region(b, {i, j}));
  EXPECT_TRUE(transpose.exists && transpose.injective);
  EXPECT_FALSE(transpose.ordered);
  ReadWritePattern broadcast = AnalyzeReadWritePattern(region(a, {Expr(0), j}), region(b, {i, j}));
  EXPECT_TRUE(broadcast.injective && broadcast.ordered);
  EXPECT_FALSE(broadcast.surjective || broadcast.no_const_read);
  ReadWritePattern twice = AnalyzeReadWritePattern(region(a, {j, j + Expr(1)}), region(b, {i, j}));
  EXPECT_FALSE(twice.injective || twice.no_shift_read);
  ReadWritePattern other = AnalyzeReadWritePattern(region(a, {i * Expr(2), j}), region(b, {i, j}));
  EXPECT_FALSE(other.exists);
}

TEST(AnalysisTest, TheCopyBlockOfACacheWriteIsAWriteCacheAndTheMatmulIsNot) {
  Schedule sch = Schedule::Create(SmallWorkload("GMM"), 0);
  BlockRV c = *sch.GetBlock("C");
  EXPECT_FALSE(IsWriteCache(sch, c));
  absl::StatusOr<BlockRV> cache = sch.CacheWrite(c, 0, "global");
  ASSERT_TRUE(cache.ok()) << cache.status();
  // One of the two blocks now computes into the cache, the other copies it out.
  std::vector<std::string> copies;
  for (const std::string& name : AllBlockNames(sch.func())) {
    if (IsWriteCache(sch, *sch.GetBlock(name))) copies.push_back(name);
  }
  EXPECT_EQ(copies.size(), 1u);
  EXPECT_TRUE(IsWriteCache(sch, *cache));  // the returned block is the copy
  EXPECT_TRUE(IsWriteCache(*sch.Get(*cache)));
  EXPECT_FALSE(IsWriteCache(sch, c));
  EXPECT_FALSE(NeedsMultiLevelTiling(sch, *cache));
}

}  // namespace
}  // namespace tessera
