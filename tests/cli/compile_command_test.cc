// End-to-end tests of the model commands (`tune` on a model, `compile`, `exec`) on the small
// models of tests/frontend/data, whose reference outputs come from onnxruntime (`tasks`:
// tasks_command_test.cc).
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "frontend/npy.h"
#include "gtest/gtest.h"
#include "tests/testing/scoped_temp_dir.h"

namespace tessera {
namespace {

struct Output {
  int exit_code = -1;
  std::string text;
};

Output RunTessera(const std::string& args) {
  const char* binary = std::getenv("TESSERA_BINARY");
  std::string command =
      std::string(binary != nullptr && *binary ? binary : TESSERA_BINARY) + " " + args + " 2>&1";
  Output out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.text.append(buffer, n);
  int status = pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string Data(const std::string& name) {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/frontend/data/" + name;
}

// A fresh directory, removed when the test ends (kept when it failed).
std::string TempDir(const std::string& name) {
  return testing::ScratchDirUntilTestEnds("compile_command_test_" + name);
}

TEST(CompileCommandTest, MissingModelIsOneErrorLine) {
  Output out = RunTessera("compile /nonexistent/m.onnx -o " + TempDir("missing"));
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(out.text.find("cannot read model file /nonexistent/m.onnx"), std::string::npos);
}

// Compiles `model` with the default schedules, runs it on the stored input and compares with
// onnxruntime's output; `exec --check` must pass too.
void ExpectCompiledMatchesOnnxRuntime(const std::string& model, double tolerance = 1e-4) {
  const std::string dir = TempDir(model);
  Output out = RunTessera("compile " + Data(model + ".onnx") + " -o " + dir + "/out");
  ASSERT_EQ(out.exit_code, 0) << out.text;
  EXPECT_NE(out.text.find("default rule"), std::string::npos) << out.text;
  out = RunTessera("exec " + dir + "/out --repeat 3 --check --save " + dir +
                   "/saved/outputs.npz --inputs " + Data(model + ".input.npy"));
  ASSERT_EQ(out.exit_code, 0) << out.text;
  EXPECT_NE(out.text.find("check: PASS"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("latency: "), std::string::npos) << out.text;
  absl::StatusOr<NamedArrays> got = ReadNpz(dir + "/saved/outputs.npz");
  absl::StatusOr<NDArray> want = ReadNpy(Data(model + ".output.npy"));
  ASSERT_TRUE(got.ok() && want.ok()) << got.status() << want.status();
  ASSERT_EQ(got->size(), 1u);
  absl::StatusOr<Comparison> cmp = Compare(got->front().second, *want, tolerance, tolerance);
  ASSERT_TRUE(cmp.ok()) << cmp.status();
  EXPECT_TRUE(cmp->ok()) << model << ": max abs error " << cmp->max_abs_error;
}

// The encoder's projections multiply by initializers: their default kernels read the weights
// from strips packed once, and plan.json says how (the packing's symbol and arguments); exec
// packs them before its runs, says so, and still matches.
TEST(CompileCommandTest, WeightsArePackedOnceByExecAndTheModelStillMatches) {
  const std::string dir = TempDir("prepack");
  Output out = RunTessera("compile " + Data("encoder.onnx") + " -o " + dir + "/out");
  ASSERT_EQ(out.exit_code, 0) << out.text;
  std::FILE* f = std::fopen((dir + "/out/plan.json").c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) text.append(buffer, n);
  std::fclose(f);
  const nlohmann::json plan = nlohmann::json::parse(text);
  int prepacked = 0;
  for (const nlohmann::json& k : plan["kernels"]) {
    if (!k.contains("prepack")) continue;
    ++prepacked;
    EXPECT_EQ(k["prepack"]["symbol"], k["symbol"].get<std::string>() + "_prepack");
    EXPECT_EQ(k["prepack"]["kernel_symbol"], k["symbol"].get<std::string>() + "_prepacked");
    EXPECT_FALSE(k["prepack"]["packed_bytes"].empty());
  }
  EXPECT_GE(prepacked, 1) << text;
  out = RunTessera("exec " + dir + "/out --repeat 2 --check --inputs " + Data("encoder.input.npy"));
  ASSERT_EQ(out.exit_code, 0) << out.text;
  EXPECT_NE(out.text.find("packed weights: "), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("check: PASS"), std::string::npos) << out.text;
}

TEST(CompileCommandTest, CnnWithDefaultsMatchesOnnxRuntime) {
  ExpectCompiledMatchesOnnxRuntime("cnn");
}
TEST(CompileCommandTest, EncoderWithDefaultsMatchesOnnxRuntime) {
  ExpectCompiledMatchesOnnxRuntime("encoder");
}
TEST(CompileCommandTest, DecoderWithDefaultsMatchesOnnxRuntime) {
  ExpectCompiledMatchesOnnxRuntime("decoder");
}

TEST(CompileCommandTest, OtherOperatorsWithDefaultsMatchOnnxRuntime) {
  ExpectCompiledMatchesOnnxRuntime("ops");
}
TEST(CompileCommandTest, MoreOperatorsWithDefaultsMatchOnnxRuntime) {
  ExpectCompiledMatchesOnnxRuntime("ops2");
}
TEST(CompileCommandTest, ConvTransposeWithDefaultsMatchesOnnxRuntime) {
  ExpectCompiledMatchesOnnxRuntime("upsample");
}

TEST(CompileCommandTest, Float16ModelWithDefaultsMatchesOnnxRuntime) {
  ExpectCompiledMatchesOnnxRuntime("mlp16", 2e-3);
}

TEST(CompileCommandTest, InputShapeFixesADynamicBatch) {
  Output out = RunTessera("tasks " + Data("dynbatch.onnx"));
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(out.text.find("input x has a dynamic dimension [batch, 8]"), std::string::npos)
      << out.text;
  out = RunTessera("tasks " + Data("dynbatch.onnx") + " --input-shape x=3");
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(out.text.find("input x has rank 2"), std::string::npos) << out.text;
  const std::string dir = TempDir("dynbatch");
  out = RunTessera("compile " + Data("dynbatch.onnx") + " --input-shape x=3,8 -o " + dir);
  ASSERT_EQ(out.exit_code, 0) << out.text;
  out = RunTessera("exec " + dir + " --repeat 1 --check --json");
  ASSERT_EQ(out.exit_code, 0) << out.text;
  EXPECT_TRUE(nlohmann::json::parse(out.text)["check"]["pass"].get<bool>());
}

TEST(CompileCommandTest, LargeModelIsCheckedAgainstANaiveBuild) {
  const std::string dir = TempDir("gram");
  Output out = RunTessera("compile " + Data("gram.onnx") + " -o " + dir);
  ASSERT_EQ(out.exit_code, 0) << out.text;
  out = RunTessera("exec " + dir + " --repeat 1 --check");
  ASSERT_EQ(out.exit_code, 0) << out.text;
  EXPECT_NE(out.text.find("check: PASS against a naive build (-O0) of the unfused graph"),
            std::string::npos)
      << out.text;
}

TEST(CompileCommandTest, TunedCnnUsesItsRecordsAndStillMatches) {
  const std::string dir = TempDir("tuned");
  Output out = RunTessera("tune " + Data("cnn.onnx") + " --db " + dir + "/cnn.db --trials 10 " +
                          "--trials-per-iter 2 --cost-model random");
  ASSERT_EQ(out.exit_code, 0) << out.text;
  // The model's five and the transpose of its input to channels-last.
  EXPECT_NE(out.text.find("tuning 6 task(s)"), std::string::npos) << out.text;
  // The model's latency estimate (sum of weight x best), or why there is none yet: 10 trials
  // may leave a task without a candidate.
  EXPECT_TRUE(out.text.find("cnn.onnx: estimated latency ") != std::string::npos ||
              out.text.find("cnn.onnx: no estimate yet (") != std::string::npos)
      << out.text;
  out = RunTessera("compile " + Data("cnn.onnx") + " --db " + dir + "/cnn.db -o " + dir + "/out");
  ASSERT_EQ(out.exit_code, 0) << out.text;
  EXPECT_NE(out.text.find("tuned record"), std::string::npos) << out.text;
  out = RunTessera("exec " + dir + "/out --repeat 3 --check --json");
  ASSERT_EQ(out.exit_code, 0) << out.text;
  nlohmann::json j = nlohmann::json::parse(out.text);
  EXPECT_TRUE(j["check"]["pass"].get<bool>());
  EXPECT_EQ(j["calls"].size(), 7u);
  EXPECT_GT(j["latency_seconds"].get<double>(), 0);
}

}  // namespace
}  // namespace tessera
