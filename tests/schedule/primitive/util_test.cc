// Tests of the helpers the schedule primitives share (schedule/primitive/util.h): error
// messages that name the primitive, buffer and block queries, and removing a block.
#include "schedule/primitive/util.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace primitive {
namespace {

using testing::SmallWorkload;

Block BlockNamed(const PrimFunc& func, const std::string& name) {
  return BlockOf(FindBlockPath(func, name)->back());
}

TEST(PrimitiveUtilTest, ErrorsNameThePrimitive) {
  absl::Status invalid = Invalid("split", "factors do not cover the extent");
  EXPECT_EQ(invalid.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(invalid.message(), "split: factors do not cover the extent");
  absl::Status prefixed = WithPrimitive("fuse", absl::NotFoundError("loop i no longer exists"));
  EXPECT_EQ(prefixed.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(prefixed.message(), "fuse: loop i no longer exists");
}

TEST(PrimitiveUtilTest, BufferAndBlockQueries) {
  PrimFunc func = SmallWorkload("GMM");
  const Block c = BlockNamed(func, "C");
  EXPECT_EQ(c->name, "C");
  EXPECT_TRUE(HasReduction(c));
  const PrimFunc elementwise = SmallWorkload("ELEMENTWISE");
  EXPECT_FALSE(HasReduction(BlockNamed(elementwise, AllBlockNames(elementwise).back())));
  const Buffer& a = func.params()[0];
  ASSERT_EQ(a.name(), "A");
  EXPECT_TRUE(Accesses(c->reads, a));
  EXPECT_FALSE(Accesses(c->writes, a));
  EXPECT_TRUE(SharedBuffer(c->reads, {BufferRegion{a, {}}}).same_as(a));
  EXPECT_FALSE(SharedBuffer(c->writes, {BufferRegion{a, {}}}).defined());
  EXPECT_FALSE(AllocatedIn(func.root_block(), a));
  const Var k = LoopsOnPath(*FindBlockPath(func, "C")).back().as<ForNode>()->loop_var;
  EXPECT_FALSE(UsesAnyOf(Expr(1) + Expr(2), {k.get()}));
}

TEST(PrimitiveUtilTest, AllocationsOfTheScopeBlock) {
  Schedule sch = Schedule::Create(SmallWorkload("GMM"), 1);
  ASSERT_TRUE(sch.CacheRead(*sch.GetBlock("C"), 1, "shared").ok());
  ASSERT_EQ(sch.func().root_block()->alloc_buffers.size(), 1u);
  EXPECT_TRUE(AllocatedIn(sch.func().root_block(), sch.func().root_block()->alloc_buffers[0]));
}

TEST(PrimitiveUtilTest, RemoveLeafDropsTheBlockAndItsLoops) {
  PrimFunc func = SmallWorkload("GMM");
  absl::StatusOr<PrimFunc> only = RemoveLeaf("remove", func, *FindBlockPath(func, "C"));
  EXPECT_EQ(only.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(only.status().message(), "remove: block C is the only statement of its scope");

  Schedule sch = Schedule::Create(func, 1);
  ASSERT_TRUE(sch.CacheRead(*sch.GetBlock("C"), 1, "shared").ok());
  absl::StatusOr<PrimFunc> removed =
      RemoveLeaf("remove", sch.func(), *FindBlockPath(sch.func(), "A_shared"));
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(AllBlockNames(*removed), (std::vector<std::string>{"root", "C"}));
}

}  // namespace
}  // namespace primitive
}  // namespace tessera
