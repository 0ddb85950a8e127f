// The acceptance test of issue #5's design spaces: for every workload of the library (at its
// small test shape) and both targets, the default rules give at least one design space, at
// least 95% of 200 random samples (ReplayTrace's draw: tuner/space_generator.h
// SampleCandidate) pass the default postprocessors and build (C compiler for cpu, NVRTC for
// cuda, no GPU needed), and on cpu every candidate that builds computes what the unscheduled
// function computes. Seeds are fixed, so a failure names a reproducible candidate.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "tests/testing/schedule_testing.h"
#include "tuner/space_generator.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/host.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

constexpr int kSamples = 200;
constexpr int kMinValidAndBuilt = kSamples * 95 / 100;
constexpr int64_t kSeed = 2024;

struct SpaceCase {
  std::string workload;
  std::string target;  // "cpu" or "cuda -arch=sm_80"
};

std::string CaseName(const ::testing::TestParamInfo<SpaceCase>& info) {
  return absl::StrCat(info.param.workload, info.param.target == "cpu" ? "_cpu" : "_cuda");
}

std::vector<SpaceCase> AllCases() {
  std::vector<SpaceCase> cases;
  for (const WorkloadInfo& w : ListWorkloads()) {
    cases.push_back({w.name, "cpu"});
    cases.push_back({w.name, "cuda -arch=sm_80"});
  }
  return cases;
}

// The C builder of this test. -O1 instead of the default -O3: the candidates differ from the
// default build only in how hard gcc optimizes the same loops, and -O3 with explicit unrolling
// of up to 512 steps makes some candidates take seconds to compile, which over 20 workloads x
// 200 candidates does not fit the CI budget on 2 cores. The generated code, the OpenMP
// pragmas and -march=native (vector widths) are the same as in production builds.
std::unique_ptr<Builder> TestCBuilder() {
  CBuilderOptions options;
  options.optimization_flags = {"-O1", "-march=native"};
  return NewCBuilder(options);
}

// A candidate's reproducer: the sample index, its seed and its postprocessed trace.
std::string Reproducer(int index, const SampledCandidate& sample) {
  return absl::StrCat("sample ", index, " (space ", sample.space, ", seed ", sample.seed,
                      "), trace:\n", sample.schedule->trace().ToJson());
}

class SpaceTest : public ::testing::TestWithParam<SpaceCase> {};

TEST_P(SpaceTest, SamplesPostprocessBuildAndComputeTheReference) {
  const SpaceCase& c = GetParam();
  absl::StatusOr<Target> target = ResolveTarget(c.target);
  ASSERT_TRUE(target.ok()) << target.status();
  if (target->is_cuda() && NvrtcSupportedArchs().empty()) GTEST_SKIP() << "built without NVRTC";
  PrimFunc func = testing::SmallWorkload(c.workload);
  absl::StatusOr<SpaceConfig> config = DefaultSpaceConfig(*target);
  ASSERT_TRUE(config.ok()) << config.status();

  absl::StatusOr<std::vector<Schedule>> spaces = GenerateDesignSpaces(func, *config, kSeed);
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  ASSERT_FALSE(spaces->empty());
  std::vector<Trace> traces;
  for (const Schedule& s : *spaces) traces.push_back(s.trace());

  Random rng(kSeed);
  std::vector<SampledCandidate> valid;
  std::map<std::string, int> rejected;
  std::map<std::string, std::string> first_rejection;
  for (int i = 0; i < kSamples; ++i) {
    SampledCandidate sample = SampleCandidate(func, traces, config->postprocs, &rng);
    if (sample.schedule.ok()) {
      valid.push_back(std::move(sample));
    } else {
      ++rejected[sample.failure.stage];
      first_rejection.emplace(sample.failure.stage,
                              absl::StrCat(sample.failure.message, " (seed ", sample.seed,
                                           ", space ", sample.space, ")"));
    }
  }

  std::vector<BuildInput> inputs;
  for (const SampledCandidate& s : valid) inputs.push_back({s.schedule->func(), *target});
  std::unique_ptr<Builder> builder = target->is_cpu() ? TestCBuilder() : NewNvrtcBuilder();
  std::vector<BuildResult> builds = builder->Build(inputs);
  int built = 0;
  std::string first_build_error;
  for (size_t i = 0; i < builds.size(); ++i) {
    if (builds[i].ok()) {
      ++built;
    } else if (first_build_error.empty()) {
      first_build_error = absl::StrCat(Reproducer(static_cast<int>(i), valid[i]), "\nerror: ",
                                       builds[i].error_msg);
    }
  }
  std::vector<std::string> rejections;
  for (const auto& [stage, count] : rejected) {
    rejections.push_back(absl::StrCat(stage, " x", count, ", first: ", first_rejection[stage]));
  }
  EXPECT_GE(built, kMinValidAndBuilt)
      << spaces->size() << " spaces; " << valid.size() << " of " << kSamples
      << " valid, " << built << " built\nrejected: " << absl::StrJoin(rejections, "\n  ")
      << "\nfirst build failure: " << first_build_error;

  if (!target->is_cpu()) return;
  absl::StatusOr<ReferenceOutputs> reference = ComputeReference(func, kSeed, 60);
  ASSERT_TRUE(reference.ok()) << reference.status();
  int wrong = 0;
  for (size_t i = 0; i < builds.size(); ++i) {
    if (!builds[i].ok()) continue;
    absl::StatusOr<CheckOutcome> check =
        CheckAgainstReference(inputs[i].func, *reference, *target, builds[i], 60);
    if (check.ok() && check->passed) continue;
    // Only the first wrong candidate is printed in full; the count says how many there are.
    if (++wrong == 1) {
      ADD_FAILURE() << (check.ok() ? absl::StrCat(check->mismatches, " mismatches, max abs error ",
                                                  check->max_abs_error)
                                   : std::string(check.status().message()))
                    << "\n" << Reproducer(static_cast<int>(i), valid[i]);
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << built << " built candidates";
}

INSTANTIATE_TEST_SUITE_P(AllWorkloads, SpaceTest, ::testing::ValuesIn(AllCases()), CaseName);

}  // namespace
}  // namespace tessera
