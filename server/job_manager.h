// The server's jobs: each one runs a TuningJob (tuner/tuning_job.h) in its own thread,
//
//   resolve the target -> TuningJob::Start(tasks, db, options, job_id)
//   loop: DurableMeasurer::NextBatch (the pending batch restored from the JobStore first; each
//         new one stored) -> Measure (a RemoteMeasurer) -> DurableMeasurer::Commit (drops it)
//
// and keeps a status snapshot and a short event log per job for GetJob / WatchJob. Job specs,
// states and progress are written to the JobStore, so a restarted server resumes every
// unfinished job (ResumeAll) with the same id: its committed records count against its budget,
// its pending batch is rebuilt from the stored traces, outcomes already reported are not
// measured again, and candidates whose record is already in the database (the server died
// between the commit and the batch's deletion) are not committed twice.
//
// On a shared store (JobStore::shared(), several servers on one PostgreSQL) a job is run by the
// server that owns it: Submit claims the new job, a claim thread renews this server's claims
// every claim_seconds / 3 and claims the unended jobs whose claim expired (their server died),
// resuming them exactly as ResumeAll does after a restart. A job whose claim this server lost,
// or that another server cancelled, is abandoned: its thread stops and leaves the rows as they
// are. Shutdown gives the claims up so another server takes over at once.
//
// No tuning logic here: that is tuner/'s. Thread-safe.
#ifndef TESSERA_SERVER_JOB_MANAGER_H_
#define TESSERA_SERVER_JOB_MANAGER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "database/database.h"
#include "server/dispatcher.h"
#include "server/job_store.h"
#include "tuner/tune.h"

namespace tessera {

struct JobManagerOptions {
  int search_threads = 0;  // TuneOptions::num_threads of every job (<= 0: hardware threads)
  RunnerConfig runner;     // how workers time candidates (the seed is the job's)
  double build_timeout_sec = 60;
  int max_events = 256;       // events kept per job for WatchJob
  // Limits on one job (SubmitJob answers INVALID_ARGUMENT naming the limit); `tessera serve`
  // sets them from --max-job-trials, --max-job-workloads and --max-buffer-bytes.
  int max_trials = 1 << 20;   // upper bound of a job's budget
  int max_workloads = 256;    // workloads (tasks) in one job
  // Bytes of a workload's argument buffers together: a worker allocates them (and the
  // reference's) for every candidate.
  int64_t max_buffer_bytes = int64_t{4} << 30;
  // Bytes of a model (SubmitJobRequest.model), --max-model-bytes; the server's gRPC message
  // limit must be above it (ServerOptions::max_message_bytes).
  int64_t max_model_bytes = int64_t{60} << 20;
  double claim_seconds = 30;  // shared store: how long a job's claim lasts unless renewed
  std::string owner;          // shared store: this server's name in claims (empty: generated)
  JobManagerOptions() {
    runner.repeat = 3;
    runner.min_repeat_ms = 20;
    runner.timeout_sec = 30;
  }
};

struct TaskSnapshot {
  std::string workload_hash;
  // The search's figures (TuningJob::Summary: trials, errors), but for best_secs, best_verified
  // and best_record_id: those of the record GetBest returns for the task (BestRecordOrDefault on
  // the job's target, verified only when the job verifies), whichever job measured it, and
  // default_secs after a runoff round: the last round's (TaskSummary::runoffs).
  TaskSummary summary;
  bool finished = false;
  std::string best_job_id;             // the job that measured the best record
  int64_t passed_over_record_id = -1;  // a faster record within the margin of the default's
  int runoff_records = 0;              // re-measurements by this job's runoff: not trials
  bool best_changed_by_runoff = false;
  int64_t best_record_id_before_runoff = -1;
  std::string runoff;  // what this job's runoff did, one line per round, or why it failed
};

struct JobSnapshot {
  JobRow row;
  std::vector<TaskSnapshot> tasks;  // empty for a job that ended before this server started
  std::vector<std::string> warnings;  // TuneSummary::warnings of the job's tuning
  std::string waiting_for;
  int queued = 0;
  int in_flight = 0;
};

enum class JobEventKind {
  kSnapshot = 1,
  kBatchDone = 2,
  kNewBest = 3,
  kTaskFinished = 4,
  kJobFinished = 5,
  kJobFailed = 6,
  kJobCancelled = 7,
};

struct JobEvent {
  uint64_t seq = 0;  // increasing per job, from 1
  JobEventKind kind = JobEventKind::kSnapshot;
  int task = -1;
  double time = 0;  // seconds since the Unix epoch
  JobSnapshot status;
};

// The tasks of a job from its workload strings: specs, IR text or IR JSON. Entries naming the
// same function (structurally) merge into one task whose weight counts them. Each function must
// be well-formed with its accesses inside its buffers (ir/verify.h), as an imported record's
// workload must. kInvalidArgument names the entry: "workloads[1]: ...".
absl::StatusOr<std::vector<TuneTaskSpec>> ParseJobTasks(const std::vector<std::string>& workloads);
// The tasks of a stored job: ParseJobTasks of its workloads, weighted by spec.weights (a model
// job). kDataLoss when the weights do not match the tasks.
absl::StatusOr<std::vector<TuneTaskSpec>> JobTasks(const JobSpec& spec);

// A model to tune (SubmitJobRequest.model), as JobManager::Submit takes it.
struct ModelUpload {
  const std::string* bytes = nullptr;     // the ONNX file's bytes
  std::string name;                       // in errors and the status; empty: "model.onnx"
  std::vector<std::string> input_shapes;  // "NAME=D0,D1,..." as --input-shape takes them
};

class JobManager {
 public:
  JobManager(Database* db, JobStore* store, Dispatcher* dispatcher, JobManagerOptions options);
  ~JobManager();  // Shutdown()

  // Starts a thread for every job the store holds unfinished.
  absl::Status ResumeAll();
  // Validates `spec` (kInvalidArgument naming the field), stores the job and starts it. With
  // `model`, `spec` must have no workloads: the model is imported (model/load.h, as `tessera
  // tune MODEL` loads it) and its tasks become the job's workloads, with their weights; an
  // import error is returned as the local import gives it (naming the model and the node).
  absl::StatusOr<std::string> Submit(JobSpec spec, const ModelUpload* model = nullptr);
  // kNotFound for an unknown id.
  absl::StatusOr<JobSnapshot> Get(const std::string& id);
  // Newest first; only jobs in `states` (empty: all); at most `limit`.
  absl::StatusOr<std::vector<JobSnapshot>> List(const std::set<JobState>& states, int limit);
  // Stops the job (its queued candidates are dropped, its leases revoked); a job that already
  // ended is left as it is. kNotFound for an unknown id.
  absl::StatusOr<JobSnapshot> Cancel(const std::string& id);
  // The events of job `id` after `after_seq`, waiting up to `wait_seconds` for one. `*ended`
  // is set when the job has ended and every event was returned. kNotFound for an unknown id.
  absl::StatusOr<std::vector<JobEvent>> Events(const std::string& id, uint64_t after_seq,
                                               double wait_seconds, bool* ended);
  // True once Stop() (or Shutdown()) was called.
  bool Stopping() const { return stopping(); }
  // Marks the manager as stopping: from now on a job thread that stops (its batch wait ends
  // with the dispatcher's shutdown) leaves its job as it is for the next start.
  void Stop();
  // Stop(), stops the dispatcher, wakes every waiter, lets each job thread finish its current step
  // (a commit in progress completes; a batch in flight stays stored for the next start) and
  // joins them.
  void Shutdown();

 private:
  struct Job {
    std::string id;
    std::atomic<bool> cancel{false};
    std::atomic<bool> abandoned{false};  // shared store: no longer this server's to run
    std::thread thread;
    std::mutex mu;  // guards the fields below
    std::condition_variable cv;
    JobSnapshot snapshot;
    std::deque<JobEvent> events;
    uint64_t next_seq = 1;
    bool ended = false;
    // The partial target waiting for a verified worker target it describes (TargetFor).
    std::string unresolved_target;
  };

  class JobRun;  // job_manager.cc

  void StartThread(std::shared_ptr<Job> job);
  // Shared store: renews and takes claims until Stop() (the claim thread's loop).
  void ClaimLoop();
  void ClaimOnce();
  void Run(Job* job);
  absl::Status RunJob(Job* job);
  absl::Status ResolveTarget(Job* job);
  // Snapshot and event updates (take job->mu).
  void Emit(Job* job, JobEventKind kind, int task);
  void UpdateRow(Job* job, const std::function<void(JobRow*)>& update);
  JobSnapshot Decorate(Job* job);
  absl::StatusOr<JobSnapshot> StoredSnapshot(const std::string& id);
  std::shared_ptr<Job> Find(const std::string& id);
  // Find, but null for a job this server abandoned (the rows tell its state).
  std::shared_ptr<Job> FindRunHere(const std::string& id);
  bool stopping() const { return stopping_.load(); }

  Database* const db_;
  JobStore* const store_;
  Dispatcher* const dispatcher_;
  const JobManagerOptions options_;

  SharedQueue* const shared_;  // store_->shared(); null: this server alone
  std::string owner_;
  std::thread claimer_;
  std::atomic<bool> released_{false};

  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable stop_cv_;
  std::map<std::string, std::shared_ptr<Job>> jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera

#endif  // TESSERA_SERVER_JOB_MANAGER_H_
