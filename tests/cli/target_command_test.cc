// Tests of cli/target_command.cc: `tessera target` prints the cpu target this machine resolves
// to, each key's value and where it came from, as text and as JSON.
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::Output;
using cli_testing::RunTessera;
using cli_testing::RunTesseraJson;

TEST(TargetCommandTest, PrintsTheHostTargetAndWhereEachValueCameFrom) {
  nlohmann::json parsed = RunTesseraJson("target --json");
  const std::string target = parsed["target"].get<std::string>();
  EXPECT_EQ(target.rfind("cpu -cores=", 0), 0u) << target;
  for (const char* key : {"cores", "vector_bits", "fma_per_cycle", "l1d_kb", "l2_kb", "isa"}) {
    const nlohmann::json& entry = parsed["keys"][key];
    EXPECT_NE(target.find(std::string(" -") + key + "=" + entry["value"].get<std::string>()),
              std::string::npos)
        << key << " in " << target;
    EXPECT_FALSE(entry["source"].get<std::string>().empty()) << key;
  }
  EXPECT_GE(parsed["host"]["cores"].get<int>(), 1);
  if (parsed["fma_probe"]["measured"].get<bool>()) {
    EXPECT_GT(parsed["fma_probe"]["peak_gflops_per_core"].get<double>(), 0);
  }
  // The text form leads with the same string: the line a worker token file takes.
  Output text = RunTessera("target");
  ASSERT_EQ(text.exit_code, 0) << text.stdout_text;
  EXPECT_NE(text.stdout_text.find("target: " + target + "\n"), std::string::npos)
      << text.stdout_text;
}

TEST(TargetCommandTest, KeysGivenAreKeptAndBadOnesAreOneLineErrors) {
  nlohmann::json parsed = RunTesseraJson("target 'cpu -cores=3 -l2_kb=2048 -isa=fma+avx2' --json");
  const std::string target = parsed["target"].get<std::string>();
  EXPECT_EQ(target.rfind("cpu -cores=3 ", 0), 0u) << target;
  EXPECT_NE(target.find(" -l2_kb=2048 -isa=avx2+fma"), std::string::npos) << target;
  EXPECT_EQ(parsed["keys"]["l2_kb"]["source"], "given");
  Output bad = RunTessera("target 'cpu -isa=sse9'");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.stdout_text.find("unknown flag 'sse9'"), std::string::npos) << bad.stdout_text;
}

}  // namespace
}  // namespace tessera
