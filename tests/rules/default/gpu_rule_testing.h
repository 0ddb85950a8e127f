// Helpers of the tests of single GPU default rules (tests/rules/default/gpu_*_test.cc): apply
// one rule to a workload at a small shape on sm_80 and check what every GPU default schedule
// must be (the GPU checks pass, the interpreter computes what the workload computes, blocks and
// threads are bound), or that the rule declines.
#ifndef TESSERA_TESTS_RULES_DEFAULT_GPU_RULE_TESTING_H_
#define TESSERA_TESTS_RULES_DEFAULT_GPU_RULE_TESTING_H_

#include <map>
#include <optional>
#include <string>

#include "codegen/verify_gpu.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "rules/default/default_rule.h"
#include "tests/rules/default_schedule_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace gpu_rule_testing {

// The thread tags the loops of `func` are bound to, with their constant extents (-1 where not
// constant).
inline std::map<std::string, int64_t> BoundThreads(const PrimFunc& func) {
  std::map<std::string, int64_t> tags;
  PostOrderVisitStmts(func.body(), [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    if (loop == nullptr || loop->for_kind != ForKind::kThreadBinding) return;
    const int64_t* extent = AsConstInt(loop->extent);
    tags[loop->thread_tag] = extent ? *extent : -1;
  });
  return tags;
}

// Applies `rule` to `func` (called `workload` in failures) on sm_80 and checks the result; the
// schedule, or nullopt (after a test failure) when the rule declined.
inline std::optional<Schedule> ExpectSchedulesCorrectly(const DefaultRule& rule,
                                                        const PrimFunc& func,
                                                        const std::string& workload) {
  const Target target = default_schedule_testing::CudaTarget("sm_80");
  absl::StatusOr<std::optional<Schedule>> sch = rule.Apply(func, target);
  EXPECT_TRUE(sch.ok()) << sch.status();
  if (!sch.ok() || !sch->has_value()) {
    ADD_FAILURE() << rule.name() << " declined " << workload;
    return std::nullopt;
  }
  absl::Status verified = VerifyGpuCode((*sch)->func(), target);
  EXPECT_TRUE(verified.ok()) << rule.name() << " on " << workload << ": " << verified;
  absl::Status correct = testing::CheckScheduleCorrect(**sch, func);
  EXPECT_TRUE(correct.ok()) << rule.name() << " on " << workload << ": " << correct;
  std::map<std::string, int64_t> threads = BoundThreads((*sch)->func());
  EXPECT_EQ(threads.count("blockIdx.x"), 1u) << rule.name() << " on " << workload;
  EXPECT_EQ(threads.count("threadIdx.x"), 1u) << rule.name() << " on " << workload;
  return *std::move(*sch);
}

// The same for `workload` at a small shape.
inline std::optional<Schedule> ExpectSchedulesCorrectly(const DefaultRule& rule,
                                                        const std::string& workload) {
  return ExpectSchedulesCorrectly(rule, testing::SmallWorkload(workload), workload);
}

// Expects `rule` to leave `workload` (small shape, sm_80) to the next rule.
inline void ExpectDeclines(const DefaultRule& rule, const std::string& workload) {
  absl::StatusOr<std::optional<Schedule>> sch =
      rule.Apply(testing::SmallWorkload(workload), default_schedule_testing::CudaTarget("sm_80"));
  ASSERT_TRUE(sch.ok()) << sch.status();
  EXPECT_FALSE(sch->has_value()) << rule.name() << " claimed " << workload;
}

}  // namespace gpu_rule_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_RULES_DEFAULT_GPU_RULE_TESTING_H_
