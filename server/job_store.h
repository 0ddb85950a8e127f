// The server's persistent state, apart from the tuning records: jobs (their specs, state and
// progress) and the candidates of each job's pending batch, in one SQLite file (the "state
// database", by default `<records db>.state`). It is what makes `kill -9` of the server
// harmless: on restart every unfinished job is started again with its id (its committed
// records count against its budget), and its pending batch is rebuilt from the stored traces,
// with the outcomes already reported kept, so nothing is measured twice and nothing is lost.
//
// A candidate row lives from the moment its batch is proposed until the batch is committed to
// the records database (then DeleteBatch drops the batch). Its states:
//   queued      waiting for a worker
//   leased      in a worker's lease (leases do not survive a restart: Open puts them back)
//   done        a worker reported its outcome (kept in `result`)
//   quarantined workers died while measuring it kMaxAttempts times: outcome worker_lost
//
// One connection in WAL mode; every method is one transaction; thread-safe (a mutex).
#ifndef TESSERA_SERVER_JOB_STORE_H_
#define TESSERA_SERVER_JOB_STORE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "database/database.h"
#include "worker/measurer.h"

struct sqlite3;

namespace tessera {

// What a client asked for (SubmitJobRequest, defaults filled in). Stored as JSON.
struct JobSpec {
  std::vector<std::string> workloads;  // "NAME:K=V,...", IR text or IR JSON
  std::string target;                  // as submitted: "cpu", or a full target string
  int max_trials = 0;
  int max_trials_per_task = 0;  // 0: max_trials
  int trials_per_iter = 64;
  std::string strategy = "evolutionary";
  std::string cost_model = "xgb";
  std::string task_scheduler = "gradient";
  int64_t seed = 0;
  int priority = 0;
  bool verify = true;
  std::string name;

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

class JobStore {
 public:
  ~JobStore();
  // Opens (creating if absent) the state database at `path`, and puts every leased candidate
  // back in the queue (its lease died with the previous process). Errors name the file.
  static absl::StatusOr<std::unique_ptr<JobStore>> Open(const std::string& path);

  // Stores a new job (state queued) and returns it with its id.
  absl::StatusOr<JobRow> CreateJob(const JobSpec& spec, double now);
  // kNotFound for an unknown id.
  absl::StatusOr<JobRow> GetJob(const std::string& id);
  // Every job, newest first.
  absl::StatusOr<std::vector<JobRow>> ListJobs();
  absl::Status SetTarget(const std::string& id, const std::string& target, double now);
  absl::Status SetState(const std::string& id, JobState state, const std::string& error,
                        double now);
  absl::Status SetTrials(const std::string& id, int trials, double now);

  // Stores a job's next batch (candidates of task `task`, in order); returns their ids.
  // kFailedPrecondition if the job still has a pending batch.
  absl::StatusOr<std::vector<int64_t>> AddBatch(const std::string& job_id, int task,
                                                const std::vector<NewCandidate>& candidates);
  // The job's pending batch, in order (empty when none).
  absl::StatusOr<std::vector<StoredCandidate>> PendingBatch(const std::string& job_id);
  // Drops the job's pending batch (after its commit to the records database, or on cancel).
  absl::Status DeleteBatch(const std::string& job_id);

  // State changes of candidates (each call one transaction).
  absl::Status MarkLeased(const std::vector<int64_t>& ids, const std::string& lease_id);
  // Back to the queue with one more attempt counted (their lease expired).
  absl::Status MarkRequeued(const std::vector<int64_t>& ids);
  // Back to the queue without counting an attempt (the lease never reached a worker).
  absl::Status MarkQueued(const std::vector<int64_t>& ids);
  // Done (or quarantined) with its outcome.
  absl::Status SetResult(int64_t id, CandidateState state, const ReportedOutcome& result);

 private:
  explicit JobStore(sqlite3* db) : db_(db) {}
  absl::Status Exec(const std::string& sql);

  std::mutex mu_;
  sqlite3* db_;
};

}  // namespace tessera

#endif  // TESSERA_SERVER_JOB_STORE_H_
