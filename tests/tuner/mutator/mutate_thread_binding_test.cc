// MutateThreadBinding (tuner/mutator/mutate_thread_binding.cc) on hand-built cuda traces: the
// thread extent of the split bound to threadIdx.x is redrawn, and nothing applies without
// that pattern.
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/schedule_testing.h"
#include "tests/tuner/mutator_testing.h"
#include "tuner/mutator.h"

namespace tessera {
namespace {

using mutator_testing::ChangedDecisions;
using mutator_testing::Cuda;
using mutator_testing::Make;
using mutator_testing::Replay;
using mutator_testing::SmallElementwise;
using mutator_testing::ThreadBindingTrace;
using testing::CheckScheduleCorrect;

TEST(MutateThreadBindingTest, RedrawsTheThreadExtentOfTheSplitBoundToThreadIdxX) {
  const PrimFunc func = SmallElementwise();
  MutatorPtr m = Make("MutateThreadBinding", Cuda());
  size_t sample = 0;
  const Trace trace = ThreadBindingTrace(func, "threadIdx.x", /*none_first=*/true, &sample);
  Random rng(7);
  std::set<int64_t> seen;
  for (int i = 0; i < 100; ++i) {
    std::optional<Trace> out = m->Apply(trace, func, &rng);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(ChangedDecisions(trace, *out), std::vector<size_t>{sample});
    EXPECT_NE(out->decision(sample), trace.decision(sample));
    seen.insert(out->decision(sample).as_int());
  }
  EXPECT_EQ(seen.size(), 3u);
  std::optional<Trace> out = m->Apply(trace, func, &rng);
  absl::StatusOr<Schedule> sch = Replay(*out, func);
  ASSERT_TRUE(sch.ok()) << sch.status();
  EXPECT_TRUE(CheckScheduleCorrect(*sch, func).ok());
}

TEST(MutateThreadBindingTest, NulloptWithoutThePattern) {
  const PrimFunc func = SmallElementwise();
  MutatorPtr m = Make("MutateThreadBinding", Cuda());
  Random rng(8);
  size_t sample = 0;
  // Bound to threadIdx.y, or the sampled factor is the outer one: not the pattern.
  EXPECT_FALSE(
      m->Apply(ThreadBindingTrace(func, "threadIdx.y", true, &sample), func, &rng).has_value());
  EXPECT_FALSE(
      m->Apply(ThreadBindingTrace(func, "threadIdx.x", false, &sample), func, &rng).has_value());
}

}  // namespace
}  // namespace tessera
