// `tessera apply` (cli/apply_command.cc) on a database `tessera tune` filled: the tuned
// workload gets its best record, the others the default rules (or nothing with --no-default),
// and --run --check builds, runs and checks every scheduled function.
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::kQuickRuns;
using cli_testing::kSmallGmm;
using cli_testing::OneLine;
using cli_testing::Output;
using cli_testing::RunTessera;
using cli_testing::RunTesseraJson;
using cli_testing::ScratchDir;
using cli_testing::TuneSmallGmm;

constexpr char kUntuned[] = "ELEMENTWISE:M=16,N=16";

// Occurrences of `needle` in `text`.
int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// One tuning run shared by the tests of this file.
class ApplyCommandTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_ = new std::string(ScratchDir("apply_command") + "/tune.db");
    summary_ = new nlohmann::json(TuneSmallGmm(*db_, 8));
  }
  static void TearDownTestSuite() {
    delete db_;
    delete summary_;
  }
  static std::string Apply(const std::string& flags) {
    return std::string("apply ") + kSmallGmm + " " + kUntuned + " --db " + *db_ + " " + flags;
  }
  static std::string* db_;
  static nlohmann::json* summary_;
};
std::string* ApplyCommandTest::db_ = nullptr;
nlohmann::json* ApplyCommandTest::summary_ = nullptr;

TEST_F(ApplyCommandTest, TheTunedWorkloadGetsItsBestRecordTheOtherADefaultRule) {
  ASSERT_TRUE((*summary_)["tasks"][0]["best_record"].is_number_integer()) << *summary_;
  // The record `best` returns (after the runoff, not always the job's fastest).
  nlohmann::json best_json =
      RunTesseraJson(std::string("best ") + kSmallGmm + " --db " + *db_ + " --json");
  ASSERT_EQ(best_json["records"].size(), 1u) << best_json;
  const int best = best_json["records"][0]["id"];
  Output out = RunTessera(Apply(""));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("GMM(B=1,M=16,N=16,K=16) float32: tuned record " +
                                 std::to_string(best) + " ("),
            std::string::npos)
      << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("ELEMENTWISE(M=16,N=16) float32: miss: workload not in the "
                                 "database; default rule CpuDefault"),
            std::string::npos)
      << out.stdout_text;
  // Both scheduled functions are printed.
  EXPECT_EQ(Count(out.stdout_text, "@prim_func"), 2) << out.stdout_text;
}

TEST_F(ApplyCommandTest, NoDefaultLeavesTheUntunedWorkloadAlone) {
  Output out = RunTessera(Apply("--no-default"));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("ELEMENTWISE(M=16,N=16) float32: miss: workload not in the "
                                 "database\n"),
            std::string::npos)
      << out.stdout_text;
  EXPECT_EQ(out.stdout_text.find("default rule"), std::string::npos) << out.stdout_text;
}

TEST_F(ApplyCommandTest, RunCheckPassesForEveryScheduledFunction) {
  Output out = RunTessera(Apply(std::string("--run --check ") + kQuickRuns));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_EQ(Count(out.stdout_text, "latency: "), 2) << out.stdout_text;
  EXPECT_EQ(Count(out.stdout_text, "check: PASS"), 2) << out.stdout_text;
}

TEST_F(ApplyCommandTest, BadInputIsAOneLineErrorAndANonzeroExit) {
  Output unknown = RunTessera("apply NOPE --db " + *db_);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_TRUE(OneLine(unknown.stdout_text)) << unknown.stdout_text;
  EXPECT_NE(unknown.stdout_text.find("tessera: error: unknown workload 'NOPE'"), std::string::npos)
      << unknown.stdout_text;
  Output target = RunTessera(std::string("apply ") + kSmallGmm + " --db " + *db_ + " --target tpu");
  EXPECT_EQ(target.exit_code, 1);
  EXPECT_EQ(target.stdout_text,
            "tessera: error: unknown target kind 'tpu' (expected cpu or cuda)\n");
}

}  // namespace
}  // namespace tessera
