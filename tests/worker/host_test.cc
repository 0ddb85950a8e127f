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

TEST(HostTest, CpuNameIsKnown) {
  EXPECT_FALSE(HostCpuName().empty());
  EXPECT_GE(HostCpuCores(), 1);
}

}  // namespace
}  // namespace tessera
