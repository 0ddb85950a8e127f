// WorkerService (proto/tessera.proto), the API for worker daemons: register, heartbeat, pull a
// leased batch, report its results, all through the Dispatcher. Each RPC checks the worker
// scope (server/auth.h) and validates every field (kInvalidArgument naming it): device targets
// must parse, results must name candidates with a known error kind and finite, non-negative
// times. Results for a lease that is not a live lease of the calling worker are refused
// (FAILED_PRECONDITION), so a late or foreign report never makes a second record.
#ifndef TESSERA_SERVER_WORKER_SERVICE_H_
#define TESSERA_SERVER_WORKER_SERVICE_H_

#include "proto/tessera.grpc.pb.h"
#include "server/auth.h"
#include "server/dispatcher.h"

namespace tessera {

class WorkerServiceImpl final : public v1::WorkerService::Service {
 public:
  WorkerServiceImpl(Dispatcher* dispatcher, const TokenAuth* auth)
      : dispatcher_(dispatcher), auth_(auth) {}

  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const v1::RegisterWorkerRequest* request,
                              v1::RegisterWorkerResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context, const v1::HeartbeatRequest* request,
                         v1::HeartbeatResponse* response) override;
  grpc::Status PullWork(grpc::ServerContext* context, const v1::PullWorkRequest* request,
                        v1::PullWorkResponse* response) override;
  grpc::Status ReportResults(grpc::ServerContext* context, const v1::ReportResultsRequest* request,
                             v1::ReportResultsResponse* response) override;

 private:
  Dispatcher* const dispatcher_;
  const TokenAuth* const auth_;
};

// "cand-<n>" <-> n (exposed for tests).
std::string CandidateIdString(int64_t id);
std::optional<int64_t> ParseCandidateId(const std::string& text);

}  // namespace tessera

#endif  // TESSERA_SERVER_WORKER_SERVICE_H_
