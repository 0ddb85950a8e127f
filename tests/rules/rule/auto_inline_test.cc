// AutoInline (rules/rule/auto_inline.cc). Where it applies and where it does not, and that
// what it produces computes what the unscheduled function computes and replays from its trace
// JSON (testing::CheckScheduleCorrect).
#include <vector>

#include "gtest/gtest.h"
#include "rules/annotations.h"
#include "rules/schedule_rule.h"
#include "tests/rules/rule_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using rule_testing::ApplyAt;
using rule_testing::CountInsts;
using rule_testing::Cpu;
using rule_testing::Cuda;
using rule_testing::HasBlock;
using rule_testing::Make;
using rule_testing::ReductionWorkload;
using testing::CheckScheduleCorrect;
using testing::SmallWorkload;

TEST(AutoInlineTest, InlinesBiasIntoReluOnCpu) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(NewAutoInline(Cpu(), {}));
  Schedule sch = Schedule::Create(func, 1);
  std::vector<Schedule> out = ApplyAt(*rule, &sch, "T_add");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(HasBlock(out[0].func(), "T_add"));
  EXPECT_EQ(CountInsts(out[0], "ComputeInline"), 1);
  EXPECT_TRUE(CheckScheduleCorrect(out[0], func).ok()) << CheckScheduleCorrect(out[0], func);
}

TEST(AutoInlineTest, LeavesReductionsAndOutputsOnCpu) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(NewAutoInline(Cpu(), {}));
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
  ScheduleRulePtr rule = Make(NewAutoInline(Cuda(), {}));
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
    ScheduleRulePtr rule = Make(NewAutoInline(c.target, c.params));
    Schedule sch = Schedule::Create(func, 1);
    std::vector<Schedule> out = ApplyAt(*rule, &sch, "T_softmax_exp");
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(!HasBlock(out[0].func(), "T_softmax_exp"), c.inlined) << c.params.dump();
    EXPECT_TRUE(CheckScheduleCorrect(out[0], func).ok()) << CheckScheduleCorrect(out[0], func);
  }
}

TEST(AutoInlineTest, InlineRuleDisableAnnotationIsRespected) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(NewAutoInline(Cpu(), {}));
  Schedule sch = Schedule::Create(func, 1);
  BlockRV add = *sch.GetBlock("T_add");
  ASSERT_TRUE(sch.Annotate(add, attr::kInlineRule, InstValue::String("disable")).ok());
  absl::StatusOr<std::vector<Schedule>> out = rule->Apply(&sch, add);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(HasBlock((*out)[0].func(), "T_add"));
}

TEST(AutoInlineTest, StaleBlockIsAnError) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(NewAutoInline(Cpu(), {}));
  Schedule sch = Schedule::Create(func, 1);
  BlockRV add = *sch.GetBlock("T_add");
  ASSERT_TRUE(sch.ComputeInline(add).ok());
  EXPECT_FALSE(rule->Apply(&sch, add).ok());
}

}  // namespace
}  // namespace tessera
