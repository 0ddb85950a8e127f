// Tests of ir/ndarray.cc: host arrays: float16 rounding to nearest even, integer wrap-around,
// seeded random fill and comparison.
#include "ir/ndarray.h"

#include "base/random.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(NDArrayTest, Float16RoundsToNearestEven) {
  NDArray a = NDArray::Empty(DataType::Float16(), {3});
  a.SetFlat(0, 1.0);
  a.SetFlat(1, 1.0 + 1.0 / 4096);  // below half an ulp (2^-11): rounds down
  a.SetFlat(2, 65504.0);
  EXPECT_EQ(a.GetFlat(0), 1.0);
  EXPECT_EQ(a.GetFlat(1), 1.0);
  EXPECT_EQ(a.GetFlat(2), 65504.0);
  EXPECT_EQ(RoundToDType(DataType::Float16(), 0.1), 0.0999755859375);
  EXPECT_EQ(RoundToDType(DataType::BFloat16(), 1.0 + 1.0 / 256), 1.0);
}

TEST(NDArrayTest, IntegersWrap) {
  NDArray a = NDArray::Empty(DataType::Int8(), {1});
  a.SetFlat(0, 130);
  EXPECT_EQ(a.GetFlat(0), -126);
}

TEST(NDArrayTest, FillRandomIsSeededAndCompareFindsMismatch) {
  NDArray a = NDArray::Empty(DataType::Float32(), {8, 8});
  NDArray b = NDArray::Empty(DataType::Float32(), {8, 8});
  Random r1(9), r2(9);
  a.FillRandom(&r1);
  b.FillRandom(&r2);
  absl::StatusOr<Comparison> same = Compare(a, b);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->ok());
  b.SetFlat(5, b.GetFlat(5) + 1);
  absl::StatusOr<Comparison> diff = Compare(a, b);
  ASSERT_TRUE(diff.ok());
  EXPECT_EQ(diff->mismatches, 1);
  EXPECT_EQ(diff->first_mismatch, 5);
  EXPECT_FALSE(Compare(a, NDArray::Empty(DataType::Float32(), {64})).ok());
}

}  // namespace
}  // namespace tessera
