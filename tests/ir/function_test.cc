// Tests of ir/function.cc: functions and modules: a lookup of a missing function names the ones the
// module has.
#include "ir/function.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(FunctionTest, ModuleLookupNamesMissingFunction) {
  IRModule mod;
  Buffer a = Buffer::Make("A", DataType::Float32(), {4});
  BlockNode root;
  root.name = "root";
  root.body = Evaluate(Expr(0));
  mod.Update(PrimFunc::Make("f", {a}, BlockRealize({}, True(), MakeBlock(root))));
  EXPECT_TRUE(mod.Lookup("f").ok());
  absl::StatusOr<PrimFunc> missing = mod.Lookup("g");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find("has: f"), std::string::npos);
  EXPECT_EQ(mod.Lookup("f")->root_block()->name, "root");
}

}  // namespace
}  // namespace tessera
