// Tests of ir/dtype.cc: data types: every type name parses and prints back, unknown names are
// errors, sizes and kinds.
#include "ir/dtype.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(DataTypeTest, ParsesAndPrintsEveryType) {
  for (const char* name :
       {"float32", "float16", "bfloat16", "float64", "int8", "int32", "int64", "uint8", "bool"}) {
    absl::StatusOr<DataType> t = DataType::Parse(name);
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_EQ(t->ToString(), name);
  }
  absl::StatusOr<DataType> unknown = DataType::Parse("float8");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      std::string(unknown.status().message()).rfind("unknown dtype 'float8' (expected float32", 0),
      0u);
  EXPECT_EQ(DataType::BFloat16().bytes(), 2);
  EXPECT_TRUE(DataType::BFloat16().is_float());
}

}  // namespace
}  // namespace tessera
