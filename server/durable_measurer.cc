#include "server/durable_measurer.h"

#include <set>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "base/status_macros.h"
#include "ir/serialize.h"

namespace tessera {

absl::StatusOr<std::optional<JobBatch>> DurableMeasurer::NextBatch(TuningJob* job) {
  if (!looked_for_pending_) {
    looked_for_pending_ = true;
    TESSERA_ASSIGN_OR_RETURN(std::vector<StoredCandidate> pending, store_->PendingBatch(job_id_));
    if (!pending.empty() && pending[0].trace_json.empty()) {
      // A runoff's batch (StoredRunoffMeasurer): the runoff runs again after the search.
      TESSERA_LOG(INFO) << "job " << job_id_ << ": dropping the pending batch of its runoff";
      TESSERA_RETURN_IF_ERROR(store_->DeleteBatch(job_id_));
    } else if (!pending.empty()) {
      std::vector<std::string> traces;
      for (const StoredCandidate& c : pending) traces.push_back(c.trace_json);
      absl::StatusOr<JobBatch> restore = job->RestoreBatch(pending[0].task, traces);
      if (restore.ok()) {
        restored_ = true;
        TESSERA_LOG(INFO) << "job " << job_id_ << ": restored its pending batch of "
                          << pending.size() << " candidates";
        return std::optional<JobBatch>(*std::move(restore));
      }
      // Not counted anywhere yet, so dropping it keeps the budget exact.
      TESSERA_LOG(WARNING) << "job " << job_id_ << ": dropping a pending batch that does not "
                           << "restore: " << restore.status();
      TESSERA_RETURN_IF_ERROR(store_->DeleteBatch(job_id_));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(std::optional<JobBatch> next, job->NextBatch());
  if (!next.has_value()) return next;
  std::vector<NewCandidate> rows;
  for (const MeasureCandidate& c : next->candidates) {
    rows.push_back(NewCandidate{c.sch.trace().ToJson(), c.hash, SaveJson(c.sch.func())});
  }
  TESSERA_RETURN_IF_ERROR(store_->AddBatch(job_id_, next->task, rows).status());
  return next;
}

absl::StatusOr<MeasuredBatch> DurableMeasurer::Measure(const MeasureRequest& request) {
  return inner_->Measure(request);
}

absl::Status DurableMeasurer::Commit(TuningJob* job, const JobBatch& batch,
                                     const MeasuredBatch& measured) {
  JobBatch to_commit = batch;
  MeasuredBatch kept = measured;
  if (restored_) {
    // A restored batch may have been committed in part before the server died: its records
    // carry this job's id and the very same traces.
    std::set<std::string> recorded;
    TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> workload,
                             db_->FindWorkload(job->tasks()[batch.task].func));
    if (workload.has_value()) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> records,
                               db_->AllRecords(*workload, job->options().target.ToString()));
      for (const TuningRecord& r : records) {
        if (r.job_id == job_id_) recorded.insert(r.trace_json);
      }
    }
    to_commit.candidates.clear();
    kept.outcomes.clear();
    for (size_t i = 0; i < batch.candidates.size(); ++i) {
      if (recorded.count(batch.candidates[i].sch.trace().ToJson())) continue;
      to_commit.candidates.push_back(batch.candidates[i]);
      kept.outcomes.push_back(measured.outcomes[i]);
    }
    if (to_commit.candidates.size() != batch.candidates.size()) {
      TESSERA_LOG(INFO) << "job " << job_id_ << ": "
                        << batch.candidates.size() - to_commit.candidates.size()
                        << " candidates of the restored batch were committed already";
    }
    restored_ = false;
  }
  if (!to_commit.candidates.empty()) TESSERA_RETURN_IF_ERROR(job->Commit(to_commit, kept));
  return store_->DeleteBatch(job_id_);
}

}  // namespace tessera
