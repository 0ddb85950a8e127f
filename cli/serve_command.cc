// `tessera serve`: runs the tuning server (server/server.h) until SIGTERM or SIGINT. Prints
// "listening on HOST:PORT" on stdout once it accepts calls (with --listen HOST:0 the port is
// the one picked; with --health-listen a line "health on HOST:PORT", then with --metrics-listen
// "metrics on http://HOST:PORT/metrics"),
// logs with job and worker ids on stderr, and on a signal shuts down
// gracefully: no new calls or leases, running commits finish, state stays in the state
// database for the next start, exit code 0.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "base/logging.h"
#include "cli/commands.h"
#include "server/auth.h"
#include "server/server.h"

namespace tessera {
namespace cli {
namespace {

struct ServeOptions {
  std::string db_path;
  std::string state_path;
  std::string listen = "127.0.0.1:50051";
  std::string health_listen;
  std::string metrics_listen;
  double lease_seconds = 60;
  double heartbeat_seconds = 10;
  int max_attempts = 3;
  int search_threads = 0;
  double claim_seconds = 30;
  JobManagerOptions limits;  // only its max_* fields are read
  std::vector<std::string> client_tokens;
  std::vector<std::string> worker_tokens;
  std::vector<std::string> client_token_files;
  std::vector<std::string> worker_token_files;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  bool quiet = false;
};

// The tokens of the flags and then of the files; TuningServer::Start checks the whole set.
absl::Status CollectTokens(const ServeOptions& o, ServerOptions* options) {
  options->client_tokens = o.client_tokens;
  for (const std::string& t : o.worker_tokens) options->worker_tokens.push_back(WorkerToken{t, {}});
  for (const std::string& f : o.client_token_files) {
    absl::StatusOr<std::vector<std::string>> tokens = ReadClientTokenFile(f);
    if (!tokens.ok()) return tokens.status();
    options->client_tokens.insert(options->client_tokens.end(), tokens->begin(), tokens->end());
  }
  for (const std::string& f : o.worker_token_files) {
    absl::StatusOr<std::vector<WorkerToken>> tokens = ReadWorkerTokenFile(f);
    if (!tokens.ok()) return tokens.status();
    options->worker_tokens.insert(options->worker_tokens.end(), tokens->begin(), tokens->end());
  }
  return absl::OkStatus();
}

int RunServe(const ServeOptions& o) {
  if (!o.quiet && MinLogLevel() > LogLevel::kInfo) SetMinLogLevel(LogLevel::kInfo);
  ServerOptions options;
  options.db_path = o.db_path;
  options.state_path = o.state_path;
  options.listen = o.listen;
  options.health_listen = o.health_listen;
  options.metrics_listen = o.metrics_listen;
  options.dispatcher.lease_seconds = o.lease_seconds;
  options.dispatcher.heartbeat_interval = std::min(o.heartbeat_seconds, o.lease_seconds / 3);
  options.dispatcher.worker_timeout =
      std::max(3 * options.dispatcher.heartbeat_interval, o.lease_seconds) +
      options.dispatcher.max_wait_seconds;
  options.dispatcher.max_attempts = o.max_attempts;
  options.jobs.search_threads = o.search_threads;
  options.jobs.claim_seconds = o.claim_seconds;
  options.jobs.max_trials = o.limits.max_trials;
  options.jobs.max_workloads = o.limits.max_workloads;
  options.jobs.max_buffer_bytes = o.limits.max_buffer_bytes;
  options.jobs.max_model_bytes = o.limits.max_model_bytes;
  // Room for the request's other fields beside the largest model.
  options.max_message_bytes = static_cast<int>(
      std::max<int64_t>(options.max_message_bytes, o.limits.max_model_bytes + (4 << 20)));
  if (absl::Status read = CollectTokens(o, &options); !read.ok()) return ReportError(read);
  options.tls_cert_file = o.tls_cert;
  options.tls_key_file = o.tls_key;
  options.tls_client_ca_file = o.tls_client_ca;

  // Signals are taken by one thread with sigwait; every other thread (gRPC's included, created
  // after this) inherits the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<TuningServer>> server = TuningServer::Start(options);
  if (!server.ok()) return ReportError(server.status());
  std::printf("listening on %s\n", (*server)->address().c_str());
  if (!o.health_listen.empty()) {
    const std::string& h = o.health_listen;
    std::printf("health on %s:%d\n", h.substr(0, h.rfind(':')).c_str(), (*server)->health_port());
  }
  if (!o.metrics_listen.empty()) {
    const std::string& m = o.metrics_listen;
    std::printf("metrics on http://%s:%d/metrics\n", m.substr(0, m.rfind(':')).c_str(),
                (*server)->metrics_port());
  }
  std::fflush(stdout);

  TuningServer* s = server->get();
  std::thread watcher([s, signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    TESSERA_LOG(INFO) << "received " << (sig == SIGTERM ? "SIGTERM" : "SIGINT");
    s->Shutdown();
  });
  s->Wait();
  watcher.join();
  return 0;
}

}  // namespace

Command RegisterServeCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand(
      "serve", "Run the tuning server: jobs over gRPC, measured by `tessera worker` daemons");
  auto o = std::make_shared<ServeOptions>();
  app->add_option("--db", o->db_path,
                  "Tuning records database: a SQLite file (created if missing) or a "
                  "postgresql:// URL")
      ->required();
  app->add_option("--state", o->state_path,
                  "State database for jobs and queued candidates: a SQLite file or a "
                  "postgresql:// URL, which several servers share (default: <db>.state, or the "
                  "--db URL itself when it is PostgreSQL)");
  app->add_option("--claim-seconds", o->claim_seconds,
                  "Shared (PostgreSQL) state: a job's claim by this server lasts this long unless "
                  "renewed; a dead server's jobs pass to another after it")
      ->check(CLI::Range(0.3, 3600.0))
      ->capture_default_str();
  app->add_option("--listen", o->listen, "Address to listen on, HOST:PORT (port 0: pick one)")
      ->capture_default_str();
  app->add_option("--health-listen", o->health_listen,
                  "Also serve the standard gRPC health service, alone and in plaintext, on "
                  "HOST:PORT (for Kubernetes probes)");
  app->add_option("--metrics-listen", o->metrics_listen,
                  "Serve Prometheus metrics over plain HTTP at http://HOST:PORT/metrics, "
                  "without tokens or TLS: keep it on loopback or a private network (the "
                  "usual port is 127.0.0.1:9464; port 0 picks one; default: off)");
  app->add_option("--lease-seconds", o->lease_seconds,
                  "A lease not reported or renewed within this many seconds expires")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  app->add_option("--heartbeat-seconds", o->heartbeat_seconds,
                  "Heartbeat interval asked of workers (at most a third of the lease)")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  app->add_option("--max-attempts", o->max_attempts,
                  "Expired leases before a candidate is quarantined as worker_lost")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app->add_option("--max-job-trials", o->limits.max_trials,
                  "Largest trial budget one job may ask for")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  app->add_option("--max-job-workloads", o->limits.max_workloads,
                  "Most workloads (tasks) in one job")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app->add_option("--max-buffer-bytes", o->limits.max_buffer_bytes,
                  "Most bytes a workload's argument buffers may take together (a worker "
                  "allocates them for every candidate)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 50))
      ->capture_default_str();
  // Bounded so that the message limit above it (server/server.h) stays an int.
  app->add_option("--max-model-bytes", o->limits.max_model_bytes,
                  "Largest ONNX model a job may submit (one SubmitJob message; the server's "
                  "message limit is raised to hold it)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  app->add_option("--search-threads", o->search_threads,
                  "Search threads of each job (default: hardware threads)");
  app->add_option("--client-token", o->client_tokens,
                  "A client-scope bearer token, at least 16 characters (repeatable; prefer "
                  "--client-token-file)");
  app->add_option("--worker-token", o->worker_tokens,
                  "A worker-scope bearer token, at least 16 characters, for workers of any target "
                  "(repeatable; prefer --worker-token-file)");
  app->add_option("--client-token-file", o->client_token_files,
                  "File of client tokens, one a line (repeatable; a file without a token is an "
                  "error)");
  app->add_option("--worker-token-file", o->worker_token_files,
                  "File of worker tokens, one a line, each optionally followed by the targets its "
                  "workers may serve: \"TOKEN cpu -cores=8 -vector_bits=512; cuda\" (repeatable; "
                  "docs/service.md)");
  app->add_option("--tls-cert", o->tls_cert, "Server certificate chain (PEM): serve TLS");
  app->add_option("--tls-key", o->tls_key, "Server private key (PEM)");
  app->add_option("--tls-client-ca", o->tls_client_ca,
                  "CA (PEM) that client certificates must chain to: require client certificates");
  app->add_flag("--quiet", o->quiet, "Log warnings and errors only");
  return {app, [o]() { return RunServe(*o); }};
}

}  // namespace cli
}  // namespace tessera
