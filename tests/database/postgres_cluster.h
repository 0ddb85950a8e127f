// A throw-away PostgreSQL cluster for tests: initdb + postgres from Debian's postgresql package
// (/usr/lib/postgresql/<version>/bin, or $TESSERA_PG_BIN) in a temporary directory, listening
// only on a unix socket there (no TCP port, so nothing to collide with), with fsync off. One
// cluster per test process, started on first use and stopped by a gtest Environment at the end
// of the run; the postmaster also gets SIGQUIT if the test process dies first (parent-death
// signal), so nothing outlives the test. As root (initdb refuses root) the cluster runs as
// `nobody`.
#ifndef TESSERA_TESTS_DATABASE_POSTGRES_CLUSTER_H_
#define TESSERA_TESTS_DATABASE_POSTGRES_CLUSTER_H_

#include <string>

#include "absl/status/statusor.h"

namespace tessera {
namespace testing {

class PostgresCluster {
 public:
  // The cluster of this process, started if needed. nullptr when it cannot run here, with the
  // reason (binaries missing, no unprivileged user, initdb failed...) in `*why`.
  static PostgresCluster* Get(std::string* why);

  // Creates an empty database with a fresh name; returns its URL
  // ("postgresql:///NAME?host=SOCKET_DIR&port=PORT&user=tessera").
  absl::StatusOr<std::string> NewDatabase();
  // The URL of database `name` (which need not exist).
  std::string Url(const std::string& name) const;

  // Kills the server (immediate shutdown, as a crash) and starts it again on the same data:
  // open connections break without a word, committed data stays.
  absl::Status Restart();

  // Stops the server (immediate shutdown) and removes the directory. Idempotent.
  void Stop();

 private:
  PostgresCluster() = default;
  absl::Status Start();         // initdb, then StartServer
  absl::Status StartServer();   // postgres on the data directory, waited for until it answers
  void KillServer(int signal);  // SIGQUIT: immediate shutdown; SIGINT: fast shutdown

  std::string dir_;      // the temporary directory: data/, the socket, server.log
  std::string bin_dir_;  // where initdb and postgres are
  int pid_ = -1;         // the postmaster
  int run_uid_ = -1;     // the user and group the server runs as; -1: this process's
  int run_gid_ = -1;
  int next_database_ = 0;
};

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_DATABASE_POSTGRES_CLUSTER_H_
