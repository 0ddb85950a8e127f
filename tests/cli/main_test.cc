// Tests of the `tessera` binary as a whole (cli/main.cc and the loading in cli/common.cc): the
// subcommands listed in --help, and bad input of any command is one line and a non-zero exit.
// Each command's own tests are in <command>_command_test.cc.
#include <cstdio>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::CountLines;
using cli_testing::Output;
using cli_testing::RunTessera;

TEST(CliTest, HelpListsSubcommands) {
  Output out = RunTessera("--help");
  EXPECT_EQ(out.exit_code, 0);
  for (const char* sub : {"workloads", "show", "run", "schedule", "codegen", "devices", "target"}) {
    EXPECT_NE(out.stdout_text.find(sub), std::string::npos) << sub;
  }
  EXPECT_EQ(RunTessera("run --help").exit_code, 0);
  EXPECT_EQ(RunTessera("schedule --help").exit_code, 0);
}

TEST(CliTest, BadInputGetsOneLineErrorAndNonzeroExit) {
  const char* cases[] = {
      "run NOPE --target cpu", "run GMM --target tpu", "run GMM --shape M=-3",
      "run GMM --shape Q=3",   "run GMM --shape M",    "run GMM --dtype float99",
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

}  // namespace
}  // namespace tessera
