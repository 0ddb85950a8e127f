// Tests of the host target probe.
#include "worker/host.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(HostTest, CpuKeysComeFromTheHostUnlessGiven) {
  absl::StatusOr<Target> target = ResolveTarget("cpu");
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->cores(), HostCpuCores());
  EXPECT_EQ(target->vector_bits(), HostVectorBits());
  EXPECT_TRUE(HostVectorBits() == 128 || HostVectorBits() == 256 || HostVectorBits() == 512);

  target = ResolveTarget("cpu -cores=3");
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->cores(), 3);
  EXPECT_EQ(target->vector_bits(), HostVectorBits());

  target = ResolveTarget("cpu --vector_bits=128");
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->vector_bits(), 128);
  EXPECT_EQ(target->cores(), HostCpuCores());
}

TEST(HostTest, OtherKindsAndErrorsPassThrough) {
  absl::StatusOr<Target> target = ResolveTarget("cuda -arch=sm_90");
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->arch(), "sm_90");
  EXPECT_FALSE(ResolveTarget("tpu").ok());
  EXPECT_FALSE(ResolveTarget("cpu -cores=zero").ok());
}

TEST(HostTest, ATargetIsCompleteWhenItGivesEveryKeyOfItsKind) {
  EXPECT_TRUE(IsCompleteTarget("cpu -cores=2 -vector_bits=512"));
  EXPECT_FALSE(IsCompleteTarget("cpu"));
  EXPECT_FALSE(IsCompleteTarget("cpu -cores=2"));
  EXPECT_FALSE(IsCompleteTarget("cuda -arch=sm_90"));
  EXPECT_TRUE(IsCompleteTarget(Target::Parse("cuda -arch=sm_90")->ToString()));
  EXPECT_FALSE(IsCompleteTarget("tpu -cores=2"));
}

TEST(HostTest, APartialTargetDescribesTargetsWithTheValuesItGives) {
  const std::string cpu512 = "cpu -cores=2 -vector_bits=512";
  EXPECT_TRUE(TargetDescribes("cpu", cpu512));
  EXPECT_TRUE(TargetDescribes("cpu -cores=2", cpu512));
  EXPECT_FALSE(TargetDescribes("cpu -cores=4", cpu512));
  EXPECT_FALSE(TargetDescribes("cpu -vector_bits=256", cpu512));
  EXPECT_FALSE(TargetDescribes("cuda", cpu512));
  const std::string h100 = Target::Parse("cuda -arch=sm_90 -sm_count=132")->ToString();
  EXPECT_TRUE(TargetDescribes("cuda -arch=sm_90", h100));
  EXPECT_FALSE(TargetDescribes("cuda -arch=sm_80", h100));
  EXPECT_FALSE(TargetDescribes("cpu", "not a target"));
}

TEST(HostTest, CpuNameIsKnown) {
  EXPECT_FALSE(HostCpuName().empty());
  EXPECT_GE(HostCpuCores(), 1);
}

}  // namespace
}  // namespace tessera
