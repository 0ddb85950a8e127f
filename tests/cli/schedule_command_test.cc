// Tests of cli/schedule_command.cc: `tessera schedule` replays a trace file on a workload, prints
// the scheduled IR and checks it against the unscheduled function; bad traces are one-line errors
// naming what is wrong.
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::CountLines;
using cli_testing::Output;
using cli_testing::RunTessera;
using cli_testing::WriteTempFile;

const std::string kGmmExample = std::string(TESSERA_SOURCE_DIR) + "/examples/gmm_cpu_tiled.json";

TEST(ScheduleCommandTest, ScheduleExamplePrintsScheduledIr) {
  Output out = RunTessera("schedule GMM --shape B=1,M=64,N=128,K=32 --trace " + kGmmExample);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("scheduled by"), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("parallel("), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("vectorized(64)"), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("unroll(4)"), std::string::npos) << out.stdout_text;
  EXPECT_EQ(out.stdout_text.find("latency"), std::string::npos) << "no --run, no timing";
}

TEST(ScheduleCommandTest, ScheduleRunCheckPassesAgainstUnscheduledReference) {
  Output out = RunTessera("schedule GMM --shape B=1,M=64,N=128,K=32 --trace " + kGmmExample +
                          " --run --check --repeat 1 --min-repeat-ms 0");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("latency:"), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("check: PASS against the interpreter"), std::string::npos)
      << out.stdout_text;

  Output json = RunTessera("schedule GMM --shape B=1,M=36,N=100,K=20 --trace " + kGmmExample +
                           " --check --json --repeat 2 --min-repeat-ms 0");
  ASSERT_EQ(json.exit_code, 0) << json.stdout_text;
  nlohmann::json result = nlohmann::json::parse(json.stdout_text);
  EXPECT_TRUE(result["check"]["passed"].get<bool>()) << json.stdout_text;
  EXPECT_EQ(result["run_secs"].size(), 2u);
  EXPECT_NE(result["ir"].get<std::string>().find("vectorized"), std::string::npos);
  // The replayed trace, as Trace::ToJson writes it: the example's instructions, in its
  // canonical form.
  std::ifstream example(kGmmExample);
  EXPECT_EQ(result["trace"], nlohmann::json::parse(example));
}

TEST(ScheduleCommandTest, ScheduleBadTracesGetOneLineErrors) {
  struct Case {
    std::string trace_path;
    std::string expected;  // part of the message
  };
  const Case cases[] = {
      {WriteTempFile("truncated.json", "[[[\"GetBlock\", [], [\"C\""), "not valid JSON"},
      {WriteTempFile("shape.json", "{\"insts\": []}"),
       "expected [[instructions...], [decisions...]]"},
      {WriteTempFile("kind.json", "[[[\"Frobnicate\", [], [], []]], []]"),
       "unknown instruction kind 'Frobnicate'"},
      {WriteTempFile("missing_block.json",
                     "[[[\"GetBlock\", [], [\"NOPE\", \"main\"], [\"b0\"]]], []]"),
       "instruction 0 (GetBlock)"},
      {WriteTempFile("bad_split.json",
                     "[[[\"GetBlock\", [], [\"C\", \"main\"], [\"b0\"]],"
                     " [\"GetLoops\", [\"b0\"], [], [\"l1\", \"l2\", \"l3\", \"l4\"]],"
                     " [\"Split\", [\"l2\", 3, 5], [1], [\"l5\", \"l6\"]]], []]"),
       "instruction 2 (Split): split: factors 3*5=15 do not cover extent 16"},
      {::testing::TempDir() + "/does_not_exist.json", "cannot read trace file"},
  };
  for (const Case& c : cases) {
    Output out = RunTessera("schedule GMM --shape B=1,M=16,N=16,K=16 --trace " + c.trace_path);
    EXPECT_EQ(out.exit_code, 1) << c.trace_path << ":\n" << out.stdout_text;
    EXPECT_EQ(CountLines(out.stdout_text), 1) << c.trace_path << ":\n" << out.stdout_text;
    EXPECT_NE(out.stdout_text.find("tessera: error: "), std::string::npos) << out.stdout_text;
    EXPECT_NE(out.stdout_text.find(c.expected), std::string::npos) << out.stdout_text;
    EXPECT_NE(out.stdout_text.find(c.trace_path), std::string::npos) << out.stdout_text;
  }
  Output missing = RunTessera("schedule GMM");
  EXPECT_NE(missing.exit_code, 0) << "--trace is required";
}

}  // namespace
}  // namespace tessera
