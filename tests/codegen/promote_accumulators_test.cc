// PromoteAccumulators (codegen/promote_accumulators.cc): a register tile accumulated across K
// blocks in a C block (its address moving with the row tile) gets an array of its own across
// the inner K loop, and the C backend still computes the unscheduled function's result; the
// accumulators then stay in registers (no vector store in the FMA loop); tiles at a constant
// address, single vectors and accesses the array could not hold stay as they are.
#include "codegen/promote_accumulators.h"

#include <functional>
#include <string>
#include <vector>

#include "codegen/codegen_c.h"
#include "codegen/lower.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

PrimFunc GmmOfShape(int64_t m, int64_t n, int64_t k) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}});
  EXPECT_TRUE(func.ok()) << func.status();
  return *func;
}

// GMM 16 x 16 x K as the K-blocked nest: rows [i0 2, i1 2, i2 4], columns [j0 2, j1 8],
// K [k0 4, k1 K / 4], ordered b, i0, k0, i1, k1, i2, j0, j1; C accumulated in a local C block of 8
// rows under i0 (its tile at i1 * 128), i2 and j0 unrolled, j1 vectorized.
Schedule KBlocked(const PrimFunc& func, int64_t k_block = 16) {
  Schedule sch = Schedule::Create(func, 0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  std::vector<LoopRV> i =
      *sch.Split(loops[1], {InstValue::Int(2), InstValue::Int(2), InstValue::Int(4)});
  std::vector<LoopRV> j = *sch.Split(loops[2], {InstValue::Int(2), InstValue::Int(8)});
  std::vector<LoopRV> k = *sch.Split(loops[3], {InstValue::Int(4), InstValue::Int(k_block)});
  EXPECT_TRUE(sch.Reorder({loops[0], i[0], k[0], i[1], k[1], i[2], j[0], j[1]}).ok());
  BlockRV write_back = *sch.CacheWrite(c, 0, "local");
  EXPECT_TRUE(sch.ReverseComputeAt(write_back, i[0]).ok());
  EXPECT_TRUE(sch.DecomposeReduction(c, k[0]).ok());
  EXPECT_TRUE(sch.Unroll(i[2]).ok());
  EXPECT_TRUE(sch.Unroll(j[0]).ok());
  EXPECT_TRUE(sch.Vectorize(j[1]).ok());
  return sch;
}

// The names of the "local" buffers `f` allocates.
std::vector<std::string> LocalAllocations(const PrimFunc& f) {
  std::vector<std::string> names;
  PostOrderVisitStmts(f.body(), [&](const Stmt& s) {
    const auto* alloc = s.as<AllocateNode>();
    if (alloc != nullptr && alloc->buffer.scope() == "local") names.push_back(alloc->buffer.name());
  });
  return names;
}

PrimFunc Lowered(const PrimFunc& f) {
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(f);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  return *lowered;
}

TEST(PromoteAccumulatorsTest, KBlockedTileGetsAnArrayAcrossTheInnerKLoop) {
  const PrimFunc func = GmmOfShape(16, 16, 64);
  Schedule sch = KBlocked(func);
  const PrimFunc lowered = Lowered(sch.func());
  const PrimFunc promoted = PromoteAccumulators(lowered);
  ASSERT_FALSE(promoted.body().same_as(lowered.body()));
  const std::vector<std::string> locals = LocalAllocations(promoted);
  ASSERT_EQ(locals.size(), 2u) << PrintStmt(promoted.body());
  const std::string block = locals[0] == "C_local" ? locals[0] : locals[1];
  const std::string sum = locals[0] == "C_local" ? locals[1] : locals[0];
  EXPECT_EQ(block, "C_local");
  // Inside the K loop `k_1` the products go to the array only; the C block is read before it
  // and written after it, once per element of the 4 x 16 tile.
  int stores_in_k1 = 0;
  PostOrderVisitStmts(promoted.body(), [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    if (loop == nullptr || loop->loop_var->name != "k_1") return;
    PostOrderVisitStmts(loop->body, [&](const Stmt& inner) {
      if (const auto* store = inner.as<BufferStoreNode>()) {
        ++stores_in_k1;
        EXPECT_EQ(store->buffer.name(), sum) << PrintStmt(loop->body);
      }
    });
    PostOrderVisitExprs(loop->body, [&](const Expr& e) {
      const auto* load = e.as<BufferLoadNode>();
      if (load != nullptr) {
        EXPECT_NE(load->buffer.name(), block) << PrintStmt(loop->body);
      }
    });
  });
  EXPECT_EQ(stores_in_k1, 1) << PrintStmt(promoted.body());
  absl::Status built = testing::CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
  // K blocks of 9 on another seed.
  const PrimFunc odd = GmmOfShape(16, 16, 36);
  absl::Status odd_built = testing::CheckCBackendMatches(odd, KBlocked(odd, 9).func(), /*seed=*/3);
  EXPECT_TRUE(odd_built.ok()) << odd_built;
}

// Compiled for AVX-512 (32 vector registers; only the assembly is read), the 4 x 2-vector tile
// stays in registers: the loop of FMAs loads A and B and stores nothing (before the promotion gcc
// loaded and stored every accumulator there). With AVX2's 16 registers gcc 12 keeps one of the 8
// accumulators on the stack.
TEST(PromoteAccumulatorsTest, KBlockedTileStaysInRegisters) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the check reads x86-64 assembly";
#endif
  const PrimFunc func = GmmOfShape(16, 16, 64);
  absl::StatusOr<std::string> code = GenerateC(KBlocked(func).func(), "kblocked");
  ASSERT_TRUE(code.ok()) << code.status();
  absl::StatusOr<std::string> text =
      testing::CAssembly(::testing::TempDir(), "promote_accumulators", *code, "x86-64-v4");
  ASSERT_TRUE(text.ok()) << text.status();
  // The innermost loops with FMAs store no vector.
  const std::vector<std::string> stores =
      testing::VectorStoresOfInnermostLoopsWith(*text, "vfmadd");
  for (const std::string& loop_stores : stores) {
    EXPECT_EQ(loop_stores, "") << "vector stores in a loop of FMAs";
  }
  EXPECT_GE(stores.size(), 1u) << "no loop of FMAs in\n" << *code;
}

// The default tile (its C block the tile itself, at a constant address) is what GCC keeps in
// registers already: nothing changes.
TEST(PromoteAccumulatorsTest, TileAtAConstantAddressStaysAsItIs) {
  const PrimFunc func = GmmOfShape(16, 16, 64);
  Schedule sch = Schedule::Create(func, 0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  std::vector<LoopRV> i = *sch.Split(loops[1], {InstValue::Int(4), InstValue::Int(4)});
  std::vector<LoopRV> j = *sch.Split(loops[2], {InstValue::Int(2), InstValue::Int(8)});
  ASSERT_TRUE(sch.Reorder({loops[0], i[0], loops[3], i[1], j[0], j[1]}).ok());
  BlockRV write_back = *sch.CacheWrite(c, 0, "local");
  ASSERT_TRUE(sch.ReverseComputeAt(write_back, i[0]).ok());
  ASSERT_TRUE(sch.DecomposeReduction(c, loops[3]).ok());
  ASSERT_TRUE(sch.Unroll(i[1]).ok());
  const PrimFunc lowered = Lowered(sch.func());
  EXPECT_TRUE(PromoteAccumulators(lowered).body().same_as(lowered.body()))
      << PrintStmt(lowered.body());
}

// Hand-built loops over an allocated X (flat, 64 floats) at base o = t * 16, t an outer loop:
//   for k in [0, 8): for r in [0, 4) (unrolled): for v in [0, 2): X[o + index(r, v)] += A[k]
// plus, optionally, another statement in k's body.
PrimFunc Accumulation(const std::function<Expr(const Var&, const Var&)>& index, ForKind row_kind,
                      const std::function<Stmt(const Buffer&, const Var&)>& extra) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(8)});
  Buffer x = Buffer::Make("X", DataType::Float32(), {Expr(64)}, "local");
  Var t("t"), k("k"), r("r"), v("v");
  const Expr at = t * Expr(16) + index(r, v);
  Stmt update = BufferStore(x, x.Load({at}) + a.Load({k}), {at});
  Stmt body = For(r, Expr(4), row_kind, For(v, Expr(2), ForKind::kSerial, update));
  if (extra) body = SeqStmt({body, extra(x, k)});
  Stmt nest = For(t, Expr(4), ForKind::kSerial, For(k, Expr(8), ForKind::kSerial, body));
  return PrimFunc::Make("accumulate", {a}, Allocate(x, nest));
}

TEST(PromoteAccumulatorsTest, PromotesOnlyWhatAnArrayCanHoldAlone) {
  auto rows = [](const Var& r, const Var& v) { return r * Expr(2) + v; };
  const PrimFunc plain = Accumulation(rows, ForKind::kUnrolled, nullptr);
  EXPECT_FALSE(PromoteAccumulators(plain).body().same_as(plain.body()));
  // Another element of X read in the loop: the array would not hold it.
  const PrimFunc other_read =
      Accumulation(rows, ForKind::kUnrolled, [](const Buffer& x, const Var& k) {
        Buffer out = Buffer::Make("out", DataType::Float32(), {Expr(8)});
        return BufferStore(out, x.Load({Expr(63)}), {k});
      });
  EXPECT_TRUE(PromoteAccumulators(other_read).body().same_as(other_read.body()));
  // Two (r, v) on one element (r + v): not one-to-one.
  const PrimFunc overlapping =
      Accumulation([](const Var& r, const Var& v) { return r + v; }, ForKind::kUnrolled, nullptr);
  EXPECT_TRUE(PromoteAccumulators(overlapping).body().same_as(overlapping.body()));
  // No unrolled loop: a vector GCC keeps in a register itself.
  const PrimFunc serial = Accumulation(rows, ForKind::kSerial, nullptr);
  EXPECT_TRUE(PromoteAccumulators(serial).body().same_as(serial.body()));
  // The index uses the loop itself.
  const PrimFunc moving = Accumulation(rows, ForKind::kUnrolled, [](const Buffer& x, const Var& k) {
    return BufferStore(x, FloatImm(DataType::Float32(), 0.0), {k});
  });
  EXPECT_TRUE(PromoteAccumulators(moving).body().same_as(moving.body()));
}

}  // namespace
}  // namespace tessera
