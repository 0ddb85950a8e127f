// Tests of ir/flops.cc: a multiply-add counts 2 per iteration of the loops around it, the init's
// constant store and casts count nothing, max counts 1, and every block adds up.
#include "ir/flops.h"

#include "gtest/gtest.h"
#include "tests/ir/ir_test_funcs.h"

namespace tessera {
namespace {

TEST(FlopsTest, MatmulIsTwoFlopsPerMultiplyAdd) {
  EXPECT_EQ(EstimateFlops(testing::Matmul()), 2.0 * 16 * 8 * 4);
  EXPECT_EQ(EstimateFlops(testing::Matmul("", 2, 3, 5)), 2.0 * 2 * 3 * 5);
}

TEST(FlopsTest, BlocksAddUpAndCastsAreFree) {
  // T = A + 1 (one add per element), B = float16(max(T, 0)) (one max, the cast free).
  EXPECT_EQ(EstimateFlops(testing::Elementwise("", 32)), 2.0 * 32 * 32);
  EXPECT_EQ(EstimateFlops(testing::Elementwise("", 8)), 2.0 * 8 * 8);
}

}  // namespace
}  // namespace tessera
