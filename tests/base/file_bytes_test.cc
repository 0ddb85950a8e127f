// Tests of base/file_bytes.cc: a binary file is read whole, a missing one is named.
#include "base/file_bytes.h"

#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/scoped_temp_dir.h"

namespace tessera {
namespace {

TEST(FileBytesTest, ReadsBinaryWholeAndNamesAMissingFile) {
  std::string dir = tessera::testing::ScratchDirUntilTestEnds("read_file_bytes_test");
  const std::string bytes(
      "\x7f"
      "ELF\0\x01\xff\n\r",
      9);
  std::ofstream(dir + "/blob.cubin", std::ios::binary) << bytes;
  absl::StatusOr<std::string> read = ReadFileBytes(dir + "/blob.cubin");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, bytes);
  absl::StatusOr<std::string> missing = ReadFileBytes(dir + "/none.cubin");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "cannot read " + dir + "/none.cubin");
}

}  // namespace
}  // namespace tessera
