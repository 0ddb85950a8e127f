// The trace reading the mutators share (tuner/mutator/util.cc): SampleCategorical producers and
// their consumers, the "any candidate but the recorded one" redraw of a categorical decision,
// and traces truncated at EnterPostproc with one decision or instruction replaced.
#include "tuner/mutator/util.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rules/annotations.h"
#include "schedule/schedule.h"
#include "tests/tuner/mutator_testing.h"

namespace tessera {
namespace {

using mutator_testing::SmallGmm;

// GMM's root annotated with an unroll step sampled from {0, 16, 64, 512} (16 never: probability
// 0), recorded as candidate `decision`, then one postprocessing instruction.
struct CategoricalTrace {
  Trace trace;
  size_t sample = 0, annotate = 0;
};

CategoricalTrace MakeTrace(int64_t decision) {
  Schedule sch = Schedule::Create(SmallGmm(), 1);
  BlockRV root = *sch.GetBlock("root");
  CategoricalTrace out;
  out.sample = sch.trace().size();
  ExprRV step = *sch.SampleCategorical({0, 16, 64, 512}, {0.25, 0, 0.25, 0.5});
  out.annotate = sch.trace().size();
  EXPECT_TRUE(sch.Annotate(root, attr::kUnrollExplicit, InstValue::Of(step)).ok());
  sch.EnterPostproc();
  EXPECT_TRUE(sch.Annotate(root, "postproc_marker", InstValue::Int(1)).ok());
  out.trace = sch.trace().WithDecision(out.sample, InstValue::Int(decision),
                                       /*remove_postproc=*/false);
  return out;
}

TEST(MutatorUtilTest, FindsTheCategoricalThatFeedsAnInstruction) {
  const CategoricalTrace t = MakeTrace(0);
  const Instruction& annotate = t.trace.insts()[t.annotate];
  EXPECT_TRUE(mutator::IsKind(annotate, "Annotate"));
  EXPECT_FALSE(mutator::IsKind(annotate, "Split"));
  EXPECT_EQ(mutator::StringAttr(annotate, 0), attr::kUnrollExplicit);
  EXPECT_EQ(mutator::StringAttr(annotate, 7), "");

  const std::map<int64_t, size_t> producers = mutator::CategoricalProducers(t.trace);
  ASSERT_EQ(producers.size(), 1u);
  EXPECT_EQ(producers.begin()->second, t.sample);
  EXPECT_EQ(mutator::CategoricalProducerOf(producers, annotate.inputs[1]), t.sample);
  // The block RV was not sampled.
  EXPECT_EQ(mutator::CategoricalProducerOf(producers, annotate.inputs[0]), std::nullopt);
}

TEST(MutatorUtilTest, RedrawNeverGivesTheRecordedNorAnImpossibleCandidate) {
  const CategoricalTrace t = MakeTrace(/*decision=*/2);  // 64
  ASSERT_TRUE(mutator::CanRedrawCategorical(t.trace, t.sample));
  Random rng(3);
  std::map<int64_t, int> drawn;
  for (int i = 0; i < 1000; ++i) {
    std::optional<int64_t> d = mutator::RedrawCategorical(t.trace, t.sample, &rng);
    ASSERT_TRUE(d.has_value());
    ++drawn[*d];
  }
  // Candidates 0 (p 0.25) and 3 (p 0.5) only, about 1:2.
  ASSERT_EQ(drawn.size(), 2u) << "drew the recorded or a zero-probability candidate";
  EXPECT_GT(drawn[3], drawn[0]);
  EXPECT_GT(drawn[0], 200);
}

TEST(MutatorUtilTest, NoRedrawWhenNoOtherCandidateIsPossible) {
  Schedule sch = Schedule::Create(SmallGmm(), 1);
  ASSERT_TRUE(sch.SampleCategorical({16, 64}, {1, 0}).ok());
  const Trace trace = sch.trace().WithDecision(0, InstValue::Int(0), false);
  EXPECT_FALSE(mutator::CanRedrawCategorical(trace, 0));
  Random rng(1);
  EXPECT_EQ(mutator::RedrawCategorical(trace, 0, &rng), std::nullopt);
  EXPECT_EQ(mutator::RedrawOneCategorical(trace, {0}, &rng), std::nullopt);
}

TEST(MutatorUtilTest, RedrawOneCategoricalTruncatesAtEnterPostprocAndChangesOneDecision) {
  const CategoricalTrace t = MakeTrace(0);
  Random rng(5);
  std::optional<Trace> out = mutator::RedrawOneCategorical(t.trace, {t.sample}, &rng);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->size(), t.trace.PostprocStart());
  for (size_t i = 0; i < out->size(); ++i) {
    if (i == t.sample) {
      EXPECT_NE(out->decision(i), t.trace.decision(i));
    } else {
      EXPECT_EQ(out->decision(i), t.trace.decision(i)) << "instruction " << i;
    }
  }
  EXPECT_EQ(mutator::RedrawOneCategorical(t.trace, {}, &rng), std::nullopt);
}

TEST(MutatorUtilTest, WithInstructionReplacesOneInstructionOfTheTruncatedTrace) {
  const CategoricalTrace t = MakeTrace(0);
  Instruction changed = t.trace.insts()[t.annotate];
  changed.attrs[0] = InstValue::String(attr::kUnrollImplicit);
  const Trace out = mutator::WithInstruction(t.trace, t.annotate, changed);
  EXPECT_EQ(out.size(), t.trace.PostprocStart());
  EXPECT_EQ(mutator::StringAttr(out.insts()[t.annotate], 0), attr::kUnrollImplicit);
  EXPECT_EQ(out.decision(t.sample), t.trace.decision(t.sample));
}

}  // namespace
}  // namespace tessera
