// Tests of codegen/compact_buffers.cc through LowerForCodegen: a tile cache shrinks to one
// iteration's tile inside its loop, a tail-guarded one to the padded tile, and the cache of a
// predicated split of fused loops stays whole at the root.
#include "codegen/compact_buffers.h"

#include <string>

#include "codegen/lower.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "tests/codegen/test_funcs.h"

namespace tessera {
namespace {

using testing_funcs::MakeFunc;

// A tile cache written and read under one loop (what cache_write + reverse_compute_at give)
// shrinks to one iteration's tile and is allocated inside that loop, where the C compiler can
// keep it in registers. With `predicated`, the producer's rows are guarded as the tail of a
// padded tile is (7 of 8 rows, the split 4 x 2 covering them).
PrimFunc TiledCopyThroughCache(bool predicated) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {8, 8});
  Buffer b = Buffer::Make("B", DataType::Float32(), {8, 8});
  Buffer t = Buffer::Make("T", DataType::Float32(), {8, 8}, "global");
  Var io("io"), i("i"), j("j"), i2("i2"), j2("j2");
  auto block_at = [&](const std::string& name, const Buffer& out, const Buffer& in, Var li, Var lj,
                      Expr pred) {
    Var vi("v" + name + "i"), vj("v" + name + "j");
    BlockNode node;
    node.name = name;
    node.iter_vars = {IterVar{vi, Range{Expr(0), Expr(8)}, IterKind::kSpatial},
                      IterVar{vj, Range{Expr(0), Expr(8)}, IterKind::kSpatial}};
    node.reads = {BufferRegion{in, {Range{vi, Expr(1)}, Range{vj, Expr(1)}}}};
    node.writes = {BufferRegion{out, {Range{vi, Expr(1)}, Range{vj, Expr(1)}}}};
    node.body = BufferStore(out, in.Load({vi, vj}) + 1, {vi, vj});
    Stmt realize = BlockRealize({io * 2 + li, lj}, pred, MakeBlock(node));
    return For(li, Expr(2), ForKind::kSerial, For(lj, Expr(8), ForKind::kSerial, realize));
  };
  Stmt produce = block_at("T", t, a, i, j, predicated ? LT(io * 2 + i, 7) : True());
  Stmt consume = block_at("B", b, t, i2, j2, predicated ? LT(io * 2 + i2, 7) : True());
  Stmt body = For(io, Expr(4), ForKind::kParallel, SeqStmt({produce, consume}));
  return MakeFunc("tiled", {a, b}, body, {t});
}

// The allocation of T directly under the loop at the root of `lowered`, or null.
const AllocateNode* TileCacheInRootLoop(const PrimFunc& lowered) {
  const auto* io = lowered.body().as<ForNode>();
  return io == nullptr ? nullptr : io->body.as<AllocateNode>();
}

TEST(CompactBuffersTest, CompactsTileCachesIntoTheirLoop) {
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(TiledCopyThroughCache(false));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const AllocateNode* alloc = TileCacheInRootLoop(*lowered);
  ASSERT_NE(alloc, nullptr) << "T should no longer be allocated at the root";
  EXPECT_EQ(alloc->buffer.name(), "T");
  EXPECT_EQ(alloc->buffer.NumElements(), 16);  // 2 rows of 8: one iteration of io
}

TEST(CompactBuffersTest, CompactsTailGuardedTileCachesToThePaddedTile) {
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(TiledCopyThroughCache(true));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const AllocateNode* alloc = TileCacheInRootLoop(*lowered);
  ASSERT_NE(alloc, nullptr) << "a tail guard should not keep T whole at the root";
  EXPECT_EQ(alloc->buffer.NumElements(), 16);  // the padded tile; the guard clips the last one
  // Accesses are rebased to the tile: T[io * 2 + i, j] becomes T[i * 8 + j].
  PostOrderVisitStmts(lowered->body(), [&](const Stmt& st) {
    const auto* store = st.as<BufferStoreNode>();
    if (store == nullptr || store->buffer.name() != "T") return;
    PostOrderVisitExprs(store->indices[0], [&](const Expr& e) {
      const auto* v = e.as<VarNode>();
      EXPECT_TRUE(v == nullptr || v->name != "io") << PrintExpr(store->indices[0]);
    });
  });
}

// T produced by a split of the fused loops (i, j), 6 elements per iteration of io (64 = 10 x 6
// + 4, the tail guarded) or, with `perfect`, 4 (64 = 16 x 4, no guard), consumed by whole rows:
// the consumer's box of rows floordiv(io * step, 8) + [0, 2), guarded to stay inside T, holds
// elements the producer wrote in other iterations of io.
PrimFunc FusedSplitThroughCache(bool perfect) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {8, 8});
  Buffer b = Buffer::Make("B", DataType::Float32(), {8, 8});
  Buffer t = Buffer::Make("T", DataType::Float32(), {8, 8}, "global");
  Var io("io"), f("f"), r("r"), c("c");
  auto block = [&](const std::string& name, const Buffer& out, const Buffer& in) {
    Var vi("v" + name + "i"), vj("v" + name + "j");
    BlockNode node;
    node.name = name;
    node.iter_vars = {IterVar{vi, Range{Expr(0), Expr(8)}, IterKind::kSpatial},
                      IterVar{vj, Range{Expr(0), Expr(8)}, IterKind::kSpatial}};
    node.reads = {BufferRegion{in, {Range{vi, Expr(1)}, Range{vj, Expr(1)}}}};
    node.writes = {BufferRegion{out, {Range{vi, Expr(1)}, Range{vj, Expr(1)}}}};
    node.body = BufferStore(out, in.Load({vi, vj}) + 1, {vi, vj});
    return MakeBlock(node);
  };
  const int64_t step = perfect ? 4 : 6;
  Expr fused = io * step + f;
  Stmt produce = For(f, Expr(step), ForKind::kSerial,
                     BlockRealize({FloorDiv(fused, 8), FloorMod(fused, 8)},
                                  perfect ? True() : LT(fused, 64), block("T", t, a)));
  Expr row = FloorDiv(io * step, 8) + r;
  Stmt consume =
      For(r, Expr(2), ForKind::kSerial,
          For(c, Expr(8), ForKind::kSerial, BlockRealize({row, c}, LT(row, 8), block("B", b, t))));
  Stmt body = For(io, Expr((64 + step - 1) / step), ForKind::kSerial, SeqStmt({produce, consume}));
  return MakeFunc("fused_split", {a, b}, body, {t});
}

TEST(CompactBuffersTest, KeepsCachesOfPredicatedFusedSplitsWhole) {
  for (bool perfect : {false, true}) {
    absl::StatusOr<PrimFunc> lowered = LowerForCodegen(FusedSplitThroughCache(perfect));
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    const auto* alloc = lowered->body().as<AllocateNode>();
    ASSERT_NE(alloc, nullptr) << "T should stay at the root (perfect: " << perfect << ")";
    EXPECT_EQ(alloc->buffer.name(), "T");
    EXPECT_EQ(alloc->buffer.NumElements(), 64);
  }
}

// The tail of an imperfect split of a fused loop wraps onto elements earlier iterations own:
// with 3 x 3 iterations over 8 elements, iteration 8 binds element floormod(8, 8) = 0. The
// producer is guarded (o * 3 + p < 8), the consumer is not, so a compact one-element T would
// hand the consumer at iteration 8 what iteration 7 wrote. T stays whole.
TEST(CompactBuffersTest, KeepsCachesOfWrappingFusedSplitsWhole) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {8});
  Buffer b = Buffer::Make("B", DataType::Float32(), {8});
  Buffer t = Buffer::Make("T", DataType::Float32(), {8}, "global");
  Var o("o"), p("p");
  Expr fused = o * 3 + p;
  auto realize = [&](const std::string& name, const Buffer& out, const Buffer& in, Expr pred) {
    Var v("v" + name);
    BlockNode node;
    node.name = name;
    node.iter_vars = {IterVar{v, Range{Expr(0), Expr(8)}, IterKind::kSpatial}};
    node.reads = {BufferRegion{in, {Range{v, Expr(1)}}}};
    node.writes = {BufferRegion{out, {Range{v, Expr(1)}}}};
    node.body = BufferStore(out, in.Load({v}) + 1, {v});
    return BlockRealize({FloorMod(fused, 8)}, pred, MakeBlock(node));
  };
  Stmt body = For(o, Expr(3), ForKind::kSerial,
                  For(p, Expr(3), ForKind::kSerial,
                      SeqStmt({realize("T", t, a, LT(fused, 8)), realize("B", b, t, True())})));
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(MakeFunc("wrapping", {a, b}, body, {t}));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const auto* alloc = lowered->body().as<AllocateNode>();
  ASSERT_NE(alloc, nullptr) << "T should stay at the root";
  EXPECT_EQ(alloc->buffer.name(), "T");
  EXPECT_EQ(alloc->buffer.NumElements(), 8);
}

}  // namespace
}  // namespace tessera
