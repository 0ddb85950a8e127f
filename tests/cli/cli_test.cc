// End-to-end tests of the `tessera` binary, run as a user would run it.
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "frontend/workloads.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

struct Output {
  int exit_code = -1;
  std::string stdout_text;
};

// Runs `tessera <args>` with stderr folded into stdout.
Output RunTessera(const std::string& args) {
  std::string command = std::string(TESSERA_BINARY) + " " + args + " 2>&1";
  Output out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.stdout_text.append(buffer, n);
  int status = pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

int CountLines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

TEST(CliTest, HelpListsSubcommands) {
  Output out = RunTessera("--help");
  EXPECT_EQ(out.exit_code, 0);
  for (const char* sub : {"workloads", "show", "run"}) {
    EXPECT_NE(out.stdout_text.find(sub), std::string::npos) << sub;
  }
  EXPECT_EQ(RunTessera("run --help").exit_code, 0);
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

// The acceptance check: every workload at its default shape runs and matches.
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
