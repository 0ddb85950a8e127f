// Tests of schedule/instruction.h: the values an instruction holds (None, int, float, string,
// RVs, arrays), their accessors and their equality, which trace comparison relies on.
#include "schedule/instruction.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(InstValueTest, DefaultIsNone) {
  InstValue none;
  EXPECT_TRUE(none.is_none());
  EXPECT_EQ(none.type(), InstValue::Type::kNone);
  EXPECT_EQ(none, InstValue());
}

TEST(InstValueTest, ScalarsKeepTheirTypeAndValue) {
  InstValue i = InstValue::Int(-7);
  EXPECT_TRUE(i.is_int());
  EXPECT_EQ(i.as_int(), -7);
  EXPECT_EQ(i.as_float(), -7.0);  // an int reads as a float where a float is expected
  InstValue f = InstValue::Float(0.25);
  EXPECT_EQ(f.type(), InstValue::Type::kFloat);
  EXPECT_EQ(f.as_float(), 0.25);
  InstValue s = InstValue::String("shared");
  EXPECT_EQ(s.type(), InstValue::Type::kString);
  EXPECT_EQ(s.as_string(), "shared");
}

TEST(InstValueTest, RandomVariablesCarryKindAndId) {
  InstValue block = InstValue::Of(BlockRV{3});
  InstValue loop = InstValue::Of(LoopRV{3});
  InstValue expr = InstValue::Of(ExprRV{4});
  EXPECT_TRUE(block.is_rv());
  EXPECT_EQ(block.rv_kind(), RVKind::kBlock);
  EXPECT_EQ(block.rv_id(), 3);
  EXPECT_EQ(loop.rv_kind(), RVKind::kLoop);
  EXPECT_EQ(expr.rv_kind(), RVKind::kExpr);
  EXPECT_EQ(expr.rv_id(), 4);
  EXPECT_EQ(block, InstValue::RV(RVKind::kBlock, 3));
  EXPECT_NE(block, loop);  // same id, other kind
}

TEST(InstValueTest, IntArrayRoundTripsThroughAsIntArray) {
  InstValue tiles = InstValue::IntArray({4, 1, 8});
  EXPECT_TRUE(tiles.is_array());
  ASSERT_EQ(tiles.items().size(), 3u);
  EXPECT_EQ(tiles.items()[2], InstValue::Int(8));
  EXPECT_EQ(tiles.AsIntArray(), (std::vector<int64_t>{4, 1, 8}));
  EXPECT_TRUE(InstValue::IntArray({}).AsIntArray().empty());
}

TEST(InstValueTest, AsIntArrayIsEmptyForAnythingButAnArrayOfInts) {
  EXPECT_TRUE(InstValue::Int(3).AsIntArray().empty());
  InstValue mixed = InstValue::Array({InstValue::Int(1), InstValue()});
  EXPECT_TRUE(mixed.AsIntArray().empty());
  InstValue nested = InstValue::Array({InstValue::IntArray({1, 2})});
  EXPECT_TRUE(nested.AsIntArray().empty());
}

TEST(InstValueTest, EqualityComparesTypeThenValueDeeply) {
  EXPECT_EQ(InstValue::Int(2), InstValue::Int(2));
  EXPECT_NE(InstValue::Int(2), InstValue::Float(2.0));
  EXPECT_NE(InstValue::String("a"), InstValue::String("b"));
  EXPECT_EQ(InstValue::Array({InstValue::Of(LoopRV{1}), InstValue::Int(5)}),
            InstValue::Array({InstValue::Of(LoopRV{1}), InstValue::Int(5)}));
  EXPECT_NE(InstValue::IntArray({1, 2}), InstValue::IntArray({1, 2, 3}));
  EXPECT_NE(InstValue::IntArray({1, 2}), InstValue::IntArray({2, 1}));
}

}  // namespace
}  // namespace tessera
