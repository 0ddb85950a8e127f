#include "worker/grpc_status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace tessera {

const char* GrpcCodeName(grpc::StatusCode code) {
  // grpc::StatusCode's values, in order (grpc/impl/codegen/status.h).
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  int i = static_cast<int>(code);
  return i >= 0 && i < static_cast<int>(sizeof(kNames) / sizeof(kNames[0])) ? kNames[i] : "UNKNOWN";
}

absl::Status FromGrpcStatus(const grpc::Status& status, const std::string& what) {
  if (status.ok()) return absl::OkStatus();
  std::string message = absl::StrReplaceAll(status.error_message(), {{"\n", " "}, {"\r", " "}});
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", GrpcCodeName(status.error_code()), ": ", message));
}

}  // namespace tessera
