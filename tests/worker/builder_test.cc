// Tests of worker/builder.cc, the C builder: a batch gives one result per input, in order, and
// a function the CPU code generator refuses, a flag the compiler rejects or a missing compiler
// is that input's result (naming the loop, the flag or the compiler), never an error of the
// batch; the work directory goes with the builder unless it is kept; a simd loop over a
// strided access compiles in well under its time-out with the default flags; cancelled inputs
// are not compiled.
#include "worker/builder.h"

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/parser.h"
#include "tests/codegen/test_funcs.h"
#include "tests/worker/cpu_backend_testing.h"

namespace tessera {
namespace {

using testing::BuildAll;
using testing::Cpu;
using testing_funcs::Matmul;

TEST(CBuilderTest, BuildErrorsAreResults) {
  auto [good, bound] = testing_funcs::ElementwiseAndThreadBound(32);

  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> results =
      builder->Build({BuildInput{bound, Cpu()}, BuildInput{good, Cpu()},
                      BuildInput{good, *Target::Parse("cuda -arch=sm_90")}});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].error_msg, "cpu codegen: loop i bound to threadIdx.x");
  EXPECT_TRUE(results[1].ok()) << results[1].error_msg;
  EXPECT_TRUE(std::filesystem::exists(results[1].artifact_path));
  EXPECT_NE(results[2].error_msg.find("is not a cpu target"), std::string::npos);

  CBuilderOptions bad_flag;
  bad_flag.extra_flags = {"-fno-such-flag-at-all"};
  results = NewCBuilder(bad_flag)->Build({BuildInput{good, Cpu()}});
  EXPECT_FALSE(results[0].ok());
  EXPECT_NE(results[0].error_msg.find("-fno-such-flag-at-all"), std::string::npos)
      << results[0].error_msg;
  EXPECT_TRUE(results[0].artifact_path.empty());

  CBuilderOptions no_compiler;
  no_compiler.compiler = "tessera-no-such-compiler";
  results = NewCBuilder(no_compiler)->Build({BuildInput{good, Cpu()}});
  EXPECT_NE(results[0].error_msg.find("cannot start compiler 'tessera-no-such-compiler'"),
            std::string::npos)
      << results[0].error_msg;
}

// BuildEach hands over every input's result exactly once, as Build would give it, including
// the failed ones; with batches (batch_size > 1) too.
TEST(CBuilderTest, BuildEachHandsOverEveryResultOnce) {
  auto [good, bound] = testing_funcs::ElementwiseAndThreadBound(32);
  const std::vector<BuildInput> inputs = {BuildInput{good, Cpu()}, BuildInput{bound, Cpu()},
                                          BuildInput{good, Cpu()}, BuildInput{good, Cpu()}};
  for (int batch_size : {1, 2}) {
    CBuilderOptions options;
    options.batch_size = batch_size;
    options.parallelism = 2;
    std::unique_ptr<Builder> builder = NewCBuilder(options);
    std::mutex mu;
    std::vector<int> calls(inputs.size(), 0);
    std::vector<BuildResult> results(inputs.size());
    builder->BuildEach(inputs, [&](size_t i, BuildResult r) {
      std::lock_guard<std::mutex> lock(mu);
      ++calls[i];
      results[i] = std::move(r);
    });
    EXPECT_EQ(calls, std::vector<int>(inputs.size(), 1)) << "batch_size " << batch_size;
    EXPECT_EQ(results[1].error_msg, "cpu codegen: loop i bound to threadIdx.x");
    for (size_t i : {0, 2, 3}) {
      EXPECT_TRUE(results[i].ok()) << results[i].error_msg;
      EXPECT_TRUE(std::filesystem::exists(results[i].artifact_path)) << i;
      EXPECT_GT(results[i].compile_seconds, 0) << i;
    }
  }
}

// A GEMV candidate whose simd loop runs over rows (A[i * 4096 + k]): with GCC's default
// -fsimd-cost-model=unlimited, unroll-and-jam plus forced vectorization turned it into ~16,000
// permutes and cc1 took 8-15 s of CPU (40 s to over a minute on a loaded machine); the
// builder's default flags keep it a 0.02 s compile. 5 s is far from both.
TEST(CBuilderTest, SimdLoopOverAStridedAccessCompilesQuickly) {
  absl::StatusOr<PrimFunc> gemv = ParseFunc(R"(@prim_func
def gemv(A: Buffer((4096, 4096), "float32"), x: Buffer((4096,), "float32"), y: Buffer((4096,), "float32")):
    func_attr({"tessera.scheduled": 1})
    with block("root"):
        y_global = alloc_buffer((4096,), "float32", scope="global")
        for k_0 in range(128):
            for i_2 in range(128):
                for k_1 in range(32):
                    for i_3 in vectorized(32):
                        with block("y"):
                            vi = axis.spatial(4096, i_2 * 32 + i_3)
                            vk = axis.reduce(4096, k_0 * 32 + k_1)
                            reads(y_global[vi], A[vi, vk], x[vk])
                            writes(y_global[vi])
                            y_global[vi] = y_global[vi] + A[vi, vk] * x[vk]
        for ax0 in range(4096):
            with block("y_global"):
                v0 = axis.spatial(4096, ax0)
                reads(y_global[v0])
                writes(y[v0])
                y[v0] = y_global[v0]
)");
  ASSERT_TRUE(gemv.ok()) << gemv.status();
  CBuilderOptions options;
  options.timeout_sec = 5;
  std::vector<BuildResult> results = BuildAll(NewCBuilder(options).get(), {*gemv});
  EXPECT_TRUE(results[0].ok()) << results[0].error_msg;
}

TEST(CBuilderTest, WorkDirIsRemovedWithTheBuilderUnlessKept) {
  PrimFunc f = Matmul(2, 2, 2);
  std::string kept_dir;
  std::string removed_dir;
  {
    std::unique_ptr<Builder> builder = NewCBuilder();
    std::vector<BuildResult> r = BuildAll(builder.get(), {f});
    ASSERT_TRUE(r[0].ok()) << r[0].error_msg;
    removed_dir = std::filesystem::path(r[0].artifact_path).parent_path();
    CBuilderOptions keep;
    keep.keep_work_dir = true;
    keep.optimization_flags = {"-O0"};
    keep.openmp = false;
    std::unique_ptr<Builder> keeper = NewCBuilder(keep);
    r = BuildAll(keeper.get(), {f});
    ASSERT_TRUE(r[0].ok()) << r[0].error_msg;
    kept_dir = std::filesystem::path(r[0].artifact_path).parent_path();
  }
  EXPECT_FALSE(std::filesystem::exists(removed_dir));
  EXPECT_TRUE(std::filesystem::exists(kept_dir));
  std::filesystem::remove_all(kept_dir);
}

// A cancelled input is not compiled: a worker whose lease was revoked must not spend its cores
// on the rest of the batch.
TEST(CBuilderTest, CancelledInputsAreNotBuilt) {
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  const PrimFunc f = Matmul(4, 4, 4);
  for (int batch_size : {1, 2}) {
    CBuilderOptions options;
    options.batch_size = batch_size;
    std::unique_ptr<Builder> builder = NewCBuilder(options);
    cancel->store(false);
    std::vector<BuildResult> r = builder->Build({BuildInput{f, Cpu(), cancel}});
    ASSERT_TRUE(r[0].ok()) << r[0].error_msg;
    cancel->store(true);
    r = builder->Build({BuildInput{f, Cpu(), cancel}, BuildInput{f, Cpu(), cancel}});
    for (const BuildResult& result : r) {
      EXPECT_EQ(result.error_msg, kBuildCancelled) << "batch_size " << batch_size;
      EXPECT_TRUE(result.artifact_path.empty());
    }
  }
}

}  // namespace
}  // namespace tessera
