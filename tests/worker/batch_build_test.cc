// Tests of the C builder's batched mode (CBuilderOptions::batch_size) and of checking many
// candidates against one reference computation (worker/check.h ComputeReference).
#include <set>

#include "gtest/gtest.h"
#include "tests/codegen/test_funcs.h"
#include "worker/builder.h"
#include "worker/check.h"

namespace tessera {
namespace {

using testing_funcs::Matmul;

Target Cpu() { return *Target::Parse("cpu"); }

std::unique_ptr<Builder> BatchBuilder(int batch_size) {
  CBuilderOptions options;
  options.optimization_flags = {"-O0"};
  options.batch_size = batch_size;
  return NewCBuilder(options);
}

TEST(BatchBuildTest, BatchesShareAnArtifactAndKeepDistinctSymbols) {
  // Five functions of one name (as candidates of one workload are): batches of 2, 2 and 1.
  std::vector<BuildInput> inputs;
  for (int64_t k : {2, 3, 4, 5, 6}) inputs.push_back({Matmul(4, 3, k).WithName("main"), Cpu()});
  std::vector<BuildResult> results = BatchBuilder(2)->Build(inputs);
  ASSERT_EQ(results.size(), 5u);
  std::set<std::string> symbols;
  for (const BuildResult& r : results) {
    ASSERT_TRUE(r.ok()) << r.error_msg;
    symbols.insert(r.symbol);
  }
  EXPECT_EQ(symbols.size(), 5u);
  EXPECT_EQ(results[0].artifact_path, results[1].artifact_path);
  EXPECT_EQ(results[2].artifact_path, results[3].artifact_path);
  EXPECT_NE(results[1].artifact_path, results[2].artifact_path);
  EXPECT_NE(results[3].artifact_path, results[4].artifact_path);
}

TEST(BatchBuildTest, EveryKernelOfABatchComputesItsOwnFunction) {
  // Keep the builder alive: artifacts live as long as it does.
  std::unique_ptr<Builder> builder = BatchBuilder(8);
  std::vector<BuildInput> inputs;
  for (int64_t k : {1, 7, 16}) inputs.push_back({Matmul(5, 4, k).WithName("main"), Cpu()});
  std::vector<BuildResult> results = builder->Build(inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].error_msg;
    absl::StatusOr<ReferenceOutputs> reference = ComputeReference(inputs[i].func, 3, 30);
    ASSERT_TRUE(reference.ok()) << reference.status();
    absl::StatusOr<CheckOutcome> check =
        CheckAgainstReference(inputs[i].func, *reference, Cpu(), results[i], 30);
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->passed) << i << ": " << check->mismatches << " mismatches";
  }
}

TEST(BatchBuildTest, AFailingBatchAttributesErrorsToItsInputs) {
  auto [good, bound] = testing_funcs::ElementwiseAndThreadBound(8);
  std::vector<BuildResult> results = BatchBuilder(4)->Build(
      {{good, Cpu()}, {bound, Cpu()}, {good, Cpu()}, {good, *Target::Parse("cuda -arch=sm_80")}});
  ASSERT_EQ(results.size(), 4u);
  EXPECT_TRUE(results[0].ok()) << results[0].error_msg;
  EXPECT_EQ(results[1].error_msg, "cpu codegen: loop i bound to threadIdx.x");
  EXPECT_TRUE(results[2].ok()) << results[2].error_msg;
  EXPECT_NE(results[3].error_msg.find("is not a cpu target"), std::string::npos);

  CBuilderOptions bad_flag;
  bad_flag.extra_flags = {"-fno-such-flag-at-all"};
  bad_flag.batch_size = 4;
  results = NewCBuilder(bad_flag)->Build({{good, Cpu()}, {good, Cpu()}});
  for (const BuildResult& r : results) {
    EXPECT_NE(r.error_msg.find("-fno-such-flag-at-all"), std::string::npos) << r.error_msg;
    EXPECT_TRUE(r.artifact_path.empty());
  }
}

TEST(BatchBuildTest, ReferenceOfOtherParametersIsAnError) {
  std::unique_ptr<Builder> builder = BatchBuilder(1);
  PrimFunc f = Matmul(4, 4, 4);
  std::vector<BuildResult> built = builder->Build({{f, Cpu()}});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;
  absl::StatusOr<ReferenceOutputs> other = ComputeReference(Matmul(4, 4, 2), 0, 30);
  ASSERT_TRUE(other.ok()) << other.status();
  absl::StatusOr<CheckOutcome> check = CheckAgainstReference(f, *other, Cpu(), built[0], 30);
  EXPECT_EQ(check.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
