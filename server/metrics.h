// The tuning server's Prometheus metrics (prometheus-cpp) and their HTTP endpoint
// (`tessera serve --metrics-listen HOST:PORT`, text format at /metrics; docs/deploy.md lists
// every metric with example queries).
//
// Two kinds of metric:
// - events, counted as they happen by the dispatcher and the gRPC interceptor: candidates
//   measured, measurement errors by kind, lease expiries, quarantines, build and run seconds,
//   RPCs and their latency per method;
// - state, sampled from the job manager and the dispatcher at each scrape (nothing to keep in
//   step): jobs by state, candidates queued and leased per target (of the jobs this server
//   runs), live workers and the leases each holds.
// On a shared (PostgreSQL) state database each server counts what passes through it: sum the
// servers. Lease expiries and quarantines there are done, and counted, by whichever server's
// sweep reaches the rows first (each once); the per-worker lease gauges read the rows, for the
// workers registered with this server.
//
// Thread-safe. The object must outlive the server parts that report to it.
#ifndef TESSERA_SERVER_METRICS_H_
#define TESSERA_SERVER_METRICS_H_

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "database/database.h"
#include "worker/measurer.h"

namespace prometheus {
class Counter;
class Exposer;
class Registry;
template <typename T>
class Family;
class Histogram;
}  // namespace prometheus

namespace tessera {

class Dispatcher;
class JobManager;

class ServerMetrics {
 public:
  ServerMetrics();
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // Where the sampled metrics come from; either may be null (its metrics are then absent).
  // Both must outlive this object, or be unset (nullptr) before they go.
  void SetSources(JobManager* jobs, Dispatcher* dispatcher);

  // Serves /metrics over HTTP on `address` ("127.0.0.1:9464"; port 0 picks one).
  // kUnavailable naming the address when it cannot listen.
  absl::Status Listen(const std::string& address);
  int port() const { return port_; }  // the bound port after Listen; 0 before

  // --- Events ---
  // A worker's outcome of one candidate of a `target` job was accepted.
  void CandidateMeasured(const std::string& target, const MeasureOutcome& outcome);
  // `n` outcomes were accepted whose kinds and times are not known (the shared queue accepted
  // only part of a report).
  void CandidatesMeasured(const std::string& target, int n);
  void LeaseExpired();
  // A candidate was given up after too many expired leases (its outcome is worker_lost).
  void CandidateQuarantined(const std::string& target);
  // One RPC ended: `method` as "TuningService/SubmitJob", `code` as "OK", "NOT_FOUND", ...
  void RpcFinished(const std::string& method, const std::string& code, double seconds);

  // The text exposition of every metric, what /metrics answers (for tests and logs).
  std::string Render() const;

  // A gRPC interceptor factory that times every call of the server it is installed on and
  // reports it with RpcFinished.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewRpcInterceptorFactory();

 private:
  class Sampler;

  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<Sampler> sampler_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;

  prometheus::Family<prometheus::Counter>* measured_;
  prometheus::Family<prometheus::Counter>* errors_;
  prometheus::Family<prometheus::Counter>* quarantined_;
  prometheus::Counter* lease_expiries_;
  prometheus::Counter* build_seconds_;
  prometheus::Counter* run_seconds_;
  prometheus::Family<prometheus::Counter>* rpcs_;
  prometheus::Family<prometheus::Histogram>* rpc_seconds_;
};

}  // namespace tessera

#endif  // TESSERA_SERVER_METRICS_H_
