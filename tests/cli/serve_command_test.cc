// `tessera serve` (cli/serve_command.cc) as a process on loopback: it says where it listens,
// keeps its jobs in the --state file across a SIGTERM and a restart on the same address, and
// a bad option (a missing token file, a busy address) is a one-line error and exit 1.
#include <fstream>

#include "absl/strings/numbers.h"
#include "tests/cli/service_test_util.h"

namespace tessera {
namespace testing {
namespace {

using ServeCommandTest = OneServerTest;

TEST_F(ServeCommandTest, SigtermExitsZeroAndARestartKeepsTheJobsOfItsStateFile) {
  EXPECT_EQ(cluster_->server()->Stdout().rfind("listening on 127.0.0.1:", 0), 0u)
      << cluster_->server()->Stdout();
  std::string error;
  std::string job = Submit(cluster_.get(), {"GMM:M=64,N=64,K=64", "--trials", "8"}, &error);
  ASSERT_FALSE(job.empty()) << error;
  absl::StatusOr<int> exit_code = cluster_->StopServer();
  ASSERT_TRUE(exit_code.ok()) << exit_code.status();
  EXPECT_EQ(*exit_code, 0) << cluster_->Logs();
  std::ifstream state(cluster_->db_path() + ".state");
  EXPECT_TRUE(state.good()) << "the default --state is <db>.state";

  ASSERT_TRUE(cluster_->StartServer({}, cluster_->address()).ok()) << cluster_->Logs();
  nlohmann::json status = JobStatus(cluster_.get(), job);
  ASSERT_FALSE(status.is_null()) << cluster_->Logs();
  EXPECT_EQ(status["max_trials"], 8);
}

TEST_F(ServeCommandTest, ABadOptionIsAOneLineErrorAndExitOne) {
  const std::string db = cluster_->dir() + "/other.db";
  ExpectOneLineError(cluster_->Run({"serve", "--db", db, "--listen", "127.0.0.1:0",
                                    "--client-token-file", cluster_->dir() + "/missing.token"},
                                   30),
                     "missing.token", "missing token file");
  // The running server holds its address: a second server there cannot listen.
  CommandResult busy = cluster_->Run({"serve", "--db", db, "--listen", cluster_->address()}, 30);
  EXPECT_EQ(busy.exit_code, 1) << busy.out << busy.err;
  EXPECT_NE(busy.err.find("tessera: error: "), std::string::npos) << busy.err;
  EXPECT_NE(busy.err.find(cluster_->address()), std::string::npos) << busy.err;
}

TEST_F(ServeCommandTest, AParseErrorIsOneLineAndExitOne) {
  // CLI11 alone printed two lines and exited 104 (its code for a conversion error).
  ExpectOneLineError(
      cluster_->Run(
          {"submit", "GMM:M=64,N=64,K=64", "--server", cluster_->address(), "--trials", "abc"}, 30),
      "--trials", "--trials abc");
  ExpectOneLineError(
      cluster_->Run({"serve", "--db", cluster_->dir() + "/other.db", "--no-such-flag"}, 30),
      "--no-such-flag", "unknown flag");
}

TEST_F(ServeCommandTest, TheHealthPortPickedIsPrinted) {
  ASSERT_TRUE(cluster_->StopServer().ok());
  ASSERT_TRUE(cluster_->StartServer({"--health-listen", "127.0.0.1:0"}).ok()) << cluster_->Logs();
  absl::StatusOr<std::string> line = cluster_->server()->WaitForLine("health on 127.0.0.1:", 10);
  ASSERT_TRUE(line.ok()) << line.status() << cluster_->server()->Stdout();
  int port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(*line, &port)) << *line;
  EXPECT_GT(port, 0) << *line;
}

}  // namespace
}  // namespace testing
}  // namespace tessera
