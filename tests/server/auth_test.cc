#include "server/auth.h"

#include <gtest/gtest.h>

#include <fstream>

#include "server/server.h"
#include "tests/server/server_testing.h"

namespace tessera {
namespace {

using testing::Context;
using testing::TempDir;

constexpr char kClient[] = "client-token-0123456789";
constexpr char kWorker[] = "worker-token-0123456789";

TEST(TokenAuthTest, WithoutTokensEveryCallIsLetIn) {
  TokenAuth auth;
  EXPECT_FALSE(auth.enabled());
  EXPECT_TRUE(auth.Check("", Scope::kClient).ok());
  EXPECT_TRUE(auth.Check("Bearer whatever", Scope::kWorker).ok());
}

TEST(TokenAuthTest, EachScopeTakesOnlyItsTokens) {
  TokenAuth auth({kClient}, {kWorker});
  EXPECT_TRUE(auth.Check(std::string("Bearer ") + kClient, Scope::kClient).ok());
  EXPECT_TRUE(auth.Check(std::string("Bearer ") + kWorker, Scope::kWorker).ok());
  EXPECT_EQ(auth.Check(std::string("Bearer ") + kWorker, Scope::kClient).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(auth.Check(std::string("Bearer ") + kClient, Scope::kWorker).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(auth.Check("", Scope::kClient).code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Check("Bearer nope", Scope::kClient).code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Check(kClient, Scope::kClient).code(), absl::StatusCode::kUnauthenticated)
      << "the Bearer scheme is required";
}

TEST(TokenAuthTest, TokenFilesSkipCommentsAndRefuseShortTokens) {
  TempDir dir;
  std::string path = dir.Path("tokens");
  std::ofstream(path) << "# team A\n\n  " << kClient << "  \n" << kWorker << "\n";
  EXPECT_EQ(ReadTokenFile(path).value(), (std::vector<std::string>{kClient, kWorker}));
  std::ofstream(path) << "short\n";
  absl::StatusOr<std::vector<std::string>> bad = ReadTokenFile(path);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find(path + ":1"), std::string::npos) << bad.status();
  EXPECT_EQ(ReadTokenFile(dir.Path("missing")).status().code(), absl::StatusCode::kNotFound);
}

TEST(TokenAuthTest, ServerRefusesEachScopeWhereItDoesNotBelong) {
  TempDir dir;
  ServerOptions options = testing::TestServerOptions(dir);
  options.client_tokens = {kClient};
  options.worker_tokens = {kWorker};
  auto server = TuningServer::Start(options).value();
  auto tuning = testing::TuningStub(server->address());
  auto workers = testing::WorkerStub(server->address());

  v1::SubmitJobRequest submit;
  submit.add_workloads("GMM:M=32,N=32,K=32");
  submit.set_target("cpu");
  submit.set_max_trials(0);  // invalid: reached only past the token check
  v1::SubmitJobResponse submitted;
  EXPECT_EQ(tuning->SubmitJob(Context().get(), submit, &submitted).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(
      tuning->SubmitJob(Context("wrong-token-0123456789").get(), submit, &submitted).error_code(),
      grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(tuning->SubmitJob(Context(kWorker).get(), submit, &submitted).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(tuning->SubmitJob(Context(kClient).get(), submit, &submitted).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  v1::PullWorkRequest pull;
  pull.set_worker_id("worker-1");
  v1::PullWorkResponse work;
  EXPECT_EQ(workers->PullWork(Context().get(), pull, &work).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(workers->PullWork(Context(kClient).get(), pull, &work).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(workers->PullWork(Context(kWorker).get(), pull, &work).error_code(),
            grpc::StatusCode::NOT_FOUND)
      << "past the token check: the worker is not registered";

  testing::TestWorker worker(server->address(), kWorker);
  EXPECT_TRUE(worker.Register().ok());
  testing::TestWorker impostor(server->address(), kClient);
  EXPECT_EQ(impostor.Register().error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

}  // namespace
}  // namespace tessera
