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
#include "schedule/index_map.h"

namespace tessera {
namespace dlight {
namespace {

constexpr int64_t kRows = 4;
constexpr int64_t kMaxColumns = 64;
// Packing B per column panel needs enough panels for the parallel loop (2+ per core). Even 5
// panels (GMM 127x257x509: 3 on one thread, 2 on the other) ran faster packed than as 160
// fused unpacked tiles on the 2-core machine.
constexpr int64_t kMinPanels = 4;
// The largest packed panel: half of the 1 MiB L2 per core of the development machine.
constexpr int64_t kMaxPanelBytes = 512 * 1024;
// Convolution register tiles: at most kMaxAccumulators vectors of kLanes floats (of the 32
// AVX-512 registers, the rest hold the broadcast input and addresses) and kMaxConvRows pixels.
constexpr int64_t kLanes = 16;
constexpr int64_t kMaxAccumulators = 28;
constexpr int64_t kMaxConvRows = 7;

// True if the innermost dimension of B (read `g.b`) is indexed by a K iterator: B is laid out
// [.., J, K] (DENSE's weight X * W^T), so a vector over J columns would be a strided gather.
bool BIsReductionContiguous(const Block& block, const GemmMatch& g) {
  std::vector<int> b = AccessIters(block, block->reads[g.b].buffer);
  return !b.empty() && b.back() >= 0 &&
         std::count(g.groups[kGemmK].begin(), g.groups[kGemmK].end(), b.back()) > 0;
}

// The index map that moves B's J dimensions last ([.., J, K] -> [.., K, J]), so the packed panel
// is a row of columns per k, read as vectors by the register tile.
absl::StatusOr<IndexMap> ColumnsLastMap(const Block& block, const GemmMatch& g) {
  std::vector<int> b = AccessIters(block, block->reads[g.b].buffer);
  std::vector<Var> vars;
  std::vector<Expr> rest, columns;
  for (size_t d = 0; d < b.size(); ++d) {
    vars.push_back(Var("d" + std::to_string(d)));
    const bool is_j =
        b[d] >= 0 && std::count(g.groups[kGemmJ].begin(), g.groups[kGemmJ].end(), b[d]) > 0;
    (is_j ? columns : rest).push_back(vars.back());
  }
  rest.insert(rest.end(), columns.begin(), columns.end());
  return IndexMap::Make(vars, rest);
}

// Register-tiled GEMM, loops (S, J_o | pack | I_o | K, I_i, J_i): the column tile loop outside
// the row tile loop, so one K x columns panel of B is copied once into a contiguous buffer
// (cache_read at the panel loop; a B laid out [J, K], DENSE's weight, also transposed to [K, J]
// so the tile reads it as vectors) and stays in L2 while every row tile of A passes it. Row tiles
// outside made each thread stream all of B once per row tile (LLaMA's 32x4096x4096 read its
// 64 MiB B 8 times from memory), a [J, K] B was a strided gather, and unpacked panels of a wide
// B touch one page per k. With fewer than kMinPanels panels the (S, J_o, I_o) tiles are fused
// and parallel and B is read in place.
absl::Status TiledMatmul(Schedule* sch, const BlockInfo& main, const Block& block,
                         const GemmMatch& g) {
  TESSERA_ASSIGN_OR_RETURN(GemmLoops loops, FuseGemmLoops(sch, main, g));
  // Narrower panels (and taller tiles, the same kRows x kMaxColumns accumulators) when a
  // K x kMaxColumns panel would not stay in L2 next to the rows of A.
  int64_t columns = FloorPowerOfTwo(loops.extent_j, kMaxColumns);
  while (columns > kLanes && loops.extent_k * columns * 4 > kMaxPanelBytes) columns /= 2;
  const int64_t rows = std::max<int64_t>(kRows, kRows * kMaxColumns / columns);
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> i,
                           sch->Split(loops.i, {InstValue(), InstValue::Int(rows)}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> j,
                           sch->Split(loops.j, {InstValue(), InstValue::Int(columns)}));
  TESSERA_RETURN_IF_ERROR(sch->Reorder({j[0], i[0], loops.k, i[1], j[1]}));
  const int64_t batch = loops.has_batch ? LoopExtent(*sch, loops.batch) : 1;
  const int64_t panels = batch * ((loops.extent_j + columns - 1) / columns);
  const bool pack = panels >= kMinPanels;
  std::vector<LoopRV> outer = {j[0]};
  if (!pack) outer.push_back(i[0]);
  if (loops.has_batch) outer.insert(outer.begin(), loops.batch);
  LoopRV tile = outer[0];
  if (outer.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(tile, sch->Fuse(outer));
  }
  if (pack) {
    TESSERA_ASSIGN_OR_RETURN(BlockRV packed, sch->CacheRead(main.rv, g.b, "global"));
    if (BIsReductionContiguous(block, g)) {
      TESSERA_ASSIGN_OR_RETURN(IndexMap columns_last, ColumnsLastMap(block, g));
      TESSERA_RETURN_IF_ERROR(
          sch->TransformLayout(packed, 0, /*buffer_index_type=*/1, columns_last));
    }
    TESSERA_RETURN_IF_ERROR(sch->ComputeAt(packed, tile));
  }
  TESSERA_ASSIGN_OR_RETURN(BlockRV write_back,
                           WriteBackUnder(sch, main.rv, pack ? i[0] : tile, "local"));
  TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(main.rv, loops.k).status());
  TESSERA_RETURN_IF_ERROR(sch->Parallel(tile));
  TESSERA_RETURN_IF_ERROR(sch->Unroll(i[1]));
  TESSERA_RETURN_IF_ERROR(sch->Vectorize(j[1]));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> wb, sch->GetLoops(write_back));
  if (LoopExtent(*sch, wb.back()) > 1) TESSERA_RETURN_IF_ERROR(sch->Vectorize(wb.back()));
  return absl::OkStatus();
}

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
  const int64_t columns = FloorPowerOfTwo(last, kMaxColumns);
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
      if (TiledMatmul(&trial, info, *block, *gemm).ok()) {
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
