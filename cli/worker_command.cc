// `tessera worker`: the measuring daemon (worker/daemon.h). Connects out to `--server`,
// registers its device, pulls batches, measures and reports them until SIGTERM or SIGINT; then
// it finishes the current batch (or, after --drain-timeout, leaves its lease to expire) and
// exits 0.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "cli/client.h"
#include "cli/commands.h"
#include "worker/daemon.h"

namespace tessera {
namespace cli {
namespace {

struct WorkerCommandOptions {
  ClientOptions client;
  WorkerDaemonOptions daemon;
};

// SIGTERM/SIGINT write a byte here; a thread reads it and stops the daemon (Stop() is not
// async-signal-safe).
int g_signal_pipe[2] = {-1, -1};

void OnSignal(int) {
  char byte = 's';
  ssize_t ignored = write(g_signal_pipe[1], &byte, 1);
  (void)ignored;
}

int RunWorker(WorkerCommandOptions o) {
  absl::StatusOr<Client> client = Connect(o.client);
  if (!client.ok()) return ReportError(client.status());
  o.daemon.token = client->token;
  o.daemon.server_label = o.client.server;
  o.daemon.tls_ca = o.client.tls_ca;
  absl::StatusOr<std::unique_ptr<WorkerDaemon>> daemon =
      WorkerDaemon::Create(client->channel, o.daemon);
  if (!daemon.ok()) return ReportError(daemon.status());

  if (pipe(g_signal_pipe) != 0) {
    return ReportError(absl::InternalError("worker: cannot create the signal pipe"));
  }
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  WorkerDaemon* d = daemon->get();
  std::thread watcher([d] {
    char byte = 0;
    while (read(g_signal_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    if (byte == 's') {
      std::fprintf(stderr, "tessera worker: stopping (signal received)\n");
      d->Stop();
    }
  });
  absl::Status status = d->Run();
  char done = 'q';
  ssize_t ignored = write(g_signal_pipe[1], &done, 1);
  (void)ignored;
  watcher.join();
  if (d->abandoned()) {
    // A measurement is still running on another thread; the process ends without waiting.
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(0);
  }
  if (!status.ok()) return ReportError(status);
  return 0;
}

}  // namespace

Command RegisterWorkerCommand(CLI::App* root) {
  CLI::App* app =
      root->add_subcommand("worker", "Run a worker daemon: measure candidates for a tuning server");
  auto o = std::make_shared<WorkerCommandOptions>();
  o->client.AddOptions(app);
  app->add_option("--target", o->daemon.target,
                  "What to measure on: cpu (this host), or cuda (GPU --device)")
      ->capture_default_str();
  app->add_option("--device", o->daemon.device,
                  "CUDA device ordinal of a cuda worker (one worker process per GPU)")
      ->capture_default_str();
  app->add_option("--build-parallelism", o->daemon.build_parallelism,
                  "Concurrent builds (default: all cores)");
  app->add_option("--max-candidates", o->daemon.max_candidates,
                  "At most this many candidates per batch (default: the server's batch size)");
  app->add_option("--pull-wait", o->daemon.pull_wait_sec,
                  "Seconds a pull waits at the server for work")
      ->capture_default_str();
  app->add_option("--max-backoff", o->daemon.max_backoff_sec,
                  "Longest wait between reconnection attempts, seconds")
      ->capture_default_str();
  app->add_option("--drain-timeout", o->daemon.drain_timeout_sec,
                  "On SIGTERM, seconds the current batch may still take before it is abandoned")
      ->capture_default_str();
  app->add_option("--max-handshake-failures", o->daemon.max_handshake_failures,
                  "Exit 1 after this many TLS handshakes in a row failed (0: retry forever)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app->add_option("--work-dir", o->daemon.work_dir,
                  "Directory for build artifacts (default: a temporary directory)");
  return {app, [o]() { return RunWorker(*o); }};
}

}  // namespace cli
}  // namespace tessera
