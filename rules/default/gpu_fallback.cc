// Fallback (docs/reference/metaschedule.md §10.2): any normal function. Everything inlinable is
// inlined; each remaining block gets its spatial loops fused and split over blockIdx.x /
// threadIdx.x, its reduction loops serial inside (init decomposed before them). Unlike DLight,
// whose intermediates may live in global workspaces, Tessera's kernels keep intermediates on chip:
// a reduction whose output feeds an elementwise epilogue accumulates in a local register and the
// epilogue is inlined into the write-back (CBR: conv + bias + batch norm + ReLU).
#include <algorithm>

#include "base/status_macros.h"
#include "rules/default/analysis.h"
#include "rules/default/rule_factories.h"

namespace tessera {
namespace dlight {
namespace {

// Threads per block: DLight uses max_threads_per_block (1024 on CUDA); 256 keeps the register
// budget of unscheduled reduction bodies (convolutions) within the per-block limit.
constexpr int64_t kMaxFallbackThreads = 256;

bool WritesParam(const Schedule& sch, const Block& block) {
  for (const BufferRegion& w : block->writes) {
    for (const Buffer& p : sch.func().params()) {
      if (p.same_as(w.buffer)) return true;
    }
  }
  return false;
}

absl::Status ScheduleBlock(Schedule* sch, const BlockInfo& info, int64_t threads) {
  std::vector<LoopRV> spatial, reduction;
  for (size_t i = 0; i < info.kinds.size(); ++i) {
    (info.kinds[i] == 'S' ? spatial : reduction).push_back(info.loops[i]);
  }
  if (!spatial.empty() && !reduction.empty() && info.kinds.find('R') < spatial.size()) {
    std::vector<LoopRV> order = spatial;
    order.insert(order.end(), reduction.begin(), reduction.end());
    TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
  }
  LoopRV fused;
  if (spatial.empty()) {
    TESSERA_ASSIGN_OR_RETURN(fused, reduction.empty() ? sch->AddUnitLoop(info.rv)
                                                      : sch->AddUnitLoop(reduction[0]));
  } else if (spatial.size() == 1) {
    fused = spatial[0];
  } else {
    TESSERA_ASSIGN_OR_RETURN(fused, sch->Fuse(spatial));
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> parts,
                           sch->Split(fused, {InstValue(), InstValue::Int(threads)}));
  TESSERA_RETURN_IF_ERROR(sch->Bind(parts[0], "blockIdx.x"));
  TESSERA_RETURN_IF_ERROR(sch->Bind(parts[1], "threadIdx.x"));
  if (reduction.empty()) return absl::OkStatus();
  TESSERA_ASSIGN_OR_RETURN(Block block, BlockByName(*sch, info.name));
  if (!WritesParam(*sch, block)) {
    TESSERA_RETURN_IF_ERROR(WriteBackUnder(sch, info.rv, parts[1], "local").status());
  }
  return sch->DecomposeReduction(info.rv, reduction[0]).status();
}

std::optional<Schedule> Fallback(Schedule sch, const Target& target) {
  std::optional<std::vector<BlockInfo>> blocks = NormalizeBlocks(&sch);
  if (!blocks.has_value()) return std::nullopt;
  blocks = TryInline(&sch, *blocks);
  if (!blocks.has_value()) return std::nullopt;
  const int64_t threads = std::min(kMaxFallbackThreads, target.max_threads_per_block());
  // Blocks reverse-inlined into an earlier block's write-back disappear on the way.
  for (const BlockInfo& info : *blocks) {
    absl::StatusOr<BlockRV> rv = sch.GetBlock(info.name);
    if (!rv.ok()) continue;
    absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(*rv);
    if (!loops.ok() || loops->size() != info.loops.size()) return std::nullopt;
    BlockInfo current = info;
    current.rv = *rv;
    current.loops = *loops;
    if (!ScheduleBlock(&sch, current, threads).ok()) return std::nullopt;
  }
  return IfValidOnGpu(std::move(sch), target);
}

}  // namespace

DefaultRulePtr NewGpuFallbackRule() {
  return NewDefaultRule("Fallback", Target::Kind::kCuda, &Fallback);
}

}  // namespace dlight
}  // namespace tessera
