// CrossThreadReduction (docs/reference/metaschedule.md §4.3.7): on GPU, a reduction with little
// spatial parallelism gets its (fused) reduction loop split by a sampled thread count and the inner
// part bound to threadIdx.x, lowered later to a cross-thread allreduce. When possible the
// block is first computed inside its consumer's loop nest, with its result in shared memory.
// Returns the transformed schedule and the untouched original.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rules/analysis.h"
#include "rules/rule/params.h"
#include "rules/rule/reduction_loops.h"
#include "rules/schedule_rule.h"
#include "schedule/instruction_kinds.h"

namespace tessera {
namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Where the reduction block can be computed inside its first consumer.
struct FusionTarget {
  BlockRV consumer;
  LoopRV target_loop;     // the compute-at position among the consumer's loops
  LoopRV innermost_loop;  // the consumer's innermost loop
};

// The deepest loop or block enclosing all of `blocks` (sequences do not count).
absl::StatusOr<Stmt> LowestCommonAncestor(Schedule* sch, const std::vector<BlockRV>& blocks) {
  std::vector<StmtPath> paths;
  for (BlockRV b : blocks) {
    TESSERA_ASSIGN_OR_RETURN(StmtPath path, sch->GetPath(b));
    paths.push_back(std::move(path));
  }
  size_t depth = paths[0].size();
  for (const StmtPath& path : paths) {
    size_t k = 0;
    while (k < std::min(depth, path.size()) && path[k].same_as(paths[0][k])) ++k;
    depth = k;
  }
  while (depth > 1 && paths[0][depth - 1].as<ForNode>() == nullptr &&
         paths[0][depth - 1].as<BlockRealizeNode>() == nullptr) {
    --depth;
  }
  return paths[0][depth - 1];
}

// MetaSchedule's GetComputeTargetLoopAndBlock: nullopt when the block cannot be fused.
absl::StatusOr<std::optional<FusionTarget>> FindFusionTarget(Schedule* sch, BlockRV block) {
  TESSERA_ASSIGN_OR_RETURN(Block b, sch->Get(block));
  if (b->writes.size() != 1) return std::nullopt;
  TESSERA_ASSIGN_OR_RETURN(std::vector<BlockRV> consumers, sch->GetConsumers(block));
  if (consumers.empty() || NeedsMultiLevelTiling(*sch, consumers[0])) return std::nullopt;
  TESSERA_ASSIGN_OR_RETURN(Stmt lca, LowestCommonAncestor(sch, consumers));
  if (consumers.size() > 1 && lca.as<ForNode>() == nullptr) return std::nullopt;

  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(block));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> consumer_loops, sch->GetLoops(consumers[0]));
  std::vector<std::optional<IterKind>> kinds = LoopIterKinds(*sch, block);
  const int n = static_cast<int>(std::min(loops.size(), consumer_loops.size()));
  int pos = n - 1;
  for (int i = 0; i < n; ++i) {
    if (kinds[i] != IterKind::kSpatial) {
      pos = i - 1;
      break;
    }
    TESSERA_ASSIGN_OR_RETURN(StmtPath loop_path, sch->GetPath(consumer_loops[i]));
    if (loop_path.back().same_as(lca)) {  // not deeper than the consumers' common loop
      pos = i;
      break;
    }
  }
  if (pos < 0) return std::nullopt;
  return FusionTarget{consumers[0], consumer_loops[pos], consumer_loops.back()};
}

bool InThreadScope(Schedule* sch, BlockRV block) {
  absl::StatusOr<std::vector<LoopRV>> loops = sch->GetLoops(block);
  if (!loops.ok()) return false;
  for (LoopRV loop : *loops) {
    absl::StatusOr<const ForNode*> op = sch->Get(loop);
    if (op.ok() && StartsWith((*op)->thread_tag, "threadIdx")) return true;
  }
  return false;
}

// The factor of the Split whose output the first threadIdx.x Bind of the trace bound
// (nullopt if no such split or its factor was inferred).
std::optional<InstValue> ThreadIdxExtentFromTrace(const Trace& trace) {
  for (const Instruction& bind : trace.insts()) {
    if (bind.kind != &kBind || bind.attrs.empty() || bind.attrs[0].as_string() != "threadIdx.x") {
      continue;
    }
    for (const Instruction& split : trace.insts()) {
      if (split.kind != &kSplit) continue;
      for (size_t i = 0; i < split.outputs.size(); ++i) {
        if (split.outputs[i] == bind.inputs[0] && !split.inputs[1 + i].is_none()) {
          return split.inputs[1 + i];
        }
      }
    }
  }
  return std::nullopt;
}

class CrossThreadReduction : public ScheduleRule {
 public:
  CrossThreadReduction(int64_t max_threads_per_block, std::vector<int64_t> thread_extents)
      : max_threads_per_block_(max_threads_per_block), thread_extents_(std::move(thread_extents)) {}
  std::string name() const override { return "CrossThreadReduction"; }

  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const override {
    TESSERA_RETURN_IF_ERROR(sch->Get(block).status());
    if (max_threads_per_block_ == -1 ||
        !NeedsRFactorOrCrossThreadReduction(*sch, block, max_threads_per_block_)) {
      return std::vector<Schedule>{*sch};
    }
    // Fused into the consumer if that works, else the reduction alone.
    for (bool fuse : {true, false}) {
      Schedule transformed = sch->Copy();
      if (Transform(&transformed, block, fuse).ok()) {
        return std::vector<Schedule>{std::move(transformed), std::move(*sch)};
      }
    }
    return std::vector<Schedule>{*sch};
  }

 private:
  absl::Status Transform(Schedule* sch, BlockRV block, bool fuse) const {
    std::vector<double> probs(thread_extents_.size(),
                              1.0 / static_cast<double>(thread_extents_.size()));
    TESSERA_ASSIGN_OR_RETURN(ExprRV sampled, sch->SampleCategorical(thread_extents_, probs));
    InstValue thread_extent = InstValue::Of(sampled);
    if (fuse) {
      TESSERA_ASSIGN_OR_RETURN(std::optional<FusionTarget> target, FindFusionTarget(sch, block));
      if (!target.has_value()) return absl::FailedPreconditionError("not fusible");
      LoopRV target_loop = target->target_loop;
      if (!InThreadScope(sch, target->consumer)) {
        // Bind the consumer's innermost loop to the threads of the reduction.
        TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> split,
                                 sch->Split(target->innermost_loop, {InstValue(), thread_extent}));
        TESSERA_RETURN_IF_ERROR(sch->Bind(split[1], "threadIdx.x"));
        if (target->innermost_loop.id == target_loop.id) target_loop = split[0];
      } else {
        std::optional<InstValue> existing = ThreadIdxExtentFromTrace(sch->trace());
        if (!existing.has_value()) {
          return absl::FailedPreconditionError("threadIdx.x extent of the consumer unknown");
        }
        thread_extent = *existing;
      }
      TESSERA_RETURN_IF_ERROR(sch->ComputeAt(block, target_loop, /*preserve_unit_loops=*/true));
      TESSERA_RETURN_IF_ERROR(sch->SetScope(block, 0, "shared"));
    }
    TESSERA_ASSIGN_OR_RETURN(FusedReduction fused, ReorderAndFuseReductionLoops(sch, block));
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> split,
                             sch->Split(fused.reduction_loop, {InstValue(), thread_extent}));
    return sch->Bind(split[1], "threadIdx.x");
  }

  int64_t max_threads_per_block_;  // -1 on a CPU target: the rule never applies
  std::vector<int64_t> thread_extents_;
};

}  // namespace

absl::StatusOr<ScheduleRulePtr> NewCrossThreadReduction(const Target& target,
                                                        const nlohmann::json& params) {
  TESSERA_ASSIGN_OR_RETURN(RuleParams p,
                           RuleParams::Parse("CrossThreadReduction", params, {"thread_extents"}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> thread_extents,
                           p.IntList("thread_extents", {4, 8, 16, 32, 64, 128, 256, 512}));
  if (thread_extents.empty() ||
      std::any_of(thread_extents.begin(), thread_extents.end(), [](int64_t e) { return e < 1; })) {
    return p.Error("thread_extents", "must be a non-empty list of positive extents");
  }
  int64_t max_threads_per_block = target.is_cuda() ? target.max_threads_per_block() : -1;
  return std::make_shared<const CrossThreadReduction>(max_threads_per_block,
                                                      std::move(thread_extents));
}

}  // namespace tessera
