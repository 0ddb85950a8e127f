// Tests of ir/stmt.cc: statements: nested sequences flatten and a one-statement sequence is the
// statement itself; conditions split into their conjuncts and join again.
#include "ir/stmt.h"

#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(StmtTest, SeqStmtFlattens) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {4});
  Stmt s1 = BufferStore(a, FloatImm(DataType::Float32(), 1), {0});
  Stmt s2 = BufferStore(a, FloatImm(DataType::Float32(), 2), {1});
  Stmt nested = SeqStmt({s1, SeqStmt({s2, s1})});
  const auto* seq = nested.as<SeqStmtNode>();
  ASSERT_NE(seq, nullptr);
  EXPECT_EQ(seq->seq.size(), 3u);
  EXPECT_TRUE(SeqStmt({s1}).same_as(s1));
}

TEST(StmtTest, SplitConjunctsFlattensNestedAndsAndDropsTrue) {
  Var i("i"), j("j");
  Expr a = LT(i, 4), b = LT(j, 8), c = GE(i, j);
  std::vector<Expr> out;
  SplitConjuncts(And(And(a, True()), And(b, c)), &out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[0].same_as(a));
  EXPECT_TRUE(out[1].same_as(b));
  EXPECT_TRUE(out[2].same_as(c));
  SplitConjuncts(True(), &out);
  SplitConjuncts(Expr(), &out);
  EXPECT_EQ(out.size(), 3u);  // appended nothing
  SplitConjuncts(Or(a, b), &out);
  EXPECT_EQ(out.size(), 4u);  // an Or is one conjunct
}

TEST(StmtTest, ConjunctionIsLeftNestedAndUndefinedForNone) {
  Var i("i");
  Expr a = LT(i, 4), b = GE(i, 1), c = NE(i, 2);
  Expr all = Conjunction({a, b, c});
  const auto* top = all.as<BinaryNode>();
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->op, BinaryOp::kAnd);
  EXPECT_TRUE(top->b.same_as(c));
  std::vector<Expr> back;
  SplitConjuncts(all, &back);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_TRUE(back[0].same_as(a) && back[1].same_as(b) && back[2].same_as(c));
  EXPECT_TRUE(Conjunction({a}).same_as(a));
  EXPECT_FALSE(Conjunction({}).defined());
}

}  // namespace
}  // namespace tessera
