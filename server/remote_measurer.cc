#include "server/remote_measurer.h"

#include <chrono>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/serialize.h"

namespace tessera {

absl::StatusOr<MeasuredBatch> RemoteMeasurer::Measure(const MeasureRequest& request) {
  auto start = std::chrono::steady_clock::now();
  TESSERA_ASSIGN_OR_RETURN(std::vector<StoredCandidate> rows, store_->PendingBatch(job_id_));
  if (rows.size() != request.candidates.size()) {
    return absl::InternalError(absl::StrCat("job ", job_id_, ": the stored batch holds ",
                                            rows.size(), " candidates, the request ",
                                            request.candidates.size()));
  }
  MeasuredBatch batch;
  if (rows.empty()) return batch;

  BatchContext context;
  context.task = rows[0].task;
  context.target = request.target.ToString();
  context.workload_json = SaveJson(request.workload);
  context.best_secs = request.best_secs > 0 ? request.best_secs : 0;
  context.verify = request.verify;
  context.check_seed = request.check_seed;
  context.measure_fully = request.measure_fully;
  context.same_machine = request.same_machine;
  for (size_t i : request.check_always) {
    if (i < rows.size()) context.check_always_hashes.push_back(rows[i].hash);
  }
  context.runner = runner_;
  context.build_timeout_sec = build_timeout_sec_;
  std::vector<LeasedCandidate> items;
  std::vector<int> attempts;
  for (const StoredCandidate& row : rows) {
    if (row.result.has_value()) continue;
    items.push_back(LeasedCandidate{row.id, row.func_json, row.hash});
    attempts.push_back(row.attempts);
  }
  std::map<int64_t, ReportedOutcome> reported;
  if (!items.empty()) {
    TESSERA_RETURN_IF_ERROR(dispatcher_->SubmitBatch(job_id_, priority_, std::move(context),
                                                     std::move(items), std::move(attempts)));
    if (cancelled_ != nullptr && cancelled_->load()) dispatcher_->CancelJob(job_id_);
    TESSERA_ASSIGN_OR_RETURN(reported, dispatcher_->AwaitBatch(job_id_));
  }
  for (const StoredCandidate& row : rows) {
    ReportedOutcome r;
    if (row.result.has_value()) {
      r = *row.result;
    } else {
      auto it = reported.find(row.id);
      if (it == reported.end()) {
        return absl::InternalError(
            absl::StrCat("job ", job_id_, ": no outcome for candidate ", row.id));
      }
      r = it->second;
    }
    r.outcome.provenance = r.provenance;
    if (batch.outcomes.empty()) batch.provenance = r.provenance;
    batch.outcomes.push_back(std::move(r.outcome));
  }
  // Workers build and run in parallel elsewhere; the whole wait counts as measuring (run).
  batch.run_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return batch;
}

}  // namespace tessera
