// Running the `tessera` binary from the command tests (tests/cli/*_command_test.cc) as a user
// would: stdout and stderr captured, the exit code, a scratch directory per test, and one small
// tuning run to read back.
#ifndef TESSERA_TESTS_CLI_CLI_TESTING_H_
#define TESSERA_TESTS_CLI_CLI_TESTING_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/scoped_temp_dir.h"

namespace tessera {
namespace cli_testing {

struct Output {
  int exit_code = -1;
  std::string stdout_text;  // stdout, then stderr when `fold_stderr`
};

// Runs `tessera <args>`; stderr is folded into stdout when `fold_stderr`, else dropped. The
// binary is the one built with this test, or $TESSERA_BINARY.
inline Output RunTessera(const std::string& args, bool fold_stderr = true) {
  const char* binary = std::getenv("TESSERA_BINARY");
  const std::string command = std::string(binary != nullptr && *binary ? binary : TESSERA_BINARY) +
                              " " + args + (fold_stderr ? " 2>&1" : " 2>/dev/null");
  Output out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.stdout_text.append(buffer, n);
  const int status = pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// stdout of `tessera <args>` parsed as JSON (stderr dropped); a parse failure fails the test
// and gives null.
inline nlohmann::json RunTesseraJson(const std::string& args) {
  Output out = RunTessera(args, /*fold_stderr=*/false);
  EXPECT_EQ(out.exit_code, 0) << args << "\n" << out.stdout_text;
  nlohmann::json j = nlohmann::json::parse(out.stdout_text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << args << ": not JSON:\n" << out.stdout_text;
  return j.is_discarded() ? nlohmann::json() : j;
}

// A fresh directory named after `name`, removed when the test ends (made in SetUpTestSuite:
// when the suite ends), kept when it failed (tests/testing/scoped_temp_dir.h).
inline std::string ScratchDir(const std::string& name) {
  return testing::ScratchDirUntilTestEnds(name);
}

// The workload the command tests tune: small enough to build and run in a blink.
inline constexpr char kSmallGmm[] = "GMM:M=16,N=16,K=16";

// Measurement flags that keep each run short.
inline constexpr char kQuickRuns[] = "--repeat 1 --min-repeat-ms 0";

// Tunes kSmallGmm for `trials` trials (batches of 4) into `db`; returns tune's JSON summary.
inline nlohmann::json TuneSmallGmm(const std::string& db, int trials = 8,
                                   const std::string& flags = "") {
  return RunTesseraJson(std::string("tune ") + kSmallGmm + " --db " + db + " --trials " +
                        std::to_string(trials) + " --trials-per-iter 4 --threads 1 --json " +
                        kQuickRuns + " " + flags);
}

// Whether `text` is one line (a single trailing newline allowed).
inline bool OneLine(const std::string& text) {
  const size_t newline = text.find('\n');
  return newline == std::string::npos || newline + 1 == text.size();
}

// The number of lines in `text` (newlines counted).
inline int CountLines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

// Writes `text` to `name` in a scratch directory of the running test (removed when it ends
// unless it failed); returns the path.
inline std::string WriteTempFile(const std::string& name, const std::string& text) {
  std::string path = testing::ScratchDirUntilTestEnds("cli_file") + "/" + name;
  FILE* f = fopen(path.c_str(), "w");
  if (f == nullptr) return path;
  fputs(text.c_str(), f);
  fclose(f);
  return path;
}

// A GPU schedule of GMM: one thread per output element (batch, i, j fused, split by 128).
inline constexpr char kGmmGpuTrace[] = R"([[["GetBlock", [], ["C", "main"], ["b0"]],
  ["GetLoops", ["b0"], [], ["l1", "l2", "l3", "l4"]],
  ["Fuse", ["l1", "l2", "l3"], [1], ["l5"]],
  ["Split", ["l5", "None", 128], [1], ["l6", "l7"]],
  ["Bind", ["l6"], ["blockIdx.x"], []],
  ["Bind", ["l7"], ["threadIdx.x"], []]], []])";

// "" when `tessera devices` lists a GPU, else its one-line reason.
inline std::string NoGpuReason() {
  Output out = RunTessera("devices");
  return out.stdout_text.rfind("no CUDA device: ", 0) == 0 ? out.stdout_text : "";
}

// The JSON object in `text`, which may follow progress lines (stderr is folded into it).
inline nlohmann::json JsonAfterProgress(const std::string& text) {
  size_t start = text.rfind('{', 0) == 0 ? 0 : text.find("\n{") + 1;
  return nlohmann::json::parse(text.substr(start));
}

}  // namespace cli_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_CLI_CLI_TESTING_H_
