// The CPU default's convolution schedules (rules/default/tiled_conv.cc): the register tile fits
// the vector registers and divides the shape, a depthwise convolution reads its input through the
// inlined padding, a dense one's weights are read from strips packed once, and on odd widths,
// channel counts no vector divides and stride 2 both still compute the unscheduled function's
// result.
#include "rules/default/tiled_conv.h"

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "codegen/codegen_c.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/cpu_intrinsics.h"
#include "ir/functor.h"
#include "ir/loop_annotations.h"
#include "ir/prepack.h"
#include "ir/printer.h"
#include "rules/default/analysis.h"
#include "tests/rules/default_schedule_testing.h"

namespace tessera {
namespace {

using default_schedule_testing::ApplyToModule;
using default_schedule_testing::Avx512CpuTarget;
using default_schedule_testing::CpuTarget;
using default_schedule_testing::DotProductCpuTarget;
using default_schedule_testing::ExpectMatchesReference;
using default_schedule_testing::ExternCalls;
using default_schedule_testing::ShapeOf;
using default_schedule_testing::ShapeOfBuffer;

std::map<std::string, int64_t> Conv2d(int64_t hw, int64_t ci, int64_t co, int64_t stride) {
  return {{"N", 1},   {"H", hw}, {"W", hw},          {"CI", ci},
          {"CO", co}, {"K", 3},  {"stride", stride}, {"padding", 1}};
}

std::map<std::string, int64_t> Depthwise(int64_t h, int64_t w, int64_t c, int64_t stride) {
  return {{"N", 1}, {"H", h}, {"W", w}, {"C", c}, {"K", 3}, {"stride", stride}, {"padding", 1}};
}

// The convolution block of `func` (its only reduction) with its loops.
std::optional<dlight::BlockInfo> ConvBlock(const PrimFunc& func, Schedule* sch) {
  *sch = Schedule::Create(func, /*seed=*/1);
  std::optional<std::vector<dlight::BlockInfo>> blocks = dlight::NormalizeBlocks(sch);
  if (!blocks.has_value()) return std::nullopt;
  for (const dlight::BlockInfo& info : *blocks) {
    if (info.IsReduction()) return info;
  }
  return std::nullopt;
}

// The cores the tiles are sized for: AVX-512 (16 floats, 32 registers) and AVX2 (8, 16).
const dlight::CpuCore kAvx512Core{16, 32, 1 << 20};
const dlight::CpuCore kAvx2Core{8, 16, 512 << 10};

// Each tile divides the output width and channels and keeps its accumulators, one weight vector
// per column and the broadcast input within the core's vector registers (no spilled
// accumulator), and has at least 2 rows; the weights of the small convolution are swept per
// pixel tile.
TEST(TiledConvTest, DefaultTileFitsTheRegistersAndDividesTheShape) {
  for (const auto& [hw, ci, co] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {56, 64, 64}, {14, 256, 256}, {28, 128, 128}, {7, 512, 512}, {12, 16, 48}}) {
    for (const dlight::CpuCore& core : {kAvx512Core, kAvx2Core}) {
      SCOPED_TRACE("HW=" + std::to_string(hw) + " CO=" + std::to_string(co) +
                   " lanes=" + std::to_string(core.lanes));
      absl::StatusOr<PrimFunc> func = MakeWorkload("C2D", Conv2d(hw, ci, co, 1));
      ASSERT_TRUE(func.ok()) << func.status();
      Schedule sch = Schedule::Create(*func, 1);
      std::optional<dlight::BlockInfo> info = ConvBlock(*func, &sch);
      ASSERT_TRUE(info.has_value());
      absl::StatusOr<Block> block = dlight::BlockByName(sch, info->name);
      ASSERT_TRUE(block.ok());
      EXPECT_EQ(dlight::ClassifyChannelsLast(*block, *info), dlight::ChannelsLastKind::kBroadcast);
      absl::StatusOr<dlight::ConvTiling> tiling = dlight::DefaultConvTiling(*info, core);
      ASSERT_TRUE(tiling.ok()) << tiling.status();
      const std::vector<int64_t> rows = tiling->rows.AsIntArray();
      const std::vector<int64_t> columns = tiling->columns.AsIntArray();
      ASSERT_EQ(rows.size(), 2u);
      ASSERT_EQ(columns.size(), 2u);
      // Whole vectors of the core's lanes: the decision counts vectors.
      ASSERT_EQ(co % core.lanes, 0);
      const int64_t vectors = columns[1];
      EXPECT_GE(rows[1], 2);
      EXPECT_EQ(rows[0] * rows[1], hw);
      EXPECT_EQ(columns[0] * columns[1], co / core.lanes);
      if (core.registers >= 32) {
        EXPECT_LE(rows[1] * vectors, 28);
        EXPECT_LE(rows[1] * vectors + vectors + 1, core.registers);
      } else {
        EXPECT_LE(rows[1] * vectors + 2, core.registers);  // the weights from memory
      }
      EXPECT_EQ(tiling->channels_inner, 9 * ci * co * 4 <= (1 << 20));
    }
  }
}

// The tiles on ResNet's 56x56x64: AVX-512's 14 x 2 vectors of 16 (28 accumulators, the fastest
// on Zen 4) and AVX2's 14 x 1 vector of 8 (14; within 4% of 7 x 2 on Zen 3, and ties go to
// fewer vectors, which won on power-of-two widths).
TEST(TiledConvTest, DefaultTileIsTheCoresLargest) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("C2D", Conv2d(56, 64, 64, 1));
  ASSERT_TRUE(func.ok()) << func.status();
  Schedule sch = Schedule::Create(*func, 1);
  std::optional<dlight::BlockInfo> info = ConvBlock(*func, &sch);
  ASSERT_TRUE(info.has_value());
  absl::StatusOr<dlight::ConvTiling> avx512 = dlight::DefaultConvTiling(*info, kAvx512Core);
  ASSERT_TRUE(avx512.ok()) << avx512.status();
  EXPECT_EQ(avx512->rows.AsIntArray(), (std::vector<int64_t>{4, 14}));
  EXPECT_EQ(avx512->columns.AsIntArray(), (std::vector<int64_t>{2, 2}));
  absl::StatusOr<dlight::ConvTiling> avx2 = dlight::DefaultConvTiling(*info, kAvx2Core);
  ASSERT_TRUE(avx2.ok()) << avx2.status();
  EXPECT_EQ(avx2->rows.AsIntArray(), (std::vector<int64_t>{4, 14}));
  EXPECT_EQ(avx2->columns.AsIntArray(), (std::vector<int64_t>{8, 1}));
}

// On a power-of-two width no divisor reaches 12 accumulators with 16 registers (8 x 1 is the
// best), so AVX2 takes 6 pixels x 2 vectors with the last tile clipped; AVX-512's 16 x 2 divides
// and stays sampled. The clipped tiling computes the convolution, here and on a width whose
// tail is 2 pixels of a 6-pixel tile (20).
TEST(TiledConvTest, Avx2ClipsTheLastTileWhereNoDivisorFillsTheRegisters) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("C2D", Conv2d(32, 32, 32, 1));
  ASSERT_TRUE(func.ok()) << func.status();
  Schedule sch = Schedule::Create(*func, 1);
  std::optional<dlight::BlockInfo> info = ConvBlock(*func, &sch);
  ASSERT_TRUE(info.has_value());
  absl::StatusOr<dlight::ConvTiling> avx2 = dlight::DefaultConvTiling(*info, kAvx2Core);
  ASSERT_TRUE(avx2.ok()) << avx2.status();
  EXPECT_EQ(avx2->clipped_rows, 6);
  EXPECT_EQ(avx2->columns.AsIntArray(), (std::vector<int64_t>{2, 2}));
  absl::StatusOr<dlight::ConvTiling> avx512 = dlight::DefaultConvTiling(*info, kAvx512Core);
  ASSERT_TRUE(avx512.ok()) << avx512.status();
  EXPECT_EQ(avx512->clipped_rows, 0);
  for (const int64_t width : {32, 20}) {
    SCOPED_TRACE("width " + std::to_string(width));
    absl::StatusOr<PrimFunc> conv = MakeWorkload("C2D", Conv2d(width, 16, 32, 1));
    ASSERT_TRUE(conv.ok()) << conv.status();
    ExpectMatchesReference(ApplyToModule(*conv, default_schedule_testing::Avx2CpuTarget()).second,
                           *conv);
  }
}

// A prime width above the row limit (14) has no row tile: DefaultConvTiling says so (the
// default falls back to one pixel per tile); a width of 13 is one tile of 13 rows.
TEST(TiledConvTest, NoTileForAPrimeWidthAboveTheRowLimit) {
  for (const int64_t width : {17, 13}) {
    absl::StatusOr<PrimFunc> func = MakeWorkload("C2D", Conv2d(width, 8, 64, 1));
    ASSERT_TRUE(func.ok()) << func.status();
    Schedule sch = Schedule::Create(*func, 1);
    std::optional<dlight::BlockInfo> info = ConvBlock(*func, &sch);
    ASSERT_TRUE(info.has_value());
    absl::StatusOr<dlight::ConvTiling> tiling = dlight::DefaultConvTiling(*info, kAvx512Core);
    if (width == 17) {
      EXPECT_FALSE(tiling.ok());
    } else {
      ASSERT_TRUE(tiling.ok()) << tiling.status();
      EXPECT_EQ(tiling->rows.AsIntArray(), (std::vector<int64_t>{1, 13}));
    }
  }
}

// Dense convolutions on odd widths, channel counts no vector divides and stride 2, through the
// whole default (tiled where a tile divides, the per-pixel fallback elsewhere).
TEST(TiledConvTest, DenseConvolutionsOnOddShapesMatchReference) {
  for (const auto& [hw, ci, co, stride] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
           {9, 5, 40, 1}, {13, 3, 32, 1}, {11, 4, 64, 2}, {14, 8, 96, 2}, {6, 16, 20, 1}}) {
    SCOPED_TRACE("HW=" + std::to_string(hw) + " CI=" + std::to_string(ci) +
                 " CO=" + std::to_string(co) + " stride=" + std::to_string(stride));
    absl::StatusOr<PrimFunc> func = MakeWorkload("C2D", Conv2d(hw, ci, co, stride));
    ASSERT_TRUE(func.ok()) << func.status();
    ExpectMatchesReference(ApplyToModule(*func, Avx512CpuTarget()).second, *func);
  }
}

// A dense convolution's weights are layout-free: the default reads them from strips
// [CO / 16, 3, 3, CI, 16] that a packing nest of their own fills once (split off as
// <symbol>_prepack, ir/prepack.h), on round and odd shapes alike; channel counts no vector
// divides (CO = 20) keep the plain weights. All compute the convolution.
TEST(TiledConvTest, DenseConvolutionWeightsArePrepackedIntoChannelStrips) {
  for (const auto& [hw, ci, co, strips] : std::vector<std::tuple<int64_t, int64_t, int64_t, bool>>{
           {14, 32, 64, true}, {9, 5, 48, true}, {6, 16, 20, false}}) {
    SCOPED_TRACE("HW=" + std::to_string(hw) + " CI=" + std::to_string(ci) +
                 " CO=" + std::to_string(co));
    absl::StatusOr<PrimFunc> func = MakeWorkload("C2D", Conv2d(hw, ci, co, 1));
    ASSERT_TRUE(func.ok()) << func.status();
    const PrimFunc scheduled = ApplyToModule(*func, Avx512CpuTarget()).second;
    absl::StatusOr<std::optional<PrepackSplit>> split = SplitPrepack(scheduled);
    ASSERT_TRUE(split.ok()) << split.status();
    ASSERT_EQ(split->has_value(), strips) << PrintFunc(scheduled);
    if (strips) {
      ASSERT_EQ((*split)->packed.size(), 1u);
      EXPECT_EQ(default_schedule_testing::ConstantShape((*split)->packed[0]),
                (std::vector<int64_t>{co / 16, 3, 3, ci, 16}))
          << PrintFunc(scheduled);
    }
    ExpectMatchesReference(scheduled, *func);
  }
}

// The loops of `f` that carry annotation `key`.
int LoopsAnnotated(const PrimFunc& f, const std::string& key) {
  int count = 0;
  PostOrderVisitStmts(f->body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) count += loop->annotations.count(key) > 0;
  });
  return count;
}

// The value of annotation `key` on the loops of `f` that carry it, -1 if none does.
int64_t AnnotationValue(const PrimFunc& f, const std::string& key) {
  int64_t value = -1;
  PostOrderVisitStmts(f->body, [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    if (loop != nullptr && loop->annotations.count(key)) {
      value = std::get<int64_t>(loop->annotations.at(key));
    }
  });
  return value;
}

// A tile that reads prepacked weights carries both strip prefetches on its innermost reduction
// loop (codegen/panel_prefetch.h). Weights above half of L2 (3x3x128x256, 1.1 MiB of the
// target's 1 MiB) get the strip's own lines prefetched 64 channels ahead into L1 and not the
// next strip; smaller ones (3x3x32x64) the next strip only, which the C leaves out where the
// tiles cycle through the strips (the weights stay cached); plain weights carry neither. All
// compute the convolution.
TEST(TiledConvTest, PrepackedStripsArePrefetched) {
  struct Case {
    int64_t hw, ci, co;
    int64_t next_strip, ahead;  // the annotations' values, -1 for none
    bool prefetched;
  };
  for (const Case& c : std::vector<Case>{
           {4, 128, 256, 0, 64, true}, {14, 32, 64, 1, 0, false}, {6, 16, 20, -1, -1, false}}) {
    SCOPED_TRACE("CI=" + std::to_string(c.ci) + " CO=" + std::to_string(c.co));
    absl::StatusOr<PrimFunc> func = MakeWorkload("C2D", Conv2d(c.hw, c.ci, c.co, 1));
    ASSERT_TRUE(func.ok()) << func.status();
    const PrimFunc scheduled = ApplyToModule(*func, Avx512CpuTarget()).second;
    EXPECT_EQ(AnnotationValue(scheduled, kPrefetchNextPanel), c.next_strip) << PrintFunc(scheduled);
    EXPECT_EQ(AnnotationValue(scheduled, kPrefetchAhead), c.ahead) << PrintFunc(scheduled);
    absl::StatusOr<std::string> code = GenerateC(scheduled, "conv");
    ASSERT_TRUE(code.ok()) << code.status();
    EXPECT_EQ(code->find("__builtin_prefetch(&") != std::string::npos, c.prefetched) << *code;
    EXPECT_EQ(code->find("], 0, 2)"), std::string::npos) << *code;  // no prefetch into L2
    ExpectMatchesReference(scheduled, *func);
  }
}

bool HasPaddingBlock(const PrimFunc& f) {
  bool found = false;
  PostOrderVisitStmts(f->body, [&](const Stmt& s) {
    if (const auto* block = s.as<BlockNode>()) found = found || block->name == "PadInput";
  });
  return found;
}

// A depthwise convolution has no padding block left (the bounds test moved into its loads); a
// dense one whose tile spans the output width neither, its tile skipping the zero terms
// (kSkipZeroTerms) with the kernel column unrolled; a dense one tiled across the width keeps its
// padding step. All compute the convolution.
TEST(TiledConvTest, PaddingIsInlinedWhereTheTestsBecomeConstants) {
  absl::StatusOr<PrimFunc> depthwise = MakeWorkload("DEP", Depthwise(8, 8, 32, 1));
  absl::StatusOr<PrimFunc> whole_width = MakeWorkload("C2D", Conv2d(8, 8, 32, 1));
  absl::StatusOr<PrimFunc> tiled_width = MakeWorkload("C2D", Conv2d(28, 8, 32, 1));
  ASSERT_TRUE(depthwise.ok() && whole_width.ok() && tiled_width.ok());
  ASSERT_TRUE(HasPaddingBlock(*depthwise));
  const PrimFunc scheduled_depthwise = ApplyToModule(*depthwise, Avx512CpuTarget()).second;
  const PrimFunc scheduled_whole = ApplyToModule(*whole_width, Avx512CpuTarget()).second;
  const PrimFunc scheduled_tiled = ApplyToModule(*tiled_width, Avx512CpuTarget()).second;
  EXPECT_FALSE(HasPaddingBlock(scheduled_depthwise)) << PrintFunc(scheduled_depthwise);
  EXPECT_FALSE(HasPaddingBlock(scheduled_whole)) << PrintFunc(scheduled_whole);
  EXPECT_TRUE(HasPaddingBlock(scheduled_tiled)) << PrintFunc(scheduled_tiled);
  EXPECT_EQ(LoopsAnnotated(scheduled_depthwise, kSkipZeroTerms), 0);
  EXPECT_EQ(LoopsAnnotated(scheduled_whole, kSkipZeroTerms), 1) << PrintFunc(scheduled_whole);
  EXPECT_EQ(LoopsAnnotated(scheduled_tiled, kSkipZeroTerms), 0);
  // The kernel column is unrolled beside the tile's rows.
  int unrolled_columns = 0;
  PostOrderVisitStmts(scheduled_whole->body, [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    unrolled_columns +=
        loop != nullptr && loop->loop_var.name() == "rw" && loop->for_kind == ForKind::kUnrolled;
  });
  EXPECT_EQ(unrolled_columns, 1) << PrintFunc(scheduled_whole);
  EXPECT_TRUE(ShapeOf(scheduled_depthwise).kinds.count(ForKind::kVectorized));
  ExpectMatchesReference(scheduled_depthwise, *depthwise);
  ExpectMatchesReference(scheduled_whole, *whole_width);
  ExpectMatchesReference(scheduled_tiled, *tiled_width);
}

// A depthwise convolution whose channels 16 lanes divide: tiles of 8 pixels x one channel
// vector (pixels unrolled, lanes vectorized) in a parallel tile loop annotated kUnswitchBorders,
// whose interior tiles code generation runs without the padding's tests; it computes the
// convolution. A width without a divisor in [2, 8] (13) keeps one pixel per iteration.
TEST(TiledConvTest, DepthwiseTilesPixelsAndUnswitchesTheBorders) {
  absl::StatusOr<PrimFunc> tiled = MakeWorkload("DEP", Depthwise(10, 16, 32, 1));
  absl::StatusOr<PrimFunc> prime = MakeWorkload("DEP", Depthwise(13, 13, 32, 1));
  ASSERT_TRUE(tiled.ok() && prime.ok());
  const PrimFunc scheduled = ApplyToModule(*tiled, Avx512CpuTarget()).second;
  const PrimFunc scheduled_prime = ApplyToModule(*prime, Avx512CpuTarget()).second;
  EXPECT_EQ(LoopsAnnotated(scheduled, kUnswitchBorders), 1) << PrintFunc(scheduled);
  EXPECT_EQ(LoopsAnnotated(scheduled_prime, kUnswitchBorders), 0) << PrintFunc(scheduled_prime);
  int pixel_tiles = 0;
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    pixel_tiles += loop != nullptr && loop->for_kind == ForKind::kUnrolled &&
                   IsConstInt(loop->extent, dlight::kMaxDepthwisePixels);
  });
  EXPECT_EQ(pixel_tiles, 1) << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *tiled);
  ExpectMatchesReference(scheduled_prime, *prime);
}

// Depthwise convolutions on odd sizes, channels no vector divides and stride 2 (tiled where the
// width has a divisor in [2, 8] and 16 lanes divide the channels: the last two).
TEST(TiledConvTest, DepthwiseOnOddShapesMatchesReference) {
  for (const auto& [h, w, c, stride] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
           {7, 9, 24, 1}, {13, 5, 3, 2}, {10, 11, 40, 2}, {13, 13, 32, 2}, {9, 10, 16, 1}}) {
    SCOPED_TRACE("H=" + std::to_string(h) + " W=" + std::to_string(w) + " C=" + std::to_string(c) +
                 " stride=" + std::to_string(stride));
    absl::StatusOr<PrimFunc> func = MakeWorkload("DEP", Depthwise(h, w, c, stride));
    ASSERT_TRUE(func.ok()) << func.status();
    ExpectMatchesReference(ApplyToModule(*func, Avx512CpuTarget()).second, *func);
  }
}

// On a core with AVX-512 BF16 a bfloat16 convolution summed in float32 takes its input channels
// in pairs: the weights are prepacked [CO / 16, KH, KW, CI / 2, 16, 2] and each tile vector adds
// a pair of channels' products by one call of the dot product; it matches the reference (vdpbf16ps
// on a host that has it, the prelude's loop elsewhere). An int8 one takes eights (VNNI). A
// convolution whose tile spans the width, which float32 reads through its inlined padding, keeps
// the padded copy here so that the intrinsic's load stays plain; a core without the dot product
// widens each element as before.
TEST(TiledConvTest, Bfloat16AndInt8ConvolutionsTakeGroupsOfInputChannelsOnADotProductCore) {
  std::map<std::string, int64_t> shape = {{"N", 1},   {"H", 6}, {"W", 28},     {"CI", 8},
                                          {"CO", 32}, {"K", 3}, {"stride", 1}, {"padding", 1}};
  absl::StatusOr<PrimFunc> conv = MakeWorkload("C2D", shape, "bfloat16", "float32");
  ASSERT_TRUE(conv.ok()) << conv.status();
  const PrimFunc paired = ApplyToModule(*conv, DotProductCpuTarget()).second;
  EXPECT_GT(ExternCalls(paired, kCpuDotBf16Call), 0) << PrintFunc(paired);
  EXPECT_EQ(ShapeOfBuffer(ShapeOf(paired), "weight_global"),
            (std::vector<int64_t>{2, 3, 3, 4, 16, 2}))
      << PrintFunc(paired);
  ExpectMatchesReference(paired, *conv);
  EXPECT_EQ(ExternCalls(ApplyToModule(*conv, Avx512CpuTarget()).second, kCpuDotBf16Call), 0);
  // int8 summed in int32 with VNNI: eights of input channels, weights [2, 3, 3, 1, 2, 16, 4], the
  // shifted product (its sums start from the weights' per output channel), exact.
  absl::StatusOr<PrimFunc> int8_conv = MakeWorkload("C2D", shape, "int8");
  ASSERT_TRUE(int8_conv.ok()) << int8_conv.status();
  const PrimFunc quads = ApplyToModule(*int8_conv, DotProductCpuTarget()).second;
  EXPECT_GT(ExternCalls(quads, kCpuDotInt8x8ShiftedCall), 0) << PrintFunc(quads);
  EXPECT_EQ(ShapeOfBuffer(ShapeOf(quads), "weight_global"),
            (std::vector<int64_t>{2, 3, 3, 1, 2, 16, 4}))
      << PrintFunc(quads);
  EXPECT_EQ(ShapeOfBuffer(ShapeOf(quads), "conv2d_nhwc_shift"), (std::vector<int64_t>{32}))
      << PrintFunc(quads);
  ExpectMatchesReference(quads, *int8_conv);
  shape["W"] = 12;  // one tile of 12 pixels: float32 inlines the padding into it
  absl::StatusOr<PrimFunc> whole_width = MakeWorkload("C2D", shape, "bfloat16", "float32");
  ASSERT_TRUE(whole_width.ok()) << whole_width.status();
  const PrimFunc padded_copy = ApplyToModule(*whole_width, DotProductCpuTarget()).second;
  EXPECT_GT(ExternCalls(padded_copy, kCpuDotBf16Call), 0) << PrintFunc(padded_copy);
  EXPECT_FALSE(ShapeOfBuffer(ShapeOf(padded_copy), "PadInput").empty()) << PrintFunc(padded_copy);
  ExpectMatchesReference(padded_copy, *whole_width);
  // The padded copy is the intrinsic's operand in memory: it cannot be inlined into the calls
  // (a sampled compute location tried, and the candidate did not build).
  Schedule inline_padding = Schedule::Create(padded_copy, 1);
  absl::StatusOr<BlockRV> pad = inline_padding.GetBlock("PadInput");
  ASSERT_TRUE(pad.ok()) << pad.status();
  absl::Status inlined = inline_padding.ComputeInline(*pad);
  EXPECT_EQ(inlined.code(), absl::StatusCode::kInvalidArgument) << inlined;
  EXPECT_NE(std::string(inlined.message()).find("is an operand of an extern call"),
            std::string::npos)
      << inlined;
  absl::StatusOr<PrimFunc> float_conv = MakeWorkload("C2D", shape);
  ASSERT_TRUE(float_conv.ok()) << float_conv.status();
  EXPECT_TRUE(
      ShapeOfBuffer(ShapeOf(ApplyToModule(*float_conv, DotProductCpuTarget()).second), "PadInput")
          .empty());
}

}  // namespace
}  // namespace tessera
