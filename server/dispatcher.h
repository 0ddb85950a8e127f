// The dispatcher hands the candidates of the jobs' pending batches to worker daemons and
// collects their outcomes. It knows the registered workers (server/worker_registry.h), one
// queue of candidates per job, and the live leases.
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
// Two implementations behind one interface, chosen by the store (NewDispatcher):
// - local (dispatcher_local.cc): the queue and the leases are memory, and every candidate's
//   state change is written through to the JobStore as it happens, so a restart resumes them;
// - shared (dispatcher_shared.cc, a store several servers share, JobStore::shared(),
//   PostgreSQL): the queue and the leases are its rows, so any server hands out any job's
//   candidates; a worker reports to the server it pulled from, and each server expires leases.
// Both are thread-safe; PullWork and AwaitBatch block (bounded); a background thread expires
// leases and workers. tests/server/dispatcher_test.cc runs one suite against both.
#ifndef TESSERA_SERVER_DISPATCHER_H_
#define TESSERA_SERVER_DISPATCHER_H_

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
#include "server/job_store.h"
#include "server/worker_registry.h"
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
  virtual ~Dispatcher() = default;  // implementations Shutdown() first
  virtual const DispatcherOptions& options() const = 0;

  // --- Jobs (called by the job threads) ---
  // Queues the candidates of a job's batch that still need measuring (`attempts` counted so
  // far for each; on a shared queue they are the store's rows already, AddBatch, and `items`
  // is not read). kFailedPrecondition if the job has a batch in flight already.
  virtual absl::Status SubmitBatch(const std::string& job_id, int priority, BatchContext context,
                                   std::vector<LeasedCandidate> items,
                                   std::vector<int> attempts) = 0;
  // Blocks until every candidate of the job's batch has an outcome; returns them by candidate
  // id (reported, or quarantined as worker_lost). kCancelled after CancelJob, kUnavailable
  // when the dispatcher shuts down. The batch is forgotten either way.
  virtual absl::StatusOr<std::map<int64_t, ReportedOutcome>> AwaitBatch(
      const std::string& job_id) = 0;
  // Drops the job's queue and revokes the leases of it this server granted; wakes AwaitBatch.
  virtual void CancelJob(const std::string& job_id) = 0;
  // Candidates of the job waiting in the queue and leased to workers.
  virtual std::pair<int, int> JobCounts(const std::string& job_id) const = 0;
  // Why a job on `target` cannot progress, or "" when a live worker serves it.
  virtual std::string WaitingFor(const std::string& target) const = 0;
  // The verified (DeviceSpec::verified) targets of the registered live worker devices: those
  // of this server's workers in registration order, then, with a shared queue, those the other
  // servers' workers published (an unreadable shared list adds none). What a job's partial
  // target is completed from (worker/host.h CompleteTarget).
  virtual std::vector<std::string> VerifiedTargets() const = 0;
  // The first of VerifiedTargets() that the partial target `wanted` ("cpu",
  // "cuda -arch=sm_90") describes (worker/host.h FirstTargetDescribed), or nullopt.
  std::optional<std::string> TargetFor(const std::string& wanted) const;

  // --- Workers (called by the worker service) ---
  // The workers registered with this server, whichever queue their leases come from.
  virtual WorkerRegistry& workers() = 0;
  virtual const WorkerRegistry& workers() const = 0;
  // Renews the listed leases of the worker; revoked lists those that are no longer live.
  virtual HeartbeatReply Heartbeat(const std::string& worker_id,
                                   const std::vector<std::string>& leases) = 0;
  // A lease of at most max_candidates (<= 0: the default) candidates, waiting up to
  // wait_seconds (bounded by max_wait_seconds) for work; nullopt when none came.
  // kNotFound for an unknown worker.
  virtual absl::StatusOr<std::optional<Lease>> PullWork(const std::string& worker_id,
                                                        int max_candidates,
                                                        double wait_seconds) = 0;
  // Accepts the reports of candidates of a live lease of this worker not reported yet;
  // returns how many were accepted. kNotFound for an unknown worker, kFailedPrecondition
  // when the lease is not a live lease of this worker (expired, revoked, someone else's).
  virtual absl::StatusOr<int> Report(const std::string& worker_id, const std::string& lease_id,
                                     const std::vector<CandidateReport>& reports) = 0;
  // Puts a lease's unreported candidates back in the queue without counting an attempt (the
  // lease never reached its worker: the pull was cancelled).
  virtual void ReturnLease(const std::string& lease_id) = 0;
  virtual DispatcherStats Stats() const = 0;

  // Expires the leases past their deadline and forgets silent workers now (a background
  // thread does it every sweep_interval).
  virtual void Sweep() = 0;
  // Wakes every waiter (AwaitBatch gets kUnavailable) and stops the background thread.
  virtual void Shutdown() = 0;
};

// The queue and the leases in memory, written through to `store` (dispatcher_local.cc).
std::unique_ptr<Dispatcher> NewLocalDispatcher(JobStore* store, DispatcherOptions options);
// The queue and the leases as rows of a store several servers share (store->shared(), not
// null; dispatcher_shared.cc).
std::unique_ptr<Dispatcher> NewSharedDispatcher(JobStore* store, DispatcherOptions options);
// The one `store` calls for: shared when store->shared() is not null, else local. `store` (not
// null) must outlive the dispatcher.
std::unique_ptr<Dispatcher> NewDispatcher(JobStore* store, DispatcherOptions options);

}  // namespace tessera

#endif  // TESSERA_SERVER_DISPATCHER_H_
