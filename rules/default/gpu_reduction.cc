// Reduction (docs/reference/metaschedule.md §10.6): after inlining runs of elementwise blocks, one
// sum reduction along contiguous memory (the dominant read's innermost index is a reduction
// iterator), optionally followed by one elementwise epilogue. One thread block per output row;
// the row's reduction is spread over up to max_threads_per_block threads (the largest power of
// two not above the reduction length, at least a warp) and combined across threads. The
// epilogue runs at the row loop on the same threads, reading the row's result from shared memory.
// DLight's inner-spatial variant (reductions along a strided axis) is not implemented: such
// functions fall through to the next rule.
#include "base/status_macros.h"
#include "rules/default/analysis.h"
#include "rules/default/rule_factories.h"

namespace tessera {
namespace dlight {
namespace {

constexpr int64_t kReductionUnroll = 256;

std::optional<Schedule> Reduction(Schedule sch, const Target& target) {
  std::optional<InnerSumReduction> found = FindInnerSumReduction(&sch);
  if (!found.has_value() || !found->main.IsReduction()) return std::nullopt;
  const BlockInfo& main = found->main;
  int64_t len_r = 1;
  for (size_t i = 0; i < main.kinds.size(); ++i) {
    if (main.kinds[i] == 'R') len_r *= main.extents[i];
  }
  if (len_r <= 0) return std::nullopt;
  const int64_t max_threads = target.max_threads_per_block();
  const int64_t len_tx =
      std::max<int64_t>(std::min<int64_t>(32, max_threads), FloorPowerOfTwo(len_r, max_threads));
  if (!ScheduleRowReduction(&sch, main, found->epilogue, len_tx, kReductionUnroll).ok()) {
    return std::nullopt;
  }
  return IfValidOnGpu(std::move(sch), target);
}

}  // namespace

DefaultRulePtr NewGpuReductionRule() {
  return NewDefaultRule("Reduction", Target::Kind::kCuda, &Reduction);
}

}  // namespace dlight
}  // namespace tessera
