// Tests of base/check.cc: a failed TESSERA_CHECK aborts with the file, the line, the condition
// and the streamed message; a check that holds evaluates none of its message.
#include "base/check.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(CheckDeathTest, FailureAbortsNamingFileLineConditionAndMessage) {
  const int tiles = 3;
  EXPECT_DEATH(TESSERA_CHECK(tiles == 4) << "tiles " << tiles,
               "check_test.cc:[0-9]+: check failed: tiles == 4 tiles 3");
}

TEST(CheckDeathTest, ComparisonsPrintBothSides) {
  EXPECT_DEATH(TESSERA_CHECK_EQ(2 + 2, 5) << "arithmetic", "check failed: .* 4 vs 5: arithmetic");
  EXPECT_DEATH(TESSERA_CHECK_LT(7, 7), "7 vs 7");
  EXPECT_DEATH(TESSERA_UNREACHABLE() << "kind 9", "unreachable: kind 9");
}

TEST(CheckTest, AHoldingCheckEvaluatesNoneOfItsMessage) {
  int evaluated = 0;
  auto message = [&] {
    ++evaluated;
    return std::string("never");
  };
  TESSERA_CHECK(evaluated == 0) << message();
  TESSERA_CHECK_GE(1, 0) << message();
  EXPECT_EQ(evaluated, 0);
}

}  // namespace
}  // namespace tessera
