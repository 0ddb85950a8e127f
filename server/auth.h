// Bearer tokens in two scopes: client tokens (TuningService: submit and query) and worker
// tokens (WorkerService: register, pull, report). A call carries "authorization: Bearer
// <token>" metadata. When the server has no token at all, every call is let in (a loopback
// server for one user); as soon as it has any, each service requires a token of its own scope,
// so a worker token cannot submit, a client token cannot pull, and a call without a valid token
// gets UNAUTHENTICATED (a valid token of the other scope: PERMISSION_DENIED).
//
// A worker token may name the targets its workers serve. A worker registers only targets its
// token allows, and only a target its token names (with keys, not a bare kind) is *verified*: a
// job's partial target ("cpu", "cpu -cores=2") is completed from verified targets alone, so that
// a worker cannot capture jobs by registering a target it made up (docs/service.md, "Tokens").
#ifndef TESSERA_SERVER_AUTH_H_
#define TESSERA_SERVER_AUTH_H_

#include <grpcpp/server_context.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera {

enum class Scope { kClient, kWorker };

inline constexpr size_t kMinTokenLength = 16;

// A worker token and the targets its workers may register. Each entry is a target string with
// keys (allows and verifies the targets it describes, worker/host.h TargetDescribes: a full
// string exactly that target, one with some keys any target with those values) or a bare kind,
// "cpu" or "cuda" (allows any target of that kind, unverified). No entry: any target,
// unverified.
struct WorkerToken {
  std::string token;
  std::vector<std::string> targets;
};

// May a worker register a target, and is it verified (above)?
struct TargetPermission {
  bool allowed = false;
  bool verified = false;
};

class TokenAuth {
 public:
  TokenAuth() = default;  // no tokens: every call is let in and every target is verified
  // kInvalidArgument when a token is shorter than kMinTokenLength, when one string is both a
  // client and a worker token, or when a target entry does not parse. Errors never echo a token.
  static absl::StatusOr<TokenAuth> Create(std::vector<std::string> client_tokens,
                                          std::vector<WorkerToken> worker_tokens);

  bool enabled() const { return !client_.empty() || !worker_.empty(); }
  // OK, or kUnauthenticated / kPermissionDenied naming the scope needed.
  absl::Status Check(absl::string_view authorization_header, Scope scope) const;
  absl::Status Check(const grpc::ServerContext& context, Scope scope) const;
  // What the worker token in `authorization_header` (which passed Check) allows of
  // `canonical_target`. Without tokens: allowed and verified.
  TargetPermission PermitTarget(absl::string_view authorization_header,
                                const std::string& canonical_target) const;
  TargetPermission PermitTarget(const grpc::ServerContext& context,
                                const std::string& canonical_target) const;
  // Whether a partial target of `kind` can be completed: without tokens always, else when some
  // worker token names a full target of that kind.
  bool CanVerifyKind(const std::string& kind) const;

 private:
  std::vector<std::string> client_;
  std::vector<WorkerToken> worker_;
};

// The value of a call's "authorization" metadata ("" when absent).
std::string AuthorizationHeader(const grpc::ServerContext& context);

// Tokens from a file: one per line; blank lines and lines starting with '#' are skipped. A line
// of a worker token file may name targets after the token: "<token> <target>[; <target>...]"
// (client token files take the token alone). Errors name the file and line and never echo a
// token: a token shorter than kMinTokenLength, a target that does not parse, and a file with no
// token at all (an empty or failed secret mount must not turn authentication off).
absl::StatusOr<std::vector<std::string>> ReadClientTokenFile(const std::string& path);
absl::StatusOr<std::vector<WorkerToken>> ReadWorkerTokenFile(const std::string& path);

// A server interceptor at the service edge: a TuningService or WorkerService call that fails
// its token check gets that check's error, whatever else failed first (a request gRPC could not
// parse is answered UNAUTHENTICATED, not INTERNAL); an authenticated request that did not parse
// gets INVALID_ARGUMENT; every status message is cut to kMaxStatusMessageBytes (error messages
// quote what the caller sent, and an unbounded one exceeds gRPC's metadata limit).
inline constexpr size_t kMaxStatusMessageBytes = 1024;
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewAuthInterceptorFactory(
    const TokenAuth* auth);

// `text` cut to at most `max_bytes` (plus a note of how much was cut), for echoing untrusted
// input in messages and logs.
std::string CutForMessage(absl::string_view text, size_t max_bytes = 256);

}  // namespace tessera

#endif  // TESSERA_SERVER_AUTH_H_
