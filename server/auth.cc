#include "server/auth.h"

#include <grpcpp/support/server_interceptor.h>

#include <fstream>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "ir/target.h"
#include "worker/host.h"

namespace tessera {
namespace {

// Compares in time independent of where the strings differ.
bool SameToken(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

const char* ScopeName(Scope scope) { return scope == Scope::kClient ? "client" : "worker"; }

// The token of a "Bearer <token>" header; nullopt when the header has no bearer token.
std::optional<std::string> BearerToken(absl::string_view header) {
  absl::string_view value = absl::StripAsciiWhitespace(header);
  if (!absl::ConsumePrefix(&value, "Bearer ") && !absl::ConsumePrefix(&value, "bearer ")) {
    return std::nullopt;
  }
  return std::string(absl::StripAsciiWhitespace(value));
}

std::string KindOf(const std::string& target) { return target.substr(0, target.find(' ')); }

// A target entry of a worker token as it is kept: the kind's name and the keys the entry gives,
// as written. Not canonicalized: a key it leaves out takes no default, so that an entry written
// before a kind had that key ("cpu -cores=16 -vector_bits=512" before -l2_kb) still verifies
// its workers' targets (TargetDescribes).
absl::StatusOr<std::string> TargetEntry(const std::string& text) {
  absl::StatusOr<Target> parsed = Target::Parse(text);
  if (!parsed.ok()) return parsed.status();
  std::vector<std::string> words = absl::StrSplit(text, ' ', absl::SkipWhitespace());
  words[0] = parsed->kind_name();
  return absl::StrJoin(words, " ");
}

// The non-comment lines of a token file, with their numbers; an error if there are none.
absl::StatusOr<std::vector<std::pair<int, std::string>>> TokenLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("token file ", path, ": cannot read it"));
  std::vector<std::pair<int, std::string>> lines;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::string text(absl::StripAsciiWhitespace(line));
    if (text.empty() || text[0] == '#') continue;
    lines.emplace_back(number, std::move(text));
  }
  if (lines.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token file ", path,
        ": no token in it (an empty file would turn authentication off; give at least one)"));
  }
  return lines;
}

absl::Status CheckLength(const std::string& token, const std::string& where) {
  if (token.size() >= kMinTokenLength) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": a token needs at least ", kMinTokenLength, " characters"));
}

// The scope a full method name ("/tessera.v1.TuningService/SubmitJob") needs; nullopt for the
// services without tokens (reflection, health).
std::optional<Scope> ScopeOfMethod(absl::string_view method) {
  if (absl::StartsWith(method, "/tessera.v1.TuningService/")) return Scope::kClient;
  if (absl::StartsWith(method, "/tessera.v1.WorkerService/")) return Scope::kWorker;
  return std::nullopt;
}

class AuthInterceptor : public grpc::experimental::Interceptor {
 public:
  AuthInterceptor(const TokenAuth* auth, std::optional<Scope> scope) : auth_(auth), scope_(scope) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA) &&
        scope_.has_value()) {
      std::string header;
      const auto* metadata = methods->GetRecvInitialMetadata();
      auto it = metadata->find("authorization");
      if (it != metadata->end()) header.assign(it->second.data(), it->second.size());
      auth_status_ = auth_->Check(header, *scope_);
    }
    // gRPC hands a request that did not parse on as no message, then answers INTERNAL.
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      if (!received_ && methods->GetRecvMessage() == nullptr) unparsed_ = true;
      received_ = true;
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      grpc::Status status = methods->GetSendStatus();
      if (!auth_status_.ok()) {
        status = grpc::Status(static_cast<grpc::StatusCode>(auth_status_.code()),
                              std::string(auth_status_.message()));
        methods->ModifySendStatus(status);
      } else if (unparsed_ && status.error_code() == grpc::StatusCode::INTERNAL) {
        methods->ModifySendStatus(grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            "request: not a message of this method (bytes that do not parse, or a string field "
            "that is not UTF-8)"));
      } else if (status.error_message().size() > kMaxStatusMessageBytes) {
        methods->ModifySendStatus(grpc::Status(
            status.error_code(), CutForMessage(status.error_message(), kMaxStatusMessageBytes),
            status.error_details()));
      }
    }
    methods->Proceed();
  }

 private:
  const TokenAuth* const auth_;
  const std::optional<Scope> scope_;
  absl::Status auth_status_;
  bool received_ = false;
  bool unparsed_ = false;
};

class AuthInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit AuthInterceptorFactory(const TokenAuth* auth) : auth_(auth) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new AuthInterceptor(auth_,
                               ScopeOfMethod(info->method() == nullptr ? "" : info->method()));
  }

 private:
  const TokenAuth* const auth_;
};

}  // namespace

absl::StatusOr<TokenAuth> TokenAuth::Create(std::vector<std::string> client_tokens,
                                            std::vector<WorkerToken> worker_tokens) {
  for (size_t i = 0; i < client_tokens.size(); ++i) {
    absl::Status length = CheckLength(client_tokens[i], absl::StrCat("client token ", i + 1));
    if (!length.ok()) return length;
  }
  for (size_t i = 0; i < worker_tokens.size(); ++i) {
    WorkerToken& w = worker_tokens[i];
    absl::Status length = CheckLength(w.token, absl::StrCat("worker token ", i + 1));
    if (!length.ok()) return length;
    for (const std::string& client : client_tokens) {
      if (SameToken(client, w.token)) {
        return absl::InvalidArgumentError(
            absl::StrCat("worker token ", i + 1,
                         " is also a client token: the two scopes need different "
                         "tokens, or a worker could submit jobs and a client pull "
                         "work"));
      }
    }
    for (std::string& target : w.targets) {
      absl::StatusOr<std::string> entry = TargetEntry(target);
      if (!entry.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("worker token ", i + 1, ": target: ", entry.status().message()));
      }
      target = *std::move(entry);
    }
  }
  TokenAuth auth;
  auth.client_ = std::move(client_tokens);
  auth.worker_ = std::move(worker_tokens);
  return auth;
}

absl::Status TokenAuth::Check(absl::string_view header, Scope scope) const {
  if (!enabled()) return absl::OkStatus();
  if (absl::StripAsciiWhitespace(header).empty()) {
    return absl::UnauthenticatedError(absl::StrCat("this server needs a ", ScopeName(scope),
                                                   " token: \"authorization: Bearer <token>\""));
  }
  std::optional<std::string> token = BearerToken(header);
  if (!token.has_value()) {
    return absl::UnauthenticatedError("authorization: expected \"Bearer <token>\"");
  }
  bool client = false;
  for (const std::string& t : client_) client |= SameToken(t, *token);
  bool worker = false;
  for (const WorkerToken& w : worker_) worker |= SameToken(w.token, *token);
  if (scope == Scope::kClient ? client : worker) return absl::OkStatus();
  if (client || worker) {
    return absl::PermissionDeniedError(
        absl::StrCat("a ", ScopeName(scope == Scope::kClient ? Scope::kWorker : Scope::kClient),
                     " token cannot call the ", ScopeName(scope), " service"));
  }
  return absl::UnauthenticatedError(absl::StrCat("invalid ", ScopeName(scope), " token"));
}

absl::Status TokenAuth::Check(const grpc::ServerContext& context, Scope scope) const {
  if (!enabled()) return absl::OkStatus();
  return Check(AuthorizationHeader(context), scope);
}

TargetPermission TokenAuth::PermitTarget(absl::string_view header,
                                         const std::string& canonical_target) const {
  if (!enabled()) return {true, true};
  std::optional<std::string> token = BearerToken(header);
  if (!token.has_value()) return {};
  for (const WorkerToken& w : worker_) {
    if (!SameToken(w.token, *token)) continue;
    if (w.targets.empty()) return {true, false};
    TargetPermission permission;
    for (const std::string& entry : w.targets) {
      if (entry == KindOf(canonical_target)) {
        permission.allowed = true;
      } else if (TargetDescribes(entry, canonical_target)) {
        return {true, true};
      }
    }
    return permission;
  }
  return {};
}

TargetPermission TokenAuth::PermitTarget(const grpc::ServerContext& context,
                                         const std::string& canonical_target) const {
  return PermitTarget(AuthorizationHeader(context), canonical_target);
}

bool TokenAuth::CanVerifyKind(const std::string& kind) const {
  if (!enabled()) return true;
  for (const WorkerToken& w : worker_) {
    for (const std::string& entry : w.targets) {
      if (entry != kind && KindOf(entry) == kind) return true;
    }
  }
  return false;
}

std::string AuthorizationHeader(const grpc::ServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  return it == metadata.end() ? "" : std::string(it->second.data(), it->second.size());
}

absl::StatusOr<std::vector<std::string>> ReadClientTokenFile(const std::string& path) {
  absl::StatusOr<std::vector<std::pair<int, std::string>>> lines = TokenLines(path);
  if (!lines.ok()) return lines.status();
  std::vector<std::string> tokens;
  for (const auto& [number, text] : *lines) {
    const std::string where = absl::StrCat("token file ", path, ":", number);
    if (text.find_first_of(" \t") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": a client token line holds the token alone"));
    }
    absl::Status length = CheckLength(text, where);
    if (!length.ok()) return length;
    tokens.push_back(text);
  }
  return tokens;
}

absl::StatusOr<std::vector<WorkerToken>> ReadWorkerTokenFile(const std::string& path) {
  absl::StatusOr<std::vector<std::pair<int, std::string>>> lines = TokenLines(path);
  if (!lines.ok()) return lines.status();
  std::vector<WorkerToken> tokens;
  for (const auto& [number, text] : *lines) {
    const std::string where = absl::StrCat("token file ", path, ":", number);
    WorkerToken token;
    const size_t space = text.find_first_of(" \t");
    token.token = text.substr(0, space);
    absl::Status length = CheckLength(token.token, where);
    if (!length.ok()) return length;
    if (space != std::string::npos) {
      for (absl::string_view part : absl::StrSplit(text.substr(space + 1), ';')) {
        std::string target(absl::StripAsciiWhitespace(part));
        if (target.empty()) continue;
        absl::StatusOr<std::string> entry = TargetEntry(target);
        if (!entry.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ": target: ", entry.status().message()));
        }
        token.targets.push_back(*std::move(entry));
      }
    }
    tokens.push_back(std::move(token));
  }
  return tokens;
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewAuthInterceptorFactory(
    const TokenAuth* auth) {
  return std::make_unique<AuthInterceptorFactory>(auth);
}

std::string CutForMessage(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  // Back off to a UTF-8 character boundary so that the cut text stays valid UTF-8.
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return absl::StrCat(text.substr(0, end), "... (", text.size() - end, " more bytes)");
}

}  // namespace tessera
