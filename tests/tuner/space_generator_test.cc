// Tests of PostOrderApply (GenerateDesignSpaces) and MakeCandidate with small rules and
// postprocessors defined here, so the driver's order, branching and skipping are checked
// independently of the real rules (space_test.cc runs those).
#include "tuner/space_generator.h"

#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/structural_equal.h"
#include "rules/annotations.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

PrimFunc DenseBiasRelu() {
  absl::StatusOr<PrimFunc> f = MakeWorkload("DENSE_BIAS_RELU", {{"M", 8}, {"N", 8}, {"K", 8}});
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

// Logs "<rule>:<block>" for every block it is applied to; applies nothing.
class LoggingRule : public ScheduleRule {
 public:
  LoggingRule(std::string name, std::shared_ptr<std::vector<std::string>> log)
      : name_(std::move(name)), log_(std::move(log)) {}
  std::string name() const override { return name_; }
  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const override {
    log_->push_back(absl::StrCat(name_, ":", *sch->BlockName(block)));
    return std::vector<Schedule>{std::move(*sch)};
  }

 private:
  std::string name_;
  std::shared_ptr<std::vector<std::string>> log_;
};

// On block `block_name`: branches into `ways` schedules, each annotating the block "way" = i.
class BranchRule : public ScheduleRule {
 public:
  BranchRule(std::string block_name, int ways) : block_name_(std::move(block_name)), ways_(ways) {}
  std::string name() const override { return "Branch"; }
  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const override {
    if (*sch->BlockName(block) != block_name_) return std::vector<Schedule>{std::move(*sch)};
    std::vector<Schedule> out;
    for (int i = 0; i < ways_; ++i) {
      Schedule next = sch->Copy();
      absl::Status annotated = next.Annotate(block, "way", InstValue::Int(i));
      if (!annotated.ok()) return annotated;
      out.push_back(std::move(next));
    }
    return out;
  }

 private:
  std::string block_name_;
  int ways_;
};

// Inlines every block it can (like AutoInline, without the analysis).
class InlineRule : public ScheduleRule {
 public:
  std::string name() const override { return "Inline"; }
  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const override {
    sch->ComputeInline(block).IgnoreError();  // unchanged when the block cannot be inlined
    return std::vector<Schedule>{std::move(*sch)};
  }
};

// Tiles the i loop of the reduction block with a sampled perfect tile.
class TileRule : public ScheduleRule {
 public:
  std::string name() const override { return "Tile"; }
  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const override {
    if (*sch->BlockName(block) != "T_dense") return std::vector<Schedule>{std::move(*sch)};
    std::vector<LoopRV> loops = *sch->GetLoops(block);
    absl::StatusOr<std::vector<ExprRV>> tiles = sch->SamplePerfectTile(loops[0], 3, 4);
    if (!tiles.ok()) return tiles.status();
    std::vector<InstValue> factors;
    for (ExprRV t : *tiles) factors.push_back(InstValue::Of(t));
    absl::StatusOr<std::vector<LoopRV>> split = sch->Split(loops[0], factors);
    if (!split.ok()) return split.status();
    return std::vector<Schedule>{std::move(*sch)};
  }
};

class FailingRule : public ScheduleRule {
 public:
  std::string name() const override { return "Broken"; }
  absl::StatusOr<std::vector<Schedule>> Apply(Schedule*, BlockRV) const override {
    return absl::InternalError("stale rv");
  }
};

// Annotates the root block "postprocessed" = 1 (a recorded instruction), or rejects.
class MarkPostproc : public Postproc {
 public:
  explicit MarkPostproc(bool reject) : reject_(reject) {}
  std::string name() const override { return reject_ ? "Reject" : "Mark"; }
  absl::Status Apply(Schedule* sch) const override {
    if (reject_) return absl::InvalidArgumentError("block root is not welcome");
    absl::StatusOr<BlockRV> root = sch->GetBlock("root");
    if (!root.ok()) return root.status();
    return sch->Annotate(*root, "postprocessed", InstValue::Int(1));
  }

 private:
  bool reject_;
};

SpaceConfig ConfigOf(std::vector<ScheduleRulePtr> rules) {
  SpaceConfig config;
  config.target = *Target::Parse("cpu");
  config.rules = std::move(rules);
  return config;
}

// The given block of `func` annotated schedule_rule = value.
PrimFunc WithScheduleRule(const PrimFunc& func, const std::string& block,
                          const std::string& value) {
  Schedule sch = Schedule::Create(func, 0);
  absl::Status annotated =
      sch.Annotate(*sch.GetBlock(block), attr::kScheduleRule, InstValue::String(value));
  EXPECT_TRUE(annotated.ok()) << annotated;
  return sch.func();
}

TEST(SpaceGeneratorTest, VisitsRootFirstThenBlocksLastToFirstRuleMajor) {
  auto log = std::make_shared<std::vector<std::string>>();
  SpaceConfig config = ConfigOf({std::make_shared<LoggingRule>("A", log),
                                 std::make_shared<LoggingRule>("B", log)});
  absl::StatusOr<std::vector<Schedule>> spaces = GenerateDesignSpaces(DenseBiasRelu(), config, 1);
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  EXPECT_EQ(spaces->size(), 1u);
  EXPECT_EQ(*log, (std::vector<std::string>{"A:root", "A:T_relu", "A:T_add", "A:T_dense",
                                            "B:root", "B:T_relu", "B:T_add", "B:T_dense"}));
}

TEST(SpaceGeneratorTest, TraceStartsWithOneGetBlockPerBlockInPostOrder) {
  absl::StatusOr<std::vector<Schedule>> spaces =
      GenerateDesignSpaces(DenseBiasRelu(), ConfigOf({}), 1);
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  ASSERT_EQ(spaces->size(), 1u);
  const Trace& trace = (*spaces)[0].trace();
  ASSERT_EQ(trace.size(), 4u);
  std::vector<std::string> names;
  for (const Instruction& inst : trace.insts()) {
    EXPECT_EQ(std::string(inst.kind->name), "GetBlock");
    names.push_back(inst.attrs[0].as_string());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"T_dense", "T_add", "T_relu", "root"}));
}

TEST(SpaceGeneratorTest, NestedBlocksComeBeforeTheirParent) {
  // Blockize puts T_dense inside a new outer block: post-order lists the inner one first.
  PrimFunc func = DenseBiasRelu();
  Schedule sch = Schedule::Create(func, 0);
  BlockRV dense = *sch.GetBlock("T_dense");
  std::vector<LoopRV> loops = *sch.GetLoops(dense);
  absl::StatusOr<BlockRV> outer = sch.Blockize(loops[1]);
  ASSERT_TRUE(outer.ok()) << outer.status();
  std::string outer_name = *sch.BlockName(*outer);
  auto log = std::make_shared<std::vector<std::string>>();
  absl::StatusOr<std::vector<Schedule>> spaces =
      GenerateDesignSpaces(sch.func(), ConfigOf({std::make_shared<LoggingRule>("A", log)}), 1);
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  EXPECT_EQ(*log, (std::vector<std::string>{"A:root", "A:T_relu", "A:T_add",
                                            "A:" + outer_name, "A:T_dense"}));
}

TEST(SpaceGeneratorTest, BranchingRulesMultiplyTheSpaces) {
  auto log = std::make_shared<std::vector<std::string>>();
  SpaceConfig config = ConfigOf({std::make_shared<BranchRule>("T_dense", 3),
                                 std::make_shared<BranchRule>("T_relu", 2),
                                 std::make_shared<LoggingRule>("A", log)});
  absl::StatusOr<std::vector<Schedule>> spaces = GenerateDesignSpaces(DenseBiasRelu(), config, 1);
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  ASSERT_EQ(spaces->size(), 6u);
  EXPECT_EQ(log->size(), 6u * 4u);  // the later rule visits every block of every space
  std::set<std::string> traces;
  for (const Schedule& s : *spaces) traces.insert(s.trace().ToJson());
  EXPECT_EQ(traces.size(), 6u);
}

TEST(SpaceGeneratorTest, SkipsBlocksThatAnEarlierRuleRemoved) {
  auto log = std::make_shared<std::vector<std::string>>();
  SpaceConfig config =
      ConfigOf({std::make_shared<InlineRule>(), std::make_shared<LoggingRule>("A", log)});
  absl::StatusOr<std::vector<Schedule>> spaces = GenerateDesignSpaces(DenseBiasRelu(), config, 1);
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  // T_add (elementwise) was inlined into T_relu; T_dense (a reduction) cannot be.
  EXPECT_EQ(*log, (std::vector<std::string>{"A:root", "A:T_relu", "A:T_dense"}));
}

TEST(SpaceGeneratorTest, ScheduleRuleNoneSkipsTheBlockForEveryRule) {
  auto log = std::make_shared<std::vector<std::string>>();
  PrimFunc func = WithScheduleRule(DenseBiasRelu(), "T_add", "None");
  SpaceConfig config = ConfigOf({std::make_shared<LoggingRule>("A", log),
                                 std::make_shared<LoggingRule>("B", log)});
  ASSERT_TRUE(GenerateDesignSpaces(func, config, 1).ok());
  EXPECT_EQ(*log, (std::vector<std::string>{"A:root", "A:T_relu", "A:T_dense", "B:root",
                                            "B:T_relu", "B:T_dense"}));
}

TEST(SpaceGeneratorTest, ScheduleRuleNameRestrictsTheBlockToThatRule) {
  auto log = std::make_shared<std::vector<std::string>>();
  PrimFunc func = WithScheduleRule(DenseBiasRelu(), "T_add", "B");
  SpaceConfig config = ConfigOf({std::make_shared<LoggingRule>("A", log),
                                 std::make_shared<LoggingRule>("B", log)});
  ASSERT_TRUE(GenerateDesignSpaces(func, config, 1).ok());
  EXPECT_EQ(*log, (std::vector<std::string>{"A:root", "A:T_relu", "A:T_dense", "B:root",
                                            "B:T_relu", "B:T_add", "B:T_dense"}));
}

TEST(SpaceGeneratorTest, RuleErrorNamesRuleAndBlock) {
  absl::StatusOr<std::vector<Schedule>> spaces =
      GenerateDesignSpaces(DenseBiasRelu(), ConfigOf({std::make_shared<FailingRule>()}), 1);
  ASSERT_FALSE(spaces.ok());
  EXPECT_EQ(spaces.status().message(), "schedule rule Broken on block root: stale rv");
}

// The single design space of TileRule on DENSE_BIAS_RELU.
Trace TiledSpace(const PrimFunc& func) {
  absl::StatusOr<std::vector<Schedule>> spaces =
      GenerateDesignSpaces(func, ConfigOf({std::make_shared<TileRule>()}), 7);
  EXPECT_TRUE(spaces.ok()) << spaces.status();
  return (*spaces)[0].trace();
}

TEST(SpaceGeneratorTest, CandidateKeepsDecisionsAndRecordsPostprocsAfterTheMarker) {
  PrimFunc func = DenseBiasRelu();
  Trace space = TiledSpace(func);
  std::vector<PostprocPtr> postprocs = {std::make_shared<MarkPostproc>(false)};
  absl::StatusOr<Schedule> candidate = MakeCandidate(func, space, postprocs, 3, false);
  ASSERT_TRUE(candidate.ok()) << candidate.status();
  const Trace& trace = candidate->trace();
  ASSERT_EQ(trace.PostprocStart(), space.size());
  ASSERT_EQ(trace.size(), space.size() + 3);  // EnterPostproc, GetBlock, Annotate
  EXPECT_EQ(std::string(trace.insts().back().kind->name), "Annotate");
  for (size_t i = 0; i < space.size(); ++i) EXPECT_EQ(trace.decision(i), space.decision(i)) << i;
  EXPECT_TRUE(testing::CheckScheduleCorrect(*candidate, func).ok());
}

TEST(SpaceGeneratorTest, ErasedDecisionsAreSampledAnew) {
  PrimFunc func = DenseBiasRelu();
  Trace space = TiledSpace(func);
  std::set<std::vector<int64_t>> tilings;
  for (int64_t seed = 0; seed < 40; ++seed) {
    absl::StatusOr<Schedule> candidate = MakeCandidate(func, space, {}, seed, true);
    ASSERT_TRUE(candidate.ok()) << candidate.status();
    for (size_t i = 0; i < candidate->trace().size(); ++i) {
      const InstValue& d = candidate->trace().decision(i);
      if (!d.is_none()) tilings.insert(d.AsIntArray());
    }
  }
  // 8 = 2^3 split 3 ways, innermost <= 4: 9 tilings; 40 draws see several.
  EXPECT_GE(tilings.size(), 4u);
}

TEST(SpaceGeneratorTest, RejectionNamesThePostproc) {
  PrimFunc func = DenseBiasRelu();
  std::vector<PostprocPtr> postprocs = {std::make_shared<MarkPostproc>(false),
                                        std::make_shared<MarkPostproc>(true)};
  CandidateFailure failure;
  absl::StatusOr<Schedule> candidate =
      MakeCandidate(func, TiledSpace(func), postprocs, 3, true, &failure);
  ASSERT_FALSE(candidate.ok());
  EXPECT_EQ(candidate.status().message(), "Reject: block root is not welcome");
  EXPECT_EQ(failure.stage, "Reject");
  EXPECT_EQ(failure.message, "block root is not welcome");
}

TEST(SpaceGeneratorTest, ReplayFailureIsStageReplay) {
  // A trace of DENSE_BIAS_RELU does not replay on GMM (no block T_dense).
  absl::StatusOr<PrimFunc> gmm = MakeWorkload("GMM", {{"M", 8}, {"N", 8}, {"K", 8}});
  ASSERT_TRUE(gmm.ok());
  CandidateFailure failure;
  absl::StatusOr<Schedule> candidate =
      MakeCandidate(*gmm, TiledSpace(DenseBiasRelu()), {}, 3, false, &failure);
  ASSERT_FALSE(candidate.ok());
  EXPECT_EQ(failure.stage, "replay");
  EXPECT_NE(failure.message.find("T_dense"), std::string::npos) << failure.message;
}

}  // namespace
}  // namespace tessera
