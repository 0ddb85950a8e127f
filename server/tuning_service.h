// TuningService (proto/tessera.proto), the API for clients: jobs (submit, get, list, watch,
// cancel) through the JobManager, and records (best, top-k, apply, export, import) straight
// from the tuning database. Each RPC checks the client scope (server/auth.h), validates every
// field (kInvalidArgument naming it), converts proto -> domain, calls one domain function and
// converts back; no tuning logic lives here.
#ifndef TESSERA_SERVER_TUNING_SERVICE_H_
#define TESSERA_SERVER_TUNING_SERVICE_H_

#include <atomic>

#include "database/database.h"
#include "proto/tessera.grpc.pb.h"
#include "server/auth.h"
#include "server/dispatcher.h"
#include "server/job_manager.h"

namespace tessera {

class TuningServiceImpl final : public v1::TuningService::Service {
 public:
  // Every pointer must outlive the service.
  TuningServiceImpl(JobManager* jobs, Dispatcher* dispatcher, Database* db, const TokenAuth* auth)
      : jobs_(jobs), dispatcher_(dispatcher), db_(db), auth_(auth) {}
  // Ends the WatchJob streams (the server is shutting down).
  void Stop() { stopping_ = true; }

  grpc::Status GetVersion(grpc::ServerContext* context, const v1::Empty* request,
                          v1::VersionInfo* response) override;
  grpc::Status SubmitJob(grpc::ServerContext* context, const v1::SubmitJobRequest* request,
                         v1::SubmitJobResponse* response) override;
  grpc::Status GetJob(grpc::ServerContext* context, const v1::JobRef* request,
                      v1::JobStatus* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context, const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override;
  grpc::Status WatchJob(grpc::ServerContext* context, const v1::JobRef* request,
                        grpc::ServerWriter<v1::JobEvent>* writer) override;
  grpc::Status CancelJob(grpc::ServerContext* context, const v1::JobRef* request,
                         v1::JobStatus* response) override;
  grpc::Status GetBest(grpc::ServerContext* context, const v1::GetBestRequest* request,
                       v1::GetBestResponse* response) override;
  grpc::Status GetTopK(grpc::ServerContext* context, const v1::GetTopKRequest* request,
                       v1::GetTopKResponse* response) override;
  grpc::Status ApplyBest(grpc::ServerContext* context, const v1::ApplyBestRequest* request,
                         v1::ApplyBestResponse* response) override;
  grpc::Status ExportRecords(grpc::ServerContext* context, const v1::ExportRecordsRequest* request,
                             grpc::ServerWriter<v1::RecordLine>* writer) override;
  grpc::Status ImportRecords(grpc::ServerContext* context,
                             grpc::ServerReader<v1::RecordLine>* reader,
                             v1::ImportRecordsResponse* response) override;

 private:
  // WatchJob for a job another server runs (a shared state database): its rows polled, a
  // BATCH_DONE (task -1) each time its trial count moves on from `trials`, and the final event
  // when it ends. Per-task events (NEW_BEST, TASK_FINISHED) only the running server sends.
  grpc::Status WatchRows(grpc::ServerContext* context, const std::string& id, int trials,
                         grpc::ServerWriter<v1::JobEvent>* writer);

  JobManager* const jobs_;
  Dispatcher* const dispatcher_;
  Database* const db_;
  const TokenAuth* const auth_;
  std::atomic<bool> stopping_{false};
};

// JobSnapshot -> JobStatus (exposed for tests).
void ToProto(const JobSnapshot& snapshot, v1::JobStatus* out);

}  // namespace tessera

#endif  // TESSERA_SERVER_TUNING_SERVICE_H_
