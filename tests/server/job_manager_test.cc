#include "server/job_manager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "frontend/workloads.h"
#include "ir/printer.h"
#include "ir/structural_hash.h"
#include "model/load.h"
#include "server/server.h"
#include "tests/database/postgres_cluster.h"
#include "tests/server/server_testing.h"
#include "tests/testing/wait_until.h"

namespace tessera {
namespace {

using testing::Context;
using testing::TempDir;
using testing::WaitUntil;

TEST(ParseJobTasksTest, MergesDuplicatesAndNamesLikeTune) {
  std::vector<TuneTaskSpec> tasks =
      ParseJobTasks({"GMM:M=32,N=32,K=32", "C2D", "GMM:M=32,N=32,K=32", "GMM:M=64"}).value();
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(tasks[0].func.name(), "gmm");
  EXPECT_DOUBLE_EQ(tasks[0].weight, 2);
  EXPECT_EQ(tasks[0].name, "GMM(B=1,M=32,N=32,K=32) float32");
  EXPECT_EQ(tasks[1].func.name(), "c2d");
  EXPECT_EQ(tasks[2].func.name(), "gmm_1");
  absl::StatusOr<std::vector<TuneTaskSpec>> bad = ParseJobTasks({"GMM", "NOPE"});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().rfind("workloads[1]: ", 0), 0u) << bad.status();
}

TEST(ParseJobTasksTest, TakesIrText) {
  PrimFunc f = MakeWorkload("GMM", {{"M", 16}, {"N", 16}, {"K", 16}}).value().WithName("mine");
  std::vector<TuneTaskSpec> tasks = ParseJobTasks({PrintFunc(f)}).value();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].func.name(), "mine");
}

std::string Submit(TuningServer* server, int trials, int per_iter, bool runoff = false) {
  JobSpec spec;
  spec.runoff = runoff;
  spec.workloads = {"GMM:M=32,N=32,K=32"};
  spec.target = "cpu";
  spec.max_trials_global = trials;
  spec.num_trials_per_iter = per_iter;
  spec.cost_model = "random";
  spec.seed = 3;
  return server->jobs()->Submit(spec).value();
}

// Records of `job`: count, and distinct traces.
std::pair<size_t, size_t> Records(Database* db, const std::string& job) {
  size_t n = 0;
  std::set<std::string> traces;
  std::vector<TuningRecord> records = db->AllRecords().value();
  for (const TuningRecord& r : records) {
    if (r.job_id != job) continue;
    ++n;
    traces.insert(r.trace_json);
  }
  return {n, traces.size()};
}

// A server started on `options` after a restart, with `job` run to its end by a test worker
// pulling `per_pull` candidates at a time.
struct Finished {
  std::unique_ptr<TuningServer> server;
  JobSnapshot snap;
  int measured = 0;  // candidates the worker measured
};
Finished RunToTheEnd(const ServerOptions& options, const std::string& job, int per_pull) {
  Finished out;
  out.server = TuningServer::Start(options).value();
  testing::TestWorker worker(out.server->address());
  EXPECT_TRUE(worker.Register().ok());
  worker.Start(per_pull);
  EXPECT_TRUE(WaitUntil([&] { return IsFinal(out.server->jobs()->Get(job).value().row.state); }));
  worker.Stop();
  out.snap = out.server->jobs()->Get(job).value();
  out.measured = worker.measured();
  return out;
}

TEST(JobManagerTest, RestartResumesWithoutMeasuringTwice) {
  TempDir dir;
  ServerOptions options = testing::TestServerOptions(dir);
  std::string job;
  {
    auto server = TuningServer::Start(options).value();
    testing::TestWorker worker(server->address());
    ASSERT_TRUE(worker.Register().ok());
    job = Submit(server.get(), 16, 8);
    // 3 of the first batch reported, 3 leased and never reported, 2 still queued.
    ASSERT_EQ(worker.RunOnce(3, 30).value(), 3);
    ASSERT_EQ(worker.PullOnly(3, 30).value().candidates_size(), 3);
    server->Shutdown();
    EXPECT_EQ(server->store()->GetJob(job).value().state, JobState::kRunning);
  }
  {
    auto store = JobStore::Open(options.db_path + ".state").value();
    std::vector<StoredCandidate> pending = store->PendingBatch(job).value();
    // The first batch holds the default schedule besides the 8 searched candidates.
    ASSERT_GE(pending.size(), 8u);
    int done = 0;
    for (const StoredCandidate& c : pending) done += c.result.has_value();
    EXPECT_EQ(done, 3);
  }
  Finished run = RunToTheEnd(options, job, 4);
  std::unique_ptr<TuningServer>& server = run.server;
  const JobSnapshot& snap = run.snap;
  EXPECT_EQ(snap.row.state, JobState::kSucceeded) << snap.row.error;
  EXPECT_EQ(snap.row.trials, 16);
  EXPECT_EQ(run.measured, 13) << "the 3 reported before the restart are not measured again";
  EXPECT_EQ(Records(server->database(), job), std::make_pair(size_t{16}, size_t{16}));
  EXPECT_TRUE(server->store()->PendingBatch(job).value().empty());

  // After one more restart the ended job's tasks are read back from its records.
  server->Shutdown();
  server.reset();
  server = TuningServer::Start(options).value();
  JobSnapshot ended = server->jobs()->Get(job).value();
  EXPECT_EQ(ended.row.state, JobState::kSucceeded);
  ASSERT_EQ(ended.tasks.size(), 1u);
  EXPECT_EQ(ended.tasks[0].summary.trials, 16);
  EXPECT_TRUE(ended.tasks[0].summary.best_secs.has_value());
  EXPECT_EQ(ended.tasks[0].summary.best_secs, snap.tasks[0].summary.best_secs);
  EXPECT_TRUE(ended.tasks[0].finished);
}

TEST(JobManagerTest, RestoredBatchCommittedBeforeTheCrashIsNotCommittedTwice) {
  TempDir dir;
  ServerOptions options = testing::TestServerOptions(dir);
  std::string job;
  std::vector<TuningRecord> first;
  {
    auto server = TuningServer::Start(options).value();
    testing::TestWorker worker(server->address());
    ASSERT_TRUE(worker.Register().ok());
    job = Submit(server.get(), 16, 8);
    int n = worker.RunOnce(64, 30).value();
    ASSERT_GE(n, 8);
    ASSERT_TRUE(WaitUntil([&] { return server->jobs()->Get(job).value().row.trials == n; }));
    server->Shutdown();
    first = server->database()->AllRecords().value();
    ASSERT_EQ(first.size(), static_cast<size_t>(n));
  }
  {
    // As if the server died between committing batch 1 and deleting it from the state.
    auto store = JobStore::Open(options.db_path + ".state").value();
    ASSERT_TRUE(store->DeleteBatch(job).ok());
    std::vector<NewCandidate> rows;
    for (const TuningRecord& r : first) rows.push_back({r.trace_json, "", ""});
    std::vector<int64_t> ids = store->AddBatch(job, 0, rows).value();
    for (size_t i = 0; i < ids.size(); ++i) {
      ReportedOutcome outcome;
      outcome.outcome.run_secs = first[i].run_secs;
      outcome.outcome.error = first[i].error;
      ASSERT_TRUE(store->SetResult(ids[i], CandidateState::kDone, outcome).ok());
    }
  }
  auto server = TuningServer::Start(options).value();
  testing::TestWorker worker(server->address());
  ASSERT_TRUE(worker.Register().ok());
  worker.Start(8);
  ASSERT_TRUE(WaitUntil([&] { return IsFinal(server->jobs()->Get(job).value().row.state); }));
  worker.Stop();
  EXPECT_EQ(server->jobs()->Get(job).value().row.state, JobState::kSucceeded);
  EXPECT_EQ(worker.measured(), 16 - static_cast<int>(first.size()));
  EXPECT_EQ(Records(server->database(), job), std::make_pair(size_t{16}, size_t{16}));
}

// A runoff's pending batch (rows without a trace) found after a restart is dropped, not
// restored as a batch of the search: the search goes on, and the runoff runs again at its end.
TEST(JobManagerTest, APendingRunoffBatchIsDroppedAfterARestart) {
  TempDir dir;
  ServerOptions options = testing::TestServerOptions(dir);
  std::string job;
  {
    auto server = TuningServer::Start(options).value();
    testing::TestWorker worker(server->address());
    ASSERT_TRUE(worker.Register().ok());
    job = Submit(server.get(), 16, 8, /*runoff=*/true);
    ASSERT_GE(worker.RunOnce(8, 30).value(), 8);
    ASSERT_TRUE(WaitUntil([&] { return server->jobs()->Get(job).value().row.trials == 8; }));
    server->Shutdown();
  }
  {
    // As if the server died while a worker measured a runoff: its rows have no trace.
    auto store = JobStore::Open(options.db_path + ".state").value();
    ASSERT_TRUE(store->DeleteBatch(job).ok());
    std::vector<NewCandidate> rows(4, NewCandidate{"", "0123", "{}"});
    ASSERT_TRUE(store->AddBatch(job, 0, rows).ok());
  }
  Finished run = RunToTheEnd(options, job, 8);
  std::unique_ptr<TuningServer>& server = run.server;
  EXPECT_EQ(run.snap.row.state, JobState::kSucceeded) << run.snap.row.error;
  EXPECT_EQ(run.snap.row.trials, 16);
  // 16 programs searched; a runoff round adds one record of two of them.
  const std::pair<size_t, size_t> records = Records(server->database(), job);
  EXPECT_EQ(records.second, 16u);
  EXPECT_EQ((records.first - 16) % 2, 0u);
  EXPECT_LE(records.first, 16u + 6u);
  EXPECT_TRUE(server->store()->PendingBatch(job).value().empty());
}

// A job's rule parameters are checked when it is submitted (a bad one fails the submission,
// naming the rule or parameter) and stored with the job.
TEST(JobManagerTest, RuleParamsAreCheckedAtSubmissionAndStoredWithTheJob) {
  TempDir dir;
  auto server = TuningServer::Start(testing::TestServerOptions(dir)).value();
  JobSpec spec;
  spec.workloads = {"GMM:M=32,N=32,K=32"};
  spec.target = "cpu";
  spec.max_trials_global = 8;
  spec.rule_params = RuleParamsFromText("{MultiLevelTiling");
  absl::StatusOr<std::string> bad = server->jobs()->Submit(spec);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "rule_params: not a JSON object of rule names");
  spec.rule_params = RuleParamsFromText(R"({"MultiLevelTilling": {}})");
  bad = server->jobs()->Submit(spec);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().rfind(
                "rule_params: rule params: 'MultiLevelTilling' is not a default rule on cpu", 0),
            0u)
      << bad.status();
  spec.rule_params = RuleParamsFromText(R"({"MultiLevelTiling": {"tile": 1}})");
  bad = server->jobs()->Submit(spec);
  EXPECT_NE(bad.status().message().find("unknown parameter 'tile'"), std::string::npos)
      << bad.status();

  spec.rule_params = RuleParamsFromText(R"({"MultiLevelTiling": {"max_innermost_factor": 4}})");
  absl::StatusOr<std::string> job = server->jobs()->Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(server->store()->GetJob(*job).value().spec.rule_params, spec.rule_params);
  EXPECT_TRUE(server->jobs()->Cancel(*job).ok());
}

// A model job is stored as the tasks `tessera tune MODEL` extracts (same names and structural
// hashes, so records key alike) with their weights: after a restart the job has them without
// the model's bytes.
TEST(JobManagerTest, AModelJobStoresTheTasksOfALocalLoadWithTheirWeights) {
  const std::string path = std::string(TESSERA_SOURCE_DIR) + "/tests/frontend/data/cnn.onnx";
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  const std::string model = bytes.str();
  TempDir dir;
  auto server = TuningServer::Start(testing::TestServerOptions(dir)).value();
  JobSpec spec;
  spec.target = "cpu";
  spec.max_trials_global = 8;
  spec.workloads = {"GMM"};
  ModelUpload upload{&model, "cnn.onnx", {}};
  absl::StatusOr<std::string> both = server->jobs()->Submit(spec, &upload);
  EXPECT_EQ(both.status().message(), "model: give workloads or a model, not both");
  spec.workloads.clear();
  absl::StatusOr<std::string> job = server->jobs()->Submit(spec, &upload);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(server->jobs()->Cancel(*job).ok());
  const JobSpec stored = server->store()->GetJob(*job).value().spec;
  EXPECT_EQ(stored.model, "cnn.onnx");
  std::vector<TuneTaskSpec> tasks = JobTasks(stored).value();
  LoadedModel local = LoadModel(path).value();
  ASSERT_EQ(tasks.size(), local.tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    EXPECT_EQ(tasks[i].func.name(), local.tasks[i].name);
    EXPECT_EQ(StructuralHashHex(tasks[i].func), StructuralHashHex(local.tasks[i].func));
    EXPECT_DOUBLE_EQ(tasks[i].weight, local.tasks[i].weight);
  }
}

TEST(JobManagerTest, CancelStopsAJobMidBatch) {
  TempDir dir;
  auto server = TuningServer::Start(testing::TestServerOptions(dir)).value();
  testing::TestWorker worker(server->address());
  ASSERT_TRUE(worker.Register().ok());
  std::string job = Submit(server.get(), 16, 8);
  ASSERT_EQ(worker.RunOnce(2, 30).value(), 2);
  JobSnapshot snap = server->jobs()->Cancel(job).value();
  EXPECT_EQ(snap.row.state, JobState::kCancelled);
  EXPECT_TRUE(server->store()->PendingBatch(job).value().empty());
  EXPECT_EQ(server->store()->GetJob(job).value().state, JobState::kCancelled);
  EXPECT_EQ(Records(server->database(), job).first, 0u) << "a cancelled batch is not committed";
  EXPECT_EQ(worker.RunOnce(8, 0.2).value(), 0) << "nothing left to pull";
  // Cancelling again leaves it as it is.
  EXPECT_EQ(server->jobs()->Cancel(job).value().row.state, JobState::kCancelled);
}

// Two servers on one PostgreSQL database (records and state): claims decide which runs a job.
// No workers: the jobs wait to resolve their bare target "cpu", which is enough to see who
// runs them (a job run here says what it waits for; one read from the rows does not).
class SharedJobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    testing::PostgresCluster* cluster = testing::PostgresCluster::Get(&why);
    if (cluster == nullptr) GTEST_SKIP() << "PostgreSQL: " << why;
    url_ = cluster->NewDatabase().value();
  }
  std::unique_ptr<TuningServer> Start() {
    ServerOptions options = testing::TestServerOptions(dir_);
    options.db_path = url_;  // the state goes to the same database
    options.jobs.claim_seconds = 0.6;
    absl::StatusOr<std::unique_ptr<TuningServer>> server = TuningServer::Start(options);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }
  static bool RunsHere(TuningServer* server, const std::string& job) {
    absl::StatusOr<JobSnapshot> snap = server->jobs()->Get(job);
    return snap.ok() && !snap->waiting_for.empty();
  }
  TempDir dir_;
  std::string url_;
};

TEST_F(SharedJobsTest, TheSubmittingServerRunsAJobAndAnotherTakesItOverWhenItStops) {
  std::unique_ptr<TuningServer> a = Start();
  std::unique_ptr<TuningServer> b = Start();
  ASSERT_TRUE(a && b);
  std::string job = Submit(a.get(), 8, 4);
  ASSERT_TRUE(WaitUntil([&] { return RunsHere(a.get(), job); }, 10));
  // b sees the job in the rows, through several claim periods, and leaves it to a.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(RunsHere(b.get(), job));
  EXPECT_EQ(b->jobs()->Get(job).value().row.state, JobState::kQueued);
  EXPECT_EQ(b->jobs()->List({}, 10).value().size(), 1u);
  // a stops (its claims released): b resumes the job at its next claim round.
  a->Shutdown();
  EXPECT_TRUE(WaitUntil([&] { return RunsHere(b.get(), job); }, 10));
}

TEST_F(SharedJobsTest, CancelOnAnotherServerStopsTheOwner) {
  std::unique_ptr<TuningServer> a = Start();
  std::unique_ptr<TuningServer> b = Start();
  ASSERT_TRUE(a && b);
  std::string job = Submit(a.get(), 8, 4);
  ASSERT_TRUE(WaitUntil([&] { return RunsHere(a.get(), job); }, 10));
  JobSnapshot cancelled = b->jobs()->Cancel(job).value();
  EXPECT_EQ(cancelled.row.state, JobState::kCancelled);
  // a notices at its next claim renewal, stops the job's thread and answers from the rows.
  EXPECT_TRUE(WaitUntil([&] { return !RunsHere(a.get(), job); }, 10));
  EXPECT_EQ(a->jobs()->Get(job).value().row.state, JobState::kCancelled);
  bool ended = false;
  ASSERT_TRUE(a->jobs()->Events(job, 0, 5, &ended).ok());
  EXPECT_TRUE(ended);
  // Cancelled is final: no server claims it again.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_FALSE(RunsHere(a.get(), job));
  EXPECT_FALSE(RunsHere(b.get(), job));
}

}  // namespace
}  // namespace tessera
