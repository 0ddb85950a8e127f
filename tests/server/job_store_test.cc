// The JobStore contract, run against both stores (a typed suite): SQLite in a temporary file
// and PostgreSQL in a fresh database of the test process's throw-away cluster
// (tests/database/postgres_cluster.h; skipped, saying why, where its binaries are missing).
// Then what only the shared (PostgreSQL) store has: claims and the queue in rows.
#include "server/job_store.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "tests/database/postgres_cluster.h"
#include "tests/server/server_testing.h"

namespace tessera {
namespace {

using testing::TempDir;

// Where a store lives; Reopen opens the same database again (a server restart).
struct SqliteState {
  static bool Available(std::string* /*why*/) { return true; }
  explicit SqliteState(const TempDir& dir) : path(dir.Path("state.db")) {}
  std::string path;
};

struct PostgresState {
  static bool Available(std::string* why) { return testing::PostgresCluster::Get(why) != nullptr; }
  explicit PostgresState(const TempDir& /*dir*/) {
    std::string why;
    absl::StatusOr<std::string> url = testing::PostgresCluster::Get(&why)->NewDatabase();
    EXPECT_TRUE(url.ok()) << url.status();
    path = url.value_or("");
  }
  std::string path;
};

template <typename Kind>
class JobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why; !Kind::Available(&why)) GTEST_SKIP() << "PostgreSQL: " << why;
    state_ = std::make_unique<Kind>(dir_);
  }
  std::unique_ptr<JobStore> Open() {
    absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(state_->path);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }
  TempDir dir_;
  std::unique_ptr<Kind> state_;
};

using StoreKinds = ::testing::Types<SqliteState, PostgresState>;
TYPED_TEST_SUITE(JobStoreTest, StoreKinds);

JobSpec Spec() {
  JobSpec spec;
  spec.workloads = {"GMM:M=32,N=32,K=32", "C2D"};
  spec.target = "cpu";
  spec.max_trials = 16;
  spec.priority = 3;
  spec.seed = 7;
  spec.verify = false;
  spec.name = "nightly";
  return spec;
}

std::vector<NewCandidate> Candidates(int n) {
  std::vector<NewCandidate> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({"{\"trace\": " + std::to_string(i) + "}", "hash" + std::to_string(i), "{}"});
  }
  return out;
}

TYPED_TEST(JobStoreTest, JobsSurviveReopen) {
  {
    auto store = this->Open();
    JobRow a = store->CreateJob(Spec(), 100).value();
    JobRow b = store->CreateJob(Spec(), 101).value();
    EXPECT_EQ(a.id, "job-1");
    EXPECT_EQ(b.id, "job-2");
    ASSERT_TRUE(store->SetTarget(a.id, "cpu -cores=2 -vector_bits=512", 102).ok());
    ASSERT_TRUE(store->SetState(a.id, JobState::kFailed, "boom", 103).ok());
    ASSERT_TRUE(store->SetTrials(b.id, 9, 104).ok());
  }
  auto store = this->Open();
  std::vector<JobRow> jobs = store->ListJobs().value();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].id, "job-2");  // newest first
  EXPECT_EQ(jobs[0].trials, 9);
  EXPECT_EQ(jobs[0].state, JobState::kQueued);
  JobRow a = store->GetJob("job-1").value();
  EXPECT_EQ(a.state, JobState::kFailed);
  EXPECT_EQ(a.error, "boom");
  EXPECT_EQ(a.target, "cpu -cores=2 -vector_bits=512");
  EXPECT_EQ(a.spec.workloads, Spec().workloads);
  EXPECT_EQ(a.spec.priority, 3);
  EXPECT_EQ(a.spec.seed, 7);
  EXPECT_FALSE(a.spec.verify);
  EXPECT_EQ(a.spec.name, "nightly");
  EXPECT_DOUBLE_EQ(a.submitted_at, 100);
  EXPECT_EQ(store->GetJob("job-9").status().code(), absl::StatusCode::kNotFound);
  // Ids keep counting after a reopen.
  EXPECT_EQ(store->CreateJob(Spec(), 105).value().id, "job-3");
}

TYPED_TEST(JobStoreTest, PendingBatchKeepsResultsAndRequeuesLeasesOnReopen) {
  std::vector<int64_t> ids;
  {
    auto store = this->Open();
    std::string job = store->CreateJob(Spec(), 1).value().id;
    ids = store->AddBatch(job, /*task=*/1, Candidates(4)).value();
    ASSERT_EQ(ids.size(), 4u);
    ASSERT_TRUE(store->MarkLeased({ids[0], ids[1]}, "lease-a").ok());
    ReportedOutcome r;
    r.outcome.run_secs = {0.5, 0.25};
    r.outcome.verified = true;
    r.provenance.worker_id = "worker-1";
    r.provenance.device = "test cpu";
    ASSERT_TRUE(store->SetResult(ids[0], CandidateState::kDone, r).ok());
    ASSERT_TRUE(store->MarkLeased({ids[2]}, "lease-b").ok());
    ASSERT_TRUE(store->MarkRequeued({ids[2]}).ok());
  }
  auto store = this->Open();
  std::vector<StoredCandidate> batch = store->PendingBatch("job-1").value();
  ASSERT_EQ(batch.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(batch[i].position, i);
    EXPECT_EQ(batch[i].task, 1);
    EXPECT_EQ(batch[i].trace_json, Candidates(4)[i].trace_json);
  }
  EXPECT_EQ(batch[0].state, CandidateState::kDone);
  ASSERT_TRUE(batch[0].result.has_value());
  EXPECT_EQ(batch[0].result->outcome.run_secs, (std::vector<double>{0.5, 0.25}));
  EXPECT_TRUE(batch[0].result->outcome.verified);
  EXPECT_EQ(batch[0].result->provenance.worker_id, "worker-1");
  EXPECT_EQ(batch[0].result->provenance.device, "test cpu");
  if (store->shared() == nullptr) {
    // The lease of candidate 1 died with the process: queued again, no attempt counted.
    EXPECT_EQ(batch[1].state, CandidateState::kQueued);
    EXPECT_EQ(batch[1].lease_id, "");
  } else {
    // Shared: another server may hold the lease; it expires instead.
    EXPECT_EQ(batch[1].state, CandidateState::kLeased);
    EXPECT_EQ(batch[1].lease_id, "lease-a");
  }
  EXPECT_EQ(batch[1].attempts, 0);
  EXPECT_EQ(batch[2].attempts, 1);
  EXPECT_FALSE(batch[3].result.has_value());
}

TYPED_TEST(JobStoreTest, OneBatchPerJobUntilDeleted) {
  auto store = this->Open();
  std::string job = store->CreateJob(Spec(), 1).value().id;
  ASSERT_TRUE(store->AddBatch(job, 0, Candidates(2)).ok());
  EXPECT_EQ(store->AddBatch(job, 0, Candidates(2)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store->DeleteBatch(job).ok());
  EXPECT_TRUE(store->PendingBatch(job).value().empty());
  EXPECT_TRUE(store->AddBatch(job, 0, Candidates(3)).ok());
}

TYPED_TEST(JobStoreTest, QuarantinedCountsItsAttempt) {
  auto store = this->Open();
  std::string job = store->CreateJob(Spec(), 1).value().id;
  int64_t id = store->AddBatch(job, 0, Candidates(1)).value()[0];
  ReportedOutcome lost;
  lost.outcome.error = MeasureError::kWorkerLost;
  lost.outcome.error_msg = "worker_lost: quarantined";
  ASSERT_TRUE(store->SetResult(id, CandidateState::kQuarantined, lost).ok());
  StoredCandidate c = store->PendingBatch(job).value()[0];
  EXPECT_EQ(c.state, CandidateState::kQuarantined);
  EXPECT_EQ(c.attempts, 1);
  EXPECT_EQ(c.result->outcome.error, MeasureError::kWorkerLost);
}

TEST(SqliteJobStoreTest, RefusesAFileThatIsNotADatabase) {
  TempDir dir;
  std::string path = dir.Path("junk.db");
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("this is not sqlite, not at all, just text padding the header out", f);
  std::fclose(f);
  absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(path), std::string::npos) << store.status();
}

// --- The shared store: claims and the queue in rows (PostgreSQL only) ---

class SharedQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why; !PostgresState::Available(&why)) GTEST_SKIP() << "PostgreSQL: " << why;
    state_ = std::make_unique<PostgresState>(dir_);
  }
  // Each call is another connection, as another server would hold.
  std::unique_ptr<JobStore> Open() { return JobStore::Open(state_->path).value(); }
  TempDir dir_;
  std::unique_ptr<PostgresState> state_;
};

TEST_F(SharedQueueTest, TwoServersLeaseDisjointCandidatesAndLoseNone) {
  std::unique_ptr<JobStore> a = Open();
  std::unique_ptr<JobStore> b = Open();
  ASSERT_NE(a->shared(), nullptr);
  std::string job = a->CreateJob(Spec(), 1).value().id;
  std::vector<int64_t> ids = a->AddBatch(job, 0, Candidates(60)).value();
  ASSERT_TRUE(a->shared()->SetBatchContext(job, "cpu", 0, "{\"ctx\": 1}").ok());
  // Eight pullers, alternating between the two stores' connections, lease 3 at a time.
  std::mutex mu;
  std::vector<int64_t> leased;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      SharedQueue* q = (t % 2 ? a : b)->shared();
      for (int n = 0; n < 100; ++n) {
        std::string lease_id = "lease-" + std::to_string(t) + "-" + std::to_string(n);
        absl::StatusOr<std::optional<SharedLease>> got = q->Lease("cpu", "w", lease_id, 3, 1, 100);
        ASSERT_TRUE(got.ok()) << got.status();
        if (!got->has_value()) return;
        EXPECT_EQ((*got)->job_id, job);
        EXPECT_EQ((*got)->context_json, "{\"ctx\": 1}");
        std::vector<std::pair<int64_t, ReportedOutcome>> reports;
        for (const LeasedCandidate& c : (*got)->candidates) reports.push_back({c.candidate_id, {}});
        EXPECT_EQ(q->ReportLease(lease_id, reports).value(), static_cast<int>(reports.size()));
        std::lock_guard<std::mutex> lock(mu);
        for (const LeasedCandidate& c : (*got)->candidates) leased.push_back(c.candidate_id);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::multiset<int64_t> got(leased.begin(), leased.end());
  EXPECT_EQ(got, std::multiset<int64_t>(ids.begin(), ids.end()));
  BatchCounts counts = b->shared()->CountBatch(job).value();
  EXPECT_EQ(counts.finished, 60);
  EXPECT_EQ(counts.total, 60);
  // Another target's workers get nothing.
  EXPECT_FALSE(a->shared()->Lease("cuda", "w", "lease-x", 3, 1, 100).value().has_value());
}

TEST_F(SharedQueueTest, ReportsCountOnlyUnderALiveLeaseAndExpiryRequeuesThenQuarantines) {
  std::unique_ptr<JobStore> store = Open();
  SharedQueue* q = store->shared();
  std::string job = store->CreateJob(Spec(), 1).value().id;
  std::vector<int64_t> ids = store->AddBatch(job, 0, Candidates(2)).value();
  ASSERT_TRUE(q->SetBatchContext(job, "cpu", 0, "{}").ok());
  SharedLease first = q->Lease("cpu", "w1", "lease-1", 8, 10, 20).value().value();
  ASSERT_EQ(first.candidates.size(), 2u);
  EXPECT_EQ(first.candidates[0].candidate_id, ids[0]);  // in batch order
  EXPECT_EQ(q->ReportLease("lease-other", {{ids[0], {}}}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(q->RenewLease("lease-1", 30).value());
  EXPECT_EQ(q->LeasesByWorker().value().at("w1").leases, 1);
  EXPECT_EQ(q->LeasesByWorker().value().at("w1").candidates, 2);
  EXPECT_EQ(q->ExpireLeases(25, /*max_attempts=*/2).value().leases, 0) << "renewed until 30";
  ExpiredLeases expired = q->ExpireLeases(31, 2).value();
  EXPECT_EQ(expired.leases, 1);
  EXPECT_EQ(expired.requeued, 2);
  EXPECT_TRUE(expired.quarantined.empty());
  EXPECT_TRUE(q->LeasesByWorker().value().empty());
  EXPECT_EQ(q->ReportLease("lease-1", {{ids[0], {}}}).status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "an expired lease's report changes nothing";
  EXPECT_FALSE(q->RenewLease("lease-1", 50).value());
  std::vector<StoredCandidate> rows = store->PendingBatch(job).value();
  EXPECT_EQ(rows[0].state, CandidateState::kQueued);
  EXPECT_EQ(rows[0].attempts, 1);
  // Leased again and lost again: the second expiry quarantines (max_attempts 2).
  SharedLease second = q->Lease("cpu", "w2", "lease-2", 1, 40, 45).value().value();
  ASSERT_EQ(second.candidates.size(), 1u);
  expired = q->ExpireLeases(46, 2).value();
  EXPECT_EQ(expired.leases, 1);
  EXPECT_EQ(expired.requeued, 0);
  EXPECT_EQ(expired.quarantined, (std::map<std::string, int>{{"cpu", 1}}));
  rows = store->PendingBatch(job).value();
  EXPECT_EQ(rows[0].state, CandidateState::kQuarantined);
  ASSERT_TRUE(rows[0].result.has_value());
  EXPECT_EQ(rows[0].result->outcome.error, MeasureError::kWorkerLost);
  EXPECT_EQ(rows[0].result->provenance.worker_id, "w2");
  // A returned lease goes back without an attempt counted.
  SharedLease third = q->Lease("cpu", "w3", "lease-3", 8, 50, 60).value().value();
  ASSERT_EQ(third.candidates.size(), 1u);
  ASSERT_TRUE(q->ReturnLease("lease-3").ok());
  EXPECT_EQ(store->PendingBatch(job).value()[1].attempts, 1);
  BatchCounts counts = q->CountBatch(job).value();
  EXPECT_EQ(counts.queued, 1);
  EXPECT_EQ(counts.finished, 1);
  // DeleteBatch drops the context too: nothing is leasable any more.
  ASSERT_TRUE(store->DeleteBatch(job).ok());
  EXPECT_FALSE(q->Lease("cpu", "w3", "lease-4", 8, 60, 70).value().has_value());
}

TEST_F(SharedQueueTest, AJobsClaimPassesToAnotherServerOnlyWhenItExpires) {
  std::unique_ptr<JobStore> a = Open();
  std::unique_ptr<JobStore> b = Open();
  std::string job = a->CreateJob(Spec(), 1).value().id;
  EXPECT_TRUE(a->shared()->ClaimJob(job, "server-a", 100, 130).value());
  EXPECT_FALSE(b->shared()->ClaimJob(job, "server-b", 101, 131).value());
  EXPECT_TRUE(b->shared()->ClaimJobs("server-b", 120, 150, 16).value().empty());
  EXPECT_EQ(a->shared()->RenewClaims("server-a", 160).value(), std::vector<std::string>{job});
  EXPECT_TRUE(b->shared()->ClaimJobs("server-b", 150, 180, 16).value().empty()) << "renewed";
  // Server a stops renewing: after its claim expires, b takes the job.
  EXPECT_EQ(b->shared()->ClaimJobs("server-b", 161, 190, 16).value(),
            std::vector<std::string>{job});
  EXPECT_TRUE(a->shared()->RenewClaims("server-a", 200).value().empty());
  // Ended jobs are nobody's to claim; released claims are anybody's at once.
  std::string done = a->CreateJob(Spec(), 2).value().id;
  ASSERT_TRUE(a->SetState(done, JobState::kSucceeded, "", 3).ok());
  ASSERT_TRUE(b->shared()->ReleaseClaims("server-b").ok());
  EXPECT_EQ(a->shared()->ClaimJobs("server-a", 170, 200, 16).value(),
            std::vector<std::string>{job});
}

// Submit creates the row, then claims it: another server's claim round in between leaves a
// fresh job to its submitter for one claim period, and takes it only after that.
TEST_F(SharedQueueTest, AFreshJobIsLeftToItsSubmitterForOneClaimPeriod) {
  std::unique_ptr<JobStore> a = Open();
  std::unique_ptr<JobStore> b = Open();
  std::string job = a->CreateJob(Spec(), 100).value().id;
  EXPECT_TRUE(b->shared()->ClaimJobs("server-b", 110.5, 140.5, 16).value().empty());
  EXPECT_EQ(b->shared()->ClaimJobs("server-b", 131.5, 161.5, 16).value(),
            std::vector<std::string>{job})
      << "its submitter never claimed it";
  EXPECT_FALSE(a->shared()->ClaimJob(job, "server-a", 132, 162).value());
}

TEST_F(SharedQueueTest, WorkerTargetsPublishedByAnyServerCountUntilTheyGoStale) {
  std::unique_ptr<JobStore> a = Open();
  std::unique_ptr<JobStore> b = Open();
  ASSERT_TRUE(
      a->shared()->PublishWorkerTargets("a", {"cpu -cores=2", "cuda -arch=sm_80"}, 100).ok());
  ASSERT_TRUE(b->shared()->PublishWorkerTargets("b", {"cpu -cores=2"}, 105).ok());
  EXPECT_EQ(b->shared()->LiveWorkerTargets(90).value(),
            (std::vector<std::string>{"cpu -cores=2", "cuda -arch=sm_80"}));
  EXPECT_EQ(b->shared()->LiveWorkerTargets(101).value(), std::vector<std::string>{"cpu -cores=2"});
  // Publishing again refreshes the rows.
  ASSERT_TRUE(a->shared()->PublishWorkerTargets("a", {"cuda -arch=sm_80"}, 110).ok());
  EXPECT_EQ(b->shared()->LiveWorkerTargets(106).value(),
            std::vector<std::string>{"cuda -arch=sm_80"});
}

TEST(SqliteJobStoreTest, IsNotShared) {
  TempDir dir;
  EXPECT_EQ(JobStore::Open(dir.Path("state.db")).value()->shared(), nullptr);
}

}  // namespace
}  // namespace tessera
