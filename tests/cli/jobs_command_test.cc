// `tessera jobs`, `status`, `watch` and `cancel` (cli/jobs_command.cc) against a real server on
// loopback with no workers: a cancelled job ends its watch and is listed by state, and the
// commands' one-line errors carry the gRPC status code.
#include "tests/cli/service_test_util.h"

namespace tessera {
namespace testing {
namespace {

using JobsCommandTest = OneServerTest;

TEST_F(JobsCommandTest, CancelledJobEndsItsWatch) {
  CommandResult r = cluster_->RunClient({"submit", "GMM:M=64,N=64,K=64", "--trials", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string job = FirstLine(r.out);
  CommandResult cancel = cluster_->RunClient({"cancel", job});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_NE(cancel.out.find("cancelled"), std::string::npos) << cancel.out;
  CommandResult watch = cluster_->RunClient({"watch", job}, 30);
  // Progress lines, then the error as the last line.
  EXPECT_EQ(watch.exit_code, 1) << watch.err;
  std::string last = watch.err.substr(watch.err.rfind('\n', watch.err.size() - 2) + 1);
  EXPECT_EQ(last, "tessera: error: job " + job + " was cancelled\n") << watch.err;
  CommandResult listed = cluster_->RunClient({"jobs", "--state", "cancelled", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find(job), std::string::npos) << listed.out;
}

TEST_F(JobsCommandTest, BadRequestsGetOneLineWithTheStatusCode) {
  ExpectOneLineError(cluster_->RunClient({"status", "job-does-not-exist"}), "NOT_FOUND",
                     "unknown job");
  ExpectOneLineError(cluster_->RunClient({"cancel", "job-does-not-exist"}), "NOT_FOUND",
                     "cancel of an unknown job");
  ExpectOneLineError(cluster_->RunClient({"watch", "job-does-not-exist"}), "NOT_FOUND",
                     "watch of an unknown job");
  ExpectOneLineError(cluster_->RunClient({"jobs", "--state", "sleeping"}), "unknown state",
                     "bad --state");
  ExpectOneLineError(cluster_->Run({"jobs", "--server", "127.0.0.1:1", "--rpc-timeout", "5"}, 30),
                     "UNAVAILABLE", "no server");
  ExpectOneLineError(
      cluster_->RunClient({"jobs", "--token-file", cluster_->dir() + "/missing.token"}),
      "--token-file: cannot read", "missing token file");
}

}  // namespace
}  // namespace testing
}  // namespace tessera
