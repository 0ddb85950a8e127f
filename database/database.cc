// The parts of the database interface shared by every implementation (database.h).
#include "database/database.h"

#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace tessera {

const char* MeasureErrorName(MeasureError error) {
  switch (error) {
    case MeasureError::kNone:
      return "";
    case MeasureError::kBuild:
      return "build_error";
    case MeasureError::kRun:
      return "run_error";
    case MeasureError::kTimeout:
      return "timeout";
    case MeasureError::kWrongOutput:
      return "wrong_output";
    case MeasureError::kWorkerLost:
      return "worker_lost";
  }
  return "";
}

absl::StatusOr<MeasureError> ParseMeasureError(const std::string& name) {
  for (MeasureError e :
       {MeasureError::kNone, MeasureError::kBuild, MeasureError::kRun, MeasureError::kTimeout,
        MeasureError::kWrongOutput, MeasureError::kWorkerLost}) {
    if (name == MeasureErrorName(e)) return e;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown error kind '", name,
      "' (expected build_error, run_error, timeout, wrong_output, worker_lost or empty)"));
}

double TuningRecord::mean_secs() const {
  if (!ok()) return 1e10;
  return std::accumulate(run_secs.begin(), run_secs.end(), 0.0) /
         static_cast<double>(run_secs.size());
}

absl::StatusOr<std::unique_ptr<Database>> OpenDatabase(const std::string& url_or_path) {
  if (IsPostgresUrl(url_or_path)) return OpenPostgresDatabase(url_or_path);
  return OpenSqliteDatabase(url_or_path);
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
