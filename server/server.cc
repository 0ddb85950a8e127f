#include "server/server.h"

#include <google/protobuf/stubs/logging.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "server/tls.h"

namespace tessera {
namespace {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerOptions& o) {
  if (o.tls_cert_file.empty()) {
    if (!o.tls_key_file.empty() || !o.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError("--tls-key and --tls-client-ca need --tls-cert");
    }
    return grpc::InsecureServerCredentials();
  }
  if (o.tls_key_file.empty()) return absl::InvalidArgumentError("--tls-cert needs --tls-key");
  grpc::SslServerCredentialsOptions ssl;
  TESSERA_ASSIGN_OR_RETURN(TlsKeyPair pair, ReadTlsKeyPair({"--tls-cert", o.tls_cert_file},
                                                           {"--tls-key", o.tls_key_file}));
  ssl.pem_key_cert_pairs.push_back({pair.private_key, pair.cert_chain});
  if (!o.tls_client_ca_file.empty()) {
    TESSERA_ASSIGN_OR_RETURN(ssl.pem_root_certs,
                             ReadTlsCertificates({"--tls-client-ca", o.tls_client_ca_file}));
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

// protobuf logs each request it cannot parse (a string field that is not UTF-8) at ERROR: one
// line per refused call, written by whoever sends garbage. Those calls are answered
// (INVALID_ARGUMENT, or UNAUTHENTICATED without a token) and counted in the RPC metrics; the
// rest of protobuf's messages still reach the log.
void LogProtobufMessage(google::protobuf::LogLevel level, const char* file, int line,
                        const std::string& message) {
  if (message.find("when parsing a protocol buffer") != std::string::npos) return;
  const LogLevel ours =
      level >= google::protobuf::LOGLEVEL_ERROR ? LogLevel::kError : LogLevel::kWarning;
  if (ours < MinLogLevel()) return;
  internal::LogMessage(ours, file, line).stream() << "protobuf: " << message;
}

}  // namespace

TuningServer::~TuningServer() {
  Shutdown();
  // The parts the metrics sample are destroyed before the metrics: no scrape may read them.
  if (metrics_ != nullptr) metrics_->SetSources(nullptr, nullptr);
}

absl::StatusOr<std::unique_ptr<TuningServer>> TuningServer::Start(ServerOptions options) {
  if (options.db_path.empty()) return absl::InvalidArgumentError("give the records database");
  if (options.state_path.empty()) {
    // With PostgreSQL records the state shares their database (so servers on it share jobs).
    options.state_path =
        IsPostgresUrl(options.db_path) ? options.db_path : options.db_path + ".state";
  }
  std::unique_ptr<TuningServer> s(new TuningServer());
  s->options_ = options;
  // Tokens and TLS files first: a server with a bad token set or TLS file must not open or
  // migrate any database.
  TESSERA_ASSIGN_OR_RETURN(s->auth_,
                           TokenAuth::Create(options.client_tokens, options.worker_tokens));
  TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> creds, Credentials(options));
  s->metrics_ = std::make_unique<ServerMetrics>();
  options.dispatcher.metrics = s->metrics_.get();
  absl::StatusOr<std::unique_ptr<Database>> db = OpenDatabase(options.db_path);
  if (!db.ok()) {
    return absl::Status(db.status().code(),
                        absl::StrCat("database ", options.db_path, ": ", db.status().message()));
  }
  s->db_ = *std::move(db);
  TESSERA_ASSIGN_OR_RETURN(s->store_, JobStore::Open(options.state_path));
  s->dispatcher_ = NewDispatcher(s->store_.get(), options.dispatcher);
  s->jobs_ = std::make_unique<JobManager>(s->db_.get(), s->store_.get(), s->dispatcher_.get(),
                                          options.jobs);
  s->tuning_service_ = std::make_unique<TuningServiceImpl>(s->jobs_.get(), s->dispatcher_.get(),
                                                           s->db_.get(), &s->auth_);
  s->worker_service_ = std::make_unique<WorkerServiceImpl>(s->dispatcher_.get(), &s->auth_);
  s->metrics_->SetSources(s->jobs_.get(), s->dispatcher_.get());
  if (!options.metrics_listen.empty()) {
    absl::Status listening = s->metrics_->Listen(options.metrics_listen);
    if (!listening.ok()) {
      s->jobs_->Shutdown();
      return absl::UnavailableError(absl::StrCat(listening.message(), " (--metrics-listen)"));
    }
  }

  google::protobuf::SetLogHandler(&LogProtobufMessage);
  QuietTlsHandshakeLogs();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  // Every server built from here on serves grpc.health.v1.Health (SERVING while it runs).
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default: a second server would silently share the port.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(options.listen, creds, &s->port_);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.RegisterService(s->tuning_service_.get());
  builder.RegisterService(s->worker_service_.get());
  s->reflection_v1_ = std::make_unique<ReflectionV1Service>();
  s->reflection_v1_->AddTo(&builder);
  // The auth interceptor first, so that the timers count the status the caller gets.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(NewAuthInterceptorFactory(&s->auth_));
  interceptors.push_back(s->metrics_->NewRpcInterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    s->server_.reset();
    s->jobs_->Shutdown();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen));
  }
  std::string host = options.listen.substr(0, options.listen.rfind(':'));
  s->address_ = absl::StrCat(host, ":", s->port_);
  if (!options.health_listen.empty()) {
    grpc::ServerBuilder health;
    health.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    health.AddListeningPort(options.health_listen, grpc::InsecureServerCredentials(),
                            &s->health_port_);
    s->health_server_ = health.BuildAndStart();
    if (s->health_server_ == nullptr || s->health_port_ == 0) {
      s->health_server_.reset();
      s->server_->Shutdown();
      s->jobs_->Shutdown();
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", options.health_listen, " (--health-listen)"));
    }
  }
  TESSERA_RETURN_IF_ERROR(s->jobs_->ResumeAll());
  TESSERA_LOG(INFO) << "serving on " << s->address_ << ", records " << options.db_path << ", state "
                    << options.state_path << (s->auth_.enabled() ? ", tokens required" : "")
                    << (options.tls_cert_file.empty() ? "" : ", TLS");
  return s;
}

void TuningServer::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return shut_down_; });
}

void TuningServer::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_ || server_ == nullptr) return;
  }
  TESSERA_LOG(INFO) << "shutting down";
  // No new leases, long polls answer at once, job threads stop at their next wait (and leave
  // their jobs for the next start).
  jobs_->Stop();
  dispatcher_->Shutdown();
  tuning_service_->Stop();
  if (health_server_ != nullptr) health_server_->Shutdown();
  // Stop accepting calls; give those in flight (reports, watches) a moment to finish.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  // Join the job threads: a commit in progress completes; batches in flight stay stored.
  jobs_->Shutdown();
  server_->Wait();
  {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
  }
  cv_.notify_all();
  TESSERA_LOG(INFO) << "shut down";
}

}  // namespace tessera
