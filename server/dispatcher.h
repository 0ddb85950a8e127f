// The dispatcher hands the candidates of the jobs' pending batches to worker daemons and
// collects their outcomes. It knows the registered workers (their devices' target strings,
// software, last contact), one queue of candidates per job, and the live leases.
//
// - A worker pulls from the jobs whose target string is one of its devices' (exactly equal
//   canonical strings, so a job's measurements stay comparable). Higher priority first; among
//   jobs of the same priority the one served least recently (round-robin). A lease holds
//   candidates of one job (one batch context), at most the worker's max_candidates, or all of
//   the job's queued candidates for a same_machine batch.
// - A lease expires when neither reported nor renewed (Heartbeat) within lease_seconds: its
//   unreported candidates go back to the front of their queue with one more attempt; after
//   max_attempts they are quarantined, i.e. reported as worker_lost, so one kernel that kills
//   workers cannot eat the pool.
// - A worker not heard of for worker_timeout is forgotten (Heartbeat then says "unknown").
//
// Candidate state changes are written through to the JobStore as they happen. When the store
// is shared by several servers (JobStore::shared(), PostgreSQL), the queue and the leases are
// its rows instead of memory (dispatcher_shared.cc): any server hands out any job's candidates,
// a worker reports to the server it pulled from, and each server expires leases. Thread-safe;
// PullWork and AwaitBatch block (bounded) on condition variables. A background thread expires
// leases and workers.
#ifndef TESSERA_SERVER_DISPATCHER_H_
#define TESSERA_SERVER_DISPATCHER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "database/database.h"
#include "server/job_store.h"
#include "worker/runner.h"

namespace tessera {

class ServerMetrics;

struct DispatcherOptions {
  double lease_seconds = 60;       // a lease not reported or renewed within this expires
  double heartbeat_interval = 10;  // what workers are told to use
  double worker_timeout = 120;     // a worker silent this long is forgotten
  double max_wait_seconds = 30;    // bound of PullWork's long poll
  int max_attempts = 3;            // expired leases before a candidate is quarantined
  int default_batch = 16;          // PullWork's max_candidates when the worker gives 0
  double sweep_interval = 0.25;    // how often leases and workers are checked, seconds
  // Counts reports, expiries and quarantines (server/metrics.h); may be null.
  ServerMetrics* metrics = nullptr;
};

// The workers registered with this dispatcher at one moment, for the metrics
// (server/metrics.h).
struct DispatcherStats {
  struct WorkerLoad {
    std::string id;
    std::string host;
    // Its live leases and their unreported candidates: on a shared queue from the rows (leases
    // any server granted, which for a worker registered here are this server's).
    int leases = 0;
    int candidates = 0;
  };
  std::vector<WorkerLoad> workers;  // live workers, in registration order
};

// What every candidate of one batch shares: the worker builds WorkBatch from it.
struct BatchContext {
  int task = -1;
  std::string target;         // canonical target string (the queue's key)
  std::string workload_json;  // the unscheduled function, IR JSON (the checks' reference)
  double best_secs = 0;       // the task's best verified mean so far; 0: none
  bool verify = true;
  int64_t check_seed = 0;
  // Structural hashes of the candidates checked whatever their time (MeasureRequest::check_always).
  std::vector<std::string> check_always_hashes;
  bool measure_fully = false;  // MeasureRequest::measure_fully
  // MeasureRequest::same_machine: the batch's queued candidates are leased together, whatever
  // the worker's max_candidates.
  bool same_machine = false;
  RunnerConfig runner;
  double build_timeout_sec = 60;
};

struct DeviceSpec {
  std::string target;  // canonical target string
  std::string name;
  int64_t memory_bytes = 0;
  int ordinal = -1;
  // The worker's token names this target in full (or the server has no tokens): only such
  // targets complete a job's partial target (TargetFor; server/auth.h).
  bool verified = true;
};

struct WorkerInfo {
  std::string id;  // assigned by RegisterWorker
  std::string host;
  std::vector<DeviceSpec> devices;
  Provenance software;  // worker_id filled in by the dispatcher
  int build_parallelism = 0;
  double registered_at = 0;  // seconds since the Unix epoch
};

struct Lease {
  std::string id;
  std::string worker_id;
  std::string job_id;
  double deadline = 0;  // seconds since the Unix epoch
  BatchContext context;
  std::vector<LeasedCandidate> candidates;
};

// A worker's report of one candidate (validated by the caller).
struct CandidateReport {
  int64_t candidate_id = -1;
  MeasureOutcome outcome;
};

struct HeartbeatReply {
  bool known = false;
  std::vector<std::string> revoked;
};

class Dispatcher {
 public:
  // `store` (may be null in tests of the dispatcher alone) must outlive the dispatcher.
  Dispatcher(JobStore* store, DispatcherOptions options);
  ~Dispatcher();  // Shutdown()
  const DispatcherOptions& options() const { return options_; }

  // --- Jobs (called by the job threads) ---
  // Queues the candidates of a job's batch that still need measuring (`attempts` counted so
  // far for each). kFailedPrecondition if the job has a batch in flight already.
  absl::Status SubmitBatch(const std::string& job_id, int priority, BatchContext context,
                           std::vector<LeasedCandidate> items, std::vector<int> attempts);
  // Blocks until every candidate of the job's batch has an outcome; returns them by candidate
  // id (reported, or quarantined as worker_lost). kCancelled after CancelJob, kUnavailable
  // when the dispatcher shuts down. The batch is forgotten either way.
  absl::StatusOr<std::map<int64_t, ReportedOutcome>> AwaitBatch(const std::string& job_id);
  // Drops the job's queue and revokes its leases; wakes AwaitBatch.
  void CancelJob(const std::string& job_id);
  // Candidates of the job waiting in the queue and leased to workers.
  std::pair<int, int> JobCounts(const std::string& job_id) const;
  // Why a job on `target` cannot progress, or "" when a live worker serves it.
  std::string WaitingFor(const std::string& target) const;
  // The verified (DeviceSpec::verified) targets of the registered live worker devices: those
  // of this server's workers in registration order, then, with a shared queue, those the other
  // servers' workers published (an unreadable shared list adds none). What a job's partial
  // target is completed from (worker/host.h CompleteTarget).
  std::vector<std::string> VerifiedTargets() const;
  // The first of VerifiedTargets() that the partial target `wanted` ("cpu",
  // "cuda -arch=sm_90") describes (worker/host.h FirstTargetDescribed), or nullopt.
  std::optional<std::string> TargetFor(const std::string& wanted) const;

  // --- Workers (called by the worker service) ---
  // kInvalidArgument when a device's target is empty.
  absl::StatusOr<std::string> RegisterWorker(WorkerInfo info);
  // Renews the listed leases of the worker; revoked lists those that are no longer live.
  HeartbeatReply Heartbeat(const std::string& worker_id, const std::vector<std::string>& leases);
  // A lease of at most max_candidates (<= 0: the default) candidates, waiting up to
  // wait_seconds (bounded by max_wait_seconds) for work; nullopt when none came.
  // kNotFound for an unknown worker.
  absl::StatusOr<std::optional<Lease>> PullWork(const std::string& worker_id, int max_candidates,
                                                double wait_seconds);
  // Accepts the reports of candidates of a live lease of this worker not reported yet;
  // returns how many were accepted. kNotFound for an unknown worker, kFailedPrecondition
  // when the lease is not a live lease of this worker (expired, revoked, someone else's).
  absl::StatusOr<int> Report(const std::string& worker_id, const std::string& lease_id,
                             const std::vector<CandidateReport>& reports);
  // Puts a lease's unreported candidates back in the queue without counting an attempt (the
  // lease never reached its worker: the pull was cancelled).
  void ReturnLease(const std::string& lease_id);
  std::vector<WorkerInfo> Workers() const;
  std::optional<WorkerInfo> FindWorker(const std::string& worker_id) const;
  DispatcherStats Stats() const;

  // Expires the leases past their deadline and forgets silent workers now (the background
  // thread does it every sweep_interval).
  void Sweep();
  // Wakes every waiter (AwaitBatch gets kUnavailable) and stops the background thread.
  void Shutdown();

 private:
  using Clock = std::chrono::steady_clock;
  struct Slot {
    LeasedCandidate item;
    int attempts = 0;
    std::string lease_id;  // empty while queued
    bool done = false;
  };
  struct JobQueue {
    std::string job_id;
    int priority = 0;
    uint64_t order = 0;        // submission order, the round-robin tie-break
    uint64_t last_served = 0;  // serving counter when a worker last pulled from it
    BatchContext context;
    std::map<int64_t, Slot> slots;
    std::deque<int64_t> queue;
    std::map<int64_t, ReportedOutcome> results;
    bool cancelled = false;
  };
  struct LiveLease {
    Lease lease;  // candidates as leased
    Clock::time_point deadline;
    std::set<int64_t> pending;  // not reported yet
  };
  struct WorkerState {
    WorkerInfo info;
    Clock::time_point last_seen;
  };

  bool JobDone(const JobQueue& q) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Serves(const WorkerState& w, const std::string& target) const;
  // The registered worker `worker_id`, marked as seen now; kNotFound when it is not registered
  // (it must register again).
  absl::StatusOr<WorkerState*> SeenWorker(const std::string& worker_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a worker registered here serves `target`; when none does, the targets they serve
  // are added to `others`.
  bool LocalWorkerServes(const std::string& target, std::set<std::string>* others) const;
  // The verified targets of the devices of the workers registered here, in registration order.
  std::vector<std::string> LocalVerifiedTargets() const;
  // "no live worker <whom>serves target T (workers serve: A; B)": what a job on `target` waits
  // for, listing `others`.
  static std::string NoWorkerServes(const std::string& whom, const std::string& target,
                                    const std::set<std::string>& others);
  std::optional<Lease> TryLease(WorkerState* worker, int max_candidates)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Requeues the lease's unreported candidates; with `count_attempt`, quarantines those that
  // reach max_attempts.
  void ExpireLease(const std::string& lease_id, bool count_attempt = true)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Persist(const absl::Status& s) const;
  // The shared-queue versions of the public calls (dispatcher_shared.cc).
  absl::Status SharedSubmitBatch(const std::string& job_id, int priority,
                                 const BatchContext& context);
  absl::StatusOr<std::map<int64_t, ReportedOutcome>> SharedAwaitBatch(const std::string& job_id);
  absl::StatusOr<std::optional<Lease>> SharedPullWork(const std::string& worker_id,
                                                      int max_candidates, double wait_seconds);
  absl::StatusOr<int> SharedReport(const std::string& worker_id, const std::string& lease_id,
                                   const std::vector<CandidateReport>& reports);
  HeartbeatReply SharedHeartbeat(const std::string& worker_id,
                                 const std::vector<std::string>& leases);
  void SharedSweep();
  std::string SharedWaitingFor(const std::string& target) const;
  // The verified targets the live workers of every server published to the shared queue.
  std::vector<std::string> SharedVerifiedTargets() const;
  static double WallTime(Clock::time_point t);

  const DispatcherOptions options_;
  JobStore* const store_;
  SharedQueue* const shared_;  // store_->shared(): the queue lives there; null: in memory

  struct SharedBatch {
    bool cancelled = false;
  };
  struct SharedLeaseOwner {
    std::string worker_id;
    Clock::time_point deadline;
    std::string target;  // its job's target string (for the metrics)
  };

  mutable std::mutex mu_;
  std::condition_variable work_cv_;    // new candidates queued; shutdown
  std::condition_variable result_cv_;  // outcomes arrived; cancel; shutdown
  std::map<std::string, JobQueue> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, LiveLease> leases_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, WorkerState> workers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> worker_order_ ABSL_GUARDED_BY(mu_);  // registration order
  uint64_t serve_counter_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t job_counter_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t id_counter_ ABSL_GUARDED_BY(mu_) = 0;
  // Shared queue: the batches this server's jobs await, and the leases this server granted.
  std::map<std::string, SharedBatch> shared_batches_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, SharedLeaseOwner> shared_leases_ ABSL_GUARDED_BY(mu_);
  Clock::time_point shared_published_ ABSL_GUARDED_BY(mu_);  // worker targets, last time
  std::string id_salt_;  // random per process, so ids from an earlier run never match
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::condition_variable sweep_cv_;
  std::thread sweeper_;
};

}  // namespace tessera

#endif  // TESSERA_SERVER_DISPATCHER_H_
