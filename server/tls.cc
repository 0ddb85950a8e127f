#include "server/tls.h"

#include <grpc/support/log.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"

namespace tessera {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Certificate = std::unique_ptr<X509, X509Free>;
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;

std::string FlagAndPath(const TlsFile& file) { return absl::StrCat(file.flag, " ", file.path); }

absl::StatusOr<std::string> ReadText(const TlsFile& file) {
  std::ifstream in(file.path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(FlagAndPath(file), ": cannot read it (", std::strerror(errno), ")"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Bio MemoryBio(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// OpenSSL's reason for the last failure, and its error queue emptied (gRPC reads it too).
std::string OpenSslReason() {
  const unsigned long code = ERR_peek_last_error();
  const char* reason = code != 0 ? ERR_reason_error_string(code) : nullptr;
  ERR_clear_error();
  return reason != nullptr ? reason : "unknown error";
}

// Encrypted keys would make OpenSSL prompt on the terminal; gRPC cannot use them either.
int NoPassphrase(char*, int, int, void*) { return -1; }

// The certificates of `text` in order; an error names `file`.
absl::StatusOr<std::vector<Certificate>> ParseCertificates(const TlsFile& file,
                                                           const std::string& text) {
  if (!absl::StrContains(text, "-----BEGIN CERTIFICATE-----")) {
    return absl::InvalidArgumentError(absl::StrCat(
        FlagAndPath(file), ": no PEM certificate in it (no -----BEGIN CERTIFICATE----- line)"));
  }
  std::vector<Certificate> certificates;
  Bio bio = MemoryBio(text);
  size_t begin = text.find("-----BEGIN CERTIFICATE-----");
  while (begin != std::string::npos) {
    Certificate c(PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr));
    if (c == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(FlagAndPath(file), ": certificate ",
                                                     certificates.size() + 1, " does not parse (",
                                                     OpenSslReason(), ")"));
    }
    certificates.push_back(std::move(c));
    begin = text.find("-----BEGIN CERTIFICATE-----", begin + 1);
  }
  return certificates;
}

void LogGrpcLine(gpr_log_func_args* args) {
  if (absl::StrContains(args->message, "andshake failed") ||
      absl::StrContains(args->message, "No match found for server name")) {
    return;
  }
  const LogLevel level = args->severity == GPR_LOG_SEVERITY_ERROR  ? LogLevel::kError
                         : args->severity == GPR_LOG_SEVERITY_INFO ? LogLevel::kInfo
                                                                   : LogLevel::kDebug;
  if (level < MinLogLevel()) return;
  internal::LogMessage(level, args->file, args->line).stream() << "grpc: " << args->message;
}

}  // namespace

absl::StatusOr<std::string> ReadTlsCertificates(const TlsFile& file) {
  absl::StatusOr<std::string> text = ReadText(file);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<Certificate>> certificates = ParseCertificates(file, *text);
  if (!certificates.ok()) return certificates.status();
  return text;
}

absl::StatusOr<TlsKeyPair> ReadTlsKeyPair(const TlsFile& cert, const TlsFile& key) {
  TlsKeyPair pair;
  absl::StatusOr<std::string> chain = ReadText(cert);
  if (!chain.ok()) return chain.status();
  absl::StatusOr<std::vector<Certificate>> certificates = ParseCertificates(cert, *chain);
  if (!certificates.ok()) return certificates.status();
  absl::StatusOr<std::string> key_text = ReadText(key);
  if (!key_text.ok()) return key_text.status();
  if (!absl::StrContains(*key_text, "PRIVATE KEY-----")) {
    return absl::InvalidArgumentError(absl::StrCat(
        FlagAndPath(key), ": no PEM private key in it (no -----BEGIN ... PRIVATE KEY----- line)"));
  }
  Bio bio = MemoryBio(*key_text);
  Key parsed(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr));
  if (parsed == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(FlagAndPath(key),
                                                   ": the private key does not parse (",
                                                   OpenSslReason(), "; it must not be encrypted)"));
  }
  if (X509_check_private_key(certificates->front().get(), parsed.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat(FlagAndPath(key), ": not the key of the certificate in ", FlagAndPath(cert)));
  }
  pair.cert_chain = *std::move(chain);
  pair.private_key = *std::move(key_text);
  return pair;
}

void QuietTlsHandshakeLogs() { gpr_set_log_function(&LogGrpcLine); }

}  // namespace tessera
