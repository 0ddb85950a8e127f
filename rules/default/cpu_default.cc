// CpuDefault: the default schedule for cpu targets (DLight has no CPU rules in v0.16; this
// follows the hand-written CPU traces in examples/ and the usual CPU GEMM kernel). A GEMM block
// (analysis.h MatchGemm) is register-tiled (TiledMatmul): column panels of B in parallel, each
// packed into a contiguous buffer, and inside a panel row tiles of 16 accumulator vectors
// (4 x 64 or 8 x 32 floats, rows unrolled, columns vectorized) over the whole K loop, written
// back per tile with the epilogues inlined. An NHWC convolution is tiled the same way with
// output pixels as rows (TiledConvolution). A sum over contiguous memory (GEMV) is factored
// into vector lanes (LaneReduction below). Any other block gets its outer spatial loops fused
// and run in parallel, reduction loops serial inside them (with the last spatial loop innermost
// and vectorized if the output is contiguous along it), and (elementwise blocks) its innermost
// loop vectorized when the output is contiguous along it. Blocks are inlined only into
// elementwise consumers (a padding step stays its own loop nest).
#include <algorithm>
#include <string>

#include "base/status_macros.h"
#include "rules/default/analysis.h"
#include "rules/default/rule_factories.h"
#include "rules/default/tiled_matmul.h"

namespace tessera {
namespace dlight {
namespace {

// Convolution register tiles: at most kMaxAccumulators vectors of kLanes floats (of the 32
// AVX-512 registers, the rest hold the broadcast input and addresses) and kMaxConvRows pixels.
constexpr int64_t kMaxAccumulators = 28;
constexpr int64_t kMaxConvRows = 7;

// True if some read of `block` does not use iteration variable `v`: an operand broadcast over
// the output columns (a convolution's input pixel, read once per output channel vector).
bool HasReadBroadcastOver(const Block& block, int v) {
  for (const BufferRegion& read : block->reads) {
    if (read.buffer.same_as(block->writes[0].buffer)) continue;
    std::vector<int> iters = AccessIters(block, read.buffer);
    if (std::find(iters.begin(), iters.end(), v) == iters.end()) return true;
  }
  return false;
}

// A reduction whose output is contiguous along its last spatial loop (convolutions in NHWC),
// register-tiled like a GEMM with the output pixels as rows and the last spatial loop (output
// channels) as columns: loops (C_o, S.., W_o | R | W_i, C_i) where W is the output width (the
// spatial loop before the last), C_o, S.., W_o fused and parallel, a local rows x columns
// accumulator written back per tile, the rows unrolled and the columns vectorized. One pixel per
// tile (4 vectors of 64 channels) left the FMAs waiting on each other and loaded a weight vector
// per FMA: ResNet's 3x3 convolutions ran at 1/5 of oneDNN. Returns an error (the caller falls back)
// when no row tile > 1 divides W. (Fusing all pixels before the split would divide more shapes, but
// the write-back region of a split fused loop is not compacted: the accumulator became the whole
// output.)
absl::Status TiledConvolution(Schedule* sch, const BlockInfo& info,
                              const std::vector<LoopRV>& spatial,
                              const std::vector<LoopRV>& reduction) {
  const int64_t last = LoopExtent(*sch, spatial.back());
  const int64_t columns = FloorPowerOfTwo(last, kMaxTileColumns);
  const int64_t column_vectors = std::max<int64_t>(1, columns / kLanes);
  const LoopRV width = spatial[spatial.size() - 2];
  const int64_t pixels = LoopExtent(*sch, width);
  int64_t rows = std::min<int64_t>(kMaxAccumulators / column_vectors, kMaxConvRows);
  while (rows > 1 && pixels % rows != 0) --rows;
  if (rows < 2 || last % columns != 0) {
    return absl::FailedPreconditionError("no row tile divides the output width");
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> wi,
                           sch->Split(width, {InstValue(), InstValue::Int(rows)}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> ci,
                           sch->Split(spatial.back(), {InstValue(), InstValue::Int(columns)}));
  std::vector<LoopRV> outer = {ci[0]};
  outer.insert(outer.end(), spatial.begin(), spatial.end() - 2);
  outer.push_back(wi[0]);
  std::vector<LoopRV> order = outer;
  order.insert(order.end(), reduction.begin(), reduction.end());
  order.push_back(wi[1]);
  order.push_back(ci[1]);
  TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
  TESSERA_ASSIGN_OR_RETURN(LoopRV tile, sch->Fuse(outer));
  TESSERA_ASSIGN_OR_RETURN(BlockRV write_back, WriteBackUnder(sch, info.rv, tile, "local"));
  TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(info.rv, reduction[0]).status());
  TESSERA_RETURN_IF_ERROR(sch->Parallel(tile));
  TESSERA_RETURN_IF_ERROR(sch->Unroll(wi[1]));
  TESSERA_RETURN_IF_ERROR(sch->Vectorize(ci[1]));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> wb, sch->GetLoops(write_back));
  if (LoopExtent(*sch, wb.back()) > 1) TESSERA_RETURN_IF_ERROR(sch->Vectorize(wb.back()));
  return absl::OkStatus();
}

// Otherwise (a depthwise convolution: every read uses the channel), a reduction whose output is
// contiguous along its last spatial loop: loops (S_outer | R | S_last) with S_outer fused and
// parallel, the R loops inside, and S_last vectorized, accumulating in a local row written back per
// S_outer iteration (convolutions: a vector of output channels).
absl::Status VectorizedReduction(Schedule* sch, const BlockInfo& info,
                                 const std::vector<LoopRV>& spatial,
                                 const std::vector<LoopRV>& reduction) {
  std::vector<LoopRV> order(spatial.begin(), spatial.end() - 1);
  order.insert(order.end(), reduction.begin(), reduction.end());
  order.push_back(spatial.back());
  TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
  LoopRV outer = spatial[0];
  if (spatial.size() > 2) {
    TESSERA_ASSIGN_OR_RETURN(outer, sch->Fuse({spatial.begin(), spatial.end() - 1}));
  }
  TESSERA_RETURN_IF_ERROR(WriteBackUnder(sch, info.rv, outer, "local").status());
  TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(info.rv, reduction[0]).status());
  TESSERA_RETURN_IF_ERROR(sch->Parallel(outer));
  return sch->Vectorize(spatial.back());
}

// A sum over contiguous memory (GEMV rows, row sums): the reduction loop is split by the vector
// width V and factored (rfactor) into V partial sums per output element, so the inner loop is a
// vectorized, dependence-free multiply-add over contiguous data: loops (S | R_o, lanes) with S
// fused and parallel, the V partial sums in a local array per S iteration, and the final sum of
// the V lanes under S. Without rfactor a C compiler must keep a float sum in order and cannot
// vectorize it (no -ffast-math).
absl::Status LaneReduction(Schedule* sch, const BlockInfo& info, const std::vector<LoopRV>& spatial,
                           const std::vector<LoopRV>& reduction) {
  constexpr int64_t kMaxLanes = 16;
  std::vector<LoopRV> order = spatial;
  order.insert(order.end(), reduction.begin(), reduction.end());
  TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
  LoopRV r = reduction[0];
  if (reduction.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(r, sch->Fuse(reduction));
  }
  const int64_t extent = LoopExtent(*sch, r);
  int64_t lanes = kMaxLanes;
  while (lanes > 1 && extent % lanes != 0) lanes /= 2;
  if (lanes < 4 || extent / lanes < 2) {
    return absl::FailedPreconditionError("reduction too short or odd for vector lanes");
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> split,
                           sch->Split(r, {InstValue(), InstValue::Int(lanes)}));
  TESSERA_ASSIGN_OR_RETURN(BlockRV partial, sch->RFactor(split[1], /*factor_axis=*/-1));
  LoopRV outer = spatial[0];
  if (spatial.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(outer, sch->Fuse(spatial));
  }
  TESSERA_RETURN_IF_ERROR(sch->ReverseComputeAt(info.rv, outer));
  TESSERA_RETURN_IF_ERROR(sch->SetScope(partial, 0, "local"));
  TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(partial, split[0]).status());
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> partial_loops, sch->GetLoops(partial));
  TESSERA_RETURN_IF_ERROR(sch->Vectorize(partial_loops.back()));
  if (LoopExtent(*sch, outer) > 1) TESSERA_RETURN_IF_ERROR(sch->Parallel(outer));
  return absl::OkStatus();
}

absl::Status ParallelVectorize(Schedule* sch, const BlockInfo& info, const Block& block) {
  std::vector<LoopRV> spatial, reduction;
  for (size_t i = 0; i < info.kinds.size(); ++i) {
    (info.kinds[i] == 'S' ? spatial : reduction).push_back(info.loops[i]);
  }
  if (spatial.empty()) return absl::OkStatus();
  if (!reduction.empty() && info.kinds.find('R') < spatial.size()) {
    std::vector<LoopRV> order = spatial;
    order.insert(order.end(), reduction.begin(), reduction.end());
    TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
  }
  // Elementwise blocks keep the innermost loop for vectors if the output is contiguous along it.
  std::vector<int> out = AccessIters(block, block->writes[0].buffer);
  const int last = static_cast<int>(info.kinds.size()) - 1;
  const bool vectorize = reduction.empty() && spatial.size() > 1 && !out.empty() &&
                         out.back() == last && info.extents[last] > 1;
  if (!reduction.empty() && spatial.size() > 1 && !out.empty() &&
      out.back() == static_cast<int>(info.kinds.find_last_of('S')) &&
      info.extents[out.back()] > 1) {
    const int last_spatial = static_cast<int>(info.kinds.find_last_of('S'));
    if (HasReadBroadcastOver(block, last_spatial)) {
      Schedule tiled = sch->Copy();
      if (TiledConvolution(&tiled, info, spatial, reduction).ok()) {
        *sch = std::move(tiled);
        return absl::OkStatus();
      }
    }
    Schedule trial = sch->Copy();
    if (VectorizedReduction(&trial, info, spatial, reduction).ok()) {
      *sch = std::move(trial);
      return absl::OkStatus();
    }
  }
  if (!reduction.empty() && IsInnerReduction(block) && IsSumReduction(block)) {
    Schedule trial = sch->Copy();
    if (LaneReduction(&trial, info, spatial, reduction).ok()) {
      *sch = std::move(trial);
      return absl::OkStatus();
    }
  }
  std::vector<LoopRV> outer = spatial;
  if (vectorize) outer.pop_back();
  LoopRV fused = outer[0];
  if (outer.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(fused, sch->Fuse(outer));
  }
  if (LoopExtent(*sch, fused) > 1) TESSERA_RETURN_IF_ERROR(sch->Parallel(fused));
  if (vectorize) TESSERA_RETURN_IF_ERROR(sch->Vectorize(spatial.back()));
  return absl::OkStatus();
}

std::optional<Schedule> CpuDefault(Schedule sch, const Target& /*target*/) {
  std::optional<std::vector<BlockInfo>> blocks = NormalizeBlocks(&sch);
  if (blocks.has_value()) blocks = TryInline(&sch, *blocks, /*into_reductions=*/false);
  if (!blocks.has_value()) return std::nullopt;
  for (const BlockInfo& original : *blocks) {
    // Re-resolve: an earlier block's write-back may have absorbed this one.
    absl::StatusOr<BlockRV> rv = sch.GetBlock(original.name);
    if (!rv.ok()) continue;
    absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(*rv);
    absl::StatusOr<Block> block = BlockByName(sch, original.name);
    if (!loops.ok() || !block.ok() || loops->size() != original.loops.size()) return std::nullopt;
    BlockInfo info = original;
    info.rv = *rv;
    info.loops = *loops;
    if (std::optional<GemmMatch> gemm = MatchGemm(*block, info.extents)) {
      Schedule trial = sch.Copy();
      if (TiledMatmul(&trial, info, *block, *gemm, DefaultMatmulTiling(info, *gemm)).ok()) {
        sch = std::move(trial);
        continue;
      }
    }
    if (!ParallelVectorize(&sch, info, *block).ok()) return std::nullopt;
  }
  return sch;
}

}  // namespace

DefaultRulePtr NewCpuDefaultRule() {
  return NewDefaultRule("CpuDefault", Target::Kind::kCpu, &CpuDefault);
}

}  // namespace dlight
}  // namespace tessera
