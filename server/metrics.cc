#include "server/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <chrono>
#include <climits>
#include <exception>
#include <map>
#include <set>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/dispatcher.h"
#include "server/job_manager.h"

namespace tessera {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily GaugeFamily(std::string name, std::string help) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = MetricType::Gauge;
  return f;
}

void AddGauge(MetricFamily* family, std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  family->metric.push_back(std::move(m));
}

// Upper bounds of the RPC latency buckets, seconds: from a cached GetJob (~1 ms) to PullWork's
// long poll (up to 30 s); streams (WatchJob) land in +Inf.
const prometheus::Histogram::BucketBoundaries& RpcBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  return *buckets;
}

// Times one call: from the interceptor's creation (the call arrived) to the status it sends.
class RpcTimer : public grpc::experimental::Interceptor {
 public:
  RpcTimer(ServerMetrics* metrics, std::string method)
      : metrics_(metrics), method_(std::move(method)), start_(std::chrono::steady_clock::now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      // gRPC and absl share the canonical codes; absl names them ("NOT_FOUND").
      const auto code = static_cast<absl::StatusCode>(methods->GetSendStatus().error_code());
      metrics_->RpcFinished(method_, absl::StatusCodeToString(code), seconds);
    }
    methods->Proceed();
  }

 private:
  ServerMetrics* const metrics_;
  const std::string method_;
  const std::chrono::steady_clock::time_point start_;
};

class RpcTimerFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcTimerFactory(ServerMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    // "/tessera.v1.TuningService/SubmitJob" -> "TuningService/SubmitJob".
    std::string method = info->method() == nullptr ? "" : info->method();
    const size_t slash = method.find('/', 1);
    const size_t dot = method.rfind('.', slash);
    if (slash != std::string::npos && dot != std::string::npos) method = method.substr(dot + 1);
    if (!method.empty() && method[0] == '/') method = method.substr(1);
    return new RpcTimer(metrics_, std::move(method));
  }

 private:
  ServerMetrics* const metrics_;
};

}  // namespace

// The state metrics, computed from the job manager and the dispatcher at each scrape.
class ServerMetrics::Sampler : public prometheus::Collectable {
 public:
  void Set(JobManager* jobs, Dispatcher* dispatcher) {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_ = jobs;
    dispatcher_ = dispatcher;
  }

  std::vector<MetricFamily> Collect() const override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<MetricFamily> out;
    if (jobs_ != nullptr) {
      MetricFamily jobs = GaugeFamily("tessera_jobs", "Jobs in the state database, by state");
      std::map<JobState, int> by_state;
      for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded,
                         JobState::kFailed, JobState::kCancelled}) {
        by_state[s] = 0;
      }
      absl::StatusOr<std::vector<JobSnapshot>> listed = jobs_->List({}, INT_MAX);
      if (listed.ok()) {
        // Queue depth per target: the pending batches of the unfinished jobs this server runs.
        std::map<std::string, std::pair<int, int>> by_target;  // queued, leased
        for (const JobSnapshot& j : *listed) {
          ++by_state[j.row.state];
          if (IsFinal(j.row.state) || j.row.target.empty()) continue;
          by_target[j.row.target].first += j.queued;
          by_target[j.row.target].second += j.in_flight;
        }
        for (const auto& [state, n] : by_state) {
          AddGauge(&jobs, {{"state", JobStateName(state)}}, n);
        }
        MetricFamily queued =
            GaugeFamily("tessera_queued_candidates",
                        "Candidates waiting for a worker, by target (queue depth)");
        MetricFamily leased =
            GaugeFamily("tessera_leased_candidates",
                        "Candidates leased to workers and not reported, by target");
        for (const auto& [target, n] : by_target) {
          AddGauge(&queued, {{"target", target}}, n.first);
          AddGauge(&leased, {{"target", target}}, n.second);
        }
        for (MetricFamily* f : {&jobs, &queued, &leased}) out.push_back(std::move(*f));
      }
    }
    if (dispatcher_ != nullptr) {
      DispatcherStats stats = dispatcher_->Stats();
      MetricFamily workers = GaugeFamily("tessera_workers", "Registered live workers");
      AddGauge(&workers, {}, stats.workers.size());
      MetricFamily leases =
          GaugeFamily("tessera_worker_leases", "Live leases held by each live worker");
      MetricFamily worker_candidates = GaugeFamily(
          "tessera_worker_leased_candidates", "Unreported candidates leased to each live worker");
      for (const DispatcherStats::WorkerLoad& w : stats.workers) {
        AddGauge(&leases, {{"host", w.host}, {"worker", w.id}}, w.leases);
        AddGauge(&worker_candidates, {{"host", w.host}, {"worker", w.id}}, w.candidates);
      }
      for (MetricFamily* f : {&workers, &leases, &worker_candidates}) {
        out.push_back(std::move(*f));
      }
    }
    return out;
  }

 private:
  mutable std::mutex mu_;  // held while sampling, so Set(nullptr, nullptr) waits for a scrape
  JobManager* jobs_ = nullptr;
  Dispatcher* dispatcher_ = nullptr;
};

ServerMetrics::ServerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()), sampler_(std::make_shared<Sampler>()) {
  measured_ = &prometheus::BuildCounter()
                   .Name("tessera_candidates_measured_total")
                   .Help(
                       "Candidate outcomes reported by workers and accepted, by target "
                       "(failures included; rate() gives candidates per second)")
                   .Register(*registry_);
  errors_ = &prometheus::BuildCounter()
                 .Name("tessera_measure_errors_total")
                 .Help(
                     "Candidates without a valid measurement, by target and error kind "
                     "(build_error, run_error, timeout, wrong_output, worker_lost)")
                 .Register(*registry_);
  quarantined_ = &prometheus::BuildCounter()
                      .Name("tessera_quarantined_candidates_total")
                      .Help("Candidates given up as worker_lost after too many expired leases")
                      .Register(*registry_);
  lease_expiries_ = &prometheus::BuildCounter()
                         .Name("tessera_lease_expiries_total")
                         .Help("Leases that expired (neither reported nor renewed in time)")
                         .Register(*registry_)
                         .Add({});
  build_seconds_ = &prometheus::BuildCounter()
                        .Name("tessera_candidate_build_seconds_total")
                        .Help("Seconds workers spent generating and compiling candidates")
                        .Register(*registry_)
                        .Add({});
  run_seconds_ = &prometheus::BuildCounter()
                      .Name("tessera_candidate_run_seconds_total")
                      .Help("Seconds of timed kernel runs reported by workers")
                      .Register(*registry_)
                      .Add({});
  rpcs_ = &prometheus::BuildCounter()
               .Name("tessera_rpcs_total")
               .Help("gRPC calls served, by method and status code")
               .Register(*registry_);
  rpc_seconds_ = &prometheus::BuildHistogram()
                      .Name("tessera_rpc_duration_seconds")
                      .Help(
                          "gRPC call latency by method, from arrival to the status sent "
                          "(streams and long polls included)")
                      .Register(*registry_);
}

ServerMetrics::~ServerMetrics() {
  exposer_.reset();  // no scrape runs past this point
  SetSources(nullptr, nullptr);
}

void ServerMetrics::SetSources(JobManager* jobs, Dispatcher* dispatcher) {
  sampler_->Set(jobs, dispatcher);
}

absl::Status ServerMetrics::Listen(const std::string& address) {
  if (exposer_ != nullptr) return absl::FailedPreconditionError("metrics: already listening");
  try {
    // One thread: scrapes are rare and each takes a lock of the dispatcher.
    auto exposer = std::make_unique<prometheus::Exposer>(address, /*num_threads=*/1);
    std::vector<int> ports = exposer->GetListeningPorts();
    if (ports.empty()) {
      return absl::UnavailableError(absl::StrCat("metrics: cannot listen on ", address));
    }
    exposer->RegisterCollectable(registry_);
    exposer->RegisterCollectable(sampler_);
    port_ = ports[0];
    exposer_ = std::move(exposer);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("metrics: cannot listen on ", address, ": ", e.what()));
  }
  return absl::OkStatus();
}

void ServerMetrics::CandidateMeasured(const std::string& target, const MeasureOutcome& outcome) {
  measured_->Add({{"target", target}}).Increment();
  if (outcome.error != MeasureError::kNone) {
    errors_->Add({{"target", target}, {"kind", MeasureErrorName(outcome.error)}}).Increment();
  }
  double run_secs = 0;
  for (double t : outcome.run_secs) run_secs += t;
  if (outcome.build_secs > 0) build_seconds_->Increment(outcome.build_secs);
  if (run_secs > 0) run_seconds_->Increment(run_secs);
}

void ServerMetrics::CandidatesMeasured(const std::string& target, int n) {
  if (n > 0) measured_->Add({{"target", target}}).Increment(n);
}

void ServerMetrics::LeaseExpired() { lease_expiries_->Increment(); }

void ServerMetrics::CandidateQuarantined(const std::string& target) {
  quarantined_->Add({{"target", target}}).Increment();
  errors_->Add({{"target", target}, {"kind", MeasureErrorName(MeasureError::kWorkerLost)}})
      .Increment();
}

void ServerMetrics::RpcFinished(const std::string& method, const std::string& code,
                                double seconds) {
  rpcs_->Add({{"method", method}, {"code", code}}).Increment();
  rpc_seconds_->Add({{"method", method}}, RpcBuckets()).Observe(seconds);
}

std::string ServerMetrics::Render() const {
  std::vector<MetricFamily> families = registry_->Collect();
  std::vector<MetricFamily> sampled = sampler_->Collect();
  families.insert(families.end(), sampled.begin(), sampled.end());
  return prometheus::TextSerializer().Serialize(families);
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
ServerMetrics::NewRpcInterceptorFactory() {
  return std::make_unique<RpcTimerFactory>(this);
}

}  // namespace tessera
