// The SQLite database (database.h: OpenSqliteDatabase). Schema in docs/formats.md ("Tuning
// database"). Design:
// - WAL journal, synchronous=NORMAL: a process killed mid-commit leaves the file consistent
//   (the last transaction is either whole or absent), and readers in other processes (e.g.
//   `tessera best` while `tessera tune` runs) never block the writer nor see half a commit.
// - One transaction per commit, taken with BEGIN IMMEDIATE so that two writers serialize on
//   the busy timeout instead of failing to upgrade a read lock.
// - Workloads are found by hash, then confirmed with StructuralEqual (collisions coexist);
//   parsed functions are cached by id, since workload rows never change.
// - Foreign keys on: a record must name a stored workload.
// Thread-safe: one connection per database object, guarded by a mutex.
#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "database/database.h"
#include "database/record_json.h"
#include "database/workload_funcs.h"
#include "ir/serialize.h"
#include "ir/structural_equal.h"
#include "ir/structural_hash.h"

namespace tessera {
namespace {

// Bumped whenever the schema changes meaning; a database with a newer version is refused.
// Version 2 added records.error_kind and records.job_id (migrated in place from 1); version 3
// the stage times records.build_secs, run_wall_secs, verify_secs and search_secs (migrated in
// place from 2, old records reading 0); version 4 records.retimes, the record a runoff's
// re-measurement times again (NULL: a measurement of its own, as every older record is).
constexpr int64_t kSqliteSchemaVersion = 4;
constexpr int kBusyTimeoutMs = 30000;

constexpr const char* kCreateSchema = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE workloads (
  id INTEGER PRIMARY KEY,
  hash TEXT NOT NULL,
  func_json TEXT NOT NULL);
CREATE INDEX workloads_by_hash ON workloads (hash);
CREATE TABLE records (
  id INTEGER PRIMARY KEY,
  workload_id INTEGER NOT NULL REFERENCES workloads (id),
  target TEXT NOT NULL,
  trace_json TEXT NOT NULL,
  run_secs TEXT NOT NULL,
  mean_secs REAL NOT NULL,
  ok INTEGER NOT NULL,
  error_msg TEXT NOT NULL,
  args TEXT NOT NULL,
  timestamp REAL NOT NULL,
  provenance TEXT NOT NULL,
  verified INTEGER NOT NULL,
  error_kind TEXT NOT NULL DEFAULT '',
  job_id TEXT NOT NULL DEFAULT '',
  build_secs REAL NOT NULL DEFAULT 0,
  run_wall_secs REAL NOT NULL DEFAULT 0,
  verify_secs REAL NOT NULL DEFAULT 0,
  search_secs REAL NOT NULL DEFAULT 0,
  retimes INTEGER);
CREATE INDEX records_by_speed ON records (workload_id, target, ok, mean_secs, id);
)sql";

constexpr const char* kSqliteRecordColumns =
    "id, workload_id, target, trace_json, run_secs, error_msg, args, timestamp, provenance, "
    "verified, error_kind, job_id, build_secs, run_wall_secs, verify_secs, search_secs, retimes";

absl::StatusCode CodeOf(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::StatusCode::kUnavailable;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return absl::StatusCode::kDataLoss;
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInternal;
  }
}

// A prepared statement, finalized on destruction. Errors are reported by the owner.
class Statement {
 public:
  Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  sqlite3_stmt** out() { return &stmt_; }
  sqlite3_stmt* get() const { return stmt_; }

  void Bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  void Bind(int index, double value) { sqlite3_bind_double(stmt_, index, value); }
  void Bind(int index, const std::string& value) {
    sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  }

  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  double Double(int column) const { return sqlite3_column_double(stmt_, column); }
  std::string Text(int column) const {
    const unsigned char* text = sqlite3_column_text(stmt_, column);
    if (text == nullptr) return std::string();
    return std::string(reinterpret_cast<const char*>(text),
                       static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

class SqliteDatabase final : public Database {
 public:
  SqliteDatabase(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  ~SqliteDatabase() override { sqlite3_close_v2(db_); }

  // Configures the connection and creates or checks the schema.
  absl::Status Init() {
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    TESSERA_RETURN_IF_ERROR(Exec("PRAGMA foreign_keys = ON"));
    {
      Statement mode;
      TESSERA_RETURN_IF_ERROR(Prepare("PRAGMA journal_mode = WAL", &mode));
      TESSERA_ASSIGN_OR_RETURN(bool row, Step(&mode));
      std::string journal = row ? mode.Text(0) : "";
      if (journal != "wal") {
        return absl::FailedPreconditionError(
            absl::StrCat("database '", path_, "': cannot use the WAL journal (journal mode is '",
                         journal, "')"));
      }
    }
    TESSERA_RETURN_IF_ERROR(Exec("PRAGMA synchronous = NORMAL"));
    TESSERA_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    absl::Status status = CheckOrCreateSchema();
    TESSERA_RETURN_IF_ERROR(Finish(status));
    return status;
  }

  absl::StatusOr<Workload> CommitWorkload(const PrimFunc& func) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string hash = StructuralHashHex(func);
    TESSERA_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    absl::StatusOr<Workload> result = [&]() -> absl::StatusOr<Workload> {
      TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> found, FindLocked(func, hash));
      if (found.has_value()) return *std::move(found);
      Statement insert;
      TESSERA_RETURN_IF_ERROR(
          Prepare("INSERT INTO workloads (hash, func_json) VALUES (?1, ?2)", &insert));
      insert.Bind(1, hash);
      insert.Bind(2, SaveJson(func));
      TESSERA_RETURN_IF_ERROR(Step(&insert).status());
      return Workload{sqlite3_last_insert_rowid(db_), hash, func};
    }();
    TESSERA_RETURN_IF_ERROR(Finish(result.status()));
    // Cached only once committed: a rolled-back id may be reused by another workload.
    if (result.ok()) funcs_.Add(result->id, result->func);
    return result;
  }

  absl::StatusOr<std::optional<Workload>> FindWorkload(const PrimFunc& func) override {
    std::lock_guard<std::mutex> lock(mu_);
    return FindLocked(func, StructuralHashHex(func));
  }

  absl::StatusOr<std::vector<Workload>> AllWorkloads() override {
    std::lock_guard<std::mutex> lock(mu_);
    Statement select;
    TESSERA_RETURN_IF_ERROR(
        Prepare("SELECT id, hash, func_json FROM workloads ORDER BY id", &select));
    std::vector<Workload> out;
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(bool row, Step(&select));
      if (!row) break;
      Workload w{select.Int(0), select.Text(1), PrimFunc()};
      TESSERA_ASSIGN_OR_RETURN(w.func, funcs_.Load(w.id, select.Text(2)));
      out.push_back(std::move(w));
    }
    return out;
  }

  absl::StatusOr<int64_t> CommitRecord(const TuningRecord& record) override {
    TESSERA_RETURN_IF_ERROR(ValidateRecord(record));
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    absl::StatusOr<int64_t> result = [&]() -> absl::StatusOr<int64_t> {
      Statement exists;
      TESSERA_RETURN_IF_ERROR(Prepare("SELECT 1 FROM workloads WHERE id = ?1", &exists));
      exists.Bind(1, record.workload_id);
      TESSERA_ASSIGN_OR_RETURN(bool found, Step(&exists));
      if (!found) {
        return absl::NotFoundError(absl::StrCat(
            "database '", path_, "': commit record: unknown workload id ", record.workload_id));
      }
      Statement insert;
      TESSERA_RETURN_IF_ERROR(Prepare(
          "INSERT INTO records (workload_id, target, trace_json, run_secs, mean_secs, ok, "
          "error_msg, args, timestamp, provenance, verified, error_kind, job_id, build_secs, "
          "run_wall_secs, verify_secs, search_secs, retimes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
          "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
          &insert));
      insert.Bind(1, record.workload_id);
      insert.Bind(2, record.target);
      insert.Bind(3, record.trace_json);
      insert.Bind(4, RunSecsToJson(record.run_secs).dump());
      insert.Bind(5, record.mean_secs());
      insert.Bind(6, static_cast<int64_t>(record.ok()));
      insert.Bind(7, record.error_msg);
      insert.Bind(8, ArgInfosToJson(record.args).dump());
      insert.Bind(9, record.timestamp);
      insert.Bind(10, ProvenanceToJson(record.provenance).dump());
      insert.Bind(11, static_cast<int64_t>(record.verified));
      insert.Bind(12, std::string(MeasureErrorName(record.error)));
      insert.Bind(13, record.job_id);
      insert.Bind(14, record.stage_secs.build);
      insert.Bind(15, record.stage_secs.run);
      insert.Bind(16, record.stage_secs.verify);
      insert.Bind(17, record.stage_secs.search);
      if (record.is_retiming()) insert.Bind(18, record.retimes);  // else NULL
      TESSERA_RETURN_IF_ERROR(Step(&insert).status());
      return sqlite3_last_insert_rowid(db_);
    }();
    TESSERA_RETURN_IF_ERROR(Finish(result.status()));
    return result;
  }

  absl::Status SetVerified(int64_t record_id, bool verified) override {
    std::lock_guard<std::mutex> lock(mu_);
    Statement update;
    TESSERA_RETURN_IF_ERROR(Prepare("UPDATE records SET verified = ?1 WHERE id = ?2", &update));
    update.Bind(1, static_cast<int64_t>(verified));
    update.Bind(2, record_id);
    TESSERA_RETURN_IF_ERROR(Step(&update).status());
    if (sqlite3_changes(db_) == 0) {
      return absl::NotFoundError(
          absl::StrCat("database '", path_, "': set verified: unknown record id ", record_id));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<TuningRecord>> TopK(const Workload& workload,
                                                 const std::string& target, int k,
                                                 bool verified_only) override {
    if (k < 0) return absl::InvalidArgumentError(absl::StrCat("top-k: k = ", k, " < 0"));
    std::lock_guard<std::mutex> lock(mu_);
    Statement select;
    TESSERA_RETURN_IF_ERROR(Prepare(
        absl::StrCat("SELECT ", kSqliteRecordColumns,
                     " FROM records WHERE workload_id = ?1 AND target = ?2 AND ok = 1",
                     verified_only ? " AND verified = 1" : "", " ORDER BY mean_secs, id LIMIT ?3"),
        &select));
    select.Bind(1, workload.id);
    select.Bind(2, target);
    select.Bind(3, static_cast<int64_t>(k));
    return ReadRecords(&select);
  }

  absl::StatusOr<std::vector<TuningRecord>> AllRecords(const Workload& workload,
                                                       const std::string& target) override {
    std::lock_guard<std::mutex> lock(mu_);
    Statement select;
    TESSERA_RETURN_IF_ERROR(
        Prepare(absl::StrCat("SELECT ", kSqliteRecordColumns,
                             " FROM records WHERE workload_id = ?1 AND target = ?2 ORDER BY id"),
                &select));
    select.Bind(1, workload.id);
    select.Bind(2, target);
    return ReadRecords(&select);
  }

  absl::StatusOr<std::vector<TuningRecord>> AllRecords() override {
    std::lock_guard<std::mutex> lock(mu_);
    Statement select;
    TESSERA_RETURN_IF_ERROR(Prepare(
        absl::StrCat("SELECT ", kSqliteRecordColumns, " FROM records ORDER BY id"), &select));
    return ReadRecords(&select);
  }

  absl::StatusOr<std::vector<TuningRecord>> RecordsAfter(int64_t after_id, int limit) override {
    if (limit < 0)
      return absl::InvalidArgumentError(absl::StrCat("records: limit ", limit, " < 0"));
    std::lock_guard<std::mutex> lock(mu_);
    Statement select;
    TESSERA_RETURN_IF_ERROR(
        Prepare(absl::StrCat("SELECT ", kSqliteRecordColumns,
                             " FROM records WHERE id > ?1 ORDER BY id LIMIT ?2"),
                &select));
    select.Bind(1, after_id);
    select.Bind(2, static_cast<int64_t>(limit));
    return ReadRecords(&select);
  }

  absl::StatusOr<int64_t> NumRecords() override {
    std::lock_guard<std::mutex> lock(mu_);
    Statement count;
    TESSERA_RETURN_IF_ERROR(Prepare("SELECT COUNT(*) FROM records", &count));
    TESSERA_RETURN_IF_ERROR(Step(&count).status());
    return count.Int(0);
  }

 private:
  // "database 'PATH': <sqlite message> (in <the statement, abbreviated>)".
  absl::Status Error(const std::string& sql, int rc) const {
    std::string in = sql.size() > 48 ? sql.substr(0, 45) + "..." : sql;
    return absl::Status(CodeOf(rc), absl::StrCat("database '", path_, "': ", sqlite3_errmsg(db_),
                                                 " (in ", in, ")"));
  }

  absl::Status Exec(const std::string& sql) {
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return Error(sql, rc);
    return absl::OkStatus();
  }

  absl::Status Prepare(const std::string& sql, Statement* stmt) {
    int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, stmt->out(), nullptr);
    if (rc != SQLITE_OK) return Error(sql, rc);
    return absl::OkStatus();
  }

  // True if a row is available, false when the statement is done.
  absl::StatusOr<bool> Step(Statement* stmt) {
    int rc = sqlite3_step(stmt->get());
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return Error(sqlite3_sql(stmt->get()), rc);
  }

  // Ends the open transaction: COMMIT if `status` is ok, ROLLBACK otherwise.
  // Returns the COMMIT's error, if any (the transaction is then rolled back too).
  absl::Status Finish(const absl::Status& status) {
    absl::Status committed = status.ok() ? Exec("COMMIT") : absl::OkStatus();
    // A failed statement may already have rolled back; nothing more to undo then.
    if (!sqlite3_get_autocommit(db_)) Exec("ROLLBACK").IgnoreError();
    return committed;
  }

  absl::Status CheckOrCreateSchema() {
    Statement tables;
    TESSERA_RETURN_IF_ERROR(
        Prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", &tables));
    std::vector<std::string> names;
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(bool row, Step(&tables));
      if (!row) break;
      names.push_back(tables.Text(0));
    }
    if (names.empty()) {
      TESSERA_RETURN_IF_ERROR(Exec(kCreateSchema));
      return Exec(
          absl::StrCat("INSERT INTO schema_version (version) VALUES (", kSqliteSchemaVersion, ")"));
    }
    if (std::find(names.begin(), names.end(), "schema_version") == names.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "database '", path_, "': not a tessera database (it has no schema_version table)"));
    }
    Statement version;
    TESSERA_RETURN_IF_ERROR(Prepare("SELECT MAX(version) FROM schema_version", &version));
    TESSERA_RETURN_IF_ERROR(Step(&version).status());
    if (sqlite3_column_type(version.get(), 0) != SQLITE_INTEGER) {
      return absl::DataLossError(
          absl::StrCat("database '", path_, "': the schema_version table holds no version"));
    }
    int64_t v = version.Int(0);
    if (v > kSqliteSchemaVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "database '", path_, "': schema version ", v, " is newer than this tessera supports (",
          kSqliteSchemaVersion, "); use a newer tessera"));
    }
    if (v < 1) {
      return absl::DataLossError(
          absl::StrCat("database '", path_, "': invalid schema version ", v));
    }
    if (v == 1) TESSERA_RETURN_IF_ERROR(MigrateFrom1());
    if (v <= 2) TESSERA_RETURN_IF_ERROR(MigrateFrom2());
    if (v <= 3) TESSERA_RETURN_IF_ERROR(MigrateFrom3());
    return absl::OkStatus();
  }

  // Schema 1 -> 2: error kinds from the messages' prefixes (as ErrorKindOfLegacyMessage), no
  // job ids. Runs inside Init's transaction: an interrupted migration leaves version 1.
  absl::Status MigrateFrom1() {
    absl::Status status = Exec(R"sql(
ALTER TABLE records ADD COLUMN error_kind TEXT NOT NULL DEFAULT '';
ALTER TABLE records ADD COLUMN job_id TEXT NOT NULL DEFAULT '';
UPDATE records SET error_kind = CASE
  WHEN error_msg = '' THEN ''
  WHEN error_msg LIKE 'build:%' THEN 'build_error'
  WHEN error_msg LIKE 'run: timed out%' THEN 'timeout'
  ELSE 'run_error' END;
INSERT INTO schema_version (version) VALUES (2);
)sql");
    if (!status.ok()) {
      return absl::Status(
          status.code(),
          absl::StrCat("database '", path_, "': migrating schema 1 to 2: ", status.message()));
    }
    return absl::OkStatus();
  }

  // Schema 2 -> 3: the stage times, 0 for the records already stored (nothing says where their
  // time went). Runs inside Init's transaction, as MigrateFrom1.
  absl::Status MigrateFrom2() {
    absl::Status status = Exec(R"sql(
ALTER TABLE records ADD COLUMN build_secs REAL NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN run_wall_secs REAL NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN verify_secs REAL NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN search_secs REAL NOT NULL DEFAULT 0;
INSERT INTO schema_version (version) VALUES (3);
)sql");
    if (!status.ok()) {
      return absl::Status(
          status.code(),
          absl::StrCat("database '", path_, "': migrating schema 2 to 3: ", status.message()));
    }
    return absl::OkStatus();
  }

  // Schema 3 -> 4: which record a runoff's re-measurement times again; NULL (a measurement of
  // its own) for the records already stored, whose runoffs did not say. Runs inside Init's
  // transaction, as MigrateFrom1.
  absl::Status MigrateFrom3() {
    absl::Status status = Exec(R"sql(
ALTER TABLE records ADD COLUMN retimes INTEGER;
INSERT INTO schema_version (version) VALUES (4);
)sql");
    if (!status.ok()) {
      return absl::Status(
          status.code(),
          absl::StrCat("database '", path_, "': migrating schema 3 to 4: ", status.message()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<Workload>> FindLocked(const PrimFunc& func, const std::string& hash)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Statement select;
    TESSERA_RETURN_IF_ERROR(
        Prepare("SELECT id, func_json FROM workloads WHERE hash = ?1 ORDER BY id", &select));
    select.Bind(1, hash);
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(bool row, Step(&select));
      if (!row) break;
      int64_t id = select.Int(0);
      TESSERA_ASSIGN_OR_RETURN(PrimFunc stored, funcs_.Load(id, select.Text(1)));
      if (StructuralEqual(stored, func)) return std::optional<Workload>(Workload{id, hash, stored});
    }
    return std::optional<Workload>();
  }

  // Decodes every row of `select` (columns in kSqliteRecordColumns order).
  absl::StatusOr<std::vector<TuningRecord>> ReadRecords(Statement* select) {
    std::vector<TuningRecord> out;
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(bool row, Step(select));
      if (!row) break;
      TuningRecord r;
      r.id = select->Int(0);
      absl::Status status = DecodeRecordRow(*select, &r);
      if (!status.ok()) {
        return absl::DataLossError(
            absl::StrCat("database '", path_, "': record ", r.id, ": ", status.message()));
      }
      out.push_back(std::move(r));
    }
    return out;
  }

  static absl::Status DecodeRecordRow(const Statement& row, TuningRecord* r) {
    r->workload_id = row.Int(1);
    r->target = row.Text(2);
    r->trace_json = row.Text(3);
    r->error_msg = row.Text(5);
    r->timestamp = row.Double(7);
    r->verified = row.Int(9) != 0;
    TESSERA_ASSIGN_OR_RETURN(r->error, ParseMeasureError(row.Text(10)));
    r->job_id = row.Text(11);
    r->stage_secs = StageSeconds{row.Double(12), row.Double(13), row.Double(14), row.Double(15)};
    r->retimes = sqlite3_column_type(row.get(), 16) == SQLITE_NULL ? -1 : row.Int(16);
    auto parse = [](const std::string& text, const char* column) -> absl::StatusOr<nlohmann::json> {
      nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) return absl::DataLossError(absl::StrCat(column, ": malformed JSON"));
      return j;
    };
    TESSERA_ASSIGN_OR_RETURN(nlohmann::json run_secs, parse(row.Text(4), "run_secs"));
    TESSERA_ASSIGN_OR_RETURN(r->run_secs, RunSecsFromJson(run_secs));
    TESSERA_ASSIGN_OR_RETURN(nlohmann::json args, parse(row.Text(6), "args"));
    TESSERA_ASSIGN_OR_RETURN(r->args, ArgInfosFromJson(args));
    TESSERA_ASSIGN_OR_RETURN(nlohmann::json provenance, parse(row.Text(8), "provenance"));
    TESSERA_ASSIGN_OR_RETURN(r->provenance, ProvenanceFromJson(provenance));
    return absl::OkStatus();
  }

  const std::string path_;
  // The connection: used under mu_ once Init (which runs before the object is shared) returned.
  sqlite3* const db_ ABSL_PT_GUARDED_BY(mu_);
  std::mutex mu_;
  // workload id -> parsed function (rows never change)
  WorkloadFuncs funcs_ ABSL_GUARDED_BY(mu_){path_};
};

}  // namespace

absl::StatusOr<std::unique_ptr<Database>> OpenSqliteDatabase(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return absl::Status(CodeOf(rc), absl::StrCat("database '", path, "': ", message));
  }
  auto database = std::make_unique<SqliteDatabase>(path, db);
  TESSERA_RETURN_IF_ERROR(database->Init());
  return std::unique_ptr<Database>(std::move(database));
}

}  // namespace tessera
