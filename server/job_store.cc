#include "server/job_store.h"

#include <sqlite3.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "database/record_json.h"

namespace tessera {
namespace {

using json = nlohmann::json;

constexpr int kSchemaVersion = 1;
constexpr int kBusyTimeoutMs = 5000;

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT UNIQUE,
  spec TEXT NOT NULL,
  target TEXT NOT NULL DEFAULT '',
  state INTEGER NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  submitted_at REAL NOT NULL,
  updated_at REAL NOT NULL,
  trials INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS candidates (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id TEXT NOT NULL,
  task INTEGER NOT NULL,
  position INTEGER NOT NULL,
  trace TEXT NOT NULL,
  hash TEXT NOT NULL,
  func TEXT NOT NULL,
  state INTEGER NOT NULL,
  lease_id TEXT NOT NULL DEFAULT '',
  attempts INTEGER NOT NULL DEFAULT 0,
  result TEXT);
CREATE INDEX IF NOT EXISTS candidates_by_job ON candidates (job_id, position);
)sql";

// A prepared statement that finalizes itself.
class SqlStatement {
 public:
  SqlStatement(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~SqlStatement() { sqlite3_finalize(stmt_); }
  SqlStatement(const SqlStatement&) = delete;
  SqlStatement& operator=(const SqlStatement&) = delete;

  absl::Status prepared() const {
    if (rc_ == SQLITE_OK) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("state database: ", sqlite3_errmsg(db_)));
  }
  SqlStatement& Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  SqlStatement& Bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  SqlStatement& Bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  SqlStatement& BindNull(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error status.
  absl::StatusOr<bool> Step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return absl::InternalError(absl::StrCat("state database: ", sqlite3_errmsg(db_)));
  }
  absl::Status Run() {
    TESSERA_ASSIGN_OR_RETURN(bool row, Step());
    (void)row;
    return absl::OkStatus();
  }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string Text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back unless Commit() ran.
class SqlTransaction {
 public:
  explicit SqlTransaction(sqlite3* db) : db_(db) {
    ok_ = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  ~SqlTransaction() {
    if (ok_ && !committed_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  absl::Status begun() const {
    return ok_ ? absl::OkStatus()
               : absl::InternalError(absl::StrCat("state database: ", sqlite3_errmsg(db_)));
  }
  absl::Status Commit() {
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
      return absl::InternalError(absl::StrCat("state database: commit: ", sqlite3_errmsg(db_)));
    }
    committed_ = true;
    return absl::OkStatus();
  }

 private:
  sqlite3* db_;
  bool ok_ = false;
  bool committed_ = false;
};

std::string OutcomeToJson(const ReportedOutcome& r) {
  json j;
  j["error"] = MeasureErrorName(r.outcome.error);
  j["error_msg"] = r.outcome.error_msg;
  j["run_secs"] = RunSecsToJson(r.outcome.run_secs);
  j["verified"] = r.outcome.verified;
  j["build_secs"] = r.outcome.build_secs;
  j["provenance"] = ProvenanceToJson(r.provenance);
  j["worker_id"] = r.provenance.worker_id;
  return j.dump();
}

absl::StatusOr<ReportedOutcome> OutcomeFromJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return absl::DataLossError("state database: malformed candidate result");
  ReportedOutcome r;
  TESSERA_ASSIGN_OR_RETURN(r.outcome.error, ParseMeasureError(j.value("error", "")));
  r.outcome.error_msg = j.value("error_msg", "");
  if (j.contains("run_secs")) {
    TESSERA_ASSIGN_OR_RETURN(r.outcome.run_secs, RunSecsFromJson(j["run_secs"]));
  }
  r.outcome.verified = j.value("verified", false);
  r.outcome.build_secs = j.value("build_secs", 0.0);
  if (j.contains("provenance")) {
    TESSERA_ASSIGN_OR_RETURN(r.provenance, ProvenanceFromJson(j["provenance"]));
  }
  r.provenance.worker_id = j.value("worker_id", r.provenance.worker_id);
  return r;
}

absl::StatusOr<JobRow> RowFromStmt(const SqlStatement& s) {
  JobRow row;
  row.id = s.Text(0);
  TESSERA_ASSIGN_OR_RETURN(row.spec, JobSpec::FromJson(s.Text(1)));
  row.target = s.Text(2);
  int64_t state = s.Int(3);
  if (state < 1 || state > 5) {
    return absl::DataLossError(absl::StrCat("state database: job ", row.id, " has state ", state));
  }
  row.state = static_cast<JobState>(state);
  row.error = s.Text(4);
  row.submitted_at = s.Real(5);
  row.updated_at = s.Real(6);
  row.trials = static_cast<int>(s.Int(7));
  return row;
}

constexpr char kJobColumns[] =
    "SELECT id, spec, target, state, error, submitted_at, updated_at, trials FROM jobs";

}  // namespace

std::string JobSpec::ToJson() const {
  json j;
  j["workloads"] = workloads;
  j["target"] = target;
  j["max_trials"] = max_trials;
  j["max_trials_per_task"] = max_trials_per_task;
  j["trials_per_iter"] = trials_per_iter;
  j["strategy"] = strategy;
  j["cost_model"] = cost_model;
  j["task_scheduler"] = task_scheduler;
  j["seed"] = seed;
  j["priority"] = priority;
  j["verify"] = verify;
  j["name"] = name;
  return j.dump();
}

absl::StatusOr<JobSpec> JobSpec::FromJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("workloads") || !j["workloads"].is_array()) {
    return absl::DataLossError("state database: malformed job spec");
  }
  JobSpec s;
  try {
    s.workloads = j["workloads"].get<std::vector<std::string>>();
    s.target = j.value("target", "");
    s.max_trials = j.value("max_trials", 0);
    s.max_trials_per_task = j.value("max_trials_per_task", 0);
    s.trials_per_iter = j.value("trials_per_iter", 64);
    s.strategy = j.value("strategy", s.strategy);
    s.cost_model = j.value("cost_model", s.cost_model);
    s.task_scheduler = j.value("task_scheduler", s.task_scheduler);
    s.seed = j.value("seed", int64_t{0});
    s.priority = j.value("priority", 0);
    s.verify = j.value("verify", true);
    s.name = j.value("name", "");
  } catch (const json::exception& e) {
    return absl::DataLossError(absl::StrCat("state database: malformed job spec: ", e.what()));
  }
  return s;
}

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

JobStore::~JobStore() { sqlite3_close_v2(db_); }

absl::StatusOr<std::unique_ptr<JobStore>> JobStore::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return absl::FailedPreconditionError(absl::StrCat("state database ", path, ": ", msg));
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  std::unique_ptr<JobStore> store(new JobStore(db));
  auto named = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat("state database ", path, ": ", s.message()));
  };
  absl::Status s = store->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
  if (s.ok()) s = store->Exec(kSchema);
  if (!s.ok()) return named(s);
  {
    SqlStatement get(db, "SELECT value FROM meta WHERE key = 'schema_version'");
    if (!get.prepared().ok()) return named(get.prepared());
    absl::StatusOr<bool> row = get.Step();
    if (!row.ok()) return named(row.status());
    if (*row) {
      int version = std::atoi(get.Text(0).c_str());
      if (version > kSchemaVersion) {
        return absl::FailedPreconditionError(
            absl::StrCat("state database ", path, ": schema version ", version,
                         " is newer than this server's (", kSchemaVersion, ")"));
      }
    } else {
      s = store->Exec(
          absl::StrCat("INSERT INTO meta VALUES ('schema_version', '", kSchemaVersion, "')"));
      if (!s.ok()) return named(s);
    }
  }
  // Leases die with the process that granted them.
  s = store->Exec("UPDATE candidates SET state = 0, lease_id = '' WHERE state = 1");
  if (!s.ok()) return named(s);
  return store;
}

absl::Status JobStore::Exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return absl::InternalError(msg);
  }
  return absl::OkStatus();
}

absl::StatusOr<JobRow> JobStore::CreateJob(const JobSpec& spec, double now) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlTransaction txn(db_);
  TESSERA_RETURN_IF_ERROR(txn.begun());
  SqlStatement insert(
      db_, "INSERT INTO jobs (spec, state, submitted_at, updated_at) VALUES (?, ?, ?, ?)");
  TESSERA_RETURN_IF_ERROR(insert.prepared());
  insert.Bind(1, spec.ToJson()).Bind(2, int64_t{1}).Bind(3, now).Bind(4, now);
  TESSERA_RETURN_IF_ERROR(insert.Run());
  int64_t seq = sqlite3_last_insert_rowid(db_);
  JobRow row;
  row.id = absl::StrCat("job-", seq);
  row.spec = spec;
  row.submitted_at = row.updated_at = now;
  SqlStatement name(db_, "UPDATE jobs SET id = ? WHERE seq = ?");
  TESSERA_RETURN_IF_ERROR(name.prepared());
  name.Bind(1, row.id).Bind(2, seq);
  TESSERA_RETURN_IF_ERROR(name.Run());
  TESSERA_RETURN_IF_ERROR(txn.Commit());
  return row;
}

absl::StatusOr<JobRow> JobStore::GetJob(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_, absl::StrCat(kJobColumns, " WHERE id = ?").c_str());
  TESSERA_RETURN_IF_ERROR(s.prepared());
  s.Bind(1, id);
  TESSERA_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("no job ", id));
  return RowFromStmt(s);
}

absl::StatusOr<std::vector<JobRow>> JobStore::ListJobs() {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_, absl::StrCat(kJobColumns, " WHERE id IS NOT NULL ORDER BY seq DESC").c_str());
  TESSERA_RETURN_IF_ERROR(s.prepared());
  std::vector<JobRow> out;
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    TESSERA_ASSIGN_OR_RETURN(JobRow job, RowFromStmt(s));
    out.push_back(std::move(job));
  }
  return out;
}

absl::Status JobStore::SetTarget(const std::string& id, const std::string& target, double now) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_, "UPDATE jobs SET target = ?, updated_at = ? WHERE id = ?");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  s.Bind(1, target).Bind(2, now).Bind(3, id);
  return s.Run();
}

absl::Status JobStore::SetState(const std::string& id, JobState state, const std::string& error,
                                double now) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_, "UPDATE jobs SET state = ?, error = ?, updated_at = ? WHERE id = ?");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  s.Bind(1, static_cast<int64_t>(state)).Bind(2, error).Bind(3, now).Bind(4, id);
  return s.Run();
}

absl::Status JobStore::SetTrials(const std::string& id, int trials, double now) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_, "UPDATE jobs SET trials = ?, updated_at = ? WHERE id = ?");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  s.Bind(1, static_cast<int64_t>(trials)).Bind(2, now).Bind(3, id);
  return s.Run();
}

absl::StatusOr<std::vector<int64_t>> JobStore::AddBatch(
    const std::string& job_id, int task, const std::vector<NewCandidate>& candidates) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlTransaction txn(db_);
  TESSERA_RETURN_IF_ERROR(txn.begun());
  SqlStatement count(db_, "SELECT COUNT(*) FROM candidates WHERE job_id = ?");
  TESSERA_RETURN_IF_ERROR(count.prepared());
  count.Bind(1, job_id);
  TESSERA_RETURN_IF_ERROR(count.Step().status());
  if (count.Int(0) > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job_id, " still has a pending batch of ", count.Int(0), " candidates"));
  }
  SqlStatement insert(db_,
                      "INSERT INTO candidates (job_id, task, position, trace, hash, func, state) "
                      "VALUES (?, ?, ?, ?, ?, ?, 0)");
  TESSERA_RETURN_IF_ERROR(insert.prepared());
  std::vector<int64_t> ids;
  for (size_t i = 0; i < candidates.size(); ++i) {
    insert.Reset();
    insert.Bind(1, job_id)
        .Bind(2, static_cast<int64_t>(task))
        .Bind(3, static_cast<int64_t>(i))
        .Bind(4, candidates[i].trace_json)
        .Bind(5, candidates[i].hash)
        .Bind(6, candidates[i].func_json);
    TESSERA_RETURN_IF_ERROR(insert.Run());
    ids.push_back(sqlite3_last_insert_rowid(db_));
  }
  TESSERA_RETURN_IF_ERROR(txn.Commit());
  return ids;
}

absl::StatusOr<std::vector<StoredCandidate>> JobStore::PendingBatch(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_,
                 "SELECT id, task, position, trace, hash, func, state, lease_id, attempts, result "
                 "FROM candidates WHERE job_id = ? ORDER BY position");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  s.Bind(1, job_id);
  std::vector<StoredCandidate> out;
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    StoredCandidate c;
    c.id = s.Int(0);
    c.job_id = job_id;
    c.task = static_cast<int>(s.Int(1));
    c.position = static_cast<int>(s.Int(2));
    c.trace_json = s.Text(3);
    c.hash = s.Text(4);
    c.func_json = s.Text(5);
    c.state = static_cast<CandidateState>(s.Int(6));
    c.lease_id = s.Text(7);
    c.attempts = static_cast<int>(s.Int(8));
    if (!s.IsNull(9)) {
      TESSERA_ASSIGN_OR_RETURN(ReportedOutcome r, OutcomeFromJson(s.Text(9)));
      c.result = std::move(r);
    }
    out.push_back(std::move(c));
  }
  return out;
}

absl::Status JobStore::DeleteBatch(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_, "DELETE FROM candidates WHERE job_id = ?");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  s.Bind(1, job_id);
  return s.Run();
}

absl::Status JobStore::MarkLeased(const std::vector<int64_t>& ids, const std::string& lease_id) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlTransaction txn(db_);
  TESSERA_RETURN_IF_ERROR(txn.begun());
  SqlStatement s(db_, "UPDATE candidates SET state = 1, lease_id = ? WHERE id = ? AND state = 0");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  for (int64_t id : ids) {
    s.Reset();
    s.Bind(1, lease_id).Bind(2, id);
    TESSERA_RETURN_IF_ERROR(s.Run());
  }
  return txn.Commit();
}

absl::Status JobStore::MarkRequeued(const std::vector<int64_t>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlTransaction txn(db_);
  TESSERA_RETURN_IF_ERROR(txn.begun());
  SqlStatement s(db_,
                 "UPDATE candidates SET state = 0, lease_id = '', attempts = attempts + 1 "
                 "WHERE id = ? AND state = 1");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  for (int64_t id : ids) {
    s.Reset();
    s.Bind(1, id);
    TESSERA_RETURN_IF_ERROR(s.Run());
  }
  return txn.Commit();
}

absl::Status JobStore::MarkQueued(const std::vector<int64_t>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlTransaction txn(db_);
  TESSERA_RETURN_IF_ERROR(txn.begun());
  SqlStatement s(db_, "UPDATE candidates SET state = 0, lease_id = '' WHERE id = ? AND state = 1");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  for (int64_t id : ids) {
    s.Reset();
    s.Bind(1, id);
    TESSERA_RETURN_IF_ERROR(s.Run());
  }
  return txn.Commit();
}

absl::Status JobStore::SetResult(int64_t id, CandidateState state, const ReportedOutcome& result) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_,
                 "UPDATE candidates SET state = ?, lease_id = '', result = ?, "
                 "attempts = attempts + ? WHERE id = ?");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  s.Bind(1, static_cast<int64_t>(state))
      .Bind(2, OutcomeToJson(result))
      .Bind(3, int64_t{state == CandidateState::kQuarantined ? 1 : 0})
      .Bind(4, id);
  return s.Run();
}

}  // namespace tessera
