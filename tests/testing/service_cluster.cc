#include "tests/testing/service_cluster.h"

#include <signal.h>
#include <sqlite3.h>

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "database/database.h"
#include "ir/structural_hash.h"
#include "schedule/schedule.h"
#include "schedule/trace.h"

namespace tessera {
namespace testing {
namespace {

std::string Tail(const std::string& text, size_t bytes) {
  return text.size() <= bytes ? text : "..." + text.substr(text.size() - bytes);
}

}  // namespace

ServiceCluster::ServiceCluster(std::string binary, std::string dir)
    : binary_(std::move(binary)), dir_(std::move(dir)) {}

ServiceCluster::~ServiceCluster() {
  for (auto& w : workers_) w->Kill();
  if (server_) server_->Kill();
}

absl::Status ServiceCluster::StartServer(const std::vector<std::string>& extra,
                                         const std::string& listen, double timeout_sec) {
  if (server_ && server_->Running()) return absl::FailedPreconditionError("a server is running");
  if (server_) old_servers_.push_back(std::move(server_));
  std::string address = !listen.empty() ? listen : !address_.empty() ? address_ : "127.0.0.1:0";
  std::vector<std::string> argv = {binary_, "serve", "--db", db_path(), "--listen", address};
  argv.insert(argv.end(), extra.begin(), extra.end());
  int n = server_starts_++;
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Start(
      argv, absl::StrCat(dir_, "/serve", n, ".out"), absl::StrCat(dir_, "/serve", n, ".err"));
  if (!child.ok()) return child.status();
  server_ = std::move(*child);
  absl::StatusOr<std::string> listening = server_->WaitForLine("listening on ", timeout_sec);
  if (!listening.ok()) return listening.status();
  address_ = *listening;
  return absl::OkStatus();
}

absl::StatusOr<int> ServiceCluster::StopServer(double timeout_sec) {
  if (!server_) return absl::FailedPreconditionError("no server");
  server_->Signal(SIGTERM);
  absl::StatusOr<int> code = server_->Wait(timeout_sec);
  if (!code.ok()) server_->Kill();
  return code;
}

void ServiceCluster::KillServer() {
  if (server_) server_->Kill();
}

absl::StatusOr<ChildProcess*> ServiceCluster::StartWorker(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {binary_, "worker",        "--server", address_,      "--target",
                                   "cpu",   "--max-backoff", "1",        "--pull-wait", "2"};
  size_t n = workers_.size();
  // Build artifacts inside the cluster's directory: a worker the test kills (or that abandons a
  // measurement and _exits) cannot remove a temporary directory of its own.
  argv.insert(argv.end(), {"--work-dir", absl::StrCat(dir_, "/worker", n, "-build")});
  argv.insert(argv.end(), extra.begin(), extra.end());
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Start(
      argv, absl::StrCat(dir_, "/worker", n, ".out"), absl::StrCat(dir_, "/worker", n, ".err"));
  if (!child.ok()) return child.status();
  workers_.push_back(std::move(*child));
  return workers_.back().get();
}

std::vector<ChildProcess*> ServiceCluster::workers() {
  std::vector<ChildProcess*> out;
  for (auto& w : workers_) out.push_back(w.get());
  return out;
}

CommandResult ServiceCluster::Run(const std::vector<std::string>& args, double timeout_sec) {
  std::vector<std::string> argv = {binary_};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, timeout_sec, dir_);
}

CommandResult ServiceCluster::RunClient(std::vector<std::string> args, double timeout_sec) {
  args.push_back("--server");
  args.push_back(address_);
  return Run(args, timeout_sec);
}

std::string ServiceCluster::Logs() const {
  std::string out;
  for (const auto& s : old_servers_)
    absl::StrAppend(&out, "--- old server:\n", Tail(s->Stderr(), 3000));
  if (server_) absl::StrAppend(&out, "--- server:\n", Tail(server_->Stderr(), 4000), "\n");
  for (size_t i = 0; i < workers_.size(); ++i) {
    absl::StrAppend(&out, "--- worker ", i, ":\n", Tail(workers_[i]->Stderr(), 3000), "\n");
  }
  return out;
}

absl::StatusOr<std::vector<StoredRecord>> ReadRecords(const std::string& path,
                                                      const std::string& job_id) {
  absl::StatusOr<std::unique_ptr<Database>> db = OpenSqliteDatabase(path);
  if (!db.ok()) return db.status();
  absl::StatusOr<std::vector<Workload>> workloads = (*db)->AllWorkloads();
  if (!workloads.ok()) return workloads.status();
  std::map<int64_t, Workload> by_id;
  for (const Workload& w : *workloads) by_id[w.id] = w;
  absl::StatusOr<std::vector<TuningRecord>> records = (*db)->AllRecords();
  if (!records.ok()) return records.status();
  std::vector<StoredRecord> out;
  for (const TuningRecord& r : *records) {
    if (!job_id.empty() && r.job_id != job_id) continue;
    auto w = by_id.find(r.workload_id);
    if (w == by_id.end()) {
      return absl::DataLossError(absl::StrCat("record ", r.id, ": no workload ", r.workload_id));
    }
    absl::StatusOr<Trace> trace = Trace::FromJson(r.trace_json);
    if (!trace.ok()) return trace.status();
    Schedule sch = Schedule::Create(w->second.func, /*seed=*/0);
    absl::Status applied = trace->ApplyTo(&sch, /*remove_postproc=*/false);
    if (!applied.ok()) {
      return absl::Status(applied.code(), absl::StrCat("record ", r.id, ": ", applied.message()));
    }
    StoredRecord s;
    s.id = r.id;
    s.workload_hash = w->second.hash;
    s.program_hash = StructuralHashHex(sch.func());
    s.job_id = r.job_id;
    s.worker_id = r.provenance.worker_id;
    s.error_kind = MeasureErrorName(r.error);
    s.ok = r.ok();
    s.verified = r.verified;
    s.mean_secs = r.ok() ? r.mean_secs() : 0;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> Duplicates(const std::vector<StoredRecord>& records) {
  std::set<std::pair<std::string, std::string>> seen;
  std::vector<std::string> out;
  for (const StoredRecord& r : records) {
    if (!seen.insert({r.workload_hash, r.program_hash}).second) {
      out.push_back(absl::StrCat(r.program_hash, "@", r.workload_hash));
    }
  }
  return out;
}

std::string IntegrityCheck(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string error = db ? sqlite3_errmsg(db) : "cannot open";
    sqlite3_close(db);
    return error;
  }
  std::string report;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr) != SQLITE_OK) {
    report = sqlite3_errmsg(db);
  } else {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      if (!report.empty()) report += "; ";
      report += reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return report;
}

}  // namespace testing
}  // namespace tessera
