// MutateUnroll (tuner/mutator/mutate_unroll.cc) on hand-built traces: only the sampled unroll
// step is redrawn; implicit unrolling and zero weights.
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/tuner/mutator_testing.h"
#include "tuner/mutator.h"

namespace tessera {
namespace {

using mutator_testing::ChangedDecisions;
using mutator_testing::Cpu;
using mutator_testing::GmmTrace;
using mutator_testing::Make;
using mutator_testing::Replay;
using mutator_testing::SmallGmm;
using mutator_testing::TiledGmmTrace;

TEST(MutateUnrollTest, RedrawsTheSampledUnrollStepOnly) {
  const PrimFunc func = SmallGmm();
  MutatorPtr m = Make("MutateUnroll", Cpu());
  Random rng(5);
  std::set<int64_t> seen;
  for (int seed = 0; seed < 100; ++seed) {
    GmmTrace g = TiledGmmTrace(func, seed);
    std::optional<Trace> out = m->Apply(g.trace, func, &rng);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->size(), g.trace.PostprocStart());
    EXPECT_EQ(ChangedDecisions(g.trace, *out), std::vector<size_t>{g.unroll});
    seen.insert(out->decision(g.unroll).as_int());
    EXPECT_TRUE(Replay(*out, func).ok());
  }
  EXPECT_EQ(seen.size(), 4u);
}

TEST(MutateUnrollTest, ImplicitUnrollAndZeroWeights) {
  const PrimFunc func = SmallGmm();
  MutatorPtr m = Make("MutateUnroll", Cpu());
  Random rng(6);
  Schedule sch = Schedule::Create(func, 0);
  BlockRV root = *sch.GetBlock("root");
  // Only index 2 has weight besides the current one.
  ExprRV step = *sch.SampleCategorical({0, 16, 64}, {1, 0, 1}, InstValue::Int(0));
  ASSERT_TRUE(sch.Annotate(root, attr::kUnrollImplicit, InstValue::Of(step)).ok());
  for (int i = 0; i < 20; ++i) {
    std::optional<Trace> out = m->Apply(sch.trace(), func, &rng);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->decision(1).as_int(), 2);
  }
  // No other candidate with a positive weight: nothing to mutate.
  Schedule fixed = Schedule::Create(func, 0);
  BlockRV r = *fixed.GetBlock("root");
  ExprRV only = *fixed.SampleCategorical({0, 16}, {1, 0}, InstValue::Int(0));
  ASSERT_TRUE(fixed.Annotate(r, attr::kUnrollExplicit, InstValue::Of(only)).ok());
  EXPECT_FALSE(m->Apply(fixed.trace(), func, &rng).has_value());
  // A categorical that feeds no unroll annotation is not the unroll step.
  Schedule other = Schedule::Create(func, 0);
  ASSERT_TRUE(other.SampleCategorical({0, 16}, {1, 1}).ok());
  EXPECT_FALSE(m->Apply(other.trace(), func, &rng).has_value());
}

}  // namespace
}  // namespace tessera
