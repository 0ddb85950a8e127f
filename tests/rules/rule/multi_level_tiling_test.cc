// MultiLevelTiling and MultiLevelTilingTensorCore (the block predicates of rules/analysis.h are
// in tests/rules/analysis_test.cc): every design space computes what the unscheduled workload
// computes and replays from its trace JSON; the number of spaces and the instructions follow
// docs/reference/metaschedule.md §4.3.4.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "ir/loop_annotations.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "rules/analysis.h"
#include "rules/annotations.h"
#include "rules/schedule_rule.h"
#include "schedule/state.h"
#include "schedule/tensor_intrin.h"
#include "schedule/trace.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using testing::CheckScheduleCorrect;
using testing::CheckTensorizedScheduleCorrect;
using testing::SmallWorkload;

Target Cpu() { return *Target::Parse("cpu"); }
Target Cuda(const std::string& arch = "sm_80") { return *Target::Parse("cuda -arch=" + arch); }

ScheduleRulePtr Mlt(const Target& target, const nlohmann::json& params = nullptr) {
  absl::StatusOr<ScheduleRulePtr> rule = NewMultiLevelTiling(target, params);
  EXPECT_TRUE(rule.ok()) << rule.status();
  return *rule;
}

// Applies `rule` to every block the way PostOrderApply does for one rule: GetBlock for every
// block, then blocks from last to first (program order), branching on every result.
std::vector<Schedule> ApplyToAllBlocks(const ScheduleRule& rule, const PrimFunc& func,
                                       int64_t seed) {
  Schedule sch = Schedule::Create(func, seed);
  std::vector<BlockRV> blocks;
  for (const std::string& name : AllBlockNames(func)) blocks.push_back(*sch.GetBlock(name));
  std::vector<Schedule> current = {sch};
  for (size_t b = blocks.size(); b-- > 0;) {
    std::vector<Schedule> next;
    for (Schedule& s : current) {
      if (!s.Get(blocks[b]).ok()) {
        next.push_back(s);
        continue;
      }
      absl::StatusOr<std::vector<Schedule>> out = rule.Apply(&s, blocks[b]);
      EXPECT_TRUE(out.ok()) << out.status();
      if (out.ok()) next.insert(next.end(), out->begin(), out->end());
    }
    current = std::move(next);
  }
  return current;
}

// Blocks of `func` that MultiLevelTiling matches.
int CountMatchedBlocks(const PrimFunc& func) {
  Schedule sch = Schedule::Create(func, 0);
  int count = 0;
  for (const std::string& name : AllBlockNames(func)) {
    count += NeedsMultiLevelTiling(sch, *sch.GetBlock(name)) ? 1 : 0;
  }
  return count;
}

int CountInstructions(const Schedule& sch, const std::string& kind) {
  int count = 0;
  for (const Instruction& inst : sch.trace().insts()) count += kind == inst.kind->name ? 1 : 0;
  return count;
}

Block BlockOf(const PrimFunc& func, const std::string& name) {
  absl::StatusOr<StmtPath> path = FindBlockPath(func, name);
  EXPECT_TRUE(path.ok()) << path.status();
  return path->back().as<BlockRealizeNode>()->block;
}

int64_t Power(int64_t base, int exponent) {
  int64_t p = 1;
  for (int i = 0; i < exponent; ++i) p *= base;
  return p;
}

const std::vector<std::string>& TiledWorkloads() {
  static const std::vector<std::string> names = {
      "GMM", "C1D", "C2D", "DEP", "GRP", "T2D", "CAP", "DENSE_BIAS_RELU", "GEMV"};
  return names;
}

// ---- MultiLevelTiling: parameters ----------------------------------------------------------

TEST(MultiLevelTilingTest, RejectsBadParameters) {
  for (const char* text : {R"({"bogus": 1})", R"({"structure": "SXR"})", R"({"structure": "RR"})",
                           R"({"reuse_read": {"req": "may", "levels": [1], "scope": "shared"}})",
                           R"({"reuse_write": {"req": "must", "levels": [9], "scope": "local"}})",
                           R"({"reuse_write": {"req": "sometimes", "levels": [1]}})",
                           R"({"reuse_write": {"req": "must", "levels": [1], "where": "x"}})",
                           R"({"max_innermost_factor": 0})", R"({"tile_binds": "blockIdx.x"})"}) {
    absl::StatusOr<ScheduleRulePtr> rule = NewMultiLevelTiling(Cpu(), nlohmann::json::parse(text));
    ASSERT_FALSE(rule.ok()) << text;
    EXPECT_EQ(rule.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(std::string(rule.status().message()).find("MultiLevelTiling"), std::string::npos)
        << rule.status();
  }
}

// ---- MultiLevelTiling: CPU -----------------------------------------------------------------

TEST(MultiLevelTilingTest, CpuGivesThreeCorrectSpacesPerMatchedBlock) {
  ScheduleRulePtr rule = Mlt(Cpu());
  EXPECT_EQ(rule->name(), "MultiLevelTiling");
  for (const std::string& name : TiledWorkloads()) {
    PrimFunc func = SmallWorkload(name);
    const int matched = CountMatchedBlocks(func);
    EXPECT_GE(matched, 1) << name;
    for (int64_t seed : {1, 7}) {
      std::vector<Schedule> spaces = ApplyToAllBlocks(*rule, func, seed);
      ASSERT_EQ(static_cast<int64_t>(spaces.size()), Power(3, matched)) << name;
      for (const Schedule& s : spaces) {
        absl::Status ok = CheckScheduleCorrect(s, func, seed);
        EXPECT_TRUE(ok.ok()) << name << " seed " << seed << ": " << ok;
      }
    }
  }
}

TEST(MultiLevelTilingTest, CpuGmmTraceTilesEveryLoopAndPlacesTheWriteCache) {
  PrimFunc func = SmallWorkload("GMM");
  std::vector<Schedule> spaces = ApplyToAllBlocks(*Mlt(Cpu()), func, 3);
  ASSERT_EQ(spaces.size(), 3u);
  for (const Schedule& s : spaces) {
    // b, i, j over the 4 S slots; k over the 2 R slots.
    EXPECT_EQ(CountInstructions(s, "SamplePerfectTile"), 4);
    EXPECT_EQ(CountInstructions(s, "Split"), 4);
    EXPECT_EQ(CountInstructions(s, "Reorder"), 1);
    EXPECT_EQ(CountInstructions(s, "Bind"), 0);
    Block c = BlockOf(s.func(), "C");
    auto it = c->annotations.find(attr::kTilingStructure);
    ASSERT_NE(it, c->annotations.end());
    EXPECT_EQ(std::get<std::string>(it->second), "SSRSRS");
    EXPECT_EQ(c->annotations.count(attr::kThreadExtentLowInclusive), 0u);
  }
  // The first space has no cache, the other two a global write cache at slots 0 and 1.
  EXPECT_EQ(CountInstructions(spaces[0], "CacheWrite"), 0);
  for (int i : {1, 2}) {
    EXPECT_EQ(CountInstructions(spaces[i], "CacheWrite"), 1);
    EXPECT_EQ(CountInstructions(spaces[i], "ReverseComputeAt"), 1);
    EXPECT_EQ(AllBlockNames(spaces[i].func()).size(), 3u);
  }
  EXPECT_FALSE(StructuralEqual(spaces[1].func(), spaces[2].func()));
}

TEST(MultiLevelTilingTest, CpuExistingWriteCacheConsumerIsMovedNotCopied) {
  // DENSE_BIAS_RELU's matmul has a single consumer (the bias add) that reads it point-wise.
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  std::vector<Schedule> spaces = ApplyToAllBlocks(*Mlt(Cpu()), func, 5);
  ASSERT_EQ(spaces.size(), 3u);
  for (const Schedule& s : spaces) EXPECT_EQ(CountInstructions(s, "CacheWrite"), 0);
  EXPECT_EQ(CountInstructions(spaces[0], "ReverseComputeAt"), 1);
  EXPECT_EQ(CountInstructions(spaces[1], "ReverseComputeAt"), 1);
  EXPECT_EQ(CountInstructions(spaces[2], "ReverseComputeAt"), 0);
}

TEST(MultiLevelTilingTest, NonMatchingBlocksAreLeftUnchanged) {
  for (const char* name : {"ELEMENTWISE", "REDUCE_SUM", "TRANSPOSE"}) {
    for (const Target& target : {Cpu(), Cuda()}) {
      PrimFunc func = SmallWorkload(name);
      std::vector<Schedule> spaces = ApplyToAllBlocks(*Mlt(target), func, 1);
      ASSERT_EQ(spaces.size(), 1u) << name;
      EXPECT_TRUE(StructuralEqual(spaces[0].func(), func)) << name;
      for (const Instruction& inst : spaces[0].trace().insts()) {
        EXPECT_EQ(std::string(inst.kind->name), "GetBlock") << name;
      }
    }
  }
}

TEST(MultiLevelTilingTest, TiledBlockIsNotTiledAgain) {
  PrimFunc func = SmallWorkload("GMM");
  ScheduleRulePtr rule = Mlt(Cpu());
  Schedule sch = Schedule::Create(func, 2);
  BlockRV c = *sch.GetBlock("C");
  std::vector<Schedule> first = *rule->Apply(&sch, c);
  ASSERT_EQ(first.size(), 3u);
  PrimFunc tiled = first[1].func();
  std::vector<Schedule> again = *rule->Apply(&first[1], c);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(StructuralEqual(again[0].func(), tiled));
}

TEST(MultiLevelTilingTest, WriteCacheLevelAnnotationForcesTheCache) {
  // As a list of levels in the function (e.g. from a frontend)...
  PrimFunc func = SmallWorkload("GMM");
  StmtPath path = *FindBlockPath(func, "C");
  const BlockRealizeNode* realize = path.back().as<BlockRealizeNode>();
  std::shared_ptr<BlockNode> node = realize->block.CopyNode();
  node->annotations[attr::kWriteCacheLevel] = std::vector<int64_t>{2};
  PrimFunc annotated = ReplaceStmt(
      func, path.back(), BlockRealize(realize->iter_values, realize->predicate, MakeBlock(*node)));
  Schedule sch = Schedule::Create(annotated, 4);
  std::vector<Schedule> spaces = *Mlt(Cpu())->Apply(&sch, *sch.GetBlock("C"));
  ASSERT_EQ(spaces.size(), 1u);
  EXPECT_EQ(CountInstructions(spaces[0], "CacheWrite"), 1);
  absl::Status ok = CheckScheduleCorrect(spaces[0], annotated);
  EXPECT_TRUE(ok.ok()) << ok;
  // ...or as one level annotated by a schedule.
  Schedule sch2 = Schedule::Create(func, 4);
  BlockRV c = *sch2.GetBlock("C");
  ASSERT_TRUE(sch2.Annotate(c, attr::kWriteCacheLevel, InstValue::Int(1)).ok());
  spaces = *Mlt(Cpu())->Apply(&sch2, c);
  ASSERT_EQ(spaces.size(), 1u);
  EXPECT_EQ(CountInstructions(spaces[0], "CacheWrite"), 1);
  ok = CheckScheduleCorrect(spaces[0], func);
  EXPECT_TRUE(ok.ok()) << ok;
}

TEST(MultiLevelTilingTest, CustomStructureWithOneReductionSlot) {
  PrimFunc func = SmallWorkload("GMM");
  nlohmann::json params = {{"structure", "SSR"},
                           {"reuse_write", {{"req", "no"}, {"levels", nlohmann::json::array()}}}};
  std::vector<Schedule> spaces = ApplyToAllBlocks(*Mlt(Cpu(), params), func, 1);
  ASSERT_EQ(spaces.size(), 1u);
  // The reduction loop goes to its single slot unsplit.
  EXPECT_EQ(CountInstructions(spaces[0], "SamplePerfectTile"), 3);
  absl::Status ok = CheckScheduleCorrect(spaces[0], func);
  EXPECT_TRUE(ok.ok()) << ok;
}

// ---- MultiLevelTiling: CUDA ----------------------------------------------------------------

TEST(MultiLevelTilingTest, CudaGivesOneCorrectSpacePerMatchedBlock) {
  ScheduleRulePtr rule = Mlt(Cuda());
  for (const std::string& name : TiledWorkloads()) {
    PrimFunc func = SmallWorkload(name);
    for (int64_t seed : {2, 11}) {
      std::vector<Schedule> spaces = ApplyToAllBlocks(*rule, func, seed);
      ASSERT_EQ(spaces.size(), 1u) << name;
      absl::Status ok = CheckScheduleCorrect(spaces[0], func, seed);
      EXPECT_TRUE(ok.ok()) << name << " seed " << seed << ": " << ok;
    }
  }
}

TEST(MultiLevelTilingTest, CudaGmmBindsCachesAndAnnotates) {
  PrimFunc func = SmallWorkload("GMM");
  Target cuda = Cuda();
  std::vector<Schedule> spaces = ApplyToAllBlocks(*Mlt(cuda), func, 9);
  ASSERT_EQ(spaces.size(), 1u);
  Schedule s = spaces[0];
  std::vector<std::string> binds;
  std::vector<std::vector<int64_t>> fetch_candidates;
  for (const Instruction& inst : s.trace().insts()) {
    const std::string kind = inst.kind->name;
    if (kind == "Bind") binds.push_back(inst.attrs[0].as_string());
    if (kind == "SampleCategorical") fetch_candidates.push_back(inst.attrs[0].AsIntArray());
  }
  EXPECT_EQ(binds, (std::vector<std::string>{"blockIdx.x", "vthread.x", "threadIdx.x"}));
  // Two shared copies (A and B), float32: vector lengths up to 4; then (sm_80) the pipeline
  // depth of the loop the copies sit at, 1 to 4 stages.
  ASSERT_EQ(fetch_candidates.size(), 3u);
  for (const std::vector<int64_t>& c : fetch_candidates) {
    EXPECT_EQ(c, (std::vector<int64_t>{1, 2, 3, 4}));
  }
  EXPECT_NE(PrintFunc(s.func()).find(kSoftwarePipelineStages), std::string::npos);
  EXPECT_EQ(CountInstructions(s, "SamplePerfectTile"), 3 + 1);  // b, i, j over 5; k over 3
  EXPECT_EQ(CountInstructions(s, "CacheWrite"), 1);
  EXPECT_EQ(CountInstructions(s, "CacheRead"), 2);
  Block c = BlockOf(s.func(), "C");
  EXPECT_EQ(std::get<int64_t>(c->annotations.at(attr::kThreadExtentHighInclusive)),
            cuda.max_threads_per_block());
  EXPECT_EQ(c->annotations.count(attr::kThreadExtentLowInclusive), 1u);
  int fetch_annotated = 0;
  std::map<std::string, std::string> scopes;
  for (const std::string& name : AllBlockNames(s.func())) {
    Block b = BlockOf(s.func(), name);
    fetch_annotated += b->annotations.count(attr::kCooperativeFetch);
    for (const BufferRegion& w : b->writes) scopes[name] = w.buffer.scope();
  }
  EXPECT_EQ(fetch_annotated, 2);
  int shared = 0, local = 0;
  for (const auto& [name, scope] : scopes) {
    shared += scope == "shared" ? 1 : 0;
    local += scope == "local" ? 1 : 0;
  }
  EXPECT_EQ(shared, 2);
  EXPECT_EQ(local, 1);
}

TEST(MultiLevelTilingTest, CudaFloat16FetchLengthsAreEvenUpToEight) {
  PrimFunc func = SmallWorkload("GMM", "float16");
  std::vector<Schedule> spaces = ApplyToAllBlocks(*Mlt(Cuda()), func, 3);
  ASSERT_EQ(spaces.size(), 1u);
  std::vector<std::vector<int64_t>> sampled;
  for (const Instruction& inst : spaces[0].trace().insts()) {
    if (std::string(inst.kind->name) == "SampleCategorical") {
      sampled.push_back(inst.attrs[0].AsIntArray());
    }
  }
  // The fetch lengths of A and B, then the pipeline depth.
  EXPECT_EQ(sampled, (std::vector<std::vector<int64_t>>{{1, 2, 4, 8}, {1, 2, 4, 8}, {1, 2, 3, 4}}));
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// ---- MultiLevelTilingTensorCore ------------------------------------------------------------

ScheduleRulePtr TensorCore(const Target& target, const nlohmann::json& params = nullptr) {
  absl::StatusOr<ScheduleRulePtr> rule = NewMultiLevelTilingTensorCore(target, params);
  EXPECT_TRUE(rule.ok()) << rule.status();
  return *rule;
}

PrimFunc HalfGmm(int64_t m = 32, int64_t n = 32, int64_t k = 32) {
  return *MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}}, "float16");
}

// Block name -> its auto_tensorize annotation.
std::map<std::string, std::string> TensorizeAnnotations(const PrimFunc& func) {
  std::map<std::string, std::string> out;
  for (const std::string& name : AllBlockNames(func)) {
    Block b = BlockOf(func, name);
    auto it = b->annotations.find(attr::kAutoTensorize);
    if (it != b->annotations.end()) out[name] = std::get<std::string>(it->second);
  }
  return out;
}

// Both fragment families: Tessera's own (the default on sm_80) and WMMA's.
class MultiLevelTilingTensorCoreFamilyTest : public ::testing::TestWithParam<std::string> {
 protected:
  ScheduleRulePtr Rule() const { return TensorCore(Cuda(), {{"intrinsics", GetParam()}}); }
  const TensorCoreIntrins& Intrins() const {
    return *FindTensorCoreIntrins(DataType::Float16(), DataType::Float16(), GetParam());
  }
};

TEST_P(MultiLevelTilingTensorCoreFamilyTest, Float16GmmGetsOneAnnotatedSpaceThatIsCorrect) {
  PrimFunc func = HalfGmm(32, 48, 32);
  ScheduleRulePtr rule = Rule();
  EXPECT_EQ(rule->name(), "MultiLevelTilingTensorCore");
  const TensorCoreIntrins& g = Intrins();
  const std::string& f = g.family;
  for (int64_t seed : {1, 5, 9}) {
    std::vector<Schedule> spaces = ApplyToAllBlocks(*rule, func, seed);
    ASSERT_EQ(spaces.size(), 1u);
    const PrimFunc& out = spaces[0].func();
    std::map<std::string, std::string> intrins = TensorizeAnnotations(out);
    EXPECT_EQ(intrins,
              (std::map<std::string, std::string>{{"A_shared_" + f + "_matrix_a_o", g.load_a},
                                                  {"B_shared_" + f + "_matrix_b_o", g.load_b},
                                                  {"C_o", g.sync},
                                                  {"C_shared_" + f + "_accumulator_o", g.store}}));
    Block c = BlockOf(out, "C_o");
    EXPECT_EQ(std::get<std::string>(c->annotations.at(attr::kAutoTensorizeInit)), g.fill);
    EXPECT_EQ(std::get<int64_t>(c->annotations.at(attr::kWarpExecution)), 1);
    EXPECT_EQ(std::get<std::string>(c->annotations.at(attr::kTilingStructure)), "SSSRRSRS");
    std::vector<std::string> binds;
    for (const Instruction& inst : spaces[0].trace().insts()) {
      if (std::string(inst.kind->name) == "Bind") binds.push_back(inst.attrs[0].as_string());
    }
    EXPECT_EQ(binds, (std::vector<std::string>{"blockIdx.y", "blockIdx.x", "threadIdx.y"}));
    absl::Status ok = CheckScheduleCorrect(spaces[0], func, seed);
    EXPECT_TRUE(ok.ok()) << "seed " << seed << ": " << ok;
  }
}

TEST_P(MultiLevelTilingTensorCoreFamilyTest, AnnotatedBlocksTensorize) {
  // What RewriteTensorize does with the annotations: every annotated block matches its
  // intrinsic (the compute block once its init is decomposed, as RewriteReductionBlock does).
  PrimFunc func = HalfGmm();
  std::vector<Schedule> spaces = ApplyToAllBlocks(*Rule(), func, 3);
  ASSERT_EQ(spaces.size(), 1u);
  Schedule sch = spaces[0];
  BlockRV compute = *sch.GetBlock("C_o");
  std::vector<LoopRV> loops = *sch.GetLoops(compute);
  // The init goes before the outermost loop binding a reduction variable (the only loop
  // DecomposeReduction accepts).
  absl::StatusOr<BlockRV> init = absl::NotFoundError("no loop");
  for (size_t i = 0; i < loops.size() && !init.ok(); ++i) {
    init = sch.DecomposeReduction(compute, loops[i]);
  }
  ASSERT_TRUE(init.ok()) << init.status();
  // Blockize keeps the init as a nested block, so the decomposed init matches the fill.
  absl::Status fill = sch.Tensorize(*init, Intrins().fill);
  EXPECT_TRUE(fill.ok()) << fill << "\n" << PrintFunc(sch.func());
  for (const auto& [name, intrin] : TensorizeAnnotations(sch.func())) {
    absl::Status s = sch.Tensorize(*sch.GetBlock(name), intrin);
    EXPECT_TRUE(s.ok()) << name << ": " << s << "\n" << PrintFunc(sch.func());
  }
  absl::Status correct = CheckTensorizedScheduleCorrect(sch, func, 3);
  EXPECT_TRUE(correct.ok()) << correct;
}

INSTANTIATE_TEST_SUITE_P(Families, MultiLevelTilingTensorCoreFamilyTest,
                         ::testing::Values("mma", "wmma"));

TEST(MultiLevelTilingTensorCoreTest, OwnFragmentsByDefaultFromSm80AndWmmaBefore) {
  for (const auto& [arch, family] :
       {std::pair{"sm_80", "mma"}, std::pair{"sm_90a", "mma"}, std::pair{"sm_75", "wmma"}}) {
    std::vector<Schedule> spaces = ApplyToAllBlocks(*TensorCore(Cuda(arch)), HalfGmm(), 1);
    ASSERT_EQ(spaces.size(), 1u);
    EXPECT_EQ(TensorizeAnnotations(spaces[0].func()).at("C_o"),
              FindTensorCoreIntrins(DataType::Float16(), DataType::Float16(), family)->sync)
        << arch;
  }
}

TEST(MultiLevelTilingTensorCoreTest, LeavesOtherTargetsDtypesAndShapesAlone) {
  struct Case {
    PrimFunc func;
    Target target;
  };
  for (const Case& c :
       {Case{HalfGmm(), Cpu()}, Case{HalfGmm(), Cuda("sm_61")}, Case{SmallWorkload("GMM"), Cuda()},
        Case{HalfGmm(24, 32, 32), Cuda()}, Case{SmallWorkload("REDUCE_SUM"), Cuda()}}) {
    std::vector<Schedule> spaces = ApplyToAllBlocks(*TensorCore(c.target), c.func, 1);
    ASSERT_EQ(spaces.size(), 1u);
    EXPECT_TRUE(StructuralEqual(spaces[0].func(), c.func)) << c.target.ToString();
  }
}

TEST(MultiLevelTilingTensorCoreTest, PlainTilingAfterwardsLeavesTheTiledBlockAlone) {
  PrimFunc func = HalfGmm();
  std::vector<Schedule> spaces = ApplyToAllBlocks(*TensorCore(Cuda()), func, 2);
  ASSERT_EQ(spaces.size(), 1u);
  PrimFunc tiled = spaces[0].func();
  Schedule sch = spaces[0];
  for (const std::string& name : AllBlockNames(tiled)) {
    BlockRV block = *sch.GetBlock(name);
    std::vector<Schedule> out = *Mlt(Cuda())->Apply(&sch, block);
    ASSERT_EQ(out.size(), 1u) << name;
    sch = out[0];
  }
  EXPECT_TRUE(StructuralEqual(sch.func(), tiled)) << StructuralDiff(sch.func(), tiled);
}

TEST(MultiLevelTilingTensorCoreTest, RejectsBadParameters) {
  for (const char* text : {R"({"structure": "SSRSRS"})", R"({"tile_binds": ["threadIdx.x"]})",
                           R"({"reuse_write": {"req": "may", "levels": [2], "scope": "shared"}})",
                           R"({"intrin_group": "wmma"})", R"({"intrinsics": "mma.sync"})"}) {
    absl::StatusOr<ScheduleRulePtr> rule =
        NewMultiLevelTilingTensorCore(Cuda(), nlohmann::json::parse(text));
    ASSERT_FALSE(rule.ok()) << text;
    EXPECT_EQ(rule.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  // mma.sync.m16n8k16 needs sm_80.
  absl::StatusOr<ScheduleRulePtr> turing = NewMultiLevelTilingTensorCore(
      Cuda("sm_75"), nlohmann::json::parse(R"({"intrinsics": "mma"})"));
  ASSERT_FALSE(turing.ok());
  EXPECT_NE(turing.status().message().find("needs sm_80"), std::string::npos) << turing.status();
}

}  // namespace
}  // namespace tessera
