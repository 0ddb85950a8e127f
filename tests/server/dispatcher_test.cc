// The dispatcher (server/dispatcher.h), one suite run against both implementations: "local"
// (the queue in memory, written through to a SQLite state database) and "shared" (the queue
// as rows of a PostgreSQL database of the test process's throw-away cluster,
// tests/database/postgres_cluster.h; skipped, saying why, where the PostgreSQL binaries are
// missing). What only several servers on one queue show is in dispatcher_shared_test.cc.
// Waits are bounded.
#include "server/dispatcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "tests/database/postgres_cluster.h"
#include "tests/server/server_testing.h"
#include "tests/testing/wait_until.h"

namespace tessera {
namespace {

using testing::TempDir;
using testing::WaitUntil;

constexpr char kTarget[] = "cpu -cores=2 -vector_bits=256";

DispatcherOptions FastOptions() {
  DispatcherOptions o;
  o.lease_seconds = 0.2;
  o.sweep_interval = 0.02;
  o.max_attempts = 2;
  o.max_wait_seconds = 2;
  return o;
}

WorkerInfo Worker(const std::string& target = kTarget) {
  WorkerInfo w;
  w.host = "test";
  w.devices.push_back(DeviceSpec{target, "test cpu", 0, -1});
  w.software.device = "test cpu";
  return w;
}

BatchContext Context() {
  BatchContext c;
  c.task = 0;
  c.target = kTarget;
  c.workload_json = "{}";
  return c;
}

CandidateReport Ran(int64_t id, double secs) {
  CandidateReport r;
  r.candidate_id = id;
  r.outcome.run_secs = {secs};
  return r;
}

class DispatcherTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "local") {
      store_ = JobStore::Open(dir_.Path("state.db")).value();
      ASSERT_EQ(store_->shared(), nullptr);
    } else {
      std::string why;
      testing::PostgresCluster* cluster = testing::PostgresCluster::Get(&why);
      if (cluster == nullptr) GTEST_SKIP() << "PostgreSQL: " << why;
      absl::StatusOr<std::string> url = cluster->NewDatabase();
      ASSERT_TRUE(url.ok()) << url.status();
      store_ = JobStore::Open(*url).value();
      ASSERT_NE(store_->shared(), nullptr);
    }
  }
  void Start(DispatcherOptions options = FastOptions()) {
    d_ = NewDispatcher(store_.get(), options);
  }
  // A job with `n` stored candidates, its batch submitted at `priority` with `context`;
  // returns the job's id and puts the candidates' ids in `ids`.
  std::string Submit(int n, std::vector<int64_t>* ids, int priority = 0,
                     BatchContext context = Context()) {
    JobSpec spec = testing::TestJobSpec();
    std::string job = store_->CreateJob(spec, 0).value().id;
    *ids = store_->AddBatch(job, context.task, testing::TestCandidates(n)).value();
    std::vector<LeasedCandidate> items;
    for (int64_t id : *ids) items.push_back({id, "{}", "h"});
    absl::Status s = d_->SubmitBatch(job, priority, std::move(context), std::move(items),
                                     std::vector<int>(ids->size(), 0));
    EXPECT_TRUE(s.ok()) << s;
    return job;
  }
  std::string Submit(int n, int priority = 0) {
    std::vector<int64_t> ids;
    return Submit(n, &ids, priority);
  }

  TempDir dir_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<Dispatcher> d_;
};

INSTANTIATE_TEST_SUITE_P(Queues, DispatcherTest, ::testing::Values("local", "shared"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST_P(DispatcherTest, ExpiredLeaseRequeuesThenQuarantines) {
  Start();
  std::string worker = d_->workers().Register(Worker()).value();
  std::vector<int64_t> ids;
  std::string job = Submit(2, &ids);

  std::optional<Lease> first = d_->PullWork(worker, 0, 0).value();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->candidates.size(), 2u);
  EXPECT_EQ(store_->PendingBatch(job).value()[0].state, CandidateState::kLeased);
  ASSERT_TRUE(WaitUntil([&] { return d_->JobCounts(job).first == 2; }));
  ASSERT_EQ(d_->JobCounts(job), std::make_pair(2, 0)) << "the expired lease's candidates requeue";
  EXPECT_EQ(store_->PendingBatch(job).value()[1].attempts, 1);
  // A late report on the expired lease is refused: the candidates will be measured again.
  EXPECT_EQ(d_->Report(worker, first->id, {Ran(ids[0], 1)}).status().code(),
            absl::StatusCode::kFailedPrecondition);

  std::optional<Lease> second = d_->PullWork(worker, 0, 0).value();
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(second->id, first->id);
  absl::StatusOr<std::map<int64_t, ReportedOutcome>> results = d_->AwaitBatch(job);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 2u);
  for (int64_t id : ids) {
    EXPECT_EQ(results->at(id).outcome.error, MeasureError::kWorkerLost);
    EXPECT_NE(results->at(id).outcome.error_msg.find("quarantined after 2"), std::string::npos)
        << results->at(id).outcome.error_msg;
    EXPECT_EQ(results->at(id).provenance.worker_id, worker);
  }
  StoredCandidate stored = store_->PendingBatch(job).value()[0];
  EXPECT_EQ(stored.state, CandidateState::kQuarantined);
  EXPECT_EQ(stored.result->outcome.error, MeasureError::kWorkerLost);
}

TEST_P(DispatcherTest, ReportsCarryTheWorkersProvenanceAndCountOnce) {
  DispatcherOptions o = FastOptions();
  o.lease_seconds = 30;
  Start(o);
  std::string a = d_->workers().Register(Worker()).value();
  std::string b = d_->workers().Register(Worker()).value();
  std::vector<int64_t> ids;
  std::string job = Submit(3, &ids);
  Lease la = d_->PullWork(a, 2, 0).value().value();
  Lease lb = d_->PullWork(b, 2, 0).value().value();
  ASSERT_EQ(la.candidates.size(), 2u);
  ASSERT_EQ(lb.candidates.size(), 1u);
  EXPECT_EQ(d_->JobCounts(job), std::make_pair(0, 3));
  // Someone else's lease, and a candidate outside the lease, are not accepted.
  EXPECT_EQ(d_->Report(b, la.id, {Ran(ids[0], 1)}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(d_->Report(a, la.id, {Ran(ids[2], 1)}).value(), 0);
  EXPECT_EQ(d_->Report(a, la.id, {Ran(ids[0], 1)}).value(), 1);
  EXPECT_EQ(d_->Report(a, la.id, {Ran(ids[0], 2)}).value(), 0) << "reported twice";
  EXPECT_EQ(d_->Report(a, la.id, {Ran(ids[1], 3)}).value(), 1);
  EXPECT_EQ(d_->Report(b, lb.id, {Ran(ids[2], 4)}).value(), 1);
  std::map<int64_t, ReportedOutcome> results = d_->AwaitBatch(job).value();
  EXPECT_EQ(results.at(ids[0]).outcome.run_secs, std::vector<double>{1});
  EXPECT_EQ(results.at(ids[1]).provenance.worker_id, a);
  EXPECT_EQ(results.at(ids[2]).provenance.worker_id, b);
  EXPECT_EQ(results.at(ids[2]).provenance.device, "test cpu");
  EXPECT_EQ(store_->PendingBatch(job).value()[2].state, CandidateState::kDone);
  EXPECT_EQ(store_->PendingBatch(job).value()[2].result->provenance.worker_id, b);
}

TEST_P(DispatcherTest, RoundRobinAcrossJobsOfOnePriorityHigherFirst) {
  Start();
  std::string w = d_->workers().Register(Worker()).value();
  Submit(3);
  Submit(3);
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) order.push_back(d_->PullWork(w, 1, 0).value()->job_id);
  EXPECT_NE(order[0], order[1]);
  EXPECT_EQ(order[2], order[0]);
  EXPECT_EQ(order[3], order[1]);
  std::string urgent = Submit(2, /*priority=*/5);
  EXPECT_EQ(d_->PullWork(w, 1, 0).value()->job_id, urgent);
  EXPECT_EQ(d_->PullWork(w, 1, 0).value()->job_id, urgent);
  EXPECT_EQ(d_->PullWork(w, 1, 0).value()->job_id, order[0]) << "the one served least recently";
}

TEST_P(DispatcherTest, WorkersGetOnlyTheirTargetsWork) {
  Start();
  std::string other = d_->workers().Register(Worker("cpu -cores=64 -vector_bits=512")).value();
  Submit(1);
  EXPECT_FALSE(d_->PullWork(other, 0, 0).value().has_value());
  EXPECT_NE(d_->WaitingFor(kTarget).find("serves target " + std::string(kTarget) +
                                         " (workers serve: cpu -cores=64 -vector_bits=512)"),
            std::string::npos)
      << d_->WaitingFor(kTarget);
  EXPECT_EQ(d_->TargetFor("cpu"), "cpu -cores=64 -vector_bits=512");
  EXPECT_FALSE(d_->TargetFor("cuda").has_value());
  std::string right = d_->workers().Register(Worker()).value();
  EXPECT_EQ(d_->WaitingFor(kTarget), "");
  EXPECT_TRUE(d_->PullWork(right, 0, 0).value().has_value());
}

TEST_P(DispatcherTest, APartialTargetIsCompletedOnlyFromAVerifiedTargetItDescribes) {
  Start();
  WorkerInfo forged = Worker("cpu -cores=2 -vector_bits=256");
  forged.devices[0].verified = false;  // its token does not name it
  ASSERT_TRUE(d_->workers().Register(forged).ok());
  EXPECT_FALSE(d_->TargetFor("cpu").has_value()) << "an unverified target completes nothing";
  ASSERT_TRUE(d_->workers().Register(Worker("cpu -cores=2 -vector_bits=512")).ok());
  ASSERT_TRUE(d_->workers().Register(Worker("cpu -cores=64 -vector_bits=512")).ok());
  EXPECT_EQ(d_->TargetFor("cpu"), "cpu -cores=2 -vector_bits=512");
  // The keys given choose among the workers; those left out come from the worker, not from
  // the kind's defaults (which would make -vector_bits=256 here).
  EXPECT_EQ(d_->TargetFor("cpu -cores=64"), "cpu -cores=64 -vector_bits=512");
  EXPECT_EQ(d_->TargetFor("cpu -cores=2"), "cpu -cores=2 -vector_bits=512");
  EXPECT_FALSE(d_->TargetFor("cpu -cores=8").has_value());
}

TEST_P(DispatcherTest, HeartbeatRenewsLeasesAndForgetsNothingLive) {
  DispatcherOptions o = FastOptions();
  o.lease_seconds = 0.3;
  Start(o);
  std::string w = d_->workers().Register(Worker()).value();
  std::vector<int64_t> ids;
  Submit(1, &ids);
  Lease lease = d_->PullWork(w, 0, 0).value().value();
  for (int i = 0; i < 8; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    HeartbeatReply reply = d_->Heartbeat(w, {lease.id, "lease-gone"});
    EXPECT_TRUE(reply.known);
    EXPECT_EQ(reply.revoked, std::vector<std::string>{"lease-gone"});
  }
  EXPECT_EQ(d_->Report(w, lease.id, {Ran(ids[0], 1)}).value(), 1) << "renewed past 0.3 s";
  EXPECT_FALSE(d_->Heartbeat("worker-unknown", {}).known);
}

TEST_P(DispatcherTest, LongPollWakesWhenWorkArrives) {
  Start();
  std::string w = d_->workers().Register(Worker()).value();
  std::vector<int64_t> ids;
  std::thread submit([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Submit(1, &ids);
  });
  auto start = std::chrono::steady_clock::now();
  std::optional<Lease> lease = d_->PullWork(w, 0, 10).value();
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  submit.join();
  ASSERT_TRUE(lease.has_value());
  EXPECT_LT(waited, 1.5);
  ASSERT_EQ(d_->Report(w, lease->id, {Ran(ids[0], 1)}).value(), 1);
  // Without work the wait is bounded by max_wait_seconds.
  start = std::chrono::steady_clock::now();
  EXPECT_FALSE(d_->PullWork(w, 0, 1000).value().has_value());
  waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 3);
  EXPECT_EQ(d_->PullWork("worker-unknown", 0, 0).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(DispatcherTest, CancelAndShutdownWakeTheJob) {
  DispatcherOptions o = FastOptions();
  o.lease_seconds = 30;
  Start(o);
  std::string w = d_->workers().Register(Worker()).value();
  std::vector<int64_t> ids;
  std::string a = Submit(2, &ids);
  Lease lease = d_->PullWork(w, 1, 0).value().value();
  std::thread cancel([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    d_->CancelJob(a);
  });
  EXPECT_EQ(d_->AwaitBatch(a).status().code(), absl::StatusCode::kCancelled);
  cancel.join();
  EXPECT_EQ(d_->Report(w, lease.id, {Ran(ids[0], 1)}).status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "cancelling revokes the job's leases";
  EXPECT_EQ(d_->Heartbeat(w, {lease.id}).revoked, std::vector<std::string>{lease.id})
      << "the worker hears of it at its next heartbeat";
  EXPECT_EQ(d_->AwaitBatch(a).status().code(), absl::StatusCode::kFailedPrecondition)
      << "a cancelled batch is forgotten";

  std::string b = Submit(1);
  std::thread stop([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    d_->Shutdown();
  });
  EXPECT_EQ(d_->AwaitBatch(b).status().code(), absl::StatusCode::kUnavailable);
  stop.join();
}

TEST_P(DispatcherTest, ReturnedLeaseRequeuesWithoutAnAttempt) {
  Start();
  std::string worker = d_->workers().Register(Worker()).value();
  std::vector<int64_t> ids;
  std::string job = Submit(2, &ids);
  Lease lease = d_->PullWork(worker, 0, 0).value().value();
  d_->ReturnLease(lease.id);
  EXPECT_EQ(d_->JobCounts(job), std::make_pair(2, 0));
  EXPECT_EQ(store_->PendingBatch(job).value()[0].state, CandidateState::kQueued);
  EXPECT_EQ(store_->PendingBatch(job).value()[0].attempts, 0);
  EXPECT_EQ(d_->Report(worker, lease.id, {Ran(ids[0], 1)}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// A same_machine batch (a runoff's) goes to one worker whole, whatever the worker asks for;
// other batches keep the worker's max_candidates.
TEST_P(DispatcherTest, ASameMachineBatchIsLeasedWhole) {
  Start();
  std::string worker = d_->workers().Register(Worker()).value();
  BatchContext same_machine = Context();
  same_machine.same_machine = true;
  std::vector<int64_t> ids;
  std::string whole = Submit(4, &ids, 1, same_machine);
  std::string split = Submit(4, &ids, 0);
  Lease lease = d_->PullWork(worker, 1, 0).value().value();
  EXPECT_EQ(lease.job_id, whole);
  EXPECT_EQ(lease.candidates.size(), 4u);
  EXPECT_TRUE(lease.context.same_machine);
  Lease other = d_->PullWork(worker, 1, 0).value().value();
  EXPECT_EQ(other.job_id, split);
  EXPECT_EQ(other.candidates.size(), 1u);
  EXPECT_FALSE(other.context.same_machine);
}

TEST_P(DispatcherTest, TheStatsCountEachWorkersLeasesInRegistrationOrder) {
  DispatcherOptions o = FastOptions();
  o.lease_seconds = 30;
  Start(o);
  std::string busy = d_->workers().Register(Worker()).value();
  std::string idle = d_->workers().Register(Worker()).value();
  std::vector<int64_t> ids;
  Submit(3, &ids);
  Lease lease = d_->PullWork(busy, 2, 0).value().value();
  ASSERT_EQ(d_->Report(busy, lease.id, {Ran(ids[0], 1)}).value(), 1);
  DispatcherStats stats = d_->Stats();
  ASSERT_EQ(stats.workers.size(), 2u);
  EXPECT_EQ(stats.workers[0].id, busy);
  EXPECT_EQ(stats.workers[0].leases, 1);
  EXPECT_EQ(stats.workers[0].candidates, 1);
  EXPECT_EQ(stats.workers[1].id, idle);
  EXPECT_EQ(stats.workers[1].leases, 0);
  EXPECT_EQ(d_->workers().Workers().size(), 2u);
  EXPECT_EQ(d_->workers().Find(idle)->host, "test");
  EXPECT_FALSE(d_->workers().Find("worker-unknown").has_value());
}

TEST_P(DispatcherTest, AWorkerSilentPastTheTimeoutIsForgotten) {
  DispatcherOptions o = FastOptions();
  o.worker_timeout = 0.2;
  Start(o);
  std::string w = d_->workers().Register(Worker()).value();
  ASSERT_TRUE(WaitUntil([&] { return !d_->workers().Find(w).has_value(); }));
  EXPECT_FALSE(d_->Heartbeat(w, {}).known);
  EXPECT_EQ(d_->PullWork(w, 0, 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(d_->workers().Register(WorkerInfo{}).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "a worker without devices";
}

}  // namespace
}  // namespace tessera
