// The CPU default's convolution schedules (docs/default-schedules.md "cpu"): an NHWC convolution
// register-tiled with output pixels as rows and output channels as vector columns, and the
// padding step of a depthwise convolution inlined into it.
#ifndef TESSERA_RULES_DEFAULT_TILED_CONV_H_
#define TESSERA_RULES_DEFAULT_TILED_CONV_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "rules/default/analysis.h"
#include "rules/default/cpu_core.h"
#include "rules/default/tiled_matmul.h"
#include "schedule/instruction.h"
#include "schedule/schedule.h"

namespace tessera {
namespace dlight {

// How a reduction whose output is contiguous along its last spatial loop (an NHWC convolution's
// output channels) reads its operands.
enum class ChannelsLastKind {
  kNone,       // not such a reduction
  kBroadcast,  // some read does not use the channel (the input pixel of a dense convolution)
  kPerChannel  // every read uses the channel (a depthwise convolution, pooling)
};
ChannelsLastKind ClassifyChannelsLast(const Block& block, const BlockInfo& info);

// A register tile of a kBroadcast reduction, as the decisions of the samplers TiledConvolution
// records (InstValue() draws one), and the order of the parallel tile loops.
struct ConvTiling {
  // SamplePerfectTile of the width (the spatial loop before the channels): [tiles, rows], rows
  // (unrolled) at most kMaxConvRows. Not sampled when clipped_rows is set.
  InstValue rows;
  // > 0: the width is split into tiles of this many pixels, the last one clipped (a split that
  // does not divide; code generation peels the clipped tile off, PartitionGuardedLoops), in place
  // of the sampled rows.
  int64_t clipped_rows = 0;
  // SamplePerfectTile of the channels' vectors when the core's lanes divide the channels:
  // [blocks, vectors], vectors (unrolled, their lanes vectorized) at most MaxTileVectors;
  // otherwise of the channels: [blocks, columns], columns (vectorized) at most kMaxTileColumns.
  InstValue columns;
  // Channel blocks innermost of the parallel tile loops (else outermost).
  bool channels_inner = false;
  // Read the layout-free weights (ir/prepack.h) from strips [C / lanes, .., lanes] packed once,
  // outside the call (PrepackIntoStrips), instead of with a stride of C floats per input channel.
  bool prepack_weights = false;
  // With prepacked weights, SampleCategorical over {0, 1}: whether each tile has the next strip
  // prefetched while it computes (kPrefetchNextPanel). The default decides 1 (ResNet-18's
  // 7x7x512 convolutions 11% faster inside the model, 3% slower alone) unless it prefetches the
  // strip's own lines ahead (prefetch_ahead), which serves the model better alone and as well
  // inside it.
  InstValue prefetch_next_strip;
  // With pre-packed weights: SampleCategorical over kPrefetchDistances (tiled_matmul.h), how many
  // channels ahead the innermost reduction loop prefetches the strip's lines into L1
  // (kPrefetchAhead; 0: none).
  InstValue prefetch_ahead;
  // With pre-packed weights, where CpuDotForConv finds a dot product: the strips hold each
  // output channel's group of input channels side by side ([C / lanes, .., CI / g, lanes, g]) and
  // each tile vector sums g input channels a call (tiled_matmul.h MatmulTiling::dot_groups).
  bool dot_groups = false;
};

// The dot product (tiled_matmul.h CpuDot) `core` has for the convolution `block` (a kBroadcast
// reduction of `info`), or nullopt: its input and weights of the dot product's type, summed in
// its type; the input channels the last reduction iterator, the input's last dimension and a
// multiple of the group; no padding inlined (a select around the input's load).
std::optional<CpuDot> CpuDotForConv(const Block& block, const BlockInfo& info, const CpuCore& core);

// True when `block` (a kBroadcast reduction of `info`) reads a layout-free parameter of `func`
// whose last dimension is the output channels, and the core's lanes divide them:
// TiledConvolution can prepack its weights.
bool CanPrepackConvWeights(const PrimFunc& func, const Block& block, const BlockInfo& info,
                           const CpuCore& core);

// The most tile rows TiledConvolution samples.
constexpr int64_t kMaxConvRows = 14;

// True when the weights (reduction extent x channels floats) fit half of a 2 MiB L2: every
// thread then sweeps all channel blocks of its pixel tiles, whose input rows stay in L1.
bool ConvChannelsInner(const BlockInfo& info);

// The default's tile: the most accumulator vectors (rows x columns / lanes) that fit the core's
// registers (AVX-512: <= 28 accumulators beside one vector per column and the broadcast input,
// <= 32 registers in all; AVX2: <= 14 beside the broadcast, the weights read from memory), ties
// to more columns on AVX-512 and to fewer on AVX2, rows a divisor of the width,
// at most kMaxConvRows; channels_inner as ConvChannelsInner. With 16 registers, where no such
// tile reaches 12 accumulators (power-of-two widths) and two vectors divide the channels: 6
// pixels x 2 vectors with the last tile clipped (clipped_rows). Returns an error when no tile of
// >= 2 rows and whole vectors (or one partial vector for fewer channels than lanes) divides the
// shape.
absl::StatusOr<ConvTiling> DefaultConvTiling(const BlockInfo& info, const CpuCore& core);

// Loops (S.., W_o, C_o | R | W_i, C_v, C_lane) (C_o first when !channels_inner): the outer ones
// fused and parallel, a local rows x columns accumulator written back per tile with the
// epilogues, W_i and C_v unrolled, the lanes vectorized (channels the lanes do not divide:
// (.. | W_i, C_i), C_i vectorized). `spatial` and `reduction` are `info`'s loops by kind.
// Returns the block that computes the convolution (`info`'s, or with dot_groups the block
// holding the intrinsic's calls), for the caller to mark.
absl::StatusOr<BlockRV> TiledConvolution(Schedule* sch, const BlockInfo& info,
                                         const std::vector<LoopRV>& spatial,
                                         const std::vector<LoopRV>& reduction,
                                         const ConvTiling& tiling, const CpuCore& core);

// The most output pixels a depthwise tile (TiledDepthwise) accumulates: 8 vectors beside the
// input and weight vectors (7 and 14 ran slower on MobileNet's 56 x 56 x 128).
constexpr int64_t kMaxDepthwisePixels = 8;

// A kPerChannel reduction (a depthwise convolution, pooling) whose channels the lanes divide and
// whose width (the spatial loop before the channels) has a divisor in [2, kMaxDepthwisePixels]:
// loops (S.., W_o | C_o | R | W_i, C_lane), the outer ones fused and parallel, per channel
// vector a local W_i x lanes accumulator written back with the epilogues, the taps (R) as loops
// over it, W_i unrolled and the lanes vectorized; the tile loop is annotated kUnswitchBorders,
// so tiles away from the image's border run without the inlined padding's tests. An error when
// the shape does not fit.
absl::Status TiledDepthwise(Schedule* sch, const BlockInfo& info,
                            const std::vector<LoopRV>& spatial,
                            const std::vector<LoopRV>& reduction, const CpuCore& core);

// Inlines every padding block (a store of select(in_bounds, load, constant)) whose consumers are
// all channels-last reductions (convolutions) into them. A depthwise convolution's innermost
// loop is over channels, so the bounds test is invariant in it and the vector loop stays a plain
// load (GCC unswitches it): the separate padding pass wrote and re-read a padded copy of the
// whole input, a third of a depthwise convolution's time. A dense convolution's tile
// (TiledConvolution) unrolls its pixels and kernel columns, where each tap's bounds test on the
// width is a constant, and code generation skips the padding taps' multiply-adds.
// Returns the blocks that remain (NormalizeBlocks), nullopt if the function stops being normal.
std::optional<std::vector<BlockInfo>> InlinePaddingIntoConvolutions(
    Schedule* sch, const std::vector<BlockInfo>& blocks, const CpuCore& core);

}  // namespace dlight
}  // namespace tessera

#endif  // TESSERA_RULES_DEFAULT_TILED_CONV_H_
