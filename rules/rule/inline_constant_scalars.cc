// InlineConstantScalars (docs/reference/metaschedule.md §4.3.2): inlines blocks that compute a
// 0-dimensional buffer from nothing (a constant scalar) into their consumers.
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "rules/rule/params.h"
#include "rules/schedule_rule.h"

namespace tessera {
namespace {

class InlineConstantScalars : public ScheduleRule {
 public:
  std::string name() const override { return "InlineConstantScalars"; }

  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block_rv) const override {
    TESSERA_ASSIGN_OR_RETURN(Block block, sch->Get(block_rv));
    if (block->reads.empty() && block->writes.size() == 1 && block->writes[0].buffer.ndim() == 0) {
      // ComputeInline refuses output blocks (and anything else it cannot inline).
      (void)sch->ComputeInline(block_rv);
    }
    return std::vector<Schedule>{*sch};
  }
};

}  // namespace

absl::StatusOr<ScheduleRulePtr> NewInlineConstantScalars(const Target&,
                                                         const nlohmann::json& params) {
  TESSERA_RETURN_IF_ERROR(RuleParams::Parse("InlineConstantScalars", params, {}).status());
  return std::make_shared<const InlineConstantScalars>();
}

}  // namespace tessera
