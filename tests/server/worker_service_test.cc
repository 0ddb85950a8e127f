#include "server/worker_service.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "server/server.h"
#include "tests/server/server_testing.h"

namespace tessera {
namespace {

using testing::Context;
using testing::TempDir;

void ExpectInvalid(const grpc::Status& s, const std::string& field) {
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_EQ(s.error_message().rfind(field + ":", 0), 0u) << s.error_message();
}

std::string SubmitJob(const std::string& address, int trials, int per_iter) {
  auto stub = testing::TuningStub(address);
  v1::SubmitJobRequest r;
  r.add_workloads("GMM:M=32,N=32,K=32");
  r.set_target("cpu");
  r.set_max_trials(trials);
  r.set_trials_per_iter(per_iter);
  r.set_cost_model("random");
  v1::SubmitJobResponse response;
  EXPECT_TRUE(stub->SubmitJob(Context().get(), r, &response).ok());
  return response.job_id();
}

v1::JobStatus WaitForEnd(const std::string& address, const std::string& id, double seconds) {
  auto stub = testing::TuningStub(address);
  v1::JobRef ref;
  ref.set_job_id(id);
  v1::JobStatus status;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(int(seconds));
  while (std::chrono::steady_clock::now() < until) {
    EXPECT_TRUE(stub->GetJob(Context().get(), ref, &status).ok());
    if (status.state() >= v1::JOB_SUCCEEDED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return status;
}

TEST(CandidateIdTest, RoundTripsAndRefusesOthers) {
  EXPECT_EQ(ParseCandidateId(CandidateIdString(42)), 42);
  EXPECT_FALSE(ParseCandidateId("cand-").has_value());
  EXPECT_FALSE(ParseCandidateId("cand--3").has_value());
  EXPECT_FALSE(ParseCandidateId("42").has_value());
  EXPECT_FALSE(ParseCandidateId("cand-99999999999999999999999").has_value());
}

class WorkerServiceTest : public ::testing::Test {
 protected:
  void Start(ServerOptions options) {
    server_ = TuningServer::Start(options).value();
    stub_ = testing::WorkerStub(server_->address());
  }
  TempDir dir_;
  std::unique_ptr<TuningServer> server_;
  std::unique_ptr<v1::WorkerService::Stub> stub_;
};

TEST_F(WorkerServiceTest, RegisterValidatesDevices) {
  Start(testing::TestServerOptions(dir_));
  v1::RegisterWorkerRequest r;
  v1::RegisterWorkerResponse response;
  ExpectInvalid(stub_->RegisterWorker(Context().get(), r, &response), "devices");
  r.add_devices()->set_target("tpu -cores=4");
  ExpectInvalid(stub_->RegisterWorker(Context().get(), r, &response), "devices[0].target");
  r.mutable_devices(0)->set_target("");
  ExpectInvalid(stub_->RegisterWorker(Context().get(), r, &response), "devices[0].target");
  r.mutable_devices(0)->set_target("cpu -cores=2");
  r.set_build_parallelism(-1);
  ExpectInvalid(stub_->RegisterWorker(Context().get(), r, &response), "build_parallelism");
  r.set_build_parallelism(2);
  // What a worker says of itself is every record's provenance, which ImportRecords checks:
  // bounded, without control characters.
  r.mutable_software()->set_compiler(std::string(2000, 'c'));
  ExpectInvalid(stub_->RegisterWorker(Context().get(), r, &response), "software.compiler");
  r.mutable_software()->set_compiler("cc -O3");
  r.mutable_devices(0)->set_name("EPYC\nINFO forged log line");
  ExpectInvalid(stub_->RegisterWorker(Context().get(), r, &response), "devices[0].name");
  r.mutable_devices(0)->set_name("EPYC");
  ASSERT_TRUE(stub_->RegisterWorker(Context().get(), r, &response).ok());
  EXPECT_FALSE(response.worker_id().empty());
  EXPECT_GT(response.lease_seconds(), 0);
  EXPECT_GT(response.heartbeat_interval(), 0);
  // The device's target is stored canonical: a bare key list is completed with defaults.
  std::optional<WorkerInfo> info = server_->dispatcher()->workers().Find(response.worker_id());
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->devices[0].target.rfind("cpu -cores=2 ", 0), 0u) << info->devices[0].target;
}

TEST_F(WorkerServiceTest, PullAndHeartbeatValidate) {
  Start(testing::TestServerOptions(dir_));
  v1::PullWorkRequest pull;
  v1::PullWorkResponse work;
  ExpectInvalid(stub_->PullWork(Context().get(), pull, &work), "worker_id");
  pull.set_worker_id("worker-x");
  pull.set_max_candidates(-1);
  ExpectInvalid(stub_->PullWork(Context().get(), pull, &work), "max_candidates");
  pull.set_max_candidates(1);
  pull.set_wait_seconds(std::numeric_limits<double>::quiet_NaN());
  ExpectInvalid(stub_->PullWork(Context().get(), pull, &work), "wait_seconds");
  pull.set_wait_seconds(0);
  EXPECT_EQ(stub_->PullWork(Context().get(), pull, &work).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::HeartbeatRequest beat;
  beat.set_worker_id("worker-x");
  beat.add_lease_ids("lease-1");
  v1::HeartbeatResponse alive;
  ASSERT_TRUE(stub_->Heartbeat(Context().get(), beat, &alive).ok());
  EXPECT_FALSE(alive.known());
  ASSERT_EQ(alive.revoked_lease_ids_size(), 1);
}

TEST_F(WorkerServiceTest, ReportsAreValidatedAndForeignLeasesRefused) {
  Start(testing::TestServerOptions(dir_));
  testing::TestWorker a(server_->address()), b(server_->address());
  ASSERT_TRUE(a.Register().ok());
  ASSERT_TRUE(b.Register().ok());
  std::string job = SubmitJob(server_->address(), 4, 4);
  absl::StatusOr<v1::WorkBatch> batch = a.PullOnly(0, 30);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->candidates_size(), 4);
  EXPECT_EQ(batch->job_id(), job);
  EXPECT_FALSE(batch->workload_json().empty());
  EXPECT_EQ(batch->target(), testing::HostCpuTarget());

  v1::ReportResultsRequest report;
  report.set_worker_id(a.id());
  report.set_lease_id(batch->lease_id());
  v1::CandidateResult* r = report.add_results();
  r->set_candidate_id(batch->candidates(0).candidate_id());
  r->add_run_seconds(1e-3);
  v1::ReportResultsResponse accepted;
  auto expect_invalid = [&](const std::string& field) {
    ExpectInvalid(a.stub()->ReportResults(Context().get(), report, &accepted), field);
  };
  r->set_candidate_id("c42");
  expect_invalid("results[0].candidate_id");
  r->set_candidate_id(batch->candidates(0).candidate_id());
  r->set_error_kind("exploded");
  expect_invalid("results[0].error_kind");
  r->set_error_kind("worker_lost");
  expect_invalid("results[0].error_kind");
  r->set_error_kind("");
  r->set_run_seconds(0, std::numeric_limits<double>::infinity());
  expect_invalid("results[0].run_seconds");
  r->set_run_seconds(0, -1);
  expect_invalid("results[0].run_seconds");
  r->clear_run_seconds();
  expect_invalid("results[0].run_seconds");
  r->add_run_seconds(1e-3);
  r->set_build_seconds(std::numeric_limits<double>::quiet_NaN());
  expect_invalid("results[0].build_seconds");
  r->set_build_seconds(0.1);
  r->set_others_busy_cores(-0.5);
  expect_invalid("results[0].others_busy_cores");
  r->set_others_busy_cores(0.25);

  // Worker b quoting a's lease, and an unknown worker, are refused.
  report.set_worker_id(b.id());
  EXPECT_EQ(b.stub()->ReportResults(Context().get(), report, &accepted).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  report.set_worker_id("worker-999");
  EXPECT_EQ(b.stub()->ReportResults(Context().get(), report, &accepted).error_code(),
            grpc::StatusCode::NOT_FOUND);
  report.set_worker_id(a.id());
  ASSERT_TRUE(a.stub()->ReportResults(Context().get(), report, &accepted).ok());
  EXPECT_EQ(accepted.accepted(), 1);
  ASSERT_TRUE(a.stub()->ReportResults(Context().get(), report, &accepted).ok());
  EXPECT_EQ(accepted.accepted(), 0) << "a second report of the same candidate";

  // The rest as build errors: the job ends with exactly its 4 records.
  report.clear_results();
  for (int i = 1; i < 4; ++i) {
    v1::CandidateResult* failed = report.add_results();
    failed->set_candidate_id(batch->candidates(i).candidate_id());
    failed->set_error_kind("build_error");
    failed->set_error_msg("build: test");
  }
  ASSERT_TRUE(a.stub()->ReportResults(Context().get(), report, &accepted).ok());
  EXPECT_EQ(accepted.accepted(), 3);
  v1::JobStatus status = WaitForEnd(server_->address(), job, 60);
  EXPECT_EQ(status.state(), v1::JOB_SUCCEEDED);
  EXPECT_EQ(server_->database()->NumRecords().value(), 4);
  EXPECT_EQ(status.tasks(0).errors().at("build_error"), 3);
}

TEST_F(WorkerServiceTest, CandidatesOfDeadWorkersAreQuarantined) {
  ServerOptions options = testing::TestServerOptions(dir_);
  options.dispatcher.lease_seconds = 0.3;
  options.dispatcher.max_attempts = 2;
  Start(options);
  testing::TestWorker dying(server_->address());
  ASSERT_TRUE(dying.Register().ok());
  std::string job = SubmitJob(server_->address(), 2, 2);
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<v1::WorkBatch> batch = dying.PullOnly(0, 30);
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_EQ(batch->candidates_size(), 2) << "attempt " << attempt;
  }
  v1::JobStatus status = WaitForEnd(server_->address(), job, 60);
  EXPECT_EQ(status.state(), v1::JOB_SUCCEEDED);
  EXPECT_EQ(status.tasks(0).errors().at("worker_lost"), 2);
  std::vector<TuningRecord> records = server_->database()->AllRecords().value();
  ASSERT_EQ(records.size(), 2u);
  for (const TuningRecord& r : records) {
    EXPECT_EQ(r.error, MeasureError::kWorkerLost);
    EXPECT_EQ(r.provenance.worker_id, dying.id());
  }
}

}  // namespace
}  // namespace tessera
