// The acceptance test of issue #5's design spaces: for every workload of the library (at its
// small test shape) and both targets, the default rules give at least one design space, and
// of 200 random samples (drawn from the simplified design-space traces as the search
// strategies draw them: tuner/space_generator.h SampleCandidate) at least 95% pass the default
// postprocessors and build:
//   - cpu: with the C builder, and every one that builds computes what the unscheduled
//     function computes (run once against the interpreter);
//   - cuda (sm_80, NVRTC, no GPU needed): with NVRTC, VerifyGPUCode among the postprocessors.
// A sample is what the search strategies get from the sampler: a draw rejected by a
// postprocessor is drawn again, up to kDefaultMaxDraws times. The share of single draws that
// pass is printed. On cuda it is near 100%: MultiLevelTiling samples the tile factors bound to
// threadIdx and vthread under VerifyGPUCode's thread-count bounds (SamplePerfectTile with
// product limits, rules/rule/multi_level_tiling.h), where free sampling (MetaSchedule's) passed
// only 1-7% of draws for the matmul/conv family at these shapes and left C2D, GRP, CAP, CBR
// and DENSE_BIAS_RELU short of 95% within kDefaultMaxDraws.
// Seeds are fixed, so a failure names a reproducible candidate (seed and trace).
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/lower.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
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

void PrintTo(const SpaceCase& c, std::ostream* os) { *os << c.workload << " on " << c.target; }

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

// The C builder of this test: -O0, all candidates of one Build call in 4 compiler calls
// (CBuilderOptions::batch_size). Optimizing is what makes compiling slow here: with -O1 or
// -O3, candidates whose loops RewriteParallelVectorizeUnroll marked for explicit unrolling
// (up to 512 steps, 256 copies of a body with long index expressions) take 2-15 s each in
// gcc, and 20 workloads x 200 candidates would not fit the CI budget on 2 cores. At -O0 the
// generated C, its OpenMP pragmas and so the schedule's semantics are the same; the
// production flags are exercised by the backend's tests and by `tessera sample`.
std::unique_ptr<Builder> TestCBuilder() {
  CBuilderOptions options;
  options.optimization_flags = {"-O0"};
  options.batch_size = kSamples / 4;
  return NewCBuilder(options);
}

// The NVRTC builder of this test: with --Ofast-compile=max (NVRTC 12.8 and later) NVRTC
// compiles these kernels about 5x faster (0.07 s instead of 0.35 s each); the candidates are
// only compiled, never run, so what is checked (the source is valid CUDA within the target's
// limits) does not depend on device-code optimization. Older NVRTCs reject the option, and
// then the default options are used.
std::unique_ptr<Builder> TestNvrtcBuilder() {
  NvrtcBuilderOptions options;
  NvrtcCompileOptions fast;
  fast.extra_flags = {"--Ofast-compile=max"};
  if (CompileCudaSource("__global__ void k(float* x) { x[0] = 1; }\n", "sm_80", fast).ok()) {
    options.compile = fast;
  }
  return NewNvrtcBuilder(options);
}

// A valid candidate's reproducer: its index among the valid ones, its design space, its seed
// and its postprocessed trace.
std::string Reproducer(int index, const SampledCandidate& sample) {
  return absl::StrCat("valid candidate ", index, " (space ", sample.space, ", seed ",
                      sample.seed, "), trace:\n", sample.schedule->trace().ToJson());
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
  for (const Schedule& s : *spaces) traces.push_back(s.trace().Simplified(true));

  Random rng(kSeed);
  std::vector<SampledCandidate> valid;
  int draws = 0;
  std::map<std::string, int> rejected;  // rejected draws by stage
  std::map<std::string, std::string> first_rejection;
  for (int i = 0; i < kSamples; ++i) {
    SampledCandidate sample =
        SampleCandidate(func, traces, config->postprocs, &rng, kDefaultMaxDraws);
    draws += sample.draws;
    for (const CandidateFailure& f : sample.rejections) {
      ++rejected[f.stage];
      first_rejection.emplace(f.stage, f.message);
    }
    if (sample.schedule.ok()) valid.push_back(std::move(sample));
  }

  std::vector<BuildInput> inputs;
  for (const SampledCandidate& s : valid) inputs.push_back({s.schedule->func(), *target});
  std::unique_ptr<Builder> builder = target->is_cpu() ? TestCBuilder() : TestNvrtcBuilder();
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
  const std::string summary = absl::StrCat(
      spaces->size(), " spaces; ", valid.size(), " of ", kSamples, " valid, ", built, " built; ",
      draws, " draws (", 100 * valid.size() / std::max(draws, 1),
      "% passed)\nrejected draws: ", absl::StrJoin(rejections, "\n  "),
      "\nfirst build failure: ", first_build_error);
  std::printf("%s on %s: %s\n", c.workload.c_str(), c.target.c_str(),
              summary.substr(0, summary.find('\n')).c_str());
  EXPECT_GE(built, kMinValidAndBuilt) << summary;

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

// Whether a SamplePaddedTile of `sch` chose factors whose product exceeds the extent.
bool HasNonDividingTile(const Schedule& sch) {
  const Trace& trace = sch.trace();
  for (size_t i = 0; i < trace.size(); ++i) {
    if (trace.insts()[i].kind->name != std::string("SamplePaddedTile")) continue;
    int64_t product = 1;
    for (int64_t f : trace.decision(i).AsIntArray()) product *= f;
    // Padding is at most an eighth of the extent, so the padded products of 37, 67 and 23
    // do not overlap: a product that is none of them is a padded one.
    if (product != 37 && product != 67 && product != 23) return true;
  }
  return false;
}

// With padded tiles (MultiLevelTiling pad_odd_extents, given by rule name), samples of a
// prime-shape GMM have tiles that do not divide its extents, pass the postprocessors (parallel,
// vectorized and unrolled loops over the guarded tiles), build, and compute the reference;
// the lowering puts their write caches inside the tile loops (codegen/compact_buffers.h).
TEST(PaddedSpaceTest, PrimeGmmSamplesBuildAndComputeTheReference) {
  absl::StatusOr<Target> target = ResolveTarget("cpu");
  ASSERT_TRUE(target.ok()) << target.status();
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM", {{"B", 1}, {"M", 37}, {"N", 67}, {"K", 23}});
  ASSERT_TRUE(func.ok()) << func.status();
  absl::StatusOr<SpaceConfig> config =
      DefaultSpaceConfig(*target, {{"MultiLevelTiling", {{"pad_odd_extents", true}}}});
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<std::vector<Schedule>> spaces = GenerateDesignSpaces(*func, *config, kSeed);
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  std::vector<Trace> traces;
  for (const Schedule& s : *spaces) traces.push_back(s.trace().Simplified(true));
  Random rng(kSeed);
  std::vector<SampledCandidate> valid;
  std::vector<BuildInput> inputs;
  int non_dividing = 0, cached = 0, cache_compacted = 0;
  for (int i = 0; i < 32; ++i) {
    SampledCandidate sample =
        SampleCandidate(*func, traces, config->postprocs, &rng, kDefaultMaxDraws);
    if (!sample.schedule.ok()) continue;
    non_dividing += HasNonDividingTile(*sample.schedule);
    // A write cache of a padded tiling, after the postprocessors, is still lowered into its
    // tile loop (not kept whole at the root).
    absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sample.schedule->func());
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    bool has_cache = false, at_root = false;
    PostOrderVisitStmts(lowered->body(), [&](const Stmt& st) {
      const auto* alloc = st.as<AllocateNode>();
      has_cache = has_cache || (alloc != nullptr && alloc->buffer.name() == "C_global");
    });
    for (Stmt st = lowered->body(); st.as<AllocateNode>() != nullptr;
         st = st.as<AllocateNode>()->body) {
      at_root = at_root || st.as<AllocateNode>()->buffer.name() == "C_global";
    }
    cached += has_cache;
    cache_compacted += has_cache && !at_root;
    inputs.push_back({sample.schedule->func(), *target});
    valid.push_back(std::move(sample));
  }
  EXPECT_GE(valid.size(), 30u);
  EXPECT_GT(non_dividing, 0);
  std::printf("%zu valid, %d with a non-dividing tile, %d with a write cache, %d compacted\n",
              valid.size(), non_dividing, cached, cache_compacted);
  EXPECT_GT(cached, 0);
  EXPECT_EQ(cache_compacted, cached);
  std::unique_ptr<Builder> builder = TestCBuilder();  // owns the built artifacts
  std::vector<BuildResult> builds = builder->Build(inputs);
  absl::StatusOr<ReferenceOutputs> reference = ComputeReference(*func, kSeed, 60);
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (size_t i = 0; i < builds.size(); ++i) {
    ASSERT_TRUE(builds[i].ok()) << builds[i].error_msg << "\n"
                                << Reproducer(static_cast<int>(i), valid[i]);
    absl::StatusOr<CheckOutcome> check =
        CheckAgainstReference(inputs[i].func, *reference, *target, builds[i], 60);
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->passed) << check->mismatches << " mismatches\n"
                               << Reproducer(static_cast<int>(i), valid[i]);
  }
}

}  // namespace
}  // namespace tessera
