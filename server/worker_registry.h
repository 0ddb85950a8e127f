// The worker daemons registered with one server: their devices' target strings, software and
// last contact. Both dispatchers (server/dispatcher.h) keep their workers here; a worker
// registers with one server and reports to it, whichever queue its leases come from.
// Thread-safe.
#ifndef TESSERA_SERVER_WORKER_REGISTRY_H_
#define TESSERA_SERVER_WORKER_REGISTRY_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "database/database.h"

namespace tessera {

struct DeviceSpec {
  std::string target;  // canonical target string
  std::string name;
  int64_t memory_bytes = 0;
  int ordinal = -1;
  // The worker's token names this target in full (or the server has no tokens): only such
  // targets complete a job's partial target (Dispatcher::TargetFor; server/auth.h).
  bool verified = true;
};

struct WorkerInfo {
  std::string id;  // assigned by Register
  std::string host;
  std::vector<DeviceSpec> devices;
  Provenance software;  // worker_id filled in by Register
  int build_parallelism = 0;
  double registered_at = 0;  // seconds since the Unix epoch

  bool Serves(const std::string& target) const;
};

// The workers registered with this server at one moment, for the metrics (server/metrics.h).
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

// Live leases and their unreported candidates, per worker id.
using LoadByWorker = std::map<std::string, std::pair<int, int>>;

// Ids that never repeat, not even across restarts: "<kind>-<n>-<salt>", the salt random per
// object. Thread-safe.
class UniqueIds {
 public:
  UniqueIds();
  std::string Next(const std::string& kind);
  const std::string& salt() const { return salt_; }

 private:
  std::string salt_;
  std::atomic<uint64_t> counter_{0};
};

// Seconds since the Unix epoch.
double WallNow();
// The steady clock `seconds` from now (deadlines of leases and waits).
std::chrono::steady_clock::time_point SteadyAfter(double seconds);

class WorkerRegistry {
 public:
  // Assigns the worker its id; kInvalidArgument without devices or with an empty target.
  absl::StatusOr<std::string> Register(WorkerInfo info);
  // The registered worker `worker_id`, marked as seen now; kNotFound when it is not registered
  // (it must register again).
  absl::StatusOr<WorkerInfo> Seen(const std::string& worker_id);
  std::optional<WorkerInfo> Find(const std::string& worker_id) const;
  std::vector<WorkerInfo> Workers() const;  // in registration order
  // Forgets the workers silent for longer than `timeout_seconds`.
  void ForgetSilent(double timeout_seconds);

  // Whether a worker registered here serves `target`; when none does, the targets they serve
  // are added to `others`.
  bool AnyServes(const std::string& target, std::set<std::string>* others) const;
  // The verified targets of the workers' devices, in registration order.
  std::vector<std::string> VerifiedTargets() const;
  // The workers in registration order with their loads from `loads` (absent: none).
  DispatcherStats Stats(const LoadByWorker& loads) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    WorkerInfo info;
    Clock::time_point last_seen;
  };

  UniqueIds ids_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> workers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> order_ ABSL_GUARDED_BY(mu_);  // registration order
};

// "no live worker <whom>serves target T (workers serve: A; B)": what a job on `target` waits
// for, listing `others`.
std::string NoWorkerServes(const std::string& whom, const std::string& target,
                           const std::set<std::string>& others);

}  // namespace tessera

#endif  // TESSERA_SERVER_WORKER_REGISTRY_H_
