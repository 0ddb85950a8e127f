#include "server/job_store.h"

#include <gtest/gtest.h>

#include "tests/server/server_testing.h"

namespace tessera {
namespace {

using testing::TempDir;

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

TEST(JobStoreTest, JobsSurviveReopen) {
  TempDir dir;
  std::string path = dir.Path("state.db");
  {
    auto store = JobStore::Open(path).value();
    JobRow a = store->CreateJob(Spec(), 100).value();
    JobRow b = store->CreateJob(Spec(), 101).value();
    EXPECT_EQ(a.id, "job-1");
    EXPECT_EQ(b.id, "job-2");
    ASSERT_TRUE(store->SetTarget(a.id, "cpu -cores=2 -vector_bits=512", 102).ok());
    ASSERT_TRUE(store->SetState(a.id, JobState::kFailed, "boom", 103).ok());
    ASSERT_TRUE(store->SetTrials(b.id, 9, 104).ok());
  }
  auto store = JobStore::Open(path).value();
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

TEST(JobStoreTest, PendingBatchKeepsResultsAndRequeuesLeasesOnReopen) {
  TempDir dir;
  std::string path = dir.Path("state.db");
  std::vector<int64_t> ids;
  {
    auto store = JobStore::Open(path).value();
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
  auto store = JobStore::Open(path).value();
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
  // The lease of candidate 1 died with the process: queued again, without an attempt counted.
  EXPECT_EQ(batch[1].state, CandidateState::kQueued);
  EXPECT_EQ(batch[1].lease_id, "");
  EXPECT_EQ(batch[1].attempts, 0);
  EXPECT_EQ(batch[2].attempts, 1);
  EXPECT_FALSE(batch[3].result.has_value());
}

TEST(JobStoreTest, OneBatchPerJobUntilDeleted) {
  TempDir dir;
  auto store = JobStore::Open(dir.Path("state.db")).value();
  std::string job = store->CreateJob(Spec(), 1).value().id;
  ASSERT_TRUE(store->AddBatch(job, 0, Candidates(2)).ok());
  EXPECT_EQ(store->AddBatch(job, 0, Candidates(2)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store->DeleteBatch(job).ok());
  EXPECT_TRUE(store->PendingBatch(job).value().empty());
  EXPECT_TRUE(store->AddBatch(job, 0, Candidates(3)).ok());
}

TEST(JobStoreTest, QuarantinedCountsItsAttempt) {
  TempDir dir;
  auto store = JobStore::Open(dir.Path("state.db")).value();
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

TEST(JobStoreTest, RefusesAFileThatIsNotADatabase) {
  TempDir dir;
  std::string path = dir.Path("junk.db");
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("this is not sqlite, not at all, just text padding the header out", f);
  std::fclose(f);
  absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(path), std::string::npos) << store.status();
}

}  // namespace
}  // namespace tessera
