// The default rule lists per target and ApplyDefaultSchedule (docs/reference/metaschedule.md
// §10.1): every function not yet scheduled gets the schedule of the first rule that applies.
#include <utility>

#include "rules/annotations.h"
#include "rules/default/default_rule.h"
#include "rules/default/rule_factories.h"

namespace tessera {
namespace dlight {
namespace {

class FunctionRule : public DefaultRule {
 public:
  FunctionRule(std::string name, Target::Kind kind, ScheduleFn fn)
      : name_(std::move(name)), kind_(kind), fn_(fn) {}

  std::string name() const override { return name_; }

  absl::StatusOr<std::optional<Schedule>> Apply(const PrimFunc& func,
                                                const Target& target) const override {
    if (target.kind() != kind_ || !func.defined()) return std::optional<Schedule>();
    return fn_(Schedule::Create(func, /*seed=*/0), target);
  }

 private:
  std::string name_;
  Target::Kind kind_;
  ScheduleFn fn_;
};

}  // namespace

bool IsScheduled(const PrimFunc& func) {
  auto it = func.attrs().find(attr::kScheduled);
  if (it == func.attrs().end()) return false;
  const int64_t* flag = std::get_if<int64_t>(&it->second);
  return flag == nullptr || *flag != 0;
}

DefaultRulePtr NewDefaultRule(std::string name, Target::Kind kind, ScheduleFn fn) {
  return std::make_shared<FunctionRule>(std::move(name), kind, fn);
}

}  // namespace dlight

std::vector<DefaultRulePtr> DefaultGpuRules() {
  return {dlight::NewGpuMatmulRule(),    dlight::NewGpuGemvRule(),
          dlight::NewGpuReductionRule(), dlight::NewGpuGeneralReductionRule(),
          dlight::NewGpuTransposeRule(), dlight::NewGpuFallbackRule()};
}

std::vector<DefaultRulePtr> DefaultCpuRules() {
  return {dlight::NewCpuRowReductionRule(), dlight::NewCpuTransposeRule(),
          dlight::NewCpuDefaultRule()};
}

std::vector<DefaultRulePtr> DefaultRulesFor(const Target& target) {
  return target.is_cuda() ? DefaultGpuRules() : DefaultCpuRules();
}

absl::StatusOr<IRModule> ApplyDefaultSchedule(const IRModule& mod, const Target& target,
                                              const std::vector<DefaultRulePtr>& rules,
                                              std::vector<DefaultScheduleEntry>* report) {
  IRModule out = mod;
  for (const auto& [name, func] : mod.functions()) {
    DefaultScheduleEntry entry{name, "", dlight::IsScheduled(func)};
    if (!entry.already_scheduled) {
      for (const DefaultRulePtr& rule : rules) {
        absl::StatusOr<std::optional<Schedule>> sch = rule->Apply(func, target);
        if (!sch.ok()) return sch.status();
        if (!sch->has_value()) continue;
        entry.rule = rule->name();
        out.Update((*sch)->func().WithName(name).WithAttr(attr::kScheduled, int64_t{1}));
        break;
      }
    }
    if (report != nullptr) report->push_back(std::move(entry));
  }
  return out;
}

}  // namespace tessera
