// CacheRead and CacheWrite: outputs match the unscheduled program (interpreter, and the C backend
// for some), traces replay, the IR has the expected shape, and invalid uses fail with an error
// that leaves the schedule unchanged.
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "schedule/schedule.h"
#include "tests/schedule/primitive/cache_testing.h"

namespace tessera {
namespace {

using cache_testing::BlockNamed;
using cache_testing::Elementwise;
using cache_testing::ExpectCBackendMatches;
using cache_testing::ExpectCorrect;
using cache_testing::ExpectRejected;
using cache_testing::FuncOf;
using cache_testing::Gmm;
using cache_testing::ReadNames;
using cache_testing::RootAlloc;
using cache_testing::Sfm;
using cache_testing::SmallC2d;

// ---- CacheRead --------------------------------------------------------------------------------

TEST(CacheReadTest, GmmInputsIntoSharedBuildsAndRuns) {
  PrimFunc func = Gmm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  absl::StatusOr<BlockRV> a = sch.CacheRead(c, 1, "shared");
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<BlockRV> b = sch.CacheRead(c, 2, "shared");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*sch.BlockName(*a), "A_shared");
  EXPECT_EQ(*sch.BlockName(*b), "B_shared");
  EXPECT_EQ(AllBlockNames(sch.func()),
            (std::vector<std::string>{"root", "A_shared", "B_shared", "C"}));
  EXPECT_EQ(ReadNames(BlockNamed(sch, "C")),
            (std::vector<std::string>{"C", "A_shared", "B_shared"}));
  EXPECT_EQ(RootAlloc(sch.func(), "A_shared").scope(), "shared");
  EXPECT_NE(sch.trace().ToJson().find("[\"CacheRead\",[\"b0\",[]],[1,\"shared\"],[\"b1\"]]"),
            std::string::npos)
      << sch.trace().ToJson();
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(CacheReadTest, AfterSplitKeepsMeaning) {
  PrimFunc func = Gmm(16, 8, 12);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  ASSERT_TRUE(sch.Split(loops[1], {InstValue(), InstValue::Int(4)}).ok());
  ASSERT_TRUE(sch.Split(loops[3], {InstValue::Int(5), InstValue::Int(3)}).ok());  // 15 > 12
  ASSERT_TRUE(sch.CacheRead(c, 1, "local", {c}).ok());
  ExpectCorrect(sch, func);
}

// The MultiLevelTiling pattern: tile, cache the inputs in shared memory at the outer reduction
// loop, and write the output through a local cache at the tile loop.
TEST(CacheReadTest, ComputedAtTileLoopBuildsAndRuns) {
  PrimFunc func = Gmm(16, 16, 16);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> l = *sch.GetLoops(c);
  std::vector<LoopRV> i = *sch.Split(l[1], {InstValue::Int(4), InstValue::Int(4)});
  std::vector<LoopRV> j = *sch.Split(l[2], {InstValue::Int(2), InstValue::Int(8)});
  std::vector<LoopRV> k = *sch.Split(l[3], {InstValue::Int(4), InstValue::Int(4)});
  ASSERT_TRUE(sch.Reorder({i[0], j[0], k[0], i[1], j[1], k[1]}).ok());
  absl::StatusOr<BlockRV> a = sch.CacheRead(c, 1, "shared", {c});
  ASSERT_TRUE(a.ok()) << a.status();
  absl::Status at = sch.ComputeAt(*a, k[0], /*preserve_unit_loops=*/true);
  ASSERT_TRUE(at.ok()) << at << "\n" << PrintFunc(sch.func());
  absl::StatusOr<BlockRV> b = sch.CacheRead(c, 2, "shared", {c});
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(sch.ComputeAt(*b, k[0], true).ok());
  absl::StatusOr<BlockRV> w = sch.CacheWrite(c, 0, "local");
  ASSERT_TRUE(w.ok()) << w.status();
  absl::Status rat = sch.ReverseComputeAt(*w, j[0], true);
  ASSERT_TRUE(rat.ok()) << rat << "\n" << PrintFunc(sch.func());
  // The copies now sit inside the tile loops (b, i_0, j_0, k_0), over a 1x4x4 tile.
  EXPECT_EQ(LoopsOnPath(*FindBlockPath(sch.func(), "A_shared")).size(), 4u + 3u)
      << PrintFunc(sch.func());
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(CacheReadTest, C2dPaddedInputGoesAfterItsProducer) {
  PrimFunc func = SmallC2d();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV conv = *sch.GetBlock("conv2d_nhwc");
  absl::StatusOr<BlockRV> cache = sch.CacheRead(conv, 1, "shared");
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_EQ(AllBlockNames(sch.func()),
            (std::vector<std::string>{"root", "PadInput", "PadInput_shared", "conv2d_nhwc"}));
  EXPECT_EQ(ReadNames(BlockNamed(sch, "conv2d_nhwc"))[1], "PadInput_shared");
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(CacheReadTest, DefaultConsumersAreAllReaders) {
  PrimFunc func = Sfm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV max = *sch.GetBlock("T_softmax_maxelem");
  ASSERT_TRUE(sch.CacheRead(max, 1, "shared.dyn").ok());
  EXPECT_EQ(ReadNames(BlockNamed(sch, "T_softmax_maxelem"))[1], "A_shared_dyn");
  EXPECT_EQ(ReadNames(BlockNamed(sch, "T_softmax_exp"))[0], "A_shared_dyn");
  ExpectCorrect(sch, func);
}

TEST(CacheReadTest, GivenConsumersOnly) {
  PrimFunc func = Sfm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV max = *sch.GetBlock("T_softmax_maxelem");
  ASSERT_TRUE(sch.CacheRead(max, 1, "local", {max}).ok());
  ASSERT_TRUE(sch.CacheRead(max, 1, "local").ok());  // reads A_local now: a second-level cache
  EXPECT_EQ(ReadNames(BlockNamed(sch, "T_softmax_maxelem"))[1], "A_local_local");
  EXPECT_EQ(ReadNames(BlockNamed(sch, "T_softmax_exp"))[0], "A");
  ExpectCorrect(sch, func);
}

TEST(CacheReadTest, RejectsBadIndexScopeAndConsumers) {
  PrimFunc func = Sfm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV max = *sch.GetBlock("T_softmax_maxelem");
  BlockRV norm = *sch.GetBlock("T_softmax_norm");
  BlockRV root = *sch.GetBlock("root");
  PrimFunc before = sch.func();
  size_t n = sch.trace().size();
  ExpectRejected(sch.CacheRead(max, 2, "shared").status(),
                 "cache_read: read_buffer_index 2 is out of range for block T_softmax_maxelem, "
                 "which reads 2 buffers",
                 sch, before, n);
  ExpectRejected(sch.CacheRead(max, -1, "shared").status(), "out of range", sch, before, n);
  ExpectRejected(sch.CacheRead(max, 1, "texture").status(),
                 "cache_read: invalid storage scope 'texture'", sch, before, n);
  ExpectRejected(sch.CacheRead(max, 1, "shared.").status(), "invalid storage scope", sch, before,
                 n);
  // maxelem reads its own output.
  ExpectRejected(sch.CacheRead(max, 0, "local").status(),
                 "cache_read: block T_softmax_maxelem reads and writes buffer T_softmax_maxelem",
                 sch, before, n);
  ExpectRejected(sch.CacheRead(max, 1, "local", {norm}).status(),
                 "cache_read: consumer block T_softmax_norm does not read buffer A", sch, before,
                 n);
  ExpectRejected(sch.CacheRead(root, 0, "local").status(), "cache_read: cannot apply to the root",
                 sch, before, n);
}

TEST(CacheReadTest, RejectsWriterBetweenCopyAndConsumer) {
  // R1 reads A, W updates A in place, R2 reads A: one cache of A cannot serve R1 and R2.
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(4)});
  Buffer b = Buffer::Make("B", DataType::Float32(), {Expr(4)});
  Buffer c = Buffer::Make("C", DataType::Float32(), {Expr(4)});
  PrimFunc func = FuncOf(
      {a, b, c},
      {Elementwise("R1", b, [&](const Var& v) { return a.Load({v}); }),
       Elementwise("W", a, [&](const Var& v) { return a.Load({v}) + MakeConst(a.dtype(), 1); }),
       Elementwise("R2", c, [&](const Var& v) { return a.Load({v}) + b.Load({v}); })});
  Schedule sch = Schedule::Create(func, 1);
  BlockRV r1 = *sch.GetBlock("R1");
  BlockRV r2 = *sch.GetBlock("R2");
  ExpectRejected(sch.CacheRead(r1, 0, "local", {r2}).status(),
                 "cache_read: block W writes buffer A between the cache copy (placed before block "
                 "R1) and a consumer",
                 sch, func, sch.trace().size());
  // Each reader alone is fine.
  ASSERT_TRUE(sch.CacheRead(r1, 0, "local", {r1}).ok());
  ASSERT_TRUE(sch.CacheRead(r2, 0, "local", {r2}).ok());
  ExpectCorrect(sch, func);
}

TEST(CacheReadTest, NestedScopeCopiesTheScopeRegion) {
  // for i0 in range(2): block O (reads A[vo*4 : vo*4+4]) { for i1 in range(4): block I }:
  // the cache lives in O and copies only O's tile of A.
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(8)});
  Buffer b = Buffer::Make("B", DataType::Float32(), {Expr(8)});
  Var i0("i0"), i1("i1"), vo("vo"), vi("vi");
  BlockNode inner;
  inner.name = "I";
  inner.iter_vars = {IterVar{vi, Range{Expr(0), Expr(8)}, IterKind::kSpatial}};
  inner.reads = {BufferRegion{a, {Range{vi, Expr(1)}}}};
  inner.writes = {BufferRegion{b, {Range{vi, Expr(1)}}}};
  inner.body = BufferStore(b, a.Load({vi}) * MakeConst(a.dtype(), 2), {vi});
  BlockNode outer;
  outer.name = "O";
  outer.iter_vars = {IterVar{vo, Range{Expr(0), Expr(2)}, IterKind::kSpatial}};
  outer.reads = {BufferRegion{a, {Range{vo * Expr(4), Expr(4)}}}};
  outer.writes = {BufferRegion{b, {Range{vo * Expr(4), Expr(4)}}}};
  outer.body = For(i1, Expr(4), ForKind::kSerial,
                   BlockRealize({vo * Expr(4) + i1}, True(), MakeBlock(inner)));
  PrimFunc func = FuncOf(
      {a, b}, {For(i0, Expr(2), ForKind::kSerial, BlockRealize({i0}, True(), MakeBlock(outer)))});
  Schedule sch = Schedule::Create(func, 1);
  absl::StatusOr<BlockRV> cache = sch.CacheRead(*sch.GetBlock("I"), 0, "local");
  ASSERT_TRUE(cache.ok()) << cache.status();
  Block o = BlockNamed(sch, "O");
  ASSERT_EQ(o->alloc_buffers.size(), 1u);
  EXPECT_EQ(o->alloc_buffers[0].name(), "A_local");
  std::vector<Stmt> loops = LoopsOnPath(*FindBlockPath(sch.func(), "A_local"));
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(*AsConstInt(loops[0].as<ForNode>()->extent), 4);
  ExpectCorrect(sch, func);
}

TEST(CacheReadTest, NestedScopeCopyStaysInsideTheBuffer) {
  // Block O declares reads that over-cover A (as a guarded access's relaxed region can):
  // a constant one, A[-2:10], and a symbolic one, A[vo*4 - 2 : vo*4 + 6]. The copy is
  // clipped to A's extent, or guarded where its bounds are symbolic.
  for (bool symbolic : {false, true}) {
    SCOPED_TRACE(symbolic ? "symbolic region" : "constant region");
    Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(8)});
    Buffer b = Buffer::Make("B", DataType::Float32(), {Expr(8)});
    Var i0("i0"), i1("i1"), vo("vo"), vi("vi");
    BlockNode inner;
    inner.name = "I";
    inner.iter_vars = {IterVar{vi, Range{Expr(0), Expr(8)}, IterKind::kSpatial}};
    inner.reads = {BufferRegion{a, {Range{vi, Expr(1)}}}};
    inner.writes = {BufferRegion{b, {Range{vi, Expr(1)}}}};
    inner.body = BufferStore(b, a.Load({vi}) + MakeConst(a.dtype(), 1), {vi});
    BlockNode outer;
    outer.name = "O";
    outer.iter_vars = {IterVar{vo, Range{Expr(0), Expr(2)}, IterKind::kSpatial}};
    outer.reads = {BufferRegion{
        a, {symbolic ? Range{vo * Expr(4) - Expr(2), Expr(8)} : Range{Expr(-2), Expr(12)}}}};
    outer.writes = {BufferRegion{b, {Range{vo * Expr(4), Expr(4)}}}};
    outer.body = For(i1, Expr(4), ForKind::kSerial,
                     BlockRealize({vo * Expr(4) + i1}, True(), MakeBlock(inner)));
    PrimFunc func = FuncOf(
        {a, b}, {For(i0, Expr(2), ForKind::kSerial, BlockRealize({i0}, True(), MakeBlock(outer)))});
    Schedule sch = Schedule::Create(func, 1);
    absl::StatusOr<BlockRV> cache = sch.CacheRead(*sch.GetBlock("I"), 0, "local");
    ASSERT_TRUE(cache.ok()) << cache.status();
    StmtPath path = *FindBlockPath(sch.func(), "A_local");
    std::vector<Stmt> loops = LoopsOnPath(path);
    ASSERT_EQ(loops.size(), 1u);
    const Expr& predicate = path.back().as<BlockRealizeNode>()->predicate;
    EXPECT_EQ(*AsConstInt(loops[0].as<ForNode>()->extent), 8);
    EXPECT_EQ(IsConstInt(predicate, 1), !symbolic) << PrintFunc(sch.func());
    ExpectCorrect(sch, func);
    ExpectCBackendMatches(func, sch.func());
  }
}

TEST(CacheReadTest, BlockizedPaddingCopiesOnlyTheInput) {
  // Regression: the blockized padding block reads inputs[v_i1_o - 3, ...] guarded by a select;
  // its cache used to copy rows -3..18 of a 16-row input.
  PrimFunc func = *MakeWorkload("C2D", {{"H", 16}, {"W", 16}, {"CI", 3}, {"CO", 16}});
  Schedule sch = Schedule::Create(func, 1);
  BlockRV pad = *sch.GetBlock("PadInput");
  std::vector<LoopRV> loops = *sch.GetLoops(pad);
  ASSERT_TRUE(sch.Blockize(loops[2], /*preserve_unit_iters=*/true).ok());
  absl::StatusOr<BlockRV> cache = sch.CacheRead(pad, 0, "global");
  ASSERT_TRUE(cache.ok()) << cache.status();
  StmtPath path = *FindBlockPath(sch.func(), "inputs_global");
  const auto* copy = path.back().as<BlockRealizeNode>();
  const Buffer& input = copy->block->reads[0].buffer;
  std::vector<Stmt> copy_loops = LoopsOnPath(path);
  ASSERT_EQ(copy_loops.size(), 4u);  // ax0..ax3 inside PadInput_o
  for (size_t d = 0; d < 4; ++d) {
    EXPECT_LE(*AsConstInt(copy_loops[d].as<ForNode>()->extent), *AsConstInt(input.shape()[d]))
        << PrintFunc(sch.func());
  }
  // The row index v_i1_o + ax1 - 3 is symbolic: a predicate keeps it inside [0, 16).
  EXPECT_FALSE(IsConstInt(copy->predicate, 1)) << PrintFunc(sch.func());
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

// ---- CacheWrite -------------------------------------------------------------------------------

TEST(CacheWriteTest, GmmOutputThroughLocalBuildsAndRuns) {
  PrimFunc func = Gmm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  absl::StatusOr<BlockRV> w = sch.CacheWrite(c, 0, "local");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(*sch.BlockName(*w), "C_local");
  EXPECT_EQ(AllBlockNames(sch.func()), (std::vector<std::string>{"root", "C", "C_local"}));
  Block cb = BlockNamed(sch, "C");
  EXPECT_EQ(cb->writes[0].buffer.name(), "C_local");
  EXPECT_EQ(ReadNames(cb)[0], "C_local");
  EXPECT_TRUE(cb->init.defined());
  EXPECT_EQ(ReadNames(BlockNamed(sch, "C_local")), (std::vector<std::string>{"C_local"}));
  EXPECT_EQ(BlockNamed(sch, "C_local")->writes[0].buffer.name(), "C");
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(CacheWriteTest, AfterSplitWithCachedInputs) {
  PrimFunc func = Gmm(12, 8, 8);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  ASSERT_TRUE(sch.Split(loops[1], {InstValue(), InstValue::Int(5)}).ok());
  ASSERT_TRUE(sch.CacheRead(c, 1, "shared").ok());
  ASSERT_TRUE(sch.CacheWrite(c, 0, "local").ok());
  ExpectCorrect(sch, func);
}

TEST(CacheWriteTest, ConsumersReadTheCache) {
  PrimFunc func = Sfm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV exp = *sch.GetBlock("T_softmax_exp");
  BlockRV expsum = *sch.GetBlock("T_softmax_expsum");
  ASSERT_TRUE(sch.CacheWrite(exp, 0, "local", {expsum}).ok());
  EXPECT_EQ(ReadNames(BlockNamed(sch, "T_softmax_expsum"))[1], "T_softmax_exp_local");
  EXPECT_EQ(ReadNames(BlockNamed(sch, "T_softmax_norm"))[0], "T_softmax_exp");
  EXPECT_EQ(AllBlockNames(sch.func())[3], "T_softmax_exp_local");
  ExpectCorrect(sch, func);
}

TEST(CacheWriteTest, RejectsBadUses) {
  PrimFunc func = Sfm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV max = *sch.GetBlock("T_softmax_maxelem");
  BlockRV exp = *sch.GetBlock("T_softmax_exp");
  PrimFunc before = sch.func();
  size_t n = sch.trace().size();
  ExpectRejected(sch.CacheWrite(exp, 1, "local").status(),
                 "cache_write: write_buffer_index 1 is out of range for block T_softmax_exp, which "
                 "writes 1 buffers",
                 sch, before, n);
  ExpectRejected(sch.CacheWrite(exp, 0, "register").status(),
                 "cache_write: invalid storage scope 'register'", sch, before, n);
  ExpectRejected(sch.CacheWrite(exp, 0, "local", {max}).status(),
                 "cache_write: consumer block T_softmax_maxelem does not come after block "
                 "T_softmax_exp",
                 sch, before, n);
}

TEST(CacheWriteTest, RejectsUpdateWithoutInit) {
  PrimFunc func = Gmm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  absl::StatusOr<BlockRV> init = sch.DecomposeReduction(c, loops[3]);
  ASSERT_TRUE(init.ok()) << init.status();
  PrimFunc before = sch.func();
  size_t n = sch.trace().size();
  ExpectRejected(sch.CacheWrite(c, 0, "local").status(),
                 "cache_write: block C reads buffer C before writing it and has no init", sch,
                 before, n);
}

}  // namespace
}  // namespace tessera
