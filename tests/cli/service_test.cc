// End to end on loopback: a real `tessera serve` and real `tessera worker` processes, real
// SQLite files, jobs submitted and followed with the client commands. Failures of workers
// and of the server are real kill -9s.
#include <signal.h>

#include <algorithm>
#include <map>
#include <set>

#include "tests/cli/service_test_util.h"

namespace tessera {
namespace testing {
namespace {

constexpr char kGmm[] = "GMM:M=128,N=128,K=128";
constexpr char kSmallC2d[] = "C2D:H=28,W=28,CI=16,CO=32,K=3,stride=1,padding=1";

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    cluster_ = std::make_unique<ServiceCluster>(TesseraBinary(), ScratchDir(info->name()));
  }
  // Follows the job to its end with `tessera watch`; true when it succeeded.
  bool Watch(const std::string& job, double timeout_sec = 180) {
    CommandResult r = cluster_->RunClient({"watch", job}, timeout_sec);
    EXPECT_EQ(r.exit_code, 0) << job << ": " << r.err << "\n" << cluster_->Logs();
    return r.exit_code == 0;
  }
  std::vector<StoredRecord> Records(const std::string& job) {
    absl::StatusOr<std::vector<StoredRecord>> records = ReadRecords(cluster_->db_path(), job);
    EXPECT_TRUE(records.ok()) << records.status();
    return records.ok() ? *records : std::vector<StoredRecord>{};
  }
  std::unique_ptr<ServiceCluster> cluster_;
};

TEST_F(ServiceTest, ThreeWorkersRunTwoJobsToCompletion) {
  ASSERT_TRUE(cluster_->StartServer().ok()) << cluster_->Logs();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(cluster_->StartWorker({"--max-candidates", "4"}).ok());
  }
  std::string error;
  // The jobs here count their records exactly: without the runoff, which measures programs
  // again (a job's runoff on a worker: daemon_test.cc).
  std::string gmm_job = Submit(
      cluster_.get(),
      {kGmm, "--trials", "16", "--trials-per-iter", "8", "--seed", "1", "--no-runoff"}, &error);
  ASSERT_FALSE(gmm_job.empty()) << error;
  std::string c2d_job =
      Submit(cluster_.get(),
             {kSmallC2d, "--trials", "16", "--trials-per-iter", "8", "--seed", "2", "--no-runoff"},
             &error);
  ASSERT_FALSE(c2d_job.empty()) << error;
  ASSERT_TRUE(Watch(gmm_job));
  ASSERT_TRUE(Watch(c2d_job));

  for (const std::string& job : {gmm_job, c2d_job}) {
    nlohmann::json status = JobStatus(cluster_.get(), job);
    ASSERT_FALSE(status.is_null()) << job;
    EXPECT_EQ(status["state"], "JOB_SUCCEEDED") << status.dump();
    EXPECT_EQ(status["trials"], 16) << status.dump();
    EXPECT_TRUE(status["tasks"][0]["has_best"].get<bool>()) << status.dump();
  }
  // best and apply --server answer with what the jobs stored.
  CommandResult best = cluster_->RunClient({"best", kGmm, "--json"});
  ASSERT_EQ(best.exit_code, 0) << best.err;
  nlohmann::json best_json = nlohmann::json::parse(best.out, nullptr, false);
  ASSERT_FALSE(best_json.is_discarded()) << best.out;
  int64_t best_id = best_json["records"][0]["id"].get<int64_t>();
  EXPECT_TRUE(best_json["records"][0]["verified"].get<bool>());
  EXPECT_EQ(best_json["records"][0]["job_id"], gmm_job);
  EXPECT_GT(best_json["records"][0]["stage_secs"]["verify"].get<double>(), 0) << best.out;
  CommandResult apply = cluster_->RunClient({"apply", kGmm, "--run", "--check", "--repeat", "2"});
  EXPECT_EQ(apply.exit_code, 0) << apply.out << apply.err;
  EXPECT_NE(apply.out.find(absl::StrCat("tuned record ", best_id)), std::string::npos) << apply.out;
  EXPECT_NE(apply.out.find("check: PASS"), std::string::npos) << apply.out;

  ASSERT_EQ(cluster_->StopServer().value_or(-1), 0) << cluster_->Logs();
  for (ChildProcess* w : cluster_->workers()) {
    w->Signal(SIGTERM);
    EXPECT_EQ(w->Wait(30).value_or(-1), 0) << w->Stderr();
  }
  std::set<std::string> workers;
  for (const std::string& job : {gmm_job, c2d_job}) {
    std::vector<StoredRecord> records = Records(job);
    EXPECT_EQ(records.size(), 16u) << job;
    EXPECT_TRUE(Duplicates(records).empty()) << job;
    int verified = 0;
    for (const StoredRecord& r : records) {
      verified += r.verified;
      workers.insert(r.worker_id);
      EXPECT_FALSE(r.worker_id.empty()) << "record " << r.id;
    }
    EXPECT_GE(verified, 1) << job;
    if (job == gmm_job) {
      // The best record is the fastest verified one of the job.
      double best_secs = 1e30;
      int64_t fastest = -1;
      for (const StoredRecord& r : records) {
        if (r.ok && r.verified && r.mean_secs < best_secs) best_secs = r.mean_secs, fastest = r.id;
      }
      EXPECT_EQ(best_id, fastest);
    }
  }
  EXPECT_GE(workers.size(), 2u) << "batches of 8 split in leases of 4 over 3 workers";

  // The same job through `tessera tune` stores as many records, and verifies its best too
  // (without its runoff, which adds records of programs measured again).
  std::string local_db = cluster_->dir() + "/local.db";
  CommandResult tune = cluster_->Run({"tune", kGmm, "--trials", "16", "--trials-per-iter", "8",
                                      "--seed", "1", "--db", local_db, "--no-runoff"},
                                     180);
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  absl::StatusOr<std::vector<StoredRecord>> local = ReadRecords(local_db);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->size(), 16u);
  EXPECT_GE(
      std::count_if(local->begin(), local->end(), [](const StoredRecord& r) { return r.verified; }),
      1);
}

TEST_F(ServiceTest, KilledWorkersLeaseExpiresAndItsBatchIsMeasuredElsewhere) {
  ASSERT_TRUE(cluster_->StartServer({"--lease-seconds", "2"}).ok()) << cluster_->Logs();
  absl::StatusOr<ChildProcess*> doomed = cluster_->StartWorker();
  ASSERT_TRUE(doomed.ok());
  std::string error;
  std::string job = Submit(
      cluster_.get(), {kGmm, "--trials", "16", "--trials-per-iter", "8", "--no-runoff"}, &error);
  ASSERT_FALSE(job.empty()) << error;
  // Killed while it measures its first batch (builds take longer than the 50 ms poll).
  ASSERT_TRUE(WaitUntil(
      [&] { return (*doomed)->Stderr().find("candidates of job") != std::string::npos; }, 60))
      << cluster_->Logs();
  (*doomed)->Signal(SIGKILL);
  ASSERT_EQ((*doomed)->Wait(10).value_or(-1), 128 + SIGKILL);
  EXPECT_EQ((*doomed)->Stderr().find("reported"), std::string::npos) << (*doomed)->Stderr();
  (*doomed)->Kill();  // its kernel and compiler processes too

  absl::StatusOr<ChildProcess*> survivor = cluster_->StartWorker();
  ASSERT_TRUE(survivor.ok());
  ASSERT_TRUE(Watch(job));
  ASSERT_EQ(cluster_->StopServer().value_or(-1), 0) << cluster_->Logs();
  std::vector<StoredRecord> records = Records(job);
  EXPECT_EQ(records.size(), 16u);
  EXPECT_TRUE(Duplicates(records).empty());
  std::set<std::string> workers;
  for (const StoredRecord& r : records) workers.insert(r.worker_id);
  EXPECT_EQ(workers.size(), 1u) << "every record comes from the surviving worker";
  for (const StoredRecord& r : records) EXPECT_NE(r.error_kind, "worker_lost") << r.id;
}

TEST_F(ServiceTest, KilledServerRestartsAndTheJobCompletesExactlyOnce) {
  ASSERT_TRUE(cluster_->StartServer({"--lease-seconds", "3"}).ok()) << cluster_->Logs();
  absl::StatusOr<ChildProcess*> worker = cluster_->StartWorker({"--max-candidates", "4"});
  ASSERT_TRUE(worker.ok());
  std::string error;
  std::string job = Submit(
      cluster_.get(), {kGmm, "--trials", "24", "--trials-per-iter", "8", "--no-runoff"}, &error);
  ASSERT_FALSE(job.empty()) << error;
  // Mid-job: after the first lease was reported, before the budget is spent.
  ASSERT_TRUE(
      WaitUntil([&] { return (*worker)->Stderr().find("reported") != std::string::npos; }, 90))
      << cluster_->Logs();
  cluster_->KillServer();
  ASSERT_TRUE(cluster_->StartServer({"--lease-seconds", "3"}).ok()) << cluster_->Logs();
  ASSERT_TRUE(Watch(job));
  nlohmann::json status = JobStatus(cluster_.get(), job);
  ASSERT_FALSE(status.is_null());
  EXPECT_EQ(status["trials"], 24) << status.dump();
  ASSERT_EQ(cluster_->StopServer().value_or(-1), 0) << cluster_->Logs();
  // The worker registered again with the restarted server.
  EXPECT_GE(CountLines((*worker)->Stderr()), 1);
  std::string log = (*worker)->Stderr();
  size_t first = log.find("registered with");
  EXPECT_NE(log.find("registered with", first + 1), std::string::npos) << log;
  (*worker)->Signal(SIGTERM);
  EXPECT_EQ((*worker)->Wait(30).value_or(-1), 0) << (*worker)->Stderr();

  std::vector<StoredRecord> records = Records(job);
  EXPECT_EQ(records.size(), 24u);
  EXPECT_TRUE(Duplicates(records).empty());
}

}  // namespace
}  // namespace testing
}  // namespace tessera
