// The worker daemon (`tessera worker`): connects out to a tuning server, registers its device
// with the full target string and the software that measures, then loops
//
//   PullWork (long poll) -> a leased batch of one task's candidates (IR JSON)
//   LocalMeasurer::Measure (builds in parallel, runs one at a time in child processes, checks
//                           new bests against the workload)
//   ReportResults (per candidate: error kind, seconds per run, verified, log)
//
// while a heartbeat thread renews the lease of the batch being measured. A kernel that crashes
// or hangs costs one measurement (the CPU and CUDA runners run kernels in child processes).
// When the server goes away, the daemon reconnects and registers again with exponential
// back-off (bounded). A batch whose lease the server revokes (a heartbeat's answer says so: the
// job was cancelled, or the lease expired) stops measuring at once, after the run in progress,
// and is dropped: its candidates are someone else's now. Stop()
// (SIGTERM in the command) lets the current batch finish and report, or, if that takes longer
// than the drain time-out, abandons it (its lease expires on the server and the candidates go
// back to the queue).
//
// Logs go to stderr, one line per event, with the worker id and the lease id.
// Thread-safety: Run() on one thread; Stop() from any thread.
#ifndef TESSERA_WORKER_DAEMON_H_
#define TESSERA_WORKER_DAEMON_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/channel.h"

namespace tessera {

struct WorkerDaemonOptions {
  std::string target = "cpu";    // "cpu", "cuda", or a full target string; resolved on Create
  int device = 0;                // CUDA device ordinal (cuda only)
  std::string token;             // bearer token of worker scope; empty: send none
  std::string server_label;      // the server address, for log lines
  int build_parallelism = 0;     // concurrent builds; <= 0: hardware threads
  int max_candidates = 0;        // per batch; 0: the server's batch size
  double pull_wait_sec = 10;     // long-poll time of PullWork
  double rpc_timeout_sec = 20;   // every other RPC
  double min_backoff_sec = 0.5;  // reconnect back-off, doubled up to max_backoff_sec
  double max_backoff_sec = 30;
  // After Stop(): how long the current batch may still take before it is abandoned.
  double drain_timeout_sec = 60;
  std::string work_dir;  // build artifacts; empty: a temporary directory
  // Registrations in a row whose TLS handshake failed before Run() gives up (0: never). A
  // handshake that fails every time is a configuration error (most often a --tls-ca that did
  // not sign the server's certificate), which retrying cannot fix.
  int max_handshake_failures = 5;
  std::string tls_ca;  // the --tls-ca file, for that message; empty: none given
};

class WorkerDaemon {
 public:
  ~WorkerDaemon();
  // Resolves the target (for cuda, of GPU `device`; kFailedPrecondition without one) and sets
  // up the measurer. Connects nothing yet.
  static absl::StatusOr<std::unique_ptr<WorkerDaemon>> Create(
      std::shared_ptr<grpc::Channel> channel, WorkerDaemonOptions options);

  // Serves until Stop(). OK after Stop(); an error only for what retrying cannot fix: the
  // server refused the token (UNAUTHENTICATED, PERMISSION_DENIED) or the registration
  // (INVALID_ARGUMENT), or max_handshake_failures TLS handshakes failed in a row
  // (FAILED_PRECONDITION). When it returns after abandoning a batch, a measurement may still run
  // on another thread: the caller must then end the process (abandoned() says so).
  absl::Status Run();
  // Asks Run() to return after the current batch (thread-safe, idempotent; not
  // async-signal-safe: call it from a thread that waits for the signal).
  void Stop();
  bool abandoned() const;

  // The resolved target string this worker measures on.
  const std::string& target() const;

 private:
  class Impl;
  explicit WorkerDaemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera

#endif  // TESSERA_WORKER_DAEMON_H_
