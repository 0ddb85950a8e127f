// Tests of Trace (schedule/trace.h): JSON parsing rejects malformed traces, replay errors name
// the instruction, and Simplified drops unused pure instructions.
#include "schedule/trace.h"

#include <string>

#include "gtest/gtest.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using testing::FirstReductionBlock;
using testing::SmallWorkload;

TEST(TraceTest, FromJsonRejectsMalformedTraces) {
  const char* bad[] = {
      "",
      "{}",
      "[[],[],[]]",
      "[[[\"NoSuchKind\",[],[],[]]],[]]",
      "[[[\"GetLoops\",[\"b7\"],[],[\"l0\"]]],[]]",
      "[[[\"GetBlock\",[],[\"C\",\"main\"],[\"x0\"]]],[]]",
      "[[[\"GetBlock\",[],[\"C\",\"main\"],[\"b0\"]]],[[3,1]]]",
      "[[[\"GetBlock\",[],[\"C\",\"main\"],[\"b0\"]],[\"GetBlock\",[],[\"C\",\"main\"],[\"b0\"]]],["
      "]]",
      "[[[\"GetBlock\"]],[]]",
  };
  for (const char* json : bad) {
    absl::StatusOr<Trace> t = Trace::FromJson(json);
    EXPECT_FALSE(t.ok()) << json;
    if (!t.ok()) {
      EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << json;
    }
  }
}

TEST(TraceTest, ReplayErrorNamesTheInstruction) {
  PrimFunc func = SmallWorkload("GMM");
  absl::StatusOr<Trace> trace =
      Trace::FromJson("[[[\"GetBlock\",[],[\"no_such_block\",\"main\"],[\"b0\"]]],[]]");
  ASSERT_TRUE(trace.ok());
  Schedule sch = Schedule::Create(func, 1);
  absl::Status s = trace->ApplyTo(&sch, false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("instruction 0 (GetBlock)"), std::string::npos) << s;
}

TEST(TraceTest, SimplifiedDropsUnusedPureInstructions) {
  PrimFunc func = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock(FirstReductionBlock(func));
  ASSERT_TRUE(sch.GetLoops(block).ok());                    // unused
  ASSERT_TRUE(sch.SampleCategorical({1, 2}, {1, 1}).ok());  // unused
  ASSERT_TRUE(sch.Annotate(block, "k", InstValue::Int(1)).ok());
  Trace simplified = sch.trace().Simplified(/*remove_postproc=*/true);
  ASSERT_EQ(simplified.size(), 2u);
  EXPECT_EQ(std::string(simplified.insts()[0].kind->name), "GetBlock");
  EXPECT_EQ(std::string(simplified.insts()[1].kind->name), "Annotate");
}

}  // namespace
}  // namespace tessera
