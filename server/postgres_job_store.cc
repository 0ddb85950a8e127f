// The PostgreSQL state database (job_store.h), which several `tessera serve` processes share.
// The same jobs and candidates as the SQLite store, plus what sharing needs (SharedQueue):
// - jobs.owner / owner_expires: the server running a job's search, with a claim its owner
//   renews; an expired claim is taken by another server, which resumes the job from its rows.
// - batches: per job with a pending batch, the target its workers must serve, its priority and
//   the context a worker builds it from, so any server can hand its candidates out.
// - candidates.lease_id / lease_expires / worker_id: leases are rows. Leasing is one UPDATE of
//   rows picked FOR UPDATE SKIP LOCKED, so two servers never hand out one candidate; a report
//   changes only rows still leased under its lease id; expiry is one transaction any server
//   may run.
// The schema is built by migrations (kMigrations) from the version in state_schema_version
// (its own table: the records database may live in the same PostgreSQL database and has a
// schema_version of its own), inside one transaction under an advisory lock. A newer version
// than this tessera knows is refused. Doubles travel as text with 17 significant digits.
// Thread-safe: one connection, guarded by a mutex; a broken connection is reset on the next
// call (the call that saw it break fails with kUnavailable).
#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "database/database.h"
#include "database/postgres_result.h"
#include "server/job_store.h"

namespace tessera {
namespace {

constexpr int kLockSpace = 0x5453;  // "TS", as the records database's advisory locks
constexpr int kStateSchemaLock = 2;
// One server sweeps expired leases at a time: two sweeps skipping each other's locked rows
// could split one lease's candidates between them, and both would count that lease.
constexpr int kLeaseSweepLock = 3;

struct Migration {
  int64_t to;
  const char* sql;
};
constexpr Migration kMigrations[] = {
    {1, R"sql(
CREATE TABLE state_schema_version (version BIGINT NOT NULL);
CREATE TABLE jobs (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  spec TEXT NOT NULL,
  target TEXT NOT NULL DEFAULT '',
  state INTEGER NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  submitted_at DOUBLE PRECISION NOT NULL,
  updated_at DOUBLE PRECISION NOT NULL,
  trials INTEGER NOT NULL DEFAULT 0,
  owner TEXT NOT NULL DEFAULT '',
  owner_expires DOUBLE PRECISION NOT NULL DEFAULT 0);
CREATE TABLE batches (
  job_id TEXT PRIMARY KEY,
  target TEXT NOT NULL,
  priority INTEGER NOT NULL,
  context TEXT NOT NULL,
  last_served DOUBLE PRECISION NOT NULL DEFAULT 0);
CREATE TABLE candidates (
  id BIGSERIAL PRIMARY KEY,
  job_id TEXT NOT NULL,
  task INTEGER NOT NULL,
  position INTEGER NOT NULL,
  trace TEXT NOT NULL,
  hash TEXT NOT NULL,
  func TEXT NOT NULL,
  state INTEGER NOT NULL,
  lease_id TEXT NOT NULL DEFAULT '',
  lease_expires DOUBLE PRECISION NOT NULL DEFAULT 0,
  worker_id TEXT NOT NULL DEFAULT '',
  attempts INTEGER NOT NULL DEFAULT 0,
  result TEXT);
CREATE INDEX candidates_by_job ON candidates (job_id, position);
CREATE INDEX candidates_queued ON candidates (job_id, position) WHERE state = 0;
CREATE INDEX candidates_leased ON candidates (lease_id) WHERE state = 1;
CREATE INDEX candidates_expiring ON candidates (lease_expires) WHERE state = 1;
INSERT INTO state_schema_version (version) VALUES (1);
)sql"},
    {2, R"sql(
CREATE TABLE worker_targets (
  server TEXT NOT NULL,
  target TEXT NOT NULL,
  seen DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (server, target));
INSERT INTO state_schema_version (version) VALUES (2);
)sql"},
};
constexpr int64_t kPgSchemaVersion = 2;

std::string Num(double v) { return absl::StrFormat("%.17g", v); }
std::string Num(int64_t v) { return std::to_string(v); }

constexpr char kPgJobColumns[] =
    "SELECT id, spec, target, state, error, submitted_at, updated_at, trials FROM jobs";
constexpr char kCandidateColumns[] =
    "SELECT id, task, position, trace, hash, func, state, lease_id, attempts, result "
    "FROM candidates";

class PostgresJobStore final : public JobStore, public SharedQueue {
 public:
  PostgresJobStore(std::string name, PGconn* conn) : name_(std::move(name)), conn_(conn) {}
  ~PostgresJobStore() override { PQfinish(conn_); }

  absl::Status Init() {
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    TESSERA_RETURN_IF_ERROR(
        Query("SET extra_float_digits = 3; SET client_min_messages = warning").status());
    return InTransaction([&]() -> absl::Status {
      TESSERA_RETURN_IF_ERROR(Query("SELECT pg_advisory_xact_lock($1, $2)",
                                    {Num(int64_t{kLockSpace}), Num(int64_t{kStateSchemaLock})})
                                  .status());
      TESSERA_ASSIGN_OR_RETURN(PgResult exists,
                               Query("SELECT to_regclass('state_schema_version') IS NOT NULL"));
      int64_t version = 0;
      if (exists.Text(0, 0) == "t") {
        TESSERA_ASSIGN_OR_RETURN(
            PgResult v, Query("SELECT COALESCE(MAX(version), 0) FROM state_schema_version"));
        version = v.Int(0, 0);
      }
      if (version > kPgSchemaVersion) {
        return absl::FailedPreconditionError(
            absl::StrCat("state database '", name_, "': schema version ", version,
                         " is newer than this server's (", kPgSchemaVersion, ")"));
      }
      for (const Migration& m : kMigrations) {
        if (m.to > version) TESSERA_RETURN_IF_ERROR(Query(m.sql).status());
      }
      return absl::OkStatus();
    });
  }

  SharedQueue* shared() override { return this; }

  // --- JobStore ---

  absl::StatusOr<JobRow> CreateJob(const JobSpec& spec, double now) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    TESSERA_ASSIGN_OR_RETURN(
        PgResult r, Query("WITH s AS (SELECT nextval(pg_get_serial_sequence('jobs', 'seq')) AS n) "
                          "INSERT INTO jobs (seq, id, spec, state, submitted_at, updated_at) "
                          "SELECT n, 'job-' || n, $1, 1, $2, $2 FROM s RETURNING id",
                          {spec.ToJson(), Num(now)}));
    JobRow row;
    row.id = r.Text(0, 0);
    row.spec = spec;
    row.submitted_at = row.updated_at = now;
    return row;
  }

  absl::StatusOr<JobRow> GetJob(const std::string& id) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    TESSERA_ASSIGN_OR_RETURN(PgResult r,
                             Query(absl::StrCat(kPgJobColumns, " WHERE id = $1"), {id}));
    if (r.rows() == 0) return absl::NotFoundError(absl::StrCat("no job ", id));
    return RowOf(r, 0);
  }

  absl::StatusOr<std::vector<JobRow>> ListJobs() override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    TESSERA_ASSIGN_OR_RETURN(PgResult r, Query(absl::StrCat(kPgJobColumns, " ORDER BY seq DESC")));
    std::vector<JobRow> out;
    for (int i = 0; i < r.rows(); ++i) {
      TESSERA_ASSIGN_OR_RETURN(JobRow row, RowOf(r, i));
      out.push_back(std::move(row));
    }
    return out;
  }

  absl::Status SetTarget(const std::string& id, const std::string& target, double now) override {
    return Exec("UPDATE jobs SET target = $1, updated_at = $2 WHERE id = $3",
                {target, Num(now), id});
  }

  absl::Status SetState(const std::string& id, JobState state, const std::string& error,
                        double now) override {
    return Exec("UPDATE jobs SET state = $1, error = $2, updated_at = $3 WHERE id = $4",
                {Num(static_cast<int64_t>(state)), error, Num(now), id});
  }

  absl::Status SetTrials(const std::string& id, int trials, double now) override {
    return Exec("UPDATE jobs SET trials = $1, updated_at = $2 WHERE id = $3",
                {Num(int64_t{trials}), Num(now), id});
  }

  absl::StatusOr<std::vector<int64_t>> AddBatch(
      const std::string& job_id, int task, const std::vector<NewCandidate>& candidates) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    std::vector<int64_t> ids;
    TESSERA_RETURN_IF_ERROR(InTransaction([&]() -> absl::Status {
      // The job's row lock orders two AddBatch calls of one job.
      TESSERA_RETURN_IF_ERROR(
          Query("SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE", {job_id}).status());
      TESSERA_ASSIGN_OR_RETURN(
          PgResult count, Query("SELECT COUNT(*) FROM candidates WHERE job_id = $1", {job_id}));
      if (count.Int(0, 0) > 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "job ", job_id, " still has a pending batch of ", count.Int(0, 0), " candidates"));
      }
      if (candidates.empty()) return absl::OkStatus();
      // One statement for the batch (a round trip per row would dominate): rows of
      // (position, trace, hash, func) after $1 = job, $2 = task.
      std::string sql =
          "INSERT INTO candidates (job_id, task, position, trace, hash, func, state) VALUES ";
      std::vector<std::string> params = {job_id, Num(int64_t{task})};
      for (size_t i = 0; i < candidates.size(); ++i) {
        size_t p = params.size();
        absl::StrAppend(&sql, i ? ", " : "", "($1, $2, $", p + 1, ", $", p + 2, ", $", p + 3, ", $",
                        p + 4, ", 0)");
        params.push_back(Num(static_cast<int64_t>(i)));
        params.push_back(candidates[i].trace_json);
        params.push_back(candidates[i].hash);
        params.push_back(candidates[i].func_json);
      }
      absl::StrAppend(&sql, " RETURNING id, position");
      TESSERA_ASSIGN_OR_RETURN(PgResult r, Query(sql, params));
      ids.assign(candidates.size(), -1);
      for (int i = 0; i < r.rows(); ++i) ids[r.Int(i, 1)] = r.Int(i, 0);
      return absl::OkStatus();
    }));
    return ids;
  }

  absl::StatusOr<std::vector<StoredCandidate>> PendingBatch(const std::string& job_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    TESSERA_ASSIGN_OR_RETURN(
        PgResult r,
        Query(absl::StrCat(kCandidateColumns, " WHERE job_id = $1 ORDER BY position"), {job_id}));
    std::vector<StoredCandidate> out;
    for (int i = 0; i < r.rows(); ++i) {
      StoredCandidate c;
      c.id = r.Int(i, 0);
      c.job_id = job_id;
      c.task = static_cast<int>(r.Int(i, 1));
      c.position = static_cast<int>(r.Int(i, 2));
      c.trace_json = r.Text(i, 3);
      c.hash = r.Text(i, 4);
      c.func_json = r.Text(i, 5);
      c.state = static_cast<CandidateState>(r.Int(i, 6));
      c.lease_id = r.Text(i, 7);
      c.attempts = static_cast<int>(r.Int(i, 8));
      if (!r.IsNull(i, 9)) {
        absl::StatusOr<ReportedOutcome> outcome = ReportedOutcomeFromJson(r.Text(i, 9));
        if (!outcome.ok()) return Named(outcome.status());
        c.result = *std::move(outcome);
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  absl::Status DeleteBatch(const std::string& job_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    // Candidates first, then the batch row: Lease locks them in that order too.
    return InTransaction([&]() -> absl::Status {
      TESSERA_RETURN_IF_ERROR(Query("DELETE FROM candidates WHERE job_id = $1", {job_id}).status());
      return Query("DELETE FROM batches WHERE job_id = $1", {job_id}).status();
    });
  }

  absl::Status MarkLeased(const std::vector<int64_t>& ids, const std::string& lease_id) override {
    return ForEach(ids,
                   "UPDATE candidates SET state = 1, lease_id = $2 WHERE id = $1 AND state = 0",
                   lease_id);
  }

  absl::Status MarkRequeued(const std::vector<int64_t>& ids) override {
    return ForEach(ids,
                   "UPDATE candidates SET state = 0, lease_id = '', attempts = attempts + 1 "
                   "WHERE id = $1 AND state = 1",
                   "");
  }

  absl::Status MarkQueued(const std::vector<int64_t>& ids) override {
    return ForEach(
        ids, "UPDATE candidates SET state = 0, lease_id = '' WHERE id = $1 AND state = 1", "");
  }

  absl::Status SetResult(int64_t id, CandidateState state, const ReportedOutcome& result) override {
    return Exec(
        "UPDATE candidates SET state = $1, lease_id = '', result = $2, attempts = attempts + $3 "
        "WHERE id = $4",
        {Num(static_cast<int64_t>(state)), ReportedOutcomeToJson(result),
         Num(int64_t{state == CandidateState::kQuarantined ? 1 : 0}), Num(id)});
  }

  // --- SharedQueue ---

  absl::StatusOr<bool> ClaimJob(const std::string& id, const std::string& owner, double now,
                                double expires) override {
    TESSERA_ASSIGN_OR_RETURN(
        std::vector<std::string> ids,
        Ids("UPDATE jobs SET owner = $2, owner_expires = $4 WHERE id = $1 AND state IN (1, 2) "
            "AND (owner = '' OR owner = $2 OR owner_expires < $3) RETURNING id",
            {id, owner, Num(now), Num(expires)}));
    return !ids.empty();
  }

  absl::StatusOr<std::vector<std::string>> ClaimJobs(const std::string& owner, double now,
                                                     double expires, int limit) override {
    return Ids(
        "UPDATE jobs SET owner = $1, owner_expires = $3 WHERE seq IN (SELECT seq FROM jobs "
        "WHERE state IN (1, 2) AND owner <> $1 "
        "AND ((owner = '' AND submitted_at < 2 * $2::float8 - $3::float8) "
        "OR (owner <> '' AND owner_expires < $2)) "
        "ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED) RETURNING id",
        {owner, Num(now), Num(expires), Num(int64_t{limit})});
  }

  absl::StatusOr<std::vector<std::string>> RenewClaims(const std::string& owner,
                                                       double expires) override {
    return Ids(
        "UPDATE jobs SET owner_expires = $2 WHERE owner = $1 AND state IN (1, 2) RETURNING id",
        {owner, Num(expires)});
  }

  absl::Status ReleaseClaims(const std::string& owner) override {
    return Exec("UPDATE jobs SET owner = '', owner_expires = 0 WHERE owner = $1", {owner});
  }

  absl::Status SetBatchContext(const std::string& job_id, const std::string& target, int priority,
                               const std::string& context_json) override {
    return Exec(
        "INSERT INTO batches (job_id, target, priority, context) VALUES ($1, $2, $3, $4) "
        "ON CONFLICT (job_id) DO UPDATE SET target = EXCLUDED.target, "
        "priority = EXCLUDED.priority, context = EXCLUDED.context",
        {job_id, target, Num(int64_t{priority}), context_json});
  }

  absl::StatusOr<std::optional<SharedLease>> Lease(const std::string& target,
                                                   const std::string& worker_id,
                                                   const std::string& lease_id, int max, double now,
                                                   double expires) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    // One statement, one transaction: the job to serve, its first queued candidates that no
    // other transaction holds (all of them for a same_machine batch), their new state, and the
    // job's round-robin mark.
    TESSERA_ASSIGN_OR_RETURN(
        PgResult r,
        Query("WITH job AS (SELECT b.job_id, b.context FROM batches b WHERE b.target = $1 AND "
              "EXISTS (SELECT 1 FROM candidates q WHERE q.job_id = b.job_id AND q.state = 0) "
              "ORDER BY b.priority DESC, b.last_served, b.job_id LIMIT 1), "
              "picked AS (SELECT c.id FROM candidates c JOIN job ON c.job_id = job.job_id "
              "WHERE c.state = 0 ORDER BY c.position LIMIT (SELECT CASE WHEN "
              "(context::jsonb ->> 'same_machine') = 'true' THEN NULL ELSE $2::bigint END "
              "FROM job) FOR UPDATE OF c SKIP LOCKED), "
              "served AS (UPDATE batches SET last_served = $6 WHERE job_id IN "
              "(SELECT job_id FROM job) AND EXISTS (SELECT 1 FROM picked)) "
              "UPDATE candidates c SET state = 1, lease_id = $3, lease_expires = $4, "
              "worker_id = $5 FROM picked, job WHERE c.id = picked.id "
              "RETURNING c.id, c.job_id, c.func, c.hash, c.position, job.context",
              {target, Num(int64_t{max}), lease_id, Num(expires), worker_id, Num(now)}));
    if (r.rows() == 0) return std::optional<SharedLease>();
    SharedLease lease;
    lease.job_id = r.Text(0, 1);
    lease.context_json = r.Text(0, 5);
    std::vector<std::pair<int64_t, LeasedCandidate>> rows;
    for (int i = 0; i < r.rows(); ++i) {
      rows.push_back({r.Int(i, 4), LeasedCandidate{r.Int(i, 0), r.Text(i, 2), r.Text(i, 3)}});
    }
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [position, c] : rows) lease.candidates.push_back(std::move(c));
    return std::optional<SharedLease>(std::move(lease));
  }

  absl::StatusOr<int> ReportLease(
      const std::string& lease_id,
      const std::vector<std::pair<int64_t, ReportedOutcome>>& reports) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    int accepted = 0;
    if (!reports.empty()) {
      // One statement: only rows still leased under this lease change.
      std::string sql =
          "UPDATE candidates c SET state = 2, lease_id = '', result = v.result FROM (VALUES ";
      std::vector<std::string> params = {lease_id};
      for (size_t i = 0; i < reports.size(); ++i) {
        size_t p = params.size();
        absl::StrAppend(&sql, i ? ", " : "", "($", p + 1, "::bigint, $", p + 2, ")");
        params.push_back(Num(reports[i].first));
        params.push_back(ReportedOutcomeToJson(reports[i].second));
      }
      absl::StrAppend(&sql,
                      ") AS v (id, result) WHERE c.id = v.id AND c.lease_id = $1 AND "
                      "c.state = 1 RETURNING c.id");
      TESSERA_ASSIGN_OR_RETURN(PgResult done, Query(sql, params));
      accepted = done.rows();
    }
    if (accepted == 0) {
      TESSERA_ASSIGN_OR_RETURN(
          PgResult live,
          Query("SELECT 1 FROM candidates WHERE lease_id = $1 AND state = 1 LIMIT 1", {lease_id}));
      if (live.rows() == 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "lease ", lease_id,
            " holds no candidate any more (expired, revoked, reported or unknown): its "
            "candidates were or will be measured elsewhere"));
      }
    }
    return accepted;
  }

  absl::StatusOr<bool> RenewLease(const std::string& lease_id, double expires) override {
    TESSERA_ASSIGN_OR_RETURN(
        std::vector<std::string> ids,
        Ids("UPDATE candidates SET lease_expires = $2 WHERE lease_id = $1 AND state = 1 "
            "RETURNING job_id",
            {lease_id, Num(expires)}));
    return !ids.empty();
  }

  absl::Status ReturnLease(const std::string& lease_id) override {
    return Exec("UPDATE candidates SET state = 0, lease_id = '' WHERE lease_id = $1 AND state = 1",
                {lease_id});
  }

  absl::StatusOr<ExpiredLeases> ExpireLeases(double now, int max_attempts) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    // Mostly nothing expired: one cheap look first, the transaction only when needed.
    TESSERA_ASSIGN_OR_RETURN(
        PgResult any,
        Query("SELECT 1 FROM candidates WHERE state = 1 AND lease_expires < $1 LIMIT 1",
              {Num(now)}));
    ExpiredLeases done;
    if (any.rows() == 0) return done;
    TESSERA_RETURN_IF_ERROR(InTransaction([&]() -> absl::Status {
      TESSERA_ASSIGN_OR_RETURN(PgResult mine,
                               Query("SELECT pg_try_advisory_xact_lock($1, $2)",
                                     {Num(int64_t{kLockSpace}), Num(int64_t{kLeaseSweepLock})}));
      if (mine.Text(0, 0) != "t") return absl::OkStatus();  // another server is sweeping them
      // The batch's target, for the quarantine counts (a batch deleted meanwhile: "").
      TESSERA_ASSIGN_OR_RETURN(
          PgResult expired,
          Query("SELECT c.id, c.attempts, c.lease_id, c.worker_id, COALESCE(b.target, '') "
                "FROM candidates c LEFT JOIN batches b ON b.job_id = c.job_id "
                "WHERE c.state = 1 AND c.lease_expires < $1 FOR UPDATE OF c SKIP LOCKED",
                {Num(now)}));
      std::set<std::string> leases;
      for (int i = 0; i < expired.rows(); ++i) {
        leases.insert(expired.Text(i, 2));
        int attempts = static_cast<int>(expired.Int(i, 1)) + 1;
        std::string id = expired.Text(i, 0);
        if (attempts >= max_attempts) {
          ReportedOutcome lost;
          lost.outcome.error = MeasureError::kWorkerLost;
          lost.outcome.error_msg =
              absl::StrCat("worker_lost: quarantined after ", attempts,
                           " leases expired while measuring it (last: worker ", expired.Text(i, 3),
                           ", lease ", expired.Text(i, 2), ")");
          lost.provenance.worker_id = expired.Text(i, 3);
          TESSERA_RETURN_IF_ERROR(
              Query("UPDATE candidates SET state = 3, lease_id = '', attempts = $2, result = $3 "
                    "WHERE id = $1",
                    {id, Num(int64_t{attempts}), ReportedOutcomeToJson(lost)})
                  .status());
          ++done.quarantined[expired.Text(i, 4)];
        } else {
          TESSERA_RETURN_IF_ERROR(
              Query("UPDATE candidates SET state = 0, lease_id = '', attempts = $2 WHERE id = $1",
                    {id, Num(int64_t{attempts})})
                  .status());
          ++done.requeued;
        }
      }
      done.leases = static_cast<int>(leases.size());
      return absl::OkStatus();
    }));
    return done;
  }

  absl::StatusOr<std::map<std::string, WorkerLeases>> LeasesByWorker() override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    TESSERA_ASSIGN_OR_RETURN(
        PgResult rows, Query("SELECT worker_id, COUNT(DISTINCT lease_id), COUNT(*) FROM candidates "
                             "WHERE state = 1 GROUP BY worker_id"));
    std::map<std::string, WorkerLeases> out;
    for (int i = 0; i < rows.rows(); ++i) {
      out[rows.Text(i, 0)] =
          WorkerLeases{static_cast<int>(rows.Int(i, 1)), static_cast<int>(rows.Int(i, 2))};
    }
    return out;
  }

  absl::Status PublishWorkerTargets(const std::string& server,
                                    const std::vector<std::string>& targets, double now) override {
    if (targets.empty()) return absl::OkStatus();
    std::string sql = "INSERT INTO worker_targets (server, target, seen) VALUES ";
    std::vector<std::string> params = {server, Num(now)};
    for (size_t i = 0; i < targets.size(); ++i) {
      absl::StrAppend(&sql, i ? ", " : "", "($1, $", params.size() + 1, ", $2)");
      params.push_back(targets[i]);
    }
    absl::StrAppend(&sql, " ON CONFLICT (server, target) DO UPDATE SET seen = EXCLUDED.seen");
    return Exec(sql, params);
  }

  absl::StatusOr<std::vector<std::string>> LiveWorkerTargets(double since) override {
    return Ids("SELECT DISTINCT target FROM worker_targets WHERE seen >= $1 ORDER BY target",
               {Num(since)});
  }

  absl::StatusOr<BatchCounts> CountBatch(const std::string& job_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    TESSERA_ASSIGN_OR_RETURN(
        PgResult r,
        Query("SELECT state, COUNT(*) FROM candidates WHERE job_id = $1 GROUP BY state", {job_id}));
    BatchCounts counts;
    for (int i = 0; i < r.rows(); ++i) {
      int n = static_cast<int>(r.Int(i, 1));
      switch (r.Int(i, 0)) {
        case 0:
          counts.queued += n;
          break;
        case 1:
          counts.leased += n;
          break;
        default:
          counts.finished += n;
      }
      counts.total += n;
    }
    return counts;
  }

 private:
  absl::Status Named(const absl::Status& s) const {
    return absl::Status(s.code(), absl::StrCat("state database '", name_, "': ", s.message()));
  }

  // `sql` with text parameters $1.. (none: the simple protocol, several statements allowed).
  absl::StatusOr<PgResult> Query(const std::string& sql,
                                 const std::vector<std::string>& params = {}) {
    std::vector<const char*> values;
    for (const std::string& p : params) values.push_back(p.c_str());
    PgResult result(params.empty()
                        ? PQexec(conn_, sql.c_str())
                        : PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr,
                                       values.data(), nullptr, nullptr, 0));
    ExecStatusType status =
        result.get() == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(result.get());
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
    const char* sqlstate =
        result.get() == nullptr ? nullptr : PQresultErrorField(result.get(), PG_DIAG_SQLSTATE);
    std::string state = sqlstate != nullptr ? sqlstate : "";
    if (PQstatus(conn_) != CONNECTION_OK) state.clear();
    absl::StatusCode code = absl::StatusCode::kInternal;
    if (state.empty() || absl::StartsWith(state, "08") || absl::StartsWith(state, "57P")) {
      broken_ = true;
      code = absl::StatusCode::kUnavailable;
    } else if (state == "40001" || state == "40P01" || absl::StartsWith(state, "53")) {
      code = absl::StatusCode::kUnavailable;  // serialization failure, deadlock, resources
    }
    std::string in = PgOneLine(sql, " ");
    if (in.size() > 48) in = in.substr(0, 45) + "...";
    return absl::Status(
        code, absl::StrCat("state database '", name_, "': ", PgOneLine(PQerrorMessage(conn_), " "),
                           " (in ", in, ")"));
  }

  absl::Status Reconnect() {
    if (PQstatus(conn_) == CONNECTION_OK && !broken_) {
      if (PQtransactionStatus(conn_) == PQTRANS_INERROR) Query("ROLLBACK").IgnoreError();
      return absl::OkStatus();
    }
    PQreset(conn_);
    broken_ = false;
    if (PQstatus(conn_) != CONNECTION_OK) {
      broken_ = true;
      return absl::UnavailableError(absl::StrCat("state database '", name_, "': reconnect failed: ",
                                                 PgOneLine(PQerrorMessage(conn_), " ")));
    }
    return Query("SET extra_float_digits = 3; SET client_min_messages = warning").status();
  }

  // BEGIN, `body`, COMMIT (ROLLBACK when it fails). Callers hold mu_.
  absl::Status InTransaction(const std::function<absl::Status()>& body) {
    TESSERA_RETURN_IF_ERROR(Query("BEGIN").status());
    absl::Status s = body();
    if (s.ok()) s = Query("COMMIT").status();
    if (!s.ok()) Query("ROLLBACK").IgnoreError();
    return s;
  }

  absl::Status Exec(const std::string& sql, const std::vector<std::string>& params) {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    return Query(sql, params).status();
  }

  absl::StatusOr<std::vector<std::string>> Ids(const std::string& sql,
                                               const std::vector<std::string>& params) {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    TESSERA_ASSIGN_OR_RETURN(PgResult r, Query(sql, params));
    std::vector<std::string> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back(r.Text(i, 0));
    return out;
  }

  // `sql` with $1 = each id and $2 = `arg` (when the statement has one), in one transaction.
  absl::Status ForEach(const std::vector<int64_t>& ids, const std::string& sql,
                       const std::string& arg) {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(Reconnect());
    bool two = sql.find("$2") != std::string::npos;
    return InTransaction([&]() -> absl::Status {
      for (int64_t id : ids) {
        std::vector<std::string> params = {Num(id)};
        if (two) params.push_back(arg);
        TESSERA_RETURN_IF_ERROR(Query(sql, params).status());
      }
      return absl::OkStatus();
    });
  }

  absl::StatusOr<JobRow> RowOf(const PgResult& r, int i) const {
    JobRow row;
    row.id = r.Text(i, 0);
    absl::StatusOr<JobSpec> spec = JobSpec::FromJson(r.Text(i, 1));
    if (!spec.ok()) return Named(spec.status());
    row.spec = *std::move(spec);
    row.target = r.Text(i, 2);
    int64_t state = r.Int(i, 3);
    if (state < 1 || state > 5) {
      return absl::DataLossError(
          absl::StrCat("state database '", name_, "': job ", row.id, " has state ", state));
    }
    row.state = static_cast<JobState>(state);
    row.error = r.Text(i, 4);
    row.submitted_at = r.Double(i, 5);
    row.updated_at = r.Double(i, 6);
    row.trials = static_cast<int>(r.Int(i, 7));
    return row;
  }

  const std::string name_;
  std::mutex mu_;
  PGconn* conn_;
  bool broken_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<JobStore>> OpenPostgresJobStore(const std::string& url) {
  std::string name = RedactDatabaseUrl(url);
  PGconn* conn = PQconnectdb(url.c_str());
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    std::string msg = conn != nullptr ? PgOneLine(PQerrorMessage(conn), " ") : "out of memory";
    PQfinish(conn);
    return absl::UnavailableError(absl::StrCat("state database '", name, "': ", msg));
  }
  auto store = std::make_unique<PostgresJobStore>(name, conn);
  TESSERA_RETURN_IF_ERROR(store->Init());
  return store;
}

}  // namespace tessera
