// Shared pieces of the end-to-end service tests (tests/cli/*_test.cc that start `tessera
// serve` and `tessera worker` processes on loopback).
#ifndef TESSERA_TESTS_CLI_SERVICE_TEST_UTIL_H_
#define TESSERA_TESTS_CLI_SERVICE_TEST_UTIL_H_

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "tests/testing/scoped_temp_dir.h"
#include "tests/testing/service_cluster.h"
#include "tests/testing/wait_until.h"

namespace tessera {
namespace testing {

// The binary built with the test, or $TESSERA_BINARY.
inline std::string TesseraBinary() {
  const char* binary = std::getenv("TESSERA_BINARY");
  return binary != nullptr && *binary ? binary : TESSERA_BINARY;
}

// A fresh scratch directory named after `name`, removed after the test (its processes are
// killed first, with the fixture), kept when it failed: its logs say why.
inline std::string ScratchDir(const std::string& name) { return ScratchDirUntilTestEnds(name); }

inline std::string FirstLine(const std::string& text) {
  return std::string(absl::StripAsciiWhitespace(text.substr(0, text.find('\n'))));
}

inline int CountLines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

// `tessera status JOB --json`, parsed (null on failure).
inline nlohmann::json JobStatus(ServiceCluster* cluster, const std::string& job,
                                const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"status", job, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  CommandResult r = cluster->RunClient(args, 30);
  if (r.exit_code != 0) return nullptr;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// Submits and returns the job id ("" on failure, with the reason in *error).
inline std::string Submit(ServiceCluster* cluster, std::vector<std::string> args,
                          std::string* error) {
  args.insert(args.begin(), "submit");
  CommandResult r = cluster->RunClient(args, 60);
  if (r.exit_code != 0) {
    *error = r.err;
    return "";
  }
  return FirstLine(r.out);
}

// A failed command: exit 1, one line on stderr ("tessera: error: ...") naming `code`.
inline void ExpectOneLineError(const CommandResult& r, const std::string& code,
                               const std::string& what) {
  EXPECT_EQ(r.exit_code, 1) << what << ": " << r.out << r.err;
  EXPECT_EQ(CountLines(r.err), 1) << what << ":\n" << r.err;
  EXPECT_NE(r.err.find("tessera: error: "), std::string::npos) << what << ": " << r.err;
  EXPECT_NE(r.err.find(code), std::string::npos) << what << ": " << r.err;
}

// A test with a `tessera serve` on loopback and no workers, in a scratch directory named after
// the test.
class OneServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    cluster_ = std::make_unique<ServiceCluster>(TesseraBinary(), ScratchDir(info->name()));
    BeforeServerStarts();
    ASSERT_TRUE(cluster_->StartServer().ok()) << cluster_->Logs();
  }
  // What a test needs in the scratch directory before the server starts (records to serve).
  virtual void BeforeServerStarts() {}
  std::unique_ptr<ServiceCluster> cluster_;
};

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_CLI_SERVICE_TEST_UTIL_H_
