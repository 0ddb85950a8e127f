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
  EXPECT_EQ(cpu->ToString(),
            "cpu -cores=2 -vector_bits=256 -fma_per_cycle=1 -l1d_kb=32 -l2_kb=1024 -isa=avx2+fma");
}

// Hopper parts all let a block opt in to 227 KiB of shared memory: sm_90 and sm_90a default to
// it, earlier architectures keep 48 KiB; a given limit always wins. sm_90a is arch-specific.
TEST(TargetTest, SharedMemoryDefaultsFollowTheArchitecture) {
  EXPECT_EQ(Target::Parse("cuda -arch=sm_90a")->max_shared_memory_per_block(), 232448);
  EXPECT_EQ(Target::Parse("cuda -arch=sm_90")->max_shared_memory_per_block(), 232448);
  EXPECT_EQ(Target::Parse("cuda -arch=sm_80")->max_shared_memory_per_block(), 49152);
  EXPECT_EQ(Target::Parse("cuda -arch=sm_90a -max_shared_memory_per_block=49152")
                ->max_shared_memory_per_block(),
            49152);
  EXPECT_TRUE(Target::Parse("cuda -arch=sm_90a")->arch_specific());
  EXPECT_FALSE(Target::Parse("cuda -arch=sm_90")->arch_specific());
  EXPECT_FALSE(Target::Parse("cpu")->arch_specific());
  const Target hopper = *Target::Parse("cuda -arch=sm_90a");
  EXPECT_EQ(*Target::Parse(hopper.ToString()), hopper);
}

TEST(TargetTest, CpuCoreKeysRoundTripAndAreCanonical) {
  absl::StatusOr<Target> t = Target::Parse(
      "cpu -isa=avx512vnni+avx2+avx512f+fma+avx2 -l2_kb=2048 -fma_per_cycle=2 -cores=8 "
      "-vector_bits=512 -l1d_kb=48");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->ToString(),
            "cpu -cores=8 -vector_bits=512 -fma_per_cycle=2 -l1d_kb=48 -l2_kb=2048 "
            "-isa=avx2+fma+avx512f+avx512vnni");
  EXPECT_EQ(t->fma_per_cycle(), 2);
  EXPECT_EQ(t->l1d_bytes(), 48 * 1024);
  EXPECT_EQ(t->l2_bytes(), 2048 * 1024);
  EXPECT_TRUE(t->has_isa("avx512vnni"));
  EXPECT_FALSE(t->has_isa("amx-bf16"));
  absl::StatusOr<Target> again = Target::Parse(t->ToString());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *t);
  EXPECT_EQ(again->ToString(), t->ToString());
  // With() normalizes as Parse does.
  absl::StatusOr<Target> amx = t->With("isa", "amx-int8+amx-tile+avx512f");
  ASSERT_TRUE(amx.ok()) << amx.status();
  EXPECT_EQ(amx->GetString("isa"), "avx512f+amx-tile+amx-int8");
  EXPECT_FALSE(amx->has_isa("avx2"));
}

TEST(TargetTest, OldStringsParseWithTheDefaultsOfTheNewKeys) {
  // Records and token files written before the core keys existed.
  absl::StatusOr<Target> old = Target::Parse("cpu -cores=2 -vector_bits=512");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->ToString(),
            "cpu -cores=2 -vector_bits=512 -fma_per_cycle=1 -l1d_kb=32 -l2_kb=1024 "
            "-isa=avx2+fma+avx512f");
  EXPECT_NE(old->ToString(), "cpu -cores=2 -vector_bits=512") << "records key on the new string";
  EXPECT_TRUE(old->has_isa("avx512f"));
  absl::StatusOr<Target> narrow = Target::Parse("cpu -vector_bits=128");
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_EQ(narrow->GetString("isa"), "none");
  EXPECT_FALSE(narrow->has_isa("fma"));
  // A given -isa wins over the one the width implies.
  EXPECT_EQ(Target::Parse("cpu -vector_bits=512 -isa=none")->GetString("isa"), "none");
}

TEST(TargetTest, BadCoreKeysSayWhatIsWrong) {
  auto message = [](const std::string& text) {
    absl::StatusOr<Target> t = Target::Parse(text);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << text;
    return std::string(t.status().message());
  };
  EXPECT_EQ(message("cpu -fma_per_cycle=0"),
            "target cpu: -fma_per_cycle needs a positive integer, got '0'");
  EXPECT_EQ(message("cpu -l2_kb=1M"), "target cpu: -l2_kb needs a positive integer, got '1M'");
  EXPECT_EQ(
      message("cpu -isa=avx2+sse9")
          .rfind("target cpu: -isa: unknown flag 'sse9' in 'avx2+sse9' (known: avx2, fma, ", 0),
      0u);
  EXPECT_EQ(message("cpu -isa=").rfind("target cpu: -isa: unknown flag '' in ''", 0), 0u);
  EXPECT_EQ(message("cpu -isa=none+avx2").rfind("target cpu: -isa: unknown flag 'none'", 0), 0u);
  EXPECT_EQ(message("cuda -isa=avx2").rfind("target cuda: unknown key -isa (known: -arch", 0), 0u);
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
