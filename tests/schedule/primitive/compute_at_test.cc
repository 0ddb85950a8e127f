// compute_at and reverse_compute_at: scheduled programs compute what the unscheduled ones do,
// traces replay, invalid uses fail without changing the schedule.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "schedule/schedule.h"
#include "tests/schedule/primitive/compute_location_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using compute_location_testing::ExpectCBackendMatches;
using compute_location_testing::ExpectCorrect;
using compute_location_testing::ExpectRejected;
using compute_location_testing::HasBlock;
using compute_location_testing::Loop;
using compute_location_testing::SmallC2d;
using compute_location_testing::SmallDense;
using compute_location_testing::SmallLayerNorm;
using compute_location_testing::SmallSoftmax;
using compute_location_testing::Workload;
using testing::CheckSameOutputs;

TEST(ComputeAtTest, PadUnderConvSpatialLoop) {
  PrimFunc func = SmallC2d();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV pad = *sch.GetBlock("PadInput");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("conv2d_nhwc"));
  ASSERT_TRUE(sch.ComputeAt(pad, loops[2]).ok());
  // Each w iteration needs a 3x3 window of rows and columns per h: the pad loops shrink.
  std::vector<LoopRV> pad_loops = *sch.GetLoops(pad);
  ASSERT_EQ(pad_loops.size(), 6u);  // n, h, w of the conv, then 3 x 3 x CI new loops
  EXPECT_EQ(*AsConstInt((*sch.Get(pad_loops[3]))->extent), 3);
  ExpectCorrect(sch, func);
}

TEST(ComputeAtTest, PadUnderConvReductionLoopBuildsAndRuns) {
  PrimFunc func = SmallC2d();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV pad = *sch.GetBlock("PadInput");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("conv2d_nhwc"));
  ASSERT_TRUE(sch.ComputeAt(pad, loops[4], /*preserve_unit_loops=*/true).ok());
  EXPECT_EQ(sch.GetLoops(pad)->size(), 9u);  // 5 conv loops + 4 unit-preserved pad loops
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(ComputeAtTest, SplitTilesAddPredicateAtTheEdge) {
  // A 2x3 tiling of the 4x4 conv output with a 3-wide tile on W does not divide it: the pad
  // block is computed per tile and guarded where the window leaves the padded input.
  PrimFunc func = SmallC2d();
  Schedule sch = Schedule::Create(func, 2);
  BlockRV conv = *sch.GetBlock("conv2d_nhwc");
  std::vector<LoopRV> loops = *sch.GetLoops(conv);
  std::vector<LoopRV> w = *sch.Split(loops[2], {InstValue(), InstValue::Int(3)});
  ASSERT_TRUE(sch.ComputeAt(*sch.GetBlock("PadInput"), w[0]).ok());
  ExpectCorrect(sch, func);
}

TEST(ComputeAtTest, DenseUnderTileLoopKeepsSplitReduction) {
  PrimFunc func = SmallDense();
  Schedule sch = Schedule::Create(func, 3);
  BlockRV dense = *sch.GetBlock("T_dense");
  std::vector<LoopRV> dloops = *sch.GetLoops(dense);
  std::vector<LoopRV> k = *sch.Split(dloops[2], {InstValue::Int(2), InstValue::Int(3)});
  BlockRV add = *sch.GetBlock("T_add");
  std::vector<LoopRV> aloops = *sch.GetLoops(add);
  std::vector<LoopRV> i = *sch.Split(aloops[0], {InstValue::Int(2), InstValue::Int(4)});
  std::vector<LoopRV> j = *sch.Split(aloops[1], {InstValue::Int(3), InstValue::Int(4)});
  ASSERT_TRUE(sch.Reorder({i[0], j[0], i[1], j[1]}).ok());
  ASSERT_TRUE(sch.ComputeAt(dense, j[0]).ok());
  // The reduction loops k_0, k_1 stay (same loop RVs), under two new 4-wide spatial loops.
  ASSERT_TRUE(sch.Get(k[0]).ok());
  ASSERT_TRUE(sch.Get(k[1]).ok());
  std::vector<LoopRV> now = *sch.GetLoops(dense);
  ASSERT_EQ(now.size(), 6u);
  EXPECT_EQ(*AsConstInt((*sch.Get(now[2]))->extent), 4);
  EXPECT_EQ(*AsConstInt((*sch.Get(now[3]))->extent), 4);
  ExpectCorrect(sch, func);
}

TEST(ComputeAtTest, GmmCachedOperandsUnderSplitTiles) {
  PrimFunc func = Workload("GMM", {{"B", 1}, {"M", 16}, {"N", 12}, {"K", 8}});
  Schedule sch = Schedule::Create(func, 7);
  BlockRV c = *sch.GetBlock("C");
  absl::StatusOr<BlockRV> a_local = sch.CacheRead(c, 1, "local");
  ASSERT_TRUE(a_local.ok()) << a_local.status();
  BlockRV b_local = *sch.CacheRead(c, 2, "local");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  std::vector<LoopRV> i = *sch.Split(loops[1], {InstValue::Int(4), InstValue::Int(4)});
  std::vector<LoopRV> j = *sch.Split(loops[2], {InstValue::Int(3), InstValue::Int(4)});
  std::vector<LoopRV> k = *sch.Split(loops[3], {InstValue::Int(2), InstValue::Int(4)});
  ASSERT_TRUE(sch.Reorder({i[0], j[0], k[0], i[1], j[1], k[1]}).ok());
  ASSERT_TRUE(sch.ComputeAt(*a_local, k[0], /*preserve_unit_loops=*/true).ok());
  ASSERT_TRUE(sch.ComputeAt(b_local, j[0]).ok());
  // A_local holds a 4x4 tile per k_0 step; B_local an 8x4 panel per j_0.
  std::vector<LoopRV> a_loops = *sch.GetLoops(*a_local);
  ASSERT_EQ(a_loops.size(), 7u);
  EXPECT_EQ(*AsConstInt((*sch.Get(a_loops[5]))->extent), 4);
  EXPECT_EQ(*AsConstInt((*sch.Get(a_loops[6]))->extent), 4);
  ExpectCorrect(sch, func);
}

TEST(ComputeAtTest, SoftmaxReductionsUnderRowLoop) {
  PrimFunc func = SmallSoftmax();
  Schedule sch = Schedule::Create(func, 4);
  ASSERT_TRUE(
      sch.ComputeAt(*sch.GetBlock("T_softmax_expsum"), Loop(&sch, "T_softmax_norm", 0)).ok());
  ASSERT_TRUE(sch.ComputeAt(*sch.GetBlock("T_softmax_exp"), Loop(&sch, "T_softmax_norm", 0)).ok());
  ASSERT_TRUE(
      sch.ComputeAt(*sch.GetBlock("T_softmax_maxelem"), Loop(&sch, "T_softmax_norm", 0)).ok());
  // One row loop holds all four blocks.
  EXPECT_EQ(ChildBlockRealizes(sch.func().body()).size(), 4u);
  EXPECT_EQ(sch.GetLoops(*sch.GetBlock("T_softmax_maxelem"))->size(), 2u);
  ExpectCorrect(sch, func);
}

TEST(ComputeAtTest, LayerNormReductionsUnderRowLoop) {
  PrimFunc func = SmallLayerNorm();
  Schedule sch = Schedule::Create(func, 5);
  LoopRV row = Loop(&sch, "T_layer_norm", 0);
  ASSERT_TRUE(sch.ComputeAt(*sch.GetBlock("A_red_sqsum"), row).ok());
  ASSERT_TRUE(sch.ComputeAt(*sch.GetBlock("A_red_sum"), row).ok());
  ExpectCorrect(sch, func);
}

TEST(ComputeAtTest, IndexChoosesTheInsertionPoint) {
  PrimFunc func = SmallLayerNorm();
  Schedule sch = Schedule::Create(func, 5);
  LoopRV row = Loop(&sch, "T_layer_norm", 0);
  ASSERT_TRUE(sch.ComputeAt(*sch.GetBlock("A_red_sqsum"), row).ok());
  // -2: right after the last producer (none here), i.e. first in the loop body.
  ASSERT_TRUE(sch.ComputeAt(*sch.GetBlock("A_red_sum"), row, false, -2).ok());
  std::vector<std::string> names = AllBlockNames(sch.func());
  EXPECT_EQ(names[1], "A_red_sum");
  EXPECT_EQ(names[2], "A_red_sqsum");
  ExpectCorrect(sch, func);
}

TEST(ComputeAtTest, RejectsAnOutOfRangeIndex) {
  PrimFunc func = SmallLayerNorm();
  Schedule sch = Schedule::Create(func, 5);
  LoopRV row = Loop(&sch, "T_layer_norm", 0);
  BlockRV sum = *sch.GetBlock("A_red_sum");
  size_t size = sch.trace().size();
  PrimFunc before = sch.func();
  ExpectRejected(sch, before, size, sch.ComputeAt(sum, row, false, 3), "compute_at: index 3");
}

TEST(ComputeAtTest, RejectsTheBlocksOwnLoop) {
  PrimFunc func = SmallDense();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV dense = *sch.GetBlock("T_dense");
  LoopRV own = (*sch.GetLoops(dense))[1];
  ExpectRejected(sch, sch.func(), sch.trace().size(), sch.ComputeAt(dense, own),
                 "is an ancestor of block T_dense");
}

TEST(ComputeAtTest, RejectsWhenAConsumerIsOutsideTheLoop) {
  // T_softmax_exp feeds both expsum and norm; expsum's loop holds only one of them.
  PrimFunc func = SmallSoftmax();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV exp = *sch.GetBlock("T_softmax_exp");
  LoopRV loop = Loop(&sch, "T_softmax_expsum", 0);
  ExpectRejected(sch, sch.func(), sch.trace().size(), sch.ComputeAt(exp, loop),
                 "consumer T_softmax_norm of block T_softmax_exp is not under loop");
}

TEST(ComputeAtTest, RejectsAnOutputBlockAndALaterLoop) {
  PrimFunc func = SmallDense();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV relu = *sch.GetBlock("T_relu");
  LoopRV add_loop = Loop(&sch, "T_add", 0);
  ExpectRejected(sch, sch.func(), sch.trace().size(), sch.ComputeAt(relu, add_loop),
                 "an output of its scope");
  BlockRV add = *sch.GetBlock("T_add");
  LoopRV dense_loop = Loop(&sch, "T_dense", 0);
  ExpectRejected(sch, sch.func(), sch.trace().size(), sch.ComputeAt(add, dense_loop),
                 "comes before block T_add");
}

TEST(ComputeAtTest, RejectsTheRootAndStaleRVs) {
  PrimFunc func = SmallDense();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV root = *sch.GetBlock("root");
  LoopRV loop = Loop(&sch, "T_add", 0);
  ExpectRejected(sch, sch.func(), sch.trace().size(), sch.ComputeAt(root, loop), "root block");
  BlockRV dense = *sch.GetBlock("T_dense");
  std::vector<LoopRV> gone = *sch.GetLoops(*sch.GetBlock("T_add"));
  ASSERT_TRUE(sch.Fuse({gone[0], gone[1]}).ok());
  absl::Status stale = sch.ComputeAt(dense, gone[0]);
  EXPECT_EQ(stale.code(), absl::StatusCode::kNotFound) << stale;
  EXPECT_NE(std::string(stale.message()).find("compute_at:"), std::string::npos) << stale;
}

TEST(ComputeAtTest, MarkersAreNoOpAndInline) {
  PrimFunc func = SmallDense();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV add = *sch.GetBlock("T_add");
  LoopRV root = *NewMarkerLoopRV(&sch, /*inline_marker=*/false);
  ASSERT_TRUE(sch.ComputeAt(add, root).ok());
  EXPECT_TRUE(HasBlock(sch.func(), "T_add"));
  EXPECT_EQ(sch.trace().insts().back().kind->name, std::string("ComputeAt"));
  LoopRV inl = *NewMarkerLoopRV(&sch, /*inline_marker=*/true);
  ASSERT_TRUE(sch.ComputeAt(add, inl).ok());
  EXPECT_FALSE(HasBlock(sch.func(), "T_add"));
  EXPECT_EQ(sch.trace().insts().back().kind->name, std::string("ComputeAt"));
  absl::Status same = CheckSameOutputs(func, sch.func());
  EXPECT_TRUE(same.ok()) << same;
}

// ---- reverse_compute_at ---------------------------------------------------------------------

TEST(ReverseComputeAtTest, EpilogueUnderMatmulTileLoop) {
  PrimFunc func = SmallDense();
  Schedule sch = Schedule::Create(func, 6);
  BlockRV dense = *sch.GetBlock("T_dense");
  std::vector<LoopRV> loops = *sch.GetLoops(dense);
  std::vector<LoopRV> i = *sch.Split(loops[0], {InstValue::Int(2), InstValue::Int(4)});
  std::vector<LoopRV> j = *sch.Split(loops[1], {InstValue::Int(3), InstValue::Int(4)});
  ASSERT_TRUE(sch.Reorder({i[0], j[0], i[1], j[1]}).ok());
  ASSERT_TRUE(sch.ReverseComputeAt(*sch.GetBlock("T_add"), j[0]).ok());
  ASSERT_TRUE(sch.ReverseComputeAt(*sch.GetBlock("T_relu"), j[0]).ok());
  std::vector<LoopRV> relu_loops = *sch.GetLoops(*sch.GetBlock("T_relu"));
  ASSERT_EQ(relu_loops.size(), 4u);
  EXPECT_EQ(*AsConstInt((*sch.Get(relu_loops[2]))->extent), 4);
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(ReverseComputeAtTest, RejectsALoopCarryingTheProducersReduction) {
  PrimFunc func = SmallDense();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV add = *sch.GetBlock("T_add");
  LoopRV k = Loop(&sch, "T_dense", 2);
  ExpectRejected(sch, sch.func(), sch.trace().size(), sch.ReverseComputeAt(add, k),
                 "carries the reduction of producer T_dense");
}

TEST(ReverseComputeAtTest, RejectsAProducerOutsideTheLoop) {
  PrimFunc func = SmallLayerNorm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV ln = *sch.GetBlock("T_layer_norm");
  LoopRV loop = Loop(&sch, "A_red_sqsum", 0);
  ExpectRejected(sch, sch.func(), sch.trace().size(), sch.ReverseComputeAt(ln, loop),
                 "producer A_red_sum of block T_layer_norm is not under loop");
}

// Found by the randomized test: the producer of a padding block writes only the interior, so
// moving the padding block under the producer's loop would never compute the border.
TEST(ReverseComputeAtTest, RejectsWhenProducersDoNotCoverTheDomain) {
  PrimFunc func = testing::SmallWorkload("C2D");
  Schedule sch = Schedule::Create(func, 1);
  BlockRV pad = *sch.GetBlock("PadInput");
  absl::StatusOr<BlockRV> copy = sch.CacheRead(pad, 0, "shared");
  ASSERT_TRUE(copy.ok()) << copy.status();
  std::vector<LoopRV> loops = *sch.GetLoops(*copy);
  size_t trace_size = sch.trace().size();
  absl::Status s = sch.ReverseComputeAt(pad, loops[0]);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("would not cover its whole domain"), std::string::npos)
      << s;
  EXPECT_EQ(sch.trace().size(), trace_size);
}

}  // namespace
}  // namespace tessera
