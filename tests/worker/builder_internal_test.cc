// Tests of worker/builder_internal.cc, what the C and NVRTC builders share: work directories
// (fresh and removed, kept, or requested and never removed; errors named), and ParallelFor
// calling every index exactly once on several threads.
#include "worker/builder_internal.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace internal {
namespace {

namespace fs = std::filesystem;

TEST(WorkDirTest, AFreshDirectoryIsRemovedUnlessKept) {
  std::string removed, kept;
  {
    WorkDir dir("", /*keep=*/false, "tessera-test", "builder");
    ASSERT_TRUE(dir.status().ok()) << dir.status();
    removed = dir.path();
    EXPECT_TRUE(fs::is_directory(removed));
    EXPECT_EQ(fs::path(removed).filename().string().rfind("tessera-test-", 0), 0u);
    WorkDir keep("", /*keep=*/true, "tessera-test", "builder");
    ASSERT_TRUE(keep.status().ok()) << keep.status();
    kept = keep.path();
    EXPECT_NE(kept, removed);
  }
  EXPECT_FALSE(fs::exists(removed));
  EXPECT_TRUE(fs::is_directory(kept));
  fs::remove_all(kept);
}

TEST(WorkDirTest, ARequestedDirectoryIsCreatedAndNeverRemoved) {
  const std::string requested = ::testing::TempDir() + "/work_dir_test/nested";
  fs::remove_all(::testing::TempDir() + "/work_dir_test");
  {
    WorkDir dir(requested, /*keep=*/false, "unused", "builder");
    ASSERT_TRUE(dir.status().ok()) << dir.status();
    EXPECT_EQ(dir.path(), requested);
    EXPECT_TRUE(fs::is_directory(requested));
  }
  EXPECT_TRUE(fs::is_directory(requested));
  fs::remove_all(::testing::TempDir() + "/work_dir_test");
}

TEST(WorkDirTest, ADirectoryThatCannotBeMadeIsAnErrorNamingIt) {
  WorkDir dir("/proc/tessera-cannot-be-here", /*keep=*/false, "unused", "c builder");
  EXPECT_FALSE(dir.status().ok());
  EXPECT_EQ(std::string(dir.status().message())
                .rfind("c builder: cannot create work dir /proc/tessera-cannot-be-here", 0),
            0u)
      << dir.status();
}

TEST(ParallelForTest, CallsEveryIndexExactlyOnce) {
  for (int threads : {1, 3, 0}) {
    std::vector<std::atomic<int>> calls(100);
    ParallelFor(calls.size(), threads, [&](size_t i) { calls[i].fetch_add(1); });
    for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i].load(), 1) << threads << "/" << i;
  }
  int none = 0;
  ParallelFor(0, 4, [&](size_t) { ++none; });
  EXPECT_EQ(none, 0);
}

TEST(ParallelForTest, SecondsSinceCountsForward) {
  const auto start = std::chrono::steady_clock::now();
  const double first = SecondsSince(start);
  EXPECT_GE(first, 0);
  EXPECT_GE(SecondsSince(start), first);
}

}  // namespace
}  // namespace internal
}  // namespace tessera
