// Tests of ir/analysis.cc: one ArgInfo per parameter in order (dtype and constant shape; -1 for
// a symbolic extent), and the parameters some statement writes (the outputs a check compares).
#include "ir/analysis.h"

#include <vector>

#include "gtest/gtest.h"
#include "tests/ir/ir_test_funcs.h"

namespace tessera {
namespace {

TEST(ArgInfosTest, OnePerParameterWithDtypeAndShape) {
  std::vector<ArgInfo> matmul = ArgInfosOf(testing::Matmul("", 16, 8, 4));
  ASSERT_EQ(matmul.size(), 3u);
  EXPECT_EQ(matmul[0].dtype, DataType::Float32());
  EXPECT_EQ(matmul[0].shape, (std::vector<int64_t>{16, 4}));
  EXPECT_EQ(matmul[1].shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(matmul[2].shape, (std::vector<int64_t>{16, 8}));

  // The intermediate T is allocated inside, not a parameter.
  std::vector<ArgInfo> elementwise = ArgInfosOf(testing::Elementwise("", 32));
  ASSERT_EQ(elementwise.size(), 2u);
  EXPECT_EQ(elementwise[0].dtype, DataType::Float32());
  EXPECT_EQ(elementwise[1].dtype, DataType::Float16());
  EXPECT_EQ(elementwise[1].shape, (std::vector<int64_t>{32, 32}));
}

TEST(ArgInfosTest, ASymbolicExtentIsMinusOne) {
  bool symbolic = false;
  for (const ArgInfo& arg : ArgInfosOf(testing::Tiled())) {
    for (int64_t extent : arg.shape) symbolic |= extent == -1;
  }
  EXPECT_TRUE(symbolic) << "Tiled's column count m is a variable";
}

TEST(WrittenParamIndicesTest, OnlyTheParametersStoredInto) {
  EXPECT_EQ(WrittenParamIndices(testing::Matmul()), std::vector<int>{2});
  EXPECT_EQ(WrittenParamIndices(testing::Elementwise()), std::vector<int>{1});
}

}  // namespace
}  // namespace tessera
