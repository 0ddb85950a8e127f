#include "server/auth.h"

#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tessera {
namespace {

constexpr size_t kMinTokenLength = 16;

// Compares in time independent of where the strings differ.
bool SameToken(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool Contains(const std::set<std::string>& tokens, const std::string& token) {
  bool found = false;
  for (const std::string& t : tokens) found |= SameToken(t, token);
  return found;
}

const char* ScopeName(Scope scope) { return scope == Scope::kClient ? "client" : "worker"; }

}  // namespace

TokenAuth::TokenAuth(std::vector<std::string> client_tokens, std::vector<std::string> worker_tokens)
    : client_(client_tokens.begin(), client_tokens.end()),
      worker_(worker_tokens.begin(), worker_tokens.end()) {}

absl::Status TokenAuth::Check(const std::string& header, Scope scope) const {
  if (!enabled()) return absl::OkStatus();
  absl::string_view value = absl::StripAsciiWhitespace(header);
  if (value.empty()) {
    return absl::UnauthenticatedError(absl::StrCat("this server needs a ", ScopeName(scope),
                                                   " token: \"authorization: Bearer <token>\""));
  }
  if (!absl::ConsumePrefix(&value, "Bearer ") && !absl::ConsumePrefix(&value, "bearer ")) {
    return absl::UnauthenticatedError("authorization: expected \"Bearer <token>\"");
  }
  std::string token(absl::StripAsciiWhitespace(value));
  const std::set<std::string>& own = scope == Scope::kClient ? client_ : worker_;
  const std::set<std::string>& other = scope == Scope::kClient ? worker_ : client_;
  if (Contains(own, token)) return absl::OkStatus();
  if (Contains(other, token)) {
    return absl::PermissionDeniedError(
        absl::StrCat("a ", ScopeName(scope == Scope::kClient ? Scope::kWorker : Scope::kClient),
                     " token cannot call the ", ScopeName(scope), " service"));
  }
  return absl::UnauthenticatedError(absl::StrCat("invalid ", ScopeName(scope), " token"));
}

absl::Status TokenAuth::Check(const grpc::ServerContext& context, Scope scope) const {
  if (!enabled()) return absl::OkStatus();
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  std::string header =
      it == metadata.end() ? "" : std::string(it->second.data(), it->second.size());
  return Check(header, scope);
}

absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("token file ", path, ": cannot read it"));
  std::vector<std::string> tokens;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::string token(absl::StripAsciiWhitespace(line));
    if (token.empty() || token[0] == '#') continue;
    if (token.size() < kMinTokenLength) {
      return absl::InvalidArgumentError(absl::StrCat("token file ", path, ":", number,
                                                     ": a token needs at least ", kMinTokenLength,
                                                     " characters"));
    }
    tokens.push_back(token);
  }
  return tokens;
}

}  // namespace tessera
