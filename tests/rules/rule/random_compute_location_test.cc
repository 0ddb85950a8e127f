// RandomComputeLocation (rules/rule/random_compute_location.cc). Where it applies and where it does
// not, and that what it produces computes what the unscheduled function computes and replays from
// its trace JSON (testing::CheckScheduleCorrect).
#include <set>
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
using rule_testing::HasBlock;
using rule_testing::Make;
using rule_testing::ReductionWorkload;
using testing::CheckScheduleCorrect;
using testing::SmallWorkload;

TEST(RandomComputeLocationTest, SamplesALocationForProducers) {
  PrimFunc func = SmallWorkload("DENSE_BIAS_RELU");
  ScheduleRulePtr rule = Make(NewRandomComputeLocation(Cpu(), {}));
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
  ScheduleRulePtr rule = Make(NewRandomComputeLocation(Cpu(), {}));
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
  ScheduleRulePtr rfactor = Make(NewAddRFactor(Cpu(), {}));
  ScheduleRulePtr rule = Make(NewRandomComputeLocation(Cpu(), {}));
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

}  // namespace
}  // namespace tessera
