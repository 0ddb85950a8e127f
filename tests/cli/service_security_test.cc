// The service's security and robustness on loopback (issue 11 §6): bearer tokens with two
// scopes, TLS with a test CA (and client certificates), TLS mistakes as one-line errors and a
// worker with the wrong CA that gives up, and fuzzed requests on every method
// (random field values and random bytes, bounded count, fixed seed) that must leave the
// server alive and its SQLite files sound.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <future>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/message.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/byte_buffer.h"
#include "proto/tessera.grpc.pb.h"
#include "tests/cli/service_test_util.h"
#include "worker/host.h"

namespace tessera {
namespace testing {
namespace {

namespace pb = ::tessera::v1;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

class ServiceSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    cluster_ = std::make_unique<ServiceCluster>(TesseraBinary(), ScratchDir(info->name()));
  }
  std::string WriteFile(const std::string& name, const std::string& text) {
    std::string path = cluster_->dir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // A test CA (ca.pem, ca.key) that signed server.pem/server.key (for 127.0.0.1 and localhost)
  // and client.pem/client.key, and another CA (other.pem) that signed nothing of this, in
  // dir(), with the openssl command.
  void MakeTestCertificates() {
    const std::string d = cluster_->dir();
    WriteFile("server.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
    WriteFile("client.ext", "extendedKeyUsage=clientAuth\n");
    std::vector<std::vector<std::string>> steps = {
        {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", d + "/ca.key", "-out",
         d + "/ca.pem", "-days", "1", "-subj", "/CN=tessera test CA"},
        {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", d + "/other.key", "-out",
         d + "/other.pem", "-days", "1", "-subj", "/CN=another CA"},
        {"req", "-newkey", "rsa:2048", "-nodes", "-keyout", d + "/server.key", "-out",
         d + "/server.csr", "-subj", "/CN=127.0.0.1"},
        {"x509", "-req", "-in", d + "/server.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca.key",
         "-CAcreateserial", "-out", d + "/server.pem", "-days", "1", "-extfile", d + "/server.ext"},
        {"req", "-newkey", "rsa:2048", "-nodes", "-keyout", d + "/client.key", "-out",
         d + "/client.csr", "-subj", "/CN=tessera test client"},
        {"x509", "-req", "-in", d + "/client.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca.key",
         "-CAcreateserial", "-out", d + "/client.pem", "-days", "1", "-extfile", d + "/client.ext"},
    };
    for (std::vector<std::string> step : steps) {
      step.insert(step.begin(), "/usr/bin/openssl");
      CommandResult r = RunCommand(step, 60, d);
      ASSERT_EQ(r.exit_code, 0) << step[1] << ": " << r.err;
    }
  }
  std::unique_ptr<ServiceCluster> cluster_;
};

bool NamesRefusal(const std::string& text) {
  return text.find("UNAUTHENTICATED") != std::string::npos ||
         text.find("PERMISSION_DENIED") != std::string::npos;
}

std::chrono::system_clock::time_point In(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

TEST_F(ServiceSecurityTest, TokensHaveTwoScopes) {
  std::string client_token = WriteFile("client.token", "client-secret-0123456789\n");
  std::string worker_token = WriteFile("worker.token", "worker-secret-0123456789\n");
  // The server's worker token line names the target its workers serve, so that a bare
  // `--target cpu` job may be completed from it.
  std::string worker_tokens = WriteFile(
      "worker.tokens", "worker-secret-0123456789 " + ResolveTarget("cpu")->ToString() + "\n");
  ASSERT_TRUE(
      cluster_
          ->StartServer({"--client-token-file", client_token, "--worker-token-file", worker_tokens})
          .ok())
      << cluster_->Logs();
  CommandResult r = cluster_->RunClient({"jobs"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("UNAUTHENTICATED"), std::string::npos) << r.err;
  r = cluster_->RunClient({"jobs", "--token-file", worker_token});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(NamesRefusal(r.err)) << r.err;
  r = cluster_->RunClient(
      {"submit", "GMM:M=64,N=64,K=64", "--trials", "8", "--token-file", worker_token});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(NamesRefusal(r.err)) << r.err;
  r = cluster_->RunClient({"jobs", "--token-file", client_token});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  // The worker service with the wrong scope, and without a token.
  auto stub = pb::WorkerService::NewStub(
      grpc::CreateChannel(cluster_->address(), grpc::InsecureChannelCredentials()));
  for (const std::string& token : {std::string(), std::string("client-secret-0123456789")}) {
    grpc::ClientContext context;
    context.set_deadline(In(10));
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    pb::PullWorkRequest request;
    request.set_worker_id("worker-1");
    pb::PullWorkResponse response;
    grpc::Status s = stub->PullWork(&context, request, &response);
    EXPECT_TRUE(s.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
                s.error_code() == grpc::StatusCode::PERMISSION_DENIED)
        << "token '" << token << "': " << s.error_code() << " " << s.error_message();
    if (token.empty()) {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    }
  }
  absl::StatusOr<ChildProcess*> refused = cluster_->StartWorker({"--token-file", client_token});
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ((*refused)->Wait(30).value_or(-1), 1) << (*refused)->Stderr();
  EXPECT_TRUE(NamesRefusal((*refused)->Stderr())) << (*refused)->Stderr();

  // Each scope where it belongs: a job runs to its end.
  ASSERT_TRUE(cluster_->StartWorker({"--token-file", worker_token}).ok());
  r = cluster_->RunClient({"submit", "GMM:M=64,N=64,K=64", "--trials", "8", "--trials-per-iter",
                           "8", "--watch", "--token-file", client_token},
                          120);
  EXPECT_EQ(r.exit_code, 0) << r.err << cluster_->Logs();
}

TEST_F(ServiceSecurityTest, TlsOnLoopbackWithATestCaAndClientCertificates) {
  if (access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/openssl";
  ASSERT_NO_FATAL_FAILURE(MakeTestCertificates());
  const std::string d = cluster_->dir();
  ASSERT_TRUE(cluster_
                  ->StartServer({"--tls-cert", d + "/server.pem", "--tls-key", d + "/server.key",
                                 "--tls-client-ca", d + "/ca.pem"})
                  .ok())
      << cluster_->Logs();
  std::vector<std::string> tls = {"--tls-ca",        d + "/ca.pem", "--tls-cert",
                                  d + "/client.pem", "--tls-key",   d + "/client.key"};
  std::vector<std::string> args = {"jobs"};
  args.insert(args.end(), tls.begin(), tls.end());
  CommandResult r = cluster_->RunClient(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = cluster_->RunClient({"jobs", "--rpc-timeout", "5"});
  EXPECT_EQ(r.exit_code, 1) << "plaintext to a TLS server";
  EXPECT_NE(r.err.find("UNAVAILABLE"), std::string::npos) << r.err;
  r = cluster_->RunClient({"jobs", "--tls-ca", d + "/ca.pem", "--rpc-timeout", "5"});
  EXPECT_EQ(r.exit_code, 1) << "no client certificate";
  r = cluster_->RunClient({"jobs", "--tls-ca", d + "/server.pem", "--rpc-timeout", "5"});
  EXPECT_EQ(r.exit_code, 1) << "a CA that did not sign the server's certificate";

  ASSERT_TRUE(cluster_->StartWorker(tls).ok());
  args = {"submit", "GMM:M=64,N=64,K=64", "--trials", "8", "--trials-per-iter", "8", "--watch"};
  args.insert(args.end(), tls.begin(), tls.end());
  r = cluster_->RunClient(args, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err << cluster_->Logs();
}

// TLS files that are missing, not PEM, or a key that is not its certificate's: one line naming
// the flag and the file, from serve, the clients and the worker, before anything connects
// (before, gRPC's own lines and "cannot listen" or "empty address list").
TEST_F(ServiceSecurityTest, TlsMistakesAreOneLineErrorsNamingTheFlagAndFile) {
  if (access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/openssl";
  ASSERT_NO_FATAL_FAILURE(MakeTestCertificates());
  const std::string d = cluster_->dir();
  const std::string garbage = WriteFile("garbage.pem", "not a certificate\n");
  const std::string missing = d + "/missing.pem";
  const std::vector<std::string> serve = {"serve", "--db", d + "/refused.db", "--listen",
                                          "127.0.0.1:0"};
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--tls-cert", d + "/server.pem", "--tls-key", d + "/other.key"},
       "--tls-key " + d + "/other.key: not the key of the certificate in --tls-cert " + d +
           "/server.pem"},
      {{"--tls-cert", garbage, "--tls-key", d + "/server.key"},
       "--tls-cert " + garbage + ": no PEM certificate"},
      {{"--tls-cert", d + "/server.pem", "--tls-key", d + "/server.pem"},
       "--tls-key " + d + "/server.pem: no PEM private key"},
      {{"--tls-cert", d + "/server.pem", "--tls-key", d + "/server.key", "--tls-client-ca",
        missing},
       "--tls-client-ca " + missing + ": cannot read it"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = serve;
    args.insert(args.end(), c.args.begin(), c.args.end());
    ExpectOneLineError(cluster_->Run(args, 30), c.says, absl::StrJoin(args, " "));
  }
  EXPECT_NE(access((d + "/refused.db").c_str(), F_OK), 0) << "refused before opening the database";

  // The clients and the worker, against a server that is not even there.
  const std::vector<Case> client_cases = {
      {{"--tls-ca", garbage}, "--tls-ca " + garbage + ": no PEM certificate"},
      {{"--tls-ca", missing}, "--tls-ca " + missing + ": cannot read it"},
      {{"--tls-ca", d + "/ca.pem", "--tls-cert", d + "/client.pem", "--tls-key", d + "/server.key"},
       "--tls-key " + d + "/server.key: not the key of the certificate in --tls-cert " + d +
           "/client.pem"},
  };
  for (const Case& c : client_cases) {
    for (std::vector<std::string> args : {std::vector<std::string>{"jobs", "--rpc-timeout", "5"},
                                          std::vector<std::string>{"worker"}}) {
      args.insert(args.end(), {"--server", "127.0.0.1:1"});
      args.insert(args.end(), c.args.begin(), c.args.end());
      ExpectOneLineError(cluster_->Run(args, 30), c.says, absl::StrJoin(args, " "));
    }
  }
}

// A worker that trusts another CA fails every handshake: it exits 1 after
// --max-handshake-failures of them in a row, saying why, instead of retrying forever; the
// server logs nothing per failed handshake.
TEST_F(ServiceSecurityTest, AWorkerWithTheWrongCaExitsAfterItsHandshakeFailures) {
  if (access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/openssl";
  ASSERT_NO_FATAL_FAILURE(MakeTestCertificates());
  const std::string d = cluster_->dir();
  ASSERT_TRUE(
      cluster_->StartServer({"--tls-cert", d + "/server.pem", "--tls-key", d + "/server.key"}).ok())
      << cluster_->Logs();
  absl::StatusOr<ChildProcess*> worker =
      cluster_->StartWorker({"--tls-ca", d + "/other.pem", "--max-handshake-failures", "3"});
  ASSERT_TRUE(worker.ok());
  absl::StatusOr<int> code = (*worker)->Wait(60);
  ASSERT_TRUE(code.ok()) << "a worker whose handshakes fail must not retry forever: "
                         << (*worker)->Stderr();
  EXPECT_EQ(*code, 1);
  const std::string log = (*worker)->Stderr();
  const std::string last = log.substr(log.rfind('\n', log.size() - 2) + 1);
  EXPECT_NE(last.find("tessera: error: register with " + cluster_->address() +
                      ": the TLS handshake failed 3 times in a row"),
            std::string::npos)
      << log;
  EXPECT_NE(last.find("certificate verify failed"), std::string::npos) << log;
  EXPECT_NE(last.find("not signed by the CA of --tls-ca " + d + "/other.pem"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("ssl_transport_security"), std::string::npos) << "a raw gRPC line: " << log;
  EXPECT_EQ(cluster_->server()->Stderr().find("andshake failed"), std::string::npos)
      << cluster_->server()->Stderr();

  // The right CA: it registers and keeps serving.
  worker = cluster_->StartWorker({"--tls-ca", d + "/ca.pem", "--max-handshake-failures", "3"});
  ASSERT_TRUE(worker.ok());
  ASSERT_TRUE(WaitUntil(
      [&] { return (*worker)->Stderr().find("registered with") != std::string::npos; }, 30))
      << (*worker)->Stderr();
  EXPECT_TRUE((*worker)->Running());
}

// ---------------------------------------------------------------------------------------------
// Fuzzing

// Ids that exist on the server, so that fuzzed requests also reach past the look-ups.
struct KnownIds {
  std::vector<std::string> values;
};

std::string RandomString(std::mt19937_64& rng, const KnownIds& ids) {
  static const char* const kSamples[] = {"",
                                         "cpu",
                                         "cuda",
                                         "cpu -cores=0",
                                         "cpu -cores=99999999",
                                         "cuda -arch=sm_1",
                                         "GMM:M=8,N=8,K=8",
                                         "GMM:M=-1",
                                         "GMM:M=99999999999,N=1,K=1",
                                         "NOPE",
                                         "GMM:",
                                         ":",
                                         "@prim_func\ndef main(",
                                         "{\"tessera_ir\": 1, \"functions\": [{}]}",
                                         "{}",
                                         "null",
                                         "build_error",
                                         "run_error",
                                         "timeout",
                                         "wrong_output",
                                         "worker_lost",
                                         "bogus_error",
                                         "evolutionary",
                                         "replay",
                                         "xgb",
                                         "random",
                                         "gradient",
                                         "round-robin",
                                         "job-1",
                                         "worker-1",
                                         "lease-1",
                                         "1",
                                         "-1",
                                         "9223372036854775807"};
  switch (rng() % 6) {
    case 0:
    case 1:
      return kSamples[rng() % (sizeof(kSamples) / sizeof(kSamples[0]))];
    case 2:
      if (!ids.values.empty()) return ids.values[rng() % ids.values.size()];
      return "";
    case 3: {  // printable
      std::string s(rng() % 64, ' ');
      for (char& c : s) c = static_cast<char>(32 + rng() % 95);
      return s;
    }
    case 4: {  // any bytes (invalid UTF-8 included)
      std::string s(rng() % 64, '\0');
      for (char& c : s) c = static_cast<char>(rng() % 256);
      return s;
    }
    default:  // long
      return std::string(1 + rng() % 200000, static_cast<char>('a' + rng() % 26));
  }
}

double RandomDouble(std::mt19937_64& rng) {
  static const double kSamples[] = {0,   -1,       1e-9,      1e308, -1e308, 1e-320,
                                    NAN, INFINITY, -INFINITY, 0.001, 3600,   1e10};
  if (rng() % 2) return kSamples[rng() % (sizeof(kSamples) / sizeof(kSamples[0]))];
  return std::uniform_real_distribution<double>(-100, 100)(rng);
}

int64_t RandomInt(std::mt19937_64& rng) {
  static const int64_t kSamples[] = {0,       -1,        1,         2,         8,        64,
                                     1 << 20, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
  if (rng() % 2) return kSamples[rng() % (sizeof(kSamples) / sizeof(kSamples[0]))];
  return static_cast<int64_t>(rng() % 1000) - 100;
}

void FillRandom(Message* m, std::mt19937_64& rng, const KnownIds& ids, int depth) {
  const Descriptor* d = m->GetDescriptor();
  const Reflection* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (rng() % 3 == 0) continue;
    int n = f->is_repeated() ? static_cast<int>(rng() % 4) : 1;
    for (int k = 0; k < n; ++k) {
      bool rep = f->is_repeated();
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT32: {
          int32_t v = static_cast<int32_t>(RandomInt(rng));
          rep ? r->AddInt32(m, f, v) : r->SetInt32(m, f, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_INT64: {
          int64_t v = RandomInt(rng);
          rep ? r->AddInt64(m, f, v) : r->SetInt64(m, f, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_UINT32: {
          uint32_t v = static_cast<uint32_t>(RandomInt(rng));
          rep ? r->AddUInt32(m, f, v) : r->SetUInt32(m, f, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_UINT64: {
          uint64_t v = static_cast<uint64_t>(RandomInt(rng));
          rep ? r->AddUInt64(m, f, v) : r->SetUInt64(m, f, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_DOUBLE: {
          double v = RandomDouble(rng);
          rep ? r->AddDouble(m, f, v) : r->SetDouble(m, f, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_FLOAT: {
          float v = static_cast<float>(RandomDouble(rng));
          rep ? r->AddFloat(m, f, v) : r->SetFloat(m, f, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_BOOL: {
          bool v = rng() % 2;
          rep ? r->AddBool(m, f, v) : r->SetBool(m, f, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_ENUM: {
          int v = static_cast<int>(RandomInt(rng) % 10);
          rep ? r->AddEnumValue(m, f, v) : r->SetEnumValue(m, f, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_STRING: {
          std::string v = RandomString(rng, ids);
          rep ? r->AddString(m, f, v) : r->SetString(m, f, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_MESSAGE:
          if (depth < 3) {
            FillRandom(rep ? r->AddMessage(m, f) : r->MutableMessage(m, f), rng, ids, depth + 1);
          }
          break;
      }
    }
  }
}

// Sends `bytes` as the request of `method` ("/tessera.v1.TuningService/SubmitJob"); the answer
// does not matter, only that one comes.
grpc::Status CallRaw(grpc::GenericStub* stub, const std::string& method, const std::string& bytes,
                     double timeout) {
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  context.set_deadline(In(timeout));
  std::promise<grpc::Status> done;
  stub->UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                  [&done](grpc::Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

TEST_F(ServiceSecurityTest, FuzzedRequestsLeaveTheServerAliveAndTheDatabaseSound) {
  // Invalid UTF-8 in string fields is on purpose: keep protobuf from logging each one.
  google::protobuf::LogSilencer silence;
  ASSERT_TRUE(cluster_->StartServer({"--lease-seconds", "2"}).ok()) << cluster_->Logs();
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  auto channel =
      grpc::CreateCustomChannel(cluster_->address(), grpc::InsecureChannelCredentials(), args);
  auto tuning = pb::TuningService::NewStub(channel);
  auto workers = pb::WorkerService::NewStub(channel);
  KnownIds ids;

  // A real worker, a real job and a real lease, whose ids the fuzzed requests reuse.
  pb::RegisterWorkerRequest reg;
  reg.set_host("fuzz");
  pb::DeviceInfo* device = reg.add_devices();
  device->set_target("cpu -cores=2 -vector_bits=512");
  device->set_name("fuzzed cpu");
  pb::RegisterWorkerResponse registered;
  {
    grpc::ClientContext context;
    context.set_deadline(In(10));
    ASSERT_TRUE(workers->RegisterWorker(&context, reg, &registered).ok());
  }
  ids.values.push_back(registered.worker_id());
  pb::SubmitJobRequest submit;
  submit.add_workloads("GMM:M=32,N=32,K=32");
  submit.set_target("cpu -cores=2 -vector_bits=512");
  submit.set_max_trials(8);
  submit.set_trials_per_iter(8);
  pb::SubmitJobResponse submitted;
  {
    grpc::ClientContext context;
    context.set_deadline(In(10));
    grpc::Status s = tuning->SubmitJob(&context, submit, &submitted);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  ids.values.push_back(submitted.job_id());
  pb::PullWorkResponse pulled;
  {
    pb::PullWorkRequest pull;
    pull.set_worker_id(registered.worker_id());
    pull.set_wait_seconds(20);
    grpc::ClientContext context;
    context.set_deadline(In(30));
    grpc::Status s = workers->PullWork(&context, pull, &pulled);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  ASSERT_TRUE(pulled.has_work()) << cluster_->Logs();
  ids.values.push_back(pulled.batch().lease_id());
  for (const pb::Candidate& c : pulled.batch().candidates()) ids.values.push_back(c.candidate_id());

  std::mt19937_64 rng(20261125);
  // Results for the live lease, every field random except the ids.
  for (int round = 0; round < 20; ++round) {
    pb::ReportResultsRequest report;
    FillRandom(&report, rng, ids, 0);
    report.set_worker_id(registered.worker_id());
    report.set_lease_id(pulled.batch().lease_id());
    for (pb::CandidateResult& r : *report.mutable_results()) {
      if (rng() % 2) {
        r.set_candidate_id(
            pulled.batch().candidates(rng() % pulled.batch().candidates_size()).candidate_id());
      }
    }
    pb::ReportResultsResponse response;
    grpc::ClientContext context;
    context.set_deadline(In(5));
    workers->ReportResults(&context, report, &response);
  }

  grpc::GenericStub generic(channel);
  const google::protobuf::FileDescriptor* file = pb::SubmitJobRequest::descriptor()->file();
  int calls = 0;
  for (int s = 0; s < file->service_count(); ++s) {
    const google::protobuf::ServiceDescriptor* service = file->service(s);
    for (int m = 0; m < service->method_count(); ++m) {
      const google::protobuf::MethodDescriptor* method = service->method(m);
      std::string path = absl::StrCat("/", service->full_name(), "/", method->name());
      double timeout = method->server_streaming() || method->client_streaming() ? 0.5 : 3;
      const Message* prototype =
          google::protobuf::MessageFactory::generated_factory()->GetPrototype(method->input_type());
      for (int round = 0; round < 16; ++round) {
        std::unique_ptr<Message> request(prototype->New());
        FillRandom(request.get(), rng, ids, 0);
        CallRaw(&generic, path, request->SerializeAsString(), timeout);
        std::string bytes(rng() % 512, '\0');
        for (char& c : bytes) c = static_cast<char>(rng() % 256);
        CallRaw(&generic, path, bytes, timeout);
        calls += 2;
      }
    }
    // An oversized message (above the server's 64 MiB limit) must be refused.
    std::string path = absl::StrCat("/", service->full_name(), "/", service->method(0)->name());
    grpc::Status big = CallRaw(&generic, path, std::string((64 << 20) + 1024, 'x'), 30);
    EXPECT_EQ(big.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << path;
    ++calls;
  }
  EXPECT_GT(calls, 400);

  // Alive and answering.
  ASSERT_TRUE(cluster_->server()->Running()) << cluster_->Logs();
  {
    grpc::ClientContext context;
    context.set_deadline(In(10));
    pb::VersionInfo version;
    grpc::Status s = tuning->GetVersion(&context, pb::Empty(), &version);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(version.api(), "tessera.v1");
  }
  {
    grpc::ClientContext context;
    context.set_deadline(In(10));
    pb::JobRef ref;
    ref.set_job_id(submitted.job_id());
    pb::JobStatus job;
    EXPECT_TRUE(tuning->GetJob(&context, ref, &job).ok());
  }
  EXPECT_EQ(cluster_->StopServer(30).value_or(-1), 0) << cluster_->Logs();

  EXPECT_EQ(IntegrityCheck(cluster_->db_path()), "ok");
  EXPECT_EQ(IntegrityCheck(cluster_->db_path() + ".state"), "ok");
  absl::StatusOr<std::vector<StoredRecord>> records = ReadRecords(cluster_->db_path());
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_TRUE(Duplicates(*records).empty());
  for (const StoredRecord& r : *records) {
    if (r.ok) {
      EXPECT_TRUE(std::isfinite(r.mean_secs) && r.mean_secs > 0) << "record " << r.id;
    }
  }
}

TEST_F(ServiceSecurityTest, ServeRefusesTokenSetsThatWouldWeakenIt) {
  const std::string db = cluster_->dir() + "/refused.db";
  const std::string good = "client-secret-0123456789";
  struct Case {
    std::vector<std::string> flags;
    std::string says;
  };
  const std::vector<Case> cases = {
      // A failed secret mount leaves an empty or comment-only file.
      {{"--client-token-file", WriteFile("empty.tok", "")}, "no token"},
      {{"--worker-token-file", WriteFile("comments.tok", "# mounted later\n\n")}, "no token"},
      {{"--client-token", "x"}, "at least 16 characters"},
      {{"--client-token", good, "--worker-token", good}, "also a client token"},
      {{"--worker-token-file", WriteFile("fake.tok", "worker-secret-0123456789 tpu\n")}, "target"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"serve", "--db", db, "--listen", "127.0.0.1:0"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    CommandResult r = cluster_->Run(args, 30);
    const std::string what = absl::StrJoin(c.flags, " ");
    ExpectOneLineError(r, c.says, what);
    EXPECT_EQ(r.err.find(good), std::string::npos) << what << ": echoes a token";
  }
  EXPECT_NE(access(db.c_str(), F_OK), 0) << "a refused token set must not create the database";
}

int64_t ResidentKib(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "VmRSS:")) return std::stoll(line.substr(6));
  }
  return -1;
}

TEST_F(ServiceSecurityTest, UnauthenticatedFuzzedCallsAreRefusedQuietlyAndCheaply) {
  const std::string client = "client-secret-0123456789";
  ASSERT_TRUE(
      cluster_
          ->StartServer({"--client-token", client, "--worker-token", "worker-secret-0123456789"})
          .ok())
      << cluster_->Logs();
  auto channel = grpc::CreateChannel(cluster_->address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  // Warm up (the first calls allocate gRPC's pools), then measure what refusals cost.
  for (int i = 0; i < 20; ++i) CallRaw(&generic, "/tessera.v1.TuningService/GetVersion", "", 5);
  const pid_t pid = cluster_->server()->pid();
  const int64_t rss_before = ResidentKib(pid);
  const int log_before = CountLines(cluster_->server()->Stderr());

  std::mt19937_64 rng(20261128);
  KnownIds ids;
  const google::protobuf::FileDescriptor* file = pb::SubmitJobRequest::descriptor()->file();
  int calls = 0;
  for (int round = 0; round < 40; ++round) {
    for (int s = 0; s < file->service_count(); ++s) {
      const google::protobuf::ServiceDescriptor* service = file->service(s);
      for (int m = 0; m < service->method_count(); ++m) {
        const google::protobuf::MethodDescriptor* method = service->method(m);
        const std::string path = absl::StrCat("/", service->full_name(), "/", method->name());
        const Message* prototype =
            google::protobuf::MessageFactory::generated_factory()->GetPrototype(
                method->input_type());
        std::unique_ptr<Message> request(prototype->New());
        FillRandom(request.get(), rng, ids, 0);
        std::string bytes(rng() % 512, '\0');
        for (char& c : bytes) c = static_cast<char>(rng() % 256);
        // Field 1 as a string that is not UTF-8: protobuf refuses (and would log) it.
        const std::string not_utf8("\x0a\x02\xff\xfe", 4);
        for (const std::string& body : {request->SerializeAsString(), bytes, not_utf8}) {
          grpc::Status got = CallRaw(&generic, path, body, 5);
          EXPECT_EQ(got.error_code(), grpc::StatusCode::UNAUTHENTICATED)
              << path << ": " << got.error_code() << " " << got.error_message();
          ++calls;
        }
      }
    }
  }
  EXPECT_GE(calls, 1000);
  ASSERT_TRUE(cluster_->server()->Running()) << cluster_->Logs();
  const int64_t rss_after = ResidentKib(pid);
  EXPECT_LT(rss_after - rss_before, 64 * 1024)
      << "resident KiB " << rss_before << " -> " << rss_after << " after " << calls << " calls";
  EXPECT_LT(CountLines(cluster_->server()->Stderr()) - log_before, 10)
      << "a log line per refused call:\n"
      << cluster_->server()->Stderr();

  // With a valid token, a body that does not parse is the caller's error, not the server's.
  grpc::GenericStub authed(channel);
  grpc::Slice slice(std::string("\x0a\x02\xff\xfe", 4));
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + client);
  context.set_deadline(In(10));
  std::promise<grpc::Status> done;
  authed.UnaryCall(&context, "/tessera.v1.TuningService/GetJob", grpc::StubOptions(), &request,
                   &response, [&done](grpc::Status s) { done.set_value(std::move(s)); });
  grpc::Status got = done.get_future().get();
  EXPECT_EQ(got.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << got.error_message();
  EXPECT_LT(CountLines(cluster_->server()->Stderr()) - log_before, 10)
      << cluster_->server()->Stderr();
  EXPECT_EQ(cluster_->StopServer(30).value_or(-1), 0) << cluster_->Logs();
  EXPECT_EQ(IntegrityCheck(cluster_->db_path()), "ok");
  EXPECT_EQ(IntegrityCheck(cluster_->db_path() + ".state"), "ok");
}

}  // namespace
}  // namespace testing
}  // namespace tessera
