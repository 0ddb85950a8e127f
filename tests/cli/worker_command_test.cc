// `tessera worker` against a real server on loopback: a kernel that crashes costs one
// measurement (a run_error record) and the worker goes on serving; SIGTERM lets the current
// batch finish and report, then the worker exits 0, or, past --drain-timeout, it exits at once
// and the lease expires; a worker whose lease is revoked (its job cancelled) stops measuring
// it at once; a worker refused by the server exits 1.
#include <signal.h>

#include <chrono>
#include <fstream>
#include <utility>

#include "tests/cli/service_test_util.h"

namespace tessera {
namespace testing {
namespace {

// Stores far outside B: the unscheduled function crashes, so every candidate of it does. Its
// index is not affine (v_i * v_j), so SubmitJob's bounds check (ir/verify.h), which refuses only
// what is out of bounds for sure, lets it through, as a kernel that crashes at run time.
constexpr char kCrashingFunction[] = R"(@prim_func
def main(
    A: Buffer((64, 64), "float32"),
    B: Buffer((64, 64), "float32"),
):
    func_attr({"global_symbol": "main"})
    with block("root"):
        for i in range(64):
            for j in range(64):
                with block("B"):
                    v_i = axis.spatial(64, i)
                    v_j = axis.spatial(64, j)
                    reads(A[v_i, v_j])
                    writes(B[v_i * v_j * 1000000 + 1000000, v_j])
                    B[v_i * v_j * 1000000 + 1000000, v_j] = A[v_i, v_j] + float32(1.0)
)";

class WorkerCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    cluster_ = std::make_unique<ServiceCluster>(TesseraBinary(), ScratchDir(info->name()));
  }
  std::unique_ptr<ServiceCluster> cluster_;
};

TEST_F(WorkerCommandTest, CrashingCandidatesAreRunErrorsAndTheWorkerKeepsServing) {
  std::string path = cluster_->dir() + "/crash.ir";
  std::ofstream(path) << kCrashingFunction;
  ASSERT_TRUE(cluster_->StartServer().ok()) << cluster_->Logs();
  absl::StatusOr<ChildProcess*> worker = cluster_->StartWorker();
  ASSERT_TRUE(worker.ok());
  std::string error;
  std::string crash_job =
      Submit(cluster_.get(), {path, "--trials", "8", "--trials-per-iter", "8"}, &error);
  ASSERT_FALSE(crash_job.empty()) << error;
  CommandResult watch = cluster_->RunClient({"watch", crash_job}, 120);
  EXPECT_EQ(watch.exit_code, 0) << watch.err << cluster_->Logs();
  nlohmann::json status = JobStatus(cluster_.get(), crash_job);
  ASSERT_FALSE(status.is_null());
  // An elementwise function has few distinct schedules: the search may exhaust its space
  // before the budget. Every candidate measured crashed.
  int trials = status["trials"].get<int>();
  EXPECT_GE(trials, 1);
  EXPECT_EQ(status["tasks"][0]["errors"]["run_error"], trials) << status.dump();
  EXPECT_FALSE(status["tasks"][0]["has_best"].get<bool>());

  // The same worker process measures the next job.
  // Its records are counted exactly: no runoff, which measures programs again.
  std::string gmm_job = Submit(
      cluster_.get(),
      {"GMM:M=64,N=64,K=64", "--trials", "8", "--trials-per-iter", "8", "--no-runoff"}, &error);
  ASSERT_FALSE(gmm_job.empty()) << error;
  watch = cluster_->RunClient({"watch", gmm_job}, 120);
  EXPECT_EQ(watch.exit_code, 0) << watch.err << cluster_->Logs();
  EXPECT_TRUE((*worker)->Running());
  ASSERT_EQ(cluster_->StopServer().value_or(-1), 0);

  absl::StatusOr<std::vector<StoredRecord>> records = ReadRecords(cluster_->db_path(), crash_job);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(static_cast<int>(records->size()), trials);
  for (const StoredRecord& r : *records) EXPECT_EQ(r.error_kind, "run_error") << r.id;
  records = ReadRecords(cluster_->db_path(), gmm_job);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(records->size(), 8u);
}

TEST_F(WorkerCommandTest, SigtermFinishesTheBatchThenExitsZero) {
  ASSERT_TRUE(cluster_->StartServer().ok()) << cluster_->Logs();
  absl::StatusOr<ChildProcess*> worker = cluster_->StartWorker();
  ASSERT_TRUE(worker.ok());
  std::string error;
  std::string job =
      Submit(cluster_.get(), {"GMM:M=128,N=128,K=128", "--trials", "16", "--trials-per-iter", "8"},
             &error);
  ASSERT_FALSE(job.empty()) << error;
  ASSERT_TRUE(WaitUntil(
      [&] { return (*worker)->Stderr().find("candidates of job") != std::string::npos; }, 60))
      << cluster_->Logs();
  (*worker)->Signal(SIGTERM);
  absl::StatusOr<int> code = (*worker)->Wait(90);
  ASSERT_TRUE(code.ok()) << (*worker)->Stderr();
  EXPECT_EQ(*code, 0) << (*worker)->Stderr();
  std::string log = (*worker)->Stderr();
  // "lease L: N candidates of job ..." then "lease L: reported, N of N results accepted".
  size_t at = log.find(" candidates of job");
  ASSERT_NE(at, std::string::npos) << log;
  size_t start = log.rfind(' ', at - 1) + 1;
  int leased = std::stoi(log.substr(start, at - start));
  EXPECT_NE(log.find(absl::StrCat("reported, ", leased, " of ", leased, " results accepted")),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("stopped"), std::string::npos) << log;
  EXPECT_EQ(log.find("candidates of job", at + 2), std::string::npos) << "no second batch";
  // The batch it finished counts; nothing else was measured.
  nlohmann::json status = JobStatus(cluster_.get(), job);
  ASSERT_FALSE(status.is_null());
  EXPECT_EQ(status["trials"], leased) << status.dump();
}

TEST_F(WorkerCommandTest, SigtermPastTheDrainTimeoutLeavesTheLeaseToExpire) {
  ASSERT_TRUE(cluster_->StartServer({"--lease-seconds", "2"}).ok()) << cluster_->Logs();
  absl::StatusOr<ChildProcess*> quitter = cluster_->StartWorker({"--drain-timeout", "0.2"});
  ASSERT_TRUE(quitter.ok());
  std::string error;
  // Its records are counted exactly: no runoff, which measures programs again.
  std::string job = Submit(
      cluster_.get(),
      {"GMM:M=128,N=128,K=128", "--trials", "16", "--trials-per-iter", "8", "--no-runoff"}, &error);
  ASSERT_FALSE(job.empty()) << error;
  ASSERT_TRUE(WaitUntil(
      [&] { return (*quitter)->Stderr().find("candidates of job") != std::string::npos; }, 60))
      << cluster_->Logs();
  (*quitter)->Signal(SIGTERM);
  absl::StatusOr<int> code = (*quitter)->Wait(10);
  ASSERT_TRUE(code.ok()) << "the drain time-out must bound the stop: " << (*quitter)->Stderr();
  EXPECT_EQ(*code, 0);
  std::string log = (*quitter)->Stderr();
  EXPECT_NE(log.find("abandoned on stop"), std::string::npos) << log;
  EXPECT_EQ(log.find("reported"), std::string::npos) << log;
  (*quitter)->Kill();  // the measurement's child processes

  // The abandoned lease expires and another worker measures its candidates.
  ASSERT_TRUE(cluster_->StartWorker().ok());
  CommandResult watch = cluster_->RunClient({"watch", job}, 120);
  EXPECT_EQ(watch.exit_code, 0) << watch.err << cluster_->Logs();
  ASSERT_EQ(cluster_->StopServer().value_or(-1), 0);
  absl::StatusOr<std::vector<StoredRecord>> records = ReadRecords(cluster_->db_path(), job);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(records->size(), 16u);
  EXPECT_TRUE(Duplicates(*records).empty());
}

// The lease and its size of the first "lease L: N candidates of job" line in `log` with N >=
// `at_least`; empty when there is none yet.
std::pair<std::string, int> LeaseOfAtLeast(const std::string& log, int at_least) {
  for (size_t at = log.find(" candidates of job"); at != std::string::npos;
       at = log.find(" candidates of job", at + 1)) {
    const size_t count_start = log.rfind(' ', at - 1) + 1;
    const int count = std::stoi(log.substr(count_start, at - count_start));
    const size_t lease_start = log.rfind("lease ", count_start) + 6;
    if (count >= at_least) {
      return {log.substr(lease_start, log.find(':', lease_start) - lease_start), count};
    }
  }
  return {"", 0};
}

// Cancelling a job revokes its leases; the heartbeat's answer tells the worker, which stops
// measuring the batch at once (after the build or run in progress) instead of measuring it to
// the end and dropping it, and then serves the next job.
TEST_F(WorkerCommandTest, RevokedLeaseStopsMeasuringAtOnce) {
  ASSERT_TRUE(cluster_->StartServer({"--heartbeat-seconds", "0.5"}).ok()) << cluster_->Logs();
  // One build at a time: 32 candidates of GMM 256^3 take well over 10 s to build and run.
  absl::StatusOr<ChildProcess*> worker = cluster_->StartWorker({"--build-parallelism", "1"});
  ASSERT_TRUE(worker.ok());
  std::string error;
  std::string job = Submit(cluster_.get(),
                           {"GMM:M=256,N=256,K=256", "--trials", "64", "--trials-per-iter", "32",
                            "--no-runoff", "--no-verify"},
                           &error);
  ASSERT_FALSE(job.empty()) << error;
  std::pair<std::string, int> lease;
  ASSERT_TRUE(WaitUntil(
      [&] {
        lease = LeaseOfAtLeast((*worker)->Stderr(), 16);
        return !lease.first.empty();
      },
      60))
      << cluster_->Logs();
  const auto cancelled_at = std::chrono::steady_clock::now();
  CommandResult cancel = cluster_->RunClient({"cancel", job}, 30);
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  const std::string stopped = absl::StrCat("lease ", lease.first, ": revoked, stopped measuring");
  ASSERT_TRUE(WaitUntil([&] { return (*worker)->Stderr().find(stopped) != std::string::npos; }, 30))
      << cluster_->Logs();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - cancelled_at).count();
  // A heartbeat (0.5 s) and the build or run in progress (about a second on a busy machine).
  EXPECT_LT(seconds, 6) << (*worker)->Stderr();
  std::string log = (*worker)->Stderr();
  EXPECT_EQ(log.find(absl::StrCat("lease ", lease.first, ": measured")), std::string::npos) << log;
  EXPECT_EQ(log.find(absl::StrCat("lease ", lease.first, ": reported")), std::string::npos) << log;

  // The same worker measures the next job.
  std::string next = Submit(
      cluster_.get(),
      {"GMM:M=64,N=64,K=64", "--trials", "4", "--trials-per-iter", "4", "--no-runoff"}, &error);
  ASSERT_FALSE(next.empty()) << error;
  CommandResult watch = cluster_->RunClient({"watch", next}, 120);
  EXPECT_EQ(watch.exit_code, 0) << watch.err << cluster_->Logs();
}

TEST_F(WorkerCommandTest, RefusedTokenExitsOneWithTheStatusCode) {
  std::string tokens = cluster_->dir() + "/worker.tokens";
  std::ofstream(tokens) << "the-worker-token\n";
  std::string wrong = cluster_->dir() + "/wrong.token";
  std::ofstream(wrong) << "not-the-token\n";
  ASSERT_TRUE(cluster_->StartServer({"--worker-token-file", tokens}).ok()) << cluster_->Logs();
  absl::StatusOr<ChildProcess*> worker = cluster_->StartWorker({"--token-file", wrong});
  ASSERT_TRUE(worker.ok());
  absl::StatusOr<int> code = (*worker)->Wait(30);
  ASSERT_TRUE(code.ok()) << "a refused worker must not retry forever";
  EXPECT_EQ(*code, 1);
  std::string log = (*worker)->Stderr();
  EXPECT_NE(log.find("tessera: error: register with"), std::string::npos) << log;
  EXPECT_NE(log.find("UNAUTHENTICATED"), std::string::npos) << log;
}

TEST_F(WorkerCommandTest, UnreachableServerIsRetriedUntilSigterm) {
  // Nothing listens on port 1 of loopback.
  CommandResult r = cluster_->Run({"worker", "--server", "127.0.0.1:1", "--help"}, 10);
  EXPECT_EQ(r.exit_code, 0);
  std::vector<std::string> argv = {TesseraBinary(), "worker",        "--server",
                                   "127.0.0.1:1",   "--max-backoff", "0.5"};
  absl::StatusOr<std::unique_ptr<ChildProcess>> worker =
      ChildProcess::Start(argv, cluster_->dir() + "/w.out", cluster_->dir() + "/w.err");
  ASSERT_TRUE(worker.ok());
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::string log = (*worker)->Stderr();
        size_t first = log.find("reconnecting in");
        return first != std::string::npos &&
               log.find("reconnecting in", first + 1) != std::string::npos;
      },
      20))
      << (*worker)->Stderr();
  EXPECT_NE((*worker)->Stderr().find("UNAVAILABLE"), std::string::npos);
  (*worker)->Signal(SIGTERM);
  EXPECT_EQ((*worker)->Wait(10).value_or(-1), 0) << (*worker)->Stderr();
}

}  // namespace
}  // namespace testing
}  // namespace tessera
