// ServerMetrics (server/metrics.h): the events a real Dispatcher reports (measured candidates
// with their error kinds, lease expiries, quarantines), the workers sampled at a scrape, the
// same on a shared PostgreSQL queue with two dispatchers (throw-away cluster; skipped, saying
// why, without its binaries), the RPC interceptor on a real in-process server, and the HTTP
// endpoint's address handling. Values are read back from the text exposition, as Prometheus
// reads them.
#include "server/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/dispatcher.h"
#include "server/server.h"
#include "tests/database/postgres_cluster.h"
#include "tests/server/server_testing.h"
#include "tests/testing/wait_until.h"

namespace tessera {
namespace {

using testing::TempDir;
using testing::WaitUntil;

constexpr char kTarget[] = "cpu -cores=2 -vector_bits=256";

// The value of the sample `key` ("name{label=\"v\",...}" as exposed), or -1 when absent.
double Sample(const std::string& text, const std::string& key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ') {
      double value = -1;
      if (absl::SimpleAtod(line.substr(key.size() + 1), &value)) return value;
    }
  }
  return -1;
}

std::string Target() { return absl::StrCat("target=\"", kTarget, "\""); }

DispatcherOptions Options(ServerMetrics* metrics) {
  DispatcherOptions o;
  o.lease_seconds = 0.2;
  o.sweep_interval = 0.02;
  o.max_attempts = 2;
  o.max_wait_seconds = 2;
  o.metrics = metrics;
  return o;
}

WorkerInfo Worker() {
  WorkerInfo w;
  w.host = "test-host";
  w.devices.push_back(DeviceSpec{kTarget, "test cpu", 0, -1});
  return w;
}

// A job with `n` stored candidates queued on the dispatcher; returns the job id and the ids.
std::string QueueBatch(JobStore* store, Dispatcher* d, int n, std::vector<int64_t>* ids) {
  JobSpec spec;
  spec.workloads = {"GMM"};
  spec.target = "cpu";
  spec.max_trials_global = n;
  std::string job = store->CreateJob(spec, 0).value().id;
  std::vector<NewCandidate> rows;
  for (int i = 0; i < n; ++i) rows.push_back({"{}", "h" + std::to_string(i), "{}"});
  *ids = store->AddBatch(job, 0, rows).value();
  std::vector<LeasedCandidate> items;
  for (int64_t id : *ids) items.push_back({id, "{}", "h"});
  BatchContext context;
  context.target = kTarget;
  context.workload_json = "{}";
  EXPECT_TRUE(d->SubmitBatch(job, 0, context, items, {}).ok());
  return job;
}

CandidateReport Outcome(int64_t id, MeasureError error, double build_secs,
                        std::vector<double> run_secs) {
  CandidateReport r;
  r.candidate_id = id;
  r.outcome.error = error;
  r.outcome.build_secs = build_secs;
  r.outcome.run_secs = std::move(run_secs);
  return r;
}

TEST(MetricsTest, AcceptedReportsCountOnceWithTheirErrorKindsAndTimes) {
  TempDir dir;
  ServerMetrics metrics;
  auto store = JobStore::Open(dir.Path("state.db")).value();
  DispatcherOptions o = Options(&metrics);
  o.lease_seconds = 30;
  std::unique_ptr<Dispatcher> d = NewDispatcher(store.get(), o);
  std::string worker = d->workers().Register(Worker()).value();
  std::vector<int64_t> ids;
  QueueBatch(store.get(), d.get(), 3, &ids);
  Lease lease = d->PullWork(worker, 0, 0).value().value();
  EXPECT_EQ(d->Report(worker, lease.id,
                      {Outcome(ids[0], MeasureError::kNone, 0.5, {0.25, 0.5}),
                       Outcome(ids[1], MeasureError::kBuild, 1.5, {})})
                .value(),
            2);
  EXPECT_EQ(d->Report(worker, lease.id, {Outcome(ids[0], MeasureError::kNone, 9, {9})}).value(), 0)
      << "reported twice";
  EXPECT_EQ(
      d->Report(worker, lease.id, {Outcome(ids[2], MeasureError::kTimeout, 0.25, {})}).value(), 1);
  const std::string text = metrics.Render();
  EXPECT_EQ(Sample(text, "tessera_candidates_measured_total{" + Target() + "}"), 3) << text;
  EXPECT_EQ(Sample(text, "tessera_measure_errors_total{kind=\"build_error\"," + Target() + "}"), 1)
      << text;
  EXPECT_EQ(Sample(text, "tessera_measure_errors_total{kind=\"timeout\"," + Target() + "}"), 1)
      << text;
  EXPECT_EQ(Sample(text, "tessera_candidate_build_seconds_total"), 0.5 + 1.5 + 0.25) << text;
  EXPECT_EQ(Sample(text, "tessera_candidate_run_seconds_total"), 0.75) << text;
  EXPECT_EQ(Sample(text, "tessera_lease_expiries_total"), 0) << text;
}

TEST(MetricsTest, ExpiredLeasesAndQuarantinesAreCounted) {
  TempDir dir;
  ServerMetrics metrics;
  auto store = JobStore::Open(dir.Path("state.db")).value();
  std::unique_ptr<Dispatcher> d = NewDispatcher(store.get(), Options(&metrics));
  std::string worker = d->workers().Register(Worker()).value();
  std::vector<int64_t> ids;
  std::string job = QueueBatch(store.get(), d.get(), 2, &ids);
  // Two leases of both candidates expire unreported: max_attempts 2 quarantines them.
  ASSERT_TRUE(d->PullWork(worker, 0, 0).value().has_value());
  ASSERT_TRUE(WaitUntil([&] { return d->JobCounts(job).first == 2; }));
  ASSERT_TRUE(d->PullWork(worker, 0, 0).value().has_value());
  ASSERT_TRUE(d->AwaitBatch(job).ok());
  const std::string text = metrics.Render();
  EXPECT_EQ(Sample(text, "tessera_lease_expiries_total"), 2) << text;
  EXPECT_EQ(Sample(text, "tessera_quarantined_candidates_total{" + Target() + "}"), 2) << text;
  EXPECT_EQ(Sample(text, "tessera_measure_errors_total{kind=\"worker_lost\"," + Target() + "}"), 2)
      << text;
  EXPECT_EQ(Sample(text, "tessera_candidates_measured_total{" + Target() + "}"), -1)
      << "no worker reported anything: " << text;
}

TEST(MetricsTest, WorkersAndTheirLeasesAreSampledAtEachScrape) {
  TempDir dir;
  ServerMetrics metrics;
  auto store = JobStore::Open(dir.Path("state.db")).value();
  DispatcherOptions o = Options(&metrics);
  o.lease_seconds = 30;
  std::unique_ptr<Dispatcher> d = NewDispatcher(store.get(), o);
  metrics.SetSources(nullptr, d.get());
  EXPECT_EQ(Sample(metrics.Render(), "tessera_workers"), 0);
  std::string busy = d->workers().Register(Worker()).value();
  std::string idle = d->workers().Register(Worker()).value();
  std::vector<int64_t> ids;
  QueueBatch(store.get(), d.get(), 3, &ids);
  Lease lease = d->PullWork(busy, 0, 0).value().value();
  std::string text = metrics.Render();
  EXPECT_EQ(Sample(text, "tessera_workers"), 2) << text;
  const std::string busy_labels = absl::StrCat("{host=\"test-host\",worker=\"", busy, "\"}");
  const std::string idle_labels = absl::StrCat("{host=\"test-host\",worker=\"", idle, "\"}");
  EXPECT_EQ(Sample(text, "tessera_worker_leases" + busy_labels), 1) << text;
  EXPECT_EQ(Sample(text, "tessera_worker_leased_candidates" + busy_labels), 3) << text;
  EXPECT_EQ(Sample(text, "tessera_worker_leases" + idle_labels), 0) << text;
  ASSERT_EQ(d->Report(busy, lease.id, {Outcome(ids[0], MeasureError::kNone, 0, {1e-3})}).value(),
            1);
  text = metrics.Render();
  EXPECT_EQ(Sample(text, "tessera_worker_leased_candidates" + busy_labels), 2) << text;
  metrics.SetSources(nullptr, nullptr);
  EXPECT_EQ(Sample(metrics.Render(), "tessera_workers"), -1) << "no source, no sample";
}

// Two servers' dispatchers on one PostgreSQL queue, a worker registered with the first. Its
// lease is read from the rows at a scrape; when its leases expire unreported (twice:
// max_attempts 2 quarantines the candidates), whichever server's sweep expired them counts
// them, so the two servers' counters add up to each expiry and quarantine exactly once.
TEST(MetricsTest, SharedQueueCountsEachExpiryOnceAndReadsLeasesFromTheRows) {
  std::string why;
  testing::PostgresCluster* cluster = testing::PostgresCluster::Get(&why);
  if (cluster == nullptr) GTEST_SKIP() << "PostgreSQL: " << why;
  const std::string url = cluster->NewDatabase().value();
  std::unique_ptr<JobStore> store_a = JobStore::Open(url).value();
  std::unique_ptr<JobStore> store_b = JobStore::Open(url).value();
  ASSERT_NE(store_a->shared(), nullptr);
  ServerMetrics metrics_a, metrics_b;
  DispatcherOptions options_a = Options(&metrics_a), options_b = Options(&metrics_b);
  // Long enough that a loaded machine does not expire the lease before the first scrape.
  options_a.lease_seconds = 1.5;
  std::unique_ptr<Dispatcher> a = NewDispatcher(store_a.get(), options_a);
  std::unique_ptr<Dispatcher> b = NewDispatcher(store_b.get(), options_b);
  metrics_a.SetSources(nullptr, a.get());
  std::string worker = a->workers().Register(Worker()).value();
  std::vector<int64_t> ids;
  std::string job = QueueBatch(store_a.get(), a.get(), 3, &ids);

  ASSERT_TRUE(a->PullWork(worker, 0, 0).value().has_value());
  const std::string labels = absl::StrCat("{host=\"test-host\",worker=\"", worker, "\"}");
  std::string text = metrics_a.Render();
  EXPECT_EQ(Sample(text, "tessera_worker_leases" + labels), 1) << text;
  EXPECT_EQ(Sample(text, "tessera_worker_leased_candidates" + labels), 3) << text;
  // The first expiry puts them back; the second lease's expiry quarantines them.
  ASSERT_TRUE(WaitUntil([&] { return a->PullWork(worker, 0, 0).value().has_value(); }, 10));
  ASSERT_TRUE(WaitUntil(
      [&] {
        absl::StatusOr<BatchCounts> counts = store_a->shared()->CountBatch(job);
        return counts.ok() && counts->finished == 3;
      },
      10));
  text = metrics_a.Render();
  EXPECT_EQ(Sample(text, "tessera_worker_leased_candidates" + labels), 0) << text;
  auto both = [&](const std::string& key) {
    return std::max(0.0, Sample(metrics_a.Render(), key)) +
           std::max(0.0, Sample(metrics_b.Render(), key));
  };
  // The error counters follow the batch's rows: under load they may land a moment after them.
  const std::string lost = "tessera_measure_errors_total{kind=\"worker_lost\"," + Target() + "}";
  WaitUntil([&] { return both(lost) >= 3; }, 10);
  EXPECT_EQ(both("tessera_lease_expiries_total"), 2) << metrics_a.Render() << "\n"
                                                     << metrics_b.Render();
  EXPECT_EQ(both("tessera_quarantined_candidates_total{" + Target() + "}"), 3);
  EXPECT_EQ(both(lost), 3);
  metrics_a.SetSources(nullptr, nullptr);
}

TEST(MetricsTest, InterceptorTimesEveryCallByMethodAndCode) {
  TempDir dir;
  auto server = TuningServer::Start(testing::TestServerOptions(dir)).value();
  auto stub = testing::TuningStub(server->address());
  v1::JobRef ref;
  ref.set_job_id("job-404");
  v1::JobStatus status;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(stub->GetJob(testing::Context().get(), ref, &status).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  v1::ListJobsResponse jobs;
  ASSERT_TRUE(stub->ListJobs(testing::Context().get(), v1::ListJobsRequest(), &jobs).ok());
  // The status is sent before the interceptor's hook returns to the server: wait for it.
  const std::string key = "tessera_rpc_duration_seconds_count{method=\"TuningService/ListJobs\"}";
  ASSERT_TRUE(WaitUntil([&] { return Sample(server->metrics()->Render(), key) == 1; }))
      << server->metrics()->Render();
  const std::string text = server->metrics()->Render();
  EXPECT_EQ(Sample(text, "tessera_rpcs_total{code=\"NOT_FOUND\",method=\"TuningService/GetJob\"}"),
            2)
      << text;
  EXPECT_EQ(Sample(text, "tessera_rpc_duration_seconds_count{method=\"TuningService/GetJob\"}"), 2)
      << text;
  EXPECT_EQ(Sample(text,
                   "tessera_rpc_duration_seconds_bucket{method=\"TuningService/GetJob\","
                   "le=\"+Inf\"}"),
            2)
      << text;
  EXPECT_EQ(Sample(text, "tessera_jobs{state=\"queued\"}"), 0) << text;
}

TEST(MetricsTest, ListenPicksAPortAndNamesABusyOne) {
  ServerMetrics first;
  ASSERT_TRUE(first.Listen("127.0.0.1:0").ok());
  EXPECT_GT(first.port(), 0);
  ServerMetrics second;
  const std::string busy = absl::StrCat("127.0.0.1:", first.port());
  absl::Status status = second.Listen(busy);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find(busy), std::string::npos) << status;
  EXPECT_EQ(first.Listen("127.0.0.1:0").code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tessera
