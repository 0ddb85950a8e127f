// AddRFactor (docs/reference/metaschedule.md §4.3.6): a reduction with little spatial parallelism
// is split into a partial (rfactor) reduction over a sampled factor of its reduction loop and a
// final one, so the partial results can run in parallel. Branches the design space into
// the successful rfactor variants plus the untouched original.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "rules/analysis.h"
#include "rules/annotations.h"
#include "rules/rule/params.h"
#include "rules/rule/reduction_loops.h"
#include "rules/schedule_rule.h"

namespace tessera {
namespace {

class AddRFactor : public ScheduleRule {
 public:
  AddRFactor(int64_t max_parallel_extent, int64_t max_innermost_factor)
      : max_parallel_extent_(max_parallel_extent), max_innermost_factor_(max_innermost_factor) {}
  std::string name() const override { return "AddRFactor"; }

  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const override {
    TESSERA_RETURN_IF_ERROR(sch->Get(block).status());
    if (!NeedsRFactorOrCrossThreadReduction(*sch, block, max_parallel_extent_)) {
      return std::vector<Schedule>{*sch};
    }
    std::vector<Schedule> result;
    Schedule split = sch->Copy();
    absl::StatusOr<SplitReductionLoops> loops = SplitReduction(&split, block);
    if (loops.ok()) {
      for (LoopRV loop : loops->loops) {
        Schedule variant = split.Copy();
        if (!variant.RFactor(loop, loops->factor_axis).ok()) continue;
        // RandomComputeLocation places the rfactor block (now the producer) as well.
        if (!variant.Annotate(block, attr::kRandomComputeProducer, InstValue::Int(1)).ok()) {
          continue;
        }
        result.push_back(std::move(variant));
      }
    }
    result.push_back(std::move(*sch));
    return result;
  }

 private:
  struct SplitReductionLoops {
    std::vector<LoopRV> loops;  // outer and inner part of the fused reduction loop
    int factor_axis = 0;        // of the RFactor
  };

  // Spatial loops first, the reduction loops fused and split by a sampled perfect tile.
  absl::StatusOr<SplitReductionLoops> SplitReduction(Schedule* sch, BlockRV block) const {
    TESSERA_ASSIGN_OR_RETURN(FusedReduction fused, ReorderAndFuseReductionLoops(sch, block));
    TESSERA_ASSIGN_OR_RETURN(
        std::vector<ExprRV> factors,
        sch->SamplePerfectTile(fused.reduction_loop, 2, max_innermost_factor_));
    // The partial-result dimension goes after the output's dimensions. MetaSchedule passes
    // the number of spatial loops, which overshoots when unit loops bind no output dimension.
    TESSERA_ASSIGN_OR_RETURN(Block b, sch->Get(block));
    SplitReductionLoops result;
    result.factor_axis = std::min(fused.num_spatial_loops, b->writes[0].buffer.ndim());
    TESSERA_ASSIGN_OR_RETURN(
        result.loops,
        sch->Split(fused.reduction_loop, {InstValue::Of(factors[0]), InstValue::Of(factors[1])}));
    return result;
  }

  int64_t max_parallel_extent_;
  int64_t max_innermost_factor_;
};

}  // namespace

absl::StatusOr<ScheduleRulePtr> NewAddRFactor(const Target& target, const nlohmann::json& params) {
  TESSERA_ASSIGN_OR_RETURN(
      RuleParams p,
      RuleParams::Parse("AddRFactor", params, {"max_jobs_per_core", "max_innermost_factor"}));
  TESSERA_ASSIGN_OR_RETURN(int64_t max_jobs_per_core, p.Int("max_jobs_per_core", 16));
  TESSERA_ASSIGN_OR_RETURN(int64_t max_innermost_factor, p.Int("max_innermost_factor", 64));
  if (max_jobs_per_core < 1) return p.Error("max_jobs_per_core", "must be at least 1");
  if (max_innermost_factor < 1 && max_innermost_factor != -1) {
    return p.Error("max_innermost_factor", "must be at least 1 (or -1: no limit)");
  }
  int64_t cores = target.is_cpu() ? target.cores() : 1;
  return std::make_shared<const AddRFactor>(cores * max_jobs_per_core, max_innermost_factor);
}

}  // namespace tessera
