// Tests of the non-tiling schedule rules (rules/rule/*) and the thread binder
// (rules/thread_bind.h) on workloads of the library: where each rule applies and where it
// does not, that what it produces computes what the unscheduled function computes and replays
// from its trace JSON (testing::CheckScheduleCorrect), and that bad parameters are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/check.h"
#include "frontend/workloads.h"
#include "ir/functor.h"
#include "ir/parser.h"
#include "rules/analysis.h"
#include "rules/annotations.h"
#include "rules/rule/params.h"
#include "rules/schedule_rules.h"
#include "rules/thread_bind.h"
#include "schedule/state.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using testing::CheckScheduleCorrect;
using testing::SmallWorkload;

Target Cpu() { return *Target::Parse("cpu -cores=4"); }
Target Cuda() { return *Target::Parse("cuda -arch=sm_80"); }

// A workload at an explicit (small) shape.
PrimFunc Workload(const std::string& name, const std::map<std::string, int64_t>& shape) {
  absl::StatusOr<PrimFunc> func = MakeWorkload(name, shape);
  TESSERA_CHECK(func.ok()) << func.status();
  return *func;
}

// Reductions with much more reduction than spatial extent, where the reduction rules apply.
PrimFunc ReductionWorkload(const std::string& name) {
  if (name == "REDUCE_SUM") return Workload(name, {{"M", 8}, {"N", 64}});
  if (name == "GEMV") return Workload(name, {{"M", 8}, {"K", 64}});
  if (name == "SFM") return Workload(name, {{"M", 4}, {"N", 64}});
  if (name == "NRM") return Workload(name, {{"B", 1}, {"M", 8}, {"N", 16}});
  TESSERA_CHECK(false) << "no reduction shape for " << name;
  return PrimFunc();
}

ScheduleRulePtr Make(absl::StatusOr<ScheduleRulePtr> rule) {
  TESSERA_CHECK(rule.ok()) << rule.status();
  return *rule;
}

// Applies `rule` to block `block` of `*sch`.
std::vector<Schedule> ApplyAt(const ScheduleRule& rule, Schedule* sch, const std::string& block) {
  absl::StatusOr<BlockRV> rv = sch->GetBlock(block);
  TESSERA_CHECK(rv.ok()) << rv.status();
  absl::StatusOr<std::vector<Schedule>> result = rule.Apply(sch, *rv);
  TESSERA_CHECK(result.ok()) << result.status();
  return *result;
}

bool HasBlock(const PrimFunc& func, const std::string& name) {
  return FindBlockPath(func, name).ok();
}

int CountInsts(const Schedule& sch, const std::string& kind) {
  int n = 0;
  for (const Instruction& inst : sch.trace().insts()) n += kind == inst.kind->name;
  return n;
}

Block GetBlock(const PrimFunc& func, const std::string& name) {
  absl::StatusOr<StmtPath> path = FindBlockPath(func, name);
  TESSERA_CHECK(path.ok()) << path.status();
  return path->back().as<BlockRealizeNode>()->block;
}

// The thread tags of the loops around block `name` (up to its enclosing block), outermost first.
std::vector<std::string> LoopTags(const PrimFunc& func, const std::string& name) {
  std::vector<std::string> tags;
  for (const Stmt& loop : LoopsOnPath(*FindBlockPath(func, name))) {
    tags.push_back(loop.as<ForNode>()->thread_tag);
  }
  return tags;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// True when a reduction loop of block `name` in `sch` is bound to threadIdx.x.
bool ReductionBoundToThreadX(Schedule* sch, const std::string& name) {
  BlockRV block = *sch->GetBlock(name);
  std::vector<LoopRV> loops = *sch->GetLoops(block);
  std::vector<std::optional<IterKind>> kinds = LoopIterKinds(*sch, block);
  for (size_t i = 0; i < loops.size(); ++i) {
    if (kinds[i] == IterKind::kReduction && (*sch->Get(loops[i]))->thread_tag == "threadIdx.x") {
      return true;
    }
  }
  return false;
}

// ---- Parameters ---------------------------------------------------------------------------

TEST(RuleParamsTest, ReadsValuesAndDefaults) {
  nlohmann::json params = {{"flag", false}, {"n", 3}, {"list", {1, 2}}, {"ops", {"exp"}}};
  absl::StatusOr<RuleParams> p =
      RuleParams::Parse("Owner", params, {"flag", "n", "list", "ops", "s"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(*p->Bool("flag", true));
  EXPECT_EQ(*p->Int("n", 7), 3);
  EXPECT_EQ(*p->IntList("list", {}), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(*p->StringList("ops", {}), (std::vector<std::string>{"exp"}));
  EXPECT_EQ(*p->String("s", "dflt"), "dflt");
  EXPECT_EQ(p->Get("s"), nullptr);
  EXPECT_TRUE(RuleParams::Parse("Owner", nlohmann::json(), {}).ok());
}

TEST(RuleParamsTest, RejectsUnknownKeysWrongTypesAndNonObjects) {
  absl::StatusOr<RuleParams> unknown = RuleParams::Parse("Owner", {{"bogus", 1}}, {"n"});
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("Owner: unknown parameter 'bogus' (known: n)"),
            std::string::npos)
      << unknown.status();
  EXPECT_FALSE(RuleParams::Parse("Owner", nlohmann::json::array({1}), {}).ok());
  RuleParams p = *RuleParams::Parse("Owner", {{"n", 1.5}, {"list", {1, "x"}}}, {"n", "list"});
  absl::Status bad_int = p.Int("n", 0).status();
  EXPECT_EQ(bad_int.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_int.message(), "Owner: parameter 'n' must be an integer, got 1.5");
  EXPECT_FALSE(p.IntList("list", {}).ok());
  EXPECT_FALSE(p.Bool("n", false).ok());
}

TEST(ScheduleRuleFactoryTest, BadParametersNameTheRuleAndTheKey) {
  struct Case {
    absl::StatusOr<ScheduleRulePtr> rule;
    std::string expected;
  };
  std::vector<Case> cases;
  cases.push_back({MakeAutoInline(Cpu(), {{"into_producer", 1}}),
                   "AutoInline: parameter 'into_producer' must be a boolean"});
  cases.push_back({MakeAutoInline(Cpu(), {{"disallow_op", {"no_such_op"}}}),
                   "AutoInline: parameter 'disallow_op' names an unknown operator 'no_such_op'"});
  cases.push_back({MakeInlineConstantScalars(Cpu(), {{"x", 1}}),
                   "InlineConstantScalars: unknown parameter 'x'"});
  cases.push_back({MakeAddRFactor(Cpu(), {{"max_jobs_per_core", "16"}}),
                   "AddRFactor: parameter 'max_jobs_per_core' must be an integer"});
  cases.push_back({MakeAddRFactor(Cpu(), {{"max_innermost_factor", 0}}),
                   "AddRFactor: parameter 'max_innermost_factor' must be at least 1"});
  cases.push_back({MakeParallelizeVectorizeUnroll(Cpu(), {{"unroll_max_steps", {0, -4}}}),
                   "ParallelizeVectorizeUnroll: parameter 'unroll_max_steps' must hold"});
  cases.push_back({MakeParallelizeVectorizeUnroll(Cuda(), {{"max_jobs_per_core", 16}}),
                   "ParallelizeVectorizeUnroll: parameter 'max_jobs_per_core' must be -1"});
  cases.push_back({MakeRandomComputeLocation(Cpu(), {{"seed", 1}}),
                   "RandomComputeLocation: unknown parameter 'seed'"});
  cases.push_back({MakeCrossThreadReduction(Cuda(), {{"thread_extents", nlohmann::json::array()}}),
                   "CrossThreadReduction: parameter 'thread_extents' must be a non-empty list"});
  cases.push_back({MakeAutoBind(Cuda(), {{"max_threadblocks", true}}),
                   "AutoBind: parameter 'max_threadblocks' must be an integer"});
  cases.push_back({MakeAutoBind(Cuda(), {{"thread_extents", {32, 0}}}),
                   "AutoBind: parameter 'thread_extents' must hold positive extents"});
  for (const Case& c : cases) {
    EXPECT_EQ(c.rule.status().code(), absl::StatusCode::kInvalidArgument) << c.expected;
    EXPECT_NE(c.rule.status().message().find(c.expected), std::string::npos) << c.rule.status();
  }
}

TEST(ScheduleRuleFactoryTest, RulesCarryTheirRegisteredNames) {
  EXPECT_EQ(Make(MakeAutoInline(Cpu(), {}))->name(), "AutoInline");
  EXPECT_EQ(Make(MakeInlineConstantScalars(Cpu(), {}))->name(), "InlineConstantScalars");
  EXPECT_EQ(Make(MakeAddRFactor(Cpu(), {}))->name(), "AddRFactor");
  EXPECT_EQ(Make(MakeParallelizeVectorizeUnroll(Cpu(), {}))->name(), "ParallelizeVectorizeUnroll");
  EXPECT_EQ(Make(MakeRandomComputeLocation(Cpu(), {}))->name(), "RandomComputeLocation");
  EXPECT_EQ(Make(MakeCrossThreadReduction(Cuda(), {}))->name(), "CrossThreadReduction");
  EXPECT_EQ(Make(MakeAutoBind(Cuda(), {}))->name(), "AutoBind");
}

// ---- AutoInline / InlineConstantScalars ---------------------------------------------------

TEST(AutoInlineTest, InlinesBiasIntoReluOnCpu) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(MakeAutoInline(Cpu(), {}));
  Schedule sch = Schedule::Create(func, 1);
  std::vector<Schedule> out = ApplyAt(*rule, &sch, "T_add");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(HasBlock(out[0].func(), "T_add"));
  EXPECT_EQ(CountInsts(out[0], "ComputeInline"), 1);
  EXPECT_TRUE(CheckScheduleCorrect(out[0], func).ok()) << CheckScheduleCorrect(out[0], func);
}

TEST(AutoInlineTest, LeavesReductionsAndOutputsOnCpu) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(MakeAutoInline(Cpu(), {}));
  for (const char* block : {"T_dense", "T_relu"}) {
    Schedule sch = Schedule::Create(func, 1);
    std::vector<Schedule> out = ApplyAt(*rule, &sch, block);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(HasBlock(out[0].func(), block)) << block;
    EXPECT_EQ(CountInsts(out[0], "ComputeInline") + CountInsts(out[0], "ReverseComputeInline"), 0);
  }
}

TEST(AutoInlineTest, InlinesConsumerIntoProducerOnCuda) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(MakeAutoInline(Cuda(), {}));
  Schedule sch = Schedule::Create(func, 1);
  std::vector<Schedule> out = ApplyAt(*rule, &sch, "T_relu");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(HasBlock(out[0].func(), "T_relu"));
  EXPECT_EQ(CountInsts(out[0], "ReverseComputeInline"), 1);
  EXPECT_TRUE(CheckScheduleCorrect(out[0], func).ok()) << CheckScheduleCorrect(out[0], func);
}

TEST(AutoInlineTest, DisallowedOpBlocksInliningOnCpuOnly) {
  PrimFunc func = ReductionWorkload("SFM");
  struct Case {
    Target target;
    nlohmann::json params;
    bool inlined;
  };
  for (const Case& c : {Case{Cpu(), nlohmann::json::object(), false},
                        Case{Cpu(), {{"disallow_op", nlohmann::json::array()}}, true},
                        Case{Cuda(), nlohmann::json::object(), true}}) {
    ScheduleRulePtr rule = Make(MakeAutoInline(c.target, c.params));
    Schedule sch = Schedule::Create(func, 1);
    std::vector<Schedule> out = ApplyAt(*rule, &sch, "T_softmax_exp");
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(!HasBlock(out[0].func(), "T_softmax_exp"), c.inlined) << c.params.dump();
    EXPECT_TRUE(CheckScheduleCorrect(out[0], func).ok()) << CheckScheduleCorrect(out[0], func);
  }
}

TEST(AutoInlineTest, InlineRuleDisableAnnotationIsRespected) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(MakeAutoInline(Cpu(), {}));
  Schedule sch = Schedule::Create(func, 1);
  BlockRV add = *sch.GetBlock("T_add");
  ASSERT_TRUE(sch.Annotate(add, attr::kInlineRule, InstValue::String("disable")).ok());
  absl::StatusOr<std::vector<Schedule>> out = rule->Apply(&sch, add);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(HasBlock((*out)[0].func(), "T_add"));
}

TEST(AutoInlineTest, StaleBlockIsAnError) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(MakeAutoInline(Cpu(), {}));
  Schedule sch = Schedule::Create(func, 1);
  BlockRV add = *sch.GetBlock("T_add");
  ASSERT_TRUE(sch.ComputeInline(add).ok());
  EXPECT_FALSE(rule->Apply(&sch, add).ok());
}

constexpr char kConstantScalar[] = R"(
@prim_func
def main(A: Buffer((8,), "float32"), B: Buffer((8,), "float32")):
    with block("root"):
        c = alloc_buffer((), "float32")
        with block("c"):
            reads()
            writes(c[()])
            c[()] = float32(3.0)
        for i in range(8):
            with block("B"):
                v_i = axis.spatial(8, i)
                reads(A[v_i], c[()])
                writes(B[v_i])
                B[v_i] = A[v_i] * c[()]
)";

TEST(InlineConstantScalarsTest, InlinesAScalarConstantButNotAnOutput) {
  absl::StatusOr<PrimFunc> func = ParseFunc(kConstantScalar);
  ASSERT_TRUE(func.ok()) << func.status();
  ScheduleRulePtr rule = Make(MakeInlineConstantScalars(Cpu(), {}));
  Schedule sch = Schedule::Create(*func, 1);
  std::vector<Schedule> out = ApplyAt(*rule, &sch, "c");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(HasBlock(out[0].func(), "c"));
  EXPECT_TRUE(CheckScheduleCorrect(out[0], *func).ok()) << CheckScheduleCorrect(out[0], *func);

  Schedule other = Schedule::Create(*func, 1);
  out = ApplyAt(*rule, &other, "B");  // reads a buffer and writes an output
  EXPECT_TRUE(HasBlock(out[0].func(), "B"));
  EXPECT_EQ(out[0].trace().size(), other.trace().size());
}

// ---- AddRFactor ----------------------------------------------------------------------------

TEST(AddRFactorTest, BranchesReductionsIntoRFactorVariants) {
  ScheduleRulePtr rule = Make(MakeAddRFactor(Cpu(), {}));
  for (const char* workload : {"REDUCE_SUM", "GEMV"}) {
    PrimFunc func = ReductionWorkload(workload);
    std::string block = testing::FirstReductionBlock(func);
    Schedule sch = Schedule::Create(func, 3);
    std::vector<Schedule> out = ApplyAt(*rule, &sch, block);
    ASSERT_GE(out.size(), 2u) << workload;
    ASSERT_LE(out.size(), 3u) << workload;
    for (size_t i = 0; i + 1 < out.size(); ++i) {
      EXPECT_EQ(CountInsts(out[i], "RFactor"), 1) << workload;
      EXPECT_EQ(CountInsts(out[i], "SamplePerfectTile"), 1) << workload;
      EXPECT_EQ(GetBlock(out[i].func(), block)->annotations.count(attr::kRandomComputeProducer),
                1u);
      EXPECT_EQ(AllBlockNames(out[i].func()).size(), AllBlockNames(func).size() + 1);
      absl::Status correct = CheckScheduleCorrect(out[i], func);
      EXPECT_TRUE(correct.ok()) << workload << ": " << correct;
    }
    // The untouched original comes last.
    EXPECT_EQ(CountInsts(out.back(), "RFactor"), 0);
    EXPECT_EQ(AllBlockNames(out.back().func()).size(), AllBlockNames(func).size());
  }
}

TEST(AddRFactorTest, LeavesSpatialBlocksAndParallelMatmulsAlone) {
  ScheduleRulePtr rule = Make(MakeAddRFactor(Cpu(), {}));
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  for (const char* block : {"T_add", "T_dense"}) {
    Schedule sch = Schedule::Create(func, 3);
    std::vector<Schedule> out = ApplyAt(*rule, &sch, block);
    ASSERT_EQ(out.size(), 1u) << block;
    EXPECT_EQ(CountInsts(out[0], "RFactor"), 0);
  }
}

// ---- CrossThreadReduction ------------------------------------------------------------------

TEST(CrossThreadReductionTest, BindsTheReductionToThreadIdxOnCuda) {
  ScheduleRulePtr rule = Make(MakeCrossThreadReduction(Cuda(), {}));
  for (const char* workload : {"SFM", "NRM"}) {
    PrimFunc func = ReductionWorkload(workload);
    std::string block = testing::FirstReductionBlock(func);
    for (int seed = 0; seed < 4; ++seed) {
      Schedule sch = Schedule::Create(func, seed);
      std::vector<Schedule> out = ApplyAt(*rule, &sch, block);
      ASSERT_EQ(out.size(), 2u) << workload;
      EXPECT_TRUE(ReductionBoundToThreadX(&out[0], block)) << workload;
      EXPECT_EQ(CountInsts(out[0], "SampleCategorical"), 1);
      EXPECT_FALSE(ReductionBoundToThreadX(&out[1], block));
      absl::Status correct = CheckScheduleCorrect(out[0], func, seed);
      EXPECT_TRUE(correct.ok()) << workload << ": " << correct;
    }
  }
}

TEST(CrossThreadReductionTest, FusesSoftmaxReductionsIntoTheirConsumers) {
  // The order PostOrderApply uses on CUDA: AutoInline, then CrossThreadReduction, blocks from
  // last to first; the second reduction reuses the thread extent bound for the first.
  PrimFunc func = ReductionWorkload("SFM");
  ScheduleRulePtr inline_rule = Make(MakeAutoInline(Cuda(), {}));
  ScheduleRulePtr ctr = Make(MakeCrossThreadReduction(Cuda(), {}));
  Schedule sch = Schedule::Create(func, 5);
  sch = ApplyAt(*inline_rule, &sch, "T_softmax_exp")[0];
  ASSERT_FALSE(HasBlock(sch.func(), "T_softmax_exp"));
  sch = ApplyAt(*ctr, &sch, "T_softmax_expsum")[0];
  sch = ApplyAt(*ctr, &sch, "T_softmax_maxelem")[0];
  EXPECT_TRUE(ReductionBoundToThreadX(&sch, "T_softmax_expsum"));
  EXPECT_TRUE(ReductionBoundToThreadX(&sch, "T_softmax_maxelem"));
  EXPECT_TRUE(Contains(LoopTags(sch.func(), "T_softmax_norm"), "threadIdx.x"));
  // Both reductions live in the consumer's loop nest with shared-memory results.
  std::set<std::string> shared;
  PostOrderVisitStmts(sch.func()->body, [&](const Stmt& s) {
    if (const auto* block = s.as<BlockNode>()) {
      for (const Buffer& b : block->alloc_buffers) {
        if (b.scope() == "shared") shared.insert(b.name());
      }
    }
  });
  EXPECT_EQ(shared, (std::set<std::string>{"T_softmax_expsum", "T_softmax_maxelem"}));
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
}

TEST(CrossThreadReductionTest, NeverAppliesOnCpuOrToSpatialBlocks) {
  PrimFunc func = ReductionWorkload("SFM");
  ScheduleRulePtr cpu_rule = Make(MakeCrossThreadReduction(Cpu(), {}));
  Schedule sch = Schedule::Create(func, 1);
  EXPECT_EQ(ApplyAt(*cpu_rule, &sch, "T_softmax_maxelem").size(), 1u);
  ScheduleRulePtr rule = Make(MakeCrossThreadReduction(Cuda(), {}));
  std::vector<Schedule> out = ApplyAt(*rule, &sch, "T_softmax_norm");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(CountInsts(out[0], "Bind"), 0);
}

// ---- ParallelizeVectorizeUnroll -------------------------------------------------------------

template <typename T>
const T* RootAnnotation(const PrimFunc& func, const char* key) {
  const Block& root = func->body.as<BlockRealizeNode>()->block;
  auto it = root->annotations.find(key);
  return it == root->annotations.end() ? nullptr : std::get_if<T>(&it->second);
}

TEST(ParallelizeVectorizeUnrollTest, AnnotatesTheRootOnCpu) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(MakeParallelizeVectorizeUnroll(Cpu(), {}));
  std::set<int64_t> steps;
  for (int seed = 0; seed < 16; ++seed) {
    Schedule sch = Schedule::Create(func, seed);
    std::vector<Schedule> out = ApplyAt(*rule, &sch, "root");
    ASSERT_EQ(out.size(), 1u);
    const PrimFunc& f = out[0].func();
    ASSERT_NE(RootAnnotation<int64_t>(f, attr::kParallel), nullptr);
    EXPECT_EQ(*RootAnnotation<int64_t>(f, attr::kParallel), 4 * 16);
    ASSERT_NE(RootAnnotation<int64_t>(f, attr::kVectorize), nullptr);
    EXPECT_EQ(*RootAnnotation<int64_t>(f, attr::kVectorize), 64);
    const int64_t* step = RootAnnotation<int64_t>(f, attr::kUnrollExplicit);
    ASSERT_NE(step, nullptr);
    steps.insert(*step);
    EXPECT_EQ(CountInsts(out[0], "SampleCategorical"), 1);
    EXPECT_TRUE(CheckScheduleCorrect(out[0], func).ok()) << CheckScheduleCorrect(out[0], func);
  }
  EXPECT_GT(steps.size(), 1u);
  for (int64_t s : steps) EXPECT_TRUE(s == 0 || s == 16 || s == 64 || s == 512) << s;
}

TEST(ParallelizeVectorizeUnrollTest, CudaUnrollsOnlyAndSpatialFunctionsGetNoUnroll) {
  ScheduleRulePtr cuda = Make(MakeParallelizeVectorizeUnroll(Cuda(), {}));
  Schedule sch = Schedule::Create(ReductionWorkload("GEMV"), 1);
  PrimFunc f = ApplyAt(*cuda, &sch, "root")[0].func();
  EXPECT_EQ(RootAnnotation<int64_t>(f, attr::kParallel), nullptr);
  EXPECT_EQ(RootAnnotation<int64_t>(f, attr::kVectorize), nullptr);
  EXPECT_NE(RootAnnotation<int64_t>(f, attr::kUnrollExplicit), nullptr);

  ScheduleRulePtr implicit =
      Make(MakeParallelizeVectorizeUnroll(Cpu(), {{"unroll_explicit", false}}));
  Schedule gemv = Schedule::Create(ReductionWorkload("GEMV"), 1);
  f = ApplyAt(*implicit, &gemv, "root")[0].func();
  EXPECT_NE(RootAnnotation<int64_t>(f, attr::kUnrollImplicit), nullptr);

  ScheduleRulePtr cpu = Make(MakeParallelizeVectorizeUnroll(Cpu(), {}));
  Schedule elementwise = Schedule::Create(SmallWorkload("ELEMENTWISE"), 1);
  f = ApplyAt(*cpu, &elementwise, "root")[0].func();
  EXPECT_NE(RootAnnotation<int64_t>(f, attr::kParallel), nullptr);
  EXPECT_EQ(RootAnnotation<int64_t>(f, attr::kUnrollExplicit), nullptr);
}

TEST(ParallelizeVectorizeUnrollTest, IgnoresNonRootBlocks) {
  ScheduleRulePtr rule = Make(MakeParallelizeVectorizeUnroll(Cpu(), {}));
  PrimFunc func = ReductionWorkload("GEMV");
  Schedule sch = Schedule::Create(func, 1);
  std::vector<Schedule> out = ApplyAt(*rule, &sch, testing::FirstReductionBlock(func));
  EXPECT_EQ(RootAnnotation<int64_t>(out[0].func(), attr::kParallel), nullptr);
  EXPECT_EQ(CountInsts(out[0], "Annotate"), 0);
}

// ---- RandomComputeLocation -----------------------------------------------------------------

TEST(RandomComputeLocationTest, SamplesALocationForProducers) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(MakeRandomComputeLocation(Cpu(), {}));
  std::set<std::string> outcomes;
  for (int seed = 0; seed < 12; ++seed) {
    Schedule sch = Schedule::Create(func, seed);
    std::vector<Schedule> out = ApplyAt(*rule, &sch, "T_add");
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(CountInsts(out[0], "SampleComputeLocation"), 1);
    if (!HasBlock(out[0].func(), "T_add")) {
      outcomes.insert("inline");
    } else {
      outcomes.insert(LoopsOnPath(*FindBlockPath(out[0].func(), "T_add")).size() == 2 &&
                              EnclosingBlockRealize(*FindBlockPath(out[0].func(), "T_add"))
                                  .same_as(out[0].func()->body) &&
                              CountInsts(out[0], "ComputeAt") == 0
                          ? "root"
                          : "under T_relu");
    }
    absl::Status correct = CheckScheduleCorrect(out[0], func, seed);
    EXPECT_TRUE(correct.ok()) << correct;
  }
  EXPECT_GT(outcomes.size(), 1u);
}

TEST(RandomComputeLocationTest, SkipsBlocksWithoutConsumersAndTheRoot) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(MakeRandomComputeLocation(Cpu(), {}));
  for (const char* block : {"T_relu", "root"}) {
    Schedule sch = Schedule::Create(func, 1);
    std::vector<Schedule> out = ApplyAt(*rule, &sch, block);
    EXPECT_EQ(CountInsts(out[0], "SampleComputeLocation"), 0) << block;
  }
}

TEST(RandomComputeLocationTest, PlacesTheRFactorProducerToo) {
  // NRM's reduction C feeds D = sqrt(C): after AddRFactor, the rule samples a location for C
  // and for the rfactor block AddRFactor marked as its producer.
  PrimFunc func = ReductionWorkload("NRM");
  ScheduleRulePtr rfactor = Make(MakeAddRFactor(Cpu(), {}));
  ScheduleRulePtr rule = Make(MakeRandomComputeLocation(Cpu(), {}));
  for (int seed = 0; seed < 6; ++seed) {
    Schedule sch = Schedule::Create(func, seed);
    std::vector<Schedule> variants = ApplyAt(*rfactor, &sch, "C");
    ASSERT_GE(variants.size(), 2u);
    std::vector<Schedule> out = ApplyAt(*rule, &variants[0], "C");
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(CountInsts(out[0], "SampleComputeLocation"), 2);
    if (HasBlock(out[0].func(), "C")) {
      EXPECT_EQ(GetBlock(out[0].func(), "C")->annotations.count(attr::kRandomComputeProducer), 0u);
    }
    absl::Status correct = CheckScheduleCorrect(out[0], func, seed);
    EXPECT_TRUE(correct.ok()) << correct;
  }
}

// ---- AutoBind / BindBlockThreadIdx ---------------------------------------------------------

TEST(AutoBindTest, BindsAnElementwiseBlockOnCuda) {
  PrimFunc func = SmallWorkload("ELEMENTWISE");
  std::string block = AllBlockNames(func).back();
  ScheduleRulePtr rule = Make(MakeAutoBind(Cuda(), {}));
  for (int seed = 0; seed < 4; ++seed) {
    Schedule sch = Schedule::Create(func, seed);
    std::vector<Schedule> out = ApplyAt(*rule, &sch, block);
    ASSERT_EQ(out.size(), 1u);
    std::vector<std::string> tags = LoopTags(out[0].func(), block);
    ASSERT_EQ(tags.size(), 2u);
    EXPECT_EQ(tags[0], "blockIdx.x");
    EXPECT_EQ(tags[1], "threadIdx.x");
    EXPECT_EQ(CountInsts(out[0], "SampleCategorical"), 1);
    absl::Status correct = CheckScheduleCorrect(out[0], func, seed);
    EXPECT_TRUE(correct.ok()) << correct;
    // Binding again is a no-op.
    Schedule again = out[0];
    std::vector<Schedule> twice = ApplyAt(*rule, &again, block);
    EXPECT_EQ(CountInsts(twice[0], "Bind"), 2);
  }
}

TEST(AutoBindTest, SplitsBeyondTheGridLimit) {
  PrimFunc func = SmallWorkload("ELEMENTWISE");
  std::string block = AllBlockNames(func).back();
  Target small = *Cuda().With("max_threads_per_block", "32");
  ScheduleRulePtr rule = Make(MakeAutoBind(small, {{"max_threadblocks", 2}}));
  Schedule sch = Schedule::Create(func, 1);
  std::vector<Schedule> out = ApplyAt(*rule, &sch, block);
  std::vector<std::string> tags = LoopTags(out[0].func(), block);
  ASSERT_EQ(tags.size(), 3u);
  EXPECT_EQ(tags[0], "blockIdx.x");
  EXPECT_EQ(tags[1], "threadIdx.x");
  EXPECT_EQ(tags[2], "");
  EXPECT_EQ(CountInsts(out[0], "Reorder"), 1);
  EXPECT_TRUE(CheckScheduleCorrect(out[0], func).ok()) << CheckScheduleCorrect(out[0], func);
}

TEST(AutoBindTest, SkipsTheRootAndCpuTargets) {
  PrimFunc func = SmallWorkload("ELEMENTWISE");
  std::string block = AllBlockNames(func).back();
  Schedule sch = Schedule::Create(func, 1);
  EXPECT_EQ(CountInsts(ApplyAt(*Make(MakeAutoBind(Cuda(), {})), &sch, "root")[0], "Bind"), 0);
  EXPECT_EQ(CountInsts(ApplyAt(*Make(MakeAutoBind(Cpu(), {})), &sch, block)[0], "Bind"), 0);
}

TEST(BindBlockThreadIdxTest, FixedSamplerBindsReductionsThroughTheirSpatialLoops) {
  PrimFunc func = ReductionWorkload("REDUCE_SUM");
  std::string block = testing::FirstReductionBlock(func);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV rv = *sch.GetBlock(block);
  ASSERT_TRUE(BindBlockThreadIdx(&sch, rv, 256, 1024, MakeFixedThreadExtentSampler()).ok());
  std::vector<std::string> tags = LoopTags(sch.func(), block);
  ASSERT_GE(tags.size(), 3u);
  EXPECT_EQ(tags[0], "blockIdx.x");
  EXPECT_EQ(tags[1], "threadIdx.x");
  EXPECT_EQ(tags.back(), "");  // the reduction loop stays serial
  EXPECT_EQ(CountInsts(sch, "SampleCategorical"), 0);
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
}

TEST(BindBlockThreadIdxTest, BlockIdxWithoutThreadIdxIsAnError) {
  PrimFunc func = SmallWorkload("ELEMENTWISE");
  std::string block = AllBlockNames(func).back();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV rv = *sch.GetBlock(block);
  ASSERT_TRUE(sch.Bind((*sch.GetLoops(rv))[0], "blockIdx.x").ok());
  absl::Status status = BindBlockThreadIdx(&sch, rv, 256, 1024, MakeFixedThreadExtentSampler());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("no threadIdx loop"), std::string::npos) << status;
}

}  // namespace
}  // namespace tessera
