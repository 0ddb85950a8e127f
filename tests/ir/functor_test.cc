// Tests of ir/functor.cc: functors: Substitute replaces variables by identity (not by name) and
// returns the very same node when nothing changed.
#include "ir/functor.h"

#include "gtest/gtest.h"
#include "ir/stmt.h"

namespace tessera {
namespace {

TEST(FunctorTest, SubstituteReplacesByIdentityAndKeepsUnchangedNodes) {
  Var i("i"), j("i");
  Buffer a = Buffer::Make("A", DataType::Float32(), {16});
  Stmt store = BufferStore(a, FloatImm(DataType::Float32(), 0), {i * 4 + j});
  VarMap map;
  map[i] = Expr(3);
  Stmt replaced = Substitute(store, map);
  EXPECT_FALSE(replaced.same_as(store));
  int uses_i = 0, uses_j = 0;
  PostOrderVisitExprs(replaced, [&](const Expr& e) {
    if (e.same_as(i)) ++uses_i;
    if (e.same_as(j)) ++uses_j;
  });
  EXPECT_EQ(uses_i, 0);
  EXPECT_EQ(uses_j, 1);
  VarMap unrelated;
  unrelated[Var("k")] = Expr(1);
  EXPECT_TRUE(Substitute(store, unrelated).same_as(store));
}

}  // namespace
}  // namespace tessera
