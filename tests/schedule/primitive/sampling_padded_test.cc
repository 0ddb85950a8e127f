// SamplePaddedTile (schedule/primitive/sampling.cc, schedule/padded_tile.h): fresh draws of a
// prime extent cover it with a bounded padding and a normalized outer factor, recorded decisions
// are normalized and replay from trace JSON, and a Split with the factors computes what the
// unscheduled matmul computes.
#include <set>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "schedule/padded_tile.h"
#include "schedule/schedule.h"
#include "schedule/trace.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

PrimFunc Gmm(int64_t m, int64_t n, int64_t k) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}});
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

std::vector<int64_t> Values(const Schedule& sch, const std::vector<ExprRV>& rvs) {
  std::vector<int64_t> values;
  for (ExprRV rv : rvs) values.push_back(*sch.Get(rv));
  return values;
}

TEST(SamplePaddedTileTest, PrimeExtentGetsNonDividingTilesWithBoundedPadding) {
  const PrimFunc func = Gmm(4, 257, 4);
  std::set<std::vector<int64_t>> seen;
  int non_dividing = 0;
  for (int64_t seed = 0; seed < 100; ++seed) {
    Schedule sch = Schedule::Create(func, Random(seed).ForkSeed());
    std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
    absl::StatusOr<std::vector<ExprRV>> rvs = sch.SamplePaddedTile(loops[2], 4, 16);
    ASSERT_TRUE(rvs.ok()) << rvs.status();
    const std::vector<int64_t> tiles = Values(sch, *rvs);
    ASSERT_EQ(tiles.size(), 4u);
    EXPECT_LE(tiles[3], 16);
    int64_t inner = tiles[1] * tiles[2] * tiles[3];
    EXPECT_EQ(tiles[0], (257 + inner - 1) / inner) << "outer factor not normalized";
    const int64_t padded = tiles[0] * inner;
    EXPECT_TRUE(padded_tile::PaddingAllowed(257, padded)) << padded;
    if (padded != 257) ++non_dividing;
    seen.insert(tiles);
  }
  // Half of the draws take the quantum 1 (257 unpadded), the others one of 2, 4, 8, 16.
  EXPECT_GT(non_dividing, 25);
  EXPECT_LT(non_dividing, 75);
  EXPECT_GT(seen.size(), 10u);
}

TEST(SamplePaddedTileTest, RecordedDecisionIsNormalizedAndReplays) {
  const PrimFunc func = Gmm(4, 127, 4);
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  // A stale outer factor (a mutator changed the inner ones) is recomputed: ceil(127 / 16) = 8.
  absl::StatusOr<std::vector<ExprRV>> rvs =
      sch.SamplePaddedTile(loops[2], 3, 8, InstValue::IntArray({1, 2, 8}));
  ASSERT_TRUE(rvs.ok()) << rvs.status();
  EXPECT_EQ(Values(sch, *rvs), (std::vector<int64_t>{8, 2, 8}));
  EXPECT_EQ(sch.trace().decision(sch.trace().size() - 1), InstValue::IntArray({8, 2, 8}));
  std::vector<InstValue> factors;
  for (ExprRV rv : *rvs) factors.push_back(InstValue::Of(rv));
  ASSERT_TRUE(sch.Split(loops[2], factors).ok());
  EXPECT_TRUE(testing::CheckScheduleCorrect(sch, func).ok())
      << testing::CheckScheduleCorrect(sch, func);
}

TEST(SamplePaddedTileTest, RejectsBadArguments) {
  const PrimFunc func = Gmm(4, 127, 4);
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  EXPECT_EQ(sch.SamplePaddedTile(loops[2], 0, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sch.SamplePaddedTile(loops[2], 2, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status wrong_length =
      sch.SamplePaddedTile(loops[2], 2, 8, InstValue::IntArray({1, 2, 3})).status();
  EXPECT_EQ(wrong_length.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_length.message().find("sample_padded_tile: decision has 3 factors"),
            std::string::npos)
      << wrong_length;
}

TEST(SamplePaddedTileTest, SplitAcrossTheReductionMatchesTheReference) {
  // All three extents prime: every loop split with a padded tail, the reduction one included.
  const PrimFunc func = Gmm(17, 19, 23);
  for (int64_t seed = 0; seed < 8; ++seed) {
    Schedule sch = Schedule::Create(func, Random(seed).ForkSeed());
    std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
    for (size_t l = 1; l < loops.size(); ++l) {
      absl::StatusOr<std::vector<ExprRV>> rvs = sch.SamplePaddedTile(loops[l], 3, 8);
      ASSERT_TRUE(rvs.ok()) << rvs.status();
      std::vector<InstValue> factors;
      for (ExprRV rv : *rvs) factors.push_back(InstValue::Of(rv));
      ASSERT_TRUE(sch.Split(loops[l], factors).ok());
    }
    absl::Status correct = testing::CheckScheduleCorrect(sch, func, seed);
    EXPECT_TRUE(correct.ok()) << correct;
  }
}

}  // namespace
}  // namespace tessera
