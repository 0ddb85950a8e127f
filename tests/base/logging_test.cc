// Tests of base/logging.cc: messages at or above the threshold go to stderr as one line
// "[<level> <file>:<line>] <message>" (the file without its directory); those below it are
// neither printed nor evaluated.
#include "base/logging.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

// Restores the threshold a test changed.
class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = MinLogLevel(); }
  void TearDown() override { SetMinLogLevel(saved_); }

 private:
  LogLevel saved_ = LogLevel::kWarning;
};

TEST_F(LoggingTest, MessagesAtOrAboveTheThresholdAreOneLineWithLevelAndPlace) {
  SetMinLogLevel(LogLevel::kInfo);
  ::testing::internal::CaptureStderr();
  const int line = __LINE__ + 1;
  TESSERA_LOG(INFO) << "tuned " << 12 << " candidates";
  TESSERA_LOG(ERROR) << "lost";
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "[I logging_test.cc:" + std::to_string(line) + "] tuned 12 candidates\n" +
                     "[E logging_test.cc:" + std::to_string(line + 1) + "] lost\n");
}

TEST_F(LoggingTest, MessagesBelowTheThresholdAreNeitherPrintedNorEvaluated) {
  SetMinLogLevel(LogLevel::kWarning);
  EXPECT_EQ(MinLogLevel(), LogLevel::kWarning);
  int evaluated = 0;
  ::testing::internal::CaptureStderr();
  TESSERA_LOG(DEBUG) << ++evaluated;
  TESSERA_LOG(INFO) << ++evaluated;
  TESSERA_LOG(WARNING) << "kept";
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(evaluated, 0);
  EXPECT_NE(err.find("] kept\n"), std::string::npos) << err;
  EXPECT_EQ(err.find("[D "), std::string::npos) << err;
  EXPECT_EQ(err.find("[I "), std::string::npos) << err;
}

}  // namespace
}  // namespace tessera
