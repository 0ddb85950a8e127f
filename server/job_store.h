// The server's persistent state, apart from the tuning records: jobs (their specs, state and
// progress) and the candidates of each job's pending batch, in one SQLite file (the "state
// database", by default `<records db>.state`) or a PostgreSQL database. It is what makes `kill -9`
// of the server harmless: on restart every unfinished job is started again with its id (its
// committed records count against its budget), and its pending batch is rebuilt from the stored
// traces, with the outcomes already reported kept, so nothing is measured twice and nothing is
// lost.
//
// A candidate row lives from the moment its batch is proposed until the batch is committed to
// the records database (then DeleteBatch drops the batch). Its states:
//   queued      waiting for a worker
//   leased      in a worker's lease (SQLite: leases do not survive a restart, Open puts them
//               back; PostgreSQL: they expire)
//   done        a worker reported its outcome (kept in `result`)
//   quarantined workers died while measuring it kMaxAttempts times: outcome worker_lost
//
// Two implementations (JobStore::Open picks by the path): a SQLite file (one connection in WAL
// mode) for one server, and PostgreSQL, which several servers share (shared(): claims and the
// queue in rows). Every method is one transaction; thread-safe.
#ifndef TESSERA_SERVER_JOB_STORE_H_
#define TESSERA_SERVER_JOB_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "database/database.h"
#include "tuner/tune_options.h"
#include "worker/measurer.h"

namespace tessera {

// What a client asked for (SubmitJobRequest, defaults filled in; proto/convert.h): the job's
// TuningSettings (tuner/tune_options.h, validated by their Validate) and what the service adds.
// Stored as JSON, the settings under the service's field names.
struct JobSpec : TuningSettings {
  std::vector<std::string> workloads;  // "NAME:K=V,...", IR text or IR JSON
  std::string target;                  // as submitted: "cpu", or a full target string
  int priority = 0;
  std::string name;
  // A model job (SubmitJobRequest.model): the model's name. Its tasks were extracted at
  // submission and are `workloads` (IR JSON), `weights` saying how often the model calls each.
  std::string model;
  std::vector<double> weights;  // one per workload; empty: 1 each

  std::string ToJson() const;
  static absl::StatusOr<JobSpec> FromJson(const std::string& json);
};

enum class JobState { kQueued = 1, kRunning = 2, kSucceeded = 3, kFailed = 4, kCancelled = 5 };
const char* JobStateName(JobState state);  // "queued", "running", ...
inline bool IsFinal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled;
}

struct JobRow {
  std::string id;  // "job-<n>", n counting up in this state database
  JobSpec spec;
  std::string target;  // the resolved target string (Target::ToString()); empty until resolved
  JobState state = JobState::kQueued;
  std::string error;
  double submitted_at = 0;  // seconds since the Unix epoch
  double updated_at = 0;
  int trials = 0;  // committed so far
};

enum class CandidateState { kQueued = 0, kLeased = 1, kDone = 2, kQuarantined = 3 };

// A measured outcome and the worker it came from.
struct ReportedOutcome {
  MeasureOutcome outcome;
  Provenance provenance;
};

struct NewCandidate {
  std::string trace_json;  // Trace::ToJson() of the candidate's schedule, postproc included
  std::string hash;        // structural hash of the scheduled function
  std::string func_json;   // the scheduled function, IR JSON (what workers build)
};

// A candidate as a worker gets it.
struct LeasedCandidate {
  int64_t candidate_id = -1;
  std::string func_json;
  std::string hash;
};

struct StoredCandidate {
  int64_t id = -1;
  std::string job_id;
  int task = -1;
  int position = 0;  // index in its batch
  std::string trace_json;
  std::string hash;
  std::string func_json;
  CandidateState state = CandidateState::kQueued;
  std::string lease_id;
  int attempts = 0;                       // leases that expired while it was in them
  std::optional<ReportedOutcome> result;  // set when done or quarantined
};

// What a shared store (PostgreSQL) adds so that several servers work from one database: job
// ownership claims and the queue itself (leases are rows, not memory). Every method is one
// transaction; times are seconds since the Unix epoch from the caller's clock (servers sharing
// a database keep their clocks in step, e.g. with NTP, to well under a lease).
struct SharedLease {
  std::string job_id;
  std::string context_json;  // as given to SetBatchContext
  std::vector<LeasedCandidate> candidates;
};

// What one ExpireLeases did, so that the server that did it counts it (server/metrics.h).
struct ExpiredLeases {
  int leases = 0;    // distinct leases that expired
  int requeued = 0;  // their candidates put back in the queue
  // Their candidates quarantined (worker_lost), by the target of the candidate's batch.
  std::map<std::string, int> quarantined;

  int candidates() const;  // requeued + every quarantined one
};

// The leases held by one worker, from the queue's rows (any server may have granted them).
struct WorkerLeases {
  int leases = 0;
  int candidates = 0;  // leased and not reported
};

struct BatchCounts {
  int queued = 0;
  int leased = 0;
  int finished = 0;  // done or quarantined
  int total = 0;
};

class SharedQueue {
 public:
  virtual ~SharedQueue() = default;

  // Job ownership: the server that owns a job runs its search; a claim lasts until `expires`
  // and is renewed by its owner. Claims `id` for `owner` if it is unowned, expired or owned by
  // `owner` already and the job has not ended; true when it did.
  virtual absl::StatusOr<bool> ClaimJob(const std::string& id, const std::string& owner, double now,
                                        double expires) = 0;
  // Claims up to `limit` unended jobs that are unowned or whose claim expired (oldest first;
  // rows locked by another claimer are skipped); returns their ids. An unowned job submitted
  // less than one claim period (`expires - now`) ago is left to the server it was submitted to,
  // which claims it right after creating it (a job is created, then claimed); past that period
  // (its submitter died in between) any server takes it.
  virtual absl::StatusOr<std::vector<std::string>> ClaimJobs(const std::string& owner, double now,
                                                             double expires, int limit) = 0;
  // Extends the claims of `owner` on its unended jobs; returns the ids it still owns.
  virtual absl::StatusOr<std::vector<std::string>> RenewClaims(const std::string& owner,
                                                               double expires) = 0;
  // Gives up the claims of `owner` (a graceful shutdown: another server may resume them now).
  virtual absl::Status ReleaseClaims(const std::string& owner) = 0;

  // What a worker needs to build the job's pending batch (opaque JSON), the target string its
  // workers must serve and its priority. Replaced by the next call; dropped with DeleteBatch.
  virtual absl::Status SetBatchContext(const std::string& job_id, const std::string& target,
                                       int priority, const std::string& context_json) = 0;
  // Leases at most `max` queued candidates of one job on `target` (highest priority first, then
  // the job served least recently) to `worker_id` until `expires`, or all of them when the
  // job's context JSON says "same_machine": true (the one key of it a store reads); nullopt
  // when none is queued.
  // Rows another server is leasing at the same moment are skipped, never handed out twice.
  virtual absl::StatusOr<std::optional<SharedLease>> Lease(const std::string& target,
                                                           const std::string& worker_id,
                                                           const std::string& lease_id, int max,
                                                           double now, double expires) = 0;
  // Stores the outcomes of candidates still leased under `lease_id`; returns how many were
  // accepted. kFailedPrecondition when no candidate is leased under it any more.
  virtual absl::StatusOr<int> ReportLease(
      const std::string& lease_id,
      const std::vector<std::pair<int64_t, ReportedOutcome>>& reports) = 0;
  // Extends a lease; false when no candidate is leased under it any more.
  virtual absl::StatusOr<bool> RenewLease(const std::string& lease_id, double expires) = 0;
  // Puts a lease's unreported candidates back without counting an attempt.
  virtual absl::Status ReturnLease(const std::string& lease_id) = 0;
  // Puts the candidates of every lease past its expiry back in the queue with one more attempt,
  // or quarantines them (worker_lost) at `max_attempts`. Any server may run it; rows another
  // server is expiring at the same moment are skipped, so each expiry is done (and counted)
  // once, by the server whose call returns it.
  virtual absl::StatusOr<ExpiredLeases> ExpireLeases(double now, int max_attempts) = 0;
  // Live leases and their unreported candidates per worker id, over every server's leases.
  virtual absl::StatusOr<std::map<std::string, WorkerLeases>> LeasesByWorker() = 0;
  virtual absl::StatusOr<BatchCounts> CountBatch(const std::string& job_id) = 0;

  // Workers register with one server; every server publishes the target strings its live
  // workers serve (`server` names the publisher), so that any server resolves a bare kind and
  // tells whether a target has a worker anywhere.
  virtual absl::Status PublishWorkerTargets(const std::string& server,
                                            const std::vector<std::string>& targets,
                                            double now) = 0;
  // The distinct targets published at or after `since`, sorted.
  virtual absl::StatusOr<std::vector<std::string>> LiveWorkerTargets(double since) = 0;
};

// The state database. Implementations: SQLite (a file; one server) and PostgreSQL (shared by
// any number of servers; shared() is its queue).
class JobStore {
 public:
  virtual ~JobStore() = default;
  // Opens (creating if absent) the state database at `path`: a postgresql:// URL or a SQLite
  // file. The SQLite store puts every leased candidate back in the queue (its lease died with
  // the previous process); the PostgreSQL one leaves leases to expire (another server may hold
  // them). Errors name the file or URL (password hidden).
  static absl::StatusOr<std::unique_ptr<JobStore>> Open(const std::string& path);

  // Stores a new job (state queued) and returns it with its id.
  virtual absl::StatusOr<JobRow> CreateJob(const JobSpec& spec, double now) = 0;
  // kNotFound for an unknown id.
  virtual absl::StatusOr<JobRow> GetJob(const std::string& id) = 0;
  // Every job, newest first.
  virtual absl::StatusOr<std::vector<JobRow>> ListJobs() = 0;
  virtual absl::Status SetTarget(const std::string& id, const std::string& target, double now) = 0;
  virtual absl::Status SetState(const std::string& id, JobState state, const std::string& error,
                                double now) = 0;
  virtual absl::Status SetTrials(const std::string& id, int trials, double now) = 0;

  // Stores a job's next batch (candidates of task `task`, in order); returns their ids.
  // kFailedPrecondition if the job still has a pending batch.
  virtual absl::StatusOr<std::vector<int64_t>> AddBatch(
      const std::string& job_id, int task, const std::vector<NewCandidate>& candidates) = 0;
  // The job's pending batch, in order (empty when none).
  virtual absl::StatusOr<std::vector<StoredCandidate>> PendingBatch(const std::string& job_id) = 0;
  // Drops the job's pending batch (after its commit to the records database, or on cancel).
  virtual absl::Status DeleteBatch(const std::string& job_id) = 0;

  // State changes of candidates (each call one transaction).
  virtual absl::Status MarkLeased(const std::vector<int64_t>& ids, const std::string& lease_id) = 0;
  // Back to the queue with one more attempt counted (their lease expired).
  virtual absl::Status MarkRequeued(const std::vector<int64_t>& ids) = 0;
  // Back to the queue without counting an attempt (the lease never reached a worker).
  virtual absl::Status MarkQueued(const std::vector<int64_t>& ids) = 0;
  // Done (or quarantined) with its outcome.
  virtual absl::Status SetResult(int64_t id, CandidateState state,
                                 const ReportedOutcome& result) = 0;

  // The queue in the database when several servers share it; nullptr for a store private to
  // one server (then the dispatcher keeps the queue in memory and writes it through).
  virtual SharedQueue* shared() { return nullptr; }
};

absl::StatusOr<std::unique_ptr<JobStore>> OpenSqliteJobStore(const std::string& path);
absl::StatusOr<std::unique_ptr<JobStore>> OpenPostgresJobStore(const std::string& url);

// A candidate's outcome as stored in the state database (JSON), both ways.
std::string ReportedOutcomeToJson(const ReportedOutcome& r);
absl::StatusOr<ReportedOutcome> ReportedOutcomeFromJson(const std::string& text);

}  // namespace tessera

#endif  // TESSERA_SERVER_JOB_STORE_H_
