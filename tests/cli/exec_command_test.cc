// `tessera exec` (cli/exec_command.cc) run as a user runs it: a small model compiled once is run
// with random inputs and reports its latency as JSON; a missing or foreign directory and a
// wrong number of input files are one error line each. (Outputs against onnxruntime, and
// --check, are in compile_command_test.cc.)
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::Output;
using cli_testing::RunTessera;
using cli_testing::RunTesseraJson;
using cli_testing::ScratchDir;

std::string Data(const std::string& name) {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/frontend/data/" + name;
}

TEST(ExecCommandTest, ACompiledModelRunsAndReportsItsLatency) {
  const std::string dir = ScratchDir("exec_cnn") + "/out";
  Output compiled = RunTessera("compile " + Data("cnn.onnx") + " -o " + dir);
  ASSERT_EQ(compiled.exit_code, 0) << compiled.stdout_text;
  nlohmann::json run = RunTesseraJson("exec " + dir + " --repeat 2 --json");
  ASSERT_TRUE(run.is_object()) << run;
  EXPECT_EQ(run["run_secs"].size(), 2u) << run;
  EXPECT_GT(run["latency_seconds"].get<double>(), 0) << run;
  // Two input files for a model with one input.
  Output wrong = RunTessera("exec " + dir + " --inputs " + Data("cnn.input.npy") + "," +
                            Data("cnn.input.npy"));
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_EQ(wrong.stdout_text, "tessera: error: --inputs: 2 files for 1 model inputs\n");
}

TEST(ExecCommandTest, MissingOrForeignDirectoryIsOneErrorLine) {
  Output missing = RunTessera("exec /nonexistent/model");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.stdout_text, "tessera: error: cannot read /nonexistent/model/plan.json\n");
  const std::string foreign = ScratchDir("exec_foreign");
  std::ofstream(foreign + "/plan.json") << "{}";
  Output not_plan = RunTessera("exec " + foreign);
  EXPECT_EQ(not_plan.exit_code, 1);
  EXPECT_EQ(not_plan.stdout_text,
            "tessera: error: " + foreign + "/plan.json: not a plan written by tessera compile\n");
}

}  // namespace
}  // namespace tessera
