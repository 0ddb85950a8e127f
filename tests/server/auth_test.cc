#include "server/auth.h"

#include <gtest/gtest.h>

#include <fstream>

#include "ir/target.h"
#include "server/server.h"
#include "tests/server/server_testing.h"
#include "tests/testing/wait_until.h"

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

TokenAuth Auth(std::vector<std::string> client, std::vector<WorkerToken> worker) {
  absl::StatusOr<TokenAuth> auth = TokenAuth::Create(std::move(client), std::move(worker));
  EXPECT_TRUE(auth.ok()) << auth.status();
  return auth.ok() ? *std::move(auth) : TokenAuth();
}

TEST(TokenAuthTest, EachScopeTakesOnlyItsTokens) {
  TokenAuth auth = Auth({kClient}, {{kWorker, {}}});
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
  EXPECT_EQ(ReadClientTokenFile(path).value(), (std::vector<std::string>{kClient, kWorker}));
  std::ofstream(path) << "short\n";
  absl::StatusOr<std::vector<std::string>> bad = ReadClientTokenFile(path);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find(path + ":1"), std::string::npos) << bad.status();
  EXPECT_EQ(bad.status().message().find("short"), std::string::npos) << "echoes the token";
  EXPECT_EQ(ReadClientTokenFile(dir.Path("missing")).status().code(), absl::StatusCode::kNotFound);
}

TEST(TokenAuthTest, ATokenFileWithoutATokenIsAnError) {
  // A failed secret mount leaves an empty file: it must not turn authentication off.
  TempDir dir;
  std::string path = dir.Path("tokens");
  for (const char* text : {"", "\n\n", "# only a comment\n  \n"}) {
    std::ofstream(path) << text;
    absl::StatusOr<std::vector<std::string>> client = ReadClientTokenFile(path);
    EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument) << "'" << text << "'";
    EXPECT_NE(client.status().message().find("no token"), std::string::npos) << client.status();
    EXPECT_EQ(ReadWorkerTokenFile(path).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(TokenAuthTest, ShortTokensAndATokenInBothScopesAreRefused) {
  absl::StatusOr<TokenAuth> one_char = TokenAuth::Create({"x"}, {});
  EXPECT_EQ(one_char.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(one_char.status().message().find("client token 1"), std::string::npos);
  EXPECT_EQ(TokenAuth::Create({kClient}, {{"fifteen-chars-x", {}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<TokenAuth> shared = TokenAuth::Create({kClient}, {{kClient, {}}});
  EXPECT_EQ(shared.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(shared.status().message().find("also a client token"), std::string::npos);
  EXPECT_EQ(shared.status().message().find(kClient), std::string::npos) << "echoes the token";
  EXPECT_TRUE(TokenAuth::Create({kClient}, {{kWorker, {}}}).ok());
}

TEST(TokenAuthTest, WorkerTokenLinesNameTheTargetsTheirWorkersMayServe) {
  TempDir dir;
  std::string path = dir.Path("tokens");
  std::ofstream(path) << kWorker << "  cpu -cores=2 -vector_bits=512; cuda\n"
                      << "any-target-token-0123\n";
  absl::StatusOr<std::vector<WorkerToken>> tokens = ReadWorkerTokenFile(path);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 2u);
  EXPECT_EQ((*tokens)[0].token, kWorker);
  EXPECT_EQ((*tokens)[0].targets,
            (std::vector<std::string>{"cpu -cores=2 -vector_bits=512", "cuda"}));
  EXPECT_TRUE((*tokens)[1].targets.empty());
  std::ofstream(path) << kWorker << " tpu\n";
  EXPECT_EQ(ReadWorkerTokenFile(path).status().code(), absl::StatusCode::kInvalidArgument);
  std::ofstream(path) << kClient << " cpu\n";
  EXPECT_EQ(ReadClientTokenFile(path).status().code(), absl::StatusCode::kInvalidArgument)
      << "client tokens name no targets";

  TokenAuth auth = Auth({kClient}, *tokens);
  const std::string bearer = std::string("Bearer ") + kWorker;
  const std::string cpu512 = Target::Parse("cpu -cores=2 -vector_bits=512")->ToString();
  const std::string cpu256 = Target::Parse("cpu -cores=1 -vector_bits=256")->ToString();
  const std::string h100 = Target::Parse("cuda -arch=sm_90")->ToString();
  EXPECT_TRUE(auth.PermitTarget(bearer, cpu512).allowed);
  EXPECT_TRUE(auth.PermitTarget(bearer, cpu512).verified);
  EXPECT_FALSE(auth.PermitTarget(bearer, cpu256).allowed) << "a cpu target the token does not name";
  // The entry gives two keys: a worker's target with the values it gives and any others (its
  // core's, as the worker detected them) is the one it names.
  EXPECT_TRUE(auth.PermitTarget(bearer,
                                "cpu -cores=2 -vector_bits=512 -fma_per_cycle=2 "
                                "-l1d_kb=48 -l2_kb=2048 -isa=avx2+fma+avx512f")
                  .verified);
  EXPECT_TRUE(auth.PermitTarget(bearer, h100).allowed);
  EXPECT_FALSE(auth.PermitTarget(bearer, h100).verified) << "a bare kind allows, never verifies";
  const TargetPermission any = auth.PermitTarget("Bearer any-target-token-0123", cpu256);
  EXPECT_TRUE(any.allowed);
  EXPECT_FALSE(any.verified);
  EXPECT_TRUE(auth.CanVerifyKind("cpu"));
  EXPECT_FALSE(auth.CanVerifyKind("cuda"));
  EXPECT_TRUE(TokenAuth().CanVerifyKind("cuda")) << "without tokens every target is verified";
  EXPECT_TRUE(TokenAuth().PermitTarget("", cpu256).verified);
}

TEST(TokenAuthTest, CutForMessageBoundsWhatItEchoes) {
  EXPECT_EQ(CutForMessage("short"), "short");
  const std::string cut = CutForMessage(std::string(100000, 'x'), 100);
  EXPECT_LT(cut.size(), 130u);
  EXPECT_NE(cut.find("99900 more bytes"), std::string::npos) << cut;
  // A multi-byte character is never split.
  const std::string cut_utf8 = CutForMessage("ab\xc3\xa9", 3);
  EXPECT_EQ(cut_utf8.substr(0, 3), "ab.");
}

TEST(TokenAuthTest, ServerRefusesEachScopeWhereItDoesNotBelong) {
  TempDir dir;
  ServerOptions options = testing::TestServerOptions(dir);
  options.client_tokens = {kClient};
  options.worker_tokens = {{kWorker, {}}};
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

TEST(TokenAuthTest, ErrorMessagesEchoNoUnboundedInput) {
  TempDir dir;
  ServerOptions options = testing::TestServerOptions(dir);
  options.client_tokens = {kClient};
  auto server = TuningServer::Start(options).value();
  auto tuning = testing::TuningStub(server->address());
  v1::JobRef ref;
  ref.set_job_id(std::string(100000, 'x'));
  v1::JobStatus job;
  grpc::Status got = tuning->GetJob(Context(kClient).get(), ref, &job);
  EXPECT_EQ(got.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << got.error_message();
  EXPECT_LT(got.error_message().size(), 300u);
  // A message built from a long workload spec is cut at the edge.
  v1::SubmitJobRequest submit;
  submit.add_workloads("GMM:M=32,N=32,K=32," + std::string(100000, 'y'));
  submit.set_target("cpu");
  submit.set_max_trials(8);
  v1::SubmitJobResponse submitted;
  got = tuning->SubmitJob(Context(kClient).get(), submit, &submitted);
  EXPECT_EQ(got.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << got.error_message().size();
  EXPECT_LE(got.error_message().size(), kMaxStatusMessageBytes + 40);
}

TEST(TokenAuthTest, JobsBeyondTheServerLimitsAreRefusedNamingTheLimit) {
  TempDir dir;
  ServerOptions options = testing::TestServerOptions(dir);
  options.jobs.max_buffer_bytes = int64_t{1} << 30;
  auto server = TuningServer::Start(options).value();
  auto tuning = testing::TuningStub(server->address());
  for (const char* workload :
       {"GMM:M=65536,N=65536,K=65536", "GMM:M=2147483647,N=2147483647,K=2147483647"}) {
    v1::SubmitJobRequest submit;
    submit.add_workloads(workload);
    submit.set_target("cpu -cores=2 -vector_bits=512");
    submit.set_max_trials(8);
    v1::SubmitJobResponse submitted;
    grpc::Status got = tuning->SubmitJob(Context().get(), submit, &submitted);
    EXPECT_EQ(got.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << workload;
    EXPECT_NE(got.error_message().find("--max-buffer-bytes"), std::string::npos)
        << got.error_message();
  }
  v1::SubmitJobRequest submit;
  submit.add_workloads("GMM:M=64,N=64,K=64");
  submit.set_target("cpu -cores=2 -vector_bits=512");
  submit.set_max_trials(8);
  submit.set_max_trials_per_task(9);
  v1::SubmitJobResponse submitted;
  grpc::Status got = tuning->SubmitJob(Context().get(), submit, &submitted);
  EXPECT_EQ(got.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(got.error_message().find("max_trials_per_task"), std::string::npos);
  submit.set_max_trials_per_task(0);
  submit.set_max_trials(options.jobs.max_trials + 1);
  got = tuning->SubmitJob(Context().get(), submit, &submitted);
  EXPECT_NE(got.error_message().find("--max-job-trials"), std::string::npos) << got.error_message();
}

TEST(TokenAuthTest, ABareKindResolvesOnlyFromTargetsATokenNames) {
  TempDir dir;
  ServerOptions options = testing::TestServerOptions(dir);
  const std::string bound_token = "bound-worker-token-0123";
  const std::string any_token = "any-target-worker-token";
  const std::string real = Target::Parse("cpu -cores=2 -vector_bits=512")->ToString();
  const std::string fake = Target::Parse("cpu -cores=1 -vector_bits=256")->ToString();
  options.client_tokens = {kClient};
  options.worker_tokens = {{bound_token, {real}}, {any_token, {}}};
  auto server = TuningServer::Start(options).value();
  auto tuning = testing::TuningStub(server->address());

  testing::TestWorker forger(server->address(), bound_token);
  EXPECT_EQ(forger.Register(fake).error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << "a target its token does not name";
  // A worker of an unbound token registers first, with a made-up target ...
  testing::TestWorker unverified(server->address(), any_token);
  ASSERT_TRUE(unverified.Register(fake).ok());
  testing::TestWorker verified(server->address(), bound_token);
  ASSERT_TRUE(verified.Register(real).ok());
  // ... and a bare "cpu" job still resolves to the target a token names.
  v1::SubmitJobRequest submit;
  submit.add_workloads("GMM:M=32,N=32,K=32");
  submit.set_target("cpu");
  submit.set_max_trials(4);
  submit.set_trials_per_iter(4);
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(tuning->SubmitJob(Context(kClient).get(), submit, &submitted).ok());
  v1::JobRef ref;
  ref.set_job_id(submitted.job_id());
  v1::JobStatus job;
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        return tuning->GetJob(Context(kClient).get(), ref, &job).ok() && !job.target().empty() &&
               job.target() != "cpu";
      },
      30));
  EXPECT_EQ(job.target(), real);
  tuning->CancelJob(Context(kClient).get(), ref, &job);

  // Where no worker token names a cuda target, a bare "cuda" job is refused at once.
  submit.set_target("cuda");
  grpc::Status refused = tuning->SubmitJob(Context(kClient).get(), submit, &submitted);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("full target string"), std::string::npos)
      << refused.error_message();
}

}  // namespace
}  // namespace tessera
