// The thread binder shared by AutoBind, RewriteUnboundBlock and the default schedules
// (rules/thread_bind.h): reductions are bound through their spatial loops, and blockIdx without
// threadIdx is an error.
#include "rules/thread_bind.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rules/annotations.h"
#include "rules/schedule_rule.h"
#include "tests/rules/rule_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using rule_testing::CountInsts;
using rule_testing::LoopTags;
using rule_testing::ReductionWorkload;
using testing::CheckScheduleCorrect;
using testing::SmallWorkload;

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
