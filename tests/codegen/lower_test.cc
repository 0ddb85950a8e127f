// Tests of LowerForCodegen: blocks removed, init guarded, predicates kept, allocations placed,
// buffers flattened (row-major and strided), loops preserved. How tile caches are compacted is
// in compact_buffers_test.cc.
#include "codegen/lower.h"

#include "gtest/gtest.h"
#include "ir/functor.h"
#include "tests/codegen/test_funcs.h"

namespace tessera {
namespace {

using testing_funcs::MakeFunc;
using testing_funcs::Matmul;

int CountStmts(const Stmt& s, StmtKind kind) {
  int n = 0;
  PostOrderVisitStmts(s, [&](const Stmt& st) { n += st.kind() == kind; });
  return n;
}

TEST(LowerTest, MatmulLosesBlocksAndGuardsInit) {
  PrimFunc f = Matmul(8, 4, 16);
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(f);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const Stmt& body = lowered->body();
  EXPECT_EQ(CountStmts(body, StmtKind::kBlock), 0);
  EXPECT_EQ(CountStmts(body, StmtKind::kBlockRealize), 0);
  EXPECT_EQ(CountStmts(body, StmtKind::kFor), 3);

  // for i: for j: for k: { if (k == 0) C[...] = 0; C[...] = C[...] + A[...] * B[...] }
  const auto* i = body.as<ForNode>();
  ASSERT_NE(i, nullptr);
  const auto* j = i->body.as<ForNode>();
  ASSERT_NE(j, nullptr);
  const auto* k = j->body.as<ForNode>();
  ASSERT_NE(k, nullptr);
  const auto* seq = k->body.as<SeqStmtNode>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->seq.size(), 2u);
  const auto* guard = seq->seq[0].as<IfThenElseNode>();
  ASSERT_NE(guard, nullptr);
  const auto* eq = guard->condition.as<BinaryNode>();
  ASSERT_NE(eq, nullptr);
  EXPECT_EQ(eq->op, BinaryOp::kEQ);
  EXPECT_TRUE(eq->a.same_as(k->loop_var));  // the iter var was replaced by the loop var
  EXPECT_TRUE(IsConstInt(eq->b, 0));

  // C[vi, vj] -> C[i * 4 + j] on a 1-D buffer of 32 elements.
  const auto* update = seq->seq[1].as<BufferStoreNode>();
  ASSERT_NE(update, nullptr);
  ASSERT_EQ(update->indices.size(), 1u);
  EXPECT_EQ(update->buffer.ndim(), 1);
  EXPECT_TRUE(IsConstInt(update->buffer.shape()[0], 32));
  const auto* add = update->indices[0].as<BinaryNode>();
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->op, BinaryOp::kAdd);
  EXPECT_TRUE(add->b.same_as(j->loop_var));
  const auto* mul = add->a.as<BinaryNode>();
  ASSERT_NE(mul, nullptr);
  EXPECT_TRUE(mul->a.same_as(i->loop_var));
  EXPECT_TRUE(IsConstInt(mul->b, 4));

  ASSERT_EQ(lowered->params().size(), 3u);
  EXPECT_TRUE(IsConstInt(lowered->params()[0].shape()[0], 8 * 16));
  EXPECT_EQ(lowered->params()[0].name(), "A");
}

TEST(LowerTest, KeepsLoopKindsAndAnnotations) {
  Annotations ann = {{"pragma_auto_unroll_max_step", int64_t{16}}};
  PrimFunc f = Matmul(8, 8, 8, DataType::Float32(), DataType::Float32(),
                      {ForKind::kParallel, ForKind::kSerial, ForKind::kUnrolled}, ann);
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(f);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const auto* i = lowered->body().as<ForNode>();
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->for_kind, ForKind::kParallel);
  EXPECT_EQ(i->annotations.count("pragma_auto_unroll_max_step"), 1u);
  const auto* k = i->body.as<ForNode>()->body.as<ForNode>();
  EXPECT_EQ(k->for_kind, ForKind::kUnrolled);
}

TEST(LowerTest, PredicateBecomesIfAndAllocationsBecomeAllocate) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {10});
  Buffer b = Buffer::Make("B", DataType::Float32(), {10});
  Buffer t = Buffer::Make("T", DataType::Float32(), {10});
  Var io("io"), ii("ii"), vi("vi");
  BlockNode block;
  block.name = "T";
  block.iter_vars = {IterVar{vi, Range{Expr(0), Expr(10)}, IterKind::kSpatial}};
  block.body = BufferStore(t, a.Load({vi}) * 2, {vi});
  // A split of 10 by 4 over-covers the domain: the predicate keeps it exact.
  Expr bound = io * 4 + ii;
  Stmt s = BlockRealize({bound}, LT(bound, 10), MakeBlock(block));
  s = For(io, Expr(3), ForKind::kSerial, For(ii, Expr(4), ForKind::kSerial, s));
  Stmt copy = testing_funcs::ElementwiseNest(
      "B", b, {ForKind::kSerial}, [&](const std::vector<Var>& v) { return t.Load({v[0]}); });
  PrimFunc f = MakeFunc("pred", {a, b}, SeqStmt({s, copy}), {t});
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(f);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const auto* alloc = lowered->body().as<AllocateNode>();
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ(alloc->buffer.name(), "T");
  EXPECT_EQ(CountStmts(lowered->body(), StmtKind::kIfThenElse), 1);
  // Every reference to T now goes to the flat allocation.
  PostOrderVisitStmts(lowered->body(), [&](const Stmt& st) {
    if (const auto* store = st.as<BufferStoreNode>(); store && store->buffer.name() == "T") {
      EXPECT_TRUE(store->buffer.same_as(alloc->buffer));
    }
  });
}

TEST(LowerTest, HonoursStrides) {
  // A 4x4 view with a row pitch of 8 elements.
  Buffer a = Buffer::Make("A", DataType::Float32(), {4, 4}).WithStrides({Expr(8), Expr(1)});
  Buffer b = Buffer::Make("B", DataType::Float32(), {4, 4});
  Stmt s = testing_funcs::ElementwiseNest("B", b, {}, [&](const std::vector<Var>& v) {
    return a.Load({v[0], v[1]});
  });
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(MakeFunc("strided", {a, b}, s));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_TRUE(IsConstInt(lowered->params()[0].shape()[0], 3 * 8 + 3 + 1));
  bool found = false;
  PostOrderVisitExprs(lowered->body(), [&](const Expr& e) {
    const auto* load = e.as<BufferLoadNode>();
    if (!load) return;
    const auto* mul = load->indices[0].as<BinaryNode>()->a.as<BinaryNode>();
    ASSERT_NE(mul, nullptr);
    EXPECT_TRUE(IsConstInt(mul->b, 8));
    found = true;
  });
  EXPECT_TRUE(found);
}

TEST(LowerTest, SimplifiesFusedIndices) {
  // A fused loop f over 8x8 elements: A[f / 8, f % 8] flattens to A[f].
  Buffer a = Buffer::Make("A", DataType::Float32(), {8, 8});
  Buffer b = Buffer::Make("B", DataType::Float32(), {8, 8});
  Var f("f"), vi("vi"), vj("vj");
  BlockNode block;
  block.name = "B";
  block.iter_vars = {IterVar{vi, Range{Expr(0), Expr(8)}, IterKind::kSpatial},
                     IterVar{vj, Range{Expr(0), Expr(8)}, IterKind::kSpatial}};
  block.body = BufferStore(b, a.Load({vi, vj}), {vi, vj});
  Stmt s = For(f, Expr(64), ForKind::kSerial,
               BlockRealize({FloorDiv(f, 8), FloorMod(f, 8)}, True(), MakeBlock(block)));
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(MakeFunc("fused", {a, b}, s));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const auto* store = lowered->body().as<ForNode>()->body.as<BufferStoreNode>();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->indices[0].same_as(f));
  const auto* load = store->value.as<BufferLoadNode>();
  ASSERT_NE(load, nullptr);
  EXPECT_TRUE(load->indices[0].same_as(f));
}

TEST(LowerTest, IsIdempotent) {
  absl::StatusOr<PrimFunc> once = LowerForCodegen(Matmul(4, 4, 4));
  ASSERT_TRUE(once.ok());
  absl::StatusOr<PrimFunc> twice = LowerForCodegen(*once);
  ASSERT_TRUE(twice.ok()) << twice.status();
  EXPECT_EQ(CountStmts(twice->body(), StmtKind::kFor), 3);
}

TEST(LowerTest, UnknownBufferIsAnError) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {4});
  Buffer stray = Buffer::Make("stray", DataType::Float32(), {4});
  Stmt s = testing_funcs::ElementwiseNest(
      "A", a, {}, [&](const std::vector<Var>& v) { return stray.Load({v[0]}); });
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(MakeFunc("bad", {a}, s));
  ASSERT_FALSE(lowered.ok());
  EXPECT_NE(std::string(lowered.status().message()).find("stray"), std::string::npos);
}

}  // namespace
}  // namespace tessera
