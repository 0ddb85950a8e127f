// AutoBind (docs/reference/metaschedule.md §4.3.11): binds the outer spatial loops of a GPU block
// to blockIdx.x / threadIdx.x with a sampled thread count (rules/thread_bind.h). On a CPU
// target it never applies.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "rules/rule/params.h"
#include "rules/schedule_rule.h"
#include "rules/thread_bind.h"

namespace tessera {
namespace {

class AutoBind : public ScheduleRule {
 public:
  AutoBind(int64_t max_threadblocks, int64_t max_threads_per_block,
           std::vector<int64_t> thread_extents)
      : max_threadblocks_(max_threadblocks),
        max_threads_per_block_(max_threads_per_block),
        sampler_(MakeThreadExtentSampler(std::move(thread_extents))) {}
  std::string name() const override { return "AutoBind"; }

  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const override {
    TESSERA_RETURN_IF_ERROR(sch->Get(block).status());
    if (max_threads_per_block_ == -1) return std::vector<Schedule>{*sch};
    Schedule bound = sch->Copy();
    if (!BindBlockThreadIdx(&bound, block, max_threadblocks_, max_threads_per_block_, sampler_)
             .ok()) {
      return std::vector<Schedule>{*sch};  // e.g. a blockIdx loop without threadIdx
    }
    return std::vector<Schedule>{std::move(bound)};
  }

 private:
  int64_t max_threadblocks_;
  int64_t max_threads_per_block_;  // -1 on a CPU target
  ThreadExtentSampler sampler_;
};

}  // namespace

absl::StatusOr<ScheduleRulePtr> NewAutoBind(const Target& target, const nlohmann::json& params) {
  TESSERA_ASSIGN_OR_RETURN(
      RuleParams p, RuleParams::Parse("AutoBind", params, {"max_threadblocks", "thread_extents"}));
  TESSERA_ASSIGN_OR_RETURN(int64_t max_threadblocks, p.Int("max_threadblocks", 256));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> thread_extents,
                           p.IntList("thread_extents", {32, 64, 128, 256, 512, 1024}));
  if (max_threadblocks < 1) return p.Error("max_threadblocks", "must be at least 1");
  if (std::any_of(thread_extents.begin(), thread_extents.end(), [](int64_t e) { return e < 1; })) {
    return p.Error("thread_extents", "must hold positive extents");
  }
  // A CPU target has no threads to bind: the rule then never applies.
  int64_t max_threads_per_block = target.is_cuda() ? target.max_threads_per_block() : -1;
  return std::make_shared<const AutoBind>(max_threadblocks, max_threads_per_block,
                                          std::move(thread_extents));
}

}  // namespace tessera
