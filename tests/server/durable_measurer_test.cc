#include "server/durable_measurer.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "tests/server/server_testing.h"
#include "tests/testing/scripted_measurer.h"
#include "worker/host.h"

namespace tessera {
namespace {

using testing::ScriptedMeasurer;
using testing::TempDir;

constexpr char kJob[] = "job-1";

// A job of one small task, committing as kJob to `db`: started again on the same database it
// resumes (tuner/tuning_job.h).
std::unique_ptr<TuningJob> StartJob(Database* db) {
  TuneOptions options;
  options.target = *ResolveTarget("cpu");
  options.max_trials_global = 24;
  options.num_trials_per_iter = 8;
  options.cost_model = "random";
  options.seed = 5;
  std::vector<TuneTaskSpec> tasks = {
      {"gmm", *MakeWorkload("GMM", {{"M", 32}, {"N", 32}, {"K", 32}}, "float32"), 1}};
  return TuningJob::Start(tasks, db, options, kJob).value();
}

std::vector<std::string> Traces(const JobBatch& batch) {
  std::vector<std::string> traces;
  for (const MeasureCandidate& c : batch.candidates) traces.push_back(c.sch.trace().ToJson());
  return traces;
}

std::vector<std::string> StoredTraces(JobStore* store) {
  const std::vector<StoredCandidate> pending = store->PendingBatch(kJob).value();
  std::vector<std::string> traces;
  for (const StoredCandidate& c : pending) traces.push_back(c.trace_json);
  return traces;
}

// A state database holding kJob, an empty records database and a scripted inner measurer.
class DurableMeasurerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = JobStore::Open(dir_.Path("state.db")).value();
    ASSERT_EQ(store_->CreateJob(testing::TestJobSpec(), 0).value().id, kJob);
    db_ = NewMemoryDatabase();
  }

  TempDir dir_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<Database> db_;
  ScriptedMeasurer inner_;
};

TEST_F(DurableMeasurerTest, EachBatchIsStoredFromItsProposalUntilItsCommit) {
  std::unique_ptr<TuningJob> job = StartJob(db_.get());
  DurableMeasurer durable(kJob, store_.get(), db_.get(), &inner_);
  std::optional<JobBatch> batch = durable.NextBatch(job.get()).value();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(StoredTraces(store_.get()), Traces(*batch));
  MeasuredBatch measured = durable.Measure(job->RequestFor(*batch)).value();
  ASSERT_EQ(measured.outcomes.size(), batch->candidates.size());
  ASSERT_TRUE(durable.Commit(job.get(), *batch, measured).ok());
  EXPECT_TRUE(store_->PendingBatch(kJob).value().empty());
  EXPECT_EQ(job->trials(), static_cast<int>(batch->candidates.size()));
}

// As if the server died after committing a batch and before deleting it: the next run gets the
// batch back and commits none of its candidates twice.
TEST_F(DurableMeasurerTest, ARestartRestoresThePendingBatchAndCommitsNothingTwice) {
  std::vector<std::string> first;
  {
    std::unique_ptr<TuningJob> job = StartJob(db_.get());
    DurableMeasurer durable(kJob, store_.get(), db_.get(), &inner_);
    std::optional<JobBatch> batch = durable.NextBatch(job.get()).value();
    ASSERT_TRUE(batch.has_value());
    first = Traces(*batch);
    MeasuredBatch measured = durable.Measure(job->RequestFor(*batch)).value();
    ASSERT_TRUE(job->Commit(*batch, measured).ok());  // committed; the stored batch stays
  }
  const int64_t records = db_->NumRecords().value();
  ASSERT_EQ(records, static_cast<int64_t>(first.size()));

  std::unique_ptr<TuningJob> job = StartJob(db_.get());
  DurableMeasurer durable(kJob, store_.get(), db_.get(), &inner_);
  std::optional<JobBatch> restored = durable.NextBatch(job.get()).value();
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(Traces(*restored), first);
  MeasuredBatch measured = durable.Measure(job->RequestFor(*restored)).value();
  ASSERT_TRUE(durable.Commit(job.get(), *restored, measured).ok());
  EXPECT_EQ(db_->NumRecords().value(), records) << "no candidate committed twice";
  EXPECT_TRUE(store_->PendingBatch(kJob).value().empty());

  // The next batch is a new one, stored in turn.
  std::optional<JobBatch> next = durable.NextBatch(job.get()).value();
  ASSERT_TRUE(next.has_value());
  EXPECT_NE(Traces(*next), first);
  EXPECT_EQ(StoredTraces(store_.get()), Traces(*next));
}

TEST_F(DurableMeasurerTest, ARunoffsPendingBatchIsDroppedForTheSearchsNext) {
  // A runoff's rows carry no trace.
  ASSERT_TRUE(store_->AddBatch(kJob, 0, std::vector<NewCandidate>(2, {"", "0123", "{}"})).ok());
  std::unique_ptr<TuningJob> job = StartJob(db_.get());
  DurableMeasurer durable(kJob, store_.get(), db_.get(), &inner_);
  std::optional<JobBatch> batch = durable.NextBatch(job.get()).value();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(StoredTraces(store_.get()), Traces(*batch));
}

}  // namespace
}  // namespace tessera
