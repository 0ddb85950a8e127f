#include "server/server.h"

#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/server/server_testing.h"

namespace tessera {
namespace {

using testing::Context;
using testing::TempDir;

TEST(TuningServerTest, ListensOnLoopbackAndAnswersVersion) {
  TempDir dir;
  auto server = TuningServer::Start(testing::TestServerOptions(dir)).value();
  EXPECT_EQ(server->address().rfind("127.0.0.1:", 0), 0u);
  EXPECT_GT(server->port(), 0);
  v1::VersionInfo version;
  ASSERT_TRUE(testing::TuningStub(server->address())
                  ->GetVersion(Context().get(), v1::Empty(), &version)
                  .ok());
  EXPECT_EQ(version.api(), "tessera.v1");
  EXPECT_FALSE(version.version().empty());
  // The port is taken: a second server cannot bind it.
  ServerOptions again = testing::TestServerOptions(dir);
  again.db_path = dir.Path("other.db");
  again.listen = server->address();
  absl::StatusOr<std::unique_ptr<TuningServer>> second = TuningServer::Start(again);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

TEST(TuningServerTest, RefusesOversizedMessages) {
  TempDir dir;
  ServerOptions options = testing::TestServerOptions(dir);
  options.max_message_bytes = 1 << 20;
  auto server = TuningServer::Start(options).value();
  v1::SubmitJobRequest r;
  r.add_workloads(std::string(2 << 20, 'x'));
  r.set_target("cpu");
  r.set_max_trials(1);
  v1::SubmitJobResponse response;
  grpc::Status s = testing::TuningStub(server->address())->SubmitJob(Context().get(), r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
}

TEST(TuningServerTest, ShutdownKeepsUnfinishedJobsForTheNextStart) {
  TempDir dir;
  ServerOptions options = testing::TestServerOptions(dir);
  std::string id;
  {
    auto server = TuningServer::Start(options).value();
    JobSpec spec;
    spec.workloads = {"GMM:M=32,N=32,K=32"};
    // A full target (a partial one would wait for a worker to complete it); no worker: it waits.
    spec.target = "cpu -cores=1 -vector_bits=128 -fma_per_cycle=1 -l1d_kb=32 -l2_kb=1024 -isa=none";
    spec.max_trials_global = 4;
    id = server->jobs()->Submit(spec).value();
    server->Shutdown();
    server->Shutdown();  // idempotent
  }
  auto server = TuningServer::Start(options).value();
  JobSnapshot snap = server->jobs()->Get(id).value();
  EXPECT_FALSE(IsFinal(snap.row.state));
  EXPECT_EQ(snap.row.target,
            "cpu -cores=1 -vector_bits=128 -fma_per_cycle=1 -l1d_kb=32 -l2_kb=1024 -isa=none");
}

TEST(TuningServerTest, RefusesBadTlsFiles) {
  TempDir dir;
  ServerOptions options = testing::TestServerOptions(dir);
  options.tls_cert_file = dir.Path("missing.pem");
  options.tls_key_file = dir.Path("missing.key");
  EXPECT_EQ(TuningServer::Start(options).status().code(), absl::StatusCode::kNotFound);
  options.tls_cert_file.clear();
  EXPECT_EQ(TuningServer::Start(options).status().code(), absl::StatusCode::kInvalidArgument);
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TuningServerTest, ServesTlsWithATestCa) {
  TempDir dir;
  // A test CA and a server certificate for 127.0.0.1, made with the openssl command.
  std::string d = dir.Path("");
  std::string script =
      "cd '" + d +
      "' && "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 "
      "-subj /CN=tessera-test-ca >/dev/null 2>&1 && "
      "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr "
      "-subj /CN=127.0.0.1 >/dev/null 2>&1 && "
      "printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext && "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
      "-out server.pem -days 1 -extfile san.ext >/dev/null 2>&1";
  if (std::system(script.c_str()) != 0) GTEST_SKIP() << "openssl could not make test certificates";
  ServerOptions options = testing::TestServerOptions(dir);
  options.tls_cert_file = dir.Path("server.pem");
  options.tls_key_file = dir.Path("server.key");
  auto server = TuningServer::Start(options).value();

  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = Read(dir.Path("ca.pem"));
  auto secure =
      v1::TuningService::NewStub(grpc::CreateChannel(server->address(), grpc::SslCredentials(ssl)));
  v1::VersionInfo version;
  ASSERT_TRUE(secure->GetVersion(Context("", 10).get(), v1::Empty(), &version).ok());
  EXPECT_EQ(version.api(), "tessera.v1");
  grpc::Status plain = testing::TuningStub(server->address())
                           ->GetVersion(Context("", 3).get(), v1::Empty(), &version);
  EXPECT_FALSE(plain.ok()) << "a plaintext client cannot talk to a TLS server";
}

// The raw bytes of one ServerReflectionInfo exchange asking to list the services.
std::string ListServicesOverReflection(const std::string& address) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto call = stub.PrepareCall(
      &context, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  void* tag;
  bool ok;
  auto step = [&](intptr_t expected) {
    return cq.Next(&tag, &ok) && ok && reinterpret_cast<intptr_t>(tag) == expected;
  };
  call->StartCall(reinterpret_cast<void*>(1));
  if (!step(1)) return "";
  // ServerReflectionRequest{list_services: ""}: field 7, length-delimited, empty.
  const char request[] = {0x3a, 0x00};
  grpc::Slice slice(request, sizeof(request));
  grpc::ByteBuffer out(&slice, 1);
  call->Write(out, reinterpret_cast<void*>(2));
  if (!step(2)) return "";
  grpc::ByteBuffer in;
  call->Read(&in, reinterpret_cast<void*>(3));
  if (!step(3)) return "";
  std::vector<grpc::Slice> slices;
  if (!in.Dump(&slices).ok()) return "";
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  context.TryCancel();
  grpc::Status finished;
  call->Finish(&finished, reinterpret_cast<void*>(4));
  while (cq.Next(&tag, &ok) && reinterpret_cast<intptr_t>(tag) != 4) {
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return bytes;
}

// grpc.health.v1.Health/Check on `address` in plaintext: the response's status field, or -1.
int HealthStatus(const std::string& address) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  // HealthCheckRequest{service: ""}, the field written out (an empty buffer reads as no message).
  const char request_bytes[] = {0x0a, 0x00};
  grpc::Slice request_slice(request_bytes, sizeof(request_bytes));
  grpc::ByteBuffer request(&request_slice, 1);
  auto call = stub.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", request, &cq);
  call->StartCall();
  grpc::ByteBuffer response;
  grpc::Status status;
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag;
  bool ok;
  int result = -1;
  const bool finished = cq.Next(&tag, &ok) && ok;
  if (finished && status.ok()) {
    std::vector<grpc::Slice> slices;
    std::string bytes;
    if (response.Dump(&slices).ok()) {
      for (const grpc::Slice& s : slices) {
        bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
    // HealthCheckResponse{status}: field 1, varint; an empty message is status 0 (UNKNOWN).
    result = bytes.size() == 2 && bytes[0] == 0x08 ? bytes[1] : (bytes.empty() ? 0 : -1);
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return result;
}

// The health-only plaintext port answers SERVING (1) and serves nothing else.
TEST(TuningServerTest, HealthPortAnswersServingAndNothingElse) {
  TempDir dir;
  ServerOptions options = testing::TestServerOptions(dir);
  options.health_listen = "127.0.0.1:0";
  auto server = TuningServer::Start(options).value();
  ASSERT_GT(server->health_port(), 0);
  const std::string health = "127.0.0.1:" + std::to_string(server->health_port());
  EXPECT_EQ(HealthStatus(health), 1);
  v1::VersionInfo version;
  grpc::Status on_health_port =
      testing::TuningStub(health)->GetVersion(Context().get(), v1::Empty(), &version);
  EXPECT_EQ(on_health_port.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  server->Shutdown();
  EXPECT_EQ(HealthStatus(health), -1);
}

TEST(TuningServerTest, ReflectionListsBothServices) {
  TempDir dir;
  auto server = TuningServer::Start(testing::TestServerOptions(dir)).value();
  std::string listed = ListServicesOverReflection(server->address());
  EXPECT_NE(listed.find("tessera.v1.TuningService"), std::string::npos);
  EXPECT_NE(listed.find("tessera.v1.WorkerService"), std::string::npos);
}

}  // namespace
}  // namespace tessera
