// DecomposeReduction and RFactor: outputs match the unscheduled program (interpreter and the C
// backend), traces replay, the new blocks and buffers have the expected shape, and invalid
// uses fail with an error that leaves the schedule unchanged.
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/ndarray.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/target.h"
#include "ir/verify.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"
#include "worker/builder.h"
#include "worker/runner.h"

namespace tessera {
namespace {

using testing::CheckReplay;
using testing::CheckSameOutputs;
using testing::SmallWorkload;

void ExpectCorrect(const Schedule& sch, const PrimFunc& original) {
  absl::Status s = testing::CheckScheduleCorrect(sch, original);
  EXPECT_TRUE(s.ok()) << s;
}

// Builds `scheduled` with the C backend, runs it, and compares every argument with the
// interpreter's run of `original` on the same inputs.
void ExpectBuildAndRunMatches(const PrimFunc& original, const PrimFunc& scheduled) {
  absl::Status s = testing::CheckCBackendMatches(original, scheduled);
  EXPECT_TRUE(s.ok()) << s;
}

Block GetBlock(const Schedule& sch, const std::string& name) {
  return FindBlockPath(sch.func(), name)->back().as<BlockRealizeNode>()->block;
}

// Expects `status` to be kInvalidArgument mentioning every piece of `parts`.
void ExpectInvalid(const absl::Status& status, const std::vector<std::string>& parts) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  for (const std::string& part : parts) {
    EXPECT_NE(std::string(status.message()).find(part), std::string::npos)
        << "'" << part << "' not in: " << status;
  }
}

// Expects the schedule to be exactly as before a failed primitive.
void ExpectUnchanged(const Schedule& sch, const PrimFunc& before, size_t trace_size) {
  EXPECT_TRUE(sch.func().same_as(before));
  EXPECT_EQ(sch.trace().size(), trace_size);
}

// ---- DecomposeReduction ---------------------------------------------------------------------

TEST(DecomposeReductionTest, AtTheReductionLoop) {
  PrimFunc gmm = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(gmm, 1);
  BlockRV block = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  absl::StatusOr<BlockRV> init = sch.DecomposeReduction(block, loops[3]);
  ASSERT_TRUE(init.ok()) << init.status();
  EXPECT_EQ(*sch.BlockName(*init), "C_init");
  EXPECT_EQ(sch.trace().insts().back().kind->name, std::string("DecomposeReduction"));
  Block init_block = *sch.Get(*init);
  EXPECT_EQ(init_block->iter_vars.size(), 3u);
  for (const IterVar& iv : init_block->iter_vars) EXPECT_EQ(iv.kind, IterKind::kSpatial);
  EXPECT_FALSE(init_block->init.defined());
  ASSERT_EQ(init_block->writes.size(), 1u);
  EXPECT_EQ(init_block->writes[0].buffer.name(), "C");
  EXPECT_TRUE(init_block->reads.empty());
  EXPECT_FALSE((*sch.Get(block))->init.defined());
  // The init sits under b, i, j (no replicated loops), right before k.
  EXPECT_EQ(sch.GetLoops(*init)->size(), 3u);
  ExpectCorrect(sch, gmm);
}

TEST(DecomposeReductionTest, AtAnOuterTileLoopReplicatesSpatialLoops) {
  PrimFunc gmm = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(gmm, 1);
  BlockRV block = *sch.GetBlock("C");
  std::vector<LoopRV> l = *sch.GetLoops(block);
  std::vector<LoopRV> i = *sch.Split(l[1], {InstValue::Int(4), InstValue()});
  std::vector<LoopRV> j = *sch.Split(l[2], {InstValue::Int(2), InstValue()});
  std::vector<LoopRV> k = *sch.Split(l[3], {InstValue(), InstValue::Int(4)});
  ASSERT_TRUE(sch.Reorder({i[0], j[0], k[0], i[1], k[1], j[1]}).ok());
  // Decomposing at k_0: i_1 and j_1 (spatial, inside k_0) are replicated, k_1 is not.
  absl::StatusOr<BlockRV> init = sch.DecomposeReduction(block, k[0]);
  ASSERT_TRUE(init.ok()) << init.status();
  std::vector<LoopRV> init_loops = *sch.GetLoops(*init);
  ASSERT_EQ(init_loops.size(), 5u);  // b, i_0, j_0, i_1_init, j_1_init
  EXPECT_EQ((*sch.Get(init_loops[3]))->loop_var.name(), "i_1_init");
  EXPECT_EQ((*sch.Get(init_loops[4]))->loop_var.name(), "j_1_init");
  ExpectCorrect(sch, gmm);
}

TEST(DecomposeReductionTest, AtTheOutermostLoop) {
  PrimFunc gmm = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(gmm, 1);
  BlockRV block = *sch.GetBlock("C");
  std::vector<LoopRV> l = *sch.GetLoops(block);
  std::vector<LoopRV> i = *sch.Split(l[1], {InstValue::Int(8), InstValue()});
  absl::StatusOr<BlockRV> init = sch.DecomposeReduction(block, l[0]);
  ASSERT_TRUE(init.ok()) << init.status();
  EXPECT_EQ(sch.GetLoops(*init)->size(), 4u);  // b, i_0, i_1, j replicated
  ExpectCorrect(sch, gmm);
}

TEST(DecomposeReductionTest, KeepsSpatialPredicateOfAnImperfectSplit) {
  PrimFunc gmm = *MakeWorkload("GMM", {{"B", 1}, {"M", 10}, {"N", 6}, {"K", 7}});
  Schedule sch = Schedule::Create(gmm, 1);
  BlockRV block = *sch.GetBlock("C");
  std::vector<LoopRV> l = *sch.GetLoops(block);
  std::vector<LoopRV> i = *sch.Split(l[1], {InstValue(), InstValue::Int(4)});
  std::vector<LoopRV> k = *sch.Split(l[3], {InstValue(), InstValue::Int(3)});
  ASSERT_TRUE(sch.Reorder({i[0], k[0], i[1]}).ok());
  ASSERT_TRUE(sch.DecomposeReduction(block, k[0]).ok());
  ExpectCorrect(sch, gmm);
}

TEST(DecomposeReductionTest, TiledGmmBuildsAndRunsWithTheCBackend) {
  PrimFunc gmm = *MakeWorkload("GMM", {{"B", 2}, {"M", 24}, {"N", 16}, {"K", 20}});
  Schedule sch = Schedule::Create(gmm, 1);
  BlockRV block = *sch.GetBlock("C");
  std::vector<LoopRV> l = *sch.GetLoops(block);
  std::vector<LoopRV> i = *sch.Split(l[1], {InstValue::Int(3), InstValue()});
  std::vector<LoopRV> k = *sch.Split(l[3], {InstValue(), InstValue::Int(4)});
  ASSERT_TRUE(sch.Reorder({i[0], l[2], k[0], i[1], k[1]}).ok());
  ASSERT_TRUE(sch.Parallel(i[0]).ok());
  ASSERT_TRUE(sch.DecomposeReduction(block, k[0]).ok());
  ExpectCorrect(sch, gmm);
  ExpectBuildAndRunMatches(gmm, sch.func());
}

TEST(DecomposeReductionTest, RejectsABlockWithoutReduction) {
  PrimFunc sfm = SmallWorkload("SFM");
  Schedule sch = Schedule::Create(sfm, 1);
  BlockRV block = *sch.GetBlock("T_softmax_exp");
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  PrimFunc before = sch.func();
  size_t trace_size = sch.trace().size();
  ExpectInvalid(sch.DecomposeReduction(block, loops[0]).status(),
                {"decompose_reduction:", "T_softmax_exp", "not a reduction block"});
  ExpectUnchanged(sch, before, trace_size);
}

TEST(DecomposeReductionTest, RejectsALoopOfAnotherBlock) {
  PrimFunc sfm = SmallWorkload("SFM");
  Schedule sch = Schedule::Create(sfm, 1);
  BlockRV block = *sch.GetBlock("T_softmax_expsum");
  std::vector<LoopRV> other = *sch.GetLoops(*sch.GetBlock("T_softmax_maxelem"));
  PrimFunc before = sch.func();
  size_t trace_size = sch.trace().size();
  ExpectInvalid(sch.DecomposeReduction(block, other[1]).status(),
                {"decompose_reduction:", "is not a loop of block T_softmax_expsum"});
  ExpectUnchanged(sch, before, trace_size);
}

TEST(DecomposeReductionTest, RejectsALoopInsideAReductionLoop) {
  PrimFunc gmm = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(gmm, 1);
  BlockRV block = *sch.GetBlock("C");
  std::vector<LoopRV> l = *sch.GetLoops(block);
  std::vector<LoopRV> k = *sch.Split(l[3], {InstValue(), InstValue::Int(4)});
  PrimFunc before = sch.func();
  size_t trace_size = sch.trace().size();
  ExpectInvalid(sch.DecomposeReduction(block, k[1]).status(),
                {"decompose_reduction:", "loop k_0 binds reduction variable", "block C"});
  ExpectUnchanged(sch, before, trace_size);
  // Once decomposed, the block has no init left to decompose.
  ASSERT_TRUE(sch.DecomposeReduction(block, k[0]).ok());
  before = sch.func();
  trace_size = sch.trace().size();
  ExpectInvalid(sch.DecomposeReduction(block, k[0]).status(), {"block C", "init"});
  ExpectUnchanged(sch, before, trace_size);
}

TEST(DecomposeReductionTest, RejectsALoopThatRepeatsTheReduction) {
  // B is recomputed for every j (which binds none of its variables), its init re-running each
  // time: hoisting the init above j would accumulate the sum 4 times.
  PrimFunc func = *ParseFunc(R"(@prim_func
def main(A: Buffer((8, 16), "float32"), D: Buffer((8, 4), "float32")):
    func_attr({"global_symbol": "main"})
    with block("root"):
        B = alloc_buffer((8,), "float32")
        for i in range(8):
            for j in range(4):
                for k in range(16):
                    with block("B"):
                        v_i = axis.spatial(8, i)
                        v_k = axis.reduce(16, k)
                        reads(B[v_i], A[v_i, v_k])
                        writes(B[v_i])
                        with init():
                            B[v_i] = float32(0.0)
                        B[v_i] = B[v_i] + A[v_i, v_k]
                with block("D"):
                    v_i_1 = axis.spatial(8, i)
                    v_j = axis.spatial(4, j)
                    reads(B[v_i_1])
                    writes(D[v_i_1, v_j])
                    D[v_i_1, v_j] = B[v_i_1] * float32(2.0)
)");
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("B");
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  PrimFunc before = sch.func();
  size_t trace_size = sch.trace().size();
  ExpectInvalid(sch.DecomposeReduction(block, loops[1]).status(),
                {"decompose_reduction:", "loop j (extent 4)", "binds no variable of block B"});
  ExpectUnchanged(sch, before, trace_size);
  // Inside j the init runs once per recomputation, as before.
  ASSERT_TRUE(sch.DecomposeReduction(block, loops[2]).ok());
  ExpectCorrect(sch, func);
}

// ---- RFactor ----------------------------------------------------------------------------------

struct RFactorCase {
  std::string workload;
  std::string block;
  int factor_axis;
};

// Splits the innermost (reduction) loop of the block by 4 and rfactors the inner part, the
// CrossThreadReduction / DLight pattern.
void RFactorSplitInner(const RFactorCase& c) {
  SCOPED_TRACE(c.workload + " " + c.block + " factor_axis " + std::to_string(c.factor_axis));
  PrimFunc func = SmallWorkload(c.workload);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock(c.block);
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  std::vector<LoopRV> k = *sch.Split(loops.back(), {InstValue(), InstValue::Int(4)});
  Buffer out = (*sch.Get(block))->writes[0].buffer;
  absl::StatusOr<BlockRV> rf = sch.RFactor(k[1], c.factor_axis);
  ASSERT_TRUE(rf.ok()) << rf.status();
  EXPECT_EQ(*sch.BlockName(*rf), c.block + "_rf");
  Block rf_block = *sch.Get(*rf);
  ASSERT_EQ(rf_block->writes.size(), 1u);
  const Buffer& rf_buf = rf_block->writes[0].buffer;
  EXPECT_EQ(rf_buf.name(), out.name() + "_rf");
  ASSERT_EQ(rf_buf.ndim(), out.ndim() + 1);
  int axis = c.factor_axis < 0 ? c.factor_axis + out.ndim() + 1 : c.factor_axis;
  EXPECT_TRUE(IsConstInt(rf_buf.shape()[axis], 4)) << PrintFunc(sch.func());
  EXPECT_EQ(rf_block->iter_vars[0].kind, IterKind::kSpatial);  // the rfactor dimension
  // The rf buffer is allocated in the root block.
  bool allocated = false;
  for (const Buffer& b : sch.func().root_block()->alloc_buffers) allocated |= b.same_as(rf_buf);
  EXPECT_TRUE(allocated);
  // The write-back block keeps the name and reduces over the rf dimension.
  Block wb = GetBlock(sch, c.block);
  EXPECT_TRUE(wb->init.defined());
  EXPECT_EQ(wb->iter_vars.back().kind, IterKind::kReduction);
  EXPECT_EQ(sch.trace().insts().back().kind->name, std::string("RFactor"));
  ExpectCorrect(sch, func);
}

TEST(RFactorTest, NrmSumAfterSplit) {
  RFactorSplitInner({"NRM", "C", 0});
  RFactorSplitInner({"NRM", "C", -1});
}

TEST(RFactorTest, ReduceSumAfterSplit) {
  RFactorSplitInner({"REDUCE_SUM", "A_red", 0});
  RFactorSplitInner({"REDUCE_SUM", "A_red", -1});
  RFactorSplitInner({"REDUCE_SUM", "A_red", 1});
  RFactorSplitInner({"REDUCE_SUM", "A_red", -2});
}

TEST(RFactorTest, SoftmaxMaxAndSumAfterSplit) {
  for (int axis : {0, -1}) {
    RFactorSplitInner({"SFM", "T_softmax_maxelem", axis});
    RFactorSplitInner({"SFM", "T_softmax_expsum", axis});
  }
}

TEST(RFactorTest, GemvOverTheWholeAndTheOuterReductionLoop) {
  PrimFunc gemv = SmallWorkload("GEMV");
  {
    // Over the only reduction loop: the rf block has no reduction left and no init.
    Schedule sch = Schedule::Create(gemv, 1);
    std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("y"));
    absl::StatusOr<BlockRV> rf = sch.RFactor(loops[1], 0);
    ASSERT_TRUE(rf.ok()) << rf.status();
    EXPECT_FALSE((*sch.Get(*rf))->init.defined());
    ExpectCorrect(sch, gemv);
  }
  {
    Schedule sch = Schedule::Create(gemv, 1);
    std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("y"));
    std::vector<LoopRV> k = *sch.Split(loops[1], {InstValue::Int(4), InstValue()});
    ASSERT_TRUE(sch.RFactor(k[0], 1).ok());
    ExpectCorrect(sch, gemv);
  }
}

TEST(RFactorTest, NrmOverTheOuterOfTwoReductionVariables) {
  // NRM reduces over i and j; rfactor over i leaves j as the rf block's reduction.
  PrimFunc nrm = SmallWorkload("NRM");
  Schedule sch = Schedule::Create(nrm, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  absl::StatusOr<BlockRV> rf = sch.RFactor(loops[1], -1);
  ASSERT_TRUE(rf.ok()) << rf.status();
  ExpectCorrect(sch, nrm);
}

TEST(RFactorTest, ImperfectSplitKeepsPredicates) {
  PrimFunc sum = *MakeWorkload("REDUCE_SUM", {{"M", 6}, {"N", 10}});
  for (int part : {0, 1}) {
    Schedule sch = Schedule::Create(sum, 1);
    std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("A_red"));
    std::vector<LoopRV> i = *sch.Split(loops[0], {InstValue(), InstValue::Int(4)});
    std::vector<LoopRV> k = *sch.Split(loops[1], {InstValue(), InstValue::Int(4)});
    ASSERT_TRUE(sch.RFactor(k[part], 0).ok());
    ExpectCorrect(sch, sum);
  }
}

TEST(RFactorTest, ProductAndMinReducers) {
  std::string text = PrintFunc(SmallWorkload("REDUCE_SUM"));
  PrimFunc prod = *ParseFunc(absl::StrReplaceAll(
      text, {{"A_red[v_i] + A[v_i, v_k]", "A_red[v_i] * (A[v_i, v_k] + float32(1.0))"},
             {"A_red[v_i] = float32(0.0)", "A_red[v_i] = float32(1.0)"}}));
  PrimFunc min = *ParseFunc(
      absl::StrReplaceAll(text, {{"A_red[v_i] + A[v_i, v_k]", "min(A[v_i, v_k], A_red[v_i])"},
                                 {"A_red[v_i] = float32(0.0)", "A_red[v_i] = float32(0.5)"}}));
  for (const PrimFunc& func : {prod, min}) {
    Schedule sch = Schedule::Create(func, 1);
    std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("A_red"));
    std::vector<LoopRV> k = *sch.Split(loops[1], {InstValue(), InstValue::Int(8)});
    absl::StatusOr<BlockRV> rf = sch.RFactor(k[1], 0);
    ASSERT_TRUE(rf.ok()) << rf.status() << "\n" << PrintFunc(func);
    ExpectCorrect(sch, func);
  }
}

TEST(RFactorTest, RFactorThenDecomposeBuildsAndRunsWithTheCBackend) {
  PrimFunc sum = *MakeWorkload("REDUCE_SUM", {{"M", 16}, {"N", 64}});
  Schedule sch = Schedule::Create(sum, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("A_red"));
  std::vector<LoopRV> k = *sch.Split(loops[1], {InstValue(), InstValue::Int(8)});
  absl::StatusOr<BlockRV> rf = sch.RFactor(k[1], 1);
  ASSERT_TRUE(rf.ok()) << rf.status();
  ASSERT_TRUE(sch.Reorder({k[1], k[0]}).ok());
  ASSERT_TRUE(sch.DecomposeReduction(*rf, k[0]).ok());
  ASSERT_TRUE(sch.Parallel(loops[0]).ok());
  ExpectCorrect(sch, sum);
  ExpectBuildAndRunMatches(sum, sch.func());
}

TEST(RFactorTest, SoftmaxMaxRFactorBuildsAndRunsWithTheCBackend) {
  PrimFunc sfm = *MakeWorkload("SFM", {{"M", 8}, {"N", 48}});
  Schedule sch = Schedule::Create(sfm, 1);
  for (const char* name : {"T_softmax_maxelem", "T_softmax_expsum"}) {
    std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock(name));
    std::vector<LoopRV> k = *sch.Split(loops[1], {InstValue(), InstValue::Int(16)});
    ASSERT_TRUE(sch.RFactor(k[1], 0).ok());
  }
  ExpectCorrect(sch, sfm);
  ExpectBuildAndRunMatches(sfm, sch.func());
}

// Rows of 77 in 16 lanes: the lane split leaves a tail guarded by `k_0 * 16 + k_1 < 77`, which
// the rfactor block's init, decomposed out of the reduction loop, keeps with k_0 at 0.
TEST(RFactorTest, LanesWithATailDecomposeBuildAndRunWithTheCBackend) {
  PrimFunc sfm = *MakeWorkload("SFM", {{"M", 6}, {"N", 77}});
  Schedule sch = Schedule::Create(sfm, 1);
  for (const char* name : {"T_softmax_maxelem", "T_softmax_expsum"}) {
    std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock(name));
    std::vector<LoopRV> k = *sch.Split(loops[1], {InstValue(), InstValue::Int(16)});
    absl::StatusOr<BlockRV> rf = sch.RFactor(k[1], -1);
    ASSERT_TRUE(rf.ok()) << rf.status();
    std::vector<LoopRV> rf_loops = *sch.GetLoops(*rf);
    absl::StatusOr<BlockRV> init = sch.DecomposeReduction(*rf, rf_loops[1]);
    ASSERT_TRUE(init.ok()) << init.status();
    // The init covers every lane: the guard at k_0 = 0 is k_1 < 77, always true.
    absl::StatusOr<StmtPath> init_path = FindBlockPath(sch.func(), std::string(name) + "_rf_init");
    ASSERT_TRUE(init_path.ok()) << init_path.status();
    EXPECT_TRUE(IsConstInt(init_path->back().as<BlockRealizeNode>()->predicate, 1))
        << PrintFunc(sch.func());
  }
  ExpectCorrect(sch, sfm);
  ExpectBuildAndRunMatches(sfm, sch.func());
  absl::Status replay = CheckReplay(sch, sfm);
  EXPECT_TRUE(replay.ok()) << replay;
}

TEST(RFactorTest, RejectsASpatialLoop) {
  PrimFunc sum = SmallWorkload("REDUCE_SUM");
  Schedule sch = Schedule::Create(sum, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("A_red"));
  PrimFunc before = sch.func();
  size_t trace_size = sch.trace().size();
  ExpectInvalid(sch.RFactor(loops[0], 0).status(),
                {"rfactor:", "loop i binds spatial variable v_i of block A_red"});
  ExpectUnchanged(sch, before, trace_size);
}

TEST(RFactorTest, RejectsABlockWithoutReduction) {
  PrimFunc sfm = SmallWorkload("SFM");
  Schedule sch = Schedule::Create(sfm, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("T_softmax_exp"));
  PrimFunc before = sch.func();
  size_t trace_size = sch.trace().size();
  ExpectInvalid(sch.RFactor(loops[1], 0).status(),
                {"rfactor:", "block T_softmax_exp", "not a reduction block"});
  ExpectUnchanged(sch, before, trace_size);
}

TEST(RFactorTest, RejectsAnOutOfRangeFactorAxis) {
  PrimFunc sum = SmallWorkload("REDUCE_SUM");
  Schedule sch = Schedule::Create(sum, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("A_red"));
  PrimFunc before = sch.func();
  size_t trace_size = sch.trace().size();
  for (int axis : {2, -3, 100}) {
    ExpectInvalid(sch.RFactor(loops[1], axis).status(),
                  {"rfactor:", "factor_axis", "out of range [-2, 1]", "A_red"});
    ExpectUnchanged(sch, before, trace_size);
  }
}

TEST(RFactorTest, RejectsAnUnrecognisedReducer) {
  std::string text = PrintFunc(SmallWorkload("REDUCE_SUM"));
  PrimFunc sub = *ParseFunc(
      absl::StrReplaceAll(text, {{"A_red[v_i] + A[v_i, v_k]", "A_red[v_i] - A[v_i, v_k]"}}));
  Schedule sch = Schedule::Create(sub, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("A_red"));
  PrimFunc before = sch.func();
  size_t trace_size = sch.trace().size();
  ExpectInvalid(sch.RFactor(loops[1], 0).status(),
                {"rfactor:", "cannot recognise a commutative reducer", "block A_red"});
  ExpectUnchanged(sch, before, trace_size);
}

TEST(RFactorTest, RejectsWhenAPartialResultWouldStayUninitialized) {
  // k (10) split 4*4: for k_0 == 3 every k_1 is past the end, so C_rf[3] would never be
  // initialized but the write-back would read it.
  PrimFunc sum = *MakeWorkload("REDUCE_SUM", {{"M", 4}, {"N", 10}});
  Schedule sch = Schedule::Create(sum, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("A_red"));
  std::vector<LoopRV> k = *sch.Split(loops[1], {InstValue::Int(4), InstValue::Int(4)});
  PrimFunc before = sch.func();
  size_t trace_size = sch.trace().size();
  ExpectInvalid(sch.RFactor(k[0], 0).status(),
                {"rfactor:", "cannot prove", "block A_red", "initialized"});
  ExpectUnchanged(sch, before, trace_size);
  // Over the inner part, every k_1 has k_0 == 0 in range: fine.
  ASSERT_TRUE(sch.RFactor(k[1], 0).ok());
  ExpectCorrect(sch, sum);
}

// A row sum B and its consumer D under one shared loop i.
constexpr const char* kSharedLoop = R"(@prim_func
def main(A: Buffer((8, 16), "float32"), D: Buffer((8,), "float32")):
    func_attr({"global_symbol": "main"})
    with block("root"):
        B = alloc_buffer((8,), "float32")
        for i in range(8):
            for k in range(16):
                with block("B"):
                    v_i = axis.spatial(8, i)
                    v_k = axis.reduce(16, k)
                    reads(B[v_i], A[v_i, v_k])
                    writes(B[v_i])
                    with init():
                        B[v_i] = float32(0.0)
                    B[v_i] = B[v_i] + A[v_i, v_k]
            with block("D"):
                v_i_1 = axis.spatial(8, i)
                reads(B[v_i_1])
                writes(D[v_i_1])
                D[v_i_1] = B[v_i_1] * float32(2.0)
)";

TEST(RFactorTest, RejectsALoopOverSeveralBlocks) {
  absl::StatusOr<PrimFunc> func = ParseFunc(kSharedLoop);
  ASSERT_TRUE(func.ok()) << func.status();
  Schedule sch = Schedule::Create(*func, 1);
  BlockRV block = *sch.GetBlock("B");
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  PrimFunc before = sch.func();
  size_t trace_size = sch.trace().size();
  ExpectInvalid(sch.RFactor(loops[0], 0).status(), {"rfactor:", "loop i encloses 2 blocks"});
  ExpectUnchanged(sch, before, trace_size);
}

TEST(RFactorTest, WriteBackStaysInsideASharedSpatialLoop) {
  PrimFunc func = *ParseFunc(kSharedLoop);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("B");
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  std::vector<LoopRV> k = *sch.Split(loops[1], {InstValue(), InstValue::Int(4)});
  ASSERT_TRUE(sch.RFactor(k[1], 0).ok());
  // The write-back runs under i (shared), before D reads B.
  std::vector<LoopRV> wb_loops = *sch.GetLoops(block);
  ASSERT_EQ(wb_loops.size(), 2u);
  EXPECT_EQ((*sch.Get(wb_loops[0]))->loop_var.name(), "i");
  std::vector<BlockRV> children = *sch.GetChildBlocks(loops[0]);
  ASSERT_EQ(children.size(), 3u);
  EXPECT_EQ(*sch.BlockName(children[0]), "B_rf");
  EXPECT_EQ(*sch.BlockName(children[1]), "B");
  EXPECT_EQ(*sch.BlockName(children[2]), "D");
  ExpectCorrect(sch, func);
}

}  // namespace
}  // namespace tessera
