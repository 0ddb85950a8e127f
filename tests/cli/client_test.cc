// Tests of cli/client.cc called in process, without a server: the token file (trimmed, empty
// refused), the options Connect checks before anything is sent (no address, half a client
// certificate, unreadable files named), the deadline and bearer token on a call, and
// workloads sent as file contents (text only: a model or binary file is refused) or as the spec
// given.
#include "cli/client.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace cli {
namespace {

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(CliClientTest, TokenFileIsTrimmedAndMustNotBeEmpty) {
  absl::StatusOr<std::string> token = ReadTokenFile(WriteFile("token", "  s3cret\n"));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "s3cret");
  const std::string empty = WriteFile("empty_token", "\n \n");
  EXPECT_EQ(ReadTokenFile(empty).status().message(), "--token-file: " + empty + " is empty");
  EXPECT_FALSE(ReadTokenFile("/nonexistent/token").ok());
}

TEST(CliClientTest, ConnectChecksItsOptionsBeforeSendingAnything) {
  ClientOptions options;
  EXPECT_EQ(Connect(options).status().message(), "--server: no address given");
  options.server = "127.0.0.1:1";
  options.tls_cert = WriteFile("cert.pem", "not a certificate");
  EXPECT_EQ(Connect(options).status().message(), "--tls-cert and --tls-key go together");
  options.tls_cert.clear();
  options.tls_ca = "/nonexistent/ca.pem";
  absl::StatusOr<Client> unreadable = Connect(options);
  ASSERT_FALSE(unreadable.ok());
  EXPECT_NE(std::string(unreadable.status().message()).find("/nonexistent/ca.pem"),
            std::string::npos)
      << unreadable.status();
}

TEST(CliClientTest, ConnectReadsTheTokenAndMakesAChannel) {
  ClientOptions options;
  options.server = "127.0.0.1:1";  // nothing is sent, so nothing needs to listen
  options.token_file = WriteFile("connect_token", "abc\n");
  options.timeout = 7;
  absl::StatusOr<Client> client = Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_NE(client->channel, nullptr);
  EXPECT_EQ(client->token, "abc");
  EXPECT_EQ(client->server, "127.0.0.1:1");
  EXPECT_EQ(client->timeout, 7);
}

TEST(CliClientTest, PrepareSetsTheDeadline) {
  Client client;
  client.timeout = 30;
  grpc::ClientContext context;
  const auto before = std::chrono::system_clock::now();
  client.Prepare(&context, /*timeout_override=*/5);
  const auto deadline = context.deadline();
  EXPECT_GT(deadline, before + std::chrono::seconds(4));
  EXPECT_LT(deadline, before + std::chrono::seconds(6));
}

TEST(CliClientTest, WorkloadsAreFileContentsOrTheSpecAsGiven) {
  EXPECT_EQ(*WorkloadForServer("GMM:M=128,N=128,K=128"), "GMM:M=128,N=128,K=128");
  EXPECT_EQ(*WorkloadForServer(WriteFile("func.ir", "@prim_func ...")), "@prim_func ...");
  EXPECT_EQ(*WorkloadForServer(WriteFile("utf8.ir", "# caf\xc3\xa9 \xe2\x82\xac\n@prim_func")),
            "# caf\xc3\xa9 \xe2\x82\xac\n@prim_func");
}

TEST(CliClientTest, AModelOrABinaryFileIsRefusedInOneLine) {
  // Sent as a string field, an ONNX model's bytes made protobuf log an error and the server
  // answer INTERNAL with no message.
  absl::StatusOr<std::string> model = WorkloadForServer(WriteFile("net.onnx", "\x08\x07"));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("alone submits the model"), std::string::npos)
      << model.status();
  for (const char* bytes : {"\xff\xfe", "ok\xc3", "\xe2\x82x"}) {
    absl::StatusOr<std::string> binary = WorkloadForServer(WriteFile("blob.bin", bytes));
    EXPECT_EQ(binary.status().code(), absl::StatusCode::kInvalidArgument) << bytes;
    EXPECT_NE(binary.status().message().find("not text"), std::string::npos) << binary.status();
  }
}

}  // namespace
}  // namespace cli
}  // namespace tessera
