// InsertPanelPrefetches (codegen/panel_prefetch.cc): under a loop annotated kPrefetchNextPanel,
// the loads of a packed panel are prefetched one panel ahead along the first dimension, one
// per vector of the tile, shared out among the tiles of a panel; loads whose first index is
// a constant or not a run of tiles' panel, and local buffers, are not; loops without the
// annotation are left alone; and
// PrefetchesIntoGuard moves them inside a guard that follows them;
// InsertPrefetchesAhead (kPrefetchAhead = D): the vector loads that stream a line or more per
// iteration are prefetched D iterations ahead into L1, one per vector; loads that move less
// (broadcasts), scalar loads and local buffers are not.
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

  Stmt Make(const Expr& panel, bool annotate, const char* annotation = kPrefetchNextPanel,
            int64_t value = 1) const {
    Expr at = v * Expr(16) + l;
    Stmt update =
        BufferStore(c, c.Load({at}) + x.Load({Expr(0), k}) * w.Load({panel + v, k, l}), {at});
    Stmt lanes = For(l, Expr(16), ForKind::kVectorized, update);
    Stmt vectors = For(v, Expr(2), ForKind::kUnrolled, lanes);
    Annotations annotations;
    if (annotate) annotations[annotation] = value;
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

// The addresses prefetched under `s`, printed, in order (with the locality when `locality`
// and the call gives one: "W[..] @3").
std::vector<std::string> Prefetched(const Stmt& s, bool locality = false) {
  std::vector<std::string> loads;
  PostOrderVisitExprs(s, [&](const Expr& e) {
    const auto* call = e.as<CallNode>();
    if (call == nullptr || call->name != kPrefetchCall) return;
    std::string load = PrintExpr(call->args[0]);
    const int64_t* level = call->args.size() == 2 ? AsConstInt(call->args[1]) : nullptr;
    if (locality && level != nullptr) load += " @" + std::to_string(*level);
    loads.push_back(load);
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

// W[panel + v, k, l] streams a 64-byte line per k for each of the two vectors: iteration k asks
// L1 for the lines of iteration k + 64, first at the head of the body; X[0, k] moves 4 bytes.
TEST(PrefetchAheadTest, StreamedVectorsArePrefetchedDistanceIterationsAheadIntoL1) {
  Tile tile;
  const Expr panel = FloorDiv(tile.t, Expr(4)) * Expr(2);
  const Stmt out =
      InsertPrefetchesAhead(tile.Make(panel, /*annotate=*/true, kPrefetchAhead, /*value=*/64));
  std::vector<std::string> expected;
  for (int64_t vector : {0, 1}) {
    expected.push_back(
        PrintExpr(tile.w.Load({arith::Simplify(panel + Expr(vector)),
                               arith::Simplify(tile.k + Expr(64)), arith::Simplify(Expr(0))})) +
        " @3");
  }
  EXPECT_EQ(Prefetched(out, /*locality=*/true), expected) << PrintStmt(out);
  const auto* reduction = out.as<ForNode>()->body.as<ForNode>();
  const auto* seq = reduction->body.as<SeqStmtNode>();
  ASSERT_NE(seq, nullptr) << PrintStmt(out);
  EXPECT_EQ(seq->seq.size(), 3u) << PrintStmt(out);
  EXPECT_NE(seq->seq.front().as<EvaluateNode>(), nullptr) << PrintStmt(out);
}

TEST(PrefetchAheadTest, ShortStepsScalarLoadsLocalBuffersAndOtherLoopsAreLeftAlone) {
  Tile tile;
  const Expr panel = FloorDiv(tile.t, Expr(4)) * Expr(2);
  // No annotation, or a distance of 0: nothing.
  for (const Stmt& plain : {tile.Make(panel, /*annotate=*/false),
                            tile.Make(panel, /*annotate=*/true, kPrefetchAhead, /*value=*/0)}) {
    EXPECT_TRUE(InsertPrefetchesAhead(plain).same_as(plain)) << PrintStmt(plain);
  }
  // A vector that moves 8 bytes per k (W's rows of 2 floats): each line serves 8 iterations.
  Var k("k"), l("l");
  Buffer narrow = Buffer::Make("N", DataType::Float32(), {64, 2});
  Buffer out = Buffer::Make("O", DataType::Float32(), {2}, "local");
  Annotations ahead;
  ahead[kPrefetchAhead] = int64_t{64};
  const Stmt pairs = For(k, Expr(64), ForKind::kSerial,
                         For(l, Expr(2), ForKind::kVectorized,
                             BufferStore(out, out.Load({l}) + narrow.Load({k, l}), {l})),
                         "", ahead);
  EXPECT_TRUE(Prefetched(InsertPrefetchesAhead(pairs)).empty());
  // A scalar load striding a line per k (a column of A read down its rows), and a local buffer
  // read as vectors: no vector stream of memory.
  Buffer column = Buffer::Make("A", DataType::Float32(), {64, 16});
  Buffer local = Buffer::Make("L", DataType::Float32(), {64, 16}, "local");
  const Stmt scalar =
      For(k, Expr(64), ForKind::kSerial,
          BufferStore(out, out.Load({Expr(0)}) + column.Load({k, Expr(0)}), {Expr(0)}), "", ahead);
  EXPECT_TRUE(Prefetched(InsertPrefetchesAhead(scalar)).empty());
  const Stmt in_registers =
      For(k, Expr(64), ForKind::kSerial,
          For(l, Expr(16), ForKind::kVectorized,
              BufferStore(out, out.Load({Expr(0)}) + local.Load({k, l}), {Expr(0)})),
          "", ahead);
  EXPECT_TRUE(Prefetched(InsertPrefetchesAhead(in_registers)).empty());
}

}  // namespace
}  // namespace tessera
