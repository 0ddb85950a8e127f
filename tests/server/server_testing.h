// Helpers for the server tests: a temporary directory, a server on 127.0.0.1:0 over real SQLite
// files, and a worker in miniature that talks gRPC to it and measures with a real
// LocalMeasurer (the daemon itself: tests/worker/daemon_test.cc, and as `tessera worker`
// tests/cli/worker_command_test.cc).
#ifndef TESSERA_TESTS_SERVER_SERVER_TESTING_H_
#define TESSERA_TESTS_SERVER_SERVER_TESTING_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/tessera.grpc.pb.h"
#include "server/job_store.h"
#include "server/server.h"
#include "tests/testing/scoped_temp_dir.h"

namespace tessera {
namespace testing {

// A fresh directory, removed with its files when it goes out of scope (kept when the test
// failed).
using TempDir = ScopedTempDir;

// Options for a test server: records and state in `dir`, short leases and sweeps.
ServerOptions TestServerOptions(const TempDir& dir);

// A job of two workloads on cpu (16 trials, priority 3, seed 7, unverified, named "nightly"),
// and `n` candidates with distinct traces and hashes: rows for the job store tests.
JobSpec TestJobSpec();
std::vector<NewCandidate> TestCandidates(int n);

// A client context with "authorization: Bearer <token>" (none when empty) and a deadline.
std::unique_ptr<grpc::ClientContext> Context(const std::string& token = "",
                                             double deadline_seconds = 30);

std::unique_ptr<v1::TuningService::Stub> TuningStub(const std::string& address);
std::unique_ptr<v1::WorkerService::Stub> WorkerStub(const std::string& address);

// The host CPU's full target string (what a cpu worker registers).
std::string HostCpuTarget();

class TestWorker {
 public:
  explicit TestWorker(const std::string& address, std::string token = "");
  ~TestWorker();  // Stop()
  // Registers one device with `target` (empty: the host CPU).
  grpc::Status Register(const std::string& target = "");
  // Pulls one batch (at most `max_candidates`), measures it and reports it; the number of
  // candidates measured (0: no work within `wait_seconds`).
  absl::StatusOr<int> RunOnce(int max_candidates = 0, double wait_seconds = 1);
  // Pulls one batch and never reports it (a worker that died with its lease).
  absl::StatusOr<v1::WorkBatch> PullOnly(int max_candidates = 0, double wait_seconds = 1);
  // RunOnce in a background thread until Stop().
  void Start(int max_candidates = 0);
  void Stop();
  const std::string& id() const { return id_; }
  int measured() const { return measured_.load(); }
  v1::WorkerService::Stub* stub() { return stub_.get(); }

 private:
  std::unique_ptr<v1::WorkerService::Stub> stub_;
  std::string token_;
  std::string id_;
  std::atomic<int> measured_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_SERVER_SERVER_TESTING_H_
