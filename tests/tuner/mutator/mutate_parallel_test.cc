// MutateParallel (tuner/mutator/mutate_parallel.cc) on hand-built traces: the parallel
// annotation's limit is rewritten to another fusion plan, with exact plans on an untiled nest.
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
using mutator_testing::SmallGmm;
using mutator_testing::TiledGmmTrace;

TEST(MutateParallelTest, RewritesTheLimitToAnotherFusionPlan) {
  // cores 4 × 16 jobs = 64. Block C's spatial loops b, i, j (2, 8, 16): prefix products
  // 2, 16, 256; limits 2 and 16 fuse 1 and 2 loops, the current 64 fuses 3.
  const PrimFunc func = SmallGmm();
  MutatorPtr m = Make("MutateParallel", Cpu());
  GmmTrace g = TiledGmmTrace(func, 0);
  // Tiling i does not change the analysis: its outer tiles are spatial loops, but the
  // products stop at the first >= 64.
  Random rng(12);
  std::set<int64_t> seen;
  for (int i = 0; i < 50; ++i) {
    std::optional<Trace> out = m->Apply(g.trace, func, &rng);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->size(), g.trace.PostprocStart());
    EXPECT_TRUE(ChangedDecisions(g.trace, *out).empty());
    for (size_t k = 0; k < out->size(); ++k) {
      const Instruction& inst = out->insts()[k];
      if (std::string(inst.kind->name) == "Annotate" &&
          inst.attrs[0].as_string() == attr::kParallel) {
        seen.insert(inst.inputs[1].as_int());
      }
    }
  }
  EXPECT_FALSE(seen.count(64));
  EXPECT_FALSE(seen.empty());
}

TEST(MutateParallelTest, ExactPlansOnAnUntiledNest) {
  const PrimFunc func = SmallGmm();
  MutatorPtr m = Make("MutateParallel", Cpu());
  auto trace_with = [&](int64_t limit) {
    Schedule sch = Schedule::Create(func, 0);
    EXPECT_TRUE(sch.Annotate(*sch.GetBlock("root"), attr::kParallel, InstValue::Int(limit)).ok());
    return sch.trace();
  };
  auto limit_of = [](const Trace& t) { return t.insts()[1].inputs[1].as_int(); };
  Random rng(13);
  std::set<int64_t> from64;
  for (int i = 0; i < 40; ++i) {
    std::optional<Trace> out = m->Apply(trace_with(64), func, &rng);
    ASSERT_TRUE(out.has_value());
    from64.insert(limit_of(*out));
    std::optional<Trace> from2 = m->Apply(trace_with(2), func, &rng);
    ASSERT_TRUE(from2.has_value());
    EXPECT_EQ(limit_of(*from2), 16);
    std::optional<Trace> from8 = m->Apply(trace_with(8), func, &rng);  // same plan as 16
    ASSERT_TRUE(from8.has_value());
    EXPECT_EQ(limit_of(*from8), 2);
  }
  EXPECT_EQ(from64, (std::set<int64_t>{2, 16}));
  Schedule bare = Schedule::Create(func, 0);
  ASSERT_TRUE(bare.GetBlock("root").ok());
  EXPECT_FALSE(m->Apply(bare.trace(), func, &rng).has_value());
}

}  // namespace
}  // namespace tessera
