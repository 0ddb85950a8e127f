// AutoBind (rules/rule/auto_bind.cc). Where it applies and where it does not, and that
// what it produces computes what the unscheduled function computes and replays from its trace
// JSON (testing::CheckScheduleCorrect).
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rules/annotations.h"
#include "rules/schedule_rule.h"
#include "rules/thread_bind.h"
#include "tests/rules/rule_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using rule_testing::ApplyAt;
using rule_testing::CountInsts;
using rule_testing::Cpu;
using rule_testing::Cuda;
using rule_testing::LoopTags;
using rule_testing::Make;
using testing::CheckScheduleCorrect;
using testing::SmallWorkload;

TEST(AutoBindTest, BindsAnElementwiseBlockOnCuda) {
  PrimFunc func = SmallWorkload("ELEMENTWISE");
  std::string block = AllBlockNames(func).back();
  ScheduleRulePtr rule = Make(NewAutoBind(Cuda(), {}));
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
  ScheduleRulePtr rule = Make(NewAutoBind(small, {{"max_threadblocks", 2}}));
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
  EXPECT_EQ(CountInsts(ApplyAt(*Make(NewAutoBind(Cuda(), {})), &sch, "root")[0], "Bind"), 0);
  EXPECT_EQ(CountInsts(ApplyAt(*Make(NewAutoBind(Cpu(), {})), &sch, block)[0], "Bind"), 0);
}

}  // namespace
}  // namespace tessera
