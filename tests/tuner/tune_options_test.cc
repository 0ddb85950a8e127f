#include "tuner/tune_options.h"

#include <gtest/gtest.h>

#include <string>

#include "ir/target.h"

namespace tessera {
namespace {

Target Cpu() { return Target::Parse("cpu").value(); }

// The message of Validate for `settings`, or "" when they are valid.
std::string Problem(const TuningSettings& settings) {
  absl::Status s = settings.Validate(Cpu());
  if (s.ok()) return "";
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(TuningSettingsTest, TheDefaultsAreValid) { EXPECT_EQ(Problem(TuningSettings()), ""); }

TEST(TuningSettingsTest, EachBadFieldIsNamedInTheServicesSpelling) {
  TuningSettings s;
  s.max_trials_global = 0;
  EXPECT_EQ(Problem(s), "max_trials: the trial budget must be > 0");
  s = TuningSettings();
  s.max_trials_per_task = -1;
  EXPECT_EQ(Problem(s), "max_trials_per_task: must be >= 0");
  s = TuningSettings();
  s.max_trials_global = 8;
  s.max_trials_per_task = 9;
  EXPECT_EQ(Problem(s), "max_trials_per_task: 9 is more than the job's max_trials 8");
  s = TuningSettings();
  s.num_trials_per_iter = 0;
  EXPECT_EQ(Problem(s), "trials_per_iter: must be in [1, 4096]");
  s.num_trials_per_iter = kMaxTrialsPerIter + 1;
  EXPECT_EQ(Problem(s), "trials_per_iter: must be in [1, 4096]");
  s = TuningSettings();
  s.strategy = "annealing";
  EXPECT_EQ(Problem(s), "strategy: unknown strategy 'annealing' (evolutionary, replay)");
  s = TuningSettings();
  s.cost_model = "oracle";
  EXPECT_EQ(Problem(s), "cost_model: unknown cost model 'oracle' (xgb, random)");
  s = TuningSettings();
  s.task_scheduler = "fifo";
  EXPECT_EQ(Problem(s), "task_scheduler: unknown task scheduler 'fifo' (gradient, round-robin)");
}

TEST(TuningSettingsTest, RuleParamsMustMakeTheTargetsDefaultRules) {
  TuningSettings s;
  s.rule_params = RuleParamsFromText("{MultiLevelTiling");
  EXPECT_EQ(Problem(s), "rule_params: not a JSON object of rule names");
  s.rule_params = RuleParamsFromText("[1]");
  EXPECT_EQ(Problem(s), "rule_params: not a JSON object of rule names");
  s.rule_params = RuleParamsFromText(R"({"MultiLevelTilling": {}})");
  EXPECT_EQ(Problem(s).rfind("rule_params: rule params: 'MultiLevelTilling' is not a default rule "
                             "on cpu",
                             0),
            0u)
      << Problem(s);
  s.rule_params = RuleParamsFromText(R"({"MultiLevelTiling": {"tile": 1}})");
  EXPECT_NE(Problem(s).find("unknown parameter 'tile'"), std::string::npos) << Problem(s);
  s.rule_params = RuleParamsFromText(R"({"MultiLevelTiling": {"max_innermost_factor": 4}})");
  EXPECT_EQ(Problem(s), "");
}

TEST(TuningSettingsTest, RuleParamsTextRoundTripsAndEmptyMeansTheDefaults) {
  EXPECT_EQ(RuleParamsFromText(""), nlohmann::json::object());
  EXPECT_EQ(RuleParamsText(nlohmann::json::object()), "");
  const nlohmann::json params = RuleParamsFromText(R"({"MultiLevelTiling": {"tile": 1}})");
  EXPECT_EQ(RuleParamsFromText(RuleParamsText(params)), params);
}

TEST(TuningSettingsTest, APerTaskBudgetOfZeroIsTheJobsBudget) {
  TuningSettings s;
  s.max_trials_global = 40;
  EXPECT_EQ(s.PerTaskBudget(), 40);
  s.max_trials_per_task = 8;
  EXPECT_EQ(s.PerTaskBudget(), 8);
}

}  // namespace
}  // namespace tessera
