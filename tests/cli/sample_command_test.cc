// Tests of cli/sample_command.cc: `tessera sample` draws candidates from the design spaces, builds
// and checks them, and accounts for every one (valid + rejected = asked); errors are one line.
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::JsonAfterProgress;
using cli_testing::Output;
using cli_testing::RunTessera;

TEST(SampleCommandTest, SampleBuildsAndChecksCandidates) {
  Output out = RunTessera("sample GMM --shape B=1,M=16,N=16,K=16 -n 6 --seed 3 --json");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  nlohmann::json summary = JsonAfterProgress(out.stdout_text);
  int rejected = 0;
  for (const auto& [stage, count] : summary["rejected"].items()) rejected += count.get<int>();
  EXPECT_EQ(summary["valid"].get<int>() + rejected, 6) << summary;
  EXPECT_EQ(summary["built"], summary["valid"]) << summary;
  EXPECT_EQ(summary["correct"], summary["built"]) << summary;
  EXPECT_EQ(summary["wrong_output"], 0) << summary;

  Output text = RunTessera("sample GMM --shape B=1,M=16,N=16,K=16 -n 4 --no-build");
  ASSERT_EQ(text.exit_code, 0) << text.stdout_text;
  EXPECT_NE(text.stdout_text.find("valid:"), std::string::npos) << text.stdout_text;
  EXPECT_EQ(text.stdout_text.find("built:"), std::string::npos) << text.stdout_text;
}

TEST(SampleCommandTest, ErrorsAreOneLine) {
  Output bad_n = RunTessera("sample GMM -n 0");
  EXPECT_EQ(bad_n.exit_code, 1);
  EXPECT_EQ(bad_n.stdout_text, "tessera: error: -n must be positive\n");
  EXPECT_EQ(RunTessera("sample --help").exit_code, 0);
}

}  // namespace
}  // namespace tessera
