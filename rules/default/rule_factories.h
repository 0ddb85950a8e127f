// The default rules one by one (rules/default/*.cc), and the adapter that turns a scheduling
// function into a DefaultRule. Callers outside rules/default use default_rule.h.
#ifndef TESSERA_RULES_DEFAULT_RULE_FACTORIES_H_
#define TESSERA_RULES_DEFAULT_RULE_FACTORIES_H_

#include <optional>
#include <string>

#include "ir/target.h"
#include "rules/default/default_rule.h"
#include "schedule/schedule.h"

namespace tessera {
namespace dlight {

// Schedules the function of a fresh `sch` (seed 0) with fixed decisions; nullopt when the rule
// does not apply. A primitive that refuses means "does not apply", never an error.
using ScheduleFn = std::optional<Schedule> (*)(Schedule sch, const Target& target);

// A DefaultRule named `name` that applies `fn` to functions on targets of `kind` only.
DefaultRulePtr NewDefaultRule(std::string name, Target::Kind kind, ScheduleFn fn);

// True if `func` carries tessera.scheduled (rules/annotations.h attr::kScheduled) other than 0.
bool IsScheduled(const PrimFunc& func);

// GPU rules (docs/reference/metaschedule.md §10.2-10.9).
DefaultRulePtr NewGpuMatmulRule();            // "Matmul"
DefaultRulePtr NewGpuGemvRule();              // "GEMV"
DefaultRulePtr NewGpuReductionRule();         // "Reduction"
DefaultRulePtr NewGpuGeneralReductionRule();  // "GeneralReduction"
DefaultRulePtr NewGpuTransposeRule();         // "Transpose"
DefaultRulePtr NewGpuFallbackRule();          // "Fallback"
// CPU rules, in the order DefaultCpuRules tries them.
DefaultRulePtr NewCpuRowReductionRule();  // "CpuRowReduction" (softmax, norms)
DefaultRulePtr NewCpuTransposeRule();     // "CpuTranspose"
DefaultRulePtr NewCpuDefaultRule();       // "CpuDefault" (everything else)

}  // namespace dlight
}  // namespace tessera

#endif  // TESSERA_RULES_DEFAULT_RULE_FACTORIES_H_
