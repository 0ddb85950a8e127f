// Default schedules: rule-based, no search, in the style of TVM's DLight
// (docs/reference/metaschedule.md §10). A DefaultRule either schedules a whole function with fixed
// decisions or says it does not apply; ApplyDefaultSchedule tries rules in order and the first
// that applies wins.
#ifndef TESSERA_RULES_DEFAULT_DEFAULT_RULE_H_
#define TESSERA_RULES_DEFAULT_DEFAULT_RULE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/function.h"
#include "ir/target.h"
#include "schedule/schedule.h"

namespace tessera {

class DefaultRule {
 public:
  virtual ~DefaultRule() = default;
  // "Matmul", "GEMV", "Reduction", "GeneralReduction", "Transpose", "Fallback", "CpuDefault".
  virtual std::string name() const = 0;
  // The scheduled function (its trace records how), or nullopt when the rule does not apply
  // to `func` on `target` (wrong target kind, pattern not matched, a primitive refused).
  virtual absl::StatusOr<std::optional<Schedule>> Apply(const PrimFunc& func,
                                                        const Target& target) const = 0;
};

using DefaultRulePtr = std::shared_ptr<const DefaultRule>;

// Matmul (with the WMMA tensor-core path for float16 on sm_70+), GEMV, Reduction,
// GeneralReduction, Transpose, Fallback — for cuda targets.
std::vector<DefaultRulePtr> DefaultGpuRules();
// Parallel outer loops, vectorized inner loop (and a tiled matmul) — for cpu targets.
std::vector<DefaultRulePtr> DefaultCpuRules();
// The list for the target's kind.
std::vector<DefaultRulePtr> DefaultRulesFor(const Target& target);

// Which rule took which function.
struct DefaultScheduleEntry {
  std::string function;
  std::string rule;  // empty: no rule applied (function left unchanged)
  bool already_scheduled = false;  // marked tessera.scheduled before: left alone
};

// IRModule -> IRModule: every function not yet marked tessera.scheduled is scheduled by the
// first rule of `rules` that applies and marked tessera.scheduled = 1; the others are left as
// they are. `report` (if given) gets one entry per function, in name order.
absl::StatusOr<IRModule> ApplyDefaultSchedule(const IRModule& mod, const Target& target,
                                              const std::vector<DefaultRulePtr>& rules,
                                              std::vector<DefaultScheduleEntry>* report = nullptr);

}  // namespace tessera

#endif  // TESSERA_RULES_DEFAULT_DEFAULT_RULE_H_
