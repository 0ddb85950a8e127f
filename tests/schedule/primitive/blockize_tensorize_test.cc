// Blockize and Tensorize (the intrinsic registry itself: tests/schedule/tensor_intrin_test.cc):
// scheduled programs compute what the unscheduled ones do (interpreter and C backend), traces
// replay, descriptions match the blocks they should and reject the ones they should not, and extern
// calls stay opaque.
#include <functional>

#include "codegen/codegen_c.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/arith/int_set.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/serialize.h"
#include "ir/structural_equal.h"
#include "schedule/schedule.h"
#include "schedule/tensor_intrin.h"
#include "tests/testing/schedule_testing.h"
#include "worker/builder.h"
#include "worker/runner.h"

namespace tessera {
namespace {

using testing::CheckReplay;
using testing::CheckSameOutputs;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void ExpectCorrect(const PrimFunc& original, const Schedule& sch) {
  absl::Status s = testing::CheckScheduleCorrect(sch, original);
  EXPECT_TRUE(s.ok()) << s;
}

// A GMM with i, j, k split by `tile` and reordered to i0 j0 k0 i1 j1 k1.
struct TiledGmm {
  PrimFunc func;
  Schedule sch;
  BlockRV block;
  std::vector<LoopRV> i, j, k;
};

TiledGmm TileGmm(int64_t m, int64_t n, int64_t k, int64_t tile, const std::string& dtype = "",
                 bool split_k = true) {
  PrimFunc func = *MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}}, dtype);
  Schedule sch = Schedule::Create(func, /*seed=*/1);
  BlockRV block = *sch.GetBlock(testing::FirstReductionBlock(func));
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  TiledGmm t{func, sch, block, {}, {}, {}};
  t.i = *t.sch.Split(loops[1], {InstValue(), InstValue::Int(tile)});
  t.j = *t.sch.Split(loops[2], {InstValue(), InstValue::Int(tile)});
  if (split_k) {
    t.k = *t.sch.Split(loops[3], {InstValue(), InstValue::Int(tile)});
    EXPECT_TRUE(t.sch.Reorder({t.i[0], t.j[0], t.k[0], t.i[1], t.j[1], t.k[1]}).ok());
  } else {
    t.k = {loops[3]};
    EXPECT_TRUE(t.sch.Reorder({t.i[0], t.j[0], t.i[1], t.j[1], t.k[0]}).ok());
  }
  return t;
}

// Builds `f` with the C backend, runs it once and compares every argument with the
// interpreter running `reference` on the same inputs.
void ExpectCBackendMatches(const PrimFunc& reference, const PrimFunc& f) {
  absl::Status s = testing::CheckCBackendMatches(reference, f);
  EXPECT_TRUE(s.ok()) << s;
}

// ---- Hand-built functions --------------------------------------------------------------

// for loops over `extents`: block `name` (iteration variables bound 1:1, kinds "SSR") with
// body(iteration variables) and optional init; regions computed.
Stmt Nest(const std::string& name, const std::vector<int64_t>& extents, const std::string& kinds,
          const std::function<Stmt(const std::vector<Expr>&)>& body,
          const std::function<Stmt(const std::vector<Expr>&)>& init = nullptr) {
  static const char* const kNames[] = {"i", "j", "k"};
  std::vector<Var> loops;
  std::vector<Expr> ivs;
  BlockNode node;
  node.name = name;
  for (size_t d = 0; d < extents.size(); ++d) {
    loops.push_back(Var(kNames[d]));
    Var iv(std::string("v_") + kNames[d]);
    ivs.push_back(iv);
    node.iter_vars.push_back(IterVar{iv, Range{Expr(0), Expr(extents[d])},
                                     kinds[d] == 'R' ? IterKind::kReduction : IterKind::kSpatial});
  }
  node.body = body(ivs);
  if (init) node.init = init(ivs);
  arith::BufferAccessRegions regions = arith::DetectBlockAccessRegions(MakeBlock(node));
  node.reads = regions.reads;
  node.writes = regions.writes;
  Stmt s = BlockRealize(std::vector<Expr>(loops.begin(), loops.end()), True(), MakeBlock(node));
  for (size_t d = extents.size(); d-- > 0;)
    s = For(loops[d], Expr(extents[d]), ForKind::kSerial, s);
  return s;
}

PrimFunc Main(std::vector<Buffer> params, Stmt body, std::vector<Buffer> allocs = {}) {
  BlockNode root;
  root.name = "root";
  root.body = std::move(body);
  root.alloc_buffers = std::move(allocs);
  return PrimFunc::Make("main", std::move(params), BlockRealize({}, True(), MakeBlock(root)),
                        {{"global_symbol", std::string("main")}});
}

// C[i, j] += acc(A[i, k]) * acc(B[k, j]) over n x n x n with buffers in the given scopes.
PrimFunc HandMatmul(int64_t n, DataType in, DataType acc, const std::string& sa,
                    const std::string& sb, const std::string& sc) {
  Buffer a = Buffer::Make("A", in, {Expr(n), Expr(n)}, sa);
  Buffer b = Buffer::Make("B", in, {Expr(n), Expr(n)}, sb);
  Buffer c = Buffer::Make("C", acc, {Expr(n), Expr(n)}, sc);
  Stmt body = Nest(
      "C", {n, n, n}, "SSR",
      [&](const std::vector<Expr>& v) {
        Expr prod = Cast(acc, a.Load({v[0], v[2]})) * Cast(acc, b.Load({v[2], v[1]}));
        return BufferStore(c, c.Load({v[0], v[1]}) + prod, {v[0], v[1]});
      },
      [&](const std::vector<Expr>& v) {
        return BufferStore(c, MakeConst(acc, 0), {v[0], v[1]});
      });
  return Main({a, b, c}, body);
}

// The test-only intrinsic: a 4x4x4 float32 matmul-accumulate whose impl is a plain loop nest.
constexpr char kTestMatmul[] = "test_matmul_4x4x4_f32";

void RegisterTestMatmul() {
  static const bool registered = [] {
    const DataType f32 = DataType::Float32();
    auto make = [&](const std::string& prefix) {
      return std::vector<Buffer>{Buffer::Make(prefix + "A", f32, {Expr(4), Expr(4)}),
                                 Buffer::Make(prefix + "B", f32, {Expr(4), Expr(4)}),
                                 Buffer::Make(prefix + "C", f32, {Expr(4), Expr(4)})};
    };
    std::vector<Buffer> d = make(""), p = make("impl_");
    Stmt desc_body = Nest("update", {4, 4, 4}, "SSR", [&](const std::vector<Expr>& v) {
      return BufferStore(
          d[2], d[2].Load({v[0], v[1]}) + d[0].Load({v[0], v[2]}) * d[1].Load({v[2], v[1]}),
          {v[0], v[1]});
    });
    Var i("i"), j("j"), k("k");
    Stmt impl_body =
        For(i, Expr(4), ForKind::kSerial,
            For(j, Expr(4), ForKind::kSerial,
                For(k, Expr(4), ForKind::kSerial,
                    BufferStore(p[2], p[2].Load({i, j}) + p[0].Load({i, k}) * p[1].Load({k, j}),
                                {i, j}))));
    auto root = [](std::vector<Buffer> params, Stmt body) {
      BlockNode node;
      node.name = "root";
      node.reads = {BufferRegion::Full(params[2]), BufferRegion::Full(params[0]),
                    BufferRegion::Full(params[1])};
      node.writes = {BufferRegion::Full(params[2])};
      node.body = std::move(body);
      return PrimFunc::Make("intrin", params, BlockRealize({}, True(), MakeBlock(node)));
    };
    absl::Status s = RegisterTensorIntrin({kTestMatmul, root(d, desc_body), root(p, impl_body)});
    EXPECT_TRUE(s.ok()) << s;
    return true;
  }();
  (void)registered;
}

// ---- Blockize ------------------------------------------------------------------------------

TEST(BlockizeTest, TiledGmmInnerSubspaceKeepsMeaning) {
  TiledGmm t = TileGmm(16, 8, 12, 4);
  absl::StatusOr<BlockRV> outer = t.sch.Blockize(t.i[1]);
  ASSERT_TRUE(outer.ok()) << outer.status();
  Block o = *t.sch.Get(*outer);
  EXPECT_EQ(o->name, "C_o");
  EXPECT_TRUE(o->init.defined());
  EXPECT_FALSE(t.sch.Get(t.block).value()->init.defined());
  // Each region of the outer block is a 4x4 tile.
  for (const BufferRegion& r : o->writes) {
    EXPECT_TRUE(IsConstInt(r.region[1].extent, 4)) << PrintFunc(t.sch.func());
    EXPECT_TRUE(IsConstInt(r.region[2].extent, 4)) << PrintFunc(t.sch.func());
  }
  EXPECT_EQ(t.sch.GetLoops(t.block)->size(), 3u);  // i1, j1, k1 inside C_o
  EXPECT_EQ(t.sch.GetLoops(*outer)->size(), 4u);   // b, i0, j0, k0
  ExpectCorrect(t.func, t.sch);
}

TEST(BlockizeTest, WholeReductionInsideKeepsInitCorrect) {
  TiledGmm t = TileGmm(8, 8, 6, 4, "", /*split_k=*/false);
  absl::StatusOr<BlockRV> outer = t.sch.Blockize(t.i[1], /*preserve_unit_iters=*/false);
  ASSERT_TRUE(outer.ok()) << outer.status();
  Block o = *t.sch.Get(*outer);
  ASSERT_TRUE(o->init.defined());
  bool has_reduction = false;
  for (const IterVar& iv : o->iter_vars) has_reduction |= iv.kind == IterKind::kReduction;
  EXPECT_TRUE(has_reduction) << PrintFunc(t.sch.func());
  ExpectCorrect(t.func, t.sch);
}

TEST(BlockizeTest, BlockizedGmmBuildsAndRunsWithCBackend) {
  TiledGmm t = TileGmm(16, 8, 8, 4);
  ASSERT_TRUE(t.sch.Blockize(t.j[1]).ok());
  ExpectCBackendMatches(t.func, t.sch.func());
}

TEST(BlockizeTest, RejectsLoopWithTwoBlocks) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(8)});
  Buffer b = Buffer::Make("B", DataType::Float32(), {Expr(8)});
  Buffer c = Buffer::Make("C", DataType::Float32(), {Expr(8)});
  auto block = [](const std::string& name, Buffer out, Buffer in, const Var& i) {
    Var v("v");
    BlockNode node;
    node.name = name;
    node.iter_vars = {IterVar{v, Range{Expr(0), Expr(8)}, IterKind::kSpatial}};
    node.reads = {BufferRegion{in, {Range{v, Expr(1)}}}};
    node.writes = {BufferRegion{out, {Range{v, Expr(1)}}}};
    node.body = BufferStore(out, in.Load({v}) * FloatImm(DataType::Float32(), 2), {v});
    return BlockRealize({i}, True(), MakeBlock(node));
  };
  Var i("i");
  PrimFunc func = Main(
      {a, c},
      For(i, Expr(8), ForKind::kSerial, SeqStmt({block("B", b, a, i), block("C", c, b, i)})), {b});
  Schedule sch = Schedule::Create(func, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("B"));
  size_t trace_size = sch.trace().size();
  absl::StatusOr<BlockRV> outer = sch.Blockize(loops[0]);
  ASSERT_FALSE(outer.ok());
  EXPECT_EQ(outer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(outer.status().message()),
                       "blockize: loop i must contain exactly one block, found 2 (B, C)"))
      << outer.status();
  EXPECT_EQ(sch.trace().size(), trace_size);
  EXPECT_TRUE(sch.func().same_as(func));
}

TEST(BlockizeTest, RejectsBindingThatDoesNotDivide) {
  PrimFunc func = *MakeWorkload("GMM", {{"B", 1}, {"M", 8}, {"N", 6}, {"K", 4}});
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock(testing::FirstReductionBlock(func));
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  LoopRV fused = *sch.Fuse({loops[1], loops[2]});
  std::vector<LoopRV> parts = *sch.Split(fused, {InstValue(), InstValue::Int(4)});
  PrimFunc before = sch.func();
  size_t trace_size = sch.trace().size();
  absl::StatusOr<BlockRV> outer = sch.Blockize(parts[1]);
  ASSERT_FALSE(outer.ok());
  EXPECT_EQ(outer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(outer.status().message()),
                       "blockize: binding of v_i in block C "
                       "is not divisible into inner/outer parts"))
      << outer.status();
  EXPECT_EQ(sch.trace().size(), trace_size);
  EXPECT_TRUE(sch.func().same_as(before));
}

TEST(BlockizeTest, AfterImperfectSplitOuterBlockStaysInItsDomain) {
  // Regression: NRM's D loop (extent 1) split by 2 runs b_0 over [0, 2) under the predicate
  // b_0 + b_1 < 1; the outer block's binding v_b_o = b_0 left its domain [0, 1).
  PrimFunc func = testing::SmallWorkload("NRM");
  Schedule sch = Schedule::Create(func, 1);
  BlockRV d = *sch.GetBlock("D");
  std::vector<LoopRV> loops = *sch.GetLoops(d);
  ASSERT_EQ(loops.size(), 1u);
  ASSERT_TRUE(sch.Split(loops[0], {InstValue::Int(2), InstValue()}).ok());
  loops = *sch.GetLoops(d);
  absl::StatusOr<BlockRV> outer = sch.Blockize(loops[1], /*preserve_unit_iters=*/true);
  ASSERT_TRUE(outer.ok()) << outer.status();
  StmtPath outer_path = *sch.GetPath(*outer);
  StmtPath inner_path = *sch.GetPath(d);
  // The split's predicate moves to the outer block, where it bounds the outer binding; the
  // inner block needs none.
  const Expr& outer_pred = outer_path.back().as<BlockRealizeNode>()->predicate;
  EXPECT_FALSE(IsConstInt(outer_pred, 1)) << PrintFunc(sch.func());
  EXPECT_TRUE(IsConstInt(inner_path.back().as<BlockRealizeNode>()->predicate, 1))
      << PrintFunc(sch.func());
  ExpectCorrect(func, sch);
  ExpectCBackendMatches(func, sch.func());
}

TEST(BlockizeTest, AfterOverCoveringSplitOfReductionMovesInit) {
  // k (extent 8) split into 3 x 4 runs k0 * 4 + k1 < 8; blockizing k1 bounds k0 by the
  // outer predicate, under which the inner predicate is implied, so the init can move out.
  PrimFunc func = *MakeWorkload("GMM", {{"B", 1}, {"M", 4}, {"N", 4}, {"K", 8}});
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock(testing::FirstReductionBlock(func));
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  std::vector<LoopRV> k = *sch.Split(loops[3], {InstValue::Int(3), InstValue::Int(4)});
  absl::StatusOr<BlockRV> outer = sch.Blockize(k[1]);
  ASSERT_TRUE(outer.ok()) << outer.status();
  Block o = *sch.Get(*outer);
  EXPECT_TRUE(o->init.defined());
  EXPECT_FALSE(IsConstInt(sch.GetPath(*outer)->back().as<BlockRealizeNode>()->predicate, 1));
  EXPECT_TRUE(IsConstInt(sch.GetPath(block)->back().as<BlockRealizeNode>()->predicate, 1))
      << PrintFunc(sch.func());
  ExpectCorrect(func, sch);
  ExpectCBackendMatches(func, sch.func());
}

TEST(BlockizeTest, PaddedBlockRegionsStayInsideTheBuffer) {
  // The padding block reads inputs[v_i1 - 3, v_i2 - 3] under a select; relaxed over the
  // inner loop i2 that is columns -3..18 of 8, clipped to the buffer.
  PrimFunc func = testing::SmallWorkload("C2D");
  Schedule sch = Schedule::Create(func, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("PadInput"));
  absl::StatusOr<BlockRV> outer = sch.Blockize(loops[2]);
  ASSERT_TRUE(outer.ok()) << outer.status();
  Block o = *sch.Get(*outer);
  for (const std::vector<BufferRegion>* regions : {&o->reads, &o->writes}) {
    for (const BufferRegion& r : *regions) {
      for (size_t d = 0; d < r.region.size(); ++d) {
        const int64_t* min = AsConstInt(r.region[d].min);
        const int64_t* extent = AsConstInt(r.region[d].extent);
        if (min == nullptr || extent == nullptr) continue;
        EXPECT_GE(*min, 0) << r.buffer.name() << " dim " << d;
        EXPECT_LE(*min + *extent, *AsConstInt(r.buffer.shape()[d]))
            << r.buffer.name() << " dim " << d << "\n"
            << PrintFunc(sch.func());
      }
    }
  }
  ExpectCorrect(func, sch);
}

// ---- Tensorize -----------------------------------------------------------------------------

TEST(TensorizeTest, CpuIntrinsicOnLoopKeepsMeaning) {
  RegisterTestMatmul();
  TiledGmm t = TileGmm(8, 12, 8, 4);
  absl::Status s = t.sch.Tensorize(t.i[1], kTestMatmul);
  ASSERT_TRUE(s.ok()) << s;
  Block o = *t.sch.Get(*t.sch.GetBlock("C_o"));
  ASSERT_EQ(o->annotations.count("tensor_intrin"), 1u);
  EXPECT_EQ(std::get<std::string>(o->annotations.at("tensor_intrin")), kTestMatmul);
  EXPECT_FALSE(t.sch.GetBlock("C").ok());  // the body is the implementation now
  ExpectCorrect(t.func, t.sch);
}

TEST(TensorizeTest, CpuIntrinsicOnBlockizedBlockBuildsAndRuns) {
  RegisterTestMatmul();
  TiledGmm t = TileGmm(8, 8, 8, 4);
  BlockRV outer = *t.sch.Blockize(t.i[1]);
  absl::Status s = t.sch.Tensorize(outer, kTestMatmul);
  ASSERT_TRUE(s.ok()) << s;
  ExpectCorrect(t.func, t.sch);
  ExpectCBackendMatches(t.func, t.sch.func());
}

TEST(TensorizeTest, WmmaSyncMatchesBlockizedFp16Matmul) {
  PrimFunc func = HandMatmul(32, DataType::Float16(), DataType::Float32(), "wmma.matrix_a",
                             "wmma.matrix_b", "wmma.accumulator");
  Schedule sch = Schedule::Create(func, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<LoopRV> i = *sch.Split(loops[0], {InstValue(), InstValue::Int(16)});
  std::vector<LoopRV> j = *sch.Split(loops[1], {InstValue(), InstValue::Int(16)});
  std::vector<LoopRV> k = *sch.Split(loops[2], {InstValue(), InstValue::Int(16)});
  ASSERT_TRUE(sch.Reorder({i[0], j[0], k[0], i[1], j[1], k[1]}).ok());
  BlockRV outer = *sch.Blockize(i[1]);
  absl::Status s = sch.Tensorize(outer, kWmmaSync);
  ASSERT_TRUE(s.ok()) << s << "\n" << PrintFunc(sch.func());
  std::string text = PrintFunc(sch.func());
  EXPECT_TRUE(Contains(text,
                       "call_extern(int32, \"wmma::mma_sync\", C[v_i_o * 16, v_j_o * 16], "
                       "A[v_i_o * 16, v_k_o * 16], B[v_k_o * 16, v_j_o * 16]"))
      << text;
  absl::Status replay = CheckReplay(sch, func);
  EXPECT_TRUE(replay.ok()) << replay;
  // The extern call survives JSON and text round trips, and stays opaque to the CPU paths.
  absl::StatusOr<PrimFunc> loaded = LoadPrimFuncJson(SaveJson(sch.func()));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(StructuralEqual(*loaded, sch.func())) << StructuralDiff(*loaded, sch.func());
  absl::StatusOr<PrimFunc> parsed = ParseFunc(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(StructuralEqual(*parsed, sch.func())) << StructuralDiff(*parsed, sch.func());
  absl::Status run = CheckSameOutputs(func, sch.func());
  EXPECT_TRUE(Contains(std::string(run.message()), "cannot interpret extern call wmma::mma_sync"))
      << run;
  absl::StatusOr<std::string> c = GenerateC(sch.func(), "k");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(std::string(c.status().message()),
                       "cpu codegen: unsupported extern call wmma::mma_sync"))
      << c.status();
}

TEST(TensorizeTest, WmmaFillMatchesDecomposedInitOfBlockizedMatmul) {
  // Blockize keeps the init as a nested block C_init, so the init block DecomposeReduction
  // makes of the blockized block is loops over a block, the form of the fill description.
  PrimFunc func = HandMatmul(32, DataType::Float16(), DataType::Float32(), "wmma.matrix_a",
                             "wmma.matrix_b", "wmma.accumulator");
  Schedule sch = Schedule::Create(func, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<LoopRV> i = *sch.Split(loops[0], {InstValue(), InstValue::Int(16)});
  std::vector<LoopRV> j = *sch.Split(loops[1], {InstValue(), InstValue::Int(16)});
  std::vector<LoopRV> k = *sch.Split(loops[2], {InstValue(), InstValue::Int(16)});
  ASSERT_TRUE(sch.Reorder({i[0], j[0], k[0], i[1], j[1], k[1]}).ok());
  BlockRV outer = *sch.Blockize(i[1]);
  EXPECT_TRUE(sch.GetBlock("C_init").ok()) << PrintFunc(sch.func());
  ExpectCorrect(func, sch);
  absl::StatusOr<BlockRV> init = sch.DecomposeReduction(outer, k[0]);
  ASSERT_TRUE(init.ok()) << init.status();
  // The float16 fill does not match a float32 accumulator.
  absl::Status s = sch.Tensorize(*init, kWmmaFillF16);
  EXPECT_TRUE(Contains(std::string(s.message()), "is float32, the description's")) << s;
  s = sch.Tensorize(*init, kWmmaFill);
  ASSERT_TRUE(s.ok()) << s << "\n" << PrintFunc(sch.func());
  s = sch.Tensorize(outer, kWmmaSync);
  ASSERT_TRUE(s.ok()) << s << "\n" << PrintFunc(sch.func());
  std::string text = PrintFunc(sch.func());
  EXPECT_TRUE(
      Contains(text, "call_extern(int32, \"wmma::fill_fragment\", C[v_i_o * 16, v_j_o * 16]"))
      << text;
  s = testing::CheckTensorizedScheduleCorrect(sch, func);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(TensorizeTest, Dp4aMatchesInt8DotProduct) {
  const DataType i8 = DataType::Int8(), i32 = DataType::Int32();
  Buffer a = Buffer::Make("A", i8, {Expr(8), Expr(16)});
  Buffer b = Buffer::Make("B", i8, {Expr(8), Expr(16)});
  Buffer c = Buffer::Make("C", i32, {Expr(8)});
  Stmt body = Nest(
      "C", {8, 16}, "SR",
      [&](const std::vector<Expr>& v) {
        return BufferStore(
            c, c.Load({v[0]}) + Cast(i32, a.Load({v[0], v[1]})) * Cast(i32, b.Load({v[0], v[1]})),
            {v[0]});
      },
      [&](const std::vector<Expr>& v) { return BufferStore(c, IntImm(i32, 0), {v[0]}); });
  PrimFunc func = Main({a, b, c}, body);
  Schedule sch = Schedule::Create(func, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<LoopRV> k = *sch.Split(loops[1], {InstValue(), InstValue::Int(4)});
  absl::Status s = sch.Tensorize(k[1], kDp4a);
  ASSERT_TRUE(s.ok()) << s << "\n" << PrintFunc(sch.func());
  std::string text = PrintFunc(sch.func());
  EXPECT_TRUE(Contains(text,
                       "C[v_i_o] = call_extern(int32, \"__dp4a\", A[v_i_o, v_j_o * 4], "
                       "B[v_i_o, v_j_o * 4], C[v_i_o])"))
      << text;
  absl::Status replay = CheckReplay(sch, func);
  EXPECT_TRUE(replay.ok()) << replay;
}

TEST(TensorizeTest, RejectsWrongExtent) {
  PrimFunc func = HandMatmul(32, DataType::Float16(), DataType::Float32(), "wmma.matrix_a",
                             "wmma.matrix_b", "wmma.accumulator");
  Schedule sch = Schedule::Create(func, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<LoopRV> i = *sch.Split(loops[0], {InstValue(), InstValue::Int(8)});
  ASSERT_TRUE(sch.Reorder({i[0], loops[1], loops[2], i[1]}).ok());
  PrimFunc before = sch.func();
  size_t trace_size = sch.trace().size();
  absl::Status s = sch.Tensorize(loops[1], kWmmaSync);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      Contains(std::string(s.message()),
               "tensorize: block C_o does not match intrinsic wmma_sync_16x16x16_f16f16f32: "
               "loop j has extent 32, the description's loop i has 16"))
      << s;
  EXPECT_EQ(sch.trace().size(), trace_size);
  EXPECT_TRUE(sch.func().same_as(before));
}

TEST(TensorizeTest, RejectsWrongDtypeAndScope) {
  // float32 inputs in fragment scopes: the dtype differs.
  PrimFunc f32 = HandMatmul(32, DataType::Float32(), DataType::Float32(), "wmma.matrix_a",
                            "wmma.matrix_b", "wmma.accumulator");
  Schedule sch = Schedule::Create(f32, 1);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<LoopRV> i = *sch.Split(loops[0], {InstValue(), InstValue::Int(16)});
  std::vector<LoopRV> j = *sch.Split(loops[1], {InstValue(), InstValue::Int(16)});
  std::vector<LoopRV> k = *sch.Split(loops[2], {InstValue(), InstValue::Int(16)});
  ASSERT_TRUE(sch.Reorder({i[0], j[0], k[0], i[1], j[1], k[1]}).ok());
  size_t trace_size = sch.trace().size();
  absl::Status s = sch.Tensorize(i[1], kWmmaSync);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      Contains(std::string(s.message()),
               "tensorize: block C_o does not match intrinsic wmma_sync_16x16x16_f16f16f32: "
               "A[v_i, v_k] is float32, the description's A_frag[vi, vk] is float16"))
      << s;
  EXPECT_EQ(sch.trace().size(), trace_size);

  // The float32 GMM workload in global memory: the accumulator's scope differs first.
  TiledGmm t = TileGmm(32, 32, 32, 16, "float32");
  s = t.sch.Tensorize(t.i[1], kWmmaSync);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(std::string(s.message()),
                       "buffer C has scope global, the description's "
                       "C_frag needs wmma.accumulator"))
      << s;
}

TEST(TensorizeTest, UnknownIntrinsicIsNotFound) {
  TiledGmm t = TileGmm(8, 8, 8, 4);
  absl::Status s = t.sch.Tensorize(t.i[1], "nope");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(std::string(s.message()), "tensorize: unknown tensor intrinsic nope")) << s;
}

}  // namespace
}  // namespace tessera
