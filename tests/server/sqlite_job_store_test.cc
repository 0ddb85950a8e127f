// What only the SQLite job store does (the contract both stores share is in job_store_test.cc):
// it names the file it cannot open, and it is private to one server (no shared queue).
#include <gtest/gtest.h>

#include <cstdio>

#include "server/job_store.h"
#include "tests/server/server_testing.h"

namespace tessera {
namespace {

using testing::TempDir;

TEST(SqliteJobStoreTest, RefusesAFileThatIsNotADatabase) {
  TempDir dir;
  std::string path = dir.Path("junk.db");
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("this is not sqlite, not at all, just text padding the header out", f);
  std::fclose(f);
  absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(path), std::string::npos) << store.status();
}

TEST(SqliteJobStoreTest, IsNotShared) {
  TempDir dir;
  EXPECT_EQ(JobStore::Open(dir.Path("state.db")).value()->shared(), nullptr);
}

}  // namespace
}  // namespace tessera
