// grpc.reflection.v1 on a real server on 127.0.0.1:0, through the generated v1 stub, as a
// client that asks for v1 (grpcurl, grpc_cli) does: the service list, the file that defines
// tessera.v1 with its imports, and errors for names the server does not know.
#include "server/reflection_v1.h"

#include <google/protobuf/descriptor.pb.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/server/server_testing.h"

namespace tessera {
namespace {

namespace rv1 = ::grpc::reflection::v1;
using testing::Context;
using testing::TempDir;

class ReflectionV1Test : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = TuningServer::Start(testing::TestServerOptions(dir_)).value();
    stub_ = rv1::ServerReflection::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  // Sends `requests` on one stream; the responses, in order.
  std::vector<rv1::ServerReflectionResponse> Exchange(
      const std::vector<rv1::ServerReflectionRequest>& requests) {
    std::unique_ptr<grpc::ClientContext> context = Context();
    auto stream = stub_->ServerReflectionInfo(context.get());
    std::vector<rv1::ServerReflectionResponse> responses;
    for (const rv1::ServerReflectionRequest& request : requests) {
      rv1::ServerReflectionResponse response;
      if (!stream->Write(request) || !stream->Read(&response)) break;
      responses.push_back(response);
    }
    stream->WritesDone();
    grpc::Status finished = stream->Finish();
    EXPECT_TRUE(finished.ok()) << finished.error_message();
    return responses;
  }

  TempDir dir_;
  std::unique_ptr<TuningServer> server_;
  std::unique_ptr<rv1::ServerReflection::Stub> stub_;
};

TEST_F(ReflectionV1Test, ListsEveryServiceTheServerServes) {
  rv1::ServerReflectionRequest list;
  list.set_list_services("");
  std::vector<rv1::ServerReflectionResponse> r = Exchange({list});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_TRUE(r[0].has_list_services_response()) << r[0].DebugString();
  std::vector<std::string> names;
  for (const rv1::ServiceResponse& s : r[0].list_services_response().service()) {
    names.push_back(s.name());
  }
  for (const char* expected :
       {"tessera.v1.TuningService", "tessera.v1.WorkerService",
        "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection",
        "grpc.health.v1.Health"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  EXPECT_TRUE(r[0].original_request().has_list_services());
}

TEST_F(ReflectionV1Test, FileContainingAServiceHoldsTesseraV1AndItsImportsOnce) {
  rv1::ServerReflectionRequest by_symbol;
  by_symbol.set_file_containing_symbol("tessera.v1.TuningService");
  rv1::ServerReflectionRequest by_method;
  by_method.set_file_containing_symbol("tessera.v1.WorkerService.PullWork");
  std::vector<rv1::ServerReflectionResponse> r = Exchange({by_symbol, by_method});
  ASSERT_EQ(r.size(), 2u);
  ASSERT_TRUE(r[0].has_file_descriptor_response()) << r[0].DebugString();
  const auto& files = r[0].file_descriptor_response().file_descriptor_proto();
  ASSERT_GE(files.size(), 1);
  google::protobuf::FileDescriptorProto file;
  ASSERT_TRUE(file.ParseFromString(files[0]));
  EXPECT_EQ(file.name(), "proto/tessera.proto");
  EXPECT_EQ(file.package(), "tessera.v1");
  bool has_service = false;
  for (const auto& service : file.service()) has_service |= service.name() == "TuningService";
  EXPECT_TRUE(has_service);
  // Every import is in the first answer; the second repeats the file, not its imports.
  EXPECT_EQ(files.size(), 1 + file.dependency_size());
  ASSERT_TRUE(r[1].has_file_descriptor_response()) << r[1].DebugString();
  ASSERT_EQ(r[1].file_descriptor_response().file_descriptor_proto_size(), 1);
  ASSERT_TRUE(file.ParseFromString(r[1].file_descriptor_response().file_descriptor_proto(0)));
  EXPECT_EQ(file.name(), "proto/tessera.proto");
}

TEST_F(ReflectionV1Test, UnknownNamesAreNotFoundAndTheStreamGoesOn) {
  rv1::ServerReflectionRequest unknown_symbol;
  unknown_symbol.set_file_containing_symbol("tessera.v1.NoSuchService");
  rv1::ServerReflectionRequest unknown_file;
  unknown_file.set_file_by_filename("proto/none.proto");
  rv1::ServerReflectionRequest by_name;
  by_name.set_file_by_filename("proto/tessera.proto");
  std::vector<rv1::ServerReflectionResponse> r =
      Exchange({unknown_symbol, unknown_file, rv1::ServerReflectionRequest(), by_name});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].error_response().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(r[0].error_response().error_message().find("tessera.v1.NoSuchService"),
            std::string::npos);
  EXPECT_EQ(r[1].error_response().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(r[2].error_response().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(r[3].has_file_descriptor_response());
}

}  // namespace
}  // namespace tessera
