// compute_at, reverse_compute_at, compute_inline, reverse_compute_inline and
// sample_compute_location: scheduled programs compute what the unscheduled ones do, traces
// replay, invalid uses fail without changing the schedule.
#include <set>

#include "base/check.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/verify.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"
#include "worker/builder.h"
#include "worker/runner.h"

namespace tessera {
namespace {

using testing::CheckReplay;
using testing::CheckSameOutputs;

PrimFunc Workload(const std::string& name, const std::map<std::string, int64_t>& shape) {
  absl::StatusOr<PrimFunc> f = MakeWorkload(name, shape);
  TESSERA_CHECK(f.ok()) << f.status();
  return *f;
}

PrimFunc SmallC2d() {
  return Workload("C2D", {{"N", 1},
                          {"H", 10},
                          {"W", 10},
                          {"CI", 3},
                          {"CO", 4},
                          {"K", 3},
                          {"stride", 2},
                          {"padding", 1}});
}
PrimFunc SmallDense() { return Workload("DENSE_BIAS_RELU", {{"M", 8}, {"N", 12}, {"K", 6}}); }
PrimFunc SmallSoftmax() { return Workload("SFM", {{"M", 6}, {"N", 8}}); }
PrimFunc SmallLayerNorm() { return Workload("LAYER_NORM", {{"M", 6}, {"N", 8}}); }
PrimFunc SmallCbr() {
  return Workload("CBR", {{"N", 1},
                          {"H", 8},
                          {"W", 8},
                          {"CI", 3},
                          {"CO", 4},
                          {"K", 3},
                          {"stride", 1},
                          {"padding", 1}});
}

void ExpectCorrect(const Schedule& sch, const PrimFunc& original) {
  absl::Status s = testing::CheckScheduleCorrect(sch, original);
  EXPECT_TRUE(s.ok()) << s;
}

// Fails with kInvalidArgument naming `what`, recording nothing and changing nothing.
void ExpectRejected(const Schedule& sch, const PrimFunc& before, size_t trace_size,
                    const absl::Status& status, const std::string& what) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(std::string(status.message()).find(what), std::string::npos) << status;
  EXPECT_EQ(sch.trace().size(), trace_size);
  EXPECT_TRUE(sch.func().same_as(before));
}

bool HasBlock(const PrimFunc& f, const std::string& name) {
  for (const std::string& n : AllBlockNames(f)) {
    if (n == name) return true;
  }
  return false;
}

size_t NumAllocs(const PrimFunc& f) { return f.root_block()->alloc_buffers.size(); }

LoopRV Loop(Schedule* sch, const std::string& block, size_t index) {
  return (*sch->GetLoops(*sch->GetBlock(block)))[index];
}

// Builds with the C backend, runs once, and compares with the interpreter on `original`.
void ExpectCBackendMatches(const PrimFunc& original, const PrimFunc& scheduled) {
  absl::Status s = testing::CheckCBackendMatches(original, scheduled);
  EXPECT_TRUE(s.ok()) << s;
}

// ---- compute_at ----------------------------------------------------------------------------

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

// ---- compute_inline / reverse_compute_inline ------------------------------------------------

TEST(ComputeInlineTest, PadIntoConvBuildsAndRuns) {
  PrimFunc func = SmallC2d();
  Schedule sch = Schedule::Create(func, 1);
  ASSERT_TRUE(sch.ComputeInline(*sch.GetBlock("PadInput")).ok());
  EXPECT_FALSE(HasBlock(sch.func(), "PadInput"));
  EXPECT_EQ(NumAllocs(sch.func()), 0u);
  // The conv now reads the unpadded input directly.
  const Block conv = *sch.Get(*sch.GetBlock("conv2d_nhwc"));
  std::set<std::string> reads;
  for (const BufferRegion& r : conv->reads) reads.insert(r.buffer.name());
  EXPECT_EQ(reads, (std::set<std::string>{"conv2d_nhwc", "inputs", "weight"}));
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(ComputeInlineTest, CbrEpilogueChainInlines) {
  PrimFunc func = SmallCbr();
  Schedule sch = Schedule::Create(func, 1);
  for (const char* name : {"bias_add", "bn_mul", "bn_add", "PadInput"}) {
    ASSERT_TRUE(sch.ComputeInline(*sch.GetBlock(name)).ok()) << name;
  }
  EXPECT_EQ(AllBlockNames(sch.func()).size(), 3u);  // root, conv, relu
  EXPECT_EQ(NumAllocs(sch.func()), 1u);
  ExpectCorrect(sch, func);
}

TEST(ComputeInlineTest, RejectsAReductionBlock) {
  PrimFunc func = SmallDense();
  Schedule sch = Schedule::Create(func, 1);
  ExpectRejected(sch, sch.func(), sch.trace().size(), sch.ComputeInline(*sch.GetBlock("T_dense")),
                 "compute_inline: block T_dense is a reduction block");
}

TEST(ComputeInlineTest, RejectsAnOutput) {
  PrimFunc func = SmallDense();
  Schedule sch = Schedule::Create(func, 1);
  ExpectRejected(sch, sch.func(), sch.trace().size(), sch.ComputeInline(*sch.GetBlock("T_relu")),
                 "compute_inline: block T_relu writes buffer T_relu, an output");
}

TEST(ReverseComputeInlineTest, BiasReluFoldIntoAdd) {
  PrimFunc func = SmallDense();
  Schedule sch = Schedule::Create(func, 1);
  ASSERT_TRUE(sch.ReverseComputeInline(*sch.GetBlock("T_relu")).ok());
  EXPECT_FALSE(HasBlock(sch.func(), "T_relu"));
  EXPECT_EQ(NumAllocs(sch.func()), 1u);  // T_add's buffer is gone
  const Block add = *sch.Get(*sch.GetBlock("T_add"));
  ASSERT_EQ(add->writes.size(), 1u);
  EXPECT_EQ(add->writes[0].buffer.name(), "T_relu");
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(ReverseComputeInlineTest, RejectsAReductionProducer) {
  PrimFunc func = SmallDense();
  Schedule sch = Schedule::Create(func, 1);
  ExpectRejected(sch, sch.func(), sch.trace().size(),
                 sch.ReverseComputeInline(*sch.GetBlock("T_add")),
                 "producer T_dense of block T_add is a reduction block");
}

TEST(ReverseComputeInlineTest, RejectsTwoProducers) {
  PrimFunc func = SmallLayerNorm();
  Schedule sch = Schedule::Create(func, 1);
  ExpectRejected(sch, sch.func(), sch.trace().size(),
                 sch.ReverseComputeInline(*sch.GetBlock("T_layer_norm")), "has 2 producer blocks");
}

TEST(ReverseComputeInlineTest, RejectsAnIntermediateReadElsewhere) {
  // exp is read by expsum and by norm: folding norm into exp would lose expsum's input.
  PrimFunc func = SmallSoftmax();
  Schedule sch = Schedule::Create(func, 1);
  absl::Status s = sch.ReverseComputeInline(*sch.GetBlock("T_softmax_norm"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sch.trace().size(), 1u);
}

// ---- sample_compute_location ------------------------------------------------------------------

// Every candidate (-2, -1, loop index) of `block` gives a correct program.
void ExpectAllCandidatesLegal(const PrimFunc& func, const std::string& block, size_t min_count) {
  std::set<int64_t> seen;
  for (int64_t seed = 0; seed < 40; ++seed) {
    Schedule sch = Schedule::Create(func, seed);
    BlockRV b = *sch.GetBlock(block);
    absl::StatusOr<LoopRV> loc = sch.SampleComputeLocation(b);
    ASSERT_TRUE(loc.ok()) << loc.status();
    const InstValue& decision = sch.trace().decision(sch.trace().size() - 1);
    ASSERT_TRUE(decision.is_int());
    seen.insert(decision.as_int());
    absl::Status applied = sch.ComputeAt(b, *loc, /*preserve_unit_loops=*/true);
    ASSERT_TRUE(applied.ok()) << "decision " << decision.as_int() << ": " << applied;
    ExpectCorrect(sch, func);
  }
  EXPECT_GE(seen.size(), min_count);
}

TEST(SampleComputeLocationTest, PadCandidatesAreAllLegal) {
  // Inline, root, and the conv's n?, h, w, co loops (n has extent 1 and is skipped).
  ExpectAllCandidatesLegal(SmallC2d(), "PadInput", 4);
}

TEST(SampleComputeLocationTest, ReductionCandidatesAreAllLegal) {
  ExpectAllCandidatesLegal(SmallSoftmax(), "T_softmax_maxelem", 2);
  ExpectAllCandidatesLegal(SmallDense(), "T_dense", 3);
}

TEST(SampleComputeLocationTest, CandidatesFollowTheReference) {
  PrimFunc func = SmallC2d();
  std::set<int64_t> seen;
  for (int64_t seed = 0; seed < 60; ++seed) {
    Schedule sch = Schedule::Create(func, seed);
    ASSERT_TRUE(sch.SampleComputeLocation(*sch.GetBlock("PadInput")).ok());
    seen.insert(sch.trace().decision(sch.trace().size() - 1).as_int());
  }
  // The conv's loops n(1) h w co | rh rw rc: n is a unit loop; the spatial loops and the
  // reduction loops after them are candidates (rh, rw, rc come after the last spatial loop,
  // so the scan stops at rh).
  EXPECT_EQ(seen, (std::set<int64_t>{-2, -1, 1, 2, 3}));
}

TEST(SampleComputeLocationTest, StaleDecisionSnapsDown) {
  PrimFunc func = SmallC2d();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV pad = *sch.GetBlock("PadInput");
  absl::StatusOr<LoopRV> loc = sch.SampleComputeLocation(pad, InstValue::Int(6));
  ASSERT_TRUE(loc.ok()) << loc.status();
  EXPECT_EQ(sch.trace().decision(sch.trace().size() - 1).as_int(), 3);
  EXPECT_EQ((*sch.Get(*loc))->loop_var.name(), "co");
  // Loop 0 (n) is a unit loop, never a candidate: 0 snaps to root.
  Schedule other = Schedule::Create(func, 1);
  ASSERT_TRUE(other.SampleComputeLocation(*other.GetBlock("PadInput"), InstValue::Int(0)).ok());
  EXPECT_EQ(other.trace().decision(other.trace().size() - 1).as_int(), -1);
  // Inline stops being a candidate once the block writes an output... here: a reduction block.
  Schedule dense = Schedule::Create(SmallDense(), 1);
  absl::StatusOr<LoopRV> root =
      dense.SampleComputeLocation(*dense.GetBlock("T_dense"), InstValue::Int(-2));
  ASSERT_TRUE(root.ok());
  EXPECT_TRUE(dense.IsRootMarker(*root));
  EXPECT_EQ(dense.trace().decision(dense.trace().size() - 1).as_int(), -1);
}

TEST(SampleComputeLocationTest, ReplayKeepsTheDecision) {
  PrimFunc func = SmallC2d();
  Schedule sch = Schedule::Create(func, 9);
  BlockRV pad = *sch.GetBlock("PadInput");
  LoopRV loc = *sch.SampleComputeLocation(pad, InstValue::Int(2));
  ASSERT_TRUE(sch.ComputeAt(pad, loc, true).ok());
  std::string json = sch.trace().ToJson();
  EXPECT_NE(json.find("\"SampleComputeLocation\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"ComputeAt\""), std::string::npos) << json;
  ExpectCorrect(sch, func);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

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
