#include "cli/client.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "base/utf8.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "server/tls.h"

namespace tessera {
namespace cli {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, const std::string& option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(option, ": cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

void ClientOptions::AddOptions(CLI::App* app, bool server_optional) {
  CLI::Option* s = app->add_option("--server", server, "Address of the tuning server, HOST:PORT");
  if (!server_optional) s->required();
  app->add_option("--token-file", token_file,
                  "File holding the bearer token (when the server requires tokens)");
  app->add_option("--tls-ca", tls_ca,
                  "PEM file of the CA that signed the server's certificate (connect with TLS)");
  app->add_option("--tls-cert", tls_cert,
                  "PEM client certificate, for a server that requires one (with --tls-key)");
  app->add_option("--tls-key", tls_key, "PEM private key of --tls-cert");
  app->add_option("--rpc-timeout", timeout, "Seconds before a call to the server gives up")
      ->capture_default_str();
}

void Client::Prepare(grpc::ClientContext* context, double timeout_override) const {
  double seconds = timeout_override >= 0 ? timeout_override : timeout;
  if (seconds > 0) {
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::duration_cast<std::chrono::system_clock::duration>(
                              std::chrono::duration<double>(seconds)));
  }
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::string text, ReadFile(path, "--token-file"));
  std::string token(absl::StripAsciiWhitespace(text));
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--token-file: ", path, " is empty"));
  }
  return token;
}

absl::StatusOr<Client> Connect(const ClientOptions& options) {
  if (options.server.empty()) return absl::InvalidArgumentError("--server: no address given");
  Client client;
  client.server = options.server;
  client.timeout = options.timeout;
  if (!options.token_file.empty()) {
    TESSERA_ASSIGN_OR_RETURN(client.token, ReadTokenFile(options.token_file));
  }
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (!options.tls_ca.empty() || !options.tls_cert.empty()) {
    QuietTlsHandshakeLogs();
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca.empty()) {
      TESSERA_ASSIGN_OR_RETURN(ssl.pem_root_certs,
                               ReadTlsCertificates({"--tls-ca", options.tls_ca}));
    }
    if (!options.tls_cert.empty()) {
      TESSERA_ASSIGN_OR_RETURN(TlsKeyPair pair, ReadTlsKeyPair({"--tls-cert", options.tls_cert},
                                                               {"--tls-key", options.tls_key}));
      ssl.pem_cert_chain = std::move(pair.cert_chain);
      ssl.pem_private_key = std::move(pair.private_key);
    }
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  // Records and applied IR can exceed gRPC's 4 MiB default.
  args.SetMaxReceiveMessageSize(64 << 20);
  client.channel = grpc::CreateCustomChannel(options.server, credentials, args);
  return client;
}

int ReportRpcError(const grpc::Status& status, const std::string& what) {
  return ReportError(FromGrpcStatus(status, what));
}

absl::StatusOr<std::string> WorkloadForServer(const std::string& spec) {
  if (!IsRegularFile(spec)) return spec;
  if (absl::EndsWith(spec, ".onnx")) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload ", spec,
                     ": an ONNX model; a job tunes one model or workloads (specs, IR text or "
                     "JSON), not both: `tessera submit ",
                     spec, "` alone submits the model"));
  }
  TESSERA_ASSIGN_OR_RETURN(std::string text, ReadFile(spec, "workload"));
  if (!IsUtf8(text)) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload ", spec, ": not text (a workload file holds IR text or JSON)"));
  }
  return text;
}

absl::StatusOr<std::string> ModelForServer(const std::string& path) {
  return ReadFile(path, "model");
}

}  // namespace cli
}  // namespace tessera
