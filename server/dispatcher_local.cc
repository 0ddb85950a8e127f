// The dispatcher of one server (server/dispatcher.h): the queue and the leases live in memory
// and every candidate's state change is written through to the JobStore as it happens.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/periodic_thread.h"
#include "base/status_macros.h"
#include "server/dispatcher.h"
#include "server/metrics.h"

namespace tessera {
namespace {

class LocalDispatcher : public Dispatcher {
 public:
  LocalDispatcher(JobStore* store, DispatcherOptions options);
  ~LocalDispatcher() override { Shutdown(); }
  const DispatcherOptions& options() const override { return options_; }

  absl::Status SubmitBatch(const std::string& job_id, int priority, BatchContext context,
                           std::vector<LeasedCandidate> items, std::vector<int> attempts) override;
  absl::StatusOr<std::map<int64_t, ReportedOutcome>> AwaitBatch(const std::string& job_id) override;
  void CancelJob(const std::string& job_id) override;
  std::pair<int, int> JobCounts(const std::string& job_id) const override;
  std::string WaitingFor(const std::string& target) const override;
  std::vector<std::string> VerifiedTargets() const override { return workers_.VerifiedTargets(); }

  WorkerRegistry& workers() override { return workers_; }
  const WorkerRegistry& workers() const override { return workers_; }
  HeartbeatReply Heartbeat(const std::string& worker_id,
                           const std::vector<std::string>& leases) override;
  absl::StatusOr<std::optional<Lease>> PullWork(const std::string& worker_id, int max_candidates,
                                                double wait_seconds) override;
  absl::StatusOr<int> Report(const std::string& worker_id, const std::string& lease_id,
                             const std::vector<CandidateReport>& reports) override;
  void ReturnLease(const std::string& lease_id) override;
  DispatcherStats Stats() const override;
  void Sweep() override;
  void Shutdown() override;

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

  static bool JobDone(const JobQueue& q) { return q.results.size() >= q.slots.size(); }
  std::optional<Lease> TryLease(const WorkerInfo& worker, int max_candidates)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Requeues the lease's unreported candidates; with `count_attempt`, quarantines those that
  // reach max_attempts.
  void ExpireLease(const std::string& lease_id, bool count_attempt = true)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Persist(const absl::Status& s) const;

  const DispatcherOptions options_;
  JobStore* const store_;
  WorkerRegistry workers_;
  UniqueIds lease_ids_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;    // new candidates queued; shutdown
  std::condition_variable result_cv_;  // outcomes arrived; cancel; shutdown
  std::map<std::string, JobQueue> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, LiveLease> leases_ ABSL_GUARDED_BY(mu_);
  uint64_t serve_counter_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t job_counter_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  PeriodicThread sweeper_;  // last: stops before the members Sweep uses
};

LocalDispatcher::LocalDispatcher(JobStore* store, DispatcherOptions options)
    : options_(options), store_(store), sweeper_(options_.sweep_interval, [this] { Sweep(); }) {}

void LocalDispatcher::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  result_cv_.notify_all();
  sweeper_.Stop();
}

void LocalDispatcher::Persist(const absl::Status& s) const {
  // The in-memory state stays authoritative while the server runs; a failed write only
  // weakens what a restart recovers, so it is logged, not fatal.
  if (!s.ok()) TESSERA_LOG(ERROR) << "dispatcher: state database write failed: " << s.message();
}

absl::Status LocalDispatcher::SubmitBatch(const std::string& job_id, int priority,
                                          BatchContext context, std::vector<LeasedCandidate> items,
                                          std::vector<int> attempts) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    if (jobs_.count(job_id)) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job_id, " already has a batch in flight"));
    }
    JobQueue& q = jobs_[job_id];
    q.job_id = job_id;
    q.priority = priority;
    q.order = ++job_counter_;
    q.context = std::move(context);
    for (size_t i = 0; i < items.size(); ++i) {
      int64_t id = items[i].candidate_id;
      Slot& slot = q.slots[id];
      slot.item = std::move(items[i]);
      slot.attempts = i < attempts.size() ? attempts[i] : 0;
      q.queue.push_back(id);
    }
    TESSERA_LOG(INFO) << "job " << job_id << ": queued " << q.queue.size() << " candidates of task "
                      << q.context.task << " for " << q.context.target;
  }
  work_cv_.notify_all();
  result_cv_.notify_all();
  return absl::OkStatus();
}

absl::StatusOr<std::map<int64_t, ReportedOutcome>> LocalDispatcher::AwaitBatch(
    const std::string& job_id) {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) {
      return absl::FailedPreconditionError(absl::StrCat("job ", job_id, " has no batch queued"));
    }
    JobQueue& q = it->second;
    if (q.cancelled) {
      jobs_.erase(it);
      return absl::CancelledError(absl::StrCat("job ", job_id, " was cancelled"));
    }
    if (JobDone(q)) {
      std::map<int64_t, ReportedOutcome> results = std::move(q.results);
      jobs_.erase(it);
      return results;
    }
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    result_cv_.wait_for(lock, std::chrono::seconds(1));
  }
}

void LocalDispatcher::CancelJob(const std::string& job_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) return;
    it->second.cancelled = true;
    it->second.queue.clear();
    for (auto l = leases_.begin(); l != leases_.end();) {
      l = l->second.lease.job_id == job_id ? leases_.erase(l) : std::next(l);
    }
  }
  result_cv_.notify_all();
}

std::pair<int, int> LocalDispatcher::JobCounts(const std::string& job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return {0, 0};
  int queued = static_cast<int>(it->second.queue.size());
  int done = static_cast<int>(it->second.results.size());
  int total = static_cast<int>(it->second.slots.size());
  return {queued, std::max(0, total - done - queued)};
}

std::string LocalDispatcher::WaitingFor(const std::string& target) const {
  std::set<std::string> others;
  if (workers_.AnyServes(target, &others)) return "";
  return NoWorkerServes("", target, others);
}

HeartbeatReply LocalDispatcher::Heartbeat(const std::string& worker_id,
                                          const std::vector<std::string>& leases) {
  HeartbeatReply reply;
  reply.known = workers_.Seen(worker_id).ok();
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& id : leases) {
    auto l = leases_.find(id);
    if (reply.known && l != leases_.end() && l->second.lease.worker_id == worker_id) {
      l->second.deadline = SteadyAfter(options_.lease_seconds);
      l->second.lease.deadline = WallNow() + options_.lease_seconds;
    } else {
      reply.revoked.push_back(id);
    }
  }
  return reply;
}

std::optional<Lease> LocalDispatcher::TryLease(const WorkerInfo& worker, int max_candidates) {
  JobQueue* best = nullptr;
  for (auto& [id, q] : jobs_) {
    if (q.cancelled || q.queue.empty() || !worker.Serves(q.context.target)) continue;
    if (best == nullptr || std::make_tuple(-q.priority, q.last_served, q.order) <
                               std::make_tuple(-best->priority, best->last_served, best->order)) {
      best = &q;
    }
  }
  if (best == nullptr) return std::nullopt;
  best->last_served = ++serve_counter_;
  LiveLease live;
  live.deadline = SteadyAfter(options_.lease_seconds);
  Lease& lease = live.lease;
  lease.id = lease_ids_.Next("lease");
  lease.worker_id = worker.id;
  lease.job_id = best->job_id;
  lease.deadline = WallNow() + options_.lease_seconds;
  lease.context = best->context;
  int n = max_candidates > 0 ? max_candidates : options_.default_batch;
  if (best->context.same_machine) n = static_cast<int>(best->queue.size());
  std::vector<int64_t> ids;
  while (!best->queue.empty() && static_cast<int>(ids.size()) < n) {
    int64_t id = best->queue.front();
    best->queue.pop_front();
    Slot& slot = best->slots[id];
    slot.lease_id = lease.id;
    lease.candidates.push_back(slot.item);
    live.pending.insert(id);
    ids.push_back(id);
  }
  Persist(store_->MarkLeased(ids, lease.id));
  TESSERA_LOG(INFO) << "job " << lease.job_id << ": lease " << lease.id << " of " << ids.size()
                    << " candidates to worker " << worker.id;
  Lease out = lease;
  leases_[lease.id] = std::move(live);
  return out;
}

absl::StatusOr<std::optional<Lease>> LocalDispatcher::PullWork(const std::string& worker_id,
                                                               int max_candidates,
                                                               double wait_seconds) {
  double wait = std::clamp(wait_seconds, 0.0, options_.max_wait_seconds);
  Clock::time_point until = SteadyAfter(wait);
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(WorkerInfo worker, workers_.Seen(worker_id));
    if (stopping_) return std::optional<Lease>();
    std::optional<Lease> lease = TryLease(worker, max_candidates);
    if (lease.has_value() || Clock::now() >= until) return lease;
    work_cv_.wait_until(lock, until);
  }
}

absl::StatusOr<int> LocalDispatcher::Report(const std::string& worker_id,
                                            const std::string& lease_id,
                                            const std::vector<CandidateReport>& reports) {
  TESSERA_ASSIGN_OR_RETURN(WorkerInfo worker, workers_.Seen(worker_id));
  int accepted = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto l = leases_.find(lease_id);
    if (l == leases_.end() || l->second.lease.worker_id != worker_id) {
      return absl::FailedPreconditionError(absl::StrCat(
          "lease ", lease_id, " is not a live lease of worker ", worker_id,
          " (expired, revoked or unknown): its candidates were or will be measured elsewhere"));
    }
    LiveLease& live = l->second;
    auto q = jobs_.find(live.lease.job_id);
    for (const CandidateReport& r : reports) {
      if (live.pending.erase(r.candidate_id) == 0 || q == jobs_.end()) continue;
      Slot& slot = q->second.slots[r.candidate_id];
      slot.done = true;
      slot.lease_id.clear();
      ReportedOutcome outcome{r.outcome, worker.software};
      Persist(store_->SetResult(r.candidate_id, CandidateState::kDone, outcome));
      if (options_.metrics != nullptr) {
        options_.metrics->CandidateMeasured(live.lease.context.target, r.outcome);
      }
      q->second.results[r.candidate_id] = std::move(outcome);
      ++accepted;
    }
    TESSERA_LOG(INFO) << "job " << live.lease.job_id << ": worker " << worker_id << " reported "
                      << accepted << " of lease " << lease_id << " (" << live.pending.size()
                      << " left)";
    if (live.pending.empty()) leases_.erase(l);
  }
  result_cv_.notify_all();
  return accepted;
}

void LocalDispatcher::ReturnLease(const std::string& lease_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ExpireLease(lease_id, /*count_attempt=*/false);
  }
  work_cv_.notify_all();
}

void LocalDispatcher::ExpireLease(const std::string& lease_id, bool count_attempt) {
  auto l = leases_.find(lease_id);
  if (l == leases_.end()) return;
  LiveLease live = std::move(l->second);
  leases_.erase(l);
  auto q = jobs_.find(live.lease.job_id);
  if (q == jobs_.end()) return;
  JobQueue& job = q->second;
  if (count_attempt && options_.metrics != nullptr) options_.metrics->LeaseExpired();
  std::optional<WorkerInfo> worker = workers_.Find(live.lease.worker_id);
  Provenance lost_on;
  if (worker.has_value()) lost_on = worker->software;
  lost_on.worker_id = live.lease.worker_id;
  std::vector<int64_t> requeued;
  // Back to the front of the queue in their original order.
  for (auto it = live.lease.candidates.rbegin(); it != live.lease.candidates.rend(); ++it) {
    int64_t id = it->candidate_id;
    if (!live.pending.count(id)) continue;
    Slot& slot = job.slots[id];
    slot.lease_id.clear();
    if (count_attempt) ++slot.attempts;
    if (count_attempt && slot.attempts >= options_.max_attempts) {
      slot.done = true;
      ReportedOutcome outcome;
      outcome.outcome.error = MeasureError::kWorkerLost;
      outcome.outcome.error_msg =
          absl::StrCat("worker_lost: quarantined after ", slot.attempts,
                       " leases expired while measuring it (last: worker ", live.lease.worker_id,
                       ", lease ", live.lease.id, ")");
      outcome.provenance = lost_on;
      Persist(store_->SetResult(id, CandidateState::kQuarantined, outcome));
      job.results[id] = std::move(outcome);
      if (options_.metrics != nullptr) options_.metrics->CandidateQuarantined(job.context.target);
      TESSERA_LOG(WARNING) << "job " << job.job_id << ": candidate " << id << " quarantined after "
                           << slot.attempts << " expired leases";
    } else {
      job.queue.push_front(id);
      requeued.push_back(id);
    }
  }
  if (!requeued.empty()) {
    Persist(count_attempt ? store_->MarkRequeued(requeued) : store_->MarkQueued(requeued));
  }
  TESSERA_LOG(WARNING) << "job " << job.job_id << ": lease " << live.lease.id << " of worker "
                       << live.lease.worker_id << (count_attempt ? " expired; " : " returned; ")
                       << requeued.size() << " candidates back in the queue";
}

void LocalDispatcher::Sweep() {
  workers_.ForgetSilent(options_.worker_timeout);
  {
    std::lock_guard<std::mutex> lock(mu_);
    Clock::time_point now = Clock::now();
    std::vector<std::string> expired;
    for (const auto& [id, live] : leases_) {
      if (live.deadline <= now) expired.push_back(id);
    }
    for (const std::string& id : expired) ExpireLease(id);
    if (expired.empty()) return;
  }
  work_cv_.notify_all();
  result_cv_.notify_all();
}

DispatcherStats LocalDispatcher::Stats() const {
  LoadByWorker loads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, live] : leases_) {
      loads[live.lease.worker_id].first += 1;
      loads[live.lease.worker_id].second += static_cast<int>(live.pending.size());
    }
  }
  return workers_.Stats(loads);
}

}  // namespace

std::unique_ptr<Dispatcher> NewLocalDispatcher(JobStore* store, DispatcherOptions options) {
  return std::make_unique<LocalDispatcher>(store, options);
}

}  // namespace tessera
