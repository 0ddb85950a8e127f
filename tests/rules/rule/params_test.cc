// Rule parameters (rules/rule/params.h): values and defaults are read, unknown keys, wrong types
// and non-objects are refused.
#include "rules/rule/params.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rules/schedule_rule.h"
#include "tests/rules/rule_testing.h"

namespace tessera {
namespace {

TEST(RuleParamsTest, ReadsValuesAndDefaults) {
  nlohmann::json params = {{"flag", false}, {"n", 3}, {"list", {1, 2}}, {"ops", {"exp"}}};
  absl::StatusOr<RuleParams> p =
      RuleParams::Parse("Owner", params, {"flag", "n", "list", "ops", "s"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(*p->Bool("flag", true));
  EXPECT_EQ(*p->Int("n", 7), 3);
  EXPECT_EQ(*p->IntList("list", {}), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(*p->StringList("ops", {}), (std::vector<std::string>{"exp"}));
  EXPECT_EQ(*p->String("s", "dflt"), "dflt");
  EXPECT_EQ(p->Get("s"), nullptr);
  EXPECT_TRUE(RuleParams::Parse("Owner", nlohmann::json(), {}).ok());
}

TEST(RuleParamsTest, RejectsUnknownKeysWrongTypesAndNonObjects) {
  absl::StatusOr<RuleParams> unknown = RuleParams::Parse("Owner", {{"bogus", 1}}, {"n"});
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("Owner: unknown parameter 'bogus' (known: n)"),
            std::string::npos)
      << unknown.status();
  EXPECT_FALSE(RuleParams::Parse("Owner", nlohmann::json::array({1}), {}).ok());
  RuleParams p = *RuleParams::Parse("Owner", {{"n", 1.5}, {"list", {1, "x"}}}, {"n", "list"});
  absl::Status bad_int = p.Int("n", 0).status();
  EXPECT_EQ(bad_int.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_int.message(), "Owner: parameter 'n' must be an integer, got 1.5");
  EXPECT_FALSE(p.IntList("list", {}).ok());
  EXPECT_FALSE(p.Bool("n", false).ok());
}

}  // namespace
}  // namespace tessera
