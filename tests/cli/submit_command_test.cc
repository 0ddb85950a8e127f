// The client commands (`submit`, `jobs`, `status`, `watch`, `cancel`, `best --server`)
// against a real server on loopback with no workers: what they print, and their one-line
// errors with the gRPC status code.
#include "tests/cli/service_test_util.h"

namespace tessera {
namespace testing {
namespace {

class SubmitCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    cluster_ = std::make_unique<ServiceCluster>(TesseraBinary(), ScratchDir(info->name()));
    ASSERT_TRUE(cluster_->StartServer().ok()) << cluster_->Logs();
  }
  // A failed command: exit 1, one line on stderr naming `code`.
  void ExpectOneLineError(const CommandResult& r, const std::string& code,
                          const std::string& what) {
    EXPECT_EQ(r.exit_code, 1) << what << ": " << r.out << r.err;
    EXPECT_EQ(CountLines(r.err), 1) << what << ":\n" << r.err;
    EXPECT_NE(r.err.find("tessera: error: "), std::string::npos) << what << ": " << r.err;
    EXPECT_NE(r.err.find(code), std::string::npos) << what << ": " << r.err;
  }
  std::unique_ptr<ServiceCluster> cluster_;
};

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

TEST_F(SubmitCommandTest, CancelledJobEndsItsWatch) {
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

TEST_F(SubmitCommandTest, BadRequestsGetOneLineWithTheStatusCode) {
  ExpectOneLineError(cluster_->RunClient({"submit", "GMM", "--trials", "0"}), "INVALID_ARGUMENT",
                     "zero budget");
  ExpectOneLineError(cluster_->RunClient({"submit", "NOPE:M=3", "--trials", "8"}),
                     "INVALID_ARGUMENT", "unknown workload");
  ExpectOneLineError(cluster_->RunClient({"submit", "GMM", "--trials", "8", "--target", "tpu"}),
                     "INVALID_ARGUMENT", "unknown target");
  ExpectOneLineError(cluster_->RunClient({"status", "job-does-not-exist"}), "NOT_FOUND",
                     "unknown job");
  ExpectOneLineError(cluster_->RunClient({"cancel", "job-does-not-exist"}), "NOT_FOUND",
                     "cancel of an unknown job");
  ExpectOneLineError(cluster_->RunClient({"watch", "job-does-not-exist"}), "NOT_FOUND",
                     "watch of an unknown job");
  ExpectOneLineError(cluster_->RunClient({"best", "GMM:M=64,N=64,K=64"}), "no verified record",
                     "best without records");
  ExpectOneLineError(cluster_->RunClient({"best", "GMM", "--db", cluster_->dir() + "/x.db"}),
                     "either --db FILE or --server ADDR", "both --db and --server");
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
