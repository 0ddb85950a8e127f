// The dispatcher on a shared queue (JobStore::shared(), PostgreSQL): the queue and the leases
// are rows, so several servers hand out the candidates of all jobs, whichever server searches
// them. This server keeps only its workers, the batches its own jobs await, and which worker
// each lease it granted went to (a worker reports to the server it pulled from); it publishes
// its workers' targets, so that every server resolves bare kinds ("cpu") and says whether a
// job's target has a worker from all servers' workers. Waiting is
// polling (kSharedPollSeconds), shortened by this server's own events (a local batch queued, a
// local report).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "server/dispatcher.h"
#include "server/metrics.h"
#include "worker/host.h"

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

double Seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

double WallNow() { return Seconds(std::chrono::system_clock::now()); }

}  // namespace

absl::Status Dispatcher::SharedSubmitBatch(const std::string& job_id, int priority,
                                           const BatchContext& context) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    if (shared_batches_.count(job_id)) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job_id, " already has a batch in flight"));
    }
  }
  // The candidates are rows already (AddBatch); the context makes them leasable by any server.
  absl::Status s =
      shared_->SetBatchContext(job_id, context.target, priority, ContextToJson(context));
  if (!s.ok()) return s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shared_batches_[job_id] = SharedBatch{};
  }
  TESSERA_LOG(INFO) << "job " << job_id << ": batch of task " << context.task
                    << " queued in the shared queue for " << context.target;
  work_cv_.notify_all();
  return absl::OkStatus();
}

absl::StatusOr<std::map<int64_t, ReportedOutcome>> Dispatcher::SharedAwaitBatch(
    const std::string& job_id) {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = shared_batches_.find(job_id);
      if (it == shared_batches_.end()) {
        return absl::FailedPreconditionError(absl::StrCat("job ", job_id, " has no batch queued"));
      }
      if (it->second.cancelled) {
        shared_batches_.erase(it);
        return absl::CancelledError(absl::StrCat("job ", job_id, " was cancelled"));
      }
      if (stopping_) {
        shared_batches_.erase(it);
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
        shared_batches_.erase(job_id);
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

absl::StatusOr<std::optional<Lease>> Dispatcher::SharedPullWork(const std::string& worker_id,
                                                                int max_candidates,
                                                                double wait_seconds) {
  double wait = std::clamp(wait_seconds, 0.0, options_.max_wait_seconds);
  Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                               std::chrono::duration<double>(wait));
  int n = max_candidates > 0 ? max_candidates : options_.default_batch;
  while (true) {
    std::set<std::string> targets;
    std::string lease_id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      TESSERA_ASSIGN_OR_RETURN(WorkerState * worker, SeenWorker(worker_id));
      if (stopping_) return std::optional<Lease>();
      for (const DeviceSpec& d : worker->info.devices) targets.insert(d.target);
      lease_id = absl::StrCat("lease-", ++id_counter_, "-", id_salt_);
    }
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
        shared_leases_[lease_id] = SharedLeaseOwner{
            worker_id,
            Clock::now() + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(options_.lease_seconds)),
            target};
      }
      TESSERA_LOG(INFO) << "job " << lease.job_id << ": lease " << lease.id << " of "
                        << lease.candidates.size() << " candidates to worker " << worker_id;
      return std::optional<Lease>(std::move(lease));
    }
    Clock::time_point now = Clock::now();
    if (now >= until) return std::optional<Lease>();
    std::unique_lock<std::mutex> lock(mu_);
    work_cv_.wait_until(
        lock, std::min(until, now + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(kSharedPollSeconds))));
  }
}

absl::StatusOr<int> Dispatcher::SharedReport(const std::string& worker_id,
                                             const std::string& lease_id,
                                             const std::vector<CandidateReport>& reports) {
  Provenance software;
  std::string target;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_ASSIGN_OR_RETURN(WorkerState * worker, SeenWorker(worker_id));
    software = worker->info.software;
    auto l = shared_leases_.find(lease_id);
    if (l == shared_leases_.end() || l->second.worker_id != worker_id) {
      return absl::FailedPreconditionError(absl::StrCat(
          "lease ", lease_id, " is not a live lease of worker ", worker_id,
          " (expired, revoked or unknown): its candidates were or will be measured elsewhere"));
    }
    target = l->second.target;
  }
  std::vector<std::pair<int64_t, ReportedOutcome>> outcomes;
  for (const CandidateReport& r : reports) {
    outcomes.push_back({r.candidate_id, ReportedOutcome{r.outcome, software}});
  }
  absl::StatusOr<int> accepted = shared_->ReportLease(lease_id, outcomes);
  if (!accepted.ok() && accepted.status().code() == absl::StatusCode::kFailedPrecondition) {
    std::lock_guard<std::mutex> lock(mu_);
    shared_leases_.erase(lease_id);
  }
  if (accepted.ok()) {
    TESSERA_LOG(INFO) << "worker " << worker_id << " reported " << *accepted << " of lease "
                      << lease_id;
  }
  if (accepted.ok() && options_.metrics != nullptr) {
    // The store says how many it accepted, not which: when some were reported already (rare),
    // only the number is counted, without error kinds.
    if (*accepted == static_cast<int>(reports.size())) {
      for (const CandidateReport& r : reports) {
        double run_secs = 0;
        for (double t : r.outcome.run_secs) run_secs += t;
        options_.metrics->CandidateMeasured(target, r.outcome.error, r.outcome.build_secs,
                                            run_secs);
      }
    } else {
      options_.metrics->CandidatesMeasured(target, *accepted);
    }
  }
  result_cv_.notify_all();
  return accepted;
}

HeartbeatReply Dispatcher::SharedHeartbeat(const std::string& worker_id,
                                           const std::vector<std::string>& leases) {
  HeartbeatReply reply;
  std::vector<std::string> mine;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reply.known = SeenWorker(worker_id).ok();
    for (const std::string& id : leases) {
      auto l = shared_leases_.find(id);
      if (reply.known && l != shared_leases_.end() && l->second.worker_id == worker_id) {
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
      auto l = shared_leases_.find(id);
      if (l != shared_leases_.end()) {
        l->second.deadline =
            Clock::now() + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(options_.lease_seconds));
      }
    } else if (renewed.ok()) {
      shared_leases_.erase(id);
      reply.revoked.push_back(id);
    }
    // A database error revokes nothing: the worker keeps measuring and reports later.
  }
  return reply;
}

void Dispatcher::SharedSweep() {
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
  std::vector<std::string> targets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // This server's record of its leases: those past their deadline are gone from the rows too.
    Clock::time_point now = Clock::now();
    for (auto it = shared_leases_.begin(); it != shared_leases_.end();) {
      it = it->second.deadline <= now ? shared_leases_.erase(it) : std::next(it);
    }
    if (now - shared_published_ < std::chrono::duration<double>(kPublishSeconds)) return;
    shared_published_ = now;
    std::set<std::string> unique;
    for (const auto& [id, w] : workers_) {
      for (const DeviceSpec& d : w.info.devices) {
        unique.insert(d.verified ? d.target : d.target + kUnverifiedMark);
      }
    }
    targets.assign(unique.begin(), unique.end());
  }
  Persist(shared_->PublishWorkerTargets(absl::StrCat("dispatcher-", id_salt_), targets, WallNow()));
}

std::string Dispatcher::SharedWaitingFor(const std::string& target) const {
  std::set<std::string> others;
  if (LocalWorkerServes(target, &others)) return "";
  absl::StatusOr<std::vector<std::string>> live =
      shared_->LiveWorkerTargets(WallNow() - kTargetStaleSeconds);
  if (live.ok()) {
    for (const std::string& published : *live) {
      const std::string t(absl::StripSuffix(published, kUnverifiedMark));
      if (t == target) return "";  // a worker of another server serves it
      others.insert(t);
    }
  }
  return NoWorkerServes("of any server ", target, others);
}

std::vector<std::string> Dispatcher::SharedVerifiedTargets() const {
  std::vector<std::string> targets;
  absl::StatusOr<std::vector<std::string>> live =
      shared_->LiveWorkerTargets(WallNow() - kTargetStaleSeconds);
  if (!live.ok()) return targets;
  for (const std::string& t : *live) {
    if (!absl::EndsWith(t, kUnverifiedMark)) targets.push_back(t);
  }
  return targets;
}

}  // namespace tessera
