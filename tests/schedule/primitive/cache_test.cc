// What the caching primitives share (schedule/primitive/cache.cc): the storage scopes they
// accept, and their instruction kinds, each listed once under its trace name and replayed from
// JSON. The primitives themselves are tested in cache_read_write_test.cc, reindex_test.cc,
// set_scope_test.cc and storage_align_test.cc.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "schedule/instruction_kinds.h"
#include "schedule/primitive/cache_internal.h"
#include "schedule/schedule.h"
#include "tests/schedule/primitive/cache_testing.h"

namespace tessera {
namespace {

using cache_testing::ExpectCorrect;
using cache_testing::Gmm;

TEST(CacheScopeTest, AcceptsRanksTagsAndFragments) {
  for (const char* scope : {"global", "shared", "local", "warp", "shared.dyn", "global.texture",
                            "wmma.matrix_a", "wmma.accumulator", "m16n8k8.matrixC"}) {
    EXPECT_TRUE(primitive::CheckScope("cache_read", scope).ok()) << scope;
  }
}

TEST(CacheScopeTest, RejectsUnknownScopesNamingThePrimitive) {
  for (const char* scope : {"register", "", "shared.", "shared.d-n", "wmma.matrix_c"}) {
    absl::Status s = primitive::CheckScope("set_scope", scope);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << scope;
    EXPECT_EQ(std::string(s.message()).rfind("set_scope: invalid storage scope '", 0), 0u) << s;
  }
}

TEST(CacheKindsTest, ListsEachPrimitiveByItsTraceName) {
  std::vector<std::string> names;
  for (const InstructionKind* kind : CacheInstructionKinds()) {
    names.push_back(kind->name);
    EXPECT_EQ(FindInstructionKind(kind->name), kind) << kind->name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"CacheRead", "CacheWrite", "ReIndex", "SetScope",
                                             "StorageAlign"}));
}

TEST(CacheKindsTest, EveryKindReplays) {
  PrimFunc func = Gmm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  absl::StatusOr<BlockRV> a = sch.CacheRead(c, 1, "shared");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(sch.StorageAlign(*a, 0, 1, 8, 1).ok());
  ASSERT_TRUE(sch.SetScope(*a, 0, "local").ok());
  ASSERT_TRUE(sch.ReIndex(c, 2, 0).ok());
  ASSERT_TRUE(sch.CacheWrite(c, 0, "local").ok());
  ExpectCorrect(sch, func);  // well formed, same outputs, and the trace replays from JSON
}

}  // namespace
}  // namespace tessera
