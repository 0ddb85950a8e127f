// MultiLevelTiling's GPU-limit-aware sampling: on cuda the tile factors bound to threadIdx and
// vthread are SamplePerfectTile decisions under product limits (VerifyGPUCode's thread-extent
// bounds and virtual-thread limit), so every redraw of a design space meets them; on cpu the
// tiling samples as before, without limits.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "codegen/verify_gpu.h"
#include "frontend/workloads.h"
#include "rules/annotations.h"
#include "rules/schedule_rule.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using testing::SmallWorkload;

Target Cuda() { return *Target::Parse("cuda -arch=sm_80"); }

// The schedules `rule` gives for the first block it tiles (the others are left alone).
std::vector<Schedule> TileFirstMatch(const ScheduleRule& rule, const PrimFunc& func, int64_t seed) {
  for (const std::string& name : AllBlockNames(func)) {
    Schedule sch = Schedule::Create(func, seed);
    BlockRV block = *sch.GetBlock(name);
    absl::StatusOr<std::vector<Schedule>> out = rule.Apply(&sch, block);
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return {};
    for (const Schedule& s : *out) {
      for (const Instruction& inst : s.trace().insts()) {
        if (std::string(inst.kind->name) == "SamplePerfectTile") return *out;
      }
    }
  }
  return {};
}

// For each limit of the trace's SamplePerfectTiles, keyed by its [min, max]: the product of
// the decided factors at its positions over all loops.
std::map<std::pair<int64_t, int64_t>, int64_t> LimitedProducts(const Trace& trace) {
  std::map<std::pair<int64_t, int64_t>, int64_t> products;
  for (size_t i = 0; i < trace.size(); ++i) {
    const Instruction& inst = trace.insts()[i];
    if (std::string(inst.kind->name) != "SamplePerfectTile" || inst.attrs.size() != 3) continue;
    const std::vector<int64_t> tiles = trace.decision(i).AsIntArray();
    for (const InstValue& limit : inst.attrs[2].items()) {
      auto key = std::make_pair(limit.items()[1].as_int(), limit.items()[2].as_int());
      int64_t& product = products.emplace(key, 1).first->second;
      for (int64_t pos : limit.items()[0].AsIntArray()) product *= tiles[pos];
    }
  }
  return products;
}

Trace Redraw(const Trace& trace, const PrimFunc& func, int64_t seed) {
  Schedule fresh = Schedule::Create(func, seed);
  absl::Status replayed = trace.ApplyTo(
      &fresh, true, [](size_t, const Instruction&, const InstValue&) { return InstValue(); });
  EXPECT_TRUE(replayed.ok()) << replayed;
  return fresh.trace();
}

TEST(MultiLevelTilingLimitsTest, CudaRedrawsMeetTheThreadAndVthreadLimits) {
  const Target cuda = Cuda();
  ScheduleRulePtr rule = *NewMultiLevelTiling(cuda, nullptr);
  for (const char* name : {"GMM", "C2D", "CAP", "DENSE_BIAS_RELU"}) {
    PrimFunc func = SmallWorkload(name);
    std::vector<Schedule> spaces = TileFirstMatch(*rule, func, 5);
    ASSERT_EQ(spaces.size(), 1u) << name;
    const Trace& space = spaces[0].trace();
    // The thread limit's low end is the block's annotated one.
    int64_t low = -1;
    for (const std::string& block : AllBlockNames(spaces[0].func())) {
      absl::StatusOr<StmtPath> path = FindBlockPath(spaces[0].func(), block);
      const Block& b = path->back().as<BlockRealizeNode>()->block;
      auto it = b->annotations.find(attr::kThreadExtentLowInclusive);
      if (it != b->annotations.end()) low = std::get<int64_t>(it->second);
    }
    const std::pair<int64_t, int64_t> threads = {low, cuda.max_threads_per_block()};
    const std::pair<int64_t, int64_t> vthreads = {1, kMaxVirtualThreads};
    std::map<std::pair<int64_t, int64_t>, int64_t> products = LimitedProducts(space);
    ASSERT_EQ(products.size(), 2u) << name << ": " << space.ToJson();
    ASSERT_EQ(products.count(threads), 1u) << name;
    ASSERT_EQ(products.count(vthreads), 1u) << name;
    // Replays from its JSON, and every redraw stays within the limits.
    absl::StatusOr<Trace> parsed = Trace::FromJson(space.ToJson());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    for (int64_t seed = 1; seed <= 100; ++seed) {
      products = LimitedProducts(Redraw(*parsed, func, Random(seed).ForkSeed()));
      EXPECT_GE(products[threads], threads.first) << name << " seed " << seed;
      EXPECT_LE(products[threads], threads.second) << name << " seed " << seed;
      EXPECT_LE(products[vthreads], vthreads.second) << name << " seed " << seed;
    }
  }
}

TEST(MultiLevelTilingLimitsTest, CpuTilingHasNoLimits) {
  ScheduleRulePtr rule = *NewMultiLevelTiling(*Target::Parse("cpu"), nullptr);
  std::vector<Schedule> spaces = TileFirstMatch(*rule, SmallWorkload("GMM"), 5);
  ASSERT_FALSE(spaces.empty());
  for (const Schedule& s : spaces) {
    for (const Instruction& inst : s.trace().insts()) {
      if (std::string(inst.kind->name) != "SamplePerfectTile") continue;
      EXPECT_EQ(inst.inputs.size(), 1u);
      EXPECT_EQ(inst.attrs.size(), 2u);
    }
  }
}

TEST(MultiLevelTilingLimitsTest, CudaBlockWithoutValidThreadCountIsLeftUntiled) {
  // 2 x 1031 (a prime) outputs: the threads per block can only be 1, 2, 1031 or 2062, none
  // within [32, 1024], so no tiling can pass VerifyGPUCode and the rule leaves the block.
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM", {{"B", 1}, {"M", 2}, {"N", 1031}, {"K", 4}});
  ASSERT_TRUE(func.ok()) << func.status();
  ScheduleRulePtr rule = *NewMultiLevelTiling(Cuda(), nullptr);
  Schedule sch = Schedule::Create(*func, 1);
  BlockRV block = *sch.GetBlock("C");
  absl::StatusOr<std::vector<Schedule>> out = rule->Apply(&sch, block);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  for (const Instruction& inst : (*out)[0].trace().insts()) {
    EXPECT_NE(std::string(inst.kind->name), "SamplePerfectTile");
  }
}

TEST(MultiLevelTilingLimitsTest, TensorCoreThreadLimitCountsWholeWarps) {
  // A warp_execution block runs warp_size threads per threadIdx.y: at most 1024 / 32 = 32.
  absl::StatusOr<PrimFunc> func =
      MakeWorkload("GMM", {{"B", 1}, {"M", 64}, {"N", 128}, {"K", 32}}, "float16");
  ASSERT_TRUE(func.ok()) << func.status();
  ScheduleRulePtr rule = *NewMultiLevelTilingTensorCore(Cuda(), nullptr);
  std::vector<Schedule> spaces = TileFirstMatch(*rule, *func, 3);
  ASSERT_EQ(spaces.size(), 1u);
  std::map<std::pair<int64_t, int64_t>, int64_t> products = LimitedProducts(spaces[0].trace());
  const std::pair<int64_t, int64_t> warps = {1, 32};
  ASSERT_EQ(products.count(warps), 1u) << spaces[0].trace().ToJson();
  EXPECT_LE(products[warps], 32);
}

}  // namespace
}  // namespace tessera
