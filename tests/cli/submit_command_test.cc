// `tessera submit` (cli/submit_command.cc) against a real server on loopback with no workers:
// what it prints, that the job is then listed with what it waits for, and its one-line errors
// with the gRPC status code.
#include "tests/cli/service_test_util.h"

namespace tessera {
namespace testing {
namespace {

using SubmitCommandTest = OneServerTest;

TEST_F(SubmitCommandTest, SubmitPrintsTheJobIdAndTheJobIsListed) {
  CommandResult r = cluster_->RunClient(
      {"submit", "GMM:M=64,N=64,K=64", "--trials", "8", "--name", "small gmm", "--priority", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string job = FirstLine(r.out);
  EXPECT_FALSE(job.empty());
  EXPECT_EQ(CountLines(r.out), 1) << r.out;
  CommandResult jobs = cluster_->RunClient({"jobs"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  EXPECT_NE(jobs.out.find(job), std::string::npos) << jobs.out;
  EXPECT_NE(jobs.out.find("small gmm"), std::string::npos) << jobs.out;
  nlohmann::json status = JobStatus(cluster_.get(), job);
  ASSERT_FALSE(status.is_null());
  EXPECT_EQ(status["max_trials"], 8);
  EXPECT_EQ(status["priority"], 3);
  EXPECT_EQ(status["name"], "small gmm");
  // No worker serves cpu: the status says what the job waits for.
  ASSERT_TRUE(WaitUntil(
      [&] {
        nlohmann::json s = JobStatus(cluster_.get(), job);
        return !s.is_null() && !s["waiting_for"].get<std::string>().empty();
      },
      30));
  CommandResult text = cluster_->RunClient({"status", job});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("waiting for: "), std::string::npos) << text.out;
  CommandResult json =
      cluster_->RunClient({"submit", "GMM:M=64,N=64,K=64", "--trials", "8", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json parsed = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << json.out;
  EXPECT_FALSE(parsed["job_id"].get<std::string>().empty());
}

TEST_F(SubmitCommandTest, BadRequestsGetOneLineWithTheStatusCode) {
  ExpectOneLineError(cluster_->RunClient({"submit", "GMM", "--trials", "0"}), "INVALID_ARGUMENT",
                     "zero budget");
  ExpectOneLineError(cluster_->RunClient({"submit", "NOPE:M=3", "--trials", "8"}),
                     "INVALID_ARGUMENT", "unknown workload");
  ExpectOneLineError(cluster_->RunClient({"submit", "GMM", "--trials", "8", "--target", "tpu"}),
                     "INVALID_ARGUMENT", "unknown target");
}

}  // namespace
}  // namespace testing
}  // namespace tessera
