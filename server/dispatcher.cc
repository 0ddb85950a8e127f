#include "server/dispatcher.h"

#include <algorithm>
#include <random>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "server/metrics.h"
#include "worker/host.h"

namespace tessera {

Dispatcher::Dispatcher(JobStore* store, DispatcherOptions options)
    : options_(options), store_(store), shared_(store != nullptr ? store->shared() : nullptr) {
  std::random_device rd;
  id_salt_ = absl::StrFormat("%06x", rd() & 0xffffff);
  sweeper_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      sweep_cv_.wait_for(lock, std::chrono::duration<double>(options_.sweep_interval));
      if (stopping_) break;
      lock.unlock();
      Sweep();
      lock.lock();
    }
  });
}

Dispatcher::~Dispatcher() { Shutdown(); }

void Dispatcher::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  result_cv_.notify_all();
  sweep_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
}

double Dispatcher::WallTime(Clock::time_point t) {
  auto wall = std::chrono::system_clock::now() +
              std::chrono::duration_cast<std::chrono::system_clock::duration>(t - Clock::now());
  return std::chrono::duration<double>(wall.time_since_epoch()).count();
}

void Dispatcher::Persist(const absl::Status& s) const {
  // The in-memory state stays authoritative while the server runs; a failed write only
  // weakens what a restart recovers, so it is logged, not fatal.
  if (!s.ok()) TESSERA_LOG(ERROR) << "dispatcher: state database write failed: " << s.message();
}

absl::Status Dispatcher::SubmitBatch(const std::string& job_id, int priority, BatchContext context,
                                     std::vector<LeasedCandidate> items,
                                     std::vector<int> attempts) {
  if (shared_ != nullptr) return SharedSubmitBatch(job_id, priority, context);
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

bool Dispatcher::JobDone(const JobQueue& q) const { return q.results.size() >= q.slots.size(); }

absl::StatusOr<std::map<int64_t, ReportedOutcome>> Dispatcher::AwaitBatch(
    const std::string& job_id) {
  if (shared_ != nullptr) return SharedAwaitBatch(job_id);
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

void Dispatcher::CancelJob(const std::string& job_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto shared = shared_batches_.find(job_id);
    if (shared != shared_batches_.end()) shared->second.cancelled = true;
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) return;
    it->second.cancelled = true;
    it->second.queue.clear();
    for (auto l = leases_.begin(); l != leases_.end();) {
      if (l->second.lease.job_id == job_id) {
        l = leases_.erase(l);
      } else {
        ++l;
      }
    }
  }
  result_cv_.notify_all();
}

std::pair<int, int> Dispatcher::JobCounts(const std::string& job_id) const {
  if (shared_ != nullptr) {
    absl::StatusOr<BatchCounts> counts = shared_->CountBatch(job_id);
    if (!counts.ok()) return {0, 0};
    return {counts->queued, counts->leased};
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return {0, 0};
  int queued = static_cast<int>(it->second.queue.size());
  int done = static_cast<int>(it->second.results.size());
  int total = static_cast<int>(it->second.slots.size());
  return {queued, std::max(0, total - done - queued)};
}

bool Dispatcher::Serves(const WorkerState& w, const std::string& target) const {
  for (const DeviceSpec& d : w.info.devices) {
    if (d.target == target) return true;
  }
  return false;
}

std::string Dispatcher::WaitingFor(const std::string& target) const {
  if (shared_ != nullptr) return SharedWaitingFor(target);
  std::set<std::string> others;
  if (LocalWorkerServes(target, &others)) return "";
  return NoWorkerServes("", target, others);
}

std::vector<std::string> Dispatcher::VerifiedTargets() const {
  std::vector<std::string> targets = LocalVerifiedTargets();
  if (shared_ != nullptr) {
    std::vector<std::string> shared = SharedVerifiedTargets();
    targets.insert(targets.end(), shared.begin(), shared.end());
  }
  return targets;
}

std::optional<std::string> Dispatcher::TargetFor(const std::string& wanted) const {
  return FirstTargetDescribed(wanted, VerifiedTargets());
}

bool Dispatcher::LocalWorkerServes(const std::string& target, std::set<std::string>* others) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, w] : workers_) {
    if (Serves(w, target)) return true;
    for (const DeviceSpec& d : w.info.devices) others->insert(d.target);
  }
  return false;
}

std::vector<std::string> Dispatcher::LocalVerifiedTargets() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> targets;
  for (const std::string& id : worker_order_) {
    auto it = workers_.find(id);
    if (it == workers_.end()) continue;
    for (const DeviceSpec& d : it->second.info.devices) {
      if (d.verified) targets.push_back(d.target);
    }
  }
  return targets;
}

std::string Dispatcher::NoWorkerServes(const std::string& whom, const std::string& target,
                                       const std::set<std::string>& others) {
  std::string msg = absl::StrCat("no live worker ", whom, "serves target ", target);
  if (!others.empty()) {
    absl::StrAppend(&msg, " (workers serve: ", absl::StrJoin(others, "; "), ")");
  }
  return msg;
}

absl::StatusOr<Dispatcher::WorkerState*> Dispatcher::SeenWorker(const std::string& worker_id) {
  auto w = workers_.find(worker_id);
  if (w == workers_.end()) {
    return absl::NotFoundError(
        absl::StrCat("worker ", worker_id, " is not registered (register again)"));
  }
  w->second.last_seen = Clock::now();
  return &w->second;
}

absl::StatusOr<std::string> Dispatcher::RegisterWorker(WorkerInfo info) {
  if (info.devices.empty()) {
    return absl::InvalidArgumentError("devices: a worker must register at least one device");
  }
  for (size_t i = 0; i < info.devices.size(); ++i) {
    if (info.devices[i].target.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("devices[", i, "].target: empty"));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  info.id = absl::StrCat("worker-", ++id_counter_, "-", id_salt_);
  info.software.worker_id = info.id;
  info.registered_at = WallTime(Clock::now());
  std::string id = info.id;
  TESSERA_LOG(INFO) << "worker " << id << " registered from " << info.host << " with "
                    << info.devices.size() << " device(s), first " << info.devices[0].target;
  workers_[id] = WorkerState{std::move(info), Clock::now()};
  worker_order_.push_back(id);
  work_cv_.notify_all();
  return id;
}

HeartbeatReply Dispatcher::Heartbeat(const std::string& worker_id,
                                     const std::vector<std::string>& leases) {
  if (shared_ != nullptr) return SharedHeartbeat(worker_id, leases);
  std::lock_guard<std::mutex> lock(mu_);
  HeartbeatReply reply;
  reply.known = SeenWorker(worker_id).ok();
  for (const std::string& id : leases) {
    auto l = leases_.find(id);
    if (reply.known && l != leases_.end() && l->second.lease.worker_id == worker_id) {
      l->second.deadline =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(options_.lease_seconds));
      l->second.lease.deadline = WallTime(l->second.deadline);
    } else {
      reply.revoked.push_back(id);
    }
  }
  return reply;
}

std::optional<Lease> Dispatcher::TryLease(WorkerState* worker, int max_candidates) {
  JobQueue* best = nullptr;
  for (auto& [id, q] : jobs_) {
    if (q.cancelled || q.queue.empty() || !Serves(*worker, q.context.target)) continue;
    if (best == nullptr || std::make_tuple(-q.priority, q.last_served, q.order) <
                               std::make_tuple(-best->priority, best->last_served, best->order)) {
      best = &q;
    }
  }
  if (best == nullptr) return std::nullopt;
  best->last_served = ++serve_counter_;
  Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options_.lease_seconds));
  LiveLease live;
  live.deadline = deadline;
  Lease& lease = live.lease;
  lease.id = absl::StrCat("lease-", ++id_counter_, "-", id_salt_);
  lease.worker_id = worker->info.id;
  lease.job_id = best->job_id;
  lease.deadline = WallTime(deadline);
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
  if (store_ != nullptr) Persist(store_->MarkLeased(ids, lease.id));
  TESSERA_LOG(INFO) << "job " << lease.job_id << ": lease " << lease.id << " of " << ids.size()
                    << " candidates to worker " << worker->info.id;
  Lease out = lease;
  leases_[lease.id] = std::move(live);
  return out;
}

absl::StatusOr<std::optional<Lease>> Dispatcher::PullWork(const std::string& worker_id,
                                                          int max_candidates, double wait_seconds) {
  if (shared_ != nullptr) return SharedPullWork(worker_id, max_candidates, wait_seconds);
  std::unique_lock<std::mutex> lock(mu_);
  double wait = std::clamp(wait_seconds, 0.0, options_.max_wait_seconds);
  Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                               std::chrono::duration<double>(wait));
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(WorkerState * worker, SeenWorker(worker_id));
    if (stopping_) return std::optional<Lease>();
    std::optional<Lease> lease = TryLease(worker, max_candidates);
    if (lease.has_value() || Clock::now() >= until) return lease;
    work_cv_.wait_until(lock, until);
  }
}

absl::StatusOr<int> Dispatcher::Report(const std::string& worker_id, const std::string& lease_id,
                                       const std::vector<CandidateReport>& reports) {
  if (shared_ != nullptr) return SharedReport(worker_id, lease_id, reports);
  int accepted = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_ASSIGN_OR_RETURN(WorkerState * worker, SeenWorker(worker_id));
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
      ReportedOutcome outcome{r.outcome, worker->info.software};
      if (store_ != nullptr) {
        Persist(store_->SetResult(r.candidate_id, CandidateState::kDone, outcome));
      }
      if (options_.metrics != nullptr) {
        double run_secs = 0;
        for (double t : r.outcome.run_secs) run_secs += t;
        options_.metrics->CandidateMeasured(live.lease.context.target, r.outcome.error,
                                            r.outcome.build_secs, run_secs);
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

std::vector<WorkerInfo> Dispatcher::Workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WorkerInfo> out;
  for (const std::string& id : worker_order_) {
    auto it = workers_.find(id);
    if (it != workers_.end()) out.push_back(it->second.info);
  }
  return out;
}

std::optional<WorkerInfo> Dispatcher::FindWorker(const std::string& worker_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) return std::nullopt;
  return it->second.info;
}

void Dispatcher::ReturnLease(const std::string& lease_id) {
  if (shared_ != nullptr) {
    Persist(shared_->ReturnLease(lease_id));
    std::lock_guard<std::mutex> lock(mu_);
    shared_leases_.erase(lease_id);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ExpireLease(lease_id, /*count_attempt=*/false);
  }
  work_cv_.notify_all();
}

void Dispatcher::ExpireLease(const std::string& lease_id, bool count_attempt) {
  auto l = leases_.find(lease_id);
  if (l == leases_.end()) return;
  LiveLease live = std::move(l->second);
  leases_.erase(l);
  auto q = jobs_.find(live.lease.job_id);
  if (q == jobs_.end()) return;
  JobQueue& job = q->second;
  if (count_attempt && options_.metrics != nullptr) options_.metrics->LeaseExpired();
  auto w = workers_.find(live.lease.worker_id);
  Provenance lost_on;
  if (w != workers_.end()) lost_on = w->second.info.software;
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
      if (store_ != nullptr) {
        Persist(store_->SetResult(id, CandidateState::kQuarantined, outcome));
      }
      job.results[id] = std::move(outcome);
      if (options_.metrics != nullptr) options_.metrics->CandidateQuarantined(job.context.target);
      TESSERA_LOG(WARNING) << "job " << job.job_id << ": candidate " << id << " quarantined after "
                           << slot.attempts << " expired leases";
    } else {
      job.queue.push_front(id);
      requeued.push_back(id);
    }
  }
  if (store_ != nullptr && !requeued.empty()) {
    Persist(count_attempt ? store_->MarkRequeued(requeued) : store_->MarkQueued(requeued));
  }
  TESSERA_LOG(WARNING) << "job " << job.job_id << ": lease " << live.lease.id << " of worker "
                       << live.lease.worker_id << (count_attempt ? " expired; " : " returned; ")
                       << requeued.size() << " candidates back in the queue";
}

void Dispatcher::Sweep() {
  if (shared_ != nullptr) SharedSweep();
  {
    std::lock_guard<std::mutex> lock(mu_);
    Clock::time_point now = Clock::now();
    std::vector<std::string> expired;
    for (const auto& [id, live] : leases_) {
      if (live.deadline <= now) expired.push_back(id);
    }
    for (const std::string& id : expired) ExpireLease(id);
    auto timeout = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(options_.worker_timeout));
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (now - it->second.last_seen > timeout) {
        TESSERA_LOG(WARNING) << "worker " << it->first << " silent for " << options_.worker_timeout
                             << " s: forgotten";
        worker_order_.erase(std::remove(worker_order_.begin(), worker_order_.end(), it->first),
                            worker_order_.end());
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
    if (expired.empty()) return;
  }
  work_cv_.notify_all();
  result_cv_.notify_all();
}

DispatcherStats Dispatcher::Stats() const {
  std::map<std::string, std::pair<int, int>> by_worker;  // leases, candidates
  if (shared_ != nullptr) {
    // The rows hold every lease with its unreported candidates (read before taking mu_: a
    // query must not hold up the dispatcher). A failed read leaves the gauges at 0.
    absl::StatusOr<std::map<std::string, WorkerLeases>> rows = shared_->LeasesByWorker();
    if (rows.ok()) {
      for (const auto& [worker, held] : *rows) by_worker[worker] = {held.leases, held.candidates};
    } else {
      TESSERA_LOG(WARNING) << "dispatcher: reading the leases per worker: " << rows.status();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  DispatcherStats stats;
  for (const auto& [id, live] : leases_) {
    by_worker[live.lease.worker_id].first += 1;
    by_worker[live.lease.worker_id].second += static_cast<int>(live.pending.size());
  }
  for (const std::string& id : worker_order_) {
    auto w = workers_.find(id);
    if (w == workers_.end()) continue;
    DispatcherStats::WorkerLoad load;
    load.id = id;
    load.host = w->second.info.host;
    load.leases = by_worker[id].first;
    load.candidates = by_worker[id].second;
    stats.workers.push_back(std::move(load));
  }
  return stats;
}

}  // namespace tessera
