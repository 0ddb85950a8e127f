// PartitionGuardedLoops (codegen/partition_loops.cc): the tail guard of a non-dividing split
// becomes a full tile with a constant extent and no guard plus a clipped tail, peeled off the
// outer loop with a constant extent; conjuncts that do not use the loop move above it, other
// guards stay; the C backend still computes what the
// unscheduled matmul computes.
#include "codegen/partition_loops.h"

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "codegen/codegen_c.h"
#include "codegen/lower.h"
#include "frontend/compute.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/loop_annotations.h"
#include "ir/printer.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

PrimFunc Gmm(int64_t m, int64_t n, int64_t k) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}});
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

// The loops over variables named `name`, in pre-order.
std::vector<const ForNode*> LoopsNamed(const Stmt& s, const std::string& name) {
  std::vector<const ForNode*> loops;
  PostOrderVisitStmts(s, [&](const Stmt& st) {
    const auto* f = st.as<ForNode>();
    if (f != nullptr && f->loop_var.name() == name) loops.push_back(f);
  });
  return loops;
}

// GMM 5x13x7 with j split 13 -> [4, 4] (a guarded tail j_0 * 4 + j_1 < 13) and i split by
// `i_factors`.
Schedule SplitGmm(const PrimFunc& func, std::vector<InstValue> i_factors) {
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  EXPECT_TRUE(sch.Split(loops[2], {InstValue::Int(4), InstValue::Int(4)}).ok());
  if (!i_factors.empty()) {
    EXPECT_TRUE(sch.Split(loops[1], i_factors).ok());
  }
  return sch;
}

TEST(PartitionGuardedLoopsTest, TailGuardBecomesFullTilesAndAPeeledTail) {
  const PrimFunc func = Gmm(5, 13, 7);
  Schedule sch = SplitGmm(func, {});
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const PrimFunc partitioned = PartitionGuardedLoops(*lowered);
  // Loops b, i, j_0, j_1, k, the guard around the block under k. The guard does not use k, so
  // it moves above k and bounds j_1: j_0 then holds
  // `if (4 <= 13 - j_0 * 4) for j_1 in [0, 4) else for j_1 in [0, 13 - j_0 * 4)`, whose
  // condition holds for j_0 < 3. So j_0 runs over [0, 3) with full tiles, and the tail is
  // peeled after it at j_0 = 3: a j_1 loop of the constant extent 1.
  ASSERT_EQ(LoopsNamed(lowered->body(), "j_1").size(), 1u);
  ASSERT_EQ(LoopsNamed(partitioned.body(), "j_0").size(), 1u);
  const ForNode* j0 = LoopsNamed(partitioned.body(), "j_0")[0];
  EXPECT_TRUE(IsConstInt(j0->extent, 3)) << PrintStmt(partitioned.body());
  const auto* full = j0->body.as<ForNode>();
  ASSERT_NE(full, nullptr) << PrintStmt(partitioned.body());
  EXPECT_EQ(full->loop_var.name(), "j_1");
  EXPECT_TRUE(IsConstInt(full->extent, 4));
  EXPECT_EQ(full->body.as<IfThenElseNode>(), nullptr) << "the full tile is still guarded";
  const std::vector<const ForNode*> j1 = LoopsNamed(partitioned.body(), "j_1");
  ASSERT_EQ(j1.size(), 2u) << PrintStmt(partitioned.body());
  const ForNode* tail = j1[0] == full ? j1[1] : j1[0];
  EXPECT_TRUE(IsConstInt(tail->extent, 1)) << PrintStmt(partitioned.body());
  absl::Status built = testing::CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

TEST(PartitionGuardedLoopsTest, GuardsOfOuterLoopsMoveOutAndPartitionTheirOwnLoop) {
  // i split 5 -> [2, 3] too: the innermost guard is (i_0 * 3 + i_1 < 5) && (j_0 * 4 + j_1 < 13);
  // the i conjunct leaves the j_1 loop and partitions i_1 (above k, j_0 and j_1 in the order).
  const PrimFunc func = Gmm(5, 13, 7);
  Schedule sch = SplitGmm(func, {InstValue::Int(2), InstValue::Int(3)});
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  // b, i_0, i_1, j_0, j_1, k -> b, i_0, j_0, k, i_1, j_1: i_1 directly above j_1.
  ASSERT_TRUE(sch.Reorder({loops[1], loops[3], loops[5], loops[2], loops[4]}).ok());
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const PrimFunc partitioned = PartitionGuardedLoops(*lowered);
  for (const ForNode* loop : LoopsNamed(partitioned.body(), "j_1")) {
    EXPECT_EQ(loop->body.as<IfThenElseNode>(), nullptr) << PrintStmt(partitioned.body());
  }
  std::vector<const ForNode*> i1 = LoopsNamed(partitioned.body(), "i_1");
  ASSERT_EQ(i1.size(), 2u);  // full and tail
  // The test between them is invariant in k, j_0 and j_1: unswitched above them, it leaves
  // i_0's body a branch on i_0 alone, and i_0 is peeled, so the tail's extent is a constant too.
  std::multiset<int64_t> extents;
  for (const ForNode* loop : i1) {
    const int64_t* n = AsConstInt(loop->extent);
    extents.insert(n != nullptr ? *n : -1);
  }
  EXPECT_EQ(extents, (std::multiset<int64_t>{3, 2})) << PrintStmt(partitioned.body());
  absl::Status built = testing::CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

// A tile whose last one is clipped, in a parallel loop (which cannot be peeled): GMM 5x13x7
// with j split [4, 4] under k, (b, i, j_0) fused and parallel, the init decomposed. The clipped
// tile's test is invariant in k: it moves above k, so each of the two k loops (full tile, clipped
// tile) runs free of branches. It still computes the product.
TEST(PartitionGuardedLoopsTest, AClippedTilesTestMovesAboveTheLoopsItDoesNotUse) {
  const PrimFunc func = Gmm(5, 13, 7);
  Schedule sch = SplitGmm(func, {});
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));  // b, i, j_0, j_1, k
  ASSERT_TRUE(sch.Reorder({loops[4], loops[3]}).ok());
  absl::StatusOr<LoopRV> tile = sch.Fuse({loops[0], loops[1], loops[2]});
  ASSERT_TRUE(tile.ok()) << tile.status();
  ASSERT_TRUE(sch.Parallel(*tile).ok());
  ASSERT_TRUE(sch.DecomposeReduction(*sch.GetBlock("C"), loops[4]).ok());  // no `k == 0` test
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const PrimFunc partitioned = PartitionGuardedLoops(*lowered);
  const std::vector<const ForNode*> k = LoopsNamed(partitioned.body(), "k");
  ASSERT_EQ(k.size(), 2u) << PrintStmt(partitioned.body());
  for (const ForNode* loop : k) {
    int branches = 0;
    PostOrderVisitStmts(loop->body,
                        [&](const Stmt& st) { branches += st.as<IfThenElseNode>() != nullptr; });
    EXPECT_EQ(branches, 0) << PrintStmt(partitioned.body());
  }
  absl::Status built = testing::CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

// The stores to `buffer` in `s` whose value is a select.
int SelectStores(const Stmt& s, const std::string& buffer) {
  int count = 0;
  PostOrderVisitStmts(s, [&](const Stmt& st) {
    const auto* store = st.as<BufferStoreNode>();
    if (store != nullptr && store->buffer.name() == buffer &&
        store->value.as<SelectNode>() != nullptr) {
      ++count;
    }
  });
  return count;
}

TEST(PartitionGuardedLoopsTest, ZeroPaddingSelectBecomesCopyAndFill) {
  // GMM 5x13x7 padded (PadEinsum) to 8 x 16 columns: the copy of B stores `j < 13 ? B[..] : 0`
  // in its innermost loop j, which becomes a plain copy up to 13 and a fill of zeros after it,
  // no select left (GCC at -fno-tree-loop-if-convert leaves a select's loop scalar). A's copy
  // selects on i, not on its innermost loop k: it stays (invariant in k, GCC unswitches it).
  const PrimFunc func = Gmm(5, 13, 7);
  Schedule sch = Schedule::Create(func, 0);
  ASSERT_TRUE(sch.PadEinsum(*sch.GetBlock("C"), {1, 8, 16, 1}).ok());
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  ASSERT_EQ(SelectStores(lowered->body(), "B_pad"), 1) << PrintStmt(lowered->body());
  const PrimFunc partitioned = PartitionGuardedLoops(*lowered);
  EXPECT_EQ(SelectStores(partitioned.body(), "B_pad"), 0) << PrintStmt(partitioned.body());
  EXPECT_EQ(SelectStores(partitioned.body(), "A_pad"), 1) << PrintStmt(partitioned.body());
  // The copy's j loop: 13 columns copied, 3 zero-filled (constant extents, no guard).
  int copied = 0, filled = 0;
  for (const ForNode* j : LoopsNamed(partitioned.body(), "j")) {
    const auto* store = j->body.as<BufferStoreNode>();
    if (store == nullptr || store->buffer.name() != "B_pad") continue;  // C's crop is a j too
    copied += IsConstInt(j->extent, 13);
    filled += IsConstInt(j->extent, 3);
  }
  EXPECT_EQ(copied, 1) << PrintStmt(partitioned.body());
  EXPECT_EQ(filled, 1) << PrintStmt(partitioned.body());
  absl::Status built = testing::CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

// A concatenation along the last axis, out[i, c] = c >= 6 ? b[i, c - 6] : a[i, c], selects on a
// lower bound of its innermost loop: the loop becomes a copy of a for c < 6 and one of b after,
// no select left (the U-Net block's Resize+Concat ran scalar before). It still concatenates.
TEST(PartitionGuardedLoopsTest, ALowerBoundSelectBecomesTwoCopies) {
  for (BinaryOp op : {BinaryOp::kGE, BinaryOp::kGT}) {
    const int64_t from = op == BinaryOp::kGE ? 6 : 5;  // c >= 6 is c > 5
    Tensor a = Placeholder({4, 6}, DataType::Float32(), "a");
    Tensor b = Placeholder({4, 10}, DataType::Float32(), "b");
    Tensor out =
        Compute({4, 16},
                [&](const std::vector<Var>& i) {
                  const Expr c = i[1];
                  const Expr second = op == BinaryOp::kGE ? GE(c, Expr(from)) : GT(c, Expr(from));
                  return Select(second, b({i[0], Max(c - 6, Expr(0))}), a({i[0], Min(c, Expr(5))}));
                },
                "out", {}, {"i", "c"});
    absl::StatusOr<PrimFunc> func = CreatePrimFunc("main", {a, b, out});
    ASSERT_TRUE(func.ok()) << func.status();
    Schedule sch = Schedule::Create(*func, 0);
    absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    ASSERT_EQ(SelectStores(lowered->body(), "out"), 1) << PrintStmt(lowered->body());
    const PrimFunc partitioned = PartitionGuardedLoops(*lowered);
    EXPECT_EQ(SelectStores(partitioned.body(), "out"), 0) << PrintStmt(partitioned.body());
    std::vector<int64_t> extents;
    for (const ForNode* c : LoopsNamed(partitioned.body(), "c")) {
      if (const int64_t* n = AsConstInt(c->extent)) extents.push_back(*n);
    }
    EXPECT_EQ(extents, (std::vector<int64_t>{6, 10})) << PrintStmt(partitioned.body());
    absl::Status built = testing::CheckCBackendMatches(*func, sch.func());
    EXPECT_TRUE(built.ok()) << built;
  }
}

// The selects left in `sch`'s function after lowering and partitioning (a failed lowering
// fails the test and counts -1).
int SelectsAfterPartitioning(const Schedule& sch) {
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  if (!lowered.ok()) return -1;
  int selects = 0;
  PostOrderVisitExprs(PartitionGuardedLoops(*lowered).body(),
                      [&](const Expr& e) { selects += e.as<SelectNode>() != nullptr; });
  return selects;
}

// A rotation of halves inside arithmetic, out[i, d] = x[i, d] * s + (d >= 4 ? x[i, d - 4] :
// -x[i, d + 4]) (a rotary embedding): the select under the store's value bounds the innermost
// loop, which splits at 4 with the select folded on each side. Transposed (the half picked by
// the outer loop i), the select's test does not change in the inner loop: the loop is unswitched
// into one loop per half. Both compute the rotation.
TEST(PartitionGuardedLoopsTest, SelectsInsideTheValueSplitOrUnswitchTheirLoop) {
  for (bool transposed : {false, true}) {
    SCOPED_TRACE(transposed);
    Tensor x = Placeholder({8, 8}, DataType::Float32(), "x");
    Tensor out =
        Compute({8, 8},
                [&](const std::vector<Var>& i) {
                  const Expr half = transposed ? Expr(i[0]) : Expr(i[1]);
                  auto at = [&](const Expr& h) { return transposed ? x({h, i[1]}) : x({i[0], h}); };
                  const Expr rotated =
                      Select(GE(half, Expr(4)), at(Max(half - 4, Expr(0))),
                             MakeConst(DataType::Float32(), 0) - at(Min(half + 4, Expr(7))));
                  return at(half) * MakeConst(DataType::Float32(), 0.5) + rotated;
                },
                "out", {}, {"i", "d"});
    absl::StatusOr<PrimFunc> func = CreatePrimFunc("main", {x, out});
    ASSERT_TRUE(func.ok()) << func.status();
    Schedule sch = Schedule::Create(*func, 0);
    EXPECT_EQ(SelectsAfterPartitioning(sch), 0);
    absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    const PrimFunc partitioned = PartitionGuardedLoops(*lowered);
    std::vector<int64_t> extents;
    for (const ForNode* d : LoopsNamed(partitioned.body(), "d")) {
      if (const int64_t* n = AsConstInt(d->extent)) extents.push_back(*n);
    }
    EXPECT_EQ(extents, transposed ? (std::vector<int64_t>{8, 8}) : (std::vector<int64_t>{4, 4}))
        << PrintStmt(partitioned.body());
    absl::Status built = testing::CheckCBackendMatches(*func, sch.func());
    EXPECT_TRUE(built.ok()) << built;
  }
}

// A depthwise convolution with its padding inlined: under a loop annotated kSkipZeroTerms the
// sum's term select(in_bounds, x, 0) * w becomes a guarded x * w (the guard then partitions
// the kernel loops); without the annotation the select stays. Both compute the convolution.
TEST(PartitionGuardedLoopsTest, ZeroTermsAreGuardedUnderTheAnnotation) {
  absl::StatusOr<PrimFunc> func = MakeWorkload(
      "DEP", {{"N", 1}, {"H", 6}, {"W", 5}, {"C", 16}, {"K", 3}, {"stride", 1}, {"padding", 1}});
  ASSERT_TRUE(func.ok()) << func.status();
  for (bool annotate : {false, true}) {
    SCOPED_TRACE(annotate ? "annotated" : "not annotated");
    Schedule sch = Schedule::Create(*func, 0);
    ASSERT_TRUE(sch.ComputeInline(*sch.GetBlock("PadInput")).ok());
    std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("depth_conv2d_nhwc"));
    if (annotate) {
      ASSERT_TRUE(sch.Annotate(loops[0], kSkipZeroTerms, InstValue::Int(1)).ok());
    }
    EXPECT_EQ(SelectsAfterPartitioning(sch) == 0, annotate);
    absl::Status built = testing::CheckCBackendMatches(*func, sch.func());
    EXPECT_TRUE(built.ok()) << built;
  }
}

// A max-pool over rows (kernel 3, stride 2) padded with `pad_value`, its padding inlined.
PrimFunc PaddedMaxPool(float pad_value) {
  Tensor x = Placeholder({10, 16}, DataType::Float32(), "x");
  Tensor padded = Compute(
      {12, 16},
      [&](const std::vector<Var>& i) {
        Expr src = Expr(i[0]) - Expr(1);
        return Select(And(GE(src, Expr(0)), LT(src, Expr(10))), x({src, i[1]}),
                      FloatImm(DataType::Float32(), pad_value));
      },
      "padded");
  IterVar r = ReduceAxis(3, "r");
  Tensor pool = Compute(
      {5, 16},
      [&](const std::vector<Var>& i) {
        return MaxReduce(padded({Expr(i[0]) * Expr(2) + Expr(r.var), i[1]}), {r});
      },
      "pool");
  absl::StatusOr<PrimFunc> f = CreatePrimFunc("pool", {x, pool});
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

// A max over padding of the type's lowest value (or -inf): the padding taps change nothing, so
// `acc = max(acc, select(c, x, lowest))` becomes a guarded `max(acc, x)` everywhere, without
// the annotation (the select kept a pool scalar). Padding of another value keeps its select.
// Each computes the pool.
TEST(PartitionGuardedLoopsTest, MaxPoolPaddingTapsAreGuarded) {
  const float lowest = -3.40282347e+38f;
  for (float pad : {lowest, -HUGE_VALF, 0.0f}) {
    SCOPED_TRACE(pad);
    const PrimFunc func = PaddedMaxPool(pad);
    Schedule sch = Schedule::Create(func, 0);
    ASSERT_TRUE(sch.ComputeInline(*sch.GetBlock("padded")).ok());
    EXPECT_EQ(SelectsAfterPartitioning(sch) == 0, pad != 0.0f);
    absl::Status built = testing::CheckCBackendMatches(func, sch.func());
    EXPECT_TRUE(built.ok()) << built;
  }
}

TEST(PartitionGuardedLoopsTest, FunctionWithoutGuardsIsReturnedUnchanged) {
  const PrimFunc func = Gmm(4, 8, 4);
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(func);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  // The init guard (k == 0) is not a loop's whole body: nothing to partition.
  EXPECT_TRUE(PartitionGuardedLoops(*lowered).body().same_as(lowered->body()));
}

}  // namespace
}  // namespace tessera
