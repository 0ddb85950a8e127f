// ShiftInt8Product: an int8 product's first operand shifted by 128, its sums started from -128
// times the other's; exact against the unscheduled product (interpreter and C), replayable, and
// refused where the block is no such product.
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "schedule/schedule.h"
#include "schedule/trace.h"
#include "tests/schedule/primitive/cache_testing.h"

namespace tessera {
namespace {

using cache_testing::BlockNamed;
using cache_testing::ExpectCBackendMatches;
using cache_testing::ExpectCorrect;
using cache_testing::ExpectRejected;

TEST(ShiftInt8ProductTest, GemmSumsBOverKPerColumn) {
  absl::StatusOr<PrimFunc> func =
      MakeWorkload("GMM", {{"B", 2}, {"M", 8}, {"N", 24}, {"K", 20}}, "int8");
  ASSERT_TRUE(func.ok()) << func.status();
  Schedule sch = Schedule::Create(*func, 1);
  BlockRV product = *sch.GetBlock("C");
  const Block before = BlockNamed(sch, "C");
  absl::StatusOr<BlockRV> sums = sch.ShiftInt8Product(product, 2);  // reads C, A, B
  ASSERT_TRUE(sums.ok()) << sums.status();
  const Block shift = BlockNamed(sch, "C_shift");
  // One sum per batch and column, over k: S[b, j].
  ASSERT_EQ(shift->writes.size(), 1u);
  const Buffer s = shift->writes[0].buffer;
  EXPECT_EQ(PrintExpr(s.shape()[0]), "2");
  EXPECT_EQ(PrintExpr(s.shape()[1]), "24");
  const Block shifted = BlockNamed(sch, "C");
  // The reads keep their order, the sums last (rules index them).
  ASSERT_EQ(shifted->reads.size(), before->reads.size() + 1);
  for (size_t r = 0; r < before->reads.size(); ++r) {
    EXPECT_TRUE(shifted->reads[r].buffer.same_as(before->reads[r].buffer));
  }
  EXPECT_TRUE(shifted->reads.back().buffer.same_as(s));
  EXPECT_NE(PrintStmt(shifted->body).find("(int32(A[v_b, v_i, v_k]) + int32(128)) * int32(B"),
            std::string::npos)
      << PrintStmt(shifted->body);
  ExpectCorrect(sch, *func);
  ExpectCBackendMatches(*func, sch.func());
  // Replays from its trace, through JSON.
  absl::StatusOr<Trace> trace = Trace::FromJson(sch.trace().ToJson());
  ASSERT_TRUE(trace.ok()) << trace.status();
  Schedule replay = Schedule::Create(*func, 1);
  ASSERT_TRUE(trace->ApplyTo(&replay, /*remove_postproc=*/false).ok());
  EXPECT_EQ(PrintFunc(replay.func()), PrintFunc(sch.func()));
}

TEST(ShiftInt8ProductTest, ConvolutionSumsWeightsOverTapsAndChannels) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("C2D",
                                               {{"N", 1},
                                                {"H", 6},
                                                {"W", 6},
                                                {"CI", 8},
                                                {"CO", 16},
                                                {"K", 3},
                                                {"stride", 1},
                                                {"padding", 1}},
                                               "int8");
  ASSERT_TRUE(func.ok()) << func.status();
  Schedule sch = Schedule::Create(*func, 1);
  BlockRV product = *sch.GetBlock("conv2d_nhwc");
  const Block conv = BlockNamed(sch, "conv2d_nhwc");
  int weight = -1;
  for (size_t r = 0; r < conv->reads.size(); ++r) {
    if (conv->reads[r].buffer.name() == "weight") weight = static_cast<int>(r);
  }
  ASSERT_GE(weight, 0);
  absl::StatusOr<BlockRV> sums = sch.ShiftInt8Product(product, weight);
  ASSERT_TRUE(sums.ok()) << sums.status();
  const Buffer s = BlockNamed(sch, "conv2d_nhwc_shift")->writes[0].buffer;
  ASSERT_EQ(s.ndim(), 1);  // one sum per output channel
  EXPECT_EQ(PrintExpr(s.shape()[0]), "16");
  // The padding's zeros are shifted like the image (the select stays inside the shift).
  ExpectCorrect(sch, *func);
  ExpectCBackendMatches(*func, sch.func());
}

TEST(ShiftInt8ProductTest, RefusesOtherProductsAndDecomposedReductions) {
  absl::StatusOr<PrimFunc> floats = MakeWorkload("GMM", {{"M", 8}, {"N", 16}, {"K", 8}});
  ASSERT_TRUE(floats.ok()) << floats.status();
  Schedule sch = Schedule::Create(*floats, 1);
  BlockRV c = *sch.GetBlock("C");
  PrimFunc before = sch.func();
  size_t n = sch.trace().size();
  ExpectRejected(sch.ShiftInt8Product(c, 2).status(),
                 "shift_int8_product: block C is not C = C + int32(x) * int32(B[..])", sch, before,
                 n);
  ExpectRejected(sch.ShiftInt8Product(c, 7).status(),
                 "shift_int8_product: summed_read 7 is out of range for block C", sch, before, n);

  absl::StatusOr<PrimFunc> ints =
      MakeWorkload("GMM", {{"B", 1}, {"M", 8}, {"N", 16}, {"K", 8}}, "int8");
  ASSERT_TRUE(ints.ok()) << ints.status();
  Schedule decomposed = Schedule::Create(*ints, 1);
  BlockRV product = *decomposed.GetBlock("C");
  std::vector<LoopRV> loops = *decomposed.GetLoops(product);
  ASSERT_TRUE(decomposed.DecomposeReduction(product, loops.back()).ok());
  before = decomposed.func();
  n = decomposed.trace().size();
  ExpectRejected(decomposed.ShiftInt8Product(product, 2).status(),
                 "shift_int8_product: block C has no init statement storing 0", decomposed, before,
                 n);
}

}  // namespace
}  // namespace tessera
