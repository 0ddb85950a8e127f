// sample_compute_location: every candidate location is legal, the candidates follow
// docs/reference/metaschedule.md §3.5, stale decisions snap down and replay keeps the decision.
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "schedule/schedule.h"
#include "tests/schedule/primitive/compute_location_testing.h"

namespace tessera {
namespace {

using compute_location_testing::ExpectCorrect;
using compute_location_testing::SmallC2d;
using compute_location_testing::SmallDense;
using compute_location_testing::SmallSoftmax;

// Every candidate (-2, -1, loop index) of `block` gives a correct program.
void ExpectAllCandidatesLegal(const PrimFunc& func, const std::string& block, size_t min_count) {
  std::set<int64_t> seen;
  for (int64_t seed = 0; seed < 40; ++seed) {
    Schedule sch = Schedule::Create(func, seed);
    BlockRV b = *sch.GetBlock(block);
    absl::StatusOr<LoopRV> loc = sch.SampleComputeLocation(b);
    ASSERT_TRUE(loc.ok()) << loc.status();
    const InstValue& decision = sch.trace().decision(sch.trace().size() - 1);
    ASSERT_TRUE(decision.is_int());
    seen.insert(decision.as_int());
    absl::Status applied = sch.ComputeAt(b, *loc, /*preserve_unit_loops=*/true);
    ASSERT_TRUE(applied.ok()) << "decision " << decision.as_int() << ": " << applied;
    ExpectCorrect(sch, func);
  }
  EXPECT_GE(seen.size(), min_count);
}

TEST(SampleComputeLocationTest, PadCandidatesAreAllLegal) {
  // Inline, root, and the conv's n?, h, w, co loops (n has extent 1 and is skipped).
  ExpectAllCandidatesLegal(SmallC2d(), "PadInput", 4);
}

TEST(SampleComputeLocationTest, ReductionCandidatesAreAllLegal) {
  ExpectAllCandidatesLegal(SmallSoftmax(), "T_softmax_maxelem", 2);
  ExpectAllCandidatesLegal(SmallDense(), "T_dense", 3);
}

TEST(SampleComputeLocationTest, CandidatesFollowTheReference) {
  PrimFunc func = SmallC2d();
  std::set<int64_t> seen;
  for (int64_t seed = 0; seed < 60; ++seed) {
    Schedule sch = Schedule::Create(func, seed);
    ASSERT_TRUE(sch.SampleComputeLocation(*sch.GetBlock("PadInput")).ok());
    seen.insert(sch.trace().decision(sch.trace().size() - 1).as_int());
  }
  // The conv's loops n(1) h w co | rh rw rc: n is a unit loop; the spatial loops and the
  // reduction loops after them are candidates (rh, rw, rc come after the last spatial loop,
  // so the scan stops at rh).
  EXPECT_EQ(seen, (std::set<int64_t>{-2, -1, 1, 2, 3}));
}

TEST(SampleComputeLocationTest, StaleDecisionSnapsDown) {
  PrimFunc func = SmallC2d();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV pad = *sch.GetBlock("PadInput");
  absl::StatusOr<LoopRV> loc = sch.SampleComputeLocation(pad, InstValue::Int(6));
  ASSERT_TRUE(loc.ok()) << loc.status();
  EXPECT_EQ(sch.trace().decision(sch.trace().size() - 1).as_int(), 3);
  EXPECT_EQ((*sch.Get(*loc))->loop_var.name(), "co");
  // Loop 0 (n) is a unit loop, never a candidate: 0 snaps to root.
  Schedule other = Schedule::Create(func, 1);
  ASSERT_TRUE(other.SampleComputeLocation(*other.GetBlock("PadInput"), InstValue::Int(0)).ok());
  EXPECT_EQ(other.trace().decision(other.trace().size() - 1).as_int(), -1);
  // Inline stops being a candidate once the block writes an output... here: a reduction block.
  Schedule dense = Schedule::Create(SmallDense(), 1);
  absl::StatusOr<LoopRV> root =
      dense.SampleComputeLocation(*dense.GetBlock("T_dense"), InstValue::Int(-2));
  ASSERT_TRUE(root.ok());
  EXPECT_TRUE(dense.IsRootMarker(*root));
  EXPECT_EQ(dense.trace().decision(dense.trace().size() - 1).as_int(), -1);
}

TEST(SampleComputeLocationTest, ReplayKeepsTheDecision) {
  PrimFunc func = SmallC2d();
  Schedule sch = Schedule::Create(func, 9);
  BlockRV pad = *sch.GetBlock("PadInput");
  LoopRV loc = *sch.SampleComputeLocation(pad, InstValue::Int(2));
  ASSERT_TRUE(sch.ComputeAt(pad, loc, true).ok());
  std::string json = sch.trace().ToJson();
  EXPECT_NE(json.find("\"SampleComputeLocation\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"ComputeAt\""), std::string::npos) << json;
  ExpectCorrect(sch, func);
}

}  // namespace
}  // namespace tessera
