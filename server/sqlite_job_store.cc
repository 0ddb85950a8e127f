// The SQLite state database (job_store.h): one file in WAL mode, one connection, for one
// server. Schema version in the meta table.
#include <sqlite3.h>

#include <cstdlib>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "server/job_store.h"

namespace tessera {
namespace {

constexpr int kSqliteSchemaVersion = 1;
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

constexpr char kSqliteJobColumns[] =
    "SELECT id, spec, target, state, error, submitted_at, updated_at, trials FROM jobs";

// The SQLite state database: one file, one server.
class SqliteJobStore final : public JobStore {
 public:
  explicit SqliteJobStore(sqlite3* db) : db_(db) {}
  ~SqliteJobStore() override { sqlite3_close_v2(db_); }

  absl::StatusOr<JobRow> CreateJob(const JobSpec& spec, double now) override;
  absl::StatusOr<JobRow> GetJob(const std::string& id) override;
  absl::StatusOr<std::vector<JobRow>> ListJobs() override;
  absl::Status SetTarget(const std::string& id, const std::string& target, double now) override;
  absl::Status SetState(const std::string& id, JobState state, const std::string& error,
                        double now) override;
  absl::Status SetTrials(const std::string& id, int trials, double now) override;
  absl::StatusOr<std::vector<int64_t>> AddBatch(
      const std::string& job_id, int task, const std::vector<NewCandidate>& candidates) override;
  absl::StatusOr<std::vector<StoredCandidate>> PendingBatch(const std::string& job_id) override;
  absl::Status DeleteBatch(const std::string& job_id) override;
  absl::Status MarkLeased(const std::vector<int64_t>& ids, const std::string& lease_id) override;
  absl::Status MarkRequeued(const std::vector<int64_t>& ids) override;
  absl::Status MarkQueued(const std::vector<int64_t>& ids) override;
  absl::Status SetResult(int64_t id, CandidateState state, const ReportedOutcome& result) override;

  absl::Status Exec(const std::string& sql);

 private:
  // Runs `sql` once for each of `ids`, in one transaction: the id is its last parameter, after
  // `lease_id` when one is given.
  absl::Status UpdateEach(const std::vector<int64_t>& ids, const char* sql,
                          const std::string* lease_id = nullptr);

  std::mutex mu_;
  sqlite3* db_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<JobStore>> OpenSqliteJobStore(const std::string& path) {
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
  std::unique_ptr<SqliteJobStore> store(new SqliteJobStore(db));
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
      if (version > kSqliteSchemaVersion) {
        return absl::FailedPreconditionError(
            absl::StrCat("state database ", path, ": schema version ", version,
                         " is newer than this server's (", kSqliteSchemaVersion, ")"));
      }
    } else {
      s = store->Exec(
          absl::StrCat("INSERT INTO meta VALUES ('schema_version', '", kSqliteSchemaVersion, "')"));
      if (!s.ok()) return named(s);
    }
  }
  // Leases die with the process that granted them.
  s = store->Exec("UPDATE candidates SET state = 0, lease_id = '' WHERE state = 1");
  if (!s.ok()) return named(s);
  return store;
}

absl::Status SqliteJobStore::Exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return absl::InternalError(msg);
  }
  return absl::OkStatus();
}

absl::StatusOr<JobRow> SqliteJobStore::CreateJob(const JobSpec& spec, double now) {
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

absl::StatusOr<JobRow> SqliteJobStore::GetJob(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_, absl::StrCat(kSqliteJobColumns, " WHERE id = ?").c_str());
  TESSERA_RETURN_IF_ERROR(s.prepared());
  s.Bind(1, id);
  TESSERA_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("no job ", id));
  return RowFromStmt(s);
}

absl::StatusOr<std::vector<JobRow>> SqliteJobStore::ListJobs() {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(
      db_, absl::StrCat(kSqliteJobColumns, " WHERE id IS NOT NULL ORDER BY seq DESC").c_str());
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

absl::Status SqliteJobStore::SetTarget(const std::string& id, const std::string& target,
                                       double now) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_, "UPDATE jobs SET target = ?, updated_at = ? WHERE id = ?");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  s.Bind(1, target).Bind(2, now).Bind(3, id);
  return s.Run();
}

absl::Status SqliteJobStore::SetState(const std::string& id, JobState state,
                                      const std::string& error, double now) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_, "UPDATE jobs SET state = ?, error = ?, updated_at = ? WHERE id = ?");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  s.Bind(1, static_cast<int64_t>(state)).Bind(2, error).Bind(3, now).Bind(4, id);
  return s.Run();
}

absl::Status SqliteJobStore::SetTrials(const std::string& id, int trials, double now) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_, "UPDATE jobs SET trials = ?, updated_at = ? WHERE id = ?");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  s.Bind(1, static_cast<int64_t>(trials)).Bind(2, now).Bind(3, id);
  return s.Run();
}

absl::StatusOr<std::vector<int64_t>> SqliteJobStore::AddBatch(
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

absl::StatusOr<std::vector<StoredCandidate>> SqliteJobStore::PendingBatch(
    const std::string& job_id) {
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
      TESSERA_ASSIGN_OR_RETURN(ReportedOutcome r, ReportedOutcomeFromJson(s.Text(9)));
      c.result = std::move(r);
    }
    out.push_back(std::move(c));
  }
  return out;
}

absl::Status SqliteJobStore::DeleteBatch(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_, "DELETE FROM candidates WHERE job_id = ?");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  s.Bind(1, job_id);
  return s.Run();
}

absl::Status SqliteJobStore::UpdateEach(const std::vector<int64_t>& ids, const char* sql,
                                        const std::string* lease_id) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlTransaction txn(db_);
  TESSERA_RETURN_IF_ERROR(txn.begun());
  SqlStatement s(db_, sql);
  TESSERA_RETURN_IF_ERROR(s.prepared());
  for (int64_t id : ids) {
    s.Reset();
    if (lease_id != nullptr) {
      s.Bind(1, *lease_id).Bind(2, id);
    } else {
      s.Bind(1, id);
    }
    TESSERA_RETURN_IF_ERROR(s.Run());
  }
  return txn.Commit();
}

absl::Status SqliteJobStore::MarkLeased(const std::vector<int64_t>& ids,
                                        const std::string& lease_id) {
  return UpdateEach(ids, "UPDATE candidates SET state = 1, lease_id = ? WHERE id = ? AND state = 0",
                    &lease_id);
}

absl::Status SqliteJobStore::MarkRequeued(const std::vector<int64_t>& ids) {
  return UpdateEach(ids,
                    "UPDATE candidates SET state = 0, lease_id = '', attempts = attempts + 1 "
                    "WHERE id = ? AND state = 1");
}

absl::Status SqliteJobStore::MarkQueued(const std::vector<int64_t>& ids) {
  return UpdateEach(ids,
                    "UPDATE candidates SET state = 0, lease_id = '' WHERE id = ? AND state = 1");
}

absl::Status SqliteJobStore::SetResult(int64_t id, CandidateState state,
                                       const ReportedOutcome& result) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlStatement s(db_,
                 "UPDATE candidates SET state = ?, lease_id = '', result = ?, "
                 "attempts = attempts + ? WHERE id = ?");
  TESSERA_RETURN_IF_ERROR(s.prepared());
  s.Bind(1, static_cast<int64_t>(state))
      .Bind(2, ReportedOutcomeToJson(result))
      .Bind(3, int64_t{state == CandidateState::kQuarantined ? 1 : 0})
      .Bind(4, id);
  return s.Run();
}

}  // namespace tessera
