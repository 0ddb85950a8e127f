// Tests of database/memory_database.cc (NewMemoryDatabase) beyond the contract every database
// meets (database_test.cc): ids count from 1 in commit order, each database is its own, and
// unknown ids are kNotFound naming the id.
#include <memory>
#include <string>
#include <vector>

#include "database/database.h"
#include "gtest/gtest.h"
#include "tests/database/database_testing.h"

namespace tessera {
namespace {

using ::tessera::testing::CpuTarget;
using ::tessera::testing::MakeRecord;
using ::tessera::testing::SmallGmm;
using ::tessera::testing::TileTrace;

TEST(MemoryDatabaseTest, IdsCountFromOneInCommitOrder) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  absl::StatusOr<Workload> a = db->CommitWorkload(SmallGmm(8));
  absl::StatusOr<Workload> b = db->CommitWorkload(SmallGmm(16));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->id, 1);
  EXPECT_EQ(b->id, 2);
  EXPECT_EQ(db->CommitWorkload(SmallGmm(8))->id, 1);  // the same function again
  for (int64_t expected = 1; expected <= 3; ++expected) {
    absl::StatusOr<int64_t> id =
        db->CommitRecord(MakeRecord(*a, CpuTarget(), TileTrace(8, 1, 2), {1e-3 * expected}));
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(*id, expected);
  }
  std::vector<TuningRecord> all = *db->AllRecords();
  ASSERT_EQ(all.size(), 3u);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].id, static_cast<int64_t>(i) + 1);
}

TEST(MemoryDatabaseTest, EachDatabaseIsItsOwn) {
  std::unique_ptr<Database> first = NewMemoryDatabase();
  std::unique_ptr<Database> second = NewMemoryDatabase();
  ASSERT_TRUE(first->CommitWorkload(SmallGmm(8)).ok());
  EXPECT_FALSE(second->FindWorkload(SmallGmm(8))->has_value());
  EXPECT_TRUE(second->AllWorkloads()->empty());
  EXPECT_EQ(*second->NumRecords(), 0);
}

TEST(MemoryDatabaseTest, UnknownIdsAreNotFoundAndNamed) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  Workload ghost{7, "", SmallGmm(8)};
  absl::StatusOr<int64_t> committed =
      db->CommitRecord(MakeRecord(ghost, CpuTarget(), TileTrace(8, 1, 2), {1e-3}));
  EXPECT_EQ(committed.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(committed.status().message(), "commit record: unknown workload id 7");
  absl::Status verified = db->SetVerified(3, true);
  EXPECT_EQ(verified.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(verified.message(), "set verified: unknown record id 3");
}

}  // namespace
}  // namespace tessera
