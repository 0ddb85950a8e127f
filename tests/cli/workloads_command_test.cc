// Tests of cli/workloads_command.cc: `tessera workloads --json` lists every workload of the
// library with its FLOPs.
#include <nlohmann/json.hpp>
#include <string>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::Output;
using cli_testing::RunTessera;

TEST(WorkloadsCommandTest, WorkloadsJsonListsEveryWorkload) {
  Output out = RunTessera("workloads --json");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  nlohmann::json list = nlohmann::json::parse(out.stdout_text);
  ASSERT_EQ(list.size(), ListWorkloads().size());
  for (const auto& entry : list) {
    // Pure data movement (TRANSPOSE) has no arithmetic.
    if (entry["name"] == "TRANSPOSE") continue;
    EXPECT_GT(entry["flops"].get<double>(), 0) << entry["name"];
  }
}

}  // namespace
}  // namespace tessera
