// MutateComputeLocation (tuner/mutator/mutate_compute_location.cc) on hand-built traces: the
// block moves to another valid location, and nothing applies when the current one is the only
// one.
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
using mutator_testing::ComputeLocationTrace;
using mutator_testing::Cpu;
using mutator_testing::Make;
using mutator_testing::Replay;
using mutator_testing::SmallDenseBiasRelu;
using testing::CheckScheduleCorrect;

TEST(MutateComputeLocationTest, MovesTheBlockToAnotherValidLocation) {
  const PrimFunc func = SmallDenseBiasRelu();
  size_t sample = 0;
  const Trace trace = ComputeLocationTrace(func, &sample);
  // The locations valid where the instruction runs: right after GetBlock on the workload.
  Schedule probe = Schedule::Create(func, 0);
  absl::StatusOr<std::vector<int64_t>> valid =
      probe.ComputeLocationCandidates(*probe.GetBlock("T_add"));
  ASSERT_TRUE(valid.ok()) << valid.status();
  EXPECT_EQ(*valid, (std::vector<int64_t>{-2, -1, 0, 1}));
  MutatorPtr m = Make("MutateComputeLocation", Cpu());
  Random rng(9);
  std::set<int64_t> seen;
  for (int i = 0; i < 60; ++i) {
    std::optional<Trace> out = m->Apply(trace, func, &rng);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(ChangedDecisions(trace, *out), std::vector<size_t>{sample});
    seen.insert(out->decision(sample).as_int());
  }
  EXPECT_EQ(seen, (std::set<int64_t>{-2, -1, 0}));  // all but the current 1
  for (int i = 0; i < 4; ++i) {
    std::optional<Trace> out = m->Apply(trace, func, &rng);
    absl::StatusOr<Schedule> sch = Replay(*out, func);
    ASSERT_TRUE(sch.ok()) << sch.status();
    EXPECT_TRUE(CheckScheduleCorrect(*sch, func).ok());
  }
}

TEST(MutateComputeLocationTest, NulloptWhenTheOnlyLocationIsTheCurrentOne) {
  const PrimFunc func = SmallDenseBiasRelu();
  MutatorPtr m = Make("MutateComputeLocation", Cpu());
  Random rng(10);
  // T_relu writes the output and has no consumer: root is its only location.
  Schedule sch = Schedule::Create(func, 0);
  BlockRV relu = *sch.GetBlock("T_relu");
  LoopRV loc = *sch.SampleComputeLocation(relu);
  ASSERT_TRUE(sch.ComputeAt(relu, loc, true).ok());
  EXPECT_FALSE(m->Apply(sch.trace(), func, &rng).has_value());
  EXPECT_FALSE(m->Apply(Trace(), func, &rng).has_value());
}

}  // namespace
}  // namespace tessera
