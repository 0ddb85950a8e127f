// CrossThreadReduction (rules/rule/cross_thread_reduction.cc). Where it applies and where it does
// not, and that what it produces computes what the unscheduled function computes and replays from
// its trace JSON (testing::CheckScheduleCorrect).
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/functor.h"
#include "rules/annotations.h"
#include "rules/schedule_rule.h"
#include "tests/rules/rule_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using rule_testing::ApplyAt;
using rule_testing::Contains;
using rule_testing::CountInsts;
using rule_testing::Cpu;
using rule_testing::Cuda;
using rule_testing::HasBlock;
using rule_testing::LoopTags;
using rule_testing::Make;
using rule_testing::ReductionBoundToThreadX;
using rule_testing::ReductionWorkload;
using testing::CheckScheduleCorrect;

TEST(CrossThreadReductionTest, BindsTheReductionToThreadIdxOnCuda) {
  ScheduleRulePtr rule = Make(NewCrossThreadReduction(Cuda(), {}));
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
  ScheduleRulePtr inline_rule = Make(NewAutoInline(Cuda(), {}));
  ScheduleRulePtr ctr = Make(NewCrossThreadReduction(Cuda(), {}));
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
  ScheduleRulePtr cpu_rule = Make(NewCrossThreadReduction(Cpu(), {}));
  Schedule sch = Schedule::Create(func, 1);
  EXPECT_EQ(ApplyAt(*cpu_rule, &sch, "T_softmax_maxelem").size(), 1u);
  ScheduleRulePtr rule = Make(NewCrossThreadReduction(Cuda(), {}));
  std::vector<Schedule> out = ApplyAt(*rule, &sch, "T_softmax_norm");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(CountInsts(out[0], "Bind"), 0);
}

}  // namespace
}  // namespace tessera
