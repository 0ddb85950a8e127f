// compute_inline and reverse_compute_inline: scheduled programs compute what the unscheduled
// ones do, traces replay, invalid uses fail without changing the schedule.
#include <set>
#include <string>

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
