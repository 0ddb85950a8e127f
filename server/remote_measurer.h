// The server's Measurer: measures a job's batch on worker daemons. Measure() puts the
// candidates of the job's pending batch (stored in the JobStore, in the order of the
// request's candidates) that have no outcome yet in the dispatcher's queue for the request's
// target, blocks until workers report all of them (or they are quarantined), and returns one
// outcome per candidate, each with the provenance of the worker that measured it.
//
// Outcomes already stored (reported before a server restart) are reused, never measured again.
// An error status only when the batch as a whole stops: the job was cancelled (kCancelled),
// the server is shutting down (kUnavailable), or the stored batch does not match the request.
#ifndef TESSERA_SERVER_REMOTE_MEASURER_H_
#define TESSERA_SERVER_REMOTE_MEASURER_H_

#include <atomic>
#include <string>

#include "server/dispatcher.h"
#include "server/job_store.h"
#include "worker/measurer.h"

namespace tessera {

class RemoteMeasurer final : public Measurer {
 public:
  // `cancelled` is the job's cancel flag (checked after queueing, so a cancel that raced the
  // queueing is not missed). Every pointer must outlive the measurer.
  RemoteMeasurer(std::string job_id, int priority, Dispatcher* dispatcher, JobStore* store,
                 RunnerConfig runner, double build_timeout_sec, const std::atomic<bool>* cancelled)
      : job_id_(std::move(job_id)),
        priority_(priority),
        dispatcher_(dispatcher),
        store_(store),
        runner_(runner),
        build_timeout_sec_(build_timeout_sec),
        cancelled_(cancelled) {}

  absl::StatusOr<MeasuredBatch> Measure(const MeasureRequest& request) override;

 private:
  const std::string job_id_;
  const int priority_;
  Dispatcher* const dispatcher_;
  JobStore* const store_;
  const RunnerConfig runner_;
  const double build_timeout_sec_;
  const std::atomic<bool>* const cancelled_;
};

}  // namespace tessera

#endif  // TESSERA_SERVER_REMOTE_MEASURER_H_
