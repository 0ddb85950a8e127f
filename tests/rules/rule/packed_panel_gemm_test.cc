// PackedPanelGemm (rules/rule/packed_panel_gemm.cc) and the TiledMatmul it shares with the CPU
// default (rules/default/tiled_matmul.h): on round and prime GEMM shapes and on a dense layer
// with a bias and relu epilogue, every design space (packed, packed with K blocks, unpacked;
// prepacked for a layout-free weight) with fresh samples replays from its trace, computes what the
// unscheduled program computes in the reference interpreter, and builds with the C backend to the
// same outputs; prime extents sample tiles that do not divide them; the default schedule is a point
// of the space whose tile decisions can be changed and replayed.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontend/workloads.h"
#include "ir/prepack.h"
#include "rules/annotations.h"
#include "rules/default/rule_factories.h"
#include "rules/default/tiled_matmul.h"
#include "rules/registry.h"
#include "rules/schedule_rule.h"
#include "schedule/trace.h"
#include "tests/rules/rule_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using rule_testing::Cpu;
using rule_testing::Cuda;
using rule_testing::Workload;

// An AVX-512 core (32 registers of 16 floats); Cpu() is an AVX2 one (16 of 8).
Target Avx512() { return *Target::Parse("cpu -cores=4 -vector_bits=512"); }

PrimFunc Gmm(int64_t m, int64_t n, int64_t k) {
  return Workload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}});
}

std::vector<Schedule> ApplyRule(const Target& target, const PrimFunc& func, int64_t seed,
                                const nlohmann::json& params = nlohmann::json::object()) {
  ScheduleRulePtr rule = rule_testing::Make(NewPackedPanelGemm(target, params));
  Schedule sch = Schedule::Create(func, seed);
  return rule_testing::ApplyAt(*rule, &sch, testing::FirstReductionBlock(func));
}

// The decisions of the instructions named `kind` in `sch`'s trace, in order.
std::vector<std::vector<int64_t>> Decisions(const Trace& trace, const std::string& kind) {
  std::vector<std::vector<int64_t>> decisions;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (trace.insts()[i].kind->name == kind) decisions.push_back(trace.decision(i).AsIntArray());
  }
  return decisions;
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

bool LeftToNoRule(const Schedule& sch, const PrimFunc& func) {
  const Block block = rule_testing::GetBlock(sch.func(), testing::FirstReductionBlock(func));
  auto it = block->annotations.find(attr::kScheduleRule);
  return it != block->annotations.end() && std::get<std::string>(it->second) == "None";
}

// Every space of `func` on a few seeds: correct in the interpreter, replayable, and built by
// the C backend to the reference's outputs (a prepacked space through its packing and then its
// kernel). Returns how many tiled spaces were checked.
int CheckAllSpaces(const PrimFunc& func, int seeds) {
  int checked = 0;
  // Packed, packed with K blocks, unpacked, and prepacked where B is a layout-free weight.
  const size_t tiled = LayoutFreeParamIndices(func).empty() ? 3 : 4;
  for (int64_t seed = 0; seed < seeds; ++seed) {
    std::vector<Schedule> spaces = ApplyRule(Cpu(), func, seed);
    EXPECT_EQ(spaces.size(), tiled + 1) << "the tiled spaces and the untouched block";
    for (size_t s = 0; s + 1 < spaces.size(); ++s) {
      const Schedule& sch = spaces[s];
      EXPECT_TRUE(LeftToNoRule(sch, func));
      absl::Status correct = testing::CheckScheduleCorrect(sch, func, seed);
      EXPECT_TRUE(correct.ok()) << "space " << s << " seed " << seed << ": " << correct;
      absl::Status built = testing::CheckCBackendMatches(func, sch.func(), seed);
      EXPECT_TRUE(built.ok()) << "space " << s << " seed " << seed << ": " << built;
      ++checked;
    }
  }
  return checked;
}

TEST(PackedPanelGemmTest, RoundGemmSpacesMatchTheReference) {
  EXPECT_EQ(CheckAllSpaces(Gmm(32, 128, 48), 3), 9);
}

TEST(PackedPanelGemmTest, PrimeGemmSpacesMatchTheReference) {
  EXPECT_EQ(CheckAllSpaces(Gmm(37, 67, 23), 3), 9);
}

TEST(PackedPanelGemmTest, DenseWithEpilogueSpacesMatchTheReference) {
  EXPECT_EQ(CheckAllSpaces(Workload("DENSE_BIAS_RELU", {{"M", 24}, {"N", 80}, {"K", 40}}), 2), 8);
}

// LINEAR's weight is layout-free: a fourth tiled space reads it from pre-packed strips, on round
// and prime shapes (67 columns padded to 80 in the packing).
TEST(PackedPanelGemmTest, LinearSpacesIncludingPrepackedMatchTheReference) {
  EXPECT_EQ(CheckAllSpaces(Workload("LINEAR", {{"M", 32}, {"N", 128}, {"K", 48}}), 2), 8);
  EXPECT_EQ(CheckAllSpaces(Workload("LINEAR", {{"M", 37}, {"N", 67}, {"K", 23}}), 2), 8);
}

// A core with the dot products (AVX-512 BF16, VNNI): bfloat16 products summed in float32 take
// pairs of k (kCpuDotBf16) and int8 ones fours or eights (kCpuDotInt8Shifted and
// kCpuDotInt8x8Shifted, after ShiftInt8Product: a K of 36, of 40) in the packed and prepacked
// spaces
// (where the sampled tiles divide I and J; widened where they do not). Every space replays,
// computes the product in the interpreter (the intrinsic's description bound to the same
// regions) and built by the C backend (the instructions on a host that has them, the prelude's
// scalar loops elsewhere).
TEST(PackedPanelGemmTest, Bfloat16AndInt8SpacesTakeGroupsOfKOnADotProductCore) {
  const Target target = *Target::Parse(
      "cpu -cores=4 -vector_bits=512 -isa=avx2+fma+avx512f+avx512bw+avx512vnni+avx512bf16");
  struct Case {
    std::string workload, dtype, acc;
    std::map<std::string, int64_t> shape;
  };
  absl::StatusOr<std::vector<PostprocPtr>> postprocs = DefaultPostprocs(target);
  ASSERT_TRUE(postprocs.ok()) << postprocs.status();
  int grouped = 0;
  for (const Case& c : std::vector<Case>{
           {"GMM", "bfloat16", "float32", {{"B", 1}, {"M", 32}, {"N", 128}, {"K", 48}}},
           {"LINEAR", "bfloat16", "float32", {{"M", 16}, {"N", 64}, {"K", 40}}},
           {"GMM", "int8", "", {{"B", 1}, {"M", 24}, {"N", 96}, {"K", 36}}},
           {"LINEAR", "int8", "", {{"M", 16}, {"N", 64}, {"K", 40}}}}) {
    absl::StatusOr<PrimFunc> func = MakeWorkload(c.workload, c.shape, c.dtype, c.acc);
    ASSERT_TRUE(func.ok()) << func.status();
    for (int64_t seed = 0; seed < 3; ++seed) {
      std::vector<Schedule> spaces = ApplyRule(target, *func, seed);
      for (size_t s = 0; s + 1 < spaces.size(); ++s) {
        Schedule& sch = spaces[s];
        bool tensorized = false;
        for (const Instruction& inst : sch.trace().insts()) {
          tensorized |= std::string(inst.kind->name) == "Tensorize";
        }
        grouped += tensorized;
        const std::string where =
            absl::StrCat(c.workload, " ", c.dtype, " space ", s, " seed ", seed, ": ");
        absl::Status correct = testing::CheckTensorizedScheduleCorrect(sch, *func, seed);
        EXPECT_TRUE(correct.ok()) << where << correct;
        absl::Status built = testing::CheckCBackendMatches(*func, sch.func(), seed);
        EXPECT_TRUE(built.ok()) << where << built;
        // As the tuner builds it: after the postprocessors, which decompose what the space
        // left whole (an int8 weight's sums, whose init must stay in the packing).
        Schedule post = sch.Copy();
        post.EnterPostproc();
        for (const PostprocPtr& postproc : *postprocs) {
          absl::Status applied = postproc->Apply(&post);
          ASSERT_TRUE(applied.ok()) << where << postproc->name() << ": " << applied;
        }
        absl::Status post_built = testing::CheckCBackendMatches(*func, post.func(), seed);
        EXPECT_TRUE(post_built.ok()) << where << "after the postprocessors: " << post_built;
      }
    }
  }
  EXPECT_GE(grouped, 8) << "spaces that took groups of k";
}

TEST(PackedPanelGemmTest, PrimeExtentsSampleNonDividingTiles) {
  const PrimFunc func = Gmm(127, 257, 509);
  int non_dividing = 0;
  for (const Target& target : {Avx512(), Cpu()}) {
    const dlight::CpuCore core = dlight::CpuCore::Of(target);
    // 257 columns: 17 vectors of 16, 33 of 8.
    const int64_t vectors = (257 + core.lanes - 1) / core.lanes;
    for (int64_t seed = 0; seed < 8; ++seed) {
      std::vector<Schedule> spaces = ApplyRule(target, func, seed);
      ASSERT_EQ(spaces.size(), 4u);
      for (size_t s = 0; s < 3; ++s) {
        std::vector<std::vector<int64_t>> padded = Decisions(spaces[s].trace(), "SamplePaddedTile");
        ASSERT_EQ(padded.size(), 2u);  // rows, column vectors
        EXPECT_LE(padded[0].back(), dlight::MaxTileRows(core));
        EXPECT_LE(padded[1].back(), dlight::MaxTileVectors(core, core.lanes));
        EXPECT_GE(Product(padded[0]), 127);
        EXPECT_GE(Product(padded[1]), vectors);
        non_dividing += Product(padded[0]) != 127;
        non_dividing += Product(padded[1]) != vectors;
        // Only the K-blocked space splits K, perfectly.
        std::vector<std::vector<int64_t>> k = Decisions(spaces[s].trace(), "SamplePerfectTile");
        ASSERT_EQ(k.size(), s == 1 ? 1u : 0u);
        if (!k.empty()) {
          EXPECT_EQ(Product(k[0]), 509);
          EXPECT_LE(k[0].back(), dlight::kMaxKBlocks);
        }
        absl::Status replay = testing::CheckReplay(spaces[s], func);
        EXPECT_TRUE(replay.ok()) << replay;
      }
    }
  }
  EXPECT_GT(non_dividing, 0);
}

TEST(PackedPanelGemmTest, TheDefaultIsAPointOfTheSpaceWithMutableTiles) {
  const PrimFunc func = Gmm(64, 256, 96);
  absl::StatusOr<std::optional<Schedule>> def = dlight::NewCpuDefaultRule()->Apply(func, Avx512());
  ASSERT_TRUE(def.ok()) << def.status();
  ASSERT_TRUE(def->has_value());
  const Trace& trace = (*def)->trace();
  // 8 x 32 tiles, two tiles per panel, as docs/default-schedules.md says.
  std::vector<std::vector<int64_t>> padded = Decisions(trace, "SamplePaddedTile");
  ASSERT_EQ(padded.size(), 2u);
  EXPECT_EQ(padded[0], (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(padded[1], (std::vector<int64_t>{4, 2, 2}));  // 4 panels of 2 x 2 vectors of 16
  // A mutator's change of the tile (4 x 32, one tile per panel) replays to a correct program.
  Trace mutated = trace;
  int changed = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (trace.insts()[i].kind->name != std::string("SamplePaddedTile")) continue;
    mutated =
        mutated.WithDecision(i,
                             InstValue::IntArray(changed == 0 ? std::vector<int64_t>{16, 4}
                                                              : std::vector<int64_t>{8, 1, 2}),
                             /*remove_postproc=*/false);
    ++changed;
  }
  Schedule replayed = Schedule::Create(func, 0);
  ASSERT_TRUE(mutated.ApplyTo(&replayed, /*remove_postproc=*/false).ok());
  EXPECT_EQ(Decisions(replayed.trace(), "SamplePaddedTile")[1], (std::vector<int64_t>{8, 1, 2}));
  absl::Status correct = testing::CheckSameOutputs(func, replayed.func());
  EXPECT_TRUE(correct.ok()) << correct;
  absl::Status built = testing::CheckCBackendMatches(func, replayed.func());
  EXPECT_TRUE(built.ok()) << built;
}

// On an AVX2 core (16 registers of 8 floats) the default's tile is 6 rows x 2 vectors (12
// accumulators beside 2 B vectors and the broadcast: BLIS's Haswell tile), rows padded to whole
// tiles; the space's bounds keep to half of AVX-512's columns and 12 rows.
TEST(PackedPanelGemmTest, TheDefaultTileFitsAnAvx2Core) {
  const PrimFunc func = Gmm(96, 256, 96);
  absl::StatusOr<std::optional<Schedule>> def = dlight::NewCpuDefaultRule()->Apply(func, Cpu());
  ASSERT_TRUE(def.ok()) << def.status();
  ASSERT_TRUE(def->has_value());
  std::vector<std::vector<int64_t>> padded = Decisions((*def)->trace(), "SamplePaddedTile");
  ASSERT_EQ(padded.size(), 2u);
  EXPECT_EQ(padded[0], (std::vector<int64_t>{16, 6}));
  EXPECT_EQ(padded[1].back(), 2);  // vectors of 8 per tile
  EXPECT_EQ(Product(padded[1]), 256 / 8);
  absl::Status built = testing::CheckCBackendMatches(func, (*def)->func());
  EXPECT_TRUE(built.ok()) << built;
  const dlight::CpuCore core = dlight::CpuCore::Of(Cpu());
  EXPECT_EQ(core.lanes, 8);
  EXPECT_EQ(core.registers, 16);
  EXPECT_EQ(dlight::MaxTileRows(core), 12);
  EXPECT_EQ(dlight::MaxTileVectors(core, core.lanes), 4);
  const dlight::CpuCore avx512 = dlight::CpuCore::Of(Avx512());
  EXPECT_EQ(avx512.lanes, 16);
  EXPECT_EQ(avx512.registers, 32);
  EXPECT_EQ(dlight::MaxTileRows(avx512), dlight::kMaxTileRows);
  EXPECT_EQ(dlight::MaxTileVectors(avx512, avx512.lanes), 4);
}

TEST(PackedPanelGemmTest, LeavesOtherBlocksAndTargetsAlone) {
  // A GEMV is no GEMM (no J): the block comes back untouched.
  EXPECT_EQ(ApplyRule(Cpu(), Workload("GEMV", {{"M", 8}, {"K", 64}}), 0).size(), 1u);
  EXPECT_EQ(ApplyRule(Cuda(), Gmm(32, 128, 48), 0).size(), 1u);
  // One layout asked for, one tiled space.
  EXPECT_EQ(ApplyRule(Cpu(), Gmm(32, 128, 48), 0, {{"layouts", {"packed_k_blocked"}}}).size(), 2u);
  // Without the untouched block, MultiLevelTiling gets no branch of a GEMM.
  EXPECT_EQ(ApplyRule(Cpu(), Gmm(32, 128, 48), 0, {{"keep_untiled", false}}).size(), 3u);
  absl::StatusOr<ScheduleRulePtr> bad = NewPackedPanelGemm(Cpu(), {{"layouts", {"tiled"}}});
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("layouts"), std::string::npos);
}

TEST(PackedPanelGemmTest, IsADefaultCpuRuleBeforeMultiLevelTiling) {
  absl::StatusOr<std::vector<ScheduleRulePtr>> rules =
      DefaultScheduleRules(Cpu(), nlohmann::json::object());
  ASSERT_TRUE(rules.ok()) << rules.status();
  std::vector<std::string> names;
  for (const ScheduleRulePtr& r : *rules) names.push_back(r->name());
  auto packed = std::find(names.begin(), names.end(), "PackedPanelGemm");
  auto mlt = std::find(names.begin(), names.end(), "MultiLevelTiling");
  ASSERT_NE(packed, names.end());
  EXPECT_LT(packed, mlt);
}

}  // namespace
}  // namespace tessera
