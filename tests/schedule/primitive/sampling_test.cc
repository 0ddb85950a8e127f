// Tests of SamplePerfectTile under product limits (schedule/schedule.h TileProductLimit):
// fresh draws meet the limits across loops, are uniform over the allowed tilings, look ahead
// to the loops tiled later, replay from trace JSON, and recorded decisions are validated.
#include <map>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "schedule/schedule.h"
#include "schedule/state.h"
#include "schedule/trace.h"

namespace tessera {
namespace {

// A matmul whose loops are b (1), i (m), j (n), k (k); `Loops` returns them.
PrimFunc Gmm(int64_t m, int64_t n, int64_t k = 4) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}});
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

std::vector<LoopRV> Loops(Schedule* sch) {
  for (const std::string& name : AllBlockNames(sch->func())) {
    absl::StatusOr<BlockRV> block = sch->GetBlock(name);
    absl::StatusOr<std::vector<LoopRV>> loops = sch->GetLoops(*block);
    if (loops.ok() && loops->size() == 4) return *loops;
  }
  ADD_FAILURE() << "no 4-deep loop nest";
  return {};
}

// Well-spread schedule seeds (a fresh generator's first draws grow with a small seed), as the
// sampler forks them.
int64_t SeedOf(int64_t i) { return Random(i).ForkSeed(); }

std::vector<int64_t> Values(const Schedule& sch, const std::vector<ExprRV>& rvs) {
  std::vector<int64_t> values;
  for (ExprRV rv : rvs) values.push_back(*sch.Get(rv));
  return values;
}

// Tiles i and j into 5 factors each, as MultiLevelTiling does on cuda: the factors at
// position 2 (threads) multiply to [32, 64] over both loops, those at position 1 (vthreads)
// to at most 4.
absl::Status TileThreadsAndVthreads(Schedule* sch, std::vector<int64_t>* threads,
                                    std::vector<int64_t>* vthreads) {
  std::vector<LoopRV> loops = Loops(sch);
  const int64_t n_extent = *AsConstInt((*sch->Get(loops[2]))->extent);
  std::vector<ExprRV> thread_rvs, vthread_rvs;
  for (int l = 1; l <= 2; ++l) {
    std::vector<int64_t> later = l == 1 ? std::vector<int64_t>{n_extent} : std::vector<int64_t>{};
    std::vector<TileProductLimit> limits = {{{2}, thread_rvs, 32, 64, later},
                                            {{1}, vthread_rvs, 1, 4, later}};
    absl::StatusOr<std::vector<ExprRV>> tiles = sch->SamplePerfectTile(loops[l], 5, 8, limits);
    if (!tiles.ok()) return tiles.status();
    thread_rvs.push_back((*tiles)[2]);
    vthread_rvs.push_back((*tiles)[1]);
  }
  *threads = Values(*sch, thread_rvs);
  *vthreads = Values(*sch, vthread_rvs);
  return absl::OkStatus();
}

TEST(SamplingLimitsTest, FreshDrawsMeetTheLimitsAcrossLoops) {
  PrimFunc func = Gmm(96, 64);
  std::map<int64_t, int> thread_products;
  for (int64_t seed = 1; seed <= 200; ++seed) {
    Schedule sch = Schedule::Create(func, SeedOf(seed));
    std::vector<int64_t> threads, vthreads;
    ASSERT_TRUE(TileThreadsAndVthreads(&sch, &threads, &vthreads).ok()) << seed;
    const int64_t t = threads[0] * threads[1];
    EXPECT_GE(t, 32) << seed;
    EXPECT_LE(t, 64) << seed;
    EXPECT_LE(vthreads[0] * vthreads[1], 4) << seed;
    ++thread_products[t];
    // Each tiling stays perfect, the innermost factor within its limit.
    for (size_t i = 0; i < sch.trace().size(); ++i) {
      if (std::string(sch.trace().insts()[i].kind->name) != "SamplePerfectTile") continue;
      const std::vector<int64_t> tiles = sch.trace().decision(i).AsIntArray();
      int64_t product = 1;
      for (int64_t f : tiles) product *= f;
      EXPECT_TRUE(product == 96 || product == 64) << product;
      EXPECT_LE(tiles.back(), 8);
    }
  }
  EXPECT_EQ(thread_products.size(), 3u);  // 32, 48 and 64 all occur
}

TEST(SamplingLimitsTest, FreshDrawIsUniformOverTheAllowedTilings) {
  // 8 = 2^3 in 3 factors, the first at most 2: 4 tilings start with 1, 3 with 2.
  PrimFunc func = Gmm(8, 4);
  std::map<std::vector<int64_t>, int> counts;
  for (int64_t seed = 1; seed <= 1400; ++seed) {
    Schedule sch = Schedule::Create(func, SeedOf(seed));
    std::vector<ExprRV> tiles =
        *sch.SamplePerfectTile(Loops(&sch)[1], 3, -1, {{{0}, {}, 1, 2, {}}});
    ++counts[Values(sch, tiles)];
  }
  ASSERT_EQ(counts.size(), 7u);
  for (const auto& [tiles, count] : counts) {
    EXPECT_LE(tiles[0], 2);
    EXPECT_GT(count, 140) << tiles[0] << "," << tiles[1] << "," << tiles[2];  // 200 expected
    EXPECT_LT(count, 260) << tiles[0] << "," << tiles[1] << "," << tiles[2];
  }
}

TEST(SamplingLimitsTest, LooksAheadToTheLaterLoops) {
  // Loop i (64) first; the loop after it has extent 3, so i's factor t must let t or 3t lie
  // in [32, 40]: t in {32} (t = 16 gives 16 or 48, t = 64 too many).
  PrimFunc func = Gmm(64, 4);
  for (int64_t seed = 1; seed <= 50; ++seed) {
    Schedule sch = Schedule::Create(func, SeedOf(seed));
    std::vector<ExprRV> tiles =
        *sch.SamplePerfectTile(Loops(&sch)[1], 2, -1, {{{1}, {}, 32, 40, {3}}});
    EXPECT_EQ(*sch.Get(tiles[1]), 32) << seed;
  }
  // With [30, 48], 16 (3 x 16 = 48) and 32 are both possible, and nothing else.
  std::map<int64_t, int> seen;
  for (int64_t seed = 1; seed <= 100; ++seed) {
    Schedule sch = Schedule::Create(func, SeedOf(seed));
    std::vector<ExprRV> tiles =
        *sch.SamplePerfectTile(Loops(&sch)[1], 2, -1, {{{1}, {}, 30, 48, {3}}});
    ++seen[*sch.Get(tiles[1])];
  }
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen.count(16) + seen.count(32), 2u);
}

TEST(SamplingLimitsTest, TraceReplaysFromJsonAndRedrawsUnderTheLimits) {
  PrimFunc func = Gmm(96, 64);
  Schedule sch = Schedule::Create(func, 7);
  std::vector<int64_t> threads, vthreads;
  ASSERT_TRUE(TileThreadsAndVthreads(&sch, &threads, &vthreads).ok());
  const std::string json = sch.trace().ToJson();
  EXPECT_NE(json.find("[[[2],32,64,[64]],[[1],1,4,[64]]]"), std::string::npos) << json;
  absl::StatusOr<Trace> parsed = Trace::FromJson(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->ToJson(), json);

  // Replayed with its decisions: the same factors.
  Schedule replay = Schedule::Create(func, 99);
  ASSERT_TRUE(parsed->ApplyTo(&replay, false).ok());
  EXPECT_EQ(replay.trace().ToJson(), json);

  // Replayed with its decisions erased: fresh draws, still within the limits.
  for (int64_t seed = 1; seed <= 30; ++seed) {
    Schedule fresh = Schedule::Create(func, SeedOf(seed));
    ASSERT_TRUE(parsed
                    ->ApplyTo(&fresh, false,
                              [](size_t, const Instruction&, const InstValue&) {
                                return InstValue();
                              })
                    .ok());
    int64_t t = 1, v = 1;
    for (size_t i = 0; i < fresh.trace().size(); ++i) {
      if (std::string(fresh.trace().insts()[i].kind->name) != "SamplePerfectTile") continue;
      t *= fresh.trace().decision(i).AsIntArray()[2];
      v *= fresh.trace().decision(i).AsIntArray()[1];
    }
    EXPECT_GE(t, 32);
    EXPECT_LE(t, 64);
    EXPECT_LE(v, 4);
  }
}

TEST(SamplingLimitsTest, RecordedDecisionIsKeptEvenIfItBreaksALimit) {
  // As a mutator may leave it: the limits govern fresh draws, the checks downstream judge
  // recorded decisions, so every mutated trace still replays.
  PrimFunc func = Gmm(96, 64);
  Schedule sch = Schedule::Create(func, 3);
  std::vector<int64_t> threads, vthreads;
  ASSERT_TRUE(TileThreadsAndVthreads(&sch, &threads, &vthreads).ok());
  size_t last = 0;
  for (size_t i = 0; i < sch.trace().size(); ++i) {
    if (std::string(sch.trace().insts()[i].kind->name) == "SamplePerfectTile") last = i;
  }
  // 64 threads on j alone: over the limit of 64 unless i has 1 thread.
  const Trace broken =
      sch.trace().WithDecision(last, InstValue::IntArray({1, 1, 64, 1, 1}), false);
  Schedule replay = Schedule::Create(func, 1);
  ASSERT_TRUE(broken.ApplyTo(&replay, false).ok());
  EXPECT_EQ(replay.trace().decision(last).AsIntArray(), (std::vector<int64_t>{1, 1, 64, 1, 1}));
}

TEST(SamplingLimitsTest, UnsatisfiableAndMalformedLimitsAreErrors) {
  PrimFunc func = Gmm(97, 4);  // 97 is prime: factors 1 or 97
  Schedule sch = Schedule::Create(func, 1);
  LoopRV i = Loops(&sch)[1];
  const size_t recorded = sch.trace().size();
  absl::StatusOr<std::vector<ExprRV>> none =
      sch.SamplePerfectTile(i, 3, -1, {{{0}, {}, 2, 50, {}}});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(std::string(none.status().message()).find("no tiling of loop"), std::string::npos)
      << none.status();
  EXPECT_FALSE(sch.SamplePerfectTile(i, 3, -1, {{{3}, {}, 1, 8, {}}}).ok());     // position
  EXPECT_FALSE(sch.SamplePerfectTile(i, 3, -1, {{{0, 0}, {}, 1, 8, {}}}).ok());  // repeated
  EXPECT_FALSE(sch.SamplePerfectTile(i, 3, -1, {{{0}, {}, 9, 8, {}}}).ok());     // min > max
  EXPECT_FALSE(sch.SamplePerfectTile(i, 3, -1, {{{0}, {}, 1, 8, {0}}}).ok());    // later 0
  EXPECT_FALSE(sch.SamplePerfectTile(i, 3, -1, {{{0}, {ExprRV{999}}, 1, 8, {}}}).ok());
  EXPECT_EQ(sch.trace().size(), recorded);  // nothing recorded on error
  // A limit that 97 can meet: the prime goes to position 0 or elsewhere.
  EXPECT_TRUE(sch.SamplePerfectTile(i, 3, -1, {{{0}, {}, 1, 97, {}}}).ok());
}

}  // namespace
}  // namespace tessera
