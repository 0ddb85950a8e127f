// The test PostgreSQL cluster (postgres_cluster.h).
#include "tests/database/postgres_cluster.h"

#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gtest/gtest.h"

namespace tessera {
namespace testing {
namespace {

constexpr int kPort = 5432;  // only names the socket file: the server has no TCP listener
constexpr const char* kUser = "tessera";

// Who runs the cluster's processes: this process's user, or `nobody` when this is root.
struct RunAs {
  bool drop = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

// Starts `argv` with stdout and stderr appended to `log`; as `as`; with SIGQUIT on the death
// of this thread if `die_with_parent`. Returns the child's pid.
absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const RunAs& as,
                            const std::string& log, bool die_with_parent) {
  int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return absl::InternalError(absl::StrCat("postgres cluster: cannot open ", log));
  if (as.drop && fchown(log_fd, as.uid, as.gid) != 0) {
    close(log_fd);
    return absl::InternalError(absl::StrCat("postgres cluster: cannot chown ", log));
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    return absl::InternalError("postgres cluster: fork failed");
  }
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    if (as.drop && (setgroups(0, nullptr) != 0 || setgid(as.gid) != 0 || setuid(as.uid) != 0)) {
      _exit(126);
    }
    // Set after the credentials change, which clears it.
    if (die_with_parent && (prctl(PR_SET_PDEATHSIG, SIGQUIT) != 0 || getppid() != parent)) {
      _exit(126);
    }
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(log_fd);
  return pid;
}

std::string Tail(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  return s.size() > 1500 ? s.substr(s.size() - 1500) : s;
}

// The directory holding initdb and postgres: $TESSERA_PG_BIN, else the newest
// /usr/lib/postgresql/<version>/bin.
std::string FindBinDir() {
  if (const char* env = getenv("TESSERA_PG_BIN"); env != nullptr && env[0] != '\0') return env;
  std::string best;
  int best_version = -1;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    int version = atoi(entry.path().filename().c_str());
    std::string bin = entry.path().string() + "/bin";
    if (version > best_version && access((bin + "/initdb").c_str(), X_OK) == 0 &&
        access((bin + "/postgres").c_str(), X_OK) == 0) {
      best_version = version;
      best = bin;
    }
  }
  return best;
}

PostgresCluster* g_cluster = nullptr;
bool g_tried = false;
std::string g_why;

// Stops the cluster once every test of the process has run.
class StopClusterAtEnd : public ::testing::Environment {
 public:
  void TearDown() override {
    if (g_cluster != nullptr) g_cluster->Stop();
  }
};
[[maybe_unused]] ::testing::Environment* const kStopClusterAtEnd =
    ::testing::AddGlobalTestEnvironment(new StopClusterAtEnd);

}  // namespace

PostgresCluster* PostgresCluster::Get(std::string* why) {
  if (!g_tried) {
    g_tried = true;
    auto cluster = std::unique_ptr<PostgresCluster>(new PostgresCluster());
    absl::Status status = cluster->Start();
    if (status.ok()) {
      g_cluster = cluster.release();
    } else {
      cluster->Stop();
      g_why = std::string(status.message());
    }
  }
  if (g_cluster == nullptr) *why = g_why;
  return g_cluster;
}

absl::Status PostgresCluster::Start() {
  bin_dir_ = FindBinDir();
  if (bin_dir_.empty()) {
    return absl::FailedPreconditionError(
        "no PostgreSQL server binaries (initdb, postgres) in /usr/lib/postgresql/*/bin or "
        "$TESSERA_PG_BIN: install Debian's postgresql package (scripts/setup.sh does)");
  }
  RunAs as;
  if (geteuid() == 0) {
    struct passwd* nobody = getpwnam("nobody");
    if (nobody == nullptr) {
      return absl::FailedPreconditionError(
          "running as root, and there is no user 'nobody' to run the PostgreSQL test cluster "
          "as (initdb refuses root)");
    }
    as = RunAs{true, nobody->pw_uid, nobody->pw_gid};
    run_uid_ = static_cast<int>(nobody->pw_uid);
    run_gid_ = static_cast<int>(nobody->pw_gid);
  }
  std::string pattern = ::testing::TempDir() + "tessera_pg_XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("postgres cluster: mkdtemp ", pattern, " failed"));
  }
  dir_ = pattern;
  if (as.drop && chown(dir_.c_str(), as.uid, as.gid) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("postgres cluster: cannot chown ", dir_));
  }
  const std::string data = dir_ + "/data", log = dir_ + "/server.log";
  TESSERA_ASSIGN_OR_RETURN(
      pid_t initdb, Spawn({bin_dir_ + "/initdb", "--no-sync", "--auth=trust", "--username=tessera",
                           "--encoding=UTF8", "--locale=C", "-D", data},
                          as, log, /*die_with_parent=*/false));
  int wstatus = 0;
  waitpid(initdb, &wstatus, 0);
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return absl::InternalError(
        absl::StrCat("postgres cluster: initdb failed (status ", wstatus, "): ", Tail(log)));
  }
  return StartServer();
}

absl::Status PostgresCluster::StartServer() {
  RunAs as;
  if (run_uid_ >= 0) {
    as = RunAs{true, static_cast<uid_t>(run_uid_), static_cast<gid_t>(run_gid_)};
  }
  const std::string data = dir_ + "/data", log = dir_ + "/server.log";
  TESSERA_ASSIGN_OR_RETURN(
      pid_, Spawn({bin_dir_ + "/postgres", "-D", data, "-k", dir_, "-p", std::to_string(kPort),
                   "-c", "listen_addresses=", "-c", "fsync=off", "-c", "full_page_writes=off", "-c",
                   "max_connections=60", "-c", "shared_buffers=16MB"},
                  as, log, /*die_with_parent=*/true));
  const std::string conninfo =
      absl::StrCat("host=", dir_, " port=", kPort, " user=", kUser, " dbname=postgres");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int wstatus = 0;
  while (PQping(conninfo.c_str()) != PQPING_OK) {
    if (waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::InternalError(
          absl::StrCat("postgres cluster: the server exited (status ", wstatus, "): ", Tail(log)));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("postgres cluster: not ready after 60 s: ", Tail(log)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::OkStatus();
}

std::string PostgresCluster::Url(const std::string& name) const {
  return absl::StrCat("postgresql:///", name, "?host=", dir_, "&port=", kPort, "&user=", kUser);
}

absl::StatusOr<std::string> PostgresCluster::NewDatabase() {
  const std::string name = absl::StrCat("test_", next_database_++);
  PGconn* conn = PQconnectdb(Url("postgres").c_str());
  std::string error;
  if (PQstatus(conn) != CONNECTION_OK) {
    error = PQerrorMessage(conn);
  } else {
    PGresult* result = PQexec(conn, absl::StrCat("CREATE DATABASE ", name).c_str());
    if (PQresultStatus(result) != PGRES_COMMAND_OK) error = PQresultErrorMessage(result);
    PQclear(result);
  }
  PQfinish(conn);
  if (!error.empty()) {
    return absl::InternalError(
        absl::StrCat("postgres cluster: create database ", name, ": ", error));
  }
  return Url(name);
}

absl::Status PostgresCluster::Restart() {
  // Immediate shutdown, as a crash: backends exit without a word to their clients. Commits
  // survive it (synchronous_commit stays on; only fsync is off, which matters for the
  // machine crashing, not the server).
  KillServer(SIGQUIT);
  return StartServer();
}

void PostgresCluster::Stop() {
  KillServer(SIGQUIT);  // immediate shutdown: nothing here needs to survive
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    dir_.clear();
  }
}

void PostgresCluster::KillServer(int signal) {
  if (pid_ > 0) {
    kill(pid_, signal);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    int wstatus = 0;
    while (waitpid(pid_, &wstatus, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &wstatus, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
  }
}

}  // namespace testing
}  // namespace tessera
