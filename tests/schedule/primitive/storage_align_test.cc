// StorageAlign: padded strides keep the program's meaning; bad arguments are rejected.
#include <string>
#include <vector>

#include "codegen/lower.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "schedule/schedule.h"
#include "tests/schedule/primitive/cache_testing.h"

namespace tessera {
namespace {

using cache_testing::BlockNamed;
using cache_testing::ExpectCBackendMatches;
using cache_testing::ExpectCorrect;
using cache_testing::ExpectRejected;
using cache_testing::Gmm;
using cache_testing::RootAlloc;

TEST(StorageAlignTest, PaddedSharedCacheBuildsAndRuns) {
  PrimFunc func = Gmm(16, 8, 8);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  BlockRV a = *sch.CacheRead(c, 1, "shared");
  // A_shared is (1, 16, 8): the stride of axis -2 (8) is padded to 9 (9 % 8 == 1).
  ASSERT_TRUE(sch.StorageAlign(a, 0, -2, 8, 1).ok());
  Buffer cache = RootAlloc(sch.func(), "A_shared");
  ASSERT_EQ(cache->strides.size(), 3u);
  EXPECT_EQ(*AsConstInt(cache->strides[0]), 144);
  EXPECT_EQ(*AsConstInt(cache->strides[1]), 9);
  EXPECT_EQ(*AsConstInt(cache->strides[2]), 1);
  EXPECT_NE(PrintFunc(sch.func()).find("strides=(144, 9, 1)"), std::string::npos)
      << PrintFunc(sch.func());
  const Annotations& ann = BlockNamed(sch, "A_shared")->annotations;
  ASSERT_TRUE(ann.count("buffer_dim_align"));
  EXPECT_EQ(std::get<std::vector<int64_t>>(ann.at("buffer_dim_align")),
            (std::vector<int64_t>{0, 1, 8, 1}));
  // Lowering flattens with the padded strides: 1 + 15 * 9 + 7 = 143 elements.
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  std::string text = PrintFunc(*lowered);
  EXPECT_NE(text.find("143"), std::string::npos) << text;
  EXPECT_NE(text.find("* 9"), std::string::npos) << text;
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(StorageAlignTest, AlignsSeveralAxes) {
  PrimFunc func = Gmm(16, 8, 8);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  BlockRV a = *sch.CacheRead(c, 1, "shared");
  ASSERT_TRUE(sch.StorageAlign(a, 0, 1, 8, 1).ok());
  ASSERT_TRUE(sch.StorageAlign(a, 0, 0, 32, 0).ok());  // 16 * 9 = 144 -> 160
  ASSERT_TRUE(sch.StorageAlign(a, 0, -2, 4, 2).ok());  // replaces axis 1: 8 -> 10
  Buffer cache = RootAlloc(sch.func(), "A_shared");
  EXPECT_EQ(*AsConstInt(cache->strides[1]), 10);
  EXPECT_EQ(*AsConstInt(cache->strides[0]), 160);
  ExpectCorrect(sch, func);
}

TEST(StorageAlignTest, RejectsBadArguments) {
  PrimFunc func = Gmm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  BlockRV a = *sch.CacheRead(c, 1, "shared");
  PrimFunc before = sch.func();
  size_t n = sch.trace().size();
  ExpectRejected(sch.StorageAlign(c, 0, 0, 8, 1),
                 "storage_align: buffer C written by block C is a "
                 "function parameter",
                 sch, before, n);
  ExpectRejected(sch.StorageAlign(a, 0, 3, 8, 1),
                 "storage_align: axis 3 is out of range for buffer A_shared of block A_shared, "
                 "which has 3 dimensions",
                 sch, before, n);
  ExpectRejected(sch.StorageAlign(a, 0, -4, 8, 1), "axis -4 is out of range", sch, before, n);
  ExpectRejected(sch.StorageAlign(a, 0, 1, 0, 0), "must satisfy factor > 0", sch, before, n);
  ExpectRejected(sch.StorageAlign(a, 0, 1, 8, 8), "offset 8", sch, before, n);
  ExpectRejected(sch.StorageAlign(a, 1, 1, 8, 1), "buffer_index 1 is out of range", sch, before, n);
}

}  // namespace
}  // namespace tessera
