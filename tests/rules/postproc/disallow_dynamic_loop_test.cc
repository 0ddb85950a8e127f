// DisallowDynamicLoop (rules/postproc/disallow_dynamic_loop.cc). On schedules built by hand with
// the annotations the schedule rules produce: what it rewrites or rejects (with the reason), and
// that the result computes what the unscheduled function computes and replays from its trace JSON.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rules/postproc.h"
#include "tests/codegen/test_funcs.h"
#include "tests/rules/postproc_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using postproc_testing::Contains;
using postproc_testing::Cpu;
using postproc_testing::Make;
using postproc_testing::RunPostprocs;
using testing::SmallWorkload;

TEST(DisallowDynamicLoopTest, RejectsLoopWithSymbolicExtentNamingIt) {
  Var n("n");
  Buffer a = Buffer::Make("A", DataType::Float32(), {n});
  Buffer b = Buffer::Make("B", DataType::Float32(), {n});
  PrimFunc func = testing_funcs::MakeFunc(
      "main", {a, b}, testing_funcs::ElementwiseNest("B", b, {}, [&](const std::vector<Var>& v) {
        return a.Load({v[0]}) * MakeConst(DataType::Float32(), 2);
      }));
  Schedule sch = Schedule::Create(func, 0);
  absl::Status s = RunPostprocs(&sch, {Make(NewDisallowDynamicLoop, Cpu())});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(s.message()),
                       "DisallowDynamicLoop: loop i (above block B) has the non-constant extent n"))
      << s;

  Schedule fixed = Schedule::Create(SmallWorkload("GMM"), 0);
  EXPECT_TRUE(RunPostprocs(&fixed, {Make(NewDisallowDynamicLoop, Cpu())}).ok());
}

}  // namespace
}  // namespace tessera
