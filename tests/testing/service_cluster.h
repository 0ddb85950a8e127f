// A tuning service on loopback for end-to-end tests and benchmarks: a real `tessera serve`
// process on 127.0.0.1 (port 0, or a given port to restart on), real `tessera worker`
// processes, clients run as commands, real SQLite files in a scratch directory. Every wait is
// bounded and the destructor kills every process it started.
#ifndef TESSERA_TESTS_TESTING_SERVICE_CLUSTER_H_
#define TESSERA_TESTS_TESTING_SERVICE_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/testing/process.h"

namespace tessera {
namespace testing {

class ServiceCluster {
 public:
  // `binary`: the tessera executable; `dir`: an existing scratch directory.
  ServiceCluster(std::string binary, std::string dir);
  ~ServiceCluster();

  // Starts `tessera serve --db <dir>/records.db --listen <listen> <extra>` and waits for its
  // "listening on HOST:PORT" line. `listen` empty: 127.0.0.1:0, or the address of the last
  // server (a restart).
  absl::Status StartServer(const std::vector<std::string>& extra = {},
                           const std::string& listen = "", double timeout_sec = 30);
  ChildProcess* server() { return server_.get(); }
  // SIGTERM and a bounded wait (SIGKILL after it); returns the exit code.
  absl::StatusOr<int> StopServer(double timeout_sec = 20);
  void KillServer();  // SIGKILL, as a crash
  const std::string& address() const { return address_; }
  std::string db_path() const { return dir_ + "/records.db"; }
  const std::string& dir() const { return dir_; }

  // Starts `tessera worker --server <address> --target cpu <extra>`.
  absl::StatusOr<ChildProcess*> StartWorker(const std::vector<std::string>& extra = {});
  std::vector<ChildProcess*> workers();

  // Runs `tessera <args>` to its end (killed after `timeout_sec`).
  CommandResult Run(const std::vector<std::string>& args, double timeout_sec = 120);
  // Runs `tessera <args> --server <address>`.
  CommandResult RunClient(std::vector<std::string> args, double timeout_sec = 120);

  // The last lines of every process's stderr, for failure messages.
  std::string Logs() const;

 private:
  std::string binary_;
  std::string dir_;
  std::string address_;
  int server_starts_ = 0;
  std::unique_ptr<ChildProcess> server_;
  std::vector<std::unique_ptr<ChildProcess>> old_servers_;
  std::vector<std::unique_ptr<ChildProcess>> workers_;
};

// A record as the service stored it, with the structural hash of the program its trace
// builds (the identity of a candidate within its task).
struct StoredRecord {
  int64_t id = -1;
  std::string workload_hash;
  std::string program_hash;
  std::string job_id;
  std::string worker_id;
  std::string error_kind;  // "" when it ran
  bool ok = false;
  bool verified = false;
  double mean_secs = 0;
};
// Every record of the SQLite database `path` (job_id empty: all jobs). Replays each trace.
absl::StatusOr<std::vector<StoredRecord>> ReadRecords(const std::string& path,
                                                      const std::string& job_id = "");
// Records that share a task and a program hash with an earlier one, as "hash@task" strings.
std::vector<std::string> Duplicates(const std::vector<StoredRecord>& records);
// "ok" when SQLite's PRAGMA integrity_check passes on `path`, else its report or the error.
std::string IntegrityCheck(const std::string& path);

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_TESTING_SERVICE_CLUSTER_H_
