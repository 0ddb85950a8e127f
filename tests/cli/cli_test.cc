// End-to-end tests of the `tessera` binary, run as a user would run it.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::Output;
using cli_testing::RunTessera;

int CountLines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

TEST(CliTest, HelpListsSubcommands) {
  Output out = RunTessera("--help");
  EXPECT_EQ(out.exit_code, 0);
  for (const char* sub : {"workloads", "show", "run", "schedule", "codegen", "devices"}) {
    EXPECT_NE(out.stdout_text.find(sub), std::string::npos) << sub;
  }
  EXPECT_EQ(RunTessera("run --help").exit_code, 0);
  EXPECT_EQ(RunTessera("schedule --help").exit_code, 0);
}

TEST(CliTest, WorkloadsJsonListsEveryWorkload) {
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

TEST(CliTest, ShowPrintsIrThatRoundTripsThroughAFile) {
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

TEST(CliTest, RunCheckJsonPassesForSmallGmm) {
  Output out = RunTessera("run GMM --shape B=2,M=32,N=16,K=8 --check --json --repeat 2");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  nlohmann::json result = nlohmann::json::parse(out.stdout_text);
  EXPECT_TRUE(result["check"]["passed"].get<bool>());
  EXPECT_EQ(result["check"]["reference"], "interpreter");
  EXPECT_GT(result["latency_seconds"].get<double>(), 0);
  EXPECT_EQ(result["run_secs"].size(), 2u);
}

TEST(CliTest, BadInputGetsOneLineErrorAndNonzeroExit) {
  const char* cases[] = {
      "run NOPE --target cpu",
      "run GMM --target tpu",
      "run GMM --shape M=-3",
      "run GMM --shape Q=3",
      "run GMM --shape M",
      "run GMM --dtype float99",
      "show /dev/null",
  };
  for (const char* args : cases) {
    Output out = RunTessera(args);
    EXPECT_NE(out.exit_code, 0) << args;
    EXPECT_NE(out.exit_code, -1) << args << " crashed";
    EXPECT_EQ(CountLines(out.stdout_text), 1) << args << ":\n" << out.stdout_text;
    EXPECT_NE(out.stdout_text.find("error"), std::string::npos) << args;
  }
}

TEST(CliTest, MalformedIrFileNamesTheProblem) {
  std::string path = ::testing::TempDir() + "/bad.ir";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("func broken(A: Buffer((4,), \"float32\")) {\n  A[0 = 1\n", f);
  fclose(f);
  Output out = RunTessera("run " + path);
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(out.stdout_text.find("bad.ir"), std::string::npos) << out.stdout_text;
  EXPECT_EQ(CountLines(out.stdout_text), 1) << out.stdout_text;
}

std::string WriteTempFile(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  FILE* f = fopen(path.c_str(), "w");
  if (f == nullptr) return path;
  fputs(text.c_str(), f);
  fclose(f);
  return path;
}

const std::string kGmmExample = std::string(TESSERA_SOURCE_DIR) + "/examples/gmm_cpu_tiled.json";

TEST(CliTest, ScheduleExamplePrintsScheduledIr) {
  Output out = RunTessera("schedule GMM --shape B=1,M=64,N=128,K=32 --trace " + kGmmExample);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("scheduled by"), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("parallel("), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("vectorized(64)"), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("unroll(4)"), std::string::npos) << out.stdout_text;
  EXPECT_EQ(out.stdout_text.find("latency"), std::string::npos) << "no --run, no timing";
}

TEST(CliTest, ScheduleRunCheckPassesAgainstUnscheduledReference) {
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

TEST(CliTest, ScheduleBadTracesGetOneLineErrors) {
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

// A GPU schedule of GMM: one thread per output element (batch, i, j fused, split by 128).
const char kGmmGpuTrace[] = R"([[["GetBlock", [], ["C", "main"], ["b0"]],
  ["GetLoops", ["b0"], [], ["l1", "l2", "l3", "l4"]],
  ["Fuse", ["l1", "l2", "l3"], [1], ["l5"]],
  ["Split", ["l5", "None", 128], [1], ["l6", "l7"]],
  ["Bind", ["l6"], ["blockIdx.x"], []],
  ["Bind", ["l7"], ["threadIdx.x"], []]], []])";

// "" when `tessera devices` lists a GPU, else its one-line reason.
std::string NoGpuReason() {
  Output out = RunTessera("devices");
  return out.stdout_text.rfind("no CUDA device: ", 0) == 0 ? out.stdout_text : "";
}

TEST(CliTest, DevicesListsGpusOrSaysWhyNotAndExitsZero) {
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

TEST(CliTest, RunOnCudaWithoutGpuIsOneLineError) {
  if (NoGpuReason().empty()) GTEST_SKIP() << "a CUDA device is present";
  Output out = RunTessera("run GMM --shape B=1,M=16,N=16,K=16 --target cuda --check");
  EXPECT_NE(out.exit_code, 0);
  EXPECT_EQ(CountLines(out.stdout_text), 1) << out.stdout_text;
  EXPECT_EQ(out.stdout_text.rfind("tessera: error: target cuda: no CUDA ", 0), 0u)
      << out.stdout_text;
}

TEST(CliTest, RunOnCudaWithTraceChecksAgainstTheCpuReference) {
  std::string reason = NoGpuReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  std::string trace = WriteTempFile("gmm_gpu.json", kGmmGpuTrace);
  Output out = RunTessera("run GMM --shape B=2,M=64,N=96,K=32 --target cuda --trace " + trace +
                          " --check --repeat 3 --min-repeat-ms 1");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("on cuda -arch=sm_"), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("check: PASS against the interpreter"), std::string::npos)
      << out.stdout_text;
}

TEST(CliTest, CodegenPrintsCForCpu) {
  Output out = RunTessera("codegen GMM --shape B=1,M=16,N=16,K=16 --target cpu");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("Tessera's C emitter"), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("_kernel(void** args)"), std::string::npos) << out.stdout_text;
  EXPECT_EQ(out.stdout_text.find("__global__"), std::string::npos);
}

TEST(CliTest, CodegenPrintsAGlobalKernelForCuda) {
  std::string trace = WriteTempFile("gmm_gpu_codegen.json", kGmmGpuTrace);
  Output out = RunTessera("codegen GMM --shape B=1,M=64,N=64,K=32 --target 'cuda -arch=sm_90' "
                          "--trace " + trace);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_EQ(out.stdout_text.rfind("// cuda -arch=sm_90 ", 0), 0u) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("grid (32, 1, 1), block (128, 1, 1)"), std::string::npos)
      << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("extern \"C\" __global__"), std::string::npos)
      << out.stdout_text;

  Output unbound = RunTessera("codegen GMM --shape B=1,M=16,N=16,K=16 --target cuda");
  EXPECT_EQ(unbound.exit_code, 1);
  EXPECT_EQ(CountLines(unbound.stdout_text), 1) << unbound.stdout_text;
  EXPECT_NE(unbound.stdout_text.find("not bound"), std::string::npos) << unbound.stdout_text;
}

// The JSON object in `text`, which may follow progress lines (stderr is folded into it).
nlohmann::json JsonAfterProgress(const std::string& text) {
  size_t start = text.rfind('{', 0) == 0 ? 0 : text.find("\n{") + 1;
  return nlohmann::json::parse(text.substr(start));
}

TEST(CliTest, SpacePrintsEveryDesignSpaceTrace) {
  Output out = RunTessera("space GMM --shape B=1,M=16,N=16,K=16");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("## design space 0"), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("= SamplePerfectTile("), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("# rules: InlineConstantScalars"), std::string::npos);

  Output json = RunTessera("space GMM --shape B=1,M=16,N=16,K=16 --target 'cuda -arch=sm_80' "
                           "--json");
  ASSERT_EQ(json.exit_code, 0) << json.stdout_text;
  nlohmann::json spaces = JsonAfterProgress(json.stdout_text)["spaces"];
  ASSERT_FALSE(spaces.empty());
  for (const auto& trace : spaces) EXPECT_EQ(trace.size(), 2u) << trace;  // [insts, decisions]
  EXPECT_NE(json.stdout_text.find("threadIdx.x"), std::string::npos) << json.stdout_text;
}

TEST(CliTest, SampleBuildsAndChecksCandidates) {
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

TEST(CliTest, SpaceAndSampleErrorsAreOneLine) {
  Output bad_n = RunTessera("sample GMM -n 0");
  EXPECT_EQ(bad_n.exit_code, 1);
  EXPECT_EQ(bad_n.stdout_text, "tessera: error: -n must be positive\n");
  Output bad_target = RunTessera("space GMM --target tpu");
  EXPECT_EQ(bad_target.exit_code, 1);
  EXPECT_EQ(CountLines(bad_target.stdout_text), 1) << bad_target.stdout_text;
  EXPECT_EQ(RunTessera("space --help").exit_code, 0);
  EXPECT_EQ(RunTessera("sample --help").exit_code, 0);
}

// The issue's acceptance check: every workload at its default shape runs and matches.
class EveryWorkloadTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryWorkloadTest, RunCheckJsonPassesAtDefaultShape) {
  Output out = RunTessera("run " + GetParam() + " --target cpu --check --json --repeat 2 "
                          "--min-repeat-ms 0");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  nlohmann::json result = nlohmann::json::parse(out.stdout_text);
  EXPECT_TRUE(result["check"]["passed"].get<bool>()) << out.stdout_text;
}

std::vector<std::string> WorkloadNames() {
  std::vector<std::string> names;
  for (const WorkloadInfo& info : ListWorkloads()) names.push_back(info.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllWorkloads, EveryWorkloadTest, ::testing::ValuesIn(WorkloadNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tessera
