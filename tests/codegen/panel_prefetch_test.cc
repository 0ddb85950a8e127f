// InsertPanelPrefetches (codegen/panel_prefetch.cc): under a loop annotated kPrefetchNextPanel,
// the loads of a packed panel are prefetched one panel ahead along the first dimension, one
// per vector of the tile, shared out among the tiles of a panel; loads whose first index is
// a constant or not a run of tiles' panel, and local buffers, are not; loops without the
// annotation are left alone; and
// PrefetchesIntoGuard moves them inside a guard that follows them.
#include "codegen/panel_prefetch.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/arith/simplify.h"
#include "ir/functor.h"
#include "ir/loop_annotations.h"
#include "ir/printer.h"

namespace tessera {
namespace {

// for t in parallel(8):
//   for k in range(8) (annotated when `annotate`):
//     for v in unroll(2):
//       for l in vectorized(16):
//         C[v * 16 + l] += X[0, k] * W[panel(t) + v, k, l]
struct Tile {
  Var t{"t"}, k{"k"}, v{"v"}, l{"l"};
  Buffer w = Buffer::Make("W", DataType::Float32(), {8, 8, 16});
  Buffer x = Buffer::Make("X", DataType::Float32(), {1, 8});
  Buffer c = Buffer::Make("C", DataType::Float32(), {32}, "local");

  Stmt Make(const Expr& panel, bool annotate) const {
    Expr at = v * Expr(16) + l;
    Stmt update =
        BufferStore(c, c.Load({at}) + x.Load({Expr(0), k}) * w.Load({panel + v, k, l}), {at});
    Stmt lanes = For(l, Expr(16), ForKind::kVectorized, update);
    Stmt vectors = For(v, Expr(2), ForKind::kUnrolled, lanes);
    Annotations annotations;
    if (annotate) annotations[kPrefetchNextPanel] = int64_t{1};
    Stmt reduction = For(k, Expr(8), ForKind::kSerial, vectors, "", annotations);
    return For(t, Expr(8), ForKind::kParallel, reduction);
  }

  // The loads a prefetch of the panel `step` vectors after `panel` reads, printed: W[panel +
  // step + v, k, 0] for each of the tile's 2 vectors.
  std::vector<std::string> NextPanel(const Expr& panel, int64_t step) const {
    std::vector<std::string> loads;
    for (int64_t vector : {0, 1}) {
      loads.push_back(PrintExpr(
          w.Load({arith::Simplify(panel + Expr(vector + step)), k, arith::Simplify(Expr(0))})));
    }
    return loads;
  }
};

// The addresses prefetched under `s`, printed, in order.
std::vector<std::string> Prefetched(const Stmt& s) {
  std::vector<std::string> loads;
  PostOrderVisitExprs(s, [&](const Expr& e) {
    const auto* call = e.as<CallNode>();
    if (call != nullptr && call->name == kPrefetchCall) loads.push_back(PrintExpr(call->args[0]));
  });
  return loads;
}

TEST(PanelPrefetchTest, TheTilesOfAPanelShareOutTheNextPanelOneLinePerVector) {
  Tile tile;
  // Four tiles per panel of two vectors: panel(t) = floordiv(t, 4) * 2.
  const Expr panel = FloorDiv(tile.t, Expr(4)) * Expr(2);
  const Stmt out = InsertPanelPrefetches(tile.Make(panel, /*annotate=*/true));
  EXPECT_EQ(Prefetched(out), tile.NextPanel(panel, 2)) << PrintStmt(out);
  // Iteration k of tile t fetches when k = t (mod 4): the next panel once per panel.
  const auto* reduction = out.as<ForNode>()->body.as<ForNode>();
  const auto* seq = reduction->body.as<SeqStmtNode>();
  ASSERT_NE(seq, nullptr) << PrintStmt(out);
  const auto* share = seq->seq.front().as<IfThenElseNode>();
  ASSERT_NE(share, nullptr) << PrintStmt(out);
  EXPECT_EQ(PrintExpr(share->condition),
            PrintExpr(EQ(FloorMod(tile.k, Expr(4)), FloorMod(tile.t, Expr(4)))));
}

// A panel two tiles wide (tile t reads vectors floordiv(t, 4) * 4 + floormod(t, 2) * 2 + v):
// the next panel is 4 vectors on, not the 2 of the tile beside.
TEST(PanelPrefetchTest, ThePanelStepCoversTheTilesSideBySide) {
  Tile tile;
  const Expr panel = FloorDiv(tile.t, Expr(4)) * Expr(4) + FloorMod(tile.t, Expr(2)) * Expr(2);
  const Stmt out = InsertPanelPrefetches(tile.Make(panel, /*annotate=*/true));
  EXPECT_EQ(Prefetched(out), tile.NextPanel(panel, 4)) << PrintStmt(out);
}

TEST(PanelPrefetchTest, ConstantFirstIndicesLocalBuffersAndPlainLoopsAreLeftAlone) {
  Tile tile;
  const Stmt plain = tile.Make(FloorDiv(tile.t, Expr(4)) * Expr(2), /*annotate=*/false);
  EXPECT_TRUE(InsertPanelPrefetches(plain).same_as(plain));
  // W's first index a constant too: nothing reads a panel the tile loop picks.
  const Stmt fixed = InsertPanelPrefetches(tile.Make(Expr(0), /*annotate=*/true));
  EXPECT_TRUE(Prefetched(fixed).empty()) << PrintStmt(fixed);
  // Panels that the tiles cycle through (channel blocks innermost) or that no two tiles share
  // stay cached or are not waited for by a run of tiles: left alone.
  for (const Expr& panel : {FloorMod(tile.t, Expr(4)) * Expr(2), tile.t * Expr(2)}) {
    const Stmt cycled = InsertPanelPrefetches(tile.Make(panel, /*annotate=*/true));
    EXPECT_TRUE(Prefetched(cycled).empty()) << PrintStmt(cycled);
  }
}

TEST(PanelPrefetchTest, PrefetchesMoveInsideTheGuardThatFollowsThem) {
  Tile tile;
  const Stmt fetch = Evaluate(
      CallExtern(DataType::Int32(), kPrefetchCall, {tile.w.Load({Expr(1), tile.k, Expr(0)})}));
  const Stmt work = BufferStore(tile.c, tile.x.Load({Expr(0), tile.k}), {Expr(0)});
  const Expr inside = LT(tile.t, Expr(4));
  const Stmt moved = PrefetchesIntoGuard(SeqStmt({fetch, IfThenElse(inside, work)}));
  const auto* guard = moved.as<IfThenElseNode>();
  ASSERT_NE(guard, nullptr) << PrintStmt(moved);
  EXPECT_EQ(Prefetched(guard->then_case).size(), 1u);
  // Anything else before the guard, or a guard with an else, stays.
  const Stmt other = SeqStmt({work, IfThenElse(inside, work)});
  EXPECT_TRUE(PrefetchesIntoGuard(other).same_as(other));
  const Stmt with_else = SeqStmt({fetch, IfThenElse(inside, work, work)});
  EXPECT_TRUE(PrefetchesIntoGuard(with_else).same_as(with_else));
}

}  // namespace
}  // namespace tessera
