// CpuDefault: the default schedule for cpu targets (DLight has no CPU rules in v0.16; this
// follows the hand-written CPU traces in examples/ and the usual CPU GEMM kernel). A GEMM block
// (analysis.h MatchGemm) is register-tiled (TiledMatmul): column panels of B in parallel, each
// packed into a contiguous buffer, and inside a panel row tiles of 16 accumulator vectors
// (4 x 64 or 8 x 32 floats, rows unrolled, columns vectorized) over the whole K loop, written
// back per tile with the epilogues inlined. An NHWC convolution is tiled the same way with
// output pixels as rows (TiledConvolution, tiled_conv.cc), and a depthwise one reads its input
// through its inlined padding. A sum over contiguous memory (GEMV) is factored
// into vector lanes (LaneReduction below). Any other block gets its outer spatial loops fused
// and run in parallel, reduction loops serial inside them (with the last spatial loop innermost
// and vectorized if the output is contiguous along it), and (elementwise blocks) its innermost
// loop vectorized when the output is contiguous along it. Blocks are inlined only into
// elementwise consumers (a padding step stays its own loop nest).
#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "base/divisors.h"
#include "base/status_macros.h"
#include "codegen/unroll_selects.h"
#include "rules/default/analysis.h"
#include "rules/default/rule_factories.h"
#include "rules/default/tiled_conv.h"
#include "rules/default/tiled_matmul.h"

namespace tessera {
namespace dlight {
namespace {

// Otherwise (a depthwise convolution: every read uses the channel), a reduction whose output is
// contiguous along its last spatial loop: loops (S_outer | R | S_last) with S_outer fused and
// parallel, the R loops inside, and S_last vectorized, accumulating in a local row written back per
// S_outer iteration (convolutions: a vector of output channels). With fewer S_outer iterations
// than cores (a batch-1 classifier y = x W with W [K, N]), S_last is cut into blocks run in
// parallel beside S_outer: the rows alone kept one core idle (LINEAR 1x1000x512 on Zen 3's two
// cores: 34 -> 19 us). A block is at most kClassifierBlockVectors vectors, so that its
// accumulators stay in registers across R (a 500-float row per core was loaded and stored at
// every k: 20.9 -> 13.3 us on Zen 4's two cores, the emitted C by hand), and small enough to
// give every core one; the last block is clipped (code generation peels it off the reduction).
constexpr int64_t kClassifierBlockVectors = 8;

absl::Status VectorizedReduction(Schedule* sch, const BlockInfo& info,
                                 const std::vector<LoopRV>& spatial,
                                 const std::vector<LoopRV>& reduction, const CpuCore& core,
                                 int64_t cores) {
  std::vector<LoopRV> outer(spatial.begin(), spatial.end() - 1);
  LoopRV last = spatial.back();
  int64_t rows = 1;
  for (const LoopRV& l : outer) rows *= LoopExtent(*sch, l);
  const int64_t columns = LoopExtent(*sch, last);
  if (rows < cores) {
    const int64_t wanted = CeilDiv(cores, rows);
    const int64_t per_core = CeilDiv(CeilDiv(columns, wanted), core.lanes) * core.lanes;
    const int64_t block = std::min(kClassifierBlockVectors * core.lanes, per_core);
    if (columns > block) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> split,
                               sch->Split(last, {InstValue(), InstValue::Int(block)}));
      outer.push_back(split[0]);
      last = split[1];
    }
  }
  std::vector<LoopRV> order = outer;
  order.insert(order.end(), reduction.begin(), reduction.end());
  order.push_back(last);
  TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
  LoopRV fused = outer[0];
  if (outer.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(fused, sch->Fuse(outer));
  }
  TESSERA_RETURN_IF_ERROR(WriteBackUnder(sch, info.rv, fused, "local").status());
  TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(info.rv, reduction[0]).status());
  TESSERA_RETURN_IF_ERROR(sch->Parallel(fused));
  return sch->Vectorize(last);
}

// A sum over contiguous memory (GEMV rows, row sums): the reduction loop is split by A x V
// (V vector lanes, A accumulator vectors) and factored (rfactor) into A x V partial sums per
// output element, so the inner loop is a vectorized, dependence-free multiply-add over contiguous
// data: loops (S | R_o, A x V) with S fused and parallel, the partial sums in a local array per S
// iteration, then (A > 1) the A vectors added into one by a second rfactor (a vectorized loop),
// and the final sum of the V lanes under S. Without rfactor a C compiler must keep a float sum in
// order and cannot vectorize it (no -ffast-math). One accumulator vector is one chain of
// dependent FMAs, a multiply-add per FMA latency; four are the chains a core needs to keep
// loading (GEMV 4096 x 4096, the emitted C on 2 threads: 0.86 -> 0.67 ms from memory, and 24 ->
// 20 us for 1024 x 1024 in cache, with the A vectors added as vectors rather than as 4 x V
// scalars; 8 accumulators were slower than 4).
absl::Status LaneReduction(Schedule* sch, const BlockInfo& info, const Block& block,
                           const std::vector<LoopRV>& spatial,
                           const std::vector<LoopRV>& reduction) {
  constexpr int64_t kMaxLanes = 16;
  constexpr int64_t kMaxAccumulators = 4;
  // Several accumulators only where each still runs this many iterations.
  constexpr int64_t kMinIterationsPerAccumulator = 4;
  // Rows of the partial sums computed together, the reduction's loop outside them: each vector
  // of a shared operand (GEMV's x) is loaded once for all of them, and four rows are four
  // streams of memory in flight instead of one (GEMV 4096 x 4096, the emitted C on 2 threads:
  // 1.09-1.17 ms one row at a time, 0.97-1.10 ms four, 1.05-1.10 ms eight; 2026-11-27).
  constexpr int64_t kRowsPerIteration = 4;
  constexpr int64_t kMinRowTiles = 16;
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
  int64_t accumulators = kMaxAccumulators;
  while (accumulators > 1 && (extent % (accumulators * lanes) != 0 ||
                              extent / (accumulators * lanes) < kMinIterationsPerAccumulator)) {
    accumulators /= 2;
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> split,
                           sch->Split(r, {InstValue(), InstValue::Int(accumulators * lanes)}));
  // kRowsPerIteration rows at a time where that leaves enough iterations to share out and some
  // operand is read by every row (GEMV's x). Without one, rows taken together only lengthen
  // each iteration: a row sum of 1024 x 1024 in cache ran 24 -> 28 us four rows at a time.
  std::vector<LoopRV> outer_loops = spatial;
  std::optional<LoopRV> rows;
  const int64_t row_extent = LoopExtent(*sch, spatial.back());
  if (row_extent % kRowsPerIteration == 0 && row_extent / kRowsPerIteration >= kMinRowTiles &&
      HasReadBroadcastOver(block, static_cast<int>(info.kinds.find_last_of('S')))) {
    TESSERA_ASSIGN_OR_RETURN(
        std::vector<LoopRV> by_rows,
        sch->Split(spatial.back(), {InstValue(), InstValue::Int(kRowsPerIteration)}));
    outer_loops.back() = by_rows[0];
    rows = by_rows[1];
  }
  TESSERA_ASSIGN_OR_RETURN(BlockRV partial, sch->RFactor(split[1], /*factor_axis=*/-1));
  LoopRV outer = outer_loops[0];
  if (outer_loops.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(outer, sch->Fuse(outer_loops));
  }
  TESSERA_RETURN_IF_ERROR(sch->ReverseComputeAt(info.rv, outer));
  if (rows.has_value()) {
    TESSERA_RETURN_IF_ERROR(sch->Reorder({split[0], *rows}));
    TESSERA_RETURN_IF_ERROR(sch->Unroll(*rows));
  }
  TESSERA_RETURN_IF_ERROR(sch->SetScope(partial, 0, "local"));
  TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(partial, split[0]).status());
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> partial_loops, sch->GetLoops(partial));
  TESSERA_RETURN_IF_ERROR(sch->Vectorize(partial_loops.back()));
  if (accumulators > 1) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> combine_loops, sch->GetLoops(info.rv));
    TESSERA_ASSIGN_OR_RETURN(
        std::vector<LoopRV> by_vector,
        sch->Split(combine_loops.back(), {InstValue(), InstValue::Int(lanes)}));
    TESSERA_ASSIGN_OR_RETURN(BlockRV vector_sum, sch->RFactor(by_vector[1], /*factor_axis=*/-1));
    TESSERA_RETURN_IF_ERROR(sch->SetScope(vector_sum, 0, "local"));
    TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(vector_sum, by_vector[0]).status());
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> vector_sum_loops, sch->GetLoops(vector_sum));
    TESSERA_RETURN_IF_ERROR(sch->Vectorize(vector_sum_loops.back()));
  }
  if (LoopExtent(*sch, outer) > 1) TESSERA_RETURN_IF_ERROR(sch->Parallel(outer));
  return absl::OkStatus();
}

// Whether the read of `block` from its largest buffer (a classifier's weights) has a reduction
// iteration variable as its innermost index.
bool LargestReadRunsAlongReduction(const Block& block, const BlockInfo& info) {
  const Buffer* largest = nullptr;
  int64_t largest_size = -1;
  for (const auto& region : block->reads) {
    int64_t size = 1;
    for (const Expr& extent : region.buffer->shape) {
      const auto* imm = extent.as<IntImmNode>();
      size *= imm != nullptr ? imm->value : 0;
    }
    if (size > largest_size) {
      largest = &region.buffer;
      largest_size = size;
    }
  }
  if (largest == nullptr) return false;
  const std::vector<int> iters = AccessIters(block, *largest);
  return !iters.empty() && iters.back() >= 0 && info.kinds[iters.back()] == 'R';
}

// A spatial loop whose iteration variable the block's value selects on: `v == c` (modulus 0:
// the whole loop) or `floormod(v, m) == c` (its inner part of m iterations).
struct SelectLoop {
  int index = 0;
  int64_t modulus = 0;
};

std::vector<SelectLoop> SelectLoops(const Block& block, const BlockInfo& info) {
  std::vector<SelectLoop> found;
  auto note = [&](const Expr& tested, const Expr& constant) {
    if (AsConstInt(constant) == nullptr) return;
    const VarNode* var = tested.as<VarNode>();
    int64_t modulus = 0;
    if (const auto* mod = tested.as<BinaryNode>();
        mod != nullptr && mod->op == BinaryOp::kFloorMod) {
      const int64_t* m = AsConstInt(mod->b);
      if (m == nullptr) return;
      var = mod->a.as<VarNode>();
      modulus = *m;
    }
    if (var == nullptr) return;
    for (size_t i = 0; i < block->iter_vars.size(); ++i) {
      if (block->iter_vars[i].var.get() != var || info.kinds[i] != 'S') continue;
      if (modulus != 0 && modulus >= info.extents[i]) return;
      for (const SelectLoop& seen : found) {
        if (seen.index == static_cast<int>(i)) return;
      }
      found.push_back({static_cast<int>(i), modulus});
    }
  };
  VisitCaseTests(block->body, [&](const BinaryNode& eq) { note(eq.a, eq.b); });
  return found;
}

// An elementwise nest whose value selects on some loops (a Winograd transform: one expression
// per transform point): (outer | select loops | vector), the outer loops fused and parallel, the
// select loops (or their inner parts) unrolled, which code generation expands into one
// expression per point (codegen/unroll_selects.h), the innermost loop vectorized.
absl::Status UnrolledSelects(Schedule* sch, const BlockInfo& info,
                             const std::vector<SelectLoop>& selects) {
  const int last = static_cast<int>(info.loops.size()) - 1;
  std::vector<LoopRV> outer, unrolled;
  for (int i = 0; i < last; ++i) {
    const SelectLoop* select = nullptr;
    for (const SelectLoop& s : selects) select = s.index == i ? &s : select;
    if (select == nullptr) {
      outer.push_back(info.loops[i]);
    } else if (select->modulus == 0) {
      unrolled.push_back(info.loops[i]);
    } else {
      TESSERA_ASSIGN_OR_RETURN(
          std::vector<LoopRV> parts,
          sch->Split(info.loops[i], {InstValue(), InstValue::Int(select->modulus)}));
      outer.push_back(parts[0]);
      unrolled.push_back(parts[1]);
    }
  }
  if (outer.empty() || unrolled.empty()) {
    return absl::InvalidArgumentError("unrolled selects: no loop left to run in parallel");
  }
  std::vector<LoopRV> order = outer;
  order.insert(order.end(), unrolled.begin(), unrolled.end());
  order.push_back(info.loops[last]);
  TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
  LoopRV fused = outer[0];
  if (outer.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(fused, sch->Fuse(outer));
  }
  TESSERA_RETURN_IF_ERROR(sch->Parallel(fused));
  for (const LoopRV& loop : unrolled) TESSERA_RETURN_IF_ERROR(sch->Unroll(loop));
  return sch->Vectorize(info.loops[last]);
}

absl::Status ParallelVectorize(Schedule* sch, const BlockInfo& info, const Block& block,
                               const CpuCore& core, int64_t cores) {
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
  // A product of one row with rows of contiguous weights (a batch-1 classifier,
  // y[j] = sum_k x[k] W[j, k]: every spatial loop but the last of extent 1) is a set of dot
  // products over contiguous memory, not a broadcast row times strided weight columns: the
  // channels-last nests below would read W with a stride of K floats per lane (a 512 -> 1000
  // classifier at 1.6 GFLOP/s).
  int64_t rows = 1;
  const size_t last_spatial = info.kinds.find_last_of('S');
  for (size_t i = 0; i < last_spatial; ++i) rows *= info.kinds[i] == 'S' ? info.extents[i] : 1;
  const bool dot_products =
      rows == 1 && !reduction.empty() && LargestReadRunsAlongReduction(block, info);
  const ChannelsLastKind channels_last =
      dot_products ? ChannelsLastKind::kNone : ClassifyChannelsLast(block, info);
  if (channels_last == ChannelsLastKind::kBroadcast) {
    absl::StatusOr<ConvTiling> tiling = DefaultConvTiling(info, core);
    if (tiling.ok()) {
      // Layout-free weights read from strips packed once (in groups of input channels where the
      // core has a dot product for the types); the plain weights where that fails.
      const bool prepack = CanPrepackConvWeights(sch->func(), block, info, core);
      const bool dot = prepack && CpuDotForConv(block, info, core).has_value();
      for (auto [prepack_weights, dot_groups] :
           {std::pair{prepack, dot}, {prepack, false}, {false, false}}) {
        tiling->prepack_weights = prepack_weights;
        tiling->dot_groups = dot_groups;
        Schedule tiled = sch->Copy();
        if (TiledConvolution(&tiled, info, spatial, reduction, *tiling, core).ok()) {
          *sch = std::move(tiled);
          return absl::OkStatus();
        }
      }
    }
  }
  if (channels_last == ChannelsLastKind::kPerChannel) {
    Schedule trial = sch->Copy();
    if (TiledDepthwise(&trial, info, spatial, reduction, core).ok()) {
      *sch = std::move(trial);
      return absl::OkStatus();
    }
  }
  if (channels_last != ChannelsLastKind::kNone) {
    Schedule trial = sch->Copy();
    if (VectorizedReduction(&trial, info, spatial, reduction, core, cores).ok()) {
      *sch = std::move(trial);
      return absl::OkStatus();
    }
  }
  if (!reduction.empty() && (dot_products || IsInnerReduction(block)) && IsSumReduction(block)) {
    Schedule trial = sch->Copy();
    if (LaneReduction(&trial, info, block, spatial, reduction).ok()) {
      *sch = std::move(trial);
      return absl::OkStatus();
    }
  }
  if (vectorize) {
    const std::vector<SelectLoop> selects = SelectLoops(block, info);
    if (!selects.empty()) {
      Schedule trial = sch->Copy();
      if (UnrolledSelects(&trial, info, selects).ok()) {
        *sch = std::move(trial);
        return absl::OkStatus();
      }
    }
  }
  std::vector<LoopRV> outer = spatial;
  if (vectorize) outer.pop_back();
  LoopRV fused = outer[0];
  if (outer.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(fused, sch->Fuse(outer));
  }
  if (LoopExtent(*sch, fused) > 1) TESSERA_RETURN_IF_ERROR(sch->Parallel(fused));
  if (!vectorize) return absl::OkStatus();
  // A loop shorter than a vector whose dominant read strides along it (an NCHW image of 3
  // channels moved channels-last) becomes a partial vector filled by a gather: 11.7-13.8 us for
  // the small bench CNN's 64 x 64 x 3 input on the Intel core, 1.5-1.8 us unrolled.
  const int read = DominantRead(block);
  const std::vector<int> in =
      read < 0 ? std::vector<int>{} : AccessIters(block, block->reads[read].buffer);
  const bool strided_read = !in.empty() && in.back() != last && in.back() != -1;
  if (info.extents[last] < core.lanes && strided_read) return sch->Unroll(spatial.back());
  return sch->Vectorize(spatial.back());
}

std::optional<Schedule> CpuDefault(Schedule sch, const Target& target) {
  const CpuCore core = CpuCore::Of(target);
  const int64_t cores = target.Has("cores") ? target.cores() : 0;
  std::optional<std::vector<BlockInfo>> blocks = NormalizeBlocks(&sch);
  if (blocks.has_value()) blocks = TryInline(&sch, *blocks, /*into_reductions=*/false);
  if (blocks.has_value()) blocks = InlinePaddingIntoConvolutions(&sch, *blocks, core);
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
    if (std::optional<GemmMatch> gemm = MatchGemm(*block, info.extents, /*one_row=*/true)) {
      Schedule trial = sch.Copy();
      bool tiled = false;
      if (gemm->groups[kGemmI].empty()) {
        // The core's dot product for the types where it has one, else widened.
        tiled = OneRowFromStrips(&trial, info, *block, *gemm, core, /*dot_groups=*/true).ok();
        if (!tiled) {
          trial = sch.Copy();
          tiled = OneRowFromStrips(&trial, info, *block, *gemm, core).ok();
        }
      } else {
        MatmulTiling tiling = DefaultMatmulTiling(info, *gemm, core, cores,
                                                  ReadsLayoutFreeB(sch.func(), *block, *gemm));
        tiling.dot_groups = CpuDotFor(*block, *gemm, info.extents, core).has_value();
        tiled = TiledMatmul(&trial, info, *block, *gemm, tiling, core).ok();
        if (!tiled && tiling.dot_groups) {  // e.g. padded tiles: widened
          trial = sch.Copy();
          tiling.dot_groups = false;
          tiled = TiledMatmul(&trial, info, *block, *gemm, tiling, core).ok();
        }
        if (!tiled && tiling.layout == MatmulLayout::kPrepacked) {
          trial = sch.Copy();
          tiled = TiledMatmul(&trial, info, *block, *gemm,
                              DefaultMatmulTiling(info, *gemm, core, cores), core)
                      .ok();
        }
      }
      if (tiled) {
        sch = std::move(trial);
        continue;
      }
    }
    if (!ParallelVectorize(&sch, info, *block, core, cores).ok()) return std::nullopt;
  }
  return sch;
}

}  // namespace

DefaultRulePtr NewCpuDefaultRule() {
  return NewDefaultRule("CpuDefault", Target::Kind::kCpu, &CpuDefault);
}

}  // namespace dlight
}  // namespace tessera
