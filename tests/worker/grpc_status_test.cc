// Tests of worker/grpc_status.cc: every gRPC code's name, the same canonical code on the absl
// side, and one-line messages "<what>: <CODE>: <message>" for the service clients.
#include "worker/grpc_status.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(GrpcStatusTest, NamesEveryCodeAsGrpcSpellsIt) {
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::OK), "OK");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::CANCELLED), "CANCELLED");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::INVALID_ARGUMENT), "INVALID_ARGUMENT");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::NOT_FOUND), "NOT_FOUND");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::PERMISSION_DENIED), "PERMISSION_DENIED");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::FAILED_PRECONDITION), "FAILED_PRECONDITION");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::UNIMPLEMENTED), "UNIMPLEMENTED");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::UNAVAILABLE), "UNAVAILABLE");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::UNAUTHENTICATED), "UNAUTHENTICATED");
  EXPECT_STREQ(GrpcCodeName(static_cast<grpc::StatusCode>(99)), "UNKNOWN");
  EXPECT_STREQ(GrpcCodeName(static_cast<grpc::StatusCode>(-1)), "UNKNOWN");
}

TEST(GrpcStatusTest, CodesMapOneToOneOntoAbsl) {
  for (int code = 1; code <= 16; ++code) {
    absl::Status s = FromGrpcStatus(grpc::Status(static_cast<grpc::StatusCode>(code), "m"), "rpc");
    EXPECT_EQ(static_cast<int>(s.code()), code);
    EXPECT_EQ(s.message(),
              std::string("rpc: ") + GrpcCodeName(static_cast<grpc::StatusCode>(code)) + ": m");
  }
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "x"), "s").code(),
            absl::StatusCode::kUnavailable);
}

TEST(GrpcStatusTest, OkStaysOkWithoutAMessage) {
  absl::Status s = FromGrpcStatus(grpc::Status::OK, "GetJob");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

TEST(GrpcStatusTest, MessagesStayOnOneLine) {
  absl::Status s = FromGrpcStatus(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "failed to connect\r\nall addresses\nfailed"),
      "worker: register with 127.0.0.1:1");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "worker: register with 127.0.0.1:1: UNAVAILABLE: failed to connect  all addresses "
            "failed");
}

}  // namespace
}  // namespace tessera
