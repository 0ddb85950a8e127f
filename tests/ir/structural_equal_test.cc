// Tests of ir/structural_equal.cc: the diff names the path to the first difference, bijective
// variable pairing, free variables only with the option, and variable dtypes.
#include "ir/structural_equal.h"

#include "gtest/gtest.h"
#include "ir/structural_hash.h"
#include "tests/ir/ir_test_funcs.h"

namespace tessera {
namespace {

TEST(StructuralEqualTest, DiffNamesPathToFirstDifference) {
  auto make = [](int64_t c) {
    Buffer a = Buffer::Make("A", DataType::Int64(), {2});
    Stmt body = SeqStmt({BufferStore(a, Expr(1), {0}), BufferStore(a, a.Load({0}) + c, {1})});
    return PrimFunc::Make("f", {a}, testing::RootRealize(body));
  };
  EXPECT_EQ(StructuralDiff(make(3), make(4)), "body.block.body.seq[1].value.b: 3 vs 4");
  EXPECT_EQ(StructuralDiff(make(3), make(3)), "");
}

TEST(StructuralEqualTest, VariablesPairOneToOne) {
  Var x("x"), y("y");
  EXPECT_TRUE(StructuralEqual(x + y, y + x, {/*map_free_vars=*/true}));
  EXPECT_FALSE(StructuralEqual(x + y, x + x, {/*map_free_vars=*/true}));
  EXPECT_FALSE(StructuralEqual(x + x, x + y, {/*map_free_vars=*/true}));
  EXPECT_EQ(StructuralDiff(x + y, x + x, {/*map_free_vars=*/true}),
            "b: var y (unbound) vs var x (bound elsewhere)");
}

TEST(StructuralEqualTest, FreeVariablesNeedTheOption) {
  Var x("x"), y("y");
  EXPECT_TRUE(StructuralEqual(x + 1, x + 1));
  EXPECT_FALSE(StructuralEqual(x + 1, y + 1));
  EXPECT_EQ(StructuralDiff(x + 1, y + 1), "a: free var x vs free var y");
  EXPECT_TRUE(StructuralEqual(x + 1, y + 1, {/*map_free_vars=*/true}));
  // Loop variables are definitions: paired without the option.
  Buffer a = Buffer::Make("A", DataType::Int64(), {4});
  Var i("i"), j("j");
  Stmt s1 = For(i, 4, ForKind::kSerial, BufferStore(a, i, {i}));
  Stmt s2 = For(j, 4, ForKind::kSerial, BufferStore(a, j, {j}));
  EXPECT_TRUE(StructuralEqual(s1, s2));
  EXPECT_EQ(StructuralHash(s1), StructuralHash(s2));
  // ... but a free buffer is compared by identity unless mapped.
  Buffer b = Buffer::Make("B", DataType::Int64(), {4});
  Stmt s3 = For(j, 4, ForKind::kSerial, BufferStore(b, j, {j}));
  EXPECT_FALSE(StructuralEqual(s1, s3));
  EXPECT_TRUE(StructuralEqual(s1, s3, {/*map_free_vars=*/true}));
}

TEST(StructuralEqualTest, DtypesOfVariablesCount) {
  EXPECT_FALSE(StructuralEqual(Var("x", DataType::Int32()), Var("x", DataType::Int64()),
                               {/*map_free_vars=*/true}));
  EXPECT_NE(StructuralHash(Var("x", DataType::Int32())),
            StructuralHash(Var("x", DataType::Int64())));
}

}  // namespace
}  // namespace tessera
