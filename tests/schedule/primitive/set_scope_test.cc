// SetScope: an intermediate buffer moves to another scope; parameters and unknown scopes are
// rejected.
#include <string>

#include "gtest/gtest.h"
#include "ir/printer.h"
#include "schedule/schedule.h"
#include "tests/schedule/primitive/cache_testing.h"

namespace tessera {
namespace {

using cache_testing::BlockNamed;
using cache_testing::ExpectCBackendMatches;
using cache_testing::ExpectCorrect;
using cache_testing::ExpectRejected;
using cache_testing::RootAlloc;
using cache_testing::Sfm;

TEST(SetScopeTest, SoftmaxMaxIntoSharedBuildsAndRuns) {
  PrimFunc func = Sfm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV max = *sch.GetBlock("T_softmax_maxelem");
  ASSERT_TRUE(sch.SetScope(max, 0, "shared").ok());
  Buffer buffer = RootAlloc(sch.func(), "T_softmax_maxelem");
  EXPECT_EQ(buffer.scope(), "shared");
  // Every reference is the new buffer object.
  EXPECT_TRUE(BlockNamed(sch, "T_softmax_maxelem")->writes[0].buffer.same_as(buffer));
  EXPECT_TRUE(BlockNamed(sch, "T_softmax_exp")->reads[1].buffer.same_as(buffer));
  EXPECT_NE(PrintFunc(sch.func()).find("scope=\"shared\""), std::string::npos);
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(SetScopeTest, RejectsParamsAndBadScopes) {
  PrimFunc func = Sfm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV max = *sch.GetBlock("T_softmax_maxelem");
  BlockRV norm = *sch.GetBlock("T_softmax_norm");
  PrimFunc before = sch.func();
  size_t n = sch.trace().size();
  ExpectRejected(sch.SetScope(norm, 0, "shared"),
                 "set_scope: buffer T_softmax_norm written by block T_softmax_norm is a function "
                 "parameter",
                 sch, before, n);
  ExpectRejected(sch.SetScope(max, 1, "shared"),
                 "set_scope: buffer_index 1 is out of range for block T_softmax_maxelem", sch,
                 before, n);
  ExpectRejected(sch.SetScope(max, 0, "sharde"), "set_scope: invalid storage scope 'sharde'", sch,
                 before, n);
}

}  // namespace
}  // namespace tessera
