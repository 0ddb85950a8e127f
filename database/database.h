// The tuning database: workloads (unscheduled functions, keyed by structural hash and
// structural equality) and tuning records (a candidate's full trace and its measured times on
// one target). Every query is by workload AND target: a record measured on one machine or GPU
// never answers for another (targets compare by their canonical string, Target::ToString()).
//
// Implementations: SQLite (persistent, WAL, one transaction per commit, schema version
// checked on open), PostgreSQL (shared by several processes and hosts; the same schema) and
// in-memory (tests, ablations). JSON-lines export/import moves records
// between databases; importing skips records already present. Formats: docs/formats.md.
#ifndef TESSERA_DATABASE_DATABASE_H_
#define TESSERA_DATABASE_DATABASE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/analysis.h"
#include "ir/function.h"

namespace tessera {

struct Workload {
  int64_t id = -1;
  std::string hash;  // StructuralHashHex(func)
  PrimFunc func;
};

// Where a measurement came from, so a record can be judged later.
struct Provenance {
  std::string tessera_version;
  std::string compiler;   // "gcc 12.2.0 -O3 -march=native ..." or "nvrtc 13.0 sm_90"
  std::string device;     // CPU model name or GPU name
  std::string driver;     // CUDA driver version (empty on cpu)
  std::string worker_id;  // the service worker that measured it; empty in a local `tune`
};

// Why a candidate has no valid measurement. The names ("build_error", ...) are what records,
// JSON lines and the gRPC API carry.
enum class MeasureError {
  kNone,         // it ran (and, if checked, matched the reference)
  kBuild,        // "build_error": the compiler (or NVRTC) rejected it or timed out
  kRun,          // "run_error": it crashed, returned non-zero, or could not be loaded
  kTimeout,      // "timeout": a run step outlasted its time-out
  kWrongOutput,  // "wrong_output": it ran, but its outputs differ from the reference's
  kWorkerLost,   // "worker_lost": workers died while measuring it, too often (quarantined)
};
const char* MeasureErrorName(MeasureError error);  // "" for kNone
// The inverse of MeasureErrorName; kInvalidArgument for an unknown name.
absl::StatusOr<MeasureError> ParseMeasureError(const std::string& name);

// Where the time spent on one candidate went, wall seconds per stage (schema 3; records stored
// before read 0 everywhere, as do stages that did not run). The report adds them up per task
// ("where the time went").
struct StageSeconds {
  double build = 0;   // its code generation and compilation
  double run = 0;     // its run steps: loading, warm-up and every repeat (a time-out included)
  double verify = 0;  // its check against the reference (the reference's first run included)
  // Its share of the search that proposed it: the strategy's candidate generation (cost-model
  // predictions included) and the cost-model update before it, divided equally among the
  // candidates of its batch.
  double search = 0;

  double total() const { return build + run + verify + search; }
};

struct TuningRecord {
  int64_t id = -1;  // assigned by CommitRecord
  int64_t workload_id = -1;
  std::string target;            // Target::ToString()
  std::string trace_json;        // the full trace, postproc part included (Trace::ToJson())
  std::vector<double> run_secs;  // seconds per run, one per repeat; empty unless it ran
  MeasureError error = MeasureError::kNone;
  std::string error_msg;  // what went wrong, for people; empty when it ran
  std::vector<ArgInfo> args;
  double timestamp = 0;  // seconds since the Unix epoch, when measured
  Provenance provenance;
  bool verified = false;    // its outputs were checked against the reference and matched
  std::string job_id;       // the service job that measured it; empty in a local `tune`
  StageSeconds stage_secs;  // where the time went (0s for records from before schema 3)
  // The record whose program this one times again (a runoff's re-measurement, tuner/runoff.h):
  // its id, or 0 when that record is not in this database (its link was dropped on import);
  // -1 for a measurement of its own (a trial), as every record stored before schema 4 is.
  int64_t retimes = -1;

  bool ok() const { return error == MeasureError::kNone && !run_secs.empty(); }
  // A re-measurement of another record's program rather than a trial of its own.
  bool is_retiming() const { return retimes >= 0; }
  // Mean of run_secs; 1e10 for a failed record (MetaSchedule's convention, internal only:
  // what users see says "failed" instead).
  double mean_secs() const;
};

class Database {
 public:
  virtual ~Database() = default;

  // The stored workload structurally equal to `func`, inserting it if new.
  virtual absl::StatusOr<Workload> CommitWorkload(const PrimFunc& func) = 0;
  // The stored workload structurally equal to `func`, or nullopt.
  virtual absl::StatusOr<std::optional<Workload>> FindWorkload(const PrimFunc& func) = 0;
  virtual absl::StatusOr<std::vector<Workload>> AllWorkloads() = 0;

  // Stores `record` (record.workload_id must name a committed workload); returns its id.
  virtual absl::StatusOr<int64_t> CommitRecord(const TuningRecord& record) = 0;
  virtual absl::Status SetVerified(int64_t record_id, bool verified) = 0;

  // The k fastest successful records of `workload` on `target`, fastest first (ties: older
  // first); only verified ones if `verified_only`.
  virtual absl::StatusOr<std::vector<TuningRecord>> TopK(const Workload& workload,
                                                         const std::string& target, int k,
                                                         bool verified_only = false) = 0;
  // Every record of `workload` on `target`, failed ones included, in commit order.
  virtual absl::StatusOr<std::vector<TuningRecord>> AllRecords(const Workload& workload,
                                                               const std::string& target) = 0;
  // Every record in the database, in commit order.
  virtual absl::StatusOr<std::vector<TuningRecord>> AllRecords() = 0;
  // The records whose id is above `after_id`, in commit order, at most `limit` (>= 0) of them:
  // a page of AllRecords().
  virtual absl::StatusOr<std::vector<TuningRecord>> RecordsAfter(int64_t after_id, int limit) = 0;
  virtual absl::StatusOr<int64_t> NumRecords() = 0;
};

// Opens (creating if absent) a SQLite database file. Errors name the file: not a database,
// a newer schema version, a read-only location.
absl::StatusOr<std::unique_ptr<Database>> OpenSqliteDatabase(const std::string& path);
std::unique_ptr<Database> NewMemoryDatabase();

// Connects to a PostgreSQL database, "postgresql://[user[:password]@][host][:port]/dbname
// [?param=value...]" (libpq's URL syntax; a socket directory goes in ?host=), creating or
// migrating the schema. kUnavailable when the server cannot be reached; errors name the URL
// with its password replaced by "***". Several processes may share one database.
absl::StatusOr<std::unique_ptr<Database>> OpenPostgresDatabase(const std::string& url);
// True for "postgresql://..." and "postgres://..." URLs.
bool IsPostgresUrl(const std::string& url_or_path);
// `url` with any password replaced by "***" (for messages and logs); other strings unchanged.
std::string RedactDatabaseUrl(const std::string& url);
// What `--db` names: a PostgreSQL URL (OpenPostgresDatabase), else a SQLite file
// (OpenSqliteDatabase).
absl::StatusOr<std::unique_ptr<Database>> OpenDatabase(const std::string& url_or_path);

// The best successful (and, if `verified_only`, verified) record, or nullopt.
absl::StatusOr<std::optional<TuningRecord>> BestRecord(Database* db, const PrimFunc& func,
                                                       const std::string& target,
                                                       bool verified_only);

// JSON lines: one object per line, each a record with its workload inlined (docs/formats.md).
// Export returns the number of records written.
absl::StatusOr<int64_t> ExportJsonLines(Database* db, const std::string& path);
struct ImportStats {
  int64_t imported = 0;
  // The same measurement (workload, target, trace, timestamp and run times) as a stored record
  // or an earlier line: skipped.
  int64_t duplicates = 0;
  // Re-measurements whose re-timed record was neither in the import nor stored already: stored
  // with `retimes` 0 (a record not in this database).
  int64_t links_dropped = 0;
};
// Checks every line (as the service's ImportRecords does, record_json.h CheckImportedRecord)
// before committing any; errors name the file and line.
absl::StatusOr<ImportStats> ImportJsonLines(Database* db, const std::string& path);

}  // namespace tessera

#endif  // TESSERA_DATABASE_DATABASE_H_
