// Bearer tokens in two scopes: client tokens (TuningService: submit and query) and worker
// tokens (WorkerService: register, pull, report). A call carries "authorization: Bearer
// <token>" metadata. When the server has no token at all, every call is let in (a loopback
// server for one user); as soon as it has any, each service requires a token of its own scope,
// so a worker token cannot submit, a client token cannot pull, and a call without a valid token
// gets UNAUTHENTICATED (a valid token of the other scope: PERMISSION_DENIED).
#ifndef TESSERA_SERVER_AUTH_H_
#define TESSERA_SERVER_AUTH_H_

#include <grpcpp/server_context.h>

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tessera {

enum class Scope { kClient, kWorker };

class TokenAuth {
 public:
  TokenAuth() = default;
  TokenAuth(std::vector<std::string> client_tokens, std::vector<std::string> worker_tokens);
  bool enabled() const { return !client_.empty() || !worker_.empty(); }
  // OK, or kUnauthenticated / kPermissionDenied naming the scope needed.
  absl::Status Check(const std::string& authorization_header, Scope scope) const;
  absl::Status Check(const grpc::ServerContext& context, Scope scope) const;

 private:
  std::set<std::string> client_;
  std::set<std::string> worker_;
};

// Tokens from a file: one per line; blank lines and lines starting with '#' are skipped.
// Errors name the file; a token shorter than 16 characters is refused.
absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path);

}  // namespace tessera

#endif  // TESSERA_SERVER_AUTH_H_
