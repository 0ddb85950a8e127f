// `tessera exec` (cli/exec_command.cc) run as a user runs it: a small model compiled once is run
// with random inputs and reports its latency as JSON; inputs by name from an .npz, outputs saved
// by name into a folder it creates; a missing or foreign directory, a wrong number of input
// files, a misnamed array and a --repeat that is not positive are one error line each. (Outputs
// against onnxruntime, and --check, are in compile_command_test.cc.)
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "frontend/npy.h"
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

// A block whose 3x3 convolutions compile as Winograd GEMMs (the second one's tiles cropped at
// 14 x 14): the compiled kernels compute what the unfused graph computes; with --no-winograd
// the plan has none of them.
TEST(ExecCommandTest, WinogradConvolutionsPassTheCheck) {
  for (const std::string flag : {"", " --no-winograd"}) {
    SCOPED_TRACE(flag);
    const std::string dir = ScratchDir("exec_resblock") + "/out";
    Output compiled = RunTessera("compile " + Data("resblock.onnx") + " -o " + dir + flag);
    ASSERT_EQ(compiled.exit_code, 0) << compiled.stdout_text;
    EXPECT_EQ(compiled.stdout_text.find("fused_winograd_gemm") != std::string::npos, flag.empty())
        << compiled.stdout_text;
    nlohmann::json run = RunTesseraJson("exec " + dir + " --repeat 1 --check --json --inputs " +
                                        Data("resblock.input.npy"));
    ASSERT_TRUE(run.is_object()) << run;
    EXPECT_TRUE(run["check"]["pass"].get<bool>()) << run;
  }
}

TEST(ExecCommandTest, NpzInputsAndSavedOutputsAreNamed) {
  const std::string scratch = ScratchDir("exec_npz");
  const std::string dir = scratch + "/out";
  Output compiled = RunTessera("compile " + Data("cnn.onnx") + " -o " + dir);
  ASSERT_EQ(compiled.exit_code, 0) << compiled.stdout_text;
  absl::StatusOr<NDArray> x = ReadNpy(Data("cnn.input.npy"));
  ASSERT_TRUE(x.ok()) << x.status();
  ASSERT_TRUE(WriteNpz(scratch + "/in.npz", {{"x", *x}}).ok());
  // --save makes its folder, one NAME.npy per output (the CNN's output is y).
  Output run = RunTessera("exec " + dir + " --repeat 1 --inputs " + scratch + "/in.npz --save " +
                          scratch + "/new/folder");
  ASSERT_EQ(run.exit_code, 0) << run.stdout_text;
  absl::StatusOr<NDArray> by_npy = ReadNpy(scratch + "/new/folder/y.npy");
  ASSERT_TRUE(by_npy.ok()) << by_npy.status();
  // The same inputs in model order give the same outputs, saved as an .npz.
  run = RunTessera("exec " + dir + " --repeat 1 --inputs " + Data("cnn.input.npy") + " --save " +
                   scratch + "/outputs.npz");
  ASSERT_EQ(run.exit_code, 0) << run.stdout_text;
  absl::StatusOr<NamedArrays> by_npz = ReadNpz(scratch + "/outputs.npz");
  ASSERT_TRUE(by_npz.ok()) << by_npz.status();
  ASSERT_EQ(by_npz->size(), 1u);
  EXPECT_EQ(by_npz->front().first, "y");
  const NDArray& saved = by_npz->front().second;
  ASSERT_EQ(saved.nbytes(), by_npy->nbytes());
  EXPECT_EQ(std::memcmp(saved.data(), by_npy->data(), static_cast<size_t>(saved.nbytes())), 0);
  // An array that is no input, and an input without an array.
  ASSERT_TRUE(WriteNpz(scratch + "/wrong.npz", {{"x", *x}, {"z", *x}}).ok());
  Output wrong = RunTessera("exec " + dir + " --inputs " + scratch + "/wrong.npz");
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_EQ(wrong.stdout_text, "tessera: error: --inputs " + scratch +
                                   "/wrong.npz: array z is no model input (inputs: x)\n");
  ASSERT_TRUE(WriteNpz(scratch + "/none.npz", {{"z", *x}}).ok());
  wrong = RunTessera("exec " + dir + " --inputs " + scratch + "/none.npz");
  EXPECT_EQ(wrong.stdout_text,
            "tessera: error: --inputs " + scratch + "/none.npz: no array named x\n");
}

TEST(ExecCommandTest, RepeatMustBePositive) {
  Output zero = RunTessera("exec /nonexistent/model --repeat 0");
  EXPECT_EQ(zero.exit_code, 1);
  EXPECT_EQ(zero.stdout_text,
            "tessera: error: --repeat 0: must be positive (timed runs of the model)\n");
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
