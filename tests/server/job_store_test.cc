// The JobStore contract, run against both stores (a typed suite): SQLite in a temporary file
// and PostgreSQL in a fresh database of the test process's throw-away cluster
// (tests/database/postgres_cluster.h; skipped, saying why, where its binaries are missing).
// Then what only the shared (PostgreSQL) store has: claims and the queue in rows.
#include "server/job_store.h"

#include <gtest/gtest.h>

#include "tests/database/postgres_cluster.h"
#include "tests/server/server_testing.h"

namespace tessera {
namespace {

using testing::TempDir;
using testing::TestCandidates;
using testing::TestJobSpec;

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

TYPED_TEST(JobStoreTest, JobsSurviveReopen) {
  {
    auto store = this->Open();
    JobRow a = store->CreateJob(TestJobSpec(), 100).value();
    JobRow b = store->CreateJob(TestJobSpec(), 101).value();
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
  EXPECT_EQ(a.spec.workloads, TestJobSpec().workloads);
  EXPECT_EQ(a.spec.priority, 3);
  EXPECT_EQ(a.spec.seed, 7);
  EXPECT_FALSE(a.spec.verify);
  EXPECT_EQ(a.spec.name, "nightly");
  EXPECT_DOUBLE_EQ(a.submitted_at, 100);
  EXPECT_EQ(store->GetJob("job-9").status().code(), absl::StatusCode::kNotFound);
  // Ids keep counting after a reopen.
  EXPECT_EQ(store->CreateJob(TestJobSpec(), 105).value().id, "job-3");
}

TYPED_TEST(JobStoreTest, PendingBatchKeepsResultsAndRequeuesLeasesOnReopen) {
  std::vector<int64_t> ids;
  {
    auto store = this->Open();
    std::string job = store->CreateJob(TestJobSpec(), 1).value().id;
    ids = store->AddBatch(job, /*task=*/1, TestCandidates(4)).value();
    ASSERT_EQ(ids.size(), 4u);
    ASSERT_TRUE(store->MarkLeased({ids[0], ids[1]}, "lease-a").ok());
    ReportedOutcome r;
    r.outcome.run_secs = {0.5, 0.25};
    r.outcome.verified = true;
    r.outcome.disturbed = true;
    r.outcome.others_busy_cores = 1.25;
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
    EXPECT_EQ(batch[i].trace_json, TestCandidates(4)[i].trace_json);
  }
  EXPECT_EQ(batch[0].state, CandidateState::kDone);
  ASSERT_TRUE(batch[0].result.has_value());
  EXPECT_EQ(batch[0].result->outcome.run_secs, (std::vector<double>{0.5, 0.25}));
  EXPECT_TRUE(batch[0].result->outcome.verified);
  EXPECT_TRUE(batch[0].result->outcome.disturbed);
  EXPECT_DOUBLE_EQ(batch[0].result->outcome.others_busy_cores, 1.25);
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
  std::string job = store->CreateJob(TestJobSpec(), 1).value().id;
  ASSERT_TRUE(store->AddBatch(job, 0, TestCandidates(2)).ok());
  EXPECT_EQ(store->AddBatch(job, 0, TestCandidates(2)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store->DeleteBatch(job).ok());
  EXPECT_TRUE(store->PendingBatch(job).value().empty());
  EXPECT_TRUE(store->AddBatch(job, 0, TestCandidates(3)).ok());
}

TYPED_TEST(JobStoreTest, QuarantinedCountsItsAttempt) {
  auto store = this->Open();
  std::string job = store->CreateJob(TestJobSpec(), 1).value().id;
  int64_t id = store->AddBatch(job, 0, TestCandidates(1)).value()[0];
  ReportedOutcome lost;
  lost.outcome.error = MeasureError::kWorkerLost;
  lost.outcome.error_msg = "worker_lost: quarantined";
  ASSERT_TRUE(store->SetResult(id, CandidateState::kQuarantined, lost).ok());
  StoredCandidate c = store->PendingBatch(job).value()[0];
  EXPECT_EQ(c.state, CandidateState::kQuarantined);
  EXPECT_EQ(c.attempts, 1);
  EXPECT_EQ(c.result->outcome.error, MeasureError::kWorkerLost);
}

}  // namespace
}  // namespace tessera
