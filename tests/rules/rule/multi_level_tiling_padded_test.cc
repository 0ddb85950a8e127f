// MultiLevelTiling with pad_odd_extents on extents without a vector-sized divisor
// (rules/rule/multi_level_tiling.cc, schedule/padded_tile.h): on cpu a prime-shape matmul gets
// SamplePaddedTile decisions whose
// tiles do not divide the extents; every design space replays from trace JSON, computes what the
// unscheduled matmul computes, and builds with the C backend (vectorized innermost tile, the
// guarded tails partitioned) to the same outputs; the write cache of a padded tile is lowered to
// a buffer of the padded tile's size inside the tile loop, not a whole-output temporary
// (codegen/compact_buffers.h). On cuda the tiling stays perfect.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/lower.h"
#include "frontend/workloads.h"
#include "ir/functor.h"
#include "rules/registry.h"
#include "rules/schedule_rule.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

PrimFunc Gmm(int64_t m, int64_t n, int64_t k) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}});
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

std::vector<Schedule> ApplyMlt(const std::string& target, const PrimFunc& func, int64_t seed,
                               bool pad = true) {
  absl::StatusOr<ScheduleRulePtr> rule =
      NewMultiLevelTiling(*Target::Parse(target), nlohmann::json{{"pad_odd_extents", pad}});
  EXPECT_TRUE(rule.ok()) << rule.status();
  Schedule sch = Schedule::Create(func, seed);
  absl::StatusOr<std::vector<Schedule>> out = (*rule)->Apply(&sch, *sch.GetBlock("C"));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Schedule>{};
}

// The decisions of the SamplePaddedTile instructions of `sch`, in trace order.
std::vector<std::vector<int64_t>> PaddedDecisions(const Schedule& sch) {
  std::vector<std::vector<int64_t>> decisions;
  for (size_t i = 0; i < sch.trace().size(); ++i) {
    if (sch.trace().insts()[i].kind->name == std::string("SamplePaddedTile")) {
      decisions.push_back(sch.trace().decision(i).AsIntArray());
    }
  }
  return decisions;
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

TEST(MultiLevelTilingPaddedTest, PrimeMatmulSamplesNonDividingTilesOnCpu) {
  const PrimFunc func = Gmm(127, 257, 509);
  const std::vector<int64_t> extents = {127, 257, 509};  // i, j, k in trace order
  int non_dividing = 0;
  for (int64_t seed = 0; seed < 6; ++seed) {
    std::vector<Schedule> spaces = ApplyMlt("cpu", func, seed);
    ASSERT_FALSE(spaces.empty());
    for (const Schedule& sch : spaces) {
      const std::vector<std::vector<int64_t>> decisions = PaddedDecisions(sch);
      ASSERT_EQ(decisions.size(), 3u);
      for (size_t d = 0; d < 3; ++d) {
        EXPECT_EQ(decisions[d].size(), d == 2 ? 2u : 4u);  // "SSRSRS": 4 S slots, 2 R slots
        EXPECT_GE(Product(decisions[d]), extents[d]);
        non_dividing += Product(decisions[d]) != extents[d];
      }
      absl::Status replay = testing::CheckReplay(sch, func);
      EXPECT_TRUE(replay.ok()) << replay;
    }
  }
  EXPECT_GT(non_dividing, 0);
}

// As the postprocessors would: the outermost loop of C parallel, the innermost vectorized.
void ParallelizeAndVectorize(Schedule* sch) {
  std::vector<LoopRV> loops = *sch->GetLoops(*sch->GetBlock("C"));
  ASSERT_TRUE(sch->Parallel(loops.front()).ok());
  ASSERT_TRUE(sch->Vectorize(loops.back()).ok());
}

// Whether `sch` has a write cache of C (block C_global, buffer C_global).
bool HasWriteCache(const Schedule& sch) {
  for (const Instruction& inst : sch.trace().insts()) {
    if (inst.kind->name == std::string("CacheWrite")) return true;
  }
  return false;
}

TEST(MultiLevelTilingPaddedTest, PrimeMatmulBuildsWithNonDividingTilesAndMatchesTheReference) {
  const PrimFunc func = Gmm(127, 257, 509);
  int checked = 0;
  for (int64_t seed = 0; seed < 6 && checked < 2; ++seed) {
    for (Schedule& sch : ApplyMlt("cpu", func, seed)) {
      const std::vector<std::vector<int64_t>> decisions = PaddedDecisions(sch);
      ASSERT_EQ(decisions.size(), 3u);
      // Both spatial loops (i: 127, j: 257) tiled by factors that do not divide them.
      if (Product(decisions[0]) == 127 || Product(decisions[1]) == 257) continue;
      ParallelizeAndVectorize(&sch);
      absl::Status built = testing::CheckCBackendMatches(func, sch.func(), seed);
      EXPECT_TRUE(built.ok()) << built;
      ++checked;
      break;
    }
  }
  EXPECT_EQ(checked, 2);
}

TEST(MultiLevelTilingPaddedTest, PaddedWriteCachesLowerToThePaddedTile) {
  const PrimFunc func = Gmm(127, 257, 509);
  int cached = 0;
  for (int64_t seed = 0; seed < 6; ++seed) {
    for (const Schedule& sch : ApplyMlt("cpu", func, seed)) {
      if (!HasWriteCache(sch)) continue;
      const std::vector<std::vector<int64_t>> decisions = PaddedDecisions(sch);
      ASSERT_EQ(decisions.size(), 3u);
      if (Product(decisions[0]) == 127 && Product(decisions[1]) == 257) continue;
      absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
      ASSERT_TRUE(lowered.ok()) << lowered.status();
      // The cache is allocated inside the loops, at most one tile of i by one tile of j: the
      // product of the i and j factors below the outermost one.
      const int64_t tile =
          Product(decisions[0]) / decisions[0][0] * (Product(decisions[1]) / decisions[1][0]);
      int allocations = 0;
      PostOrderVisitStmts(lowered->body(), [&](const Stmt& st) {
        const auto* alloc = st.as<AllocateNode>();
        if (alloc == nullptr || alloc->buffer.name() != "C_global") return;
        ++allocations;
        EXPECT_LE(alloc->buffer.NumElements(), tile);
      });
      EXPECT_EQ(allocations, 1);
      EXPECT_EQ(lowered->body().as<AllocateNode>(), nullptr) << "C_global stayed at the root";
      ++cached;
    }
  }
  EXPECT_GT(cached, 0);
}

TEST(MultiLevelTilingPaddedTest, SequenceOf77GetsVectorTilesAndMatchesTheReference) {
  // CLIP's text length: 77 = 7 * 11, no divisor fit for a vector register.
  const PrimFunc func = Gmm(77, 77, 64);
  int padded = 0;
  for (int64_t seed = 0; seed < 3; ++seed) {
    for (Schedule& sch : ApplyMlt("cpu", func, seed)) {
      const std::vector<std::vector<int64_t>> decisions = PaddedDecisions(sch);
      ASSERT_EQ(decisions.size(), 2u);  // i and j; k (64) keeps perfect tiles
      if (Product(decisions[0]) == 77 && Product(decisions[1]) == 77) continue;
      ++padded;
      ParallelizeAndVectorize(&sch);
      absl::Status built = testing::CheckCBackendMatches(func, sch.func(), seed);
      EXPECT_TRUE(built.ok()) << built;
    }
  }
  EXPECT_GT(padded, 0);
}

TEST(MultiLevelTilingPaddedTest, DefaultRulesTakeTheParameterByRuleName) {
  const PrimFunc func = Gmm(127, 257, 509);
  for (bool pad : {false, true}) {
    absl::StatusOr<std::vector<ScheduleRulePtr>> rules = DefaultScheduleRules(
        *Target::Parse("cpu"), {{"MultiLevelTiling", {{"pad_odd_extents", pad}}}});
    ASSERT_TRUE(rules.ok()) << rules.status();
    int applied = 0;
    for (const ScheduleRulePtr& rule : *rules) {
      if (rule->name() != "MultiLevelTiling") continue;
      Schedule sch = Schedule::Create(func, 0);
      absl::StatusOr<std::vector<Schedule>> out = rule->Apply(&sch, *sch.GetBlock("C"));
      ASSERT_TRUE(out.ok()) << out.status();
      for (const Schedule& s : *out) EXPECT_EQ(PaddedDecisions(s).empty(), !pad);
      ++applied;
    }
    EXPECT_EQ(applied, 1);
  }
}

TEST(MultiLevelTilingPaddedTest, OffByDefault) {
  // No parameters: the rule's defaults (docs/design-spaces.md, "Odd extents", says why off).
  absl::StatusOr<ScheduleRulePtr> rule = NewMultiLevelTiling(*Target::Parse("cpu"), {});
  ASSERT_TRUE(rule.ok()) << rule.status();
  const PrimFunc func = Gmm(127, 257, 509);
  Schedule sch = Schedule::Create(func, 0);
  absl::StatusOr<std::vector<Schedule>> spaces = (*rule)->Apply(&sch, *sch.GetBlock("C"));
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  ASSERT_FALSE(spaces->empty());
  for (const Schedule& s : *spaces) EXPECT_TRUE(PaddedDecisions(s).empty());
  for (const Schedule& s : ApplyMlt("cpu", func, 0, /*pad=*/false)) {
    EXPECT_TRUE(PaddedDecisions(s).empty());
  }
}

TEST(MultiLevelTilingPaddedTest, RoundAndSmallExtentsKeepPerfectTiles) {
  for (const Schedule& sch : ApplyMlt("cpu", Gmm(128, 96, 15), 0)) {
    EXPECT_TRUE(PaddedDecisions(sch).empty());
  }
}

TEST(MultiLevelTilingPaddedTest, CudaKeepsPerfectTiles) {
  for (const Schedule& sch : ApplyMlt("cuda -arch=sm_80", Gmm(127, 257, 64), 0)) {
    EXPECT_TRUE(PaddedDecisions(sch).empty());
  }
}

TEST(MultiLevelTilingPaddedTest, PaddedSpacesComputeTheMatmulInTheInterpreterAndTheCBackend) {
  const PrimFunc func = Gmm(37, 67, 23);
  int checked = 0;
  for (int64_t seed = 0; seed < 4; ++seed) {
    for (Schedule& sch : ApplyMlt("cpu", func, seed)) {
      ASSERT_EQ(PaddedDecisions(sch).size(), 3u);
      absl::Status correct = testing::CheckScheduleCorrect(sch, func, seed);
      EXPECT_TRUE(correct.ok()) << correct;
      ParallelizeAndVectorize(&sch);
      absl::Status built = testing::CheckCBackendMatches(func, sch.func(), seed);
      EXPECT_TRUE(built.ok()) << built;
      ++checked;
    }
  }
  EXPECT_GE(checked, 4);
}

TEST(MultiLevelTilingPaddedTest, VocabularySizedRowGetsVectorTilesAndMatchesTheReference) {
  // GPT-2's vocabulary, 50257 = 29 * 1733: no divisor fit for a vector register.
  const PrimFunc func = Gmm(1, 50257, 16);
  std::vector<Schedule> spaces = ApplyMlt("cpu", func, 3);
  ASSERT_FALSE(spaces.empty());
  Schedule& sch = spaces.back();
  const std::vector<std::vector<int64_t>> decisions = PaddedDecisions(sch);
  ASSERT_EQ(decisions.size(), 1u);  // j only: i (1) and k (16) keep perfect tiles
  EXPECT_GE(Product(decisions[0]), 50257);
  EXPECT_LE(Product(decisions[0]), 50257 + 50257 / 8);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_TRUE(sch.Vectorize(loops.back()).ok());
  absl::Status built = testing::CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

}  // namespace
}  // namespace tessera
