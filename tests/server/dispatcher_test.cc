#include "server/dispatcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

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

BatchContext Context(int task = 0) {
  BatchContext c;
  c.task = task;
  c.target = kTarget;
  c.workload_json = "{}";
  return c;
}

// A job with `n` stored candidates; returns their ids.
std::vector<int64_t> StoredBatch(JobStore* store, int n, std::string* job_id) {
  JobSpec spec;
  spec.workloads = {"GMM"};
  spec.target = "cpu";
  spec.max_trials_global = n;
  *job_id = store->CreateJob(spec, 0).value().id;
  std::vector<NewCandidate> rows;
  for (int i = 0; i < n; ++i) rows.push_back({"{}", "h" + std::to_string(i), "{}"});
  return store->AddBatch(*job_id, 0, rows).value();
}

std::vector<LeasedCandidate> Items(const std::vector<int64_t>& ids) {
  std::vector<LeasedCandidate> items;
  for (int64_t id : ids) items.push_back({id, "{}", "h"});
  return items;
}

CandidateReport Ran(int64_t id, double secs) {
  CandidateReport r;
  r.candidate_id = id;
  r.outcome.run_secs = {secs};
  return r;
}

TEST(DispatcherTest, ExpiredLeaseRequeuesThenQuarantines) {
  TempDir dir;
  auto store = JobStore::Open(dir.Path("state.db")).value();
  Dispatcher d(store.get(), FastOptions());
  std::string worker = d.RegisterWorker(Worker()).value();
  std::string job;
  std::vector<int64_t> ids = StoredBatch(store.get(), 2, &job);
  ASSERT_TRUE(d.SubmitBatch(job, 0, Context(), Items(ids), {0, 0}).ok());

  std::optional<Lease> first = d.PullWork(worker, 0, 0).value();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->candidates.size(), 2u);
  EXPECT_EQ(d.JobCounts(job), std::make_pair(0, 2));
  EXPECT_EQ(store->PendingBatch(job).value()[0].state, CandidateState::kLeased);
  WaitUntil([&] { return d.JobCounts(job).first == 2; });
  ASSERT_EQ(d.JobCounts(job), std::make_pair(2, 0)) << "the expired lease's candidates requeue";
  EXPECT_EQ(store->PendingBatch(job).value()[1].attempts, 1);
  // A late report on the expired lease is refused: the candidates will be measured again.
  EXPECT_EQ(d.Report(worker, first->id, {Ran(ids[0], 1)}).status().code(),
            absl::StatusCode::kFailedPrecondition);

  std::optional<Lease> second = d.PullWork(worker, 0, 0).value();
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(second->id, first->id);
  absl::StatusOr<std::map<int64_t, ReportedOutcome>> results = d.AwaitBatch(job);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 2u);
  for (int64_t id : ids) {
    EXPECT_EQ(results->at(id).outcome.error, MeasureError::kWorkerLost);
    EXPECT_NE(results->at(id).outcome.error_msg.find("quarantined after 2"), std::string::npos);
    EXPECT_EQ(results->at(id).provenance.worker_id, worker);
  }
  StoredCandidate stored = store->PendingBatch(job).value()[0];
  EXPECT_EQ(stored.state, CandidateState::kQuarantined);
  EXPECT_EQ(stored.result->outcome.error, MeasureError::kWorkerLost);
}

TEST(DispatcherTest, ReportsCarryTheWorkersProvenanceAndCountOnce) {
  TempDir dir;
  auto store = JobStore::Open(dir.Path("state.db")).value();
  DispatcherOptions o = FastOptions();
  o.lease_seconds = 30;
  Dispatcher d(store.get(), o);
  std::string a = d.RegisterWorker(Worker()).value();
  std::string b = d.RegisterWorker(Worker()).value();
  std::string job;
  std::vector<int64_t> ids = StoredBatch(store.get(), 3, &job);
  ASSERT_TRUE(d.SubmitBatch(job, 0, Context(), Items(ids), {}).ok());
  Lease la = d.PullWork(a, 2, 0).value().value();
  Lease lb = d.PullWork(b, 2, 0).value().value();
  ASSERT_EQ(la.candidates.size(), 2u);
  ASSERT_EQ(lb.candidates.size(), 1u);
  // Someone else's lease, and a candidate outside the lease, are not accepted.
  EXPECT_EQ(d.Report(b, la.id, {Ran(ids[0], 1)}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(d.Report(a, la.id, {Ran(ids[2], 1)}).value(), 0);
  EXPECT_EQ(d.Report(a, la.id, {Ran(ids[0], 1)}).value(), 1);
  EXPECT_EQ(d.Report(a, la.id, {Ran(ids[0], 2)}).value(), 0) << "reported twice";
  EXPECT_EQ(d.Report(a, la.id, {Ran(ids[1], 3)}).value(), 1);
  EXPECT_EQ(d.Report(b, lb.id, {Ran(ids[2], 4)}).value(), 1);
  std::map<int64_t, ReportedOutcome> results = d.AwaitBatch(job).value();
  EXPECT_EQ(results.at(ids[0]).outcome.run_secs, std::vector<double>{1});
  EXPECT_EQ(results.at(ids[1]).provenance.worker_id, a);
  EXPECT_EQ(results.at(ids[2]).provenance.worker_id, b);
  EXPECT_EQ(results.at(ids[2]).provenance.device, "test cpu");
  EXPECT_EQ(store->PendingBatch(job).value()[2].state, CandidateState::kDone);
  EXPECT_EQ(store->PendingBatch(job).value()[2].result->provenance.worker_id, b);
}

TEST(DispatcherTest, RoundRobinAcrossJobsOfOnePriorityHigherFirst) {
  Dispatcher d(nullptr, FastOptions());
  std::string w = d.RegisterWorker(Worker()).value();
  ASSERT_TRUE(d.SubmitBatch("a", 0, Context(), Items({1, 2, 3}), {}).ok());
  ASSERT_TRUE(d.SubmitBatch("b", 0, Context(), Items({4, 5, 6}), {}).ok());
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) order.push_back(d.PullWork(w, 1, 0).value()->job_id);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "a", "b"}));
  ASSERT_TRUE(d.SubmitBatch("urgent", 5, Context(), Items({7, 8}), {}).ok());
  EXPECT_EQ(d.PullWork(w, 1, 0).value()->job_id, "urgent");
  EXPECT_EQ(d.PullWork(w, 1, 0).value()->job_id, "urgent");
  EXPECT_EQ(d.PullWork(w, 1, 0).value()->job_id, "a");
}

TEST(DispatcherTest, WorkersGetOnlyTheirTargetsWork) {
  Dispatcher d(nullptr, FastOptions());
  std::string other = d.RegisterWorker(Worker("cpu -cores=64 -vector_bits=512")).value();
  ASSERT_TRUE(d.SubmitBatch("a", 0, Context(), Items({1}), {}).ok());
  EXPECT_FALSE(d.PullWork(other, 0, 0).value().has_value());
  EXPECT_NE(d.WaitingFor(kTarget).find("no live worker serves target"), std::string::npos);
  EXPECT_EQ(d.TargetFor("cpu"), "cpu -cores=64 -vector_bits=512");
  EXPECT_FALSE(d.TargetFor("cuda").has_value());
  std::string right = d.RegisterWorker(Worker()).value();
  EXPECT_EQ(d.WaitingFor(kTarget), "");
  EXPECT_TRUE(d.PullWork(right, 0, 0).value().has_value());
}

TEST(DispatcherTest, APartialTargetIsCompletedOnlyFromAVerifiedTargetItDescribes) {
  Dispatcher d(nullptr, FastOptions());
  WorkerInfo forged = Worker("cpu -cores=2 -vector_bits=256");
  forged.devices[0].verified = false;  // its token does not name it
  ASSERT_TRUE(d.RegisterWorker(forged).ok());
  EXPECT_FALSE(d.TargetFor("cpu").has_value()) << "an unverified target completes nothing";
  ASSERT_TRUE(d.RegisterWorker(Worker("cpu -cores=2 -vector_bits=512")).ok());
  ASSERT_TRUE(d.RegisterWorker(Worker("cpu -cores=64 -vector_bits=512")).ok());
  EXPECT_EQ(d.TargetFor("cpu"), "cpu -cores=2 -vector_bits=512");
  // The keys given choose among the workers; those left out come from the worker, not from
  // the kind's defaults (which would make -vector_bits=256 here).
  EXPECT_EQ(d.TargetFor("cpu -cores=64"), "cpu -cores=64 -vector_bits=512");
  EXPECT_EQ(d.TargetFor("cpu -cores=2"), "cpu -cores=2 -vector_bits=512");
  EXPECT_FALSE(d.TargetFor("cpu -cores=8").has_value());
}

TEST(DispatcherTest, HeartbeatRenewsLeasesAndForgetsNothingLive) {
  DispatcherOptions o = FastOptions();
  o.lease_seconds = 0.3;
  Dispatcher d(nullptr, o);
  std::string w = d.RegisterWorker(Worker()).value();
  ASSERT_TRUE(d.SubmitBatch("a", 0, Context(), Items({1}), {}).ok());
  Lease lease = d.PullWork(w, 0, 0).value().value();
  for (int i = 0; i < 8; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    HeartbeatReply reply = d.Heartbeat(w, {lease.id, "lease-gone"});
    EXPECT_TRUE(reply.known);
    EXPECT_EQ(reply.revoked, std::vector<std::string>{"lease-gone"});
  }
  EXPECT_EQ(d.Report(w, lease.id, {Ran(1, 1)}).value(), 1) << "renewed past 0.3 s";
  EXPECT_FALSE(d.Heartbeat("worker-unknown", {}).known);
}

TEST(DispatcherTest, LongPollWakesWhenWorkArrives) {
  Dispatcher d(nullptr, FastOptions());
  std::string w = d.RegisterWorker(Worker()).value();
  std::thread submit([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_TRUE(d.SubmitBatch("a", 0, Context(), Items({1}), {}).ok());
  });
  auto start = std::chrono::steady_clock::now();
  std::optional<Lease> lease = d.PullWork(w, 0, 10).value();
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  submit.join();
  ASSERT_TRUE(lease.has_value());
  EXPECT_LT(waited, 1.5);
  ASSERT_EQ(d.Report(w, lease->id, {Ran(1, 1)}).value(), 1);
  // Without work the wait is bounded by max_wait_seconds.
  start = std::chrono::steady_clock::now();
  EXPECT_FALSE(d.PullWork(w, 0, 1000).value().has_value());
  waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 3);
  EXPECT_EQ(d.PullWork("worker-unknown", 0, 0).status().code(), absl::StatusCode::kNotFound);
}

TEST(DispatcherTest, CancelAndShutdownWakeTheJob) {
  Dispatcher d(nullptr, FastOptions());
  std::string w = d.RegisterWorker(Worker()).value();
  ASSERT_TRUE(d.SubmitBatch("a", 0, Context(), Items({1, 2}), {}).ok());
  Lease lease = d.PullWork(w, 1, 0).value().value();
  std::thread cancel([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    d.CancelJob("a");
  });
  EXPECT_EQ(d.AwaitBatch("a").status().code(), absl::StatusCode::kCancelled);
  cancel.join();
  EXPECT_EQ(d.Report(w, lease.id, {Ran(1, 1)}).status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "cancelling revokes the job's leases";

  ASSERT_TRUE(d.SubmitBatch("b", 0, Context(), Items({3}), {}).ok());
  std::thread stop([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    d.Shutdown();
  });
  EXPECT_EQ(d.AwaitBatch("b").status().code(), absl::StatusCode::kUnavailable);
  stop.join();
}

TEST(DispatcherTest, ReturnedLeaseRequeuesWithoutAnAttempt) {
  TempDir dir;
  auto store = JobStore::Open(dir.Path("state.db")).value();
  Dispatcher d(store.get(), FastOptions());
  std::string worker = d.RegisterWorker(Worker()).value();
  std::string job;
  std::vector<int64_t> ids = StoredBatch(store.get(), 2, &job);
  ASSERT_TRUE(d.SubmitBatch(job, 0, Context(), Items(ids), {0, 0}).ok());
  Lease lease = d.PullWork(worker, 0, 0).value().value();
  d.ReturnLease(lease.id);
  EXPECT_EQ(d.JobCounts(job), std::make_pair(2, 0));
  EXPECT_EQ(store->PendingBatch(job).value()[0].state, CandidateState::kQueued);
  EXPECT_EQ(store->PendingBatch(job).value()[0].attempts, 0);
  EXPECT_EQ(d.Report(worker, lease.id, {Ran(ids[0], 1)}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// A same_machine batch (a runoff's) goes to one worker whole, whatever the worker asks for;
// other batches keep the worker's max_candidates.
TEST(DispatcherTest, ASameMachineBatchIsLeasedWhole) {
  TempDir dir;
  auto store = JobStore::Open(dir.Path("state.db")).value();
  Dispatcher d(store.get(), FastOptions());
  std::string worker = d.RegisterWorker(Worker()).value();
  std::string whole_job, split_job;
  std::vector<int64_t> whole = StoredBatch(store.get(), 4, &whole_job);
  std::vector<int64_t> split = StoredBatch(store.get(), 4, &split_job);
  BatchContext same_machine = Context();
  same_machine.same_machine = true;
  ASSERT_TRUE(d.SubmitBatch(whole_job, 1, same_machine, Items(whole), {0, 0, 0, 0}).ok());
  ASSERT_TRUE(d.SubmitBatch(split_job, 0, Context(), Items(split), {0, 0, 0, 0}).ok());
  Lease lease = d.PullWork(worker, 1, 0).value().value();
  EXPECT_EQ(lease.job_id, whole_job);
  EXPECT_EQ(lease.candidates.size(), 4u);
  EXPECT_TRUE(lease.context.same_machine);
  Lease other = d.PullWork(worker, 1, 0).value().value();
  EXPECT_EQ(other.job_id, split_job);
  EXPECT_EQ(other.candidates.size(), 1u);
}

}  // namespace
}  // namespace tessera
