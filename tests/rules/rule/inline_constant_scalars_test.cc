// InlineConstantScalars (rules/rule/inline_constant_scalars.cc). Where it applies and where it does
// not, and that what it produces computes what the unscheduled function computes and replays from
// its trace JSON (testing::CheckScheduleCorrect).
#include <vector>

#include "gtest/gtest.h"
#include "ir/parser.h"
#include "rules/annotations.h"
#include "rules/schedule_rule.h"
#include "tests/rules/rule_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using rule_testing::ApplyAt;
using rule_testing::Cpu;
using rule_testing::HasBlock;
using rule_testing::Make;
using testing::CheckScheduleCorrect;

constexpr char kConstantScalar[] = R"(
@prim_func
def main(A: Buffer((8,), "float32"), B: Buffer((8,), "float32")):
    with block("root"):
        c = alloc_buffer((), "float32")
        with block("c"):
            reads()
            writes(c[()])
            c[()] = float32(3.0)
        for i in range(8):
            with block("B"):
                v_i = axis.spatial(8, i)
                reads(A[v_i], c[()])
                writes(B[v_i])
                B[v_i] = A[v_i] * c[()]
)";

TEST(InlineConstantScalarsTest, InlinesAScalarConstantButNotAnOutput) {
  absl::StatusOr<PrimFunc> func = ParseFunc(kConstantScalar);
  ASSERT_TRUE(func.ok()) << func.status();
  ScheduleRulePtr rule = Make(NewInlineConstantScalars(Cpu(), {}));
  Schedule sch = Schedule::Create(*func, 1);
  std::vector<Schedule> out = ApplyAt(*rule, &sch, "c");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(HasBlock(out[0].func(), "c"));
  EXPECT_TRUE(CheckScheduleCorrect(out[0], *func).ok()) << CheckScheduleCorrect(out[0], *func);

  Schedule other = Schedule::Create(*func, 1);
  out = ApplyAt(*rule, &other, "B");  // reads a buffer and writes an output
  EXPECT_TRUE(HasBlock(out[0].func(), "B"));
  EXPECT_EQ(out[0].trace().size(), other.trace().size());
}

}  // namespace
}  // namespace tessera
