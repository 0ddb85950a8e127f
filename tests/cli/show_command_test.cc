// Tests of cli/show_command.cc: `tessera show` prints IR that reads back from a file and runs.
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::Output;
using cli_testing::RunTessera;

TEST(ShowCommandTest, ShowPrintsIrThatRoundTripsThroughAFile) {
  Output out = RunTessera("show GMM --shape B=1,M=8,N=8,K=8");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("block"), std::string::npos);
  std::string path = ::testing::TempDir() + "/gmm.ir";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  // Drop the comment line with the label; the rest is the function.
  std::string text = out.stdout_text.substr(out.stdout_text.find('\n') + 1);
  fputs(text.c_str(), f);
  fclose(f);
  Output again = RunTessera("run " + path + " --check --repeat 1 --min-repeat-ms 0");
  EXPECT_EQ(again.exit_code, 0) << again.stdout_text;
  EXPECT_NE(again.stdout_text.find("check: PASS"), std::string::npos) << again.stdout_text;
}

}  // namespace
}  // namespace tessera
