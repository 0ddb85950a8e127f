// Tests of worker/builder_internal.cc, what the C and NVRTC builders share: work directories
// (fresh and removed, kept, or requested and never removed; those of dead processes swept;
// errors named), and ParallelFor
// calling every index exactly once on several threads.
#include "worker/builder_internal.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
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

// A process that dies without running destructors (killed, or _exit after abandoning a
// measurement) leaves its fresh directory; the next fresh directory of that prefix removes it
// once it is old enough, and leaves those of live processes, recent ones and kept ones.
TEST(WorkDirTest, AFreshDirectoryRemovesThoseOfDeadProcesses) {
  const std::string parent = ::testing::TempDir() + "/abandoned_work_dirs";
  fs::remove_all(parent);
  fs::create_directories(parent);
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
  auto make = [&](const std::string& name, bool old) {
    const std::string path = parent + "/" + name;
    fs::create_directories(path + "/inner");
    if (old) {
      fs::last_write_time(
          path, fs::file_time_type::clock::now() - kAbandonedWorkDirAge - std::chrono::minutes(1));
    }
    return path;
  };
  const std::string dead_old = make("tessera-sweep-" + std::to_string(dead) + "-AbC123", true);
  const std::string dead_recent = make("tessera-sweep-" + std::to_string(dead) + "-XyZ789", false);
  const std::string live_old = make("tessera-sweep-" + std::to_string(getpid()) + "-QwE456", true);
  const std::string kept_old = make("tessera-sweep-RtY012", true);
  const std::string other_prefix = make("tessera-other-" + std::to_string(dead) + "-UiO345", true);
  const char* saved = std::getenv("TMPDIR");
  const std::string saved_tmpdir = saved ? saved : "";
  setenv("TMPDIR", parent.c_str(), 1);
  std::string fresh;
  {
    WorkDir dir("", /*keep=*/false, "tessera-sweep", "builder");
    ASSERT_TRUE(dir.status().ok()) << dir.status();
    fresh = dir.path();
    EXPECT_EQ(fs::path(fresh).filename().string().rfind(
                  "tessera-sweep-" + std::to_string(getpid()) + "-", 0),
              0u)
        << fresh;
  }
  if (saved) {
    setenv("TMPDIR", saved_tmpdir.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  EXPECT_FALSE(fs::exists(dead_old));
  EXPECT_TRUE(fs::exists(dead_recent));
  EXPECT_TRUE(fs::exists(live_old));
  EXPECT_TRUE(fs::exists(kept_old));
  EXPECT_TRUE(fs::exists(other_prefix));
  EXPECT_FALSE(fs::exists(fresh));
  fs::remove_all(parent);
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
