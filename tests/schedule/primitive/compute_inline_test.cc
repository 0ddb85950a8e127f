// compute_inline and reverse_compute_inline: scheduled programs compute what the unscheduled
// ones do, traces replay, invalid uses fail without changing the schedule.
#include <set>
#include <string>
#include <vector>

#include "frontend/compute.h"
#include "gtest/gtest.h"
#include "schedule/schedule.h"
#include "tests/schedule/primitive/compute_location_testing.h"

namespace tessera {
namespace {

using compute_location_testing::ExpectCBackendMatches;
using compute_location_testing::ExpectCorrect;
using compute_location_testing::ExpectRejected;
using compute_location_testing::HasBlock;
using compute_location_testing::NumAllocs;
using compute_location_testing::SmallC2d;
using compute_location_testing::SmallCbr;
using compute_location_testing::SmallDense;
using compute_location_testing::SmallLayerNorm;
using compute_location_testing::SmallSoftmax;

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

// A batch of one (as ONNX's 3-D MatMul gives): `scaled` over [1, 4, 8], and a consumer that reads
// it twice at [0, i, j] (GELU reads its input twice) over [1 or 2, 4, 8]; `rows` is the
// producer's leading extent.
PrimFunc BroadcastEpilogue(int64_t rows, int64_t consumer_rows) {
  Tensor x = Placeholder({rows, 4, 8}, DataType::Float32(), "x");
  Tensor scaled = Compute(
      {rows, 4, 8},
      [&](const std::vector<Var>& i) {
        return x({i[0], i[1], i[2]}) * FloatImm(DataType::Float32(), 2.0);
      },
      "scaled");
  Tensor out = Compute(
      {consumer_rows, 4, 8},
      [&](const std::vector<Var>& i) {
        Expr v = scaled({Expr(0), i[1], i[2]});
        return v * v + FloatImm(DataType::Float32(), 1.0);
      },
      "out");
  absl::StatusOr<PrimFunc> f = CreatePrimFunc("broadcast_epilogue", {x, out});
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

// Reverse-inlines block "out" of `sch` (of `func`): the block and the intermediate go, and the
// result computes what `func` does, interpreted and built with the C backend.
void ExpectOutFoldsIn(Schedule* sch, const PrimFunc& func) {
  ASSERT_TRUE(sch->ReverseComputeInline(*sch->GetBlock("out")).ok());
  EXPECT_FALSE(HasBlock(sch->func(), "out"));
  EXPECT_EQ(NumAllocs(sch->func()), 0u);
  ExpectCorrect(*sch, func);
  ExpectCBackendMatches(func, sch->func());
}

// The consumer reads the producer at a constant over a dimension where the producer takes only
// that value, twice: it folds in (the epilogues of BERT's batch-1 GEMMs stayed a loop of their
// own, through a buffer of M x N floats).
TEST(ReverseComputeInlineTest, ConstantIndexOverAUnitDimensionFoldsIn) {
  PrimFunc func = BroadcastEpilogue(1, 1);
  Schedule sch = Schedule::Create(func, 1);
  ExpectOutFoldsIn(&sch, func);
}

// Where the producer's dimension has two values, reading only the first is no inlining.
TEST(ReverseComputeInlineTest, RejectsAConstantIndexOverAWiderDimension) {
  PrimFunc func = BroadcastEpilogue(2, 2);
  Schedule sch = Schedule::Create(func, 1);
  ExpectRejected(sch, sch.func(), sch.trace().size(),
                 sch.ReverseComputeInline(*sch.GetBlock("out")),
                 "block out does not read scaled at exactly its iteration variables");
}

// out[i, j] = scaled[i, j] over the first rows x columns of a larger scaled (the copy out of a
// padded result): the producer then writes out only there.
PrimFunc CroppedCopy(int64_t rows, int64_t columns) {
  Tensor x = Placeholder({8, 16}, DataType::Float32(), "x");
  Tensor scaled = Compute(
      {8, 16},
      [&](const std::vector<Var>& i) {
        return x({i[0], i[1]}) * FloatImm(DataType::Float32(), 2.0);
      },
      "scaled");
  Tensor out = Compute(
      {rows, columns},
      [&](const std::vector<Var>& i) {
        return scaled({i[0], i[1]});
      },
      "out");
  absl::StatusOr<PrimFunc> f = CreatePrimFunc("cropped_copy", {x, out});
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

TEST(ReverseComputeInlineTest, ACropOfTheProducerBecomesItsDomainAndPredicate) {
  PrimFunc func = CroppedCopy(7, 13);
  Schedule sch = Schedule::Create(func, 1);
  ExpectOutFoldsIn(&sch, func);
  // Split, the producer keeps its bounds: the predicate follows its domain.
  absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(*sch.GetBlock("scaled"));
  ASSERT_TRUE(loops.ok()) << loops.status();
  absl::StatusOr<std::vector<LoopRV>> columns =
      sch.Split((*loops)[1], {InstValue(), InstValue::Int(4)});
  ASSERT_TRUE(columns.ok()) << columns.status();
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

}  // namespace
}  // namespace tessera
