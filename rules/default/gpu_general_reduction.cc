// GeneralReduction (docs/reference/metaschedule.md §10.7): softmax, layer norm, RMS norm and other
// row-wise chains. After inlining runs of elementwise blocks: the first block's iteration kinds D
// end with at least one "R", every middle block has the same kinds, and the last block is
// elementwise with at most len(D) iterators, more than D's leading spatial ones. One thread block
// per row: the last block's leading spatial loops (as many as D starts with) are fused on
// blockIdx.x and the rest spread over 256 threads; every earlier block keeps its output in shared
// memory, is computed at that row loop, and spreads its trailing reduction loops over the same
// threads (a cross-thread reduction).
#include "base/status_macros.h"
#include "rules/default/analysis.h"
#include "rules/default/rule_factories.h"

namespace tessera {
namespace dlight {
namespace {

constexpr int64_t kGeneralReductionThreads = 256;
constexpr int64_t kGeneralReductionUnroll = 256;

// The row loops: the first block's leading spatial iterators, less the unit ones just before its
// reductions. A reduction that keeps its dimensions (ReduceMean of RMS norm with keepdims: [1,
// 16, 1] over 32) has one there, which the last block iterates as the row's elements instead.
size_t RowLoops(const BlockInfo& first) {
  size_t rows = first.kinds.find('R');
  while (rows > 1 && first.extents[rows - 1] == 1) --rows;
  return rows;
}

absl::Status Apply(Schedule* sch, const std::vector<BlockInfo>& blocks, int64_t len_tx) {
  const std::string& kinds = blocks[0].kinds;
  const size_t leading_s = RowLoops(blocks[0]);
  const size_t trailing_r = kinds.size() - kinds.find_last_not_of('R') - 1;
  const BlockInfo& last = blocks.back();
  if (last.loops.size() < leading_s || leading_s == 0) {
    return absl::InvalidArgumentError("the last block has too few loops");
  }
  std::vector<LoopRV> rows(last.loops.begin(), last.loops.begin() + leading_s);
  LoopRV row = rows[0];
  if (rows.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(row, sch->Fuse(rows));
  }
  TESSERA_RETURN_IF_ERROR(sch->Bind(row, "blockIdx.x"));
  TESSERA_RETURN_IF_ERROR(SpreadOverThreads(sch, last.rv,
                                            {last.loops.begin() + leading_s, last.loops.end()},
                                            len_tx, kGeneralReductionUnroll)
                              .status());
  for (size_t b = blocks.size() - 1; b-- > 0;) {
    const BlockInfo& info = blocks[b];
    TESSERA_RETURN_IF_ERROR(sch->ComputeAt(info.rv, row, /*preserve_unit_loops=*/true));
    TESSERA_RETURN_IF_ERROR(sch->SetScope(info.rv, 0, "shared"));
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(info.rv));
    if (loops.size() < trailing_r + 1) return absl::InvalidArgumentError("unexpected loops");
    TESSERA_RETURN_IF_ERROR(SpreadOverThreads(sch, info.rv, {loops.end() - trailing_r, loops.end()},
                                              len_tx, kGeneralReductionUnroll)
                                .status());
  }
  return absl::OkStatus();
}

std::optional<Schedule> GeneralReduction(Schedule sch, const Target& target) {
  std::optional<std::vector<BlockInfo>> blocks = NormalizeBlocks(&sch);
  if (blocks.has_value()) blocks = TryInlineContiguousSpatial(&sch, *blocks);
  if (!blocks.has_value() || blocks->size() < 2) return std::nullopt;
  const std::string& kinds = (*blocks)[0].kinds;
  if (kinds.empty() || kinds.back() != 'R' || kinds.find('R') == 0) return std::nullopt;
  // D = S...S R...R: no spatial iterator after the first reduction one.
  if (kinds.find('S', kinds.find('R')) != std::string::npos) return std::nullopt;
  for (size_t b = 1; b + 1 < blocks->size(); ++b) {
    if ((*blocks)[b].kinds != kinds) return std::nullopt;
  }
  const BlockInfo& last = blocks->back();
  // Rows of several elements only: a reduction per output element (a convolution followed by
  // its activation) is left to other rules.
  const size_t leading_s = RowLoops((*blocks)[0]);
  if (!last.IsInjective() || last.kinds.size() > kinds.size() ||
      last.kinds.size() <= leading_s) {
    return std::nullopt;
  }
  const int64_t len_tx = std::min(kGeneralReductionThreads, target.max_threads_per_block());
  if (!Apply(&sch, *blocks, len_tx).ok()) return std::nullopt;
  return IfValidOnGpu(std::move(sch), target);
}

}  // namespace

DefaultRulePtr NewGpuGeneralReductionRule() {
  return NewDefaultRule("GeneralReduction", Target::Kind::kCuda, &GeneralReduction);
}

}  // namespace dlight
}  // namespace tessera
