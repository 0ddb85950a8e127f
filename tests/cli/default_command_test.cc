// `tessera default` (cli/default_command.cc): which default rule takes a function and the trace
// it gives, as text and JSON; --check runs the schedule against the unscheduled function; a
// cuda target needs no GPU to print its trace; bad input is a one-line error.
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::kQuickRuns;
using cli_testing::OneLine;
using cli_testing::Output;
using cli_testing::RunTessera;
using cli_testing::RunTesseraJson;
using cli_testing::ScratchDir;

constexpr char kGmm[] = "GMM --shape M=16,N=16,K=16";

TEST(DefaultCommandTest, JsonNamesTheRuleAndGivesAReplayableTrace) {
  nlohmann::json out = RunTesseraJson(std::string("default ") + kGmm + " --target cpu --json");
  EXPECT_EQ(out["function"], "GMM(B=1,M=16,N=16,K=16) float32");
  EXPECT_EQ(out["rule"], "CpuDefault");
  EXPECT_EQ(out["target"].get<std::string>().rfind("cpu", 0), 0u) << out["target"];
  ASSERT_TRUE(out["trace"].is_array()) << out;
  ASSERT_FALSE(out["trace"].empty());

  // The trace replays with `tessera schedule --trace` and the result is correct.
  const std::string trace = ScratchDir("default_trace") + "/trace.json";
  FILE* f = fopen(trace.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs(out["trace"].dump().c_str(), f);
  fclose(f);
  Output replayed = RunTessera(std::string("schedule ") + kGmm + " --trace " + trace +
                               " --run --check " + kQuickRuns);
  EXPECT_EQ(replayed.exit_code, 0) << replayed.stdout_text;
  EXPECT_NE(replayed.stdout_text.find("check: PASS"), std::string::npos) << replayed.stdout_text;
}

TEST(DefaultCommandTest, CheckRunsTheScheduleAgainstTheUnscheduledFunction) {
  nlohmann::json out =
      RunTesseraJson(std::string("default ") + kGmm + " --check --json " + kQuickRuns);
  EXPECT_EQ(out["rule"], "CpuDefault");
  EXPECT_EQ(out["check"]["passed"], true) << out["check"];
  EXPECT_EQ(out["check"]["reference"], "interpreter");
  EXPECT_EQ(out["check"]["mismatches"], 0);
  EXPECT_GT(out["latency_seconds"].get<double>(), 0);
  EXPECT_EQ(out["run_secs"].size(), 1u);

  Output text = RunTessera(std::string("default ") + kGmm + " --check " + kQuickRuns);
  EXPECT_EQ(text.exit_code, 0) << text.stdout_text;
  EXPECT_EQ(text.stdout_text.rfind("default: rule CpuDefault scheduled main\n", 0), 0u)
      << text.stdout_text;
  EXPECT_NE(text.stdout_text.find("check: PASS"), std::string::npos) << text.stdout_text;
}

// Without --run, stdout is the trace alone (the rule goes to stderr), so that
// `tessera default W > t.json` writes a file `--trace` replays.
TEST(DefaultCommandTest, CudaTargetPrintsItsTraceWithoutAGpu) {
  Output out = RunTessera(std::string("default ") + kGmm + " --target cuda", false);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  nlohmann::json j = nlohmann::json::parse(out.stdout_text, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("\"Bind\""), std::string::npos) << "a GPU schedule binds threads";
  Output both = RunTessera(std::string("default ") + kGmm + " --target cuda");
  EXPECT_EQ(both.stdout_text.find("default: rule Matmul scheduled main\n"), 0u) << both.stdout_text;
}

TEST(DefaultCommandTest, TheTraceOnStdoutReplaysFromAFile) {
  const std::string trace = ScratchDir("default_stdout") + "/trace.json";
  Output out = RunTessera(std::string("default ") + kGmm + " > " + trace, false);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  Output replayed = RunTessera(std::string("schedule ") + kGmm + " --trace " + trace +
                               " --run --check " + kQuickRuns);
  EXPECT_EQ(replayed.exit_code, 0) << replayed.stdout_text;
  EXPECT_NE(replayed.stdout_text.find("check: PASS"), std::string::npos) << replayed.stdout_text;
}

TEST(DefaultCommandTest, BadInputIsAOneLineErrorAndANonzeroExit) {
  Output target = RunTessera(std::string("default ") + kGmm + " --target tpu");
  EXPECT_EQ(target.exit_code, 1);
  EXPECT_EQ(target.stdout_text,
            "tessera: error: unknown target kind 'tpu' (expected cpu or cuda)\n");
  Output unknown = RunTessera("default NOPE --target cpu");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_TRUE(OneLine(unknown.stdout_text)) << unknown.stdout_text;
  EXPECT_NE(unknown.stdout_text.find("unknown workload 'NOPE'"), std::string::npos)
      << unknown.stdout_text;
}

}  // namespace
}  // namespace tessera
