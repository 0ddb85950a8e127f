// The tuning server that `tessera serve` runs: the records database, the state database
// (server/job_store.h), the dispatcher, the job manager and both gRPC services (with server
// reflection, v1 and v1alpha) on one port. Start() binds, resumes every unfinished job and returns;
// Shutdown() is graceful: no new calls or leases, running commits finish, state stays persisted.
#ifndef TESSERA_SERVER_SERVER_H_
#define TESSERA_SERVER_SERVER_H_

#include <grpcpp/server.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "database/database.h"
#include "server/auth.h"
#include "server/dispatcher.h"
#include "server/job_manager.h"
#include "server/job_store.h"
#include "server/metrics.h"
#include "server/reflection_v1.h"
#include "server/tuning_service.h"
#include "server/worker_service.h"

namespace tessera {

struct ServerOptions {
  std::string db_path;  // the records database (SQLite), created if absent
  // The state database: a SQLite file or a postgresql:// URL (shared by every server on it);
  // empty: db_path + ".state", or db_path itself when that is a postgresql:// URL.
  std::string state_path;
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  // host:port of a plaintext port that serves only the standard gRPC health service
  // (grpc.health.v1.Health), for probes that cannot use TLS or tokens (Kubernetes); empty: none.
  // The health service is also on `listen`.
  std::string health_listen;
  // host:port of a plaintext HTTP port serving the Prometheus metrics at /metrics
  // (server/metrics.h); empty: none (the metrics are still counted, see metrics()).
  std::string metrics_listen;
  DispatcherOptions dispatcher;
  JobManagerOptions jobs;
  // Checked by TokenAuth::Create (server/auth.h): at least 16 characters, no token in both.
  std::vector<std::string> client_tokens;
  std::vector<WorkerToken> worker_tokens;
  // PEM files; TLS when tls_cert_file is set. With tls_client_ca_file, clients must present a
  // certificate signed by that CA.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // Larger requests and responses are refused (RESOURCE_EXHAUSTED). `tessera serve` raises it
  // to --max-model-bytes + 4 MiB when that is more, so that a model within the flag always
  // arrives (in one SubmitJob message: docs/service.md, "Model jobs").
  int max_message_bytes = 64 << 20;
};

class TuningServer {
 public:
  ~TuningServer();  // Shutdown()
  // Errors name the file or address at fault.
  static absl::StatusOr<std::unique_ptr<TuningServer>> Start(ServerOptions options);

  // "127.0.0.1:43567": the bound address, with the port picked when listen asked for 0.
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  int health_port() const { return health_port_; }       // 0 without health_listen
  int metrics_port() const { return metrics_->port(); }  // 0 without metrics_listen
  // Blocks until Shutdown() has run (from another thread or a signal watcher).
  void Wait();
  void Shutdown();

  Database* database() { return db_.get(); }
  JobStore* store() { return store_.get(); }
  Dispatcher* dispatcher() { return dispatcher_.get(); }
  JobManager* jobs() { return jobs_.get(); }
  ServerMetrics* metrics() { return metrics_.get(); }

 private:
  TuningServer() = default;

  ServerOptions options_;
  // First, so that it outlives every part that reports to it.
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<JobManager> jobs_;
  TokenAuth auth_;
  std::unique_ptr<TuningServiceImpl> tuning_service_;
  std::unique_ptr<WorkerServiceImpl> worker_service_;
  std::unique_ptr<ReflectionV1Service> reflection_v1_;  // v1alpha is gRPC's plugin
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::Server> health_server_;  // only with health_listen
  std::string address_;
  int port_ = 0;
  int health_port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool shut_down_ = false;
};

}  // namespace tessera

#endif  // TESSERA_SERVER_SERVER_H_
