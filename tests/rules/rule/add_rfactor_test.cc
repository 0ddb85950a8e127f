// AddRFactor (rules/rule/add_rfactor.cc). Where it applies and where it does not, and that
// what it produces computes what the unscheduled function computes and replays from its trace
// JSON (testing::CheckScheduleCorrect).
#include <string>
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
using rule_testing::GetBlock;
using rule_testing::Make;
using rule_testing::ReductionWorkload;
using testing::CheckScheduleCorrect;
using testing::SmallWorkload;

TEST(AddRFactorTest, BranchesReductionsIntoRFactorVariants) {
  ScheduleRulePtr rule = Make(NewAddRFactor(Cpu(), {}));
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
  ScheduleRulePtr rule = Make(NewAddRFactor(Cpu(), {}));
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  for (const char* block : {"T_add", "T_dense"}) {
    Schedule sch = Schedule::Create(func, 3);
    std::vector<Schedule> out = ApplyAt(*rule, &sch, block);
    ASSERT_EQ(out.size(), 1u) << block;
    EXPECT_EQ(CountInsts(out[0], "RFactor"), 0);
  }
}

}  // namespace
}  // namespace tessera
