#include "rules/default/tiled_conv.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "base/status_macros.h"
#include "ir/functor.h"
#include "ir/loop_annotations.h"
#include "ir/prepack.h"
#include "rules/default/tiled_matmul.h"

namespace tessera {
namespace dlight {
namespace {

// The register file (CpuCore::registers): accumulators, one weight vector per tile column and
// the broadcast input share it. On AVX-512 (32), 7 x 4 vectors (28 accumulators + 4 + 1 = 33
// registers) spilled an accumulator to the stack in every iteration; 14 x 2 (31) does not, and
// ran 1.07x (ResNet 56x56x64) and 1.18x (14x14x256) faster on one thread; at most 28
// accumulators. With AVX2's 16 the FMAs read the weight vectors from memory (they are read once
// per tap and row anyway), so up to 14 accumulators beside the broadcast input: ResNet
// 56x56x64 on Zen 3, 2 threads, ran 172 GFLOP/s with 7 x 2 vectors (14), 160-165 with 8 x 1 and
// 14 x 1, 123 with 4 x 2 and 56 with 2 x 4 (`tessera run --trace`, medians of 5).
int64_t MaxAccumulators(const CpuCore& core) {
  return core.registers >= 32 ? core.registers - 4 : core.registers - 2;
}
// The rows a tile of `vectors` vectors may have on `core`: its accumulators, and with 32
// registers also one weight vector per column and the broadcast input, in the registers.
int64_t MaxRows(const CpuCore& core, int64_t vectors) {
  int64_t rows = std::min(kMaxConvRows, MaxAccumulators(core) / vectors);
  if (core.registers >= 32) rows = std::min(rows, (core.registers - 1 - vectors) / vectors);
  return rows;
}
// (kMaxConvRows = 14: 28 x 1 vector loaded more broadcasts than it computed FMAs, 1.3x slower
// than 14 x 2.)
// Weights up to this size stay in L2 beside the input rows when every thread sweeps all channel
// blocks of its pixel tiles (half of the 2 MiB L2 of the development machine).
constexpr int64_t kMaxInnerChannelWeightBytes = int64_t{1} << 20;

// The bytes of a convolution's float weights: a channels-wide column per reduction point
// (kernel taps x input channels).
int64_t ConvWeightBytes(const BlockInfo& info) {
  int64_t weights = info.extents[info.kinds.find_last_of('S')];
  for (size_t i = 0; i < info.kinds.size(); ++i) {
    if (info.kinds[i] == 'R') weights *= info.extents[i];
  }
  return weights * 4;
}

std::vector<InstValue> ConvFactors(const std::vector<ExprRV>& rvs) {
  std::vector<InstValue> factors;
  for (ExprRV rv : rvs) factors.push_back(InstValue::Of(rv));
  return factors;
}

// The largest divisor of `n` in [2, limit], or 1.
int64_t LargestDivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d >= 2; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

// True if `block` stores select(condition, load, constant) (or the constant first): a padding
// step, cheap to recompute wherever it is read.
bool IsPaddingBlock(const Block& block) {
  const auto* store = block->body.as<BufferStoreNode>();
  if (store == nullptr || block->init.defined()) return false;
  const auto* select = store->value.as<SelectNode>();
  if (select == nullptr) return false;
  auto is_constant = [](const Expr& e) {
    return e.as<FloatImmNode>() != nullptr || e.as<IntImmNode>() != nullptr;
  };
  auto is_load = [](const Expr& e) { return e.as<BufferLoadNode>() != nullptr; };
  return (is_load(select->true_value) && is_constant(select->false_value)) ||
         (is_constant(select->true_value) && is_load(select->false_value));
}

// The read of `block` that is a layout-free parameter of `func` laid out with the output
// channels (iteration variable `channels`) last; -1 when there is none.
int LayoutFreeWeightRead(const PrimFunc& func, const Block& block, int channels) {
  for (int r = 0; r < static_cast<int>(block->reads.size()); ++r) {
    const Buffer& buffer = block->reads[r].buffer;
    if (!IsLayoutFreeParam(func, buffer)) continue;
    const std::vector<int> iters = AccessIters(block, buffer);
    if (!iters.empty() && iters.back() == channels) return r;
  }
  return -1;
}

int ChannelIter(const BlockInfo& info) { return static_cast<int>(info.kinds.find_last_of('S')); }

// The reduction iteration variables that a load of `block` indexes in one dimension together
// with iteration variable `width` (the kernel column rw of `inputs[.., w + rw - 1, ..]`).
std::set<int> ReductionItersBeside(const Block& block, const BlockInfo& info, int width) {
  std::set<int> found;
  auto uses = [&](const Expr& index, int iter) {
    const VarNode* var = block->iter_vars[iter].var.get();
    return UsesVar(index, [&](const VarNode* v) { return v == var; });
  };
  PostOrderVisitExprs(block->body, [&](const Expr& e) {
    const auto* load = e.as<BufferLoadNode>();
    if (load == nullptr) return;
    for (const Expr& index : load->indices) {
      if (!uses(index, width)) continue;
      for (size_t i = 0; i < info.kinds.size(); ++i) {
        if (info.kinds[i] == 'R' && uses(index, static_cast<int>(i))) found.insert(i);
      }
    }
  });
  return found;
}

}  // namespace

ChannelsLastKind ClassifyChannelsLast(const Block& block, const BlockInfo& info) {
  const size_t last = info.kinds.find_last_of('S');
  if (info.IsInjective() || last == std::string::npos || info.kinds.find('S') == last) {
    return ChannelsLastKind::kNone;  // no reduction, or fewer than two spatial loops
  }
  std::vector<int> out = AccessIters(block, block->writes[0].buffer);
  if (out.empty() || out.back() != static_cast<int>(last) || info.extents[last] <= 1) {
    return ChannelsLastKind::kNone;
  }
  return HasReadBroadcastOver(block, static_cast<int>(last)) ? ChannelsLastKind::kBroadcast
                                                             : ChannelsLastKind::kPerChannel;
}

bool ConvChannelsInner(const BlockInfo& info) {
  return ConvWeightBytes(info) <= kMaxInnerChannelWeightBytes;
}

absl::StatusOr<ConvTiling> DefaultConvTiling(const BlockInfo& info, const CpuCore& core) {
  const size_t last = info.kinds.find_last_of('S');
  const size_t width = info.kinds.find_last_of('S', last - 1);
  const int64_t channels = info.extents[last];
  const int64_t pixels = info.extents[width];
  int64_t best_rows = 0, best_columns = 0, best_accumulators = 0;
  const int64_t lanes = core.lanes;
  // A tie goes to fewer vectors (more rows). On Zen 3 (16 registers, 2 threads) 8 x 1 vectors
  // ran 142 GFLOP/s on 32x32x32 against 131 with 2 x 4 and 112 with 4 x 2, and 133 on a
  // 128 x 2048 x 2048 product read as a convolution against 127 (4 x 2) and 56 (2 x 4); 14 x 1
  // ran within 2-4% of 7 x 2 on 56x56x64 and 14x14x256 (165 / 172, 173 / 177), whose 2 x 4 ran
  // 56. On Zen 4 (32 registers, 2 threads) 8 x 2 ran the U-Net block's 64x64x32 -> 64 at 219
  // GFLOP/s against 156 with 4 x 4, and ResNet's 16x16x64 -> 64 at 213 against 181: the
  // weight vectors stream from L2, and 4 of them per 16 FMAs cost more than 4 more broadcasts.
  const int64_t max_vectors = MaxTileVectors(core, lanes);
  for (int64_t vectors = 1; vectors <= max_vectors; ++vectors) {
    // Fewer channels than a vector: one partial vector of the largest power of two dividing.
    const int64_t columns = channels < lanes ? FloorPowerOfTwo(channels, lanes) : vectors * lanes;
    if (channels % columns != 0 || (channels < lanes && vectors > 1)) continue;
    const int64_t rows = LargestDivisorAtMost(pixels, MaxRows(core, vectors));
    if (rows < 2 || rows * vectors <= best_accumulators) continue;
    best_accumulators = rows * vectors;
    best_rows = rows;
    best_columns = columns;
  }
  if (best_accumulators == 0) {
    return absl::FailedPreconditionError(
        "conv tiling: no row tile of >= 2 pixels divides the output width " +
        std::to_string(pixels) + " with a vector tile dividing " + std::to_string(channels) +
        " channels");
  }
  ConvTiling tiling;
  // Eight accumulators (8 x 1 on a width of 32 or 128) keep an AVX2 core's two FMA pipes at
  // three quarters of their peak at best; 6 x 2 with a clipped tile ran the U-Net block's 3 x 3
  // convolution of 128 x 128 x 96 -> 32 at 177 GFLOP/s against 160 (Zen 3, 2 threads, two
  // alternating rounds; 5 x 2 ran 176), 32 x 32 x 32 -> 32 at 140 against 128.
  constexpr int64_t kClippedRows = 6;
  if (core.registers < 32 && best_accumulators < 2 * kClippedRows && pixels > kClippedRows &&
      channels % (2 * lanes) == 0) {
    best_rows = kClippedRows;
    best_columns = 2 * lanes;
    tiling.clipped_rows = kClippedRows;
  }
  tiling.rows = InstValue::IntArray({(pixels + best_rows - 1) / best_rows, best_rows});
  tiling.columns = channels % lanes == 0
                       ? InstValue::IntArray({channels / best_columns, best_columns / lanes})
                       : InstValue::IntArray({channels / best_columns, best_columns});
  tiling.channels_inner = ConvChannelsInner(info);
  tiling.prefetch_ahead = DefaultPrefetchAhead(ConvWeightBytes(info), core);
  // Where the strips' own lines are prefetched ahead, the next strip's prefetch into L2 only
  // costs: ResNet-18's 7x7x512 convolution alone ran 0.73-1.10 ms with the first alone, 1.24-1.48
  // with both, 1.23-1.61 with the second alone (11 alternating rounds of `tessera run`), and
  // inside the model both and the first alone ran alike (3 of 6 rounds each).
  tiling.prefetch_next_strip = InstValue::Int(tiling.prefetch_ahead.as_int() == 0 ? 1 : 0);
  return tiling;
}

bool CanPrepackConvWeights(const PrimFunc& func, const Block& block, const BlockInfo& info,
                           const CpuCore& core) {
  const int channels = ChannelIter(info);
  return channels >= 0 && info.extents[channels] % core.lanes == 0 &&
         LayoutFreeWeightRead(func, block, channels) >= 0;
}

std::optional<CpuDot> CpuDotForConv(const Block& block, const BlockInfo& info,
                                    const CpuCore& core) {
  const int channels = ChannelIter(info);
  const int input_channels = static_cast<int>(info.kinds.find_last_of('R'));
  if (channels < 0 || input_channels < 0 || block->writes.size() != 1) return std::nullopt;
  const Buffer* input = nullptr;
  const Buffer* weights = nullptr;
  for (const BufferRegion& read : block->reads) {
    const std::vector<int> iters = AccessIters(block, read.buffer);
    if (read.buffer.same_as(block->writes[0].buffer) || iters.empty()) continue;
    (iters.back() == channels ? weights : input) = &read.buffer;
  }
  if (input == nullptr || weights == nullptr) return std::nullopt;
  const std::optional<CpuDot> dot = CpuDotOfTypes(input->dtype(), block->writes[0].buffer.dtype(),
                                                  info.extents[input_channels], core);
  const std::vector<int> weight_iters = AccessIters(block, *weights);
  bool padded = false;
  PostOrderVisitExprs(block->body, [&](const Expr& e) { padded |= e.as<SelectNode>() != nullptr; });
  if (!dot.has_value() || weights->dtype() != input->dtype() || padded ||
      AccessIters(block, *input).back() != input_channels ||
      std::count(weight_iters.begin(), weight_iters.end(), input_channels) != 1) {
    return std::nullopt;
  }
  return dot;
}

absl::StatusOr<BlockRV> TiledConvolution(Schedule* sch, const BlockInfo& info,
                                         const std::vector<LoopRV>& spatial,
                                         const std::vector<LoopRV>& reduction,
                                         const ConvTiling& tiling, const CpuCore& core) {
  std::optional<CpuDot> dot;
  if (tiling.dot_groups) {
    TESSERA_ASSIGN_OR_RETURN(Block block, sch->Get(info.rv));
    dot = CpuDotForConv(block, info, core);
    if (!dot.has_value() || !tiling.prepack_weights || reduction.empty() ||
        LoopExtent(*sch, spatial.back()) % core.lanes != 0) {
      return absl::FailedPreconditionError(
          "conv tiling: no dot product for these types, or weights not prepacked in whole "
          "vectors");
    }
  }
  if (tiling.prepack_weights) {
    TESSERA_ASSIGN_OR_RETURN(Block block, sch->Get(info.rv));
    const int weights = LayoutFreeWeightRead(sch->func(), block, ChannelIter(info));
    if (weights < 0) {
      return absl::FailedPreconditionError("conv tiling: no layout-free weights to prepack");
    }
    const int channels_dim = block->reads[weights].buffer.ndim() - 1;
    int group_dim = -1;
    if (dot.has_value()) {  // the weights' input-channel dimension
      const std::vector<int> iters = AccessIters(block, block->reads[weights].buffer);
      const int input_channels = static_cast<int>(info.kinds.find_last_of('R'));
      group_dim =
          static_cast<int>(std::find(iters.begin(), iters.end(), input_channels) - iters.begin());
    }
    TESSERA_RETURN_IF_ERROR(
        PrepackInGroups(sch, info.rv, weights, channels_dim, core.lanes, group_dim, dot));
  }
  // With a dot product the input channels (the last reduction loop) are split by its group,
  // which goes inside the lanes.
  std::vector<LoopRV> taps = reduction;
  std::optional<LoopRV> group;
  if (dot.has_value()) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> split,
                             sch->Split(taps.back(), {InstValue(), InstValue::Int(dot->group)}));
    taps.back() = split[0];
    group = split[1];
  }
  const LoopRV width = spatial[spatial.size() - 2];
  std::vector<InstValue> row_factors = {InstValue(), InstValue::Int(tiling.clipped_rows)};
  if (tiling.clipped_rows <= 0) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<ExprRV> rows,
                             sch->SamplePerfectTile(width, 2, kMaxConvRows, tiling.rows));
    row_factors = ConvFactors(rows);
  }
  // Whole vectors where the core's lanes divide the channels: split by the lanes first and
  // sample the vectors per tile, so every draw vectorizes (sampling the column count directly
  // drew 1, 2, 4 or 8 columns on most draws, as in PackedPanelGemm).
  LoopRV channels = spatial.back();
  std::optional<LoopRV> lanes;
  if (LoopExtent(*sch, channels) % core.lanes == 0) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> split,
                             sch->Split(channels, {InstValue(), InstValue::Int(core.lanes)}));
    channels = split[0];
    lanes = split[1];
  }
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<ExprRV> columns,
      sch->SamplePerfectTile(channels, 2,
                             lanes.has_value() ? MaxTileVectors(core, core.lanes) : kMaxTileColumns,
                             tiling.columns));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> wi, sch->Split(width, row_factors));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> ci, sch->Split(channels, ConvFactors(columns)));
  std::vector<LoopRV> outer(spatial.begin(), spatial.end() - 2);
  outer.push_back(wi[0]);
  if (tiling.channels_inner) {
    outer.push_back(ci[0]);
  } else {
    outer.insert(outer.begin(), ci[0]);
  }
  std::vector<LoopRV> order = outer;
  order.insert(order.end(), taps.begin(), taps.end());
  order.push_back(wi[1]);
  order.push_back(ci[1]);
  if (lanes.has_value()) order.push_back(*lanes);
  if (group.has_value()) order.push_back(*group);
  TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
  TESSERA_ASSIGN_OR_RETURN(LoopRV tile, sch->Fuse(outer));
  TESSERA_ASSIGN_OR_RETURN(BlockRV write_back, WriteBackUnder(sch, info.rv, tile, "local"));
  TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(info.rv, taps[0]).status());
  TESSERA_RETURN_IF_ERROR(sch->Parallel(tile));
  TESSERA_RETURN_IF_ERROR(sch->Unroll(wi[1]));
  // With the padding inlined (InlinePaddingIntoConvolutions: tiles of the whole width), a tap's
  // bounds test on the width (w_i + rw) is a constant in each unrolled copy of the tile's pixels
  // once the kernel column is unrolled too: code generation guards the padding taps'
  // multiply-adds (kSkipZeroTerms), the compiler drops them, and the others run free of tests.
  TESSERA_ASSIGN_OR_RETURN(Block block, sch->Get(info.rv));
  const int width_iter = static_cast<int>(info.kinds.find_last_of('S', ChannelIter(info) - 1));
  bool padded = false;
  PostOrderVisitExprs(block->body, [&](const Expr& e) { padded |= e.as<SelectNode>() != nullptr; });
  if (padded) {
    for (int r : ReductionItersBeside(block, info, width_iter)) {
      TESSERA_RETURN_IF_ERROR(sch->Unroll(info.loops[r]));
    }
    TESSERA_RETURN_IF_ERROR(sch->Annotate(tile, kSkipZeroTerms, InstValue::Int(1)));
  }
  BlockRV product = info.rv;
  if (lanes.has_value()) {
    TESSERA_RETURN_IF_ERROR(sch->Unroll(ci[1]));
    if (dot.has_value()) {
      TESSERA_ASSIGN_OR_RETURN(product, sch->Blockize(*lanes));
      TESSERA_RETURN_IF_ERROR(sch->Tensorize(product, dot->intrin));
    } else {
      TESSERA_RETURN_IF_ERROR(sch->Vectorize(*lanes));
    }
  } else {
    TESSERA_RETURN_IF_ERROR(sch->Vectorize(ci[1]));
  }
  // Each tile's weights come from one packed strip; the next strip may be fetched while this
  // one computes (code generation, ir/loop_annotations.h).
  if (tiling.prepack_weights) {
    TESSERA_ASSIGN_OR_RETURN(
        ExprRV prefetch, sch->SampleCategorical({0, 1}, {0.5, 0.5}, tiling.prefetch_next_strip));
    TESSERA_RETURN_IF_ERROR(
        sch->Annotate(taps.back(), kPrefetchNextPanel, InstValue::Of(prefetch)));
    TESSERA_RETURN_IF_ERROR(PrefetchAhead(sch, taps.back(), tiling.prefetch_ahead));
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> wb, sch->GetLoops(write_back));
  if (LoopExtent(*sch, wb.back()) > 1 && VectorizeWriteBack(core)) {
    TESSERA_RETURN_IF_ERROR(sch->Vectorize(wb.back()));
  }
  return product;
}

absl::Status TiledDepthwise(Schedule* sch, const BlockInfo& info,
                            const std::vector<LoopRV>& spatial,
                            const std::vector<LoopRV>& reduction, const CpuCore& core) {
  if (spatial.size() < 2 || reduction.empty()) {
    return absl::FailedPreconditionError("depthwise tiling: needs a width, channels and taps");
  }
  const LoopRV width = spatial[spatial.size() - 2];
  const int64_t extent = LoopExtent(*sch, width);
  const int64_t pixels = LargestDivisorAtMost(extent, kMaxDepthwisePixels);
  if (pixels < 2 || LoopExtent(*sch, spatial.back()) % core.lanes != 0) {
    return absl::FailedPreconditionError(
        "depthwise tiling: no tile of 2.." + std::to_string(kMaxDepthwisePixels) +
        " pixels divides the width " + std::to_string(extent) + ", or " +
        std::to_string(core.lanes) + " lanes do not divide the channels");
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<ExprRV> rows,
                           sch->SamplePerfectTile(width, 2, kMaxDepthwisePixels,
                                                  InstValue::IntArray({extent / pixels, pixels})));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> wi, sch->Split(width, ConvFactors(rows)));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> ci,
                           sch->Split(spatial.back(), {InstValue(), InstValue::Int(core.lanes)}));
  std::vector<LoopRV> outer(spatial.begin(), spatial.end() - 2);
  outer.push_back(wi[0]);
  std::vector<LoopRV> order = outer;
  order.push_back(ci[0]);
  order.insert(order.end(), reduction.begin(), reduction.end());
  order.push_back(wi[1]);
  order.push_back(ci[1]);
  TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
  LoopRV tile = outer[0];
  if (outer.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(tile, sch->Fuse(outer));
  }
  TESSERA_ASSIGN_OR_RETURN(BlockRV write_back, WriteBackUnder(sch, info.rv, ci[0], "local"));
  TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(info.rv, reduction[0]).status());
  TESSERA_RETURN_IF_ERROR(sch->Parallel(tile));
  TESSERA_RETURN_IF_ERROR(sch->Unroll(wi[1]));
  TESSERA_RETURN_IF_ERROR(sch->Vectorize(ci[1]));
  TESSERA_RETURN_IF_ERROR(sch->Annotate(tile, kUnswitchBorders, InstValue::Int(1)));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> wb, sch->GetLoops(write_back));
  if (LoopExtent(*sch, wb.back()) > 1 && VectorizeWriteBack(core)) {
    TESSERA_RETURN_IF_ERROR(sch->Vectorize(wb.back()));
  }
  return absl::OkStatus();
}

std::optional<std::vector<BlockInfo>> InlinePaddingIntoConvolutions(
    Schedule* sch, const std::vector<BlockInfo>& blocks, const CpuCore& core) {
  std::set<std::string> convolutions;
  for (const BlockInfo& info : blocks) {
    absl::StatusOr<Block> block = BlockByName(*sch, info.name);
    if (!block.ok()) continue;
    const ChannelsLastKind kind = ClassifyChannelsLast(*block, info);
    if (kind == ChannelsLastKind::kPerChannel) convolutions.insert(info.name);
    // A dense convolution only where its default tile spans the output width: in a tile at a
    // runtime offset the bounds tests stay tests inside the innermost loop (ResNet 56x56x64,
    // tiles of 14 pixels: 1.02 -> 1.43 ms).
    // Nor where the core has a dot product for its types: the intrinsic reads the padded copy's
    // plain load, not a select (int8 ResNet 14x14x256: 7.79 ms widened with the padding inlined).
    if (kind == ChannelsLastKind::kBroadcast && !CpuDotForConv(*block, info, core).has_value()) {
      absl::StatusOr<ConvTiling> tiling = DefaultConvTiling(info, core);
      if (tiling.ok() && tiling->clipped_rows == 0 && tiling->rows.AsIntArray().front() == 1) {
        convolutions.insert(info.name);
      }
    }
  }
  if (convolutions.empty()) return blocks;
  for (const BlockInfo& info : blocks) {
    absl::StatusOr<Block> block = BlockByName(*sch, info.name);
    if (!block.ok() || !info.IsInjective() || !IsPaddingBlock(*block)) continue;
    absl::StatusOr<std::vector<BlockRV>> consumers = sch->GetConsumers(info.rv);
    if (!consumers.ok() || consumers->empty()) continue;
    bool all_convolutions = true;
    for (const BlockRV& consumer : *consumers) {
      absl::StatusOr<std::string> name = sch->BlockName(consumer);
      all_convolutions = all_convolutions && name.ok() && convolutions.count(*name) > 0;
    }
    if (!all_convolutions) continue;
    Schedule trial = sch->Copy();
    if (trial.ComputeInline(info.rv).ok()) *sch = std::move(trial);
  }
  return NormalizeBlocks(sch);
}

}  // namespace dlight
}  // namespace tessera
