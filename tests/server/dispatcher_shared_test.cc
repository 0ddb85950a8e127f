// The dispatcher on a shared queue (server/dispatcher_shared.cc) as only several servers show
// it (the suite both dispatchers pass is dispatcher_test.cc): two servers' dispatchers on
// one PostgreSQL database (a fresh database of the test process's throw-away cluster,
// tests/database/postgres_cluster.h; skipped, saying why, where the PostgreSQL binaries are
// missing), each over its own connection, as two `tessera serve` processes would be. Waits
// are bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "server/dispatcher.h"
#include "server/job_store.h"
#include "tests/database/postgres_cluster.h"
#include "tests/server/server_testing.h"
#include "tests/testing/wait_until.h"

namespace tessera {
namespace {

using testing::WaitUntil;

constexpr char kTarget[] = "cpu -cores=2 -vector_bits=256";

WorkerInfo CpuWorker() {
  WorkerInfo w;
  w.host = "test";
  w.devices.push_back(DeviceSpec{kTarget, "test cpu", 0, -1});
  w.software.device = "test cpu";
  return w;
}

class DispatcherSharedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    testing::PostgresCluster* cluster = testing::PostgresCluster::Get(&why);
    if (cluster == nullptr) GTEST_SKIP() << "PostgreSQL: " << why;
    absl::StatusOr<std::string> url = cluster->NewDatabase();
    ASSERT_TRUE(url.ok()) << url.status();
    store_a_ = JobStore::Open(*url).value();
    store_b_ = JobStore::Open(*url).value();
    ASSERT_NE(store_a_->shared(), nullptr);
    DispatcherOptions o;
    o.lease_seconds = 30;
    o.max_wait_seconds = 2;
    o.sweep_interval = 0.05;
    a_ = NewDispatcher(store_a_.get(), o);
    b_ = NewDispatcher(store_b_.get(), o);
  }
  // A job of server a with `n` candidates stored and queued by a's dispatcher.
  std::string QueueOnA(int n, BatchContext context) {
    JobSpec spec = testing::TestJobSpec();
    std::string job = store_a_->CreateJob(spec, 0).value().id;
    ids_ = store_a_->AddBatch(job, context.task, testing::TestCandidates(n)).value();
    std::vector<LeasedCandidate> items;
    for (int64_t id : ids_) items.push_back({id, "{}", "h"});
    EXPECT_TRUE(a_->SubmitBatch(job, 1, std::move(context), std::move(items), {}).ok());
    return job;
  }
  std::unique_ptr<JobStore> store_a_, store_b_;
  std::unique_ptr<Dispatcher> a_, b_;
  std::vector<int64_t> ids_;
};

TEST_F(DispatcherSharedTest, ABatchQueuedByOneServerIsMeasuredThroughTheOther) {
  BatchContext context;
  context.task = 1;
  context.target = kTarget;
  context.workload_json = "{\"workload\": 1}";
  context.best_secs = 0.25;
  context.check_seed = 11;
  context.check_always_hashes = {"0123abcd"};
  context.measure_fully = true;
  context.same_machine = true;
  context.build_timeout_sec = 12.5;
  context.runner.repeat = 7;
  context.runner.timeout_sec = 3;
  std::string job = QueueOnA(3, context);
  std::string worker = b_->workers().Register(CpuWorker()).value();

  // A same_machine batch is leased whole, whatever the worker asks for.
  std::optional<Lease> lease = b_->PullWork(worker, 1, 2).value();
  ASSERT_TRUE(lease.has_value()) << "b's worker leases a's batch from the rows";
  EXPECT_EQ(lease->job_id, job);
  ASSERT_EQ(lease->candidates.size(), 3u);
  EXPECT_EQ(lease->candidates[0].candidate_id, ids_[0]);
  // The context crosses the database whole.
  EXPECT_EQ(lease->context.task, 1);
  EXPECT_EQ(lease->context.target, kTarget);
  EXPECT_EQ(lease->context.workload_json, "{\"workload\": 1}");
  EXPECT_EQ(lease->context.best_secs, 0.25);
  EXPECT_EQ(lease->context.check_seed, 11);
  EXPECT_EQ(lease->context.check_always_hashes, std::vector<std::string>{"0123abcd"});
  EXPECT_TRUE(lease->context.measure_fully);
  EXPECT_TRUE(lease->context.same_machine);
  EXPECT_EQ(lease->context.build_timeout_sec, 12.5);
  EXPECT_EQ(lease->context.runner.repeat, 7);
  EXPECT_EQ(lease->context.runner.timeout_sec, 3);
  // The lease is b's: a does not know the worker, and b refuses it to anyone else.
  std::vector<CandidateReport> reports;
  for (int i = 0; i < 3; ++i) {
    CandidateReport r;
    r.candidate_id = ids_[i];
    r.outcome.run_secs = {0.5 + i};
    reports.push_back(r);
  }
  EXPECT_EQ(a_->Report(worker, lease->id, reports).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(b_->Report(worker, "lease-unknown", reports).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(b_->Report(worker, lease->id, reports).value(), 3);

  absl::StatusOr<std::map<int64_t, ReportedOutcome>> results = a_->AwaitBatch(job);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 3u);
  EXPECT_EQ(results->at(ids_[2]).outcome.run_secs, std::vector<double>{2.5});
  EXPECT_EQ(results->at(ids_[0]).provenance.worker_id, worker);
  EXPECT_EQ(results->at(ids_[0]).provenance.device, "test cpu");
  EXPECT_EQ(store_a_->PendingBatch(job).value()[1].state, CandidateState::kDone);
}

TEST_F(DispatcherSharedTest, AnotherServersWorkersResolveBareKinds) {
  EXPECT_FALSE(a_->TargetFor("cpu").has_value());
  EXPECT_NE(a_->WaitingFor(kTarget), "") << "no worker anywhere yet";
  ASSERT_TRUE(b_->workers().Register(CpuWorker()).ok());
  // b publishes its workers' targets on its sweep (every second at most).
  ASSERT_TRUE(WaitUntil([&] { return a_->TargetFor("cpu").has_value(); }));
  EXPECT_EQ(*a_->TargetFor("cpu"), kTarget);
  EXPECT_EQ(a_->WaitingFor(kTarget), "");
  EXPECT_FALSE(a_->TargetFor("cuda").has_value());
  EXPECT_NE(a_->WaitingFor("cuda -arch=sm_80"), "");
}

TEST_F(DispatcherSharedTest, CancelEndsTheAwaitAndAnUnknownBatchIsNotAwaited) {
  BatchContext context;
  context.task = 0;
  context.target = kTarget;
  context.workload_json = "{}";
  std::string job = QueueOnA(2, context);
  absl::StatusOr<std::map<int64_t, ReportedOutcome>> result;
  std::thread waiter([&] { result = a_->AwaitBatch(job); });
  a_->CancelJob(job);
  waiter.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
  EXPECT_EQ(b_->AwaitBatch(job).status().code(), absl::StatusCode::kFailedPrecondition)
      << "b did not queue the batch: it has nothing to await";
}

}  // namespace
}  // namespace tessera
