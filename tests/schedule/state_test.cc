// Tests of navigation and naming in a function's statement tree (schedule/state.h): paths to
// blocks and loops, block names, and fresh names that clash with no block or buffer.
#include "schedule/state.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using testing::SmallWorkload;

TEST(StateTest, FindsBlocksAndTheirLoops) {
  PrimFunc func = SmallWorkload("GMM");
  EXPECT_EQ(AllBlockNames(func), (std::vector<std::string>{"root", "C"}));
  absl::StatusOr<StmtPath> path = FindBlockPath(func, "C");
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->back().as<BlockRealizeNode>()->block->name, "C");
  std::vector<Stmt> loops = LoopsOnPath(*path);
  ASSERT_EQ(loops.size(), 4u);  // b, i, j, k
  absl::StatusOr<StmtPath> loop_path = FindLoopPath(func, loops[2].as<ForNode>()->loop_var);
  ASSERT_TRUE(loop_path.ok()) << loop_path.status();
  EXPECT_TRUE(loop_path->back().same_as(loops[2]));
  EXPECT_EQ(FindBlockPath(func, "nope").status().code(), absl::StatusCode::kNotFound);
}

TEST(StateTest, UniqueNameAvoidsOnlyTheNamesOfItsScope) {
  PrimFunc func = SmallWorkload("GMM");  // blocks root, C; buffers A, B, C
  EXPECT_EQ(UniqueName(func, "C", NameScope::kBlocks), "C_1");
  EXPECT_EQ(UniqueName(func, "A", NameScope::kBlocks), "A");
  EXPECT_EQ(UniqueName(func, "A", NameScope::kBuffers), "A_1");
  EXPECT_EQ(UniqueName(func, "root", NameScope::kBuffers), "root");
  EXPECT_EQ(UniqueName(func, "root", NameScope::kBlocksAndBuffers), "root_1");
  EXPECT_EQ(UniqueName(func, "B", NameScope::kBlocksAndBuffers), "B_1");
  EXPECT_EQ(UniqueName(func, "D", NameScope::kBlocksAndBuffers), "D");
  EXPECT_EQ(UniqueBlockName(func, "C"), UniqueName(func, "C", NameScope::kBlocks));
}

TEST(StateTest, UniqueNameSeesAllocations) {
  PrimFunc func = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(func, 1);
  ASSERT_TRUE(sch.CacheRead(*sch.GetBlock("C"), 1, "shared").ok());  // block and buffer A_shared
  EXPECT_EQ(UniqueName(sch.func(), "A_shared", NameScope::kBuffers), "A_shared_1");
  EXPECT_EQ(UniqueName(sch.func(), "A_shared", NameScope::kBlocks), "A_shared_1");
  EXPECT_EQ(UniqueName(sch.func(), "A_shared", NameScope::kBlocksAndBuffers), "A_shared_1");
  EXPECT_EQ(UniqueName(sch.func(), "A_shared_1", NameScope::kBlocksAndBuffers), "A_shared_1");
}

}  // namespace
}  // namespace tessera
