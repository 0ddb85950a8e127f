// Tests of cli/devices_command.cc: `tessera devices` lists the GPUs with their targets, or says in
// one line why there are none, and exits 0 either way.
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::CountLines;
using cli_testing::NoGpuReason;
using cli_testing::Output;
using cli_testing::RunTessera;

TEST(DevicesCommandTest, DevicesListsGpusOrSaysWhyNotAndExitsZero) {
  Output out = RunTessera("devices");
  EXPECT_EQ(out.exit_code, 0) << out.stdout_text;
  Output json = RunTessera("devices --json");
  ASSERT_EQ(json.exit_code, 0) << json.stdout_text;
  nlohmann::json parsed = nlohmann::json::parse(json.stdout_text);
  if (!NoGpuReason().empty()) {
    EXPECT_EQ(CountLines(out.stdout_text), 1) << out.stdout_text;
    EXPECT_TRUE(parsed["devices"].empty());
    EXPECT_EQ(parsed["error"].get<std::string>() + "\n", out.stdout_text);
    return;
  }
  EXPECT_NE(out.stdout_text.find("target: cuda -arch=sm_"), std::string::npos) << out.stdout_text;
  ASSERT_FALSE(parsed["devices"].empty());
  EXPECT_GT(parsed["devices"][0]["sm_count"].get<int>(), 0);
  EXPECT_EQ(parsed["devices"][0]["target"].get<std::string>().rfind("cuda -arch=sm_", 0), 0u);
}

}  // namespace
}  // namespace tessera
