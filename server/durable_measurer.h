// The durable part of measuring a job's search on the service, as a Measurer decorator: every
// batch is stored in the JobStore as the job's pending batch (candidate traces, hashes and
// functions) before the measurer it wraps (the RemoteMeasurer, which reads the stored rows and
// keeps the outcomes reported in them) measures it, and dropped once committed. A server that
// restarts gets the pending batch back from NextBatch, rebuilt from its traces, with the
// outcomes already reported; Commit leaves out the candidates of such a batch that were
// committed before the restart. So a job's loop reads as the step loop of tuner/tuning_job.h:
//
//   while (batch = durable.NextBatch(job))        // the restored batch first
//     measured = durable.Measure(job->RequestFor(*batch))
//     durable.Commit(job, *batch, measured)
//
// A runoff's batch (rows without traces, StoredRunoffMeasurer in job_manager.cc) found pending
// is dropped: the runoff runs again after the search. One per job run; not thread-safe.
#ifndef TESSERA_SERVER_DURABLE_MEASURER_H_
#define TESSERA_SERVER_DURABLE_MEASURER_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "database/database.h"
#include "server/job_store.h"
#include "tuner/tuning_job.h"
#include "worker/measurer.h"

namespace tessera {

class DurableMeasurer final : public Measurer {
 public:
  // Every pointer must outlive the measurer; `db` is the records database `job`s commit to.
  DurableMeasurer(std::string job_id, JobStore* store, Database* db, Measurer* inner)
      : job_id_(std::move(job_id)), store_(store), db_(db), inner_(inner) {}

  // On the first call, the job's pending batch rebuilt by `job` (TuningJob::RestoreBatch) when
  // there is one that restores (one that does not, or a runoff's, is dropped: nothing of it
  // was counted); otherwise job->NextBatch(), stored as the job's pending batch. nullopt when
  // the job is finished.
  absl::StatusOr<std::optional<JobBatch>> NextBatch(TuningJob* job);

  // The wrapped measurer's Measure of the stored batch.
  absl::StatusOr<MeasuredBatch> Measure(const MeasureRequest& request) override;

  // Commits `batch` and its outcomes to `job`, without the candidates of a restored batch that
  // carry this job's records already (the server died between the commit and the batch's
  // deletion), then drops the stored batch.
  absl::Status Commit(TuningJob* job, const JobBatch& batch, const MeasuredBatch& measured);

 private:
  const std::string job_id_;
  JobStore* const store_;
  Database* const db_;
  Measurer* const inner_;
  bool looked_for_pending_ = false;
  bool restored_ = false;  // the batch in flight is one restored after a restart
};

}  // namespace tessera

#endif  // TESSERA_SERVER_DURABLE_MEASURER_H_
