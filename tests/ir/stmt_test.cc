// Tests of ir/stmt.cc: statements: nested sequences flatten and a one-statement sequence is the
// statement itself.
#include "ir/stmt.h"

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

}  // namespace
}  // namespace tessera
