// CpuTranspose: the default for transposes on cpu targets (the CPU counterpart of the GPU
// Transpose rule, docs/reference/metaschedule.md §10.9). After inlining into elementwise
// consumers, a single elementwise block whose output is contiguous along its last loop L while
// its dominant read is contiguous along another loop P. CpuDefault's (rows parallel, L
// vectorized) would read one float per cache line along L, 16x slower than moving the tile
// through L1: P and L are split by 8 and the loops reordered to (others, P_o, L_o | P_i, L_i),
// the outer ones fused and parallel, L_i vectorized (both tile loops unrolled where the input
// rows are short): each 8 x 8 tile reads 8 lines of the input and writes 8 lines of the output.
// Declines extents that 8 does not divide (a predicated tile).
#include "base/status_macros.h"
#include "rules/default/analysis.h"
#include "rules/default/rule_factories.h"

namespace tessera {
namespace dlight {
namespace {

constexpr int64_t kTile = 8;
// Floats in an input row (along the tile's read loop) up to which the tile is unrolled.
constexpr int64_t kShortInputRow = 32;

absl::Status Apply(Schedule* sch, const BlockInfo& info, size_t p) {
  const size_t last = info.loops.size() - 1;
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> ps,
                           sch->Split(info.loops[p], {InstValue(), InstValue::Int(kTile)}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> ls,
                           sch->Split(info.loops[last], {InstValue(), InstValue::Int(kTile)}));
  std::vector<LoopRV> outer;
  for (size_t i = 0; i < last; ++i) {
    if (i != p) outer.push_back(info.loops[i]);
  }
  outer.push_back(ps[0]);
  outer.push_back(ls[0]);
  std::vector<LoopRV> order = outer;
  order.push_back(ps[1]);
  order.push_back(ls[1]);
  TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
  TESSERA_ASSIGN_OR_RETURN(LoopRV tiles, sch->Fuse(outer));
  TESSERA_RETURN_IF_ERROR(sch->Parallel(tiles));
  // Input rows of two lines (an NHWC image of 32 channels moved back to NCHW at a model's
  // output): the tile unrolled, 64 loads and stores, ran the U-Net's 128 x 128 x 32 in 121-131
  // us inside the model against 196-216 vectorized (a gather of 8 strided floats per vector).
  // Rows of 64 stay vectorized: BERT's and GPT-2's [128, 12, 64] -> [12, 64, 128] ran 24-28 and
  // 21-26 us inside their models so, 36-38 and 32-35 unrolled (the Intel core, 2026-12-06).
  if (info.extents[p] <= kShortInputRow) {
    TESSERA_RETURN_IF_ERROR(sch->Unroll(ps[1]));
    return sch->Unroll(ls[1]);
  }
  return sch->Vectorize(ls[1]);
}

std::optional<Schedule> CpuTranspose(Schedule sch, const Target& /*target*/) {
  std::optional<std::vector<BlockInfo>> blocks = NormalizeBlocks(&sch);
  if (blocks.has_value()) blocks = TryInline(&sch, *blocks, /*into_reductions=*/false);
  if (!blocks.has_value() || blocks->size() != 1) return std::nullopt;
  const BlockInfo& info = blocks->front();
  if (!info.IsInjective() || info.loops.size() < 2) return std::nullopt;
  absl::StatusOr<Block> block = BlockByName(sch, info.name);
  if (!block.ok()) return std::nullopt;
  const int last = static_cast<int>(info.loops.size()) - 1;
  std::vector<int> out = AccessIters(*block, (*block)->writes[0].buffer);
  const int read = DominantRead(*block);
  if (out.empty() || out.back() != last || read < 0) return std::nullopt;
  std::vector<int> in = AccessIters(*block, (*block)->reads[read].buffer);
  if (in.empty() || in.back() < 0 || in.back() == last) return std::nullopt;
  const size_t p = static_cast<size_t>(in.back());
  if (info.extents[p] % kTile != 0 || info.extents[last] % kTile != 0) return std::nullopt;
  if (!Apply(&sch, info, p).ok()) return std::nullopt;
  return sch;
}

}  // namespace

DefaultRulePtr NewCpuTransposeRule() {
  return NewDefaultRule("CpuTranspose", Target::Kind::kCpu, &CpuTranspose);
}

}  // namespace dlight
}  // namespace tessera
