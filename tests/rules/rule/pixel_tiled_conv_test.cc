// PixelTiledConv (rules/rule/pixel_tiled_conv.cc) and the TiledConvolution it shares with the
// CPU default (rules/default/tiled_conv.h): on round and odd convolutions (a prime width,
// channels no vector divides, stride 2, a fused bias and relu) the tiled space with fresh samples
// replays from its trace, computes what the unscheduled program computes in the reference
// interpreter and builds with the C backend to the same outputs; the default schedule is a
// point of the space whose tile decisions can be changed and replayed; depthwise convolutions,
// GEMMs and GPU targets are left alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "rules/annotations.h"
#include "rules/default/rule_factories.h"
#include "rules/default/tiled_conv.h"
#include "rules/registry.h"
#include "rules/schedule_rule.h"
#include "schedule/trace.h"
#include "tests/rules/rule_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using rule_testing::Cpu;

// The AVX-512 core the tiles below were measured on (Cpu() is an AVX2 one).
Target Avx512() { return *Target::Parse("cpu -cores=4 -vector_bits=512"); }
using rule_testing::Cuda;
using rule_testing::Workload;

PrimFunc Conv2d(const std::string& name, int64_t hw, int64_t ci, int64_t co, int64_t stride) {
  return Workload(name, {{"N", 1},
                         {"H", hw},
                         {"W", hw},
                         {"CI", ci},
                         {"CO", co},
                         {"K", 3},
                         {"stride", stride},
                         {"padding", 1}});
}

std::vector<Schedule> ApplyRule(const Target& target, const PrimFunc& func, int64_t seed,
                                const nlohmann::json& params = nlohmann::json::object()) {
  ScheduleRulePtr rule = rule_testing::Make(NewPixelTiledConv(target, params));
  Schedule sch = Schedule::Create(func, seed);
  return rule_testing::ApplyAt(*rule, &sch, testing::FirstReductionBlock(func));
}

// The decisions of the SamplePerfectTile instructions in `trace`, in order.
std::vector<std::vector<int64_t>> PerfectTiles(const Trace& trace) {
  std::vector<std::vector<int64_t>> decisions;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (trace.insts()[i].kind->name == std::string("SamplePerfectTile")) {
      decisions.push_back(trace.decision(i).AsIntArray());
    }
  }
  return decisions;
}

// The tiled space of `func` on `seeds` seeds: tiles within the limits, left to no later rule,
// correct in the interpreter, replayable, and built by the C backend to the reference's outputs.
void CheckTiledSpace(const PrimFunc& func, int64_t width, int64_t channels, int seeds) {
  for (int64_t seed = 0; seed < seeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<Schedule> spaces = ApplyRule(Avx512(), func, seed);
    ASSERT_EQ(spaces.size(), 2u) << "the tiled space and the untouched block";
    const Schedule& sch = spaces[0];
    const Block block = rule_testing::GetBlock(sch.func(), testing::FirstReductionBlock(func));
    auto rule = block->annotations.find(attr::kScheduleRule);
    ASSERT_NE(rule, block->annotations.end());
    EXPECT_EQ(std::get<std::string>(rule->second), "None");
    std::vector<std::vector<int64_t>> tiles = PerfectTiles(sch.trace());
    // Rows of the width; vectors of 16 channels, or channels when 16 does not divide them.
    ASSERT_EQ(tiles.size(), 2u);
    EXPECT_EQ(tiles[0][0] * tiles[0][1], width);
    EXPECT_LE(tiles[0][1], dlight::kMaxConvRows);
    const bool vectors = channels % 16 == 0;
    EXPECT_EQ(tiles[1][0] * tiles[1][1], vectors ? channels / 16 : channels);
    EXPECT_LE(tiles[1][1], vectors ? 4 : 64);
    absl::Status correct = testing::CheckScheduleCorrect(sch, func, seed);
    EXPECT_TRUE(correct.ok()) << correct;
    absl::Status replay = testing::CheckReplay(sch, func);
    EXPECT_TRUE(replay.ok()) << replay;
    absl::Status built = testing::CheckCBackendMatches(func, sch.func(), seed);
    EXPECT_TRUE(built.ok()) << built;
  }
}

// A bfloat16 convolution summed in float32 on a core with AVX-512 BF16: the space takes pairs
// of input channels (kCpuDotBf16) and replays, computes the product in the interpreter (the
// intrinsic's description bound to the same regions) and built by the C backend.
TEST(PixelTiledConvTest, Bfloat16SpaceTakesPairsOfInputChannelsOnADotProductCore) {
  const Target target =
      *Target::Parse("cpu -cores=4 -vector_bits=512 -isa=avx2+fma+avx512f+avx512bf16");
  absl::StatusOr<PrimFunc> func = MakeWorkload("C2D",
                                               {{"N", 1},
                                                {"H", 4},
                                                {"W", 28},
                                                {"CI", 8},
                                                {"CO", 32},
                                                {"K", 3},
                                                {"stride", 1},
                                                {"padding", 1}},
                                               "bfloat16", "float32");
  ASSERT_TRUE(func.ok()) << func.status();
  for (int64_t seed = 0; seed < 3; ++seed) {
    std::vector<Schedule> spaces = ApplyRule(target, *func, seed);
    ASSERT_EQ(spaces.size(), 2u) << "the tiled space and the untouched block";
    const Schedule& sch = spaces[0];
    bool tensorized = false;
    for (const Instruction& inst : sch.trace().insts()) {
      tensorized |= std::string(inst.kind->name) == "Tensorize";
    }
    EXPECT_TRUE(tensorized) << "seed " << seed;
    absl::Status correct = testing::CheckTensorizedScheduleCorrect(sch, *func, seed);
    EXPECT_TRUE(correct.ok()) << "seed " << seed << ": " << correct;
    absl::Status built = testing::CheckCBackendMatches(*func, sch.func(), seed);
    EXPECT_TRUE(built.ok()) << "seed " << seed << ": " << built;
  }
}

TEST(PixelTiledConvTest, RoundConvolutionSpaceMatchesTheReference) {
  CheckTiledSpace(Conv2d("C2D", 8, 16, 64, 1), 8, 64, 3);
}

TEST(PixelTiledConvTest, OddConvolutionSpacesMatchTheReference) {
  CheckTiledSpace(Conv2d("C2D", 13, 3, 24, 1), 13, 24, 2);  // prime width, 24 channels
  CheckTiledSpace(Conv2d("C2D", 11, 5, 20, 2), 6, 20, 2);   // stride 2: 6 output columns
}

TEST(PixelTiledConvTest, ConvolutionWithBiasAndReluSpaceMatchesTheReference) {
  const PrimFunc func = Workload("CBR", {{"N", 1},
                                         {"H", 6},
                                         {"W", 6},
                                         {"CI", 4},
                                         {"CO", 32},
                                         {"K", 3},
                                         {"stride", 1},
                                         {"padding", 1}});
  CheckTiledSpace(func, 6, 32, 2);
}

TEST(PixelTiledConvTest, TheDefaultIsAPointOfTheSpaceWithMutableTiles) {
  const PrimFunc func = Conv2d("C2D", 14, 8, 64, 1);
  absl::StatusOr<std::optional<Schedule>> def = dlight::NewCpuDefaultRule()->Apply(func, Avx512());
  ASSERT_TRUE(def.ok()) << def.status();
  ASSERT_TRUE(def->has_value());
  const Trace& trace = (*def)->trace();
  std::vector<std::vector<int64_t>> tiles = PerfectTiles(trace);
  ASSERT_EQ(tiles.size(), 2u);
  EXPECT_EQ(tiles[0][0] * tiles[0][1], 14);
  EXPECT_EQ(tiles[1][0] * tiles[1][1], 4);  // vectors of 16 channels
  // A mutator's change of the tile (7 rows x 4 vectors) replays to a correct program.
  Trace mutated = trace;
  int changed = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (trace.insts()[i].kind->name != std::string("SamplePerfectTile")) continue;
    mutated = mutated.WithDecision(
        i,
        InstValue::IntArray(changed == 0 ? std::vector<int64_t>{2, 7} : std::vector<int64_t>{1, 4}),
        /*remove_postproc=*/false);
    ++changed;
  }
  Schedule replayed = Schedule::Create(func, 0);
  ASSERT_TRUE(mutated.ApplyTo(&replayed, /*remove_postproc=*/false).ok());
  EXPECT_EQ(PerfectTiles(replayed.trace())[0], (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(PerfectTiles(replayed.trace())[1], (std::vector<int64_t>{1, 4}));
  absl::Status correct = testing::CheckSameOutputs(func, replayed.func());
  EXPECT_TRUE(correct.ok()) << correct;
  absl::Status built = testing::CheckCBackendMatches(func, replayed.func());
  EXPECT_TRUE(built.ok()) << built;
}

TEST(PixelTiledConvTest, LeavesOtherBlocksAndTargetsAlone) {
  // A depthwise convolution reads the input with the channel: no broadcast, no tile.
  EXPECT_EQ(
      ApplyRule(
          Cpu(),
          Workload(
              "DEP",
              {{"N", 1}, {"H", 8}, {"W", 8}, {"C", 32}, {"K", 3}, {"stride", 1}, {"padding", 1}}),
          0)
          .size(),
      1u);
  EXPECT_EQ(ApplyRule(Cpu(), Workload("GMM", {{"B", 1}, {"M", 16}, {"N", 32}, {"K", 8}}), 0).size(),
            1u);
  EXPECT_EQ(ApplyRule(Cuda(), Conv2d("C2D", 8, 16, 64, 1), 0).size(), 1u);
  // Without the untouched block, MultiLevelTiling gets no branch of a convolution.
  EXPECT_EQ(ApplyRule(Cpu(), Conv2d("C2D", 8, 16, 64, 1), 0, {{"keep_untiled", false}}).size(), 1u);
  EXPECT_FALSE(NewPixelTiledConv(Cpu(), {{"tiles", 3}}).ok());
}

TEST(PixelTiledConvTest, IsADefaultCpuRuleBeforeMultiLevelTiling) {
  absl::StatusOr<std::vector<ScheduleRulePtr>> rules =
      DefaultScheduleRules(Cpu(), nlohmann::json::object());
  ASSERT_TRUE(rules.ok()) << rules.status();
  std::vector<std::string> names;
  for (const ScheduleRulePtr& r : *rules) names.push_back(r->name());
  auto conv = std::find(names.begin(), names.end(), "PixelTiledConv");
  auto mlt = std::find(names.begin(), names.end(), "MultiLevelTiling");
  ASSERT_NE(conv, names.end());
  EXPECT_LT(conv, mlt);
}

}  // namespace
}  // namespace tessera
