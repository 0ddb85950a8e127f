// The dispatcher on a shared queue (JobStore::shared(), PostgreSQL): the queue and the leases
// are rows, so several servers hand out the candidates of all jobs, whichever server searches
// them. This server keeps only its workers, the batches its own jobs await, and which worker
// each lease it granted went to (a worker reports to the server it pulled from); it publishes
// its workers' targets, so that every server resolves bare kinds ("cpu") and says whether a
// job's target has a worker from all servers' workers. Waiting is
// polling (kSharedPollSeconds), shortened by this server's own events (a local batch queued, a
// local report).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/logging.h"
#include "base/periodic_thread.h"
#include "base/status_macros.h"
#include "server/dispatcher.h"
#include "server/metrics.h"

namespace tessera {
namespace {

using json = nlohmann::json;

constexpr double kSharedPollSeconds = 0.05;
// Each server publishes its workers' targets this often; a row not refreshed for
// kTargetStaleSeconds (its server died, or its workers left) no longer counts.
constexpr double kPublishSeconds = 1;
constexpr double kTargetStaleSeconds = 10;
// Appended to a published target whose worker's token does not name it: other servers count it
// as served but never complete a bare kind from it (DeviceSpec::verified).
constexpr char kUnverifiedMark[] = " #unverified";

std::string ContextToJson(const BatchContext& c) {
  json j;
  j["task"] = c.task;
  j["target"] = c.target;
  j["workload"] = c.workload_json;
  j["best_secs"] = c.best_secs;
  j["verify"] = c.verify;
  j["check_seed"] = c.check_seed;
  j["check_always"] = c.check_always_hashes;
  j["measure_fully"] = c.measure_fully;
  j["same_machine"] = c.same_machine;
  j["build_timeout_sec"] = c.build_timeout_sec;
  json r;
  r["warmup"] = c.runner.warmup;
  r["number"] = c.runner.number;
  r["repeat"] = c.runner.repeat;
  r["min_repeat_ms"] = c.runner.min_repeat_ms;
  r["enable_cpu_cache_flush"] = c.runner.enable_cpu_cache_flush;
  r["timeout_sec"] = c.runner.timeout_sec;
  r["slow_run_secs"] = c.runner.slow_run_secs;
  r["seed"] = c.runner.seed;
  j["runner"] = r;
  return j.dump();
}

absl::StatusOr<BatchContext> ContextFromJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("runner")) {
    return absl::DataLossError("state database: malformed batch context");
  }
  BatchContext c;
  try {
    c.task = j.at("task").get<int>();
    c.target = j.at("target").get<std::string>();
    c.workload_json = j.at("workload").get<std::string>();
    c.best_secs = j.at("best_secs").get<double>();
    c.verify = j.at("verify").get<bool>();
    c.check_seed = j.at("check_seed").get<int64_t>();
    // Absent in the rows of servers from before the field: nothing checked regardless.
    c.check_always_hashes = j.value("check_always", std::vector<std::string>());
    c.measure_fully = j.value("measure_fully", false);
    c.same_machine = j.value("same_machine", false);
    c.build_timeout_sec = j.at("build_timeout_sec").get<double>();
    const json& r = j.at("runner");
    c.runner.warmup = r.at("warmup").get<int>();
    c.runner.number = r.at("number").get<int>();
    c.runner.repeat = r.at("repeat").get<int>();
    c.runner.min_repeat_ms = r.at("min_repeat_ms").get<int>();
    c.runner.enable_cpu_cache_flush = r.at("enable_cpu_cache_flush").get<bool>();
    c.runner.timeout_sec = r.at("timeout_sec").get<double>();
    c.runner.slow_run_secs = r.at("slow_run_secs").get<double>();
    c.runner.seed = r.at("seed").get<uint64_t>();
  } catch (const json::exception& e) {
    return absl::DataLossError(absl::StrCat("state database: malformed batch context: ", e.what()));
  }
  return c;
}

class SharedDispatcher : public Dispatcher {
 public:
  SharedDispatcher(JobStore* store, DispatcherOptions options);
  ~SharedDispatcher() override { Shutdown(); }
  const DispatcherOptions& options() const override { return options_; }

  absl::Status SubmitBatch(const std::string& job_id, int priority, BatchContext context,
                           std::vector<LeasedCandidate> items, std::vector<int> attempts) override;
  absl::StatusOr<std::map<int64_t, ReportedOutcome>> AwaitBatch(const std::string& job_id) override;
  void CancelJob(const std::string& job_id) override;
  std::pair<int, int> JobCounts(const std::string& job_id) const override;
  std::string WaitingFor(const std::string& target) const override;
  std::vector<std::string> VerifiedTargets() const override;

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
  // A lease this server granted: its worker reports here.
  struct GrantedLease {
    std::string worker_id;
    std::string job_id;
    Clock::time_point deadline;
    std::string target;  // its job's target string (for the metrics)
  };

  // The targets other servers' live workers published (`kUnverifiedMark` kept).
  std::vector<std::string> PublishedTargets() const;
  void PublishWorkerTargets();
  static void Persist(const absl::Status& s);

  const DispatcherOptions options_;
  JobStore* const store_;
  SharedQueue* const shared_;
  WorkerRegistry workers_;
  UniqueIds lease_ids_;  // its salt names this server in the published targets

  mutable std::mutex mu_;
  std::condition_variable work_cv_;    // a batch queued here; shutdown
  std::condition_variable result_cv_;  // a report here; cancel; shutdown
  // The batches this server's jobs await (true: cancelled), and the leases it granted.
  std::map<std::string, bool> awaited_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, GrantedLease> granted_ ABSL_GUARDED_BY(mu_);
  Clock::time_point published_ ABSL_GUARDED_BY(mu_);  // worker targets, last time
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  PeriodicThread sweeper_;  // last: stops before the members Sweep uses
};

SharedDispatcher::SharedDispatcher(JobStore* store, DispatcherOptions options)
    : options_(options),
      store_(store),
      shared_(store->shared()),
      sweeper_(options_.sweep_interval, [this] { Sweep(); }) {}

void SharedDispatcher::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  result_cv_.notify_all();
  sweeper_.Stop();
}

void SharedDispatcher::Persist(const absl::Status& s) {
  // A failed write leaves the rows as they were: the lease expires and is handed out again.
  if (!s.ok()) TESSERA_LOG(ERROR) << "dispatcher: shared queue write failed: " << s.message();
}

absl::Status SharedDispatcher::SubmitBatch(const std::string& job_id, int priority,
                                           BatchContext context, std::vector<LeasedCandidate>,
                                           std::vector<int>) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    if (awaited_.count(job_id)) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job_id, " already has a batch in flight"));
    }
  }
  // The candidates are rows already (AddBatch); the context makes them leasable by any server.
  TESSERA_RETURN_IF_ERROR(
      shared_->SetBatchContext(job_id, context.target, priority, ContextToJson(context)));
  {
    std::lock_guard<std::mutex> lock(mu_);
    awaited_[job_id] = false;
  }
  TESSERA_LOG(INFO) << "job " << job_id << ": batch of task " << context.task
                    << " queued in the shared queue for " << context.target;
  work_cv_.notify_all();
  return absl::OkStatus();
}

absl::StatusOr<std::map<int64_t, ReportedOutcome>> SharedDispatcher::AwaitBatch(
    const std::string& job_id) {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = awaited_.find(job_id);
      if (it == awaited_.end()) {
        return absl::FailedPreconditionError(absl::StrCat("job ", job_id, " has no batch queued"));
      }
      if (it->second) {
        awaited_.erase(it);
        return absl::CancelledError(absl::StrCat("job ", job_id, " was cancelled"));
      }
      if (stopping_) {
        awaited_.erase(it);
        return absl::UnavailableError("the server is shutting down");
      }
    }
    absl::StatusOr<BatchCounts> counts = shared_->CountBatch(job_id);
    if (counts.ok() && counts->finished >= counts->total) {
      absl::StatusOr<std::vector<StoredCandidate>> rows = store_->PendingBatch(job_id);
      if (rows.ok()) {
        std::map<int64_t, ReportedOutcome> results;
        for (StoredCandidate& c : *rows) {
          if (c.result.has_value()) results[c.id] = *std::move(c.result);
        }
        std::lock_guard<std::mutex> lock(mu_);
        awaited_.erase(job_id);
        return results;
      }
      counts = rows.status();
    }
    // The database may be back in a moment: keep waiting, loudly.
    if (!counts.ok()) TESSERA_LOG(WARNING) << "job " << job_id << ": " << counts.status();
    std::unique_lock<std::mutex> lock(mu_);
    result_cv_.wait_for(lock, std::chrono::duration<double>(counts.ok() ? kSharedPollSeconds : 1));
  }
}

void SharedDispatcher::CancelJob(const std::string& job_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = awaited_.find(job_id);
    if (it != awaited_.end()) it->second = true;
    // The leases of it granted here are revoked at once (the job's rows go with its batch).
    for (auto l = granted_.begin(); l != granted_.end();) {
      l = l->second.job_id == job_id ? granted_.erase(l) : std::next(l);
    }
  }
  result_cv_.notify_all();
}

std::pair<int, int> SharedDispatcher::JobCounts(const std::string& job_id) const {
  absl::StatusOr<BatchCounts> counts = shared_->CountBatch(job_id);
  if (!counts.ok()) return {0, 0};
  return {counts->queued, counts->leased};
}

absl::StatusOr<std::optional<Lease>> SharedDispatcher::PullWork(const std::string& worker_id,
                                                                int max_candidates,
                                                                double wait_seconds) {
  double wait = std::clamp(wait_seconds, 0.0, options_.max_wait_seconds);
  Clock::time_point until = SteadyAfter(wait);
  int n = max_candidates > 0 ? max_candidates : options_.default_batch;
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(WorkerInfo worker, workers_.Seen(worker_id));
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return std::optional<Lease>();
    }
    std::set<std::string> targets;
    for (const DeviceSpec& d : worker.devices) targets.insert(d.target);
    std::string lease_id = lease_ids_.Next("lease");
    for (const std::string& target : targets) {
      double now = WallNow();
      double expires = now + options_.lease_seconds;
      absl::StatusOr<std::optional<SharedLease>> got =
          shared_->Lease(target, worker_id, lease_id, n, now, expires);
      if (!got.ok()) return got.status();
      if (!got->has_value()) continue;
      SharedLease& row = **got;
      absl::StatusOr<BatchContext> context = ContextFromJson(row.context_json);
      if (!context.ok()) {
        Persist(shared_->ReturnLease(lease_id));
        return context.status();
      }
      Lease lease;
      lease.id = lease_id;
      lease.worker_id = worker_id;
      lease.job_id = row.job_id;
      lease.deadline = expires;
      lease.context = *std::move(context);
      lease.candidates = std::move(row.candidates);
      {
        std::lock_guard<std::mutex> lock(mu_);
        granted_[lease_id] =
            GrantedLease{worker_id, lease.job_id, SteadyAfter(options_.lease_seconds), target};
      }
      TESSERA_LOG(INFO) << "job " << lease.job_id << ": lease " << lease.id << " of "
                        << lease.candidates.size() << " candidates to worker " << worker_id;
      return std::optional<Lease>(std::move(lease));
    }
    if (Clock::now() >= until) return std::optional<Lease>();
    std::unique_lock<std::mutex> lock(mu_);
    work_cv_.wait_until(lock, std::min(until, SteadyAfter(kSharedPollSeconds)));
  }
}

absl::StatusOr<int> SharedDispatcher::Report(const std::string& worker_id,
                                             const std::string& lease_id,
                                             const std::vector<CandidateReport>& reports) {
  TESSERA_ASSIGN_OR_RETURN(WorkerInfo worker, workers_.Seen(worker_id));
  std::string target;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto l = granted_.find(lease_id);
    if (l == granted_.end() || l->second.worker_id != worker_id) {
      return absl::FailedPreconditionError(absl::StrCat(
          "lease ", lease_id, " is not a live lease of worker ", worker_id,
          " (expired, revoked or unknown): its candidates were or will be measured elsewhere"));
    }
    target = l->second.target;
  }
  std::vector<std::pair<int64_t, ReportedOutcome>> outcomes;
  for (const CandidateReport& r : reports) {
    outcomes.push_back({r.candidate_id, ReportedOutcome{r.outcome, worker.software}});
  }
  absl::StatusOr<int> accepted = shared_->ReportLease(lease_id, outcomes);
  if (!accepted.ok() && accepted.status().code() == absl::StatusCode::kFailedPrecondition) {
    std::lock_guard<std::mutex> lock(mu_);
    granted_.erase(lease_id);
  }
  if (accepted.ok()) {
    TESSERA_LOG(INFO) << "worker " << worker_id << " reported " << *accepted << " of lease "
                      << lease_id;
  }
  if (accepted.ok() && options_.metrics != nullptr) {
    // The store says how many it accepted, not which: when some were reported already (rare),
    // only the number is counted, without error kinds.
    if (*accepted == static_cast<int>(reports.size())) {
      for (const CandidateReport& r : reports)
        options_.metrics->CandidateMeasured(target, r.outcome);
    } else {
      options_.metrics->CandidatesMeasured(target, *accepted);
    }
  }
  result_cv_.notify_all();
  return accepted;
}

HeartbeatReply SharedDispatcher::Heartbeat(const std::string& worker_id,
                                           const std::vector<std::string>& leases) {
  HeartbeatReply reply;
  reply.known = workers_.Seen(worker_id).ok();
  std::vector<std::string> mine;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& id : leases) {
      auto l = granted_.find(id);
      if (reply.known && l != granted_.end() && l->second.worker_id == worker_id) {
        mine.push_back(id);
      } else {
        reply.revoked.push_back(id);
      }
    }
  }
  for (const std::string& id : mine) {
    absl::StatusOr<bool> renewed = shared_->RenewLease(id, WallNow() + options_.lease_seconds);
    std::lock_guard<std::mutex> lock(mu_);
    if (renewed.ok() && *renewed) {
      auto l = granted_.find(id);
      if (l != granted_.end()) l->second.deadline = SteadyAfter(options_.lease_seconds);
    } else if (renewed.ok()) {
      granted_.erase(id);
      reply.revoked.push_back(id);
    }
    // A database error revokes nothing: the worker keeps measuring and reports later.
  }
  return reply;
}

void SharedDispatcher::ReturnLease(const std::string& lease_id) {
  Persist(shared_->ReturnLease(lease_id));
  {
    std::lock_guard<std::mutex> lock(mu_);
    granted_.erase(lease_id);
  }
  work_cv_.notify_all();
}

void SharedDispatcher::Sweep() {
  workers_.ForgetSilent(options_.worker_timeout);
  absl::StatusOr<ExpiredLeases> expired = shared_->ExpireLeases(WallNow(), options_.max_attempts);
  if (!expired.ok()) {
    TESSERA_LOG(WARNING) << "dispatcher: expiring leases: " << expired.status();
  } else if (expired->leases > 0) {
    TESSERA_LOG(WARNING) << "dispatcher: " << expired->leases
                         << " leases expired: " << expired->requeued
                         << " candidates back in the queue, "
                         << expired->candidates() - expired->requeued << " quarantined";
    // Whichever server's sweep expired them counts them, once (the rows say what it changed).
    if (options_.metrics != nullptr) {
      for (int i = 0; i < expired->leases; ++i) options_.metrics->LeaseExpired();
      for (const auto& [target, n] : expired->quarantined) {
        for (int i = 0; i < n; ++i) options_.metrics->CandidateQuarantined(target);
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    // This server's record of its leases: those past their deadline are gone from the rows too.
    Clock::time_point now = Clock::now();
    for (auto it = granted_.begin(); it != granted_.end();) {
      it = it->second.deadline <= now ? granted_.erase(it) : std::next(it);
    }
    if (now - published_ < std::chrono::duration<double>(kPublishSeconds)) return;
    published_ = now;
  }
  PublishWorkerTargets();
}

void SharedDispatcher::PublishWorkerTargets() {
  std::set<std::string> unique;
  for (const WorkerInfo& w : workers_.Workers()) {
    for (const DeviceSpec& d : w.devices) {
      unique.insert(d.verified ? d.target : d.target + kUnverifiedMark);
    }
  }
  std::vector<std::string> targets(unique.begin(), unique.end());
  Persist(shared_->PublishWorkerTargets(absl::StrCat("dispatcher-", lease_ids_.salt()), targets,
                                        WallNow()));
}

std::vector<std::string> SharedDispatcher::PublishedTargets() const {
  absl::StatusOr<std::vector<std::string>> live =
      shared_->LiveWorkerTargets(WallNow() - kTargetStaleSeconds);
  if (!live.ok()) return {};
  return *std::move(live);
}

std::string SharedDispatcher::WaitingFor(const std::string& target) const {
  std::set<std::string> others;
  if (workers_.AnyServes(target, &others)) return "";
  for (const std::string& published : PublishedTargets()) {
    const std::string t(absl::StripSuffix(published, kUnverifiedMark));
    if (t == target) return "";  // a worker of another server serves it
    others.insert(t);
  }
  return NoWorkerServes("of any server ", target, others);
}

std::vector<std::string> SharedDispatcher::VerifiedTargets() const {
  std::vector<std::string> targets = workers_.VerifiedTargets();
  for (const std::string& t : PublishedTargets()) {
    if (!absl::EndsWith(t, kUnverifiedMark)) targets.push_back(t);
  }
  return targets;
}

DispatcherStats SharedDispatcher::Stats() const {
  // The rows hold every lease with its unreported candidates. A failed read leaves the gauges
  // at 0.
  LoadByWorker loads;
  absl::StatusOr<std::map<std::string, WorkerLeases>> rows = shared_->LeasesByWorker();
  if (rows.ok()) {
    for (const auto& [worker, held] : *rows) loads[worker] = {held.leases, held.candidates};
  } else {
    TESSERA_LOG(WARNING) << "dispatcher: reading the leases per worker: " << rows.status();
  }
  return workers_.Stats(loads);
}

}  // namespace

std::unique_ptr<Dispatcher> NewSharedDispatcher(JobStore* store, DispatcherOptions options) {
  return std::make_unique<SharedDispatcher>(store, options);
}

}  // namespace tessera
