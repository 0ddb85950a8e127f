// CacheRead, CacheWrite, ReIndex, SetScope and StorageAlign: outputs match the unscheduled
// program (interpreter, and the C backend for some), traces replay, the IR has the expected
// shape, and invalid uses fail with an error that leaves the schedule unchanged.
#include <functional>

#include "codegen/lower.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/arith/int_set.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/verify.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"
#include "worker/builder.h"
#include "worker/runner.h"

namespace tessera {
namespace {

using testing::CheckReplay;
using testing::CheckSameOutputs;

PrimFunc Gmm(int64_t m = 16, int64_t n = 8, int64_t k = 8) {
  return *MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}});
}

PrimFunc SmallC2d() {
  return *MakeWorkload("C2D", {{"N", 1},
                               {"H", 8},
                               {"W", 8},
                               {"CI", 3},
                               {"CO", 4},
                               {"K", 3},
                               {"stride", 1},
                               {"padding", 1}});
}

PrimFunc Sfm() { return *MakeWorkload("SFM", {{"M", 8}, {"N", 16}}); }

void ExpectCorrect(const Schedule& sch, const PrimFunc& original) {
  absl::Status s = testing::CheckScheduleCorrect(sch, original);
  EXPECT_TRUE(s.ok()) << s;
}

// Builds with the C backend, runs once, and compares with the interpreter on `original`.
void ExpectCBackendMatches(const PrimFunc& original, const PrimFunc& scheduled) {
  absl::Status s = testing::CheckCBackendMatches(original, scheduled);
  EXPECT_TRUE(s.ok()) << s;
}

Block BlockNamed(const Schedule& sch, const std::string& name) {
  absl::StatusOr<StmtPath> path = FindBlockPath(sch.func(), name);
  EXPECT_TRUE(path.ok()) << path.status();
  return path->back().as<BlockRealizeNode>()->block;
}

std::vector<std::string> ReadNames(const Block& block) {
  std::vector<std::string> names;
  for (const BufferRegion& r : block->reads) names.push_back(r.buffer.name());
  return names;
}

Buffer RootAlloc(const PrimFunc& f, const std::string& name) {
  for (const Buffer& b : f.root_block()->alloc_buffers) {
    if (b.name() == name) return b;
  }
  ADD_FAILURE() << "no root allocation " << name;
  return Buffer();
}

// Expects `status` to be kInvalidArgument containing `text`, with the schedule untouched.
void ExpectRejected(const absl::Status& status, const std::string& text, const Schedule& sch,
                    const PrimFunc& before, size_t trace_size) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(std::string(status.message()).find(text), std::string::npos) << status;
  EXPECT_TRUE(sch.func().same_as(before));
  EXPECT_EQ(sch.trace().size(), trace_size);
}

// for i in range(4): block `name` storing value(v) into out[v], its regions detected.
Stmt Elementwise(const std::string& name, const Buffer& out,
                 const std::function<Expr(const Var&)>& value) {
  Var i("i"), v("v");
  BlockNode node;
  node.name = name;
  node.iter_vars = {IterVar{v, Range{Expr(0), Expr(4)}, IterKind::kSpatial}};
  node.body = BufferStore(out, value(v), {v});
  arith::BufferAccessRegions regions = arith::DetectBlockAccessRegions(MakeBlock(node));
  node.reads = regions.reads;
  node.writes = regions.writes;
  return For(i, Expr(4), ForKind::kSerial, BlockRealize({i}, True(), MakeBlock(node)));
}

PrimFunc FuncOf(std::vector<Buffer> params, std::vector<Stmt> nests) {
  BlockNode root;
  root.name = "root";
  root.body = SeqStmt(std::move(nests));
  PrimFunc func =
      PrimFunc::Make("main", std::move(params), BlockRealize({}, True(), MakeBlock(root)));
  absl::Status wf = VerifyWellFormed(func);
  EXPECT_TRUE(wf.ok()) << wf;
  return func;
}

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

// ---- ReIndex ----------------------------------------------------------------------------------

TEST(ReIndexTest, GmmReadABuildsAndRuns) {
  PrimFunc func = Gmm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  absl::StatusOr<BlockRV> r = sch.ReIndex(c, 1, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*sch.BlockName(*r), "A_reindex");
  EXPECT_EQ(AllBlockNames(sch.func()), (std::vector<std::string>{"root", "A_reindex", "C"}));
  std::string text = PrintFunc(sch.func());
  EXPECT_NE(text.find("A_reindex[v_b, v_i, v_k]"), std::string::npos) << text;
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(ReIndexTest, GmmWriteC) {
  PrimFunc func = Gmm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  absl::StatusOr<BlockRV> r = sch.ReIndex(c, 0, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(AllBlockNames(sch.func()), (std::vector<std::string>{"root", "C", "C_reindex"}));
  Block cb = BlockNamed(sch, "C");
  EXPECT_EQ(cb->writes[0].buffer.name(), "C_reindex");
  EXPECT_EQ(ReadNames(cb)[0], "C_reindex");
  ExpectCorrect(sch, func);
}

TEST(ReIndexTest, PermutedWeightFollowsIterationOrder) {
  // weight[v_rh, v_rw, v_rc, v_co]: the reindexed buffer follows the block's iteration order
  // (co, rh, rw, rc).
  PrimFunc func = SmallC2d();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV conv = *sch.GetBlock("conv2d_nhwc");
  ASSERT_TRUE(sch.ReIndex(conv, 2, 0).ok());
  Buffer w = RootAlloc(sch.func(), "weight_reindex");
  ASSERT_TRUE(w.defined());
  std::vector<int64_t> shape;
  for (const Expr& e : w.shape()) shape.push_back(*AsConstInt(e));
  EXPECT_EQ(shape, (std::vector<int64_t>{4, 3, 3, 3}));
  ExpectCorrect(sch, func);
}

TEST(ReIndexTest, RejectsBadUses) {
  PrimFunc func = SmallC2d();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV pad = *sch.GetBlock("PadInput");
  BlockRV conv = *sch.GetBlock("conv2d_nhwc");
  PrimFunc before = sch.func();
  size_t n = sch.trace().size();
  // The padding block reads its input under a guard, out of bounds elsewhere.
  ExpectRejected(sch.ReIndex(pad, 0, 0).status(), "may fall outside the buffer", sch, before, n);
  ExpectRejected(sch.ReIndex(conv, 0, 2).status(),
                 "reindex: buffer_index_type 2 is neither 0 (read) nor 1 (write)", sch, before, n);
  ExpectRejected(sch.ReIndex(conv, 3, 0).status(),
                 "reindex: buffer_index 3 is out of range for block conv2d_nhwc, which reads 3 "
                 "buffers",
                 sch, before, n);
  ExpectRejected(sch.ReIndex(conv, 0, 0).status(),
                 "reindex: block conv2d_nhwc also writes buffer conv2d_nhwc", sch, before, n);
}

TEST(ReIndexTest, RejectsDifferentIndices) {
  // C[i, j] = A[i, j] + A[j, i]: two accesses of A at different indices.
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(4), Expr(4)});
  Buffer c = Buffer::Make("C", DataType::Float32(), {Expr(4), Expr(4)});
  Var i("i"), j("j"), vi("v_i"), vj("v_j");
  BlockNode node;
  node.name = "C";
  node.iter_vars = {IterVar{vi, Range{Expr(0), Expr(4)}, IterKind::kSpatial},
                    IterVar{vj, Range{Expr(0), Expr(4)}, IterKind::kSpatial}};
  node.reads = {BufferRegion{a, {Range{Expr(0), Expr(4)}, Range{Expr(0), Expr(4)}}}};
  node.writes = {BufferRegion{c, {Range{vi, Expr(1)}, Range{vj, Expr(1)}}}};
  node.body = BufferStore(c, a.Load({vi, vj}) + a.Load({vj, vi}), {vi, vj});
  Stmt nest = For(i, Expr(4), ForKind::kSerial,
                  For(j, Expr(4), ForKind::kSerial, BlockRealize({i, j}, True(), MakeBlock(node))));
  BlockNode root;
  root.name = "root";
  root.body = nest;
  PrimFunc func = PrimFunc::Make("main", {a, c}, BlockRealize({}, True(), MakeBlock(root)));
  ASSERT_TRUE(VerifyWellFormed(func).ok());
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("C");
  ExpectRejected(
      sch.ReIndex(block, 0, 0).status(),
      "reindex: block C accesses buffer A at different indices [v_i, v_j] and [v_j, v_i]", sch,
      func, sch.trace().size());
}

// ---- SetScope ---------------------------------------------------------------------------------

TEST(SetScopeTest, SoftmaxMaxIntoSharedBuildsAndRuns) {
  PrimFunc func = Sfm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV max = *sch.GetBlock("T_softmax_maxelem");
  ASSERT_TRUE(sch.SetScope(max, 0, "shared").ok());
  Buffer buffer = RootAlloc(sch.func(), "T_softmax_maxelem");
  EXPECT_EQ(buffer.scope(), "shared");
  // Every reference is the new buffer object.
  EXPECT_TRUE(BlockNamed(sch, "T_softmax_maxelem")->writes[0].buffer.same_as(buffer));
  EXPECT_TRUE(BlockNamed(sch, "T_softmax_exp")->reads[1].buffer.same_as(buffer));
  EXPECT_NE(PrintFunc(sch.func()).find("scope=\"shared\""), std::string::npos);
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(SetScopeTest, RejectsParamsAndBadScopes) {
  PrimFunc func = Sfm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV max = *sch.GetBlock("T_softmax_maxelem");
  BlockRV norm = *sch.GetBlock("T_softmax_norm");
  PrimFunc before = sch.func();
  size_t n = sch.trace().size();
  ExpectRejected(sch.SetScope(norm, 0, "shared"),
                 "set_scope: buffer T_softmax_norm written by block T_softmax_norm is a function "
                 "parameter",
                 sch, before, n);
  ExpectRejected(sch.SetScope(max, 1, "shared"),
                 "set_scope: buffer_index 1 is out of range for block T_softmax_maxelem", sch,
                 before, n);
  ExpectRejected(sch.SetScope(max, 0, "sharde"), "set_scope: invalid storage scope 'sharde'", sch,
                 before, n);
}

// ---- StorageAlign -----------------------------------------------------------------------------

TEST(StorageAlignTest, PaddedSharedCacheBuildsAndRuns) {
  PrimFunc func = Gmm(16, 8, 8);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  BlockRV a = *sch.CacheRead(c, 1, "shared");
  // A_shared is (1, 16, 8): the stride of axis -2 (8) is padded to 9 (9 % 8 == 1).
  ASSERT_TRUE(sch.StorageAlign(a, 0, -2, 8, 1).ok());
  Buffer cache = RootAlloc(sch.func(), "A_shared");
  ASSERT_EQ(cache->strides.size(), 3u);
  EXPECT_EQ(*AsConstInt(cache->strides[0]), 144);
  EXPECT_EQ(*AsConstInt(cache->strides[1]), 9);
  EXPECT_EQ(*AsConstInt(cache->strides[2]), 1);
  EXPECT_NE(PrintFunc(sch.func()).find("strides=(144, 9, 1)"), std::string::npos)
      << PrintFunc(sch.func());
  const Annotations& ann = BlockNamed(sch, "A_shared")->annotations;
  ASSERT_TRUE(ann.count("buffer_dim_align"));
  EXPECT_EQ(std::get<std::vector<int64_t>>(ann.at("buffer_dim_align")),
            (std::vector<int64_t>{0, 1, 8, 1}));
  // Lowering flattens with the padded strides: 1 + 15 * 9 + 7 = 143 elements.
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  std::string text = PrintFunc(*lowered);
  EXPECT_NE(text.find("143"), std::string::npos) << text;
  EXPECT_NE(text.find("* 9"), std::string::npos) << text;
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(StorageAlignTest, AlignsSeveralAxes) {
  PrimFunc func = Gmm(16, 8, 8);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  BlockRV a = *sch.CacheRead(c, 1, "shared");
  ASSERT_TRUE(sch.StorageAlign(a, 0, 1, 8, 1).ok());
  ASSERT_TRUE(sch.StorageAlign(a, 0, 0, 32, 0).ok());  // 16 * 9 = 144 -> 160
  ASSERT_TRUE(sch.StorageAlign(a, 0, -2, 4, 2).ok());  // replaces axis 1: 8 -> 10
  Buffer cache = RootAlloc(sch.func(), "A_shared");
  EXPECT_EQ(*AsConstInt(cache->strides[1]), 10);
  EXPECT_EQ(*AsConstInt(cache->strides[0]), 160);
  ExpectCorrect(sch, func);
}

TEST(StorageAlignTest, RejectsBadArguments) {
  PrimFunc func = Gmm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  BlockRV a = *sch.CacheRead(c, 1, "shared");
  PrimFunc before = sch.func();
  size_t n = sch.trace().size();
  ExpectRejected(sch.StorageAlign(c, 0, 0, 8, 1),
                 "storage_align: buffer C written by block C is a "
                 "function parameter",
                 sch, before, n);
  ExpectRejected(sch.StorageAlign(a, 0, 3, 8, 1),
                 "storage_align: axis 3 is out of range for buffer A_shared of block A_shared, "
                 "which has 3 dimensions",
                 sch, before, n);
  ExpectRejected(sch.StorageAlign(a, 0, -4, 8, 1), "axis -4 is out of range", sch, before, n);
  ExpectRejected(sch.StorageAlign(a, 0, 1, 0, 0), "must satisfy factor > 0", sch, before, n);
  ExpectRejected(sch.StorageAlign(a, 0, 1, 8, 8), "offset 8", sch, before, n);
  ExpectRejected(sch.StorageAlign(a, 1, 1, 8, 1), "buffer_index 1 is out of range", sch, before, n);
}

}  // namespace
}  // namespace tessera
