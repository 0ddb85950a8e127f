// The parts of the database interface shared by every implementation (database.h).
#include "database/database.h"

#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "base/status_macros.h"

namespace tessera {

double TuningRecord::mean_secs() const {
  if (!ok()) return 1e10;
  return std::accumulate(run_secs.begin(), run_secs.end(), 0.0) /
         static_cast<double>(run_secs.size());
}

absl::StatusOr<std::optional<TuningRecord>> BestRecord(Database* db, const PrimFunc& func,
                                                       const std::string& target,
                                                       bool verified_only) {
  TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> workload, db->FindWorkload(func));
  if (!workload.has_value()) return std::optional<TuningRecord>();
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> top,
                           db->TopK(*workload, target, /*k=*/1, verified_only));
  if (top.empty()) return std::optional<TuningRecord>();
  return std::optional<TuningRecord>(std::move(top.front()));
}

}  // namespace tessera
