// ParallelizeVectorizeUnroll (docs/reference/metaschedule.md §4.3.8): annotates the root block with
// the parallel extent, the vectorize extent and a sampled unroll step; the postprocessor
// RewriteParallelVectorizeUnroll turns them into loop transformations.
#include <string>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "rules/analysis.h"
#include "rules/annotations.h"
#include "rules/rule/params.h"
#include "rules/schedule_rule.h"

namespace tessera {
namespace {

struct PvuConfig {
  int64_t max_parallel_extent = -1;   // cores * max_jobs_per_core, -1: none
  int64_t max_vectorize_extent = -1;  // -1: none
  std::vector<int64_t> unroll_max_steps;
  bool unroll_explicit = true;
};

class ParallelizeVectorizeUnroll : public ScheduleRule {
 public:
  explicit ParallelizeVectorizeUnroll(PvuConfig config) : config_(std::move(config)) {}
  std::string name() const override { return "ParallelizeVectorizeUnroll"; }

  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV root) const override {
    TESSERA_ASSIGN_OR_RETURN(StmtPath path, sch->GetPath(root));
    if (path.size() != 1) return std::vector<Schedule>{*sch};  // only the root block
    Schedule result = sch->Copy();
    if (!Annotate(&result, root).ok()) return std::vector<Schedule>{*sch};
    return std::vector<Schedule>{std::move(result)};
  }

 private:
  absl::Status Annotate(Schedule* sch, BlockRV root) const {
    if (config_.max_parallel_extent != -1) {
      TESSERA_RETURN_IF_ERROR(
          sch->Annotate(root, attr::kParallel, InstValue::Int(config_.max_parallel_extent)));
    }
    if (config_.max_vectorize_extent != -1) {
      TESSERA_RETURN_IF_ERROR(
          sch->Annotate(root, attr::kVectorize, InstValue::Int(config_.max_vectorize_extent)));
    }
    if (!config_.unroll_max_steps.empty() && !IsSpatialFunc(sch->func())) {
      std::vector<double> probs(config_.unroll_max_steps.size(),
                                1.0 / static_cast<double>(config_.unroll_max_steps.size()));
      TESSERA_ASSIGN_OR_RETURN(ExprRV step,
                               sch->SampleCategorical(config_.unroll_max_steps, probs));
      TESSERA_RETURN_IF_ERROR(sch->Annotate(
          root, config_.unroll_explicit ? attr::kUnrollExplicit : attr::kUnrollImplicit,
          InstValue::Of(step)));
    }
    return absl::OkStatus();
  }

  PvuConfig config_;
};

}  // namespace

absl::StatusOr<ScheduleRulePtr> NewParallelizeVectorizeUnroll(const Target& target,
                                                              const nlohmann::json& params) {
  TESSERA_ASSIGN_OR_RETURN(RuleParams p,
                           RuleParams::Parse("ParallelizeVectorizeUnroll", params,
                                             {"max_jobs_per_core", "max_vectorize_extent",
                                              "unroll_max_steps", "unroll_explicit"}));
  const bool cpu = target.is_cpu();
  PvuConfig c;
  TESSERA_ASSIGN_OR_RETURN(int64_t max_jobs_per_core, p.Int("max_jobs_per_core", cpu ? 16 : -1));
  TESSERA_ASSIGN_OR_RETURN(c.max_vectorize_extent, p.Int("max_vectorize_extent", cpu ? 64 : -1));
  TESSERA_ASSIGN_OR_RETURN(
      c.unroll_max_steps,
      p.IntList("unroll_max_steps", cpu ? std::vector<int64_t>{0, 16, 64, 512}
                                        : std::vector<int64_t>{0, 16, 64, 512, 1024}));
  TESSERA_ASSIGN_OR_RETURN(c.unroll_explicit, p.Bool("unroll_explicit", true));
  if (max_jobs_per_core < 1 && max_jobs_per_core != -1) {
    return p.Error("max_jobs_per_core", "must be at least 1 (or -1: no parallelization)");
  }
  if (max_jobs_per_core != -1 && !cpu) {
    return p.Error("max_jobs_per_core", "must be -1 on a cuda target (no cores to parallelize)");
  }
  if (c.max_vectorize_extent < 1 && c.max_vectorize_extent != -1) {
    return p.Error("max_vectorize_extent", "must be at least 1 (or -1: no vectorization)");
  }
  for (int64_t step : c.unroll_max_steps) {
    if (step < 0) return p.Error("unroll_max_steps", "must hold non-negative steps");
  }
  if (max_jobs_per_core != -1) c.max_parallel_extent = target.cores() * max_jobs_per_core;
  return std::make_shared<const ParallelizeVectorizeUnroll>(std::move(c));
}

}  // namespace tessera
