// What the commands that talk to a tuning server share (`submit`, `jobs`, `status`, `watch`,
// `cancel`, `worker`, and `best`/`topk`/`apply --server`): the connection options, the
// channel with its credentials (TLS or plaintext), the bearer token on every call, and
// one-line errors that name the gRPC status code.
#ifndef TESSERA_CLI_CLIENT_H_
#define TESSERA_CLI_CLIENT_H_

#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/common.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"
#include "worker/grpc_status.h"

namespace tessera {
namespace cli {

struct ClientOptions {
  std::string server;      // host:port
  std::string token_file;  // a file holding the bearer token
  std::string tls_ca;      // PEM file of the CA that signed the server's certificate: use TLS
  std::string tls_cert;    // PEM client certificate and key, for servers that ask for one
  std::string tls_key;
  double timeout = 30;  // seconds per call (streams excepted)

  // Adds --server (required unless `server_optional`), --token-file, --tls-ca, --tls-cert,
  // --tls-key and --rpc-timeout.
  void AddOptions(CLI::App* app, bool server_optional = false);
};

// A connected client: the channel and the token read from --token-file.
struct Client {
  std::shared_ptr<grpc::Channel> channel;
  std::string token;
  double timeout = 30;
  std::string server;

  // Sets the deadline (`timeout` seconds, or none when <= 0) and the bearer token.
  void Prepare(grpc::ClientContext* context, double timeout_override = -1) const;
};

// Reads the token and certificate files and makes the channel (nothing is sent yet). Errors
// name the file that cannot be read, or the option missing (--tls-cert without --tls-key).
absl::StatusOr<Client> Connect(const ClientOptions& options);

// The bearer token in `path`, whitespace trimmed; kInvalidArgument when it is empty.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// Reports a failed call as one line, "tessera: error: <what>: <CODE>: <message>"; returns 1.
int ReportRpcError(const grpc::Status& status, const std::string& what);

// What to send as a workload of SubmitJob/GetBest/ApplyBest: the content of a file (IR text or
// JSON) or the spec as given ("GMM:M=128,N=128,K=128").
absl::StatusOr<std::string> WorkloadForServer(const std::string& spec);

// The bytes of the model file `path`, for SubmitJobRequest.model (the server imports them).
absl::StatusOr<std::string> ModelForServer(const std::string& path);

}  // namespace cli
}  // namespace tessera

#endif  // TESSERA_CLI_CLIENT_H_
