#include "tests/server/server_testing.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "ir/serialize.h"
#include "ir/target.h"
#include "proto/convert.h"
#include "worker/host.h"
#include "worker/measurer.h"

namespace tessera {
namespace testing {

JobSpec TestJobSpec() {
  JobSpec spec;
  spec.workloads = {"GMM:M=32,N=32,K=32", "C2D"};
  spec.target = "cpu";
  spec.max_trials_global = 16;
  spec.priority = 3;
  spec.seed = 7;
  spec.verify = false;
  spec.name = "nightly";
  return spec;
}

std::vector<NewCandidate> TestCandidates(int n) {
  std::vector<NewCandidate> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({"{\"trace\": " + std::to_string(i) + "}", "hash" + std::to_string(i), "{}"});
  }
  return out;
}

ServerOptions TestServerOptions(const TempDir& dir) {
  ServerOptions o;
  o.db_path = dir.Path("records.db");
  o.listen = "127.0.0.1:0";
  // The test worker sends no heartbeat while it measures, and some GMM candidates (a 32 x 2 x 8
  // unrolled tile) take GCC 30 s to compile here: a lease must outlast a batch of them.
  o.dispatcher.lease_seconds = 180;
  o.dispatcher.heartbeat_interval = 1;
  o.dispatcher.worker_timeout = 60;
  o.dispatcher.max_wait_seconds = 2;
  o.dispatcher.sweep_interval = 0.05;
  o.jobs.search_threads = 1;
  o.jobs.runner.repeat = 1;
  o.jobs.runner.min_repeat_ms = 0;
  return o;
}

std::unique_ptr<grpc::ClientContext> Context(const std::string& token, double deadline_seconds) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(deadline_seconds * 1e3)));
  return context;
}

std::unique_ptr<v1::TuningService::Stub> TuningStub(const std::string& address) {
  return v1::TuningService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
}

std::unique_ptr<v1::WorkerService::Stub> WorkerStub(const std::string& address) {
  return v1::WorkerService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
}

std::string HostCpuTarget() { return ResolveTarget("cpu").value().ToString(); }

TestWorker::TestWorker(const std::string& address, std::string token)
    : stub_(WorkerStub(address)), token_(std::move(token)) {}

TestWorker::~TestWorker() { Stop(); }

grpc::Status TestWorker::Register(const std::string& target) {
  v1::RegisterWorkerRequest request;
  request.set_host("test");
  v1::DeviceInfo* device = request.add_devices();
  device->set_target(target.empty() ? HostCpuTarget() : target);
  device->set_name("test cpu");
  device->set_ordinal(-1);
  request.mutable_software()->set_tessera_version("test");
  v1::RegisterWorkerResponse response;
  grpc::Status s = stub_->RegisterWorker(Context(token_).get(), request, &response);
  if (s.ok()) id_ = response.worker_id();
  return s;
}

absl::StatusOr<v1::WorkBatch> TestWorker::PullOnly(int max_candidates, double wait_seconds) {
  v1::PullWorkRequest request;
  request.set_worker_id(id_);
  request.set_max_candidates(max_candidates);
  request.set_wait_seconds(wait_seconds);
  v1::PullWorkResponse response;
  grpc::Status s = stub_->PullWork(Context(token_).get(), request, &response);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }
  if (!response.has_work()) return v1::WorkBatch();
  return response.batch();
}

absl::StatusOr<int> TestWorker::RunOnce(int max_candidates, double wait_seconds) {
  absl::StatusOr<v1::WorkBatch> batch = PullOnly(max_candidates, wait_seconds);
  if (!batch.ok() || batch->candidates_size() == 0) {
    return batch.ok() ? absl::StatusOr<int>(0) : batch.status();
  }
  absl::StatusOr<Target> target = Target::Parse(batch->target());
  if (!target.ok()) return target.status();
  MeasureConfig config;
  config.runner.repeat = batch->runner().repeat();
  config.runner.number = std::max(1, batch->runner().number());
  config.runner.min_repeat_ms = batch->runner().min_repeat_ms();
  config.runner.timeout_sec = batch->runner().timeout();
  config.build_parallelism = 2;
  absl::StatusOr<std::unique_ptr<LocalMeasurer>> measurer = LocalMeasurer::Create(*target, config);
  if (!measurer.ok()) return measurer.status();
  MeasureRequest request;
  request.target = *target;
  absl::StatusOr<PrimFunc> workload = LoadPrimFuncJson(batch->workload_json());
  if (!workload.ok()) return workload.status();
  request.workload = *workload;
  const std::set<std::string> check_always(batch->check_always_hashes().begin(),
                                           batch->check_always_hashes().end());
  for (const v1::Candidate& c : batch->candidates()) {
    absl::StatusOr<PrimFunc> f = LoadPrimFuncJson(c.func_json());
    if (!f.ok()) return f.status();
    if (check_always.count(c.hash())) request.check_always.push_back(request.candidates.size());
    request.candidates.push_back(*f);
  }
  request.best_secs = batch->best_seconds();
  request.verify = batch->verify();
  request.check_seed = batch->check_seed();
  request.measure_fully = batch->measure_fully();
  absl::StatusOr<MeasuredBatch> measured = (*measurer)->Measure(request);
  if (!measured.ok()) return measured.status();
  v1::ReportResultsRequest report;
  report.set_worker_id(id_);
  report.set_lease_id(batch->lease_id());
  for (int i = 0; i < batch->candidates_size(); ++i) {
    const MeasureOutcome& o = measured->outcomes[i];
    v1::CandidateResult* r = report.add_results();
    ToProto(o, r);
    r->set_candidate_id(batch->candidates(i).candidate_id());
  }
  v1::ReportResultsResponse response;
  grpc::Status s = stub_->ReportResults(Context(token_).get(), report, &response);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }
  measured_ += response.accepted();
  return response.accepted();
}

void TestWorker::Start(int max_candidates) {
  stop_ = false;
  thread_ = std::thread([this, max_candidates] {
    while (!stop_) {
      absl::StatusOr<int> n = RunOnce(max_candidates, /*wait_seconds=*/0.5);
      if (!n.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

void TestWorker::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

}  // namespace testing
}  // namespace tessera
