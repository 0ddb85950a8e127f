// absl::Status <-> grpc::Status at the service edge (docs/architecture.md, Conventions): the
// codes map one to one (both follow the canonical gRPC codes), the message is kept.
#ifndef TESSERA_SERVER_STATUS_CONVERT_H_
#define TESSERA_SERVER_STATUS_CONVERT_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace tessera {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace tessera

#endif  // TESSERA_SERVER_STATUS_CONVERT_H_
