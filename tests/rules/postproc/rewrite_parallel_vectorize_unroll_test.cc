// RewriteParallelVectorizeUnroll (rules/postproc/rewrite_parallel_vectorize_unroll.cc), with
// RewriteReductionBlock after it as in the CPU defaults. On schedules built by hand with the
// annotations the schedule rules produce: what it rewrites or rejects (with the reason), and that
// the result computes what the unscheduled function computes and replays from its trace JSON.
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
using postproc_testing::Loop;
using postproc_testing::Make;
using postproc_testing::RunPostprocs;
using postproc_testing::Workload;
using testing::CheckCBackendMatches;
using testing::CheckScheduleCorrect;
using testing::SmallWorkload;

// The root of GMM annotated as ParallelizeVectorizeUnroll does, with j split so that a
// spatial loop is innermost: b * i fused and parallel, the inner j vectorized, the unroll
// pragmas on the outermost loop; then the init split out at the first reduction loop.
TEST(RewriteParallelVectorizeUnrollTest, AnnotatedGmmRootBecomesParallelVectorizedUnrolled) {
  PrimFunc func = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(func, 0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);  // b, i, j, k
  ASSERT_EQ(loops.size(), 4u);
  std::vector<LoopRV> j = *sch.Split(loops[2], {InstValue(), InstValue::Int(8)});
  ASSERT_TRUE(sch.Reorder({loops[0], loops[1], j[0], loops[3], j[1]}).ok());
  BlockRV root = *sch.GetBlock("root");
  ASSERT_TRUE(sch.Annotate(root, attr::kParallel, InstValue::Int(16)).ok());
  ASSERT_TRUE(sch.Annotate(root, attr::kVectorize, InstValue::Int(8)).ok());
  ASSERT_TRUE(sch.Annotate(root, attr::kUnrollExplicit, InstValue::Int(64)).ok());

  absl::Status s = RunPostprocs(
      &sch, {Make(NewDisallowDynamicLoop, Cpu()), Make(NewRewriteParallelVectorizeUnroll, Cpu()),
             Make(NewRewriteReductionBlock, Cpu())});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE((*sch.Get(root))->annotations.empty());
  std::vector<LoopRV> after = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_EQ(after.size(), 4u) << PrintFunc(sch.func());  // b*i, j_0, k, j_1
  const ForNode* outer = Loop(sch, after[0]);
  EXPECT_EQ(outer->for_kind, ForKind::kParallel);
  EXPECT_TRUE(IsConstInt(outer->extent, 1 * 32)) << PrintExpr(outer->extent);
  EXPECT_EQ(std::get<int64_t>(outer->annotations.at(attr::kPragmaAutoUnrollMaxStep)), 64);
  EXPECT_EQ(std::get<int64_t>(outer->annotations.at(attr::kPragmaUnrollExplicit)), 1);
  EXPECT_EQ(Loop(sch, after[1])->for_kind, ForKind::kSerial);
  EXPECT_EQ(Loop(sch, after[2])->for_kind, ForKind::kSerial);
  EXPECT_EQ(Loop(sch, after[3])->for_kind, ForKind::kVectorized);
  // The init is its own block, before the reduction loop k.
  ASSERT_TRUE(sch.GetBlock("C_init").ok()) << PrintFunc(sch.func());
  EXPECT_FALSE((*sch.Get(*sch.GetBlock("C")))->init.defined());

  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
  absl::Status built = CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

// Every loop of an elementwise block is spatial and contiguous: all are fused, split by the
// vector extent, the outer part parallel and the inner part vectorized; a purely spatial
// block gets no unroll pragma.
TEST(RewriteParallelVectorizeUnrollTest, ContiguousElementwiseIsFusedSplitParallelVectorized) {
  PrimFunc func = Workload("ELEMENTWISE", {{"M", 32}, {"N", 32}});
  Schedule sch = Schedule::Create(func, 0);
  BlockRV root = *sch.GetBlock("root");
  ASSERT_TRUE(sch.Annotate(root, attr::kParallel, InstValue::Int(16)).ok());
  ASSERT_TRUE(sch.Annotate(root, attr::kVectorize, InstValue::Int(16)).ok());
  ASSERT_TRUE(sch.Annotate(root, attr::kUnrollImplicit, InstValue::Int(16)).ok());
  ASSERT_TRUE(RunPostprocs(&sch, {Make(NewRewriteParallelVectorizeUnroll, Cpu())}).ok());
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_EQ(loops.size(), 2u) << PrintFunc(sch.func());
  EXPECT_EQ(Loop(sch, loops[0])->for_kind, ForKind::kParallel);
  EXPECT_TRUE(IsConstInt(Loop(sch, loops[0])->extent, 64));
  EXPECT_TRUE(Loop(sch, loops[0])->annotations.empty());
  EXPECT_EQ(Loop(sch, loops[1])->for_kind, ForKind::kVectorized);
  EXPECT_TRUE(IsConstInt(Loop(sch, loops[1])->extent, 16));
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
  absl::Status built = CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

// A transpose reads along i and writes along j: only the innermost loop walks both
// contiguously, so only j is vectorized and i alone is parallel.
TEST(RewriteParallelVectorizeUnrollTest, TransposeVectorizesOnlyTheContiguousInnerLoop) {
  PrimFunc func = Workload("TRANSPOSE", {{"M", 16}, {"N", 8}});
  Schedule sch = Schedule::Create(func, 0);
  BlockRV root = *sch.GetBlock("root");
  ASSERT_TRUE(sch.Annotate(root, attr::kParallel, InstValue::Int(256)).ok());
  ASSERT_TRUE(sch.Annotate(root, attr::kVectorize, InstValue::Int(64)).ok());
  ASSERT_TRUE(RunPostprocs(&sch, {Make(NewRewriteParallelVectorizeUnroll, Cpu())}).ok());
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("T_transpose"));
  ASSERT_EQ(loops.size(), 2u) << PrintFunc(sch.func());
  EXPECT_EQ(Loop(sch, loops[0])->for_kind, ForKind::kParallel);
  EXPECT_EQ(Loop(sch, loops[1])->for_kind, ForKind::kVectorized);
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
  absl::Status built = CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

TEST(RewriteParallelVectorizeUnrollTest, UnannotatedRootIsLeftAlone) {
  PrimFunc func = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(func, 0);
  ASSERT_TRUE(RunPostprocs(&sch, {Make(NewRewriteParallelVectorizeUnroll, Cpu())}).ok());
  EXPECT_TRUE(sch.func().same_as(func));
}

}  // namespace
}  // namespace tessera
