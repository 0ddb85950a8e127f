// gRPC statuses on the client side of the service (the worker daemon and the CLI clients):
// one-line errors that keep the code and name it ("<what>: UNAVAILABLE: <message>").
#ifndef TESSERA_WORKER_GRPC_STATUS_H_
#define TESSERA_WORKER_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace tessera {

// "UNAVAILABLE", "NOT_FOUND", ...
const char* GrpcCodeName(grpc::StatusCode code);

// An absl::Status with the same code (gRPC and absl share the canonical codes) and the message
// "<what>: <CODE>: <message>", newlines folded so that the error stays on one line.
absl::Status FromGrpcStatus(const grpc::Status& status, const std::string& what);

}  // namespace tessera

#endif  // TESSERA_WORKER_GRPC_STATUS_H_
