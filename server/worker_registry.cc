#include "server/worker_registry.h"

#include <algorithm>
#include <random>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"

namespace tessera {

bool WorkerInfo::Serves(const std::string& target) const {
  for (const DeviceSpec& d : devices) {
    if (d.target == target) return true;
  }
  return false;
}

UniqueIds::UniqueIds() {
  std::random_device rd;
  salt_ = absl::StrFormat("%06x", rd() & 0xffffff);
}

std::string UniqueIds::Next(const std::string& kind) {
  return absl::StrCat(kind, "-", ++counter_, "-", salt_);
}

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::chrono::steady_clock::time_point SteadyAfter(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(seconds));
}

absl::StatusOr<std::string> WorkerRegistry::Register(WorkerInfo info) {
  if (info.devices.empty()) {
    return absl::InvalidArgumentError("devices: a worker must register at least one device");
  }
  for (size_t i = 0; i < info.devices.size(); ++i) {
    if (info.devices[i].target.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("devices[", i, "].target: empty"));
    }
  }
  info.id = ids_.Next("worker");
  info.software.worker_id = info.id;
  info.registered_at = WallNow();
  std::string id = info.id;
  TESSERA_LOG(INFO) << "worker " << id << " registered from " << info.host << " with "
                    << info.devices.size() << " device(s), first " << info.devices[0].target;
  std::lock_guard<std::mutex> lock(mu_);
  workers_[id] = Entry{std::move(info), Clock::now()};
  order_.push_back(id);
  return id;
}

absl::StatusOr<WorkerInfo> WorkerRegistry::Seen(const std::string& worker_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto w = workers_.find(worker_id);
  if (w == workers_.end()) {
    return absl::NotFoundError(
        absl::StrCat("worker ", worker_id, " is not registered (register again)"));
  }
  w->second.last_seen = Clock::now();
  return w->second.info;
}

std::optional<WorkerInfo> WorkerRegistry::Find(const std::string& worker_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) return std::nullopt;
  return it->second.info;
}

std::vector<WorkerInfo> WorkerRegistry::Workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WorkerInfo> out;
  for (const std::string& id : order_) out.push_back(workers_.at(id).info);
  return out;
}

void WorkerRegistry::ForgetSilent(double timeout_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  Clock::time_point now = Clock::now();
  auto timeout =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (now - it->second.last_seen > timeout) {
      TESSERA_LOG(WARNING) << "worker " << it->first << " silent for " << timeout_seconds
                           << " s: forgotten";
      order_.erase(std::remove(order_.begin(), order_.end(), it->first), order_.end());
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

bool WorkerRegistry::AnyServes(const std::string& target, std::set<std::string>* others) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, w] : workers_) {
    if (w.info.Serves(target)) return true;
    for (const DeviceSpec& d : w.info.devices) others->insert(d.target);
  }
  return false;
}

std::vector<std::string> WorkerRegistry::VerifiedTargets() const {
  std::vector<std::string> targets;
  for (const WorkerInfo& w : Workers()) {
    for (const DeviceSpec& d : w.devices) {
      if (d.verified) targets.push_back(d.target);
    }
  }
  return targets;
}

DispatcherStats WorkerRegistry::Stats(const LoadByWorker& loads) const {
  DispatcherStats stats;
  for (const WorkerInfo& w : Workers()) {
    DispatcherStats::WorkerLoad load;
    load.id = w.id;
    load.host = w.host;
    auto it = loads.find(w.id);
    if (it != loads.end()) std::tie(load.leases, load.candidates) = it->second;
    stats.workers.push_back(std::move(load));
  }
  return stats;
}

std::string NoWorkerServes(const std::string& whom, const std::string& target,
                           const std::set<std::string>& others) {
  std::string msg = absl::StrCat("no live worker ", whom, "serves target ", target);
  if (!others.empty()) {
    absl::StrAppend(&msg, " (workers serve: ", absl::StrJoin(others, "; "), ")");
  }
  return msg;
}

}  // namespace tessera
