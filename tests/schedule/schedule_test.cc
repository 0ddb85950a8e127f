// Tests of the Schedule core: lookups, sampling, loop kinds, annotations and their traces.
#include "schedule/schedule.h"

#include <map>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/structural_equal.h"

namespace tessera {
namespace {

PrimFunc Gmm(int64_t m = 64, int64_t n = 32, int64_t k = 16) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}});
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

// The name of the (only) block that reduces: the matmul's compute block.
std::string ReductionBlockName(const PrimFunc& func) {
  std::string name;
  for (const std::string& candidate : AllBlockNames(func)) {
    absl::StatusOr<StmtPath> path = FindBlockPath(func, candidate);
    const Block& block = path->back().as<BlockRealizeNode>()->block;
    for (const IterVar& iv : block->iter_vars) {
      if (iv.kind == IterKind::kReduction) name = candidate;
    }
  }
  return name;
}

TEST(ScheduleTest, GetBlockAndLoopsAreRecorded) {
  PrimFunc func = Gmm();
  Schedule sch = Schedule::Create(func, 1);
  std::string name = ReductionBlockName(func);
  absl::StatusOr<BlockRV> block = sch.GetBlock(name);
  ASSERT_TRUE(block.ok()) << block.status();
  absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(*block);
  ASSERT_TRUE(loops.ok());
  EXPECT_EQ(loops->size(), 4u);  // b, i, j, k
  std::string json = sch.trace().ToJson();
  EXPECT_EQ(json.rfind("[[[\"GetBlock\",[],[\"" + name + "\",\"main\"],[\"b0\"]],[\"GetLoops\",[\"b0\"],[],[\"l1\",\"l2\",\"l3\",\"l4\"]]],[]]", 0), 0u) << json;
}

TEST(ScheduleTest, GetBlockOfUnknownNameFails) {
  Schedule sch = Schedule::Create(Gmm(), 1);
  absl::StatusOr<BlockRV> block = sch.GetBlock("nope");
  ASSERT_FALSE(block.ok());
  EXPECT_NE(std::string(block.status().message()).find("nope"), std::string::npos);
  EXPECT_EQ(sch.trace().size(), 0u);
}

TEST(ScheduleTest, PerfectTileMultipliesToExtentAndRespectsInnermostLimit) {
  PrimFunc func = Gmm(96, 32, 16);
  for (int64_t seed = 1; seed <= 50; ++seed) {
    Schedule sch = Schedule::Create(func, seed);
    BlockRV block = *sch.GetBlock(ReductionBlockName(func));
    std::vector<LoopRV> loops = *sch.GetLoops(block);
    absl::StatusOr<std::vector<ExprRV>> tiles = sch.SamplePerfectTile(loops[1], 4, 8);
    ASSERT_TRUE(tiles.ok()) << tiles.status();
    int64_t product = 1;
    for (ExprRV t : *tiles) product *= *sch.Get(t);
    EXPECT_EQ(product, 96);
    EXPECT_LE(*sch.Get(tiles->back()), 8);
  }
}

TEST(ScheduleTest, PerfectTileIsUniformOverTilings) {
  // 12 = 2^2 * 3 has 6 * 3 = 18 ordered 2-factor... check 2 factors: divisors of 12 -> 6 tilings.
  PrimFunc func = Gmm(12, 4, 4);
  std::map<int64_t, int> counts;
  for (int64_t seed = 1; seed <= 600; ++seed) {
    Schedule sch = Schedule::Create(func, seed);
    std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock(ReductionBlockName(func)));
    std::vector<ExprRV> tiles = *sch.SamplePerfectTile(loops[1], 2, -1);
    ++counts[*sch.Get(tiles[0])];
  }
  EXPECT_EQ(counts.size(), 6u);
  for (const auto& [factor, count] : counts) EXPECT_GT(count, 60) << factor;
}

TEST(ScheduleTest, PerfectTileRepairsStaleDecision) {
  PrimFunc func = Gmm(64, 32, 16);
  Schedule sch = Schedule::Create(func, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock(ReductionBlockName(func)));
  std::vector<ExprRV> tiles =
      *sch.SamplePerfectTile(loops[1], 3, -1, InstValue::IntArray({5, 3, 4}));
  EXPECT_EQ(*sch.Get(tiles[0]) * *sch.Get(tiles[1]) * *sch.Get(tiles[2]), 64);
  EXPECT_EQ(*sch.Get(tiles[2]), 4);
}

TEST(ScheduleTest, CategoricalRecordsIndexDecision) {
  Schedule sch = Schedule::Create(Gmm(), 3);
  absl::StatusOr<ExprRV> v = sch.SampleCategorical({0, 16, 64}, {0, 0, 1});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*sch.Get(*v), 64);
  EXPECT_EQ(sch.trace().decision(0).as_int(), 2);
  EXPECT_FALSE(sch.SampleCategorical({1, 2}, {0.5}).ok());
  EXPECT_FALSE(sch.SampleCategorical({1, 2}, {0.5, 0.5}, InstValue::Int(2)).ok());
}

TEST(ScheduleTest, ParallelRejectsReductionLoop) {
  PrimFunc func = Gmm();
  Schedule sch = Schedule::Create(func, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock(ReductionBlockName(func)));
  absl::Status s = sch.Parallel(loops[3]);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("reduction"), std::string::npos) << s;
  EXPECT_TRUE(sch.Parallel(loops[1]).ok());
  EXPECT_FALSE(sch.Parallel(loops[1]).ok()) << "already parallel";
  EXPECT_TRUE(sch.Vectorize(loops[2]).ok());
  EXPECT_FALSE(sch.Bind(loops[0], "threadIdx.w").ok());
}

TEST(ScheduleTest, TraceReplaysToTheSameFunction) {
  PrimFunc func = Gmm();
  Schedule sch = Schedule::Create(func, 7);
  BlockRV block = *sch.GetBlock(ReductionBlockName(func));
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  ExprRV unroll = *sch.SampleCategorical({0, 16, 64, 512}, {0.25, 0.25, 0.25, 0.25});
  ASSERT_TRUE(sch.Annotate(block, "meta_schedule.unroll_explicit", InstValue::Of(unroll)).ok());
  ASSERT_TRUE(sch.Annotate(loops[1], "pragma_note", InstValue::String("x")).ok());
  ASSERT_TRUE(sch.Parallel(loops[1]).ok());
  ASSERT_TRUE(sch.Unannotate(loops[1], "pragma_note").ok());
  sch.EnterPostproc();

  absl::StatusOr<Trace> trace = Trace::FromJson(sch.trace().ToJson());
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->ToJson(), sch.trace().ToJson());
  Schedule replay = Schedule::Create(func, 99);
  ASSERT_TRUE(trace->ApplyTo(&replay, /*remove_postproc=*/false).ok());
  EXPECT_TRUE(StructuralEqual(replay.func(), sch.func()));
  EXPECT_EQ(replay.trace().ToJson(), sch.trace().ToJson());
}

}  // namespace
}  // namespace tessera
