// The schedule rule registry (rules/registry.cc): rules are made by name with their parameters,
// bad parameters name the rule and the key, and each rule carries its registered name; the
// default lists take parameters by rule name.
#include "rules/registry.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rules/schedule_rule.h"
#include "tests/rules/rule_testing.h"

namespace tessera {
namespace {

using rule_testing::Cpu;
using rule_testing::Cuda;
using rule_testing::Make;

TEST(ScheduleRuleFactoryTest, BadParametersNameTheRuleAndTheKey) {
  struct Case {
    absl::StatusOr<ScheduleRulePtr> rule;
    std::string expected;
  };
  std::vector<Case> cases;
  cases.push_back({NewAutoInline(Cpu(), {{"into_producer", 1}}),
                   "AutoInline: parameter 'into_producer' must be a boolean"});
  cases.push_back({NewAutoInline(Cpu(), {{"disallow_op", {"no_such_op"}}}),
                   "AutoInline: parameter 'disallow_op' names an unknown operator 'no_such_op'"});
  cases.push_back({NewInlineConstantScalars(Cpu(), {{"x", 1}}),
                   "InlineConstantScalars: unknown parameter 'x'"});
  cases.push_back({NewAddRFactor(Cpu(), {{"max_jobs_per_core", "16"}}),
                   "AddRFactor: parameter 'max_jobs_per_core' must be an integer"});
  cases.push_back({NewAddRFactor(Cpu(), {{"max_innermost_factor", 0}}),
                   "AddRFactor: parameter 'max_innermost_factor' must be at least 1"});
  cases.push_back({NewParallelizeVectorizeUnroll(Cpu(), {{"unroll_max_steps", {0, -4}}}),
                   "ParallelizeVectorizeUnroll: parameter 'unroll_max_steps' must hold"});
  cases.push_back({NewParallelizeVectorizeUnroll(Cuda(), {{"max_jobs_per_core", 16}}),
                   "ParallelizeVectorizeUnroll: parameter 'max_jobs_per_core' must be -1"});
  cases.push_back({NewRandomComputeLocation(Cpu(), {{"seed", 1}}),
                   "RandomComputeLocation: unknown parameter 'seed'"});
  cases.push_back({NewCrossThreadReduction(Cuda(), {{"thread_extents", nlohmann::json::array()}}),
                   "CrossThreadReduction: parameter 'thread_extents' must be a non-empty list"});
  cases.push_back({NewAutoBind(Cuda(), {{"max_threadblocks", true}}),
                   "AutoBind: parameter 'max_threadblocks' must be an integer"});
  cases.push_back({NewAutoBind(Cuda(), {{"thread_extents", {32, 0}}}),
                   "AutoBind: parameter 'thread_extents' must hold positive extents"});
  for (const Case& c : cases) {
    EXPECT_EQ(c.rule.status().code(), absl::StatusCode::kInvalidArgument) << c.expected;
    EXPECT_NE(c.rule.status().message().find(c.expected), std::string::npos) << c.rule.status();
  }
}

TEST(ScheduleRuleFactoryTest, RulesCarryTheirRegisteredNames) {
  EXPECT_EQ(Make(NewAutoInline(Cpu(), {}))->name(), "AutoInline");
  EXPECT_EQ(Make(NewInlineConstantScalars(Cpu(), {}))->name(), "InlineConstantScalars");
  EXPECT_EQ(Make(NewAddRFactor(Cpu(), {}))->name(), "AddRFactor");
  EXPECT_EQ(Make(NewParallelizeVectorizeUnroll(Cpu(), {}))->name(), "ParallelizeVectorizeUnroll");
  EXPECT_EQ(Make(NewRandomComputeLocation(Cpu(), {}))->name(), "RandomComputeLocation");
  EXPECT_EQ(Make(NewCrossThreadReduction(Cuda(), {}))->name(), "CrossThreadReduction");
  EXPECT_EQ(Make(NewAutoBind(Cuda(), {}))->name(), "AutoBind");
}

TEST(DefaultScheduleRulesTest, RuleParamsMustNameDefaultRulesOfTheTarget) {
  absl::StatusOr<std::vector<ScheduleRulePtr>> cuda_only =
      DefaultScheduleRules(Cpu(), {{"CrossThreadReduction", nlohmann::json::object()}});
  EXPECT_EQ(cuda_only.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(
      cuda_only.status().message().find("'CrossThreadReduction' is not a default rule on cpu"),
      std::string::npos)
      << cuda_only.status();
  absl::StatusOr<std::vector<ScheduleRulePtr>> not_object =
      DefaultScheduleRules(Cpu(), nlohmann::json::array({"MultiLevelTiling"}));
  EXPECT_EQ(not_object.status().code(), absl::StatusCode::kInvalidArgument);
  // A rule's own checks still apply to the parameters it is given.
  absl::StatusOr<std::vector<ScheduleRulePtr>> bad_key =
      DefaultScheduleRules(Cpu(), {{"MultiLevelTiling", {{"pad_odd", true}}}});
  EXPECT_EQ(bad_key.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_key.status().message().find("pad_odd"), std::string::npos) << bad_key.status();
}

}  // namespace
}  // namespace tessera
