// Tests of cuda/driver.cc without a GPU: TESSERA_LIBCUDA chooses the library the driver
// table is loaded from; one that cannot be opened is kFailedPrecondition "no CUDA driver: ..."
// naming it, and the outcome is loaded once per process (later calls give the same answer
// whatever the environment says then). A binary of its own, so that no other test loads the
// driver first.
#include "cuda/driver.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

constexpr char kMissing[] = "/nonexistent/libcuda-for-tessera-tests.so.1";

class CudaDriverTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("TESSERA_LIBCUDA", kMissing, 1); }
};

TEST_F(CudaDriverTest, ALibraryThatCannotBeOpenedIsNoDriverNamingIt) {
  absl::StatusOr<const CudaDriver*> driver = LoadCudaDriver();
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      std::string(driver.status().message()).rfind(std::string("no CUDA driver: ") + kMissing, 0),
      0u)
      << driver.status();
}

TEST_F(CudaDriverTest, TheOutcomeIsLoadedOncePerProcess) {
  const absl::Status first = LoadCudaDriver().status();
  unsetenv("TESSERA_LIBCUDA");  // would now pick libcuda.so.1, but the table is loaded already
  EXPECT_EQ(LoadCudaDriver().status(), first);
  setenv("TESSERA_LIBCUDA", kMissing, 1);
}

}  // namespace
}  // namespace tessera
