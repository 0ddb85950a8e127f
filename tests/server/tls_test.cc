// The TLS files' checks (server/tls.h) on certificates made with the openssl command: a chain
// and its key pass; a missing file, a file without a certificate, a certificate that does not
// parse, a file without a key, an encrypted key and another certificate's key are errors that
// name the flag and the file.
#include "server/tls.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "tests/testing/scoped_temp_dir.h"

namespace tessera {
namespace {

class TlsFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/openssl";
    const std::string d = dir_.path();
    for (const std::string& step : {
             absl::StrCat("req -x509 -newkey rsa:2048 -nodes -keyout ", d, "/a.key -out ", d,
                          "/a.pem -days 1 -subj /CN=a"),
             absl::StrCat("req -x509 -newkey rsa:2048 -nodes -keyout ", d, "/b.key -out ", d,
                          "/b.pem -days 1 -subj /CN=b"),
             absl::StrCat("pkey -in ", d, "/a.key -aes256 -passout pass:secret -out ", d,
                          "/encrypted.key"),
         }) {
      ASSERT_EQ(std::system(("/usr/bin/openssl " + step + " >/dev/null 2>&1").c_str()), 0) << step;
    }
  }
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(Path(name)) << text;
    return Path(name);
  }
  std::string Read(const std::string& name) const {
    std::stringstream text;
    text << std::ifstream(Path(name)).rdbuf();
    return text.str();
  }
  // The status message of `result`, which must have failed with `code`.
  template <typename T>
  static std::string Error(const absl::StatusOr<T>& result, absl::StatusCode code) {
    EXPECT_EQ(result.status().code(), code) << result.status();
    return std::string(result.status().message());
  }

  testing::ScopedTempDir dir_;
};

TEST_F(TlsFilesTest, CertificatesAreReadWhenEveryOneParses) {
  absl::StatusOr<std::string> bundle =
      ReadTlsCertificates({"--tls-ca", Write("bundle.pem", Read("a.pem") + Read("b.pem"))});
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  EXPECT_EQ(*bundle, Read("a.pem") + Read("b.pem"));

  EXPECT_EQ(Error(ReadTlsCertificates({"--tls-ca", Path("none.pem")}), absl::StatusCode::kNotFound),
            "--tls-ca " + Path("none.pem") + ": cannot read it (No such file or directory)");
  EXPECT_EQ(Error(ReadTlsCertificates({"--tls-ca", Write("text.pem", "garbage\n")}),
                  absl::StatusCode::kInvalidArgument),
            "--tls-ca " + Path("text.pem") +
                ": no PEM certificate in it (no -----BEGIN CERTIFICATE----- line)");
  // The second certificate's base64 broken.
  std::string broken = Read("b.pem");
  broken[broken.find('\n') + 10] = '!';
  EXPECT_NE(
      Error(ReadTlsCertificates({"--tls-client-ca", Write("broken.pem", Read("a.pem") + broken)}),
            absl::StatusCode::kInvalidArgument)
          .find("--tls-client-ca " + Path("broken.pem") + ": certificate 2 does not parse"),
      std::string::npos);
}

TEST_F(TlsFilesTest, AKeyPairIsACertificateAndItsOwnKey) {
  absl::StatusOr<TlsKeyPair> pair =
      ReadTlsKeyPair({"--tls-cert", Path("a.pem")}, {"--tls-key", Path("a.key")});
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_EQ(pair->cert_chain, Read("a.pem"));
  EXPECT_EQ(pair->private_key, Read("a.key"));

  EXPECT_EQ(Error(ReadTlsKeyPair({"--tls-cert", Path("a.pem")}, {"--tls-key", Path("b.key")}),
                  absl::StatusCode::kInvalidArgument),
            "--tls-key " + Path("b.key") + ": not the key of the certificate in --tls-cert " +
                Path("a.pem"));
  EXPECT_NE(Error(ReadTlsKeyPair({"--tls-cert", Path("a.pem")}, {"--tls-key", Path("a.pem")}),
                  absl::StatusCode::kInvalidArgument)
                .find("--tls-key " + Path("a.pem") + ": no PEM private key in it"),
            std::string::npos);
  EXPECT_NE(
      Error(ReadTlsKeyPair({"--tls-cert", Path("a.pem")}, {"--tls-key", Path("encrypted.key")}),
            absl::StatusCode::kInvalidArgument)
          .find("it must not be encrypted"),
      std::string::npos);
  EXPECT_EQ(Error(ReadTlsKeyPair({"--tls-cert", Path("a.key")}, {"--tls-key", Path("a.key")}),
                  absl::StatusCode::kInvalidArgument)
                .rfind("--tls-cert " + Path("a.key") + ": no PEM certificate", 0),
            0u);
}

}  // namespace
}  // namespace tessera
