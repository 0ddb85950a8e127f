// MutateTileSize (tuner/mutator/mutate_tile_size.cc) on hand-built traces: one divisor moves
// between two tiles of one decision, the innermost tile respects its limit, the cooperative
// fetch vector length is redrawn, nothing applies without a tiling, and a padded tiling
// (SamplePaddedTile) changes one inner factor, keeps covering its extent and replays.
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "schedule/padded_tile.h"
#include "tests/tuner/mutator_testing.h"
#include "tuner/mutator.h"

namespace tessera {
namespace {

using mutator_testing::ChangedDecisions;
using mutator_testing::Cpu;
using mutator_testing::GmmTrace;
using mutator_testing::Make;
using mutator_testing::Product;
using mutator_testing::Replay;
using mutator_testing::SmallGmm;
using mutator_testing::TiledGmmTrace;
using mutator_testing::Workload;

TEST(MutateTileSizeTest, MovesOneDivisorBetweenTwoTilesOfOneDecision) {
  const PrimFunc func = SmallGmm();
  MutatorPtr m = Make("MutateTileSize", Cpu());
  Random rng(11);
  std::set<size_t> mutated_insts;
  for (int seed = 0; seed < 200; ++seed) {
    GmmTrace g = TiledGmmTrace(func, seed);
    std::optional<Trace> out = m->Apply(g.trace, func, &rng);
    if (!out) continue;  // j has two tiles: growing its innermost past 8 fails
    EXPECT_EQ(out->size(), g.trace.PostprocStart());
    const std::vector<size_t> changed = ChangedDecisions(g.trace, *out);
    ASSERT_EQ(changed.size(), 1u);
    const size_t k = changed[0];
    ASSERT_TRUE(k == g.tile_i || k == g.tile_j);
    mutated_insts.insert(k);
    const std::vector<int64_t> before = g.trace.decision(k).AsIntArray();
    const std::vector<int64_t> after = out->decision(k).AsIntArray();
    EXPECT_EQ(Product(after), Product(before));
    EXPECT_LE(after.back(), k == g.tile_i ? 4 : 8);
    std::vector<size_t> moved;
    for (size_t t = 0; t < before.size(); ++t) {
      if (before[t] != after[t]) moved.push_back(t);
    }
    ASSERT_EQ(moved.size(), 2u);  // one tile divided by d > 1, one multiplied by it
    const size_t x = before[moved[0]] > after[moved[0]] ? moved[0] : moved[1];
    const size_t y = x == moved[0] ? moved[1] : moved[0];
    EXPECT_EQ(before[x] / after[x], after[y] / before[y]);
    EXPECT_TRUE(Replay(*out, func).ok());
  }
  EXPECT_EQ(mutated_insts.size(), 2u);
}

TEST(MutateTileSizeTest, InnermostTileNeverGrowsWithoutALimit) {
  const PrimFunc func = SmallGmm();
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_TRUE(sch.SamplePerfectTile(loops[2], 2, -1, InstValue::IntArray({4, 4})).ok());
  const Trace trace = sch.trace();
  MutatorPtr m = Make("MutateTileSize", Cpu());
  Random rng(2);
  int nullopts = 0;
  for (int i = 0; i < 200; ++i) {
    std::optional<Trace> out = m->Apply(trace, func, &rng);
    if (!out) {
      ++nullopts;
      continue;
    }
    const std::vector<int64_t> after = out->decision(trace.size() - 1).AsIntArray();
    EXPECT_LT(after[1], 4);
    EXPECT_EQ(after[0] * after[1], 16);
  }
  EXPECT_GT(nullopts, 0);
  EXPECT_LT(nullopts, 200);
}

TEST(MutateTileSizeTest, RedrawsTheCooperativeFetchVectorLength) {
  const PrimFunc func = SmallGmm();
  Schedule sch = Schedule::Create(func, 0);
  BlockRV c = *sch.GetBlock("C");
  ExprRV len = *sch.SampleCategorical({1, 2, 4}, {1, 1, 1}, InstValue::Int(1));
  ASSERT_TRUE(sch.Annotate(c, attr::kCooperativeFetch, InstValue::Of(len)).ok());
  ExprRV other = *sch.SampleCategorical({1, 2}, {1, 1}, InstValue::Int(0));  // feeds nothing
  ASSERT_TRUE(sch.Annotate(c, "other", InstValue::Of(other)).ok());
  const Trace trace = sch.trace();
  MutatorPtr m = Make("MutateTileSize", Cpu());
  Random rng(4);
  std::set<int64_t> seen;
  for (int i = 0; i < 100; ++i) {
    std::optional<Trace> out = m->Apply(trace, func, &rng);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(ChangedDecisions(trace, *out), std::vector<size_t>{1});
    seen.insert(out->decision(1).as_int());
  }
  EXPECT_EQ(seen, (std::set<int64_t>{0, 2}));
}

TEST(MutateTileSizeTest, PaddedTilingChangesOneInnerFactorAndStillCoversThePrimeExtent) {
  const PrimFunc func = Workload("GMM", {{"B", 1}, {"M", 4}, {"N", 127}, {"K", 4}});
  Schedule sch = Schedule::Create(func, 0);
  const LoopRV j = (*sch.GetLoops(*sch.GetBlock("C")))[2];
  absl::StatusOr<std::vector<ExprRV>> rvs =
      sch.SamplePaddedTile(j, 4, 16, InstValue::IntArray({1, 2, 4, 16}));
  ASSERT_TRUE(rvs.ok()) << rvs.status();
  std::vector<InstValue> factors;
  for (ExprRV rv : *rvs) factors.push_back(InstValue::Of(rv));
  ASSERT_TRUE(sch.Split(j, factors).ok());
  const Trace trace = sch.trace();
  const size_t index = trace.size() - 2;
  const std::vector<int64_t> before = trace.decision(index).AsIntArray();
  ASSERT_EQ(before, (std::vector<int64_t>{1, 2, 4, 16}));  // 128 covers 127
  MutatorPtr m = Make("MutateTileSize", Cpu());
  Random rng(5);
  std::set<std::vector<int64_t>> seen;
  for (int i = 0; i < 100; ++i) {
    std::optional<Trace> out = m->Apply(trace, func, &rng);
    ASSERT_TRUE(out.has_value());
    ASSERT_EQ(ChangedDecisions(trace, *out), std::vector<size_t>{index});
    const std::vector<int64_t> after = out->decision(index).AsIntArray();
    int changed_inner = 0;
    for (size_t t = 1; t < after.size(); ++t) changed_inner += after[t] != before[t];
    EXPECT_EQ(changed_inner, 1);
    EXPECT_LE(after[3], 16);
    EXPECT_EQ(after, padded_tile::NormalizeOuter(after, 127));
    EXPECT_TRUE(padded_tile::PaddingAllowed(127, padded_tile::PaddedExtent(after, 127)));
    absl::StatusOr<Schedule> replayed = Replay(*out, func);
    ASSERT_TRUE(replayed.ok()) << replayed.status();
    seen.insert(after);
  }
  EXPECT_GT(seen.size(), 5u);
}

TEST(MutateTileSizeTest, NulloptWhenNothingIsTiled) {
  const PrimFunc func = SmallGmm();
  MutatorPtr m = Make("MutateTileSize", Cpu());
  Random rng(0);
  EXPECT_FALSE(m->Apply(Trace(), func, &rng).has_value());
  // A perfect tile of an extent-1 loop (GMM's b loop at B=1) has nothing to move.
  const PrimFunc b1 = Workload("GMM", {{"B", 1}, {"M", 8}, {"N", 8}, {"K", 8}});
  Schedule sch = Schedule::Create(b1, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_TRUE(sch.SamplePerfectTile(loops[0], 3, 4).ok());
  EXPECT_FALSE(m->Apply(sch.trace(), b1, &rng).has_value());
}

}  // namespace
}  // namespace tessera
