// Schedule rules build design spaces. A rule looks at one block of a schedule and returns the
// schedules that continue it: the input unchanged when the rule does not apply, one schedule
// with new (often sampling) instructions, or several to branch the design space. Rules are
// immutable once made, so one rule object serves every thread.
//
// Each rule is one file under rules/rule/, made by a factory in rules/schedule_rules.h and
// registered by name in rules/registry.cc. Parameters are a JSON object; keys left out take
// the defaults of the target (docs/reference/metaschedule.md §4.2).
#ifndef TESSERA_RULES_SCHEDULE_RULE_H_
#define TESSERA_RULES_SCHEDULE_RULE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "schedule/schedule.h"

namespace tessera {

class ScheduleRule {
 public:
  virtual ~ScheduleRule() = default;

  // The registered name, e.g. "MultiLevelTiling".
  virtual std::string name() const = 0;

  // The schedules continuing `*sch` at `block`. The rule may consume `*sch` (move it into the
  // result or Copy() it); the caller uses only the returned schedules. A rule that does not
  // apply returns {*sch} unchanged. A primitive failing inside a rule means the rule does not
  // apply in that branch: the branch is dropped or rolled back, never returned half-done.
  // Errors are reserved for broken invariants (a stale block RV, a bug).
  virtual absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const = 0;
};

using ScheduleRulePtr = std::shared_ptr<const ScheduleRule>;

}  // namespace tessera

#endif  // TESSERA_RULES_SCHEDULE_RULE_H_
