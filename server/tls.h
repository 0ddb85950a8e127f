// The TLS files of the service's server (`serve --tls-cert --tls-key --tls-client-ca`) and of
// its clients and workers (`--tls-ca --tls-cert --tls-key`), read and checked with OpenSSL
// before any channel or port uses them. gRPC checks them only when a connection is made, and
// then writes raw lines ("Invalid private key.", "Handshaker factory creation failed") and
// answers "cannot listen" or "empty address list"; here a missing file, a file without a PEM
// certificate, a certificate that does not parse, a key that does not parse or does not match
// its certificate is one error naming the flag and the file.
#ifndef TESSERA_SERVER_TLS_H_
#define TESSERA_SERVER_TLS_H_

#include <string>

#include "absl/status/statusor.h"

namespace tessera {

// A PEM file and the flag that named it, for messages: {"--tls-ca", "/etc/tessera/ca.pem"}.
struct TlsFile {
  std::string flag;
  std::string path;
};

// The PEM text of `file` when it holds one or more certificates that all parse (a CA bundle or
// a certificate chain). kNotFound when it cannot be read, kInvalidArgument otherwise.
absl::StatusOr<std::string> ReadTlsCertificates(const TlsFile& file);

struct TlsKeyPair {
  std::string cert_chain;   // PEM
  std::string private_key;  // PEM
};

// The certificate chain of `cert` and the private key of `key` (unencrypted PEM), when the key
// is the one of the chain's first certificate.
absl::StatusOr<TlsKeyPair> ReadTlsKeyPair(const TlsFile& cert, const TlsFile& key);

// gRPC logs each failed TLS handshake (and, on a server, each client that asked for a name its
// certificate lacks) as a raw ERROR line, once per connection attempt, beside the status that
// the failing call already carries (a client's) or that concerns an unauthenticated peer (the
// server's). Drops those lines and sends gRPC's other lines to the Tessera log. Idempotent;
// call it before the first channel or server.
void QuietTlsHandshakeLogs();

}  // namespace tessera

#endif  // TESSERA_SERVER_TLS_H_
