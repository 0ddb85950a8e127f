// The PostgreSQL database (database.h: OpenPostgresDatabase), for several servers and hosts
// sharing one store of records. The same tables and meaning as the SQLite schema
// (docs/formats.md, "Tuning database"), with PostgreSQL types. Design:
// - The schema is built by the migrations in kMigrations, applied in order from the stored
//   version (0 for an empty database) inside one transaction that holds an advisory lock, so
//   two processes opening a fresh database at once create it once, and a process killed
//   mid-migration leaves the previous version. A newer version than this tessera knows is
//   refused, as with SQLite.
// - Records get their ids from a sequence; one transaction per commit. A workload is inserted
//   under an advisory lock on its hash, so two processes committing the same function store
//   it once (the hash only narrows the search; StructuralEqual decides, as with SQLite).
// - Doubles travel as text with 17 significant digits and come back with
//   extra_float_digits = 3: exact round trips.
// - A connection that broke (server restart, network) is reset before the next call; the call
//   that saw it break fails with kUnavailable.
// - Messages name the database by its URL with the password replaced by "***".
// Thread-safe: one connection per database object, guarded by a mutex.
#include <libpq-fe.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "database/database.h"
#include "database/postgres_result.h"
#include "database/record_json.h"
#include "database/workload_funcs.h"
#include "ir/serialize.h"
#include "ir/structural_equal.h"
#include "ir/structural_hash.h"

namespace tessera {
namespace {

// Advisory lock keys (pg_advisory_xact_lock(key1, key2)): "TS" in the first key, then what is
// locked. The hash lock's second key is hashtext(workload hash).
constexpr int kLockSpace = 0x5453;
constexpr int kSchemaLock = 1;

// Migration i builds schema version i from version i - 1. Version numbers are the SQLite
// schema's: 1 is the first layout, 2 added records.error_kind and records.job_id, 3 the stage
// times (records.build_secs, run_wall_secs, verify_secs, search_secs; 0 for older records), 4
// records.retimes (the record a runoff's re-measurement times again; NULL for older records).
struct Migration {
  int64_t to;
  const char* sql;
};
constexpr Migration kMigrations[] = {
    {1, R"sql(
CREATE TABLE schema_version (version BIGINT NOT NULL);
CREATE TABLE workloads (
  id BIGSERIAL PRIMARY KEY,
  hash TEXT NOT NULL,
  func_json TEXT NOT NULL);
CREATE INDEX workloads_by_hash ON workloads (hash);
CREATE TABLE records (
  id BIGSERIAL PRIMARY KEY,
  workload_id BIGINT NOT NULL REFERENCES workloads (id),
  target TEXT NOT NULL,
  trace_json TEXT NOT NULL,
  run_secs TEXT NOT NULL,
  mean_secs DOUBLE PRECISION NOT NULL,
  ok BOOLEAN NOT NULL,
  error_msg TEXT NOT NULL,
  args TEXT NOT NULL,
  timestamp DOUBLE PRECISION NOT NULL,
  provenance TEXT NOT NULL,
  verified BOOLEAN NOT NULL);
CREATE INDEX records_by_speed ON records (workload_id, target, ok, mean_secs, id);
INSERT INTO schema_version (version) VALUES (1);
)sql"},
    {2, R"sql(
ALTER TABLE records ADD COLUMN error_kind TEXT NOT NULL DEFAULT '';
ALTER TABLE records ADD COLUMN job_id TEXT NOT NULL DEFAULT '';
UPDATE records SET error_kind = CASE
  WHEN error_msg = '' THEN ''
  WHEN error_msg LIKE 'build:%' THEN 'build_error'
  WHEN error_msg LIKE 'run: timed out%' THEN 'timeout'
  ELSE 'run_error' END;
INSERT INTO schema_version (version) VALUES (2);
)sql"},
    {3, R"sql(
ALTER TABLE records ADD COLUMN build_secs DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN run_wall_secs DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN verify_secs DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN search_secs DOUBLE PRECISION NOT NULL DEFAULT 0;
INSERT INTO schema_version (version) VALUES (3);
)sql"},
    {4, R"sql(
ALTER TABLE records ADD COLUMN retimes BIGINT;
INSERT INTO schema_version (version) VALUES (4);
)sql"},
};
constexpr int64_t kPgSchemaVersion = 4;

constexpr const char* kPgRecordColumns =
    "id, workload_id, target, trace_json, run_secs, error_msg, args, timestamp, provenance, "
    "verified, error_kind, job_id, build_secs, run_wall_secs, verify_secs, search_secs, retimes";

// SQLSTATE classes: https://www.postgresql.org/docs/15/errcodes-appendix.html
absl::StatusCode CodeOfSqlState(const std::string& state) {
  if (state.empty()) return absl::StatusCode::kUnavailable;  // no answer: the connection broke
  if (absl::StartsWith(state, "08") || absl::StartsWith(state, "53") ||
      absl::StartsWith(state, "57P") || state == "40001" || state == "40P01") {
    return absl::StatusCode::kUnavailable;  // connection, resources, shutdown, retry
  }
  if (absl::StartsWith(state, "28") || state == "42501" || state == "25006") {
    return absl::StatusCode::kFailedPrecondition;  // authorization, privilege, read-only
  }
  if (state == "23503") return absl::StatusCode::kNotFound;  // foreign key: no such row
  return absl::StatusCode::kInternal;
}

std::string FormatDouble(double value) { return absl::StrFormat("%.17g", value); }

class PostgresDatabase final : public Database {
 public:
  PostgresDatabase(std::string name, PGconn* conn) : name_(std::move(name)), conn_(conn) {}
  ~PostgresDatabase() override { PQfinish(conn_); }

  // Configures the session and creates, migrates or checks the schema.
  absl::Status Init() {
    std::lock_guard<std::mutex> lock(mu_);  // not shared yet; taken for the annotations' sake
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    TESSERA_RETURN_IF_ERROR(
        Query("SET extra_float_digits = 3; SET client_min_messages = warning").status());
    TESSERA_RETURN_IF_ERROR(Query("BEGIN").status());
    absl::Status status = CheckOrMigrateSchema();
    return Finish(status);
  }

  absl::StatusOr<Workload> CommitWorkload(const PrimFunc& func) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    std::string hash = StructuralHashHex(func);
    TESSERA_RETURN_IF_ERROR(Query("BEGIN").status());
    absl::StatusOr<Workload> result = [&]() -> absl::StatusOr<Workload> {
      TESSERA_RETURN_IF_ERROR(Query("SELECT pg_advisory_xact_lock($1, hashtext($2))",
                                    {std::to_string(kLockSpace), hash})
                                  .status());
      TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> found, FindLocked(func, hash));
      if (found.has_value()) return *std::move(found);
      TESSERA_ASSIGN_OR_RETURN(
          PgResult inserted,
          Query("INSERT INTO workloads (hash, func_json) VALUES ($1, $2) RETURNING id",
                {hash, SaveJson(func)}));
      return Workload{inserted.Int(0, 0), hash, func};
    }();
    TESSERA_RETURN_IF_ERROR(Finish(result.status()));
    // Cached only once committed: a rolled-back id is never handed out again, but be as
    // careful as the SQLite database.
    if (result.ok()) funcs_.Add(result->id, result->func);
    return result;
  }

  absl::StatusOr<std::optional<Workload>> FindWorkload(const PrimFunc& func) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    return FindLocked(func, StructuralHashHex(func));
  }

  absl::StatusOr<std::vector<Workload>> AllWorkloads() override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    TESSERA_ASSIGN_OR_RETURN(PgResult rows,
                             Query("SELECT id, hash, func_json FROM workloads ORDER BY id"));
    std::vector<Workload> out;
    for (int i = 0; i < rows.rows(); ++i) {
      Workload w{rows.Int(i, 0), rows.Text(i, 1), PrimFunc()};
      TESSERA_ASSIGN_OR_RETURN(w.func, funcs_.Load(w.id, rows.Text(i, 2)));
      out.push_back(std::move(w));
    }
    return out;
  }

  absl::StatusOr<int64_t> CommitRecord(const TuningRecord& record) override {
    TESSERA_RETURN_IF_ERROR(ValidateRecord(record));
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    // One statement is one transaction; the foreign key rejects an unknown workload.
    absl::StatusOr<PgResult> inserted = Query(
        "INSERT INTO records (workload_id, target, trace_json, run_secs, mean_secs, ok, "
        "error_msg, args, timestamp, provenance, verified, error_kind, job_id, build_secs, "
        "run_wall_secs, verify_secs, search_secs, retimes) VALUES ($1, $2, $3, $4, $5, $6, $7, "
        "$8, $9, $10, $11, $12, $13, $14, $15, $16, $17, NULLIF($18::BIGINT, -1)) RETURNING id",
        {std::to_string(record.workload_id), record.target, record.trace_json,
         RunSecsToJson(record.run_secs).dump(), FormatDouble(record.mean_secs()),
         record.ok() ? "true" : "false", record.error_msg, ArgInfosToJson(record.args).dump(),
         FormatDouble(record.timestamp), ProvenanceToJson(record.provenance).dump(),
         record.verified ? "true" : "false", MeasureErrorName(record.error), record.job_id,
         FormatDouble(record.stage_secs.build), FormatDouble(record.stage_secs.run),
         FormatDouble(record.stage_secs.verify), FormatDouble(record.stage_secs.search),
         std::to_string(record.is_retiming() ? record.retimes : -1)});
    if (!inserted.ok() && inserted.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(absl::StrCat(
          "database '", name_, "': commit record: unknown workload id ", record.workload_id));
    }
    TESSERA_RETURN_IF_ERROR(inserted.status());
    return inserted->Int(0, 0);
  }

  absl::Status SetVerified(int64_t record_id, bool verified) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    TESSERA_ASSIGN_OR_RETURN(PgResult updated,
                             Query("UPDATE records SET verified = $1 WHERE id = $2 RETURNING id",
                                   {verified ? "true" : "false", std::to_string(record_id)}));
    if (updated.rows() == 0) {
      return absl::NotFoundError(
          absl::StrCat("database '", name_, "': set verified: unknown record id ", record_id));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<TuningRecord>> TopK(const Workload& workload,
                                                 const std::string& target, int k,
                                                 bool verified_only) override {
    if (k < 0) return absl::InvalidArgumentError(absl::StrCat("top-k: k = ", k, " < 0"));
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    return ReadRecords(
        absl::StrCat("SELECT ", kPgRecordColumns,
                     " FROM records WHERE workload_id = $1 AND target = $2 AND ok",
                     verified_only ? " AND verified" : "", " ORDER BY mean_secs, id LIMIT $3"),
        {std::to_string(workload.id), target, std::to_string(k)});
  }

  absl::StatusOr<std::vector<TuningRecord>> AllRecords(const Workload& workload,
                                                       const std::string& target) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    return ReadRecords(absl::StrCat("SELECT ", kPgRecordColumns,
                                    " FROM records WHERE workload_id = $1 AND target = $2 "
                                    "ORDER BY id"),
                       {std::to_string(workload.id), target});
  }

  absl::StatusOr<std::vector<TuningRecord>> AllRecords() override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    return ReadRecords(absl::StrCat("SELECT ", kPgRecordColumns, " FROM records ORDER BY id"), {});
  }

  absl::StatusOr<std::vector<TuningRecord>> RecordsAfter(int64_t after_id, int limit) override {
    if (limit < 0)
      return absl::InvalidArgumentError(absl::StrCat("records: limit ", limit, " < 0"));
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    return ReadRecords(absl::StrCat("SELECT ", kPgRecordColumns,
                                    " FROM records WHERE id > $1 ORDER BY id LIMIT $2"),
                       {std::to_string(after_id), std::to_string(limit)});
  }

  absl::StatusOr<int64_t> NumRecords() override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    TESSERA_ASSIGN_OR_RETURN(PgResult count, Query("SELECT COUNT(*) FROM records"));
    return count.Int(0, 0);
  }

 private:
  // Runs `sql` with text parameters $1.. (none: the simple protocol, which allows several
  // statements). "database 'URL': <server message> (in <the statement, abbreviated>)".
  absl::StatusOr<PgResult> Query(const std::string& sql,
                                 const std::vector<std::string>& params = {})
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const std::string& p : params) values.push_back(p.c_str());
    PgResult result(params.empty()
                        ? PQexec(conn_, sql.c_str())
                        : PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr,
                                       values.data(), nullptr, nullptr, 0));
    PGresult* raw = result.get();
    std::string state;
    ExecStatusType status = raw == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(raw);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
    const char* sqlstate = raw == nullptr ? nullptr : PQresultErrorField(raw, PG_DIAG_SQLSTATE);
    if (sqlstate != nullptr) state = sqlstate;
    std::string message =
        PgOneLine(raw != nullptr && PQresultErrorMessage(raw)[0] != '\0' ? PQresultErrorMessage(raw)
                                                                         : PQerrorMessage(conn_),
                  "; ");
    if (PQstatus(conn_) != CONNECTION_OK) state.clear();  // the connection is gone
    // libpq may still say CONNECTION_OK after the server closed the socket ("server closed the
    // connection unexpectedly", no SQLSTATE) or ended the session (57P..): reset it next time.
    if (state.empty() || absl::StartsWith(state, "08") || absl::StartsWith(state, "57P")) {
      broken_ = true;
    }
    std::string in = PgOneLine(sql, " ");
    if (in.size() > 48) in = in.substr(0, 45) + "...";
    return absl::Status(CodeOfSqlState(state),
                        absl::StrCat("database '", name_, "': ", message, " (in ", in, ")"));
  }

  // Resets a connection that broke since the last call; kUnavailable if it cannot be resumed.
  absl::Status Reconnect() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (PQstatus(conn_) == CONNECTION_OK && !broken_) {
      // A transaction left open by a failed call (its ROLLBACK could not be sent) is closed.
      if (PQtransactionStatus(conn_) == PQTRANS_INERROR) Query("ROLLBACK").IgnoreError();
      return absl::OkStatus();
    }
    PQreset(conn_);
    broken_ = false;
    if (PQstatus(conn_) != CONNECTION_OK) {
      broken_ = true;
      std::string message = PgOneLine(PQerrorMessage(conn_), "; ");
      return absl::UnavailableError(
          absl::StrCat("database '", name_, "': connection lost: ", message));
    }
    return Query("SET extra_float_digits = 3; SET client_min_messages = warning").status();
  }

  // Ends the open transaction: COMMIT if `status` is ok, ROLLBACK otherwise. Returns the
  // COMMIT's error if any, else `status`.
  absl::Status Finish(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (status.ok()) {
      absl::Status committed = Query("COMMIT").status();
      if (committed.ok()) return absl::OkStatus();
      if (PQtransactionStatus(conn_) != PQTRANS_IDLE) Query("ROLLBACK").IgnoreError();
      return committed;
    }
    if (PQstatus(conn_) == CONNECTION_OK && PQtransactionStatus(conn_) != PQTRANS_IDLE) {
      Query("ROLLBACK").IgnoreError();
    }
    return status;
  }

  absl::Status CheckOrMigrateSchema() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    TESSERA_RETURN_IF_ERROR(Query("SELECT pg_advisory_xact_lock($1, $2)",
                                  {std::to_string(kLockSpace), std::to_string(kSchemaLock)})
                                .status());
    TESSERA_ASSIGN_OR_RETURN(PgResult tables,
                             Query("SELECT table_name FROM information_schema.tables "
                                   "WHERE table_schema = current_schema() ORDER BY table_name"));
    bool has_version = false;
    for (int i = 0; i < tables.rows(); ++i) has_version |= tables.Text(i, 0) == "schema_version";
    int64_t version = 0;
    if (has_version) {
      TESSERA_ASSIGN_OR_RETURN(PgResult max, Query("SELECT MAX(version) FROM schema_version"));
      if (max.IsNull(0, 0)) {
        return absl::DataLossError(
            absl::StrCat("database '", name_, "': the schema_version table holds no version"));
      }
      version = max.Int(0, 0);
      if (version > kPgSchemaVersion) {
        return absl::FailedPreconditionError(absl::StrCat(
            "database '", name_, "': schema version ", version,
            " is newer than this tessera supports (", kPgSchemaVersion, "); use a newer tessera"));
      }
      if (version < 1) {
        return absl::DataLossError(
            absl::StrCat("database '", name_, "': invalid schema version ", version));
      }
    } else if (tables.rows() > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "database '", name_,
          "': not a tessera database (its schema has tables but no schema_version table)"));
    }
    for (const Migration& m : kMigrations) {
      if (m.to <= version) continue;
      absl::Status status = Query(m.sql).status();
      if (!status.ok()) {
        return absl::Status(status.code(), absl::StrCat("migrating schema ", m.to - 1, " to ", m.to,
                                                        ": ", status.message()));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<Workload>> FindLocked(const PrimFunc& func, const std::string& hash)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    TESSERA_ASSIGN_OR_RETURN(
        PgResult rows,
        Query("SELECT id, func_json FROM workloads WHERE hash = $1 ORDER BY id", {hash}));
    for (int i = 0; i < rows.rows(); ++i) {
      int64_t id = rows.Int(i, 0);
      TESSERA_ASSIGN_OR_RETURN(PrimFunc stored, funcs_.Load(id, rows.Text(i, 1)));
      if (StructuralEqual(stored, func)) return std::optional<Workload>(Workload{id, hash, stored});
    }
    return std::optional<Workload>();
  }

  // Runs `sql` and decodes every row (columns in kPgRecordColumns order).
  absl::StatusOr<std::vector<TuningRecord>> ReadRecords(const std::string& sql,
                                                        const std::vector<std::string>& params)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    TESSERA_ASSIGN_OR_RETURN(PgResult rows, Query(sql, params));
    std::vector<TuningRecord> out;
    out.reserve(static_cast<size_t>(rows.rows()));
    for (int i = 0; i < rows.rows(); ++i) {
      TuningRecord r;
      r.id = rows.Int(i, 0);
      absl::Status status = DecodeRecordRow(rows, i, &r);
      if (!status.ok()) {
        return absl::DataLossError(
            absl::StrCat("database '", name_, "': record ", r.id, ": ", status.message()));
      }
      out.push_back(std::move(r));
    }
    return out;
  }

  static absl::Status DecodeRecordRow(const PgResult& rows, int i, TuningRecord* r) {
    r->workload_id = rows.Int(i, 1);
    r->target = rows.Text(i, 2);
    r->trace_json = rows.Text(i, 3);
    r->error_msg = rows.Text(i, 5);
    r->timestamp = rows.Double(i, 7);
    r->verified = rows.Bool(i, 9);
    TESSERA_ASSIGN_OR_RETURN(r->error, ParseMeasureError(rows.Text(i, 10)));
    r->job_id = rows.Text(i, 11);
    r->stage_secs = StageSeconds{rows.Double(i, 12), rows.Double(i, 13), rows.Double(i, 14),
                                 rows.Double(i, 15)};
    r->retimes = rows.IsNull(i, 16) ? -1 : rows.Int(i, 16);
    auto parse = [](const std::string& text, const char* column) -> absl::StatusOr<nlohmann::json> {
      nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) return absl::DataLossError(absl::StrCat(column, ": malformed JSON"));
      return j;
    };
    TESSERA_ASSIGN_OR_RETURN(nlohmann::json run_secs, parse(rows.Text(i, 4), "run_secs"));
    TESSERA_ASSIGN_OR_RETURN(r->run_secs, RunSecsFromJson(run_secs));
    TESSERA_ASSIGN_OR_RETURN(nlohmann::json args, parse(rows.Text(i, 6), "args"));
    TESSERA_ASSIGN_OR_RETURN(r->args, ArgInfosFromJson(args));
    TESSERA_ASSIGN_OR_RETURN(nlohmann::json provenance, parse(rows.Text(i, 8), "provenance"));
    TESSERA_ASSIGN_OR_RETURN(r->provenance, ProvenanceFromJson(provenance));
    return absl::OkStatus();
  }

  const std::string name_;  // the URL, password redacted
  std::mutex mu_;
  PGconn* const conn_ ABSL_PT_GUARDED_BY(mu_);
  // A call saw the connection break: reset it before the next.
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  // Workload id -> parsed function (rows never change).
  WorkloadFuncs funcs_ ABSL_GUARDED_BY(mu_){name_};
};

}  // namespace

bool IsPostgresUrl(const std::string& url_or_path) {
  return absl::StartsWith(url_or_path, "postgresql://") ||
         absl::StartsWith(url_or_path, "postgres://");
}

std::string RedactDatabaseUrl(const std::string& url) {
  if (!IsPostgresUrl(url)) return url;
  std::string out = url;
  // postgresql://user:PASSWORD@host/...: the userinfo ends at the last '@' before the path.
  size_t start = out.find("://") + 3;
  size_t slash = out.find('/', start);
  size_t at = out.rfind('@', slash == std::string::npos ? std::string::npos : slash);
  if (at != std::string::npos && at > start) {
    size_t colon = out.find(':', start);
    if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  // ...?password=SECRET&...
  for (size_t pos = out.find("password="); pos != std::string::npos;
       pos = out.find("password=", pos + 1)) {
    size_t value = pos + 9;
    size_t end = out.find('&', value);
    out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Database>> OpenPostgresDatabase(const std::string& url) {
  const std::string name = RedactDatabaseUrl(url);
  if (!IsPostgresUrl(url)) {
    return absl::InvalidArgumentError(
        absl::StrCat("database '", name, "': not a PostgreSQL URL (expected postgresql://...)"));
  }
  PGconn* conn = PQconnectdb(url.c_str());
  if (conn == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("database '", name, "': cannot allocate a connection"));
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PgOneLine(PQerrorMessage(conn), "; ");
    PQfinish(conn);
    return absl::UnavailableError(absl::StrCat("database '", name, "': cannot connect: ", message));
  }
  auto database = std::make_unique<PostgresDatabase>(name, conn);
  TESSERA_RETURN_IF_ERROR(database->Init());
  return std::unique_ptr<Database>(std::move(database));
}

}  // namespace tessera
