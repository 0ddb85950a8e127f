// Tests of the host target probe.
#include "worker/host.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
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

TEST(HostTest, TheCoreComesFromTheHostWithSaneValues) {
  const HostCpuInfo& host = HostCpu();
  absl::StatusOr<Target> target = ResolveTarget("cpu");
  ASSERT_TRUE(target.ok()) << target.status();
  // Ranges that hold for the x86 cores of the last 15 years, where the host reports caches.
  if (host.cache_source != "unknown") {
    EXPECT_GE(target->l1d_bytes(), 16 * 1024) << target->ToString();
    EXPECT_LE(target->l1d_bytes(), 256 * 1024) << target->ToString();
    EXPECT_GE(target->l2_bytes(), 256 * 1024) << target->ToString();
    EXPECT_LE(target->l2_bytes(), 8 * 1024 * 1024) << target->ToString();
  }
  EXPECT_TRUE(target->fma_per_cycle() == 1 || target->fma_per_cycle() == 2) << target->ToString();
  EXPECT_EQ(target->has_isa("avx512f"), target->vector_bits() == 512) << target->ToString();
  if (target->vector_bits() >= 256) {
    EXPECT_TRUE(target->has_isa("avx2")) << target->ToString();
  }
  FmaProbe probe = HostFmaProbe(HostVectorBits());
  if (probe.measured) {
    EXPECT_EQ(target->fma_per_cycle(), probe.fma_per_cycle);
    // 1-4 GHz x lanes x 2 flops x 1-2 pipes; a loaded machine only lowers it.
    EXPECT_GT(probe.peak_gflops, 1.0);
    EXPECT_LT(probe.peak_gflops, 4.0 * HostVectorBits() / 32 * 2 * 2 * 1.5);
    EXPECT_GT(probe.peak_gflops, probe.latency_gflops * 0.9);
  }
  // Detected once: a second resolve in the process gives the same string.
  EXPECT_EQ(ResolveTarget("cpu")->ToString(), target->ToString());
}

TEST(HostTest, GivenCoreKeysOverrideTheHost) {
  absl::StatusOr<Target> target =
      ResolveTarget("cpu -fma_per_cycle=2 -l1d_kb=48 -l2_kb=2048 -isa=avx2+fma");
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->fma_per_cycle(), 2);
  EXPECT_EQ(target->l1d_bytes(), 48 * 1024);
  EXPECT_EQ(target->l2_bytes(), 2048 * 1024);
  EXPECT_EQ(target->GetString("isa"), "avx2+fma");
  EXPECT_EQ(target->cores(), HostCpuCores());
  // An old-style explicit string still resolves: its two keys kept, the rest from the host.
  target = ResolveTarget("cpu -cores=2 -vector_bits=512");
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->cores(), 2);
  EXPECT_EQ(target->vector_bits(), 512);
}

TEST(HostTest, OtherKindsAndErrorsPassThrough) {
  absl::StatusOr<Target> target = ResolveTarget("cuda -arch=sm_90");
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->arch(), "sm_90");
  EXPECT_FALSE(ResolveTarget("tpu").ok());
  EXPECT_FALSE(ResolveTarget("cpu -cores=zero").ok());
}

TEST(HostTest, ATargetIsCompleteWhenItGivesEveryKeyOfItsKind) {
  EXPECT_TRUE(IsCompleteTarget(
      "cpu -cores=2 -vector_bits=512 -fma_per_cycle=1 -l1d_kb=32 -l2_kb=1024 -isa=avx2+fma"));
  // Complete before the core keys existed, partial now: completed like "cpu -cores=2".
  EXPECT_FALSE(IsCompleteTarget("cpu -cores=2 -vector_bits=512"));
  EXPECT_FALSE(IsCompleteTarget("cpu"));
  EXPECT_FALSE(IsCompleteTarget("cpu -cores=2"));
  EXPECT_FALSE(IsCompleteTarget("cuda -arch=sm_90"));
  EXPECT_TRUE(IsCompleteTarget(Target::Parse("cuda -arch=sm_90")->ToString()));
  EXPECT_FALSE(IsCompleteTarget("tpu -cores=2"));
}

TEST(HostTest, APartialTargetDescribesTargetsWithTheValuesItGives) {
  const std::string cpu512 =
      "cpu -cores=2 -vector_bits=512 -fma_per_cycle=2 -l1d_kb=48 -l2_kb=2048 "
      "-isa=avx2+fma+avx512f+avx512vnni";
  EXPECT_TRUE(TargetDescribes("cpu", cpu512));
  EXPECT_TRUE(TargetDescribes("cpu -cores=2", cpu512));
  EXPECT_TRUE(TargetDescribes("cpu -cores=2 -vector_bits=512", cpu512)) << "an old-style one";
  EXPECT_FALSE(TargetDescribes("cpu -cores=4", cpu512));
  EXPECT_FALSE(TargetDescribes("cpu -vector_bits=256", cpu512));
  EXPECT_FALSE(TargetDescribes("cuda", cpu512));
  EXPECT_TRUE(TargetDescribes("cpu -fma_per_cycle=2 -l2_kb=2048", cpu512));
  EXPECT_FALSE(TargetDescribes("cpu -fma_per_cycle=1", cpu512));
  EXPECT_FALSE(TargetDescribes("cpu -l1d_kb=32", cpu512));
  // -isa compares as a set in canonical order, and the whole set: not a subset.
  EXPECT_TRUE(TargetDescribes("cpu -isa=avx512vnni+avx512f+fma+avx2", cpu512));
  EXPECT_FALSE(TargetDescribes("cpu -isa=avx2+fma+avx512f", cpu512));
  const std::string h100 = Target::Parse("cuda -arch=sm_90 -sm_count=132")->ToString();
  EXPECT_TRUE(TargetDescribes("cuda -arch=sm_90", h100));
  EXPECT_FALSE(TargetDescribes("cuda -arch=sm_80", h100));
  EXPECT_FALSE(TargetDescribes("cpu", "not a target"));
}

TEST(HostTest, CpuNameIsKnown) {
  EXPECT_FALSE(HostCpuName().empty());
  EXPECT_GE(HostCpuCores(), 1);
}

// The probe kept for later processes reads back only for the same CPU and width, and a line
// that is not one (truncated, edited, another format) is no probe.
TEST(HostTest, TheKeptFmaProbeReadsBackOnlyForItsCpuAndWidth) {
  FmaProbe probe;
  probe.vector_bits = 512;
  probe.measured = true;
  probe.fma_per_cycle = 2;
  probe.peak_gflops = 177.25;
  probe.latency_gflops = 89.5;
  const std::string cpu = "Some Xeon [avx2+fma+avx512f]";
  const std::string line = FmaProbeCacheLine(cpu, probe);
  std::optional<FmaProbe> read = ParseFmaProbeCacheLine(line, cpu, 512);
  ASSERT_TRUE(read.has_value()) << line;
  EXPECT_TRUE(read->measured);
  EXPECT_EQ(read->vector_bits, 512);
  EXPECT_EQ(read->fma_per_cycle, 2);
  EXPECT_DOUBLE_EQ(read->peak_gflops, 177.25);
  EXPECT_DOUBLE_EQ(read->latency_gflops, 89.5);
  EXPECT_FALSE(ParseFmaProbeCacheLine(line, "Another CPU [avx2+fma]", 512).has_value());
  EXPECT_FALSE(ParseFmaProbeCacheLine(line, cpu, 256).has_value());
  for (const std::string& bad :
       {std::string(""), line.substr(0, line.size() / 2), cpu + "\t512\t3\t1.0\t1.0",
        cpu + "\t512\t2\t-1\t1.0", cpu + "\t512\t2\tx\t1.0", cpu + "\t512\t2\t1.0"}) {
    EXPECT_FALSE(ParseFmaProbeCacheLine(bad, cpu, 512).has_value()) << bad;
  }
}

TEST(HostTest, TheFmaProbeIsKeptInTheUsersCacheFolder) {
  const char* names[] = {"TESSERA_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved;
  for (const char* name : names) {
    const char* value = std::getenv(name);
    saved.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
  }
  setenv("HOME", "/home/u", 1);
  unsetenv("XDG_CACHE_HOME");
  unsetenv("TESSERA_CACHE_DIR");
  EXPECT_EQ(FmaProbeCachePath(512), "/home/u/.cache/tessera/fma-probe-512.txt");
  setenv("XDG_CACHE_HOME", "/x", 1);
  EXPECT_EQ(FmaProbeCachePath(256), "/x/tessera/fma-probe-256.txt");
  setenv("TESSERA_CACHE_DIR", "/t", 1);
  EXPECT_EQ(FmaProbeCachePath(512), "/t/fma-probe-512.txt");
  unsetenv("TESSERA_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  EXPECT_EQ(FmaProbeCachePath(512), "");
  for (const auto& [name, value] : saved) {
    if (value.has_value()) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
}

}  // namespace
TEST(HostTest, CompleteTargetTakesAFullOneAsWrittenAndAPartialOneFromTheFirstItDescribes) {
  const std::string cpu256 = Target::Parse("cpu -cores=4 -vector_bits=256")->ToString();
  const std::string cpu512 = Target::Parse("cpu -cores=2 -vector_bits=512")->ToString();
  int asked = 0;
  const KnownTargets known = [&]() -> absl::StatusOr<std::vector<std::string>> {
    ++asked;
    return std::vector<std::string>{cpu256, cpu512};
  };
  EXPECT_EQ(*CompleteTarget(cpu512, known), cpu512);
  EXPECT_EQ(asked, 0) << "a complete target asks for no known targets";
  EXPECT_EQ(*CompleteTarget("cpu", known), cpu256);
  EXPECT_EQ(*CompleteTarget("cpu -vector_bits=512", known), cpu512);
  EXPECT_FALSE(CompleteTarget("cpu -cores=8", known)->has_value());
  EXPECT_FALSE(CompleteTarget("cuda", known)->has_value());
  absl::StatusOr<std::optional<std::string>> bad = CompleteTarget("tpu", known);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(bad.status().message(), "target: ")) << bad.status();
  const KnownTargets failing = []() -> absl::StatusOr<std::vector<std::string>> {
    return absl::UnavailableError("no database");
  };
  EXPECT_EQ(CompleteTarget("cpu", failing).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace tessera
