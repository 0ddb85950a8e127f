// The compute-location instruction kinds (schedule/primitive/compute_location.cc): each is listed
// once, under its trace name, and a trace using all of them replays from JSON to the same
// program. The primitives themselves are tested in compute_at_test.cc, compute_inline_test.cc and
// sample_compute_location_test.cc.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "schedule/instruction_kinds.h"
#include "schedule/schedule.h"
#include "tests/schedule/primitive/compute_location_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using compute_location_testing::ExpectCorrect;
using compute_location_testing::Loop;
using compute_location_testing::SmallCbr;

TEST(ComputeLocationKindsTest, ListsEachPrimitiveByItsTraceName) {
  std::vector<std::string> names;
  for (const InstructionKind* kind : ComputeLocationInstructionKinds()) {
    names.push_back(kind->name);
    EXPECT_EQ(FindInstructionKind(kind->name), kind) << kind->name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"ComputeAt", "ReverseComputeAt", "ComputeInline",
                                             "ReverseComputeInline", "SampleComputeLocation"}));
}

TEST(ComputeLocationKindsTest, EveryKindReplays) {
  PrimFunc func = SmallCbr();
  Schedule sch = Schedule::Create(func, 3);
  for (const char* name : {"PadInput", "bias_add", "bn_mul"}) {
    ASSERT_TRUE(sch.ComputeInline(*sch.GetBlock(name)).ok()) << name;
  }
  ASSERT_TRUE(sch.ReverseComputeInline(*sch.GetBlock("T_relu")).ok());
  BlockRV conv = *sch.GetBlock("conv2d_nhwc");
  ASSERT_TRUE(sch.ReverseComputeAt(*sch.GetBlock("bn_add"), Loop(&sch, "conv2d_nhwc", 0)).ok());
  absl::StatusOr<LoopRV> at = sch.SampleComputeLocation(conv);
  ASSERT_TRUE(at.ok()) << at.status();
  ASSERT_TRUE(sch.ComputeAt(conv, *at, /*preserve_unit_loops=*/true).ok());
  ExpectCorrect(sch, func);  // well formed, same outputs, and the trace replays from JSON
}

}  // namespace
}  // namespace tessera
