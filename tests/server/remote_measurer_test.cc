// The server's Measurer (server/remote_measurer.h): a job's stored batch goes to the
// dispatcher's queue, a worker (here a thread calling the dispatcher as the worker service
// would) pulls and reports it, and Measure returns one outcome per candidate in order, with the
// worker's provenance. Real SQLite state in a temporary directory; every wait is bounded.
#include "server/remote_measurer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "frontend/workloads.h"
#include "ir/target.h"
#include "tests/server/server_testing.h"

namespace tessera {
namespace {

using testing::TempDir;

constexpr char kTarget[] = "cpu -cores=2 -vector_bits=256";

class RemoteMeasurerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = JobStore::Open(dir_.Path("state.db")).value();
    DispatcherOptions o;
    o.max_wait_seconds = 2;
    o.sweep_interval = 0.05;
    dispatcher_ = NewDispatcher(store_.get(), o);
    job_ = store_->CreateJob(testing::TestJobSpec(), 0).value().id;
    ids_ = store_->AddBatch(job_, 2, testing::TestCandidates(3)).value();
    request_.target = Target::Parse(kTarget).value();
    request_.workload = MakeWorkload("GMM", {{"M", 8}, {"N", 8}, {"K", 8}}).value();
    request_.candidates.assign(3, request_.workload);
    request_.best_secs = 0.5;
    request_.check_seed = 9;
    request_.check_always = {1};
    request_.measure_fully = true;
  }
  // Registers a worker and measures every batch it pulls as taking 1 + (position) ms, until
  // `done`; returns its id through `worker_id` before it starts pulling.
  std::thread Worker(std::atomic<bool>* done, std::string* worker_id) {
    WorkerInfo info;
    info.host = "test";
    // The canonical string, as a real worker registers its resolved target.
    info.devices.push_back(DeviceSpec{Target::Parse(kTarget)->ToString(), "test cpu", 0, -1});
    info.software.device = "test cpu";
    *worker_id = dispatcher_->workers().Register(info).value();
    return std::thread([this, done, id = *worker_id] {
      while (!done->load()) {
        absl::StatusOr<std::optional<Lease>> lease = dispatcher_->PullWork(id, 0, 0.2);
        if (!lease.ok() || !lease->has_value()) continue;
        leases_.push_back(**lease);
        std::vector<CandidateReport> reports;
        for (const LeasedCandidate& c : (*lease)->candidates) {
          CandidateReport r;
          r.candidate_id = c.candidate_id;
          r.outcome.run_secs = {1e-3 * (1 + (c.candidate_id - ids_[0]))};
          reports.push_back(r);
        }
        EXPECT_TRUE(dispatcher_->Report(id, (*lease)->id, reports).ok());
      }
    });
  }
  TempDir dir_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::string job_;
  std::vector<int64_t> ids_;
  MeasureRequest request_;
  std::vector<Lease> leases_;  // what the worker pulled (read after it stopped)
};

TEST_F(RemoteMeasurerTest, MeasuresTheStoredBatchOnAWorkerInOrder) {
  std::atomic<bool> done{false};
  std::string worker;
  std::thread thread = Worker(&done, &worker);
  RunnerConfig runner;
  runner.repeat = 4;
  RemoteMeasurer measurer(job_, 1, dispatcher_.get(), store_.get(), runner, 7.5, nullptr);
  absl::StatusOr<MeasuredBatch> batch = measurer.Measure(request_);
  done = true;
  thread.join();
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->outcomes.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(batch->outcomes[i].run_secs, std::vector<double>{1e-3 * (1 + i)}) << i;
    EXPECT_EQ(batch->outcomes[i].provenance.value().worker_id, worker);
  }
  EXPECT_EQ(batch->provenance.worker_id, worker);
  EXPECT_EQ(batch->provenance.device, "test cpu");
  EXPECT_GT(batch->run_seconds, 0);
  // What the worker was given: the stored rows and the request's context.
  ASSERT_FALSE(leases_.empty());
  const BatchContext& context = leases_[0].context;
  EXPECT_EQ(context.task, 2);
  EXPECT_EQ(context.target, request_.target.ToString());
  EXPECT_EQ(context.best_secs, 0.5);
  EXPECT_EQ(context.check_seed, 9);
  // The candidate to check whatever its time goes by its stored hash.
  EXPECT_TRUE(context.measure_fully);
  ASSERT_EQ(context.check_always_hashes.size(), 1u);
  EXPECT_EQ(context.check_always_hashes[0], leases_[0].candidates.at(1).hash);
  EXPECT_EQ(context.runner.repeat, 4);
  EXPECT_EQ(context.build_timeout_sec, 7.5);
  EXPECT_FALSE(context.workload_json.empty());
}

TEST_F(RemoteMeasurerTest, OutcomesStoredBeforeARestartAreReusedNotMeasuredAgain) {
  ReportedOutcome earlier;
  earlier.outcome.run_secs = {42};
  earlier.provenance.worker_id = "worker-before-restart";
  ASSERT_TRUE(store_->SetResult(ids_[1], CandidateState::kDone, earlier).ok());
  std::atomic<bool> done{false};
  std::string worker;
  std::thread thread = Worker(&done, &worker);
  RemoteMeasurer measurer(job_, 1, dispatcher_.get(), store_.get(), RunnerConfig(), 10, nullptr);
  absl::StatusOr<MeasuredBatch> batch = measurer.Measure(request_);
  done = true;
  thread.join();
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->outcomes.size(), 3u);
  EXPECT_EQ(batch->outcomes[1].run_secs, std::vector<double>{42});
  EXPECT_EQ(batch->outcomes[1].provenance.value().worker_id, "worker-before-restart");
  EXPECT_EQ(batch->outcomes[2].provenance.value().worker_id, worker);
  size_t pulled = 0;
  for (const Lease& l : leases_) {
    pulled += l.candidates.size();
    for (const LeasedCandidate& c : l.candidates) EXPECT_NE(c.candidate_id, ids_[1]);
  }
  EXPECT_EQ(pulled, 2u);
}

TEST_F(RemoteMeasurerTest, ACancelledJobAndAMismatchedBatchStopTheBatch) {
  std::atomic<bool> cancelled{true};
  RemoteMeasurer cancelled_measurer(job_, 1, dispatcher_.get(), store_.get(), RunnerConfig(), 10,
                                    &cancelled);
  EXPECT_EQ(cancelled_measurer.Measure(request_).status().code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(store_->DeleteBatch(job_).ok());
  ASSERT_TRUE(store_->AddBatch(job_, 2, testing::TestCandidates(2)).ok());
  RemoteMeasurer measurer(job_, 1, dispatcher_.get(), store_.get(), RunnerConfig(), 10, nullptr);
  absl::StatusOr<MeasuredBatch> mismatched = measurer.Measure(request_);
  EXPECT_EQ(mismatched.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(mismatched.status().message().find("holds 2 candidates, the request 3"),
            std::string::npos)
      << mismatched.status();
}

}  // namespace
}  // namespace tessera
