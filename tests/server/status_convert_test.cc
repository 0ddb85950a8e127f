// Tests of server/status_convert.cc: at the service edge every canonical code maps one to one
// between absl and gRPC in both directions, the message is kept as it is, and OK stays OK.
#include "server/status_convert.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(StatusConvertTest, EveryCodeAndItsMessageRoundTrip) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status status(static_cast<absl::StatusCode>(code), "split: loop i: no\nsuch loop");
    const grpc::Status grpc = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(grpc.error_code()), code);
    EXPECT_EQ(grpc.error_message(), "split: loop i: no\nsuch loop");
    EXPECT_EQ(FromGrpcStatus(grpc), status);
  }
}

TEST(StatusConvertTest, CodesKeepTheirMeaning) {
  EXPECT_EQ(ToGrpcStatus(absl::NotFoundError("job j")).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpcStatus(absl::UnavailableError("w")).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "token")).code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(StatusConvertTest, OkStaysOk) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
}

}  // namespace
}  // namespace tessera
