// Tests of ir/target.cc: targets: parsing, canonical strings that parse back to the same target,
// and bad input rejected.
#include "ir/target.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(TargetTest, ParsesAndCanonicalizes) {
  absl::StatusOr<Target> t = Target::Parse(
      "cuda -arch=sm_90 -max_threads_per_block=1024 -max_shared_memory_per_block=49152");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->is_cuda());
  EXPECT_EQ(t->compute_capability(), 90);
  EXPECT_EQ(t->warp_size(), 32);
  absl::StatusOr<Target> again = Target::Parse(t->ToString());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *t);
  absl::StatusOr<Target> cpu = Target::Parse("cpu -cores=2");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->cores(), 2);
  EXPECT_EQ(cpu->ToString(), "cpu -cores=2 -vector_bits=256");
}

TEST(TargetTest, RejectsBadInput) {
  EXPECT_FALSE(Target::Parse("").ok());
  EXPECT_FALSE(Target::Parse("rocm").ok());
  EXPECT_FALSE(Target::Parse("cpu -cores").ok());
  EXPECT_FALSE(Target::Parse("cpu -cores=zero").ok());
  EXPECT_FALSE(Target::Parse("cpu -arch=sm_90").ok());
  EXPECT_FALSE(Target::Parse("cuda -arch=90").ok());
  absl::StatusOr<Target> unknown = Target::Parse("cpu -threads=4");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(std::string(unknown.status().message()).find("known: -cores"), std::string::npos);
}

TEST(TargetTest, ErrorsSayWhatIsWrongWithWhichOption) {
  auto message = [](const std::string& text) {
    absl::StatusOr<Target> t = Target::Parse(text);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << text;
    return std::string(t.status().message());
  };
  EXPECT_EQ(message("  "), "empty target string");
  EXPECT_EQ(message("rocm"), "unknown target kind 'rocm' (expected cpu or cuda)");
  EXPECT_EQ(message("cpu -cores"), "target option '-cores' is not of the form -key=value");
  EXPECT_EQ(message("cpu -cores=0"), "target cpu: -cores needs a positive integer, got '0'");
  EXPECT_EQ(message("cuda -arch=90"), "target cuda: -arch must look like sm_90, got '90'");
  EXPECT_EQ(message("cpu -arch=sm_90").rfind("target cpu: unknown key -arch (known: -", 0), 0u);
}

TEST(TargetTest, AliasesOfTheCpuKindAndDoubleDashesParse) {
  for (const char* text : {"llvm -cores=2", "c --cores=2", "cpu   -cores=2"}) {
    absl::StatusOr<Target> t = Target::Parse(text);
    ASSERT_TRUE(t.ok()) << text << ": " << t.status();
    EXPECT_FALSE(t->is_cuda()) << text;
    EXPECT_EQ(t->cores(), 2) << text;
  }
}

}  // namespace
}  // namespace tessera
