// What only the PostgreSQL job store does (the contract both stores share is in
// job_store_test.cc): it is shared by several servers, so job claims, the candidate queue, its
// leases and the workers' targets are rows. Each test gets a fresh database of the test
// process's throw-away cluster (tests/database/postgres_cluster.h; skipped, saying why, where
// the PostgreSQL binaries are missing).
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "server/job_store.h"
#include "tests/database/postgres_cluster.h"
#include "tests/server/server_testing.h"

namespace tessera {
namespace {

using testing::TestCandidates;
using testing::TestJobSpec;

class SharedQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    testing::PostgresCluster* cluster = testing::PostgresCluster::Get(&why);
    if (cluster == nullptr) GTEST_SKIP() << "PostgreSQL: " << why;
    absl::StatusOr<std::string> url = cluster->NewDatabase();
    ASSERT_TRUE(url.ok()) << url.status();
    url_ = *url;
  }
  // Each call is another connection, as another server would hold.
  std::unique_ptr<JobStore> Open() { return JobStore::Open(url_).value(); }
  std::string url_;
};

TEST_F(SharedQueueTest, TwoServersLeaseDisjointCandidatesAndLoseNone) {
  std::unique_ptr<JobStore> a = Open();
  std::unique_ptr<JobStore> b = Open();
  ASSERT_NE(a->shared(), nullptr);
  std::string job = a->CreateJob(TestJobSpec(), 1).value().id;
  std::vector<int64_t> ids = a->AddBatch(job, 0, TestCandidates(60)).value();
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
  std::string job = store->CreateJob(TestJobSpec(), 1).value().id;
  std::vector<int64_t> ids = store->AddBatch(job, 0, TestCandidates(2)).value();
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

// Every server sweeps expired leases on its own clock. Two sweeping at once must not split a
// lease's candidates between them (each would count that lease): the counts add up exactly.
TEST_F(SharedQueueTest, TwoServersSweepingAtOnceCountEachLeaseOnce) {
  std::unique_ptr<JobStore> a = Open();
  std::unique_ptr<JobStore> b = Open();
  std::string job = a->CreateJob(TestJobSpec(), 1).value().id;
  ASSERT_TRUE(a->AddBatch(job, 0, TestCandidates(40)).ok());
  ASSERT_TRUE(a->shared()->SetBatchContext(job, "cpu", 0, "{}").ok());
  for (int round = 0; round < 2; ++round) {
    for (int n = 0; n < 20; ++n) {
      std::string lease_id = absl::StrCat("lease-", round, "-", n);
      ASSERT_TRUE(
          a->shared()->Lease("cpu", "w", lease_id, 2, 10 * round, 10 * round + 5)->has_value());
    }
    ExpiredLeases by_a, by_b;
    std::thread sweep_a([&] { by_a = a->shared()->ExpireLeases(10 * round + 6, 2).value(); });
    std::thread sweep_b([&] { by_b = b->shared()->ExpireLeases(10 * round + 6, 2).value(); });
    sweep_a.join();
    sweep_b.join();
    EXPECT_EQ(by_a.leases + by_b.leases, 20) << "round " << round;
    EXPECT_EQ(by_a.candidates() + by_b.candidates(), 40) << "round " << round;
  }
  EXPECT_EQ(a->shared()->CountBatch(job).value().finished, 40) << "the second expiry quarantines";
}

TEST_F(SharedQueueTest, AJobsClaimPassesToAnotherServerOnlyWhenItExpires) {
  std::unique_ptr<JobStore> a = Open();
  std::unique_ptr<JobStore> b = Open();
  std::string job = a->CreateJob(TestJobSpec(), 1).value().id;
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
  std::string done = a->CreateJob(TestJobSpec(), 2).value().id;
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
  std::string job = a->CreateJob(TestJobSpec(), 100).value().id;
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

}  // namespace
}  // namespace tessera
