// Two `tessera serve` processes on one PostgreSQL database (records, jobs and the queue), real
// `tessera worker` processes split between them, on loopback: they share jobs and workers (the
// workers of one server measure the job another server searches), and when one server is
// killed (-9) mid-job the other takes its job over and finishes it, with every job's budget
// measured exactly once. The database is a throw-away cluster started by
// the test (tests/database/postgres_cluster.h); skipped, saying why, without its binaries.
#include <signal.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "database/database.h"
#include "server/job_store.h"
#include "tests/cli/service_test_util.h"
#include "tests/database/postgres_cluster.h"
#include "tests/testing/process.h"

namespace tessera {
namespace testing {
namespace {

constexpr int kTrials = 24;  // three batches of 8

class TwoServersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    PostgresCluster* cluster = PostgresCluster::Get(&why);
    if (cluster == nullptr) GTEST_SKIP() << "PostgreSQL: " << why;
    absl::StatusOr<std::string> url = cluster->NewDatabase();
    ASSERT_TRUE(url.ok()) << url.status();
    url_ = *url;
    dir_ = ScratchDir("two_servers");
  }

  // `tessera serve` on the shared database; returns its address ("" on failure).
  std::string StartServer(const std::string& name) {
    absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Start(
        {TesseraBinary(), "serve", "--db", url_, "--listen", "127.0.0.1:0", "--lease-seconds", "3",
         "--claim-seconds", "3", "--search-threads", "1"},
        dir_ + "/" + name + ".out", dir_ + "/" + name + ".err");
    EXPECT_TRUE(child.ok()) << child.status();
    if (!child.ok()) return "";
    absl::StatusOr<std::string> address = (*child)->WaitForLine("listening on ", 60);
    EXPECT_TRUE(address.ok()) << address.status() << "\n" << (*child)->Stderr();
    servers_[name] = std::move(*child);
    return address.value_or("");
  }

  void StartWorker(const std::string& address) {
    int n = static_cast<int>(workers_.size());
    absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Start(
        {TesseraBinary(), "worker", "--server", address, "--target", "cpu", "--max-backoff", "1",
         "--pull-wait", "2", "--max-candidates", "4",
         // In the test's directory: killed at the end, a worker leaves its build artifacts.
         "--work-dir", absl::StrCat(dir_, "/worker", n, "-build")},
        absl::StrCat(dir_, "/worker", n, ".out"), absl::StrCat(dir_, "/worker", n, ".err"));
    ASSERT_TRUE(child.ok()) << child.status();
    workers_.push_back(std::move(*child));
  }

  std::string Submit(const std::string& address, const std::string& workload, int seed) {
    CommandResult r =
        RunCommand({TesseraBinary(), "submit", workload, "--trials", std::to_string(kTrials),
                    "--trials-per-iter", "8", "--seed", std::to_string(seed), "--server", address,
                    "--no-runoff"},  // records counted exactly: nothing measured again
                   60, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return FirstLine(r.out);
  }

  // Every record of the shared database, by job id.
  std::map<std::string, std::vector<TuningRecord>> RecordsByJob() {
    std::map<std::string, std::vector<TuningRecord>> out;
    absl::StatusOr<std::unique_ptr<Database>> db = OpenDatabase(url_);
    EXPECT_TRUE(db.ok()) << db.status();
    if (!db.ok()) return out;
    absl::StatusOr<std::vector<TuningRecord>> records = (*db)->AllRecords();
    EXPECT_TRUE(records.ok()) << records.status();
    for (TuningRecord& r : records.value_or(std::vector<TuningRecord>{})) {
      out[r.job_id].push_back(std::move(r));
    }
    return out;
  }

  std::string Logs() {
    std::string out;
    for (auto& [name, s] : servers_) {
      std::string err = s->Stderr();
      absl::StrAppend(&out, "--- ", name, ":\n",
                      err.substr(err.size() > 4000 ? err.size() - 4000 : 0));
    }
    return out;
  }

  std::string url_;
  std::string dir_;
  std::map<std::string, std::unique_ptr<ChildProcess>> servers_;
  std::vector<std::unique_ptr<ChildProcess>> workers_;
};

TEST_F(TwoServersTest, ShareJobsAndWorkersAndOneFinishesTheJobsOfTheOtherAfterKill9) {
  std::string a = StartServer("a");
  std::string b = StartServer("b");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  // Workers on a only at first: b's job can progress only through them.
  StartWorker(a);
  StartWorker(a);
  std::string job_a = Submit(a, "GMM:M=64,N=64,K=64", 1);
  std::string job_b = Submit(b, "GMM:M=32,N=64,K=48", 2);
  ASSERT_FALSE(job_a.empty());
  ASSERT_FALSE(job_b.empty());
  ASSERT_NE(job_a, job_b) << "job ids are the database's, unique across servers";
  ASSERT_TRUE(WaitUntil([&] { return !RecordsByJob()[job_b].empty(); }, 60))
      << "workers of server a measure the job that server b searches\n"
      << Logs();
  EXPECT_NE(servers_["a"]->Stderr().find("job " + job_b + ": lease"), std::string::npos);
  StartWorker(b);

  // Mid-job: server a killed once its job's first batch is committed, before its budget is.
  ASSERT_TRUE(WaitUntil([&] { return RecordsByJob()[job_a].size() >= 8; }, 60)) << Logs();
  servers_["a"]->Kill();
  size_t at_kill = RecordsByJob()[job_a].size();
  ASSERT_LT(at_kill, static_cast<size_t>(kTrials)) << "killed too late to be mid-job";

  // Server b claims job_a when a's claim expires and finishes both; its worker (a's two keep
  // trying their dead server) measures the rest, a's expired leases included.
  std::unique_ptr<JobStore> store = JobStore::Open(url_).value();
  auto ended = [&](const std::string& job) {
    absl::StatusOr<JobRow> row = store->GetJob(job);
    return row.ok() && IsFinal(row->state);
  };
  ASSERT_TRUE(WaitUntil([&] { return ended(job_a) && ended(job_b); }, 75))
      << "records of " << job_a << " at the kill: " << at_kill << "\n"
      << Logs();
  EXPECT_NE(servers_["b"]->Stderr().find("job " + job_a + ": claimed by"), std::string::npos)
      << Logs();

  std::map<std::string, std::vector<TuningRecord>> records = RecordsByJob();
  for (const std::string& job : {job_a, job_b}) {
    JobRow row = store->GetJob(job).value();
    EXPECT_EQ(row.state, JobState::kSucceeded) << job << ": " << row.error;
    EXPECT_EQ(row.trials, kTrials) << job;
    // Exactly the budget: none lost, none twice.
    EXPECT_EQ(records[job].size(), static_cast<size_t>(kTrials)) << job;
    std::set<std::pair<int64_t, std::string>> traces;
    for (const TuningRecord& r : records[job]) {
      EXPECT_TRUE(traces.insert({r.workload_id, r.trace_json}).second)
          << job << ": record " << r.id << " repeats a candidate";
    }
  }
  EXPECT_EQ(records.size(), 2u) << "no records outside the two jobs";

  servers_["b"]->Signal(SIGTERM);
  EXPECT_EQ(servers_["b"]->Wait(30).value_or(-1), 0) << Logs();
  for (auto& w : workers_) w->Kill();
}

}  // namespace
}  // namespace testing
}  // namespace tessera
