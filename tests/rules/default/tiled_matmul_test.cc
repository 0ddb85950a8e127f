// TiledMatmul (rules/default/tiled_matmul.cc) at the default's point of its space
// (DefaultMatmulTiling, as CpuDefault applies it): a GEMM is register-tiled (parallel, vectorized
// and unrolled loops, a local accumulator), column panels of B are packed (DENSE's weight
// transposed in the copy), panels narrow for long reductions, and odd shapes still compute the
// product, and the tile prefetches the strips it streams. Sampled tilings of every layout are
// tested through PackedPanelGemm (tests/rules/rule/packed_panel_gemm_test.cc).
#include "rules/default/tiled_matmul.h"

#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/match.h"
#include "codegen/codegen_c.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/cpu_intrinsics.h"
#include "ir/functor.h"
#include "ir/loop_annotations.h"
#include "ir/prepack.h"
#include "ir/printer.h"
#include "tests/rules/default_schedule_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using default_schedule_testing::ApplyToModule;
using default_schedule_testing::Avx512CpuTarget;
using default_schedule_testing::CpuTarget;
using default_schedule_testing::DotProductCpuTarget;
using default_schedule_testing::ExpectMatchesReference;
using default_schedule_testing::ExternCalls;
using default_schedule_testing::ScheduleShape;
using default_schedule_testing::ShapeOf;
using default_schedule_testing::ShapeOfBuffer;
using default_schedule_testing::ShapeOfScope;

// `func` without its layout-free parameters: its GEMM packs B per call (the non-weight case).
PrimFunc WithoutLayoutFree(const PrimFunc& func) {
  Annotations attrs = func.attrs();
  attrs.erase(kLayoutFreeBuffers);
  return PrimFunc::Make(func.name(), func.params(), func.body(), attrs);
}

// The names of the blocks of the scheduled function.
std::set<std::string> BlockNames(const PrimFunc& scheduled) {
  std::set<std::string> names;
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    if (const auto* block = s.as<BlockNode>()) names.insert(block->name);
  });
  return names;
}

TEST(DefaultScheduleRuleTest, CpuMatmulIsRegisterTiled) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM");
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, Avx512CpuTarget()).second;
  std::set<ForKind> kinds;
  std::set<std::string> scopes;
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) kinds.insert(loop->for_kind);
    if (const auto* block = s.as<BlockNode>()) {
      for (const Buffer& b : block->alloc_buffers) scopes.insert(b.scope());
    }
  });
  EXPECT_TRUE(kinds.count(ForKind::kParallel)) << PrintFunc(scheduled);
  EXPECT_TRUE(kinds.count(ForKind::kVectorized)) << PrintFunc(scheduled);
  EXPECT_TRUE(kinds.count(ForKind::kUnrolled)) << PrintFunc(scheduled);
  EXPECT_TRUE(scopes.count("local")) << PrintFunc(scheduled);
}

// A GEMM wide enough for 4+ column panels copies each K x 64 panel of B into a contiguous
// buffer (a global intermediate of B's shape) and computes the same product.
TEST(DefaultScheduleRuleTest, CpuMatmulPacksColumnPanelsOfB) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM", {{"M", 16}, {"N", 256}, {"K", 48}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, Avx512CpuTarget()).second;
  const ScheduleShape shape = ShapeOf(scheduled);
  EXPECT_TRUE(shape.kinds.count(ForKind::kParallel)) << PrintFunc(scheduled);
  EXPECT_EQ(ShapeOfScope(shape, "global"), (std::vector<int64_t>{1, 48, 256}))
      << PrintFunc(scheduled);
  EXPECT_EQ(ShapeOfScope(shape, "local"), (std::vector<int64_t>{1, 16, 256}))
      << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
}

// Few rows that whole tiles of 8 would cover badly take the tile rows that cover them best: 17
// rows (ResNet-18's stage-3 Winograd products) two tiles of 9, 49 seven of 7; 16 keep 8. Each
// computes the product.
TEST(DefaultScheduleRuleTest, CpuMatmulOfFewRowsTakesTheTileRowsThatCoverThem) {
  for (const auto& [m, rows] :
       std::vector<std::pair<int64_t, int64_t>>{{17, 9}, {49, 7}, {16, 8}}) {
    SCOPED_TRACE(m);
    absl::StatusOr<PrimFunc> func = MakeWorkload("GMM", {{"M", m}, {"N", 256}, {"K", 24}});
    ASSERT_TRUE(func.ok()) << func.status();
    const PrimFunc scheduled = ApplyToModule(*func, Avx512CpuTarget()).second;
    std::set<int64_t> unrolled;
    PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
      const auto* loop = s.as<ForNode>();
      if (loop == nullptr || loop->for_kind != ForKind::kUnrolled) return;
      if (const auto* imm = loop->extent.as<IntImmNode>()) unrolled.insert(imm->value);
    });
    EXPECT_TRUE(unrolled.count(rows)) << PrintFunc(scheduled);
    ExpectMatchesReference(scheduled, *func);
  }
}

// DENSE reads its weight as W[J, K] (here not declared layout-free): the packed copy is transposed
// to [K, J] (in 16 x 16 tiles, the inner loop vectorized), so the register tile reads contiguous
// vectors of columns instead of a gather. Odd M (13) is padded to whole 8-row tiles (16 rows of
// X), and the tiles' write-back stores only the 13 rows: no padded product is stored.
TEST(DefaultScheduleRuleTest, CpuDenseTransposesPackedWeight) {
  absl::StatusOr<PrimFunc> func =
      MakeWorkload("DENSE_BIAS_RELU", {{"M", 13}, {"N", 256}, {"K", 48}});
  ASSERT_TRUE(func.ok()) << func.status();
  func = WithoutLayoutFree(*func);
  const PrimFunc scheduled = ApplyToModule(*func, Avx512CpuTarget()).second;
  const ScheduleShape shape = ShapeOf(scheduled);
  EXPECT_EQ(ShapeOfBuffer(shape, "W_global"), (std::vector<int64_t>{48, 256}))
      << PrintFunc(scheduled);
  // X's zero rows are a select inside the product's loads, not a copy.
  EXPECT_EQ(ShapeOfBuffer(shape, "T_dense_pad"), (std::vector<int64_t>{}))
      << PrintFunc(scheduled);
  EXPECT_EQ(ShapeOfBuffer(shape, "X_pad"), (std::vector<int64_t>{})) << PrintFunc(scheduled);
  EXPECT_TRUE(shape.kinds.count(ForKind::kVectorized)) << PrintFunc(scheduled);
  // The packing copy's loops: the panel loop, then 16 x 16 tiles of (J_o, K_o, K_i, J_i).
  bool tiled_copy = false;
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    if (loop == nullptr || loop->for_kind != ForKind::kVectorized) return;
    const auto* extent = loop->extent.as<IntImmNode>();
    const auto* realize = loop->body.as<BlockRealizeNode>();
    tiled_copy = tiled_copy || (extent != nullptr && extent->value == 16 && realize != nullptr &&
                                realize->block->name == "W_global");
  });
  EXPECT_TRUE(tiled_copy) << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
}

// A long reduction (K = 4200: a 32-column panel would take 525 KiB) gets 16-column panels and
// 16-row tiles (the same 16 accumulators), and still computes the product.
TEST(DefaultScheduleRuleTest, CpuMatmulNarrowsPanelsForLongReductions) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM", {{"M", 16}, {"N", 64}, {"K", 4200}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, Avx512CpuTarget()).second;
  const ScheduleShape shape = ShapeOf(scheduled);
  EXPECT_EQ(ShapeOfBuffer(shape, "B_global"), (std::vector<int64_t>{1, 4200, 64}))
      << PrintFunc(scheduled);
  bool sixteen_rows = false;
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    const auto* extent = loop == nullptr ? nullptr : loop->extent.as<IntImmNode>();
    sixteen_rows = sixteen_rows || (extent != nullptr && loop->for_kind == ForKind::kUnrolled &&
                                    extent->value == 16);
  });
  EXPECT_TRUE(sixteen_rows) << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
}

// Shapes no tile divides (a prime N = 257, M = 7, K = 29) are padded to whole tiles (PadEinsum:
// 8 rows of 8-row tiles, 288 columns of 32-column panels; K is not) and still compute the
// product. The padding costs no OpenMP region of its own: A's zero rows are selects in the
// product's loads, B's zero columns are written by the packing copy, and the cropping copy out
// is inlined into the tiles' write-back, which stores only the 7 x 257 (no padded product).
TEST(DefaultScheduleRuleTest, CpuMatmulOnOddShapesMatchesReference) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM", {{"M", 7}, {"N", 257}, {"K", 29}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, Avx512CpuTarget()).second;
  const ScheduleShape shape = ShapeOf(scheduled);
  EXPECT_EQ(ShapeOfBuffer(shape, "C_pad"), (std::vector<int64_t>{})) << PrintFunc(scheduled);
  EXPECT_EQ(ShapeOfBuffer(shape, "B_pad_global"), (std::vector<int64_t>{1, 29, 288}))
      << PrintFunc(scheduled);
  EXPECT_EQ(ShapeOfBuffer(shape, "A_pad"), (std::vector<int64_t>{})) << PrintFunc(scheduled);
  EXPECT_EQ(ShapeOfBuffer(shape, "B_pad"), (std::vector<int64_t>{})) << PrintFunc(scheduled);
  int parallel_loops = 0;
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    parallel_loops += loop != nullptr && loop->for_kind == ForKind::kParallel;
  });
  EXPECT_EQ(parallel_loops, 1) << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
}

// The extent of the one parallel loop of `scheduled` (0 when there is none).
int64_t ParallelExtent(const PrimFunc& scheduled) {
  int64_t extent = 0;
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    if (loop == nullptr || loop->for_kind != ForKind::kParallel) return;
    if (const auto* imm = loop->extent.as<IntImmNode>()) extent = imm->value;
  });
  return extent;
}

// N = 257 pads to 288 columns: 9 panels of 32 leave one core 5 of them (160 columns) on two
// cores, 6 panels of 48 (one 8 x 3-vector tile each) 3 (144 columns), so two cores get the
// wider panels; one core (or an unknown count) keeps 9. Both compute the product.
TEST(DefaultScheduleRuleTest, CpuMatmulPanelsBalanceTheCores) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM", {{"M", 127}, {"N", 257}, {"K", 29}});
  ASSERT_TRUE(func.ok()) << func.status();
  for (const auto& [cores, panels] :
       std::vector<std::pair<std::string, int64_t>>{{"1", 9}, {"2", 6}}) {
    absl::StatusOr<Target> target = Avx512CpuTarget().With("cores", cores);
    ASSERT_TRUE(target.ok()) << target.status();
    const PrimFunc scheduled = ApplyToModule(*func, *target).second;
    EXPECT_EQ(ParallelExtent(scheduled), panels) << cores << " cores\n" << PrintFunc(scheduled);
    ExpectMatchesReference(scheduled, *func);
  }
}

// With an odd N the product is padded too: the bias and relu epilogues go into the cropping
// copy out of the padded product, and that into the tiles' write-back (no block of their own is
// left, no padded product is stored); they see the whole sums.
TEST(DefaultScheduleRuleTest, CpuDenseOnOddShapesPutsEpiloguesIntoTheWriteBack) {
  absl::StatusOr<PrimFunc> func =
      MakeWorkload("DENSE_BIAS_RELU", {{"M", 13}, {"N", 67}, {"K", 24}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, Avx512CpuTarget()).second;
  const ScheduleShape shape = ShapeOf(scheduled);
  EXPECT_EQ(ShapeOfBuffer(shape, "T_dense_pad"), (std::vector<int64_t>{}))
      << PrintFunc(scheduled);
  const std::set<std::string> names = BlockNames(scheduled);
  EXPECT_EQ(names.count("T_add"), 0u) << PrintFunc(scheduled);
  EXPECT_EQ(names.count("T_dense_unpad"), 0u) << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
}

// A layout-free weight (LINEAR's W[K, N]) is read from strips [N / 16, K, 16] that a nest of its
// own, annotated as packing, fills: no copy runs per panel, the kernel splits off
// (ir/prepack.h), and the whole function (packing, then kernel) computes the product.
TEST(DefaultScheduleRuleTest, CpuLinearReadsItsWeightFromPrepackedStrips) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("LINEAR", {{"M", 16}, {"N", 256}, {"K", 48}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, Avx512CpuTarget()).second;
  EXPECT_EQ(ShapeOfBuffer(ShapeOf(scheduled), "W_global"), (std::vector<int64_t>{16, 48, 16}))
      << PrintFunc(scheduled);
  absl::StatusOr<std::optional<PrepackSplit>> split = SplitPrepack(scheduled);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_TRUE(split->has_value()) << PrintFunc(scheduled);
  EXPECT_EQ(BlockNames((*split)->prepack), std::set<std::string>({"root", "W_global"}));
  EXPECT_EQ(BlockNames((*split)->prepacked).count("W_global"), 0u);
  EXPECT_GT(ParallelExtent((*split)->prepacked), 1) << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
}

// A product of one row (a decoder's token) by a layout-free W[K, N] reads W from strips too,
// four strips (64 columns) a parallel iteration, one vector accumulator per strip; a weight
// without a layout of its own to choose (WithoutLayoutFree) and N = 1000 (no whole number of
// 64-column tiles) are read in place. Each computes the product.
TEST(DefaultScheduleRuleTest, CpuOneRowProductReadsItsWeightFromStrips) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("LINEAR", {{"M", 1}, {"N", 256}, {"K", 40}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, Avx512CpuTarget()).second;
  EXPECT_EQ(ShapeOfBuffer(ShapeOf(scheduled), "W_global"), (std::vector<int64_t>{16, 40, 16}))
      << PrintFunc(scheduled);
  EXPECT_EQ(ParallelExtent(scheduled), 4) << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
  const PrimFunc in_place = ApplyToModule(WithoutLayoutFree(*func), Avx512CpuTarget()).second;
  EXPECT_TRUE(ShapeOfBuffer(ShapeOf(in_place), "W_global").empty()) << PrintFunc(in_place);
  ExpectMatchesReference(in_place, WithoutLayoutFree(*func));
  absl::StatusOr<PrimFunc> odd = MakeWorkload("LINEAR", {{"M", 1}, {"N", 1000}, {"K", 24}});
  ASSERT_TRUE(odd.ok()) << odd.status();
  const PrimFunc odd_scheduled = ApplyToModule(*odd, Avx512CpuTarget()).second;
  EXPECT_TRUE(ShapeOfBuffer(ShapeOf(odd_scheduled), "W_global").empty())
      << PrintFunc(odd_scheduled);
  ExpectMatchesReference(odd_scheduled, *odd);
}

// On a core with the dot products a one-row product in bfloat16 or int8 sums its k in groups
// from strips packed in groups ([N / 16, K / g, 16, g]), int8 shifted with its weight's sums in the
// prepack: int8 LINEAR 1 x 4096 x 4096 0.82 -> 0.10 ms (Zen 4).
TEST(DefaultScheduleRuleTest, CpuOneRowProductTakesTheDotProducts) {
  absl::StatusOr<PrimFunc> int8_row =
      MakeWorkload("LINEAR", {{"M", 1}, {"N", 128}, {"K", 48}}, "int8");
  ASSERT_TRUE(int8_row.ok()) << int8_row.status();
  const PrimFunc eights = ApplyToModule(*int8_row, DotProductCpuTarget()).second;
  EXPECT_GT(ExternCalls(eights, kCpuDotInt8x8ShiftedCall), 0) << PrintFunc(eights);
  EXPECT_EQ(ShapeOfBuffer(ShapeOf(eights), "W_global"), (std::vector<int64_t>{8, 6, 2, 16, 4}))
      << PrintFunc(eights);
  ExpectMatchesReference(eights, *int8_row);
  absl::StatusOr<PrimFunc> bf16_row =
      MakeWorkload("LINEAR", {{"M", 1}, {"N", 128}, {"K", 48}}, "bfloat16", "float32");
  ASSERT_TRUE(bf16_row.ok()) << bf16_row.status();
  const PrimFunc pairs = ApplyToModule(*bf16_row, DotProductCpuTarget()).second;
  EXPECT_GT(ExternCalls(pairs, kCpuDotBf16Call), 0) << PrintFunc(pairs);
  ExpectMatchesReference(pairs, *bf16_row);
  // Without the dot product: the widened strips.
  const PrimFunc widened = ApplyToModule(*int8_row, Avx512CpuTarget()).second;
  EXPECT_EQ(ExternCalls(widened, kCpuDotInt8x8ShiftedCall), 0) << PrintFunc(widened);
  EXPECT_EQ(ShapeOfBuffer(ShapeOf(widened), "W_global"), (std::vector<int64_t>{8, 48, 16}));
  ExpectMatchesReference(widened, *int8_row);
}

// Weights larger than half of L2 (1 MiB of the target's 1 MiB: they come from memory inside a
// model) are prefetched 64 iterations ahead by the tile's reduction loop (the default's choice of
// kPrefetchDistances): the emitted C asks L1 for one line per vector of the tile, every k, and the
// product is still computed. Weights that stay cached (48 KiB) get no prefetches.
TEST(DefaultScheduleRuleTest, CpuMatmulPrefetchesTheStripsItStreamsAheadWhereTheyAreLarge) {
  for (const int64_t k : {1024, 48}) {
    SCOPED_TRACE(k);
    absl::StatusOr<PrimFunc> func = MakeWorkload("LINEAR", {{"M", 16}, {"N", 256}, {"K", k}});
    ASSERT_TRUE(func.ok()) << func.status();
    const PrimFunc scheduled = ApplyToModule(*func, Avx512CpuTarget()).second;
    const int64_t expected =
        k == 1024 ? dlight::kPrefetchDistances[dlight::kDefaultPrefetchChoice] : 0;
    int annotated = 0;
    PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
      const auto* loop = s.as<ForNode>();
      if (loop == nullptr || !loop->annotations.count(kPrefetchAhead)) return;
      ++annotated;
      EXPECT_EQ(std::get<int64_t>(loop->annotations.at(kPrefetchAhead)), expected);
      EXPECT_TRUE(IsConstInt(loop->extent, k)) << PrintFunc(scheduled);
    });
    EXPECT_EQ(annotated, 1) << PrintFunc(scheduled);
    absl::StatusOr<std::string> c = GenerateC(scheduled, "linear_kernel");
    ASSERT_TRUE(c.ok()) << c.status();
    size_t prefetches = 0;
    for (size_t at = c->find("__builtin_prefetch(&W_global["); at != std::string::npos;
         at = c->find("__builtin_prefetch(&W_global[", at + 1)) {
      const std::string line = c->substr(at, c->find('\n', at) - at);
      EXPECT_TRUE(absl::EndsWith(line, "], 0, 3);")) << line;
      ++prefetches;
    }
    EXPECT_EQ(prefetches, expected > 0 ? 2u : 0u) << *c;  // the tile's two vectors of 16 columns
    ExpectMatchesReference(scheduled, *func);
  }
}

// Read from pre-packed strips, a panel of two tiles must fit half of L2 like a tile's: K = 3000
// makes a 64-column panel 750 KiB of the target's 1 MiB, so the strips are read one 32-column
// tile per panel (the columns' decision [panels, tiles per panel, vectors per tile]); K = 1000
// keeps two, and so does a B packed per call (two tiles' columns make the copy's reads longer).
TEST(DefaultScheduleRuleTest, CpuMatmulPanelsOfSeveralTilesStayWithinHalfOfL2) {
  struct Case {
    int64_t k;
    bool layout_free;
    std::vector<int64_t> columns;
  };
  for (const Case& c :
       {Case{3000, true, {8, 1, 2}}, Case{1000, true, {4, 2, 2}}, Case{3000, false, {4, 2, 2}}}) {
    absl::StatusOr<PrimFunc> func = MakeWorkload("LINEAR", {{"M", 16}, {"N", 256}, {"K", c.k}});
    ASSERT_TRUE(func.ok()) << func.status();
    const PrimFunc workload = c.layout_free ? *func : WithoutLayoutFree(*func);
    std::optional<std::vector<int64_t>> decided;
    for (const DefaultRulePtr& rule : DefaultRulesFor(Avx512CpuTarget())) {
      if (rule->name() != "CpuDefault") continue;
      absl::StatusOr<std::optional<Schedule>> sch = rule->Apply(workload, Avx512CpuTarget());
      ASSERT_TRUE(sch.ok() && sch->has_value()) << sch.status();
      const Trace& trace = (*sch)->trace();
      for (size_t i = 0; i < trace.size(); ++i) {
        // The second padded tile drawn is the columns' (the first is the rows').
        if (std::string(trace.insts()[i].kind->name) == "SamplePaddedTile") {
          decided = trace.decision(i).AsIntArray();
        }
      }
      ExpectMatchesReference((*sch)->func(), workload);
    }
    EXPECT_EQ(decided, c.columns) << "K = " << c.k << (c.layout_free ? ", pre-packed" : "");
  }
}

// DENSE's weight W[N, K] on an odd shape: N = 67 is padded to 80 columns, and the packing pads
// and transposes as it fills the strips [5, K, 16]; the epilogues still see whole sums.
TEST(DefaultScheduleRuleTest, CpuDenseOnOddShapesPacksPaddedStrips) {
  absl::StatusOr<PrimFunc> func =
      MakeWorkload("DENSE_BIAS_RELU", {{"M", 13}, {"N", 67}, {"K", 24}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, Avx512CpuTarget()).second;
  absl::StatusOr<std::optional<PrepackSplit>> split = SplitPrepack(scheduled);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_TRUE(split->has_value()) << PrintFunc(scheduled);
  ASSERT_EQ((*split)->packed.size(), 1u);
  EXPECT_EQ(default_schedule_testing::ConstantShape((*split)->packed[0]),
            (std::vector<int64_t>{5, 24, 16}))
      << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
}

// On an AVX2 core (8 floats, 16 registers) the default's tiles (6 x 2 vectors, rows padded to
// whole tiles through a copy of A of their own; docs/cpu-backend.md "Micro-kernels by core")
// compute the product on round and odd shapes, packed per panel and from prepacked strips, with
// epilogues.
TEST(DefaultScheduleRuleTest, CpuMatmulOnAnAvx2CoreMatchesReference) {
  const Target avx2 = default_schedule_testing::Avx2CpuTarget();
  for (const auto& [name, m, n, k] :
       std::vector<std::tuple<std::string, int64_t, int64_t, int64_t>>{
           {"GMM", 96, 64, 40},
           {"GMM", 64, 48, 24},
           {"GMM", 7, 257, 29},
           {"LINEAR", 37, 67, 23},
           {"LINEAR", 32, 128, 48},
           {"DENSE_BIAS_RELU", 13, 67, 24}}) {
    SCOPED_TRACE(name + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                 std::to_string(k));
    absl::StatusOr<PrimFunc> func = MakeWorkload(name, {{"M", m}, {"N", n}, {"K", k}});
    ASSERT_TRUE(func.ok()) << func.status();
    ExpectMatchesReference(ApplyToModule(*func, avx2).second, *func);
  }
}

// On a core with AVX-512 BF16 a bfloat16 product summed in float32 takes its k in pairs: B is
// packed with each column's pair side by side (a GMM's panel [.., K / 2, J, 2], a LINEAR's weight
// in strips [N / 16, K / 2, 16, 2]) and each tile vector adds a pair of products by one call of
// the dot product; the products match the reference (vdpbf16ps on a host that has it, the
// prelude's scalar loop elsewhere). Without the dot product in the target, or with an odd K, the
// tile widens every element to float32 as before.
TEST(DefaultScheduleRuleTest, CpuBfloat16ProductTakesPairsOfKOnADotProductCore) {
  absl::StatusOr<PrimFunc> gmm =
      MakeWorkload("GMM", {{"B", 1}, {"M", 32}, {"N", 256}, {"K", 48}}, "bfloat16", "float32");
  ASSERT_TRUE(gmm.ok()) << gmm.status();
  const PrimFunc gmm_paired = ApplyToModule(*gmm, DotProductCpuTarget()).second;
  EXPECT_GT(ExternCalls(gmm_paired, kCpuDotBf16Call), 0) << PrintFunc(gmm_paired);
  EXPECT_EQ(ShapeOfBuffer(ShapeOf(gmm_paired), "B_global"), (std::vector<int64_t>{1, 24, 256, 2}))
      << PrintFunc(gmm_paired);
  ExpectMatchesReference(gmm_paired, *gmm);

  absl::StatusOr<PrimFunc> linear =
      MakeWorkload("LINEAR", {{"M", 16}, {"N", 64}, {"K", 40}}, "bfloat16", "float32");
  ASSERT_TRUE(linear.ok()) << linear.status();
  const PrimFunc linear_paired = ApplyToModule(*linear, DotProductCpuTarget()).second;
  EXPECT_GT(ExternCalls(linear_paired, kCpuDotBf16Call), 0) << PrintFunc(linear_paired);
  EXPECT_EQ(ShapeOfBuffer(ShapeOf(linear_paired), "W_global"), (std::vector<int64_t>{4, 20, 16, 2}))
      << PrintFunc(linear_paired);
  ExpectMatchesReference(linear_paired, *linear);

  const PrimFunc widened = ApplyToModule(*gmm, Avx512CpuTarget()).second;
  EXPECT_EQ(ExternCalls(widened, kCpuDotBf16Call), 0) << PrintFunc(widened);
  absl::StatusOr<PrimFunc> odd_k =
      MakeWorkload("GMM", {{"B", 1}, {"M", 32}, {"N", 256}, {"K", 47}}, "bfloat16", "float32");
  ASSERT_TRUE(odd_k.ok()) << odd_k.status();
  const PrimFunc odd_widened = ApplyToModule(*odd_k, DotProductCpuTarget()).second;
  EXPECT_EQ(ExternCalls(odd_widened, kCpuDotBf16Call), 0) << PrintFunc(odd_widened);
  ExpectMatchesReference(odd_widened, *odd_k);
}

// With AVX-512 VNNI an int8 product summed in int32 takes its k eight at a time (panels [.., K / 8,
// J / 16, 2, 16, 4], two vpdpbusd per call) where 8 divides K, else four ([.., K / 4, J, 4]), in
// the shifted form (ShiftInt8Product: each panel's column sums of B, C_shift, start the tiles'
// sums), and is exact; a K that 4 does not divide, or a core without VNNI, widens each element to
// int32.
TEST(DefaultScheduleRuleTest, CpuInt8ProductTakesEightsOrFoursOfKOnAVnniCore) {
  absl::StatusOr<PrimFunc> gmm =
      MakeWorkload("GMM", {{"B", 1}, {"M", 32}, {"N", 256}, {"K", 48}}, "int8");
  ASSERT_TRUE(gmm.ok()) << gmm.status();
  const PrimFunc eights = ApplyToModule(*gmm, DotProductCpuTarget()).second;
  EXPECT_GT(ExternCalls(eights, kCpuDotInt8x8ShiftedCall), 0) << PrintFunc(eights);
  EXPECT_EQ(ShapeOfBuffer(ShapeOf(eights), "B_global"), (std::vector<int64_t>{1, 6, 16, 2, 16, 4}))
      << PrintFunc(eights);
  EXPECT_EQ(ShapeOfBuffer(ShapeOf(eights), "C_shift"), (std::vector<int64_t>{1, 256}))
      << PrintFunc(eights);
  ExpectMatchesReference(eights, *gmm);
  EXPECT_EQ(ExternCalls(ApplyToModule(*gmm, Avx512CpuTarget()).second, kCpuDotInt8x8ShiftedCall),
            0);
  absl::StatusOr<PrimFunc> fours_k =
      MakeWorkload("GMM", {{"B", 1}, {"M", 32}, {"N", 256}, {"K", 44}}, "int8");
  ASSERT_TRUE(fours_k.ok()) << fours_k.status();
  const PrimFunc quads = ApplyToModule(*fours_k, DotProductCpuTarget()).second;
  EXPECT_GT(ExternCalls(quads, kCpuDotInt8ShiftedCall), 0) << PrintFunc(quads);
  EXPECT_EQ(ShapeOfBuffer(ShapeOf(quads), "B_global"), (std::vector<int64_t>{1, 11, 256, 4}))
      << PrintFunc(quads);
  ExpectMatchesReference(quads, *fours_k);
  // A weight's column sums are computed with its packing, once (ir/prepack.h).
  absl::StatusOr<PrimFunc> linear =
      MakeWorkload("LINEAR", {{"M", 32}, {"N", 64}, {"K", 48}}, "int8");
  ASSERT_TRUE(linear.ok()) << linear.status();
  const PrimFunc prepacked = ApplyToModule(*linear, DotProductCpuTarget()).second;
  EXPECT_GT(ExternCalls(prepacked, kCpuDotInt8x8ShiftedCall), 0) << PrintFunc(prepacked);
  absl::StatusOr<std::optional<PrepackSplit>> split = SplitPrepack(prepacked);
  ASSERT_TRUE(split.ok() && split->has_value()) << split.status() << PrintFunc(prepacked);
  std::vector<std::string> packed;
  for (const Buffer& b : (*split)->packed) packed.push_back(b.name());
  EXPECT_EQ(packed, (std::vector<std::string>{"Y_shift", "W_global"})) << PrintFunc(prepacked);
  ExpectMatchesReference(prepacked, *linear);
  absl::StatusOr<PrimFunc> odd_k =
      MakeWorkload("GMM", {{"B", 1}, {"M", 32}, {"N", 256}, {"K", 46}}, "int8");
  ASSERT_TRUE(odd_k.ok()) << odd_k.status();
  const PrimFunc widened = ApplyToModule(*odd_k, DotProductCpuTarget()).second;
  EXPECT_EQ(
      ExternCalls(widened, kCpuDotInt8ShiftedCall) + ExternCalls(widened, kCpuDotInt8x8ShiftedCall),
      0)
      << PrintFunc(widened);
  ExpectMatchesReference(widened, *odd_k);
}

// Rows and columns that the tiles do not divide are padded (PadEinsum) and still take the dot
// products: A's padded copy stays a copy of its own (the intrinsic reads plain loads), B's is
// inlined into its packing. Exact (int8) or within bfloat16's rounding (bfloat16).
TEST(DefaultScheduleRuleTest, CpuDotProductsCoverPaddedTiles) {
  absl::StatusOr<PrimFunc> gmm =
      MakeWorkload("GMM", {{"B", 1}, {"M", 30}, {"N", 250}, {"K", 48}}, "int8");
  ASSERT_TRUE(gmm.ok()) << gmm.status();
  const PrimFunc int8_padded = ApplyToModule(*gmm, DotProductCpuTarget()).second;
  EXPECT_GT(ExternCalls(int8_padded, kCpuDotInt8x8ShiftedCall), 0) << PrintFunc(int8_padded);
  EXPECT_EQ(ShapeOfBuffer(ShapeOf(int8_padded), "A_pad"), (std::vector<int64_t>{1, 32, 48}))
      << PrintFunc(int8_padded);
  ExpectMatchesReference(int8_padded, *gmm);
  absl::StatusOr<PrimFunc> linear =
      MakeWorkload("LINEAR", {{"M", 30}, {"N", 250}, {"K", 32}}, "bfloat16", "float32");
  ASSERT_TRUE(linear.ok()) << linear.status();
  const PrimFunc bf16_padded = ApplyToModule(*linear, DotProductCpuTarget()).second;
  EXPECT_GT(ExternCalls(bf16_padded, kCpuDotBf16Call), 0) << PrintFunc(bf16_padded);
  ExpectMatchesReference(bf16_padded, *linear);
}

// Compiled for a core with both dot products (Cooper Lake; only the assembly is read), the tile's
// loop is vdpbf16ps (bfloat16) or vpdpbusd (int8) on broadcast groups of A and rows of the packed
// panel, its accumulators in registers: no vector store inside it.
TEST(DefaultScheduleRuleTest, CpuDotProductTilesKeepTheirSumsInRegisters) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the check reads x86-64 assembly";
#endif
  for (const auto& [dtype, acc, instruction] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"bfloat16", "float32", "vdpbf16ps"}, {"int8", "", "vpdpbusd"}}) {
    absl::StatusOr<PrimFunc> gmm =
        MakeWorkload("GMM", {{"B", 1}, {"M", 64}, {"N", 256}, {"K", 128}}, dtype, acc);
    ASSERT_TRUE(gmm.ok()) << gmm.status();
    const PrimFunc scheduled = ApplyToModule(*gmm, DotProductCpuTarget()).second;
    absl::StatusOr<std::string> code = GenerateC(scheduled, "dot_" + dtype);
    ASSERT_TRUE(code.ok()) << code.status();
    absl::StatusOr<std::string> text =
        testing::CAssembly(::testing::TempDir(), "dot_" + dtype, *code, "cooperlake");
    ASSERT_TRUE(text.ok()) << text.status();
    const std::vector<std::string> stores =
        testing::VectorStoresOfInnermostLoopsWith(*text, instruction);
    ASSERT_GE(stores.size(), 1u) << "no loop of " << instruction << " in\n" << *code;
    for (const std::string& loop_stores : stores) {
      EXPECT_EQ(loop_stores, "") << dtype << ": vector stores in a loop of dot products";
    }
  }
}

}  // namespace
}  // namespace tessera
