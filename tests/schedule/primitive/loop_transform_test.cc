// Split, fuse, reorder and add_unit_loop: outputs match the unscheduled program, traces
// replay, and invalid uses fail with an error instead of a wrong program.
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using testing::CheckReplay;
using testing::CheckSameOutputs;

struct Fixture {
  PrimFunc func;
  Schedule sch;
  BlockRV block;
  std::vector<LoopRV> loops;
};

Fixture MakeGmm(int64_t m, int64_t n, int64_t k, int64_t seed = 1) {
  PrimFunc func = *MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}});
  Schedule sch = Schedule::Create(func, seed);
  BlockRV block = *sch.GetBlock(testing::FirstReductionBlock(func));
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  return {func, sch, block, loops};
}

void ExpectCorrect(const Fixture& f) {
  absl::Status s = testing::CheckScheduleCorrect(f.sch, f.func);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(SplitTest, PerfectSplitKeepsMeaning) {
  Fixture f = MakeGmm(16, 8, 8);
  absl::StatusOr<std::vector<LoopRV>> parts =
      f.sch.Split(f.loops[1], {InstValue::Int(4), InstValue::Int(2), InstValue::Int(2)});
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ(parts->size(), 3u);
  ExpectCorrect(f);
}

TEST(SplitTest, InfersOneFactor) {
  Fixture f = MakeGmm(16, 8, 8);
  absl::StatusOr<std::vector<LoopRV>> parts = f.sch.Split(f.loops[2], {InstValue(), InstValue::Int(4)});
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ(*AsConstInt((*f.sch.Get((*parts)[0]))->extent), 2);
  ExpectCorrect(f);
}

TEST(SplitTest, ImperfectSplitAddsPredicate) {
  Fixture f = MakeGmm(10, 8, 6);
  ASSERT_TRUE(f.sch.Split(f.loops[1], {InstValue(), InstValue::Int(4)}).ok());
  ASSERT_TRUE(f.sch.Split(f.loops[3], {InstValue::Int(4), InstValue::Int(2)}).ok());
  EXPECT_NE(PrintFunc(f.sch.func()).find("where"), std::string::npos);
  ExpectCorrect(f);
}

TEST(SplitTest, SampledFactorsAreExprRVs) {
  Fixture f = MakeGmm(32, 16, 8, 5);
  std::vector<ExprRV> tiles = *f.sch.SamplePerfectTile(f.loops[1], 3, 4);
  std::vector<InstValue> factors;
  for (ExprRV t : tiles) factors.push_back(InstValue::Of(t));
  ASSERT_TRUE(f.sch.Split(f.loops[1], factors).ok());
  ExpectCorrect(f);
}

TEST(SplitTest, RejectsFactorsThatDoNotCover) {
  Fixture f = MakeGmm(30, 8, 8);
  absl::StatusOr<std::vector<LoopRV>> parts = f.sch.Split(f.loops[1], {InstValue::Int(4), InstValue::Int(7)});
  ASSERT_FALSE(parts.ok());
  EXPECT_NE(std::string(parts.status().message()).find("split: factors 4*7=28 do not cover extent 30"),
            std::string::npos)
      << parts.status();
  EXPECT_FALSE(f.sch.Split(f.loops[1], {InstValue(), InstValue()}).ok());
  EXPECT_FALSE(f.sch.Split(f.loops[1], {InstValue::Int(0), InstValue()}).ok());
  EXPECT_FALSE(f.sch.Split(f.loops[1], {InstValue::Int(30)}).ok());
}

TEST(SplitTest, SplitLoopRVIsStaleAfterwards) {
  Fixture f = MakeGmm(16, 8, 8);
  ASSERT_TRUE(f.sch.Split(f.loops[1], {InstValue::Int(4), InstValue::Int(4)}).ok());
  absl::StatusOr<std::vector<LoopRV>> again = f.sch.Split(f.loops[1], {InstValue::Int(4), InstValue::Int(4)});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kNotFound);
}

TEST(FuseTest, FusesAChainAndKeepsMeaning) {
  Fixture f = MakeGmm(8, 6, 4);
  absl::StatusOr<LoopRV> fused = f.sch.Fuse({f.loops[0], f.loops[1], f.loops[2]});
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(*AsConstInt((*f.sch.Get(*fused))->extent), 48);
  ExpectCorrect(f);
}

TEST(FuseTest, SplitThenFuseRoundTrips) {
  Fixture f = MakeGmm(12, 8, 4);
  std::vector<LoopRV> parts = *f.sch.Split(f.loops[1], {InstValue::Int(3), InstValue::Int(4)});
  ASSERT_TRUE(f.sch.Fuse(parts).ok());
  ExpectCorrect(f);
}

TEST(FuseTest, RejectsNonAdjacentLoops) {
  Fixture f = MakeGmm(8, 8, 8);
  absl::StatusOr<LoopRV> fused = f.sch.Fuse({f.loops[1], f.loops[3]});
  ASSERT_FALSE(fused.ok());
  EXPECT_NE(std::string(fused.status().message()).find("fuse:"), std::string::npos);
}

TEST(ReorderTest, ReordersAndKeepsMeaning) {
  Fixture f = MakeGmm(8, 6, 4);
  ASSERT_TRUE(f.sch.Reorder({f.loops[3], f.loops[2], f.loops[1]}).ok());
  ExpectCorrect(f);
}

TEST(ReorderTest, TiledReorderLikeMultiLevelTiling) {
  Fixture f = MakeGmm(16, 16, 8);
  std::vector<LoopRV> i = *f.sch.Split(f.loops[1], {InstValue::Int(4), InstValue::Int(4)});
  std::vector<LoopRV> j = *f.sch.Split(f.loops[2], {InstValue::Int(2), InstValue::Int(8)});
  std::vector<LoopRV> k = *f.sch.Split(f.loops[3], {InstValue::Int(2), InstValue::Int(4)});
  ASSERT_TRUE(f.sch.Reorder({i[0], j[0], k[0], i[1], k[1], j[1]}).ok());
  ASSERT_TRUE(f.sch.Parallel(i[0]).ok());
  ASSERT_TRUE(f.sch.Vectorize(j[1]).ok());
  ExpectCorrect(f);
}

TEST(ReorderTest, RejectsLoopsOfDifferentNests) {
  PrimFunc func = testing::SmallWorkload("SFM");
  Schedule sch = Schedule::Create(func, 1);
  std::vector<std::string> names = AllBlockNames(func);
  ASSERT_GE(names.size(), 3u);
  std::vector<LoopRV> a = *sch.GetLoops(*sch.GetBlock(names[1]));
  std::vector<LoopRV> b = *sch.GetLoops(*sch.GetBlock(names[2]));
  absl::Status s = sch.Reorder({a.back(), b.back()});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("reorder:"), std::string::npos);
}

TEST(ReorderTest, RejectsLoopBindingSpatialAndReduction) {
  // Found by the randomized test: GEMV with i and k fused, re-split and reordered computed
  // reduction steps before their init.
  PrimFunc func = testing::SmallWorkload("GEMV");
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock(testing::FirstReductionBlock(func));
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  LoopRV fused = *sch.Fuse(loops);
  std::vector<LoopRV> parts = *sch.Split(fused, {InstValue::Int(2), InstValue()});
  size_t trace_size = sch.trace().size();
  absl::Status s = sch.Reorder({parts[1], parts[0]});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("binds both spatial and reduction"), std::string::npos)
      << s;
  EXPECT_EQ(sch.trace().size(), trace_size);
}

TEST(AddUnitLoopTest, AddsLoopAboveBlock) {
  Fixture f = MakeGmm(4, 4, 4);
  absl::StatusOr<LoopRV> unit = f.sch.AddUnitLoop(f.block);
  ASSERT_TRUE(unit.ok());
  EXPECT_EQ(f.sch.GetLoops(f.block)->size(), 5u);
  ExpectCorrect(f);
}

}  // namespace
}  // namespace tessera
