// Tests of cli/space_command.cc: `tessera space` prints every design space's trace for the cpu
// and, as JSON, for cuda; errors are one line.
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::CountLines;
using cli_testing::JsonAfterProgress;
using cli_testing::Output;
using cli_testing::RunTessera;

TEST(SpaceCommandTest, SpacePrintsEveryDesignSpaceTrace) {
  Output out = RunTessera("space GMM --shape B=1,M=16,N=16,K=16");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("## design space 0"), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("= SamplePerfectTile("), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("# rules: InlineConstantScalars"), std::string::npos);

  Output json = RunTessera(
      "space GMM --shape B=1,M=16,N=16,K=16 --target 'cuda -arch=sm_80' "
      "--json");
  ASSERT_EQ(json.exit_code, 0) << json.stdout_text;
  nlohmann::json spaces = JsonAfterProgress(json.stdout_text)["spaces"];
  ASSERT_FALSE(spaces.empty());
  for (const auto& trace : spaces) EXPECT_EQ(trace.size(), 2u) << trace;  // [insts, decisions]
  EXPECT_NE(json.stdout_text.find("threadIdx.x"), std::string::npos) << json.stdout_text;
}

TEST(SpaceCommandTest, ErrorsAreOneLine) {
  Output bad_target = RunTessera("space GMM --target tpu");
  EXPECT_EQ(bad_target.exit_code, 1);
  EXPECT_EQ(CountLines(bad_target.stdout_text), 1) << bad_target.stdout_text;
  EXPECT_EQ(RunTessera("space --help").exit_code, 0);
}

}  // namespace
}  // namespace tessera
