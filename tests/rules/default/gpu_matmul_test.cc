// The Matmul default rule's tensor-core (WMMA) path (rules/default/gpu_matmul.cc): a float16
// GMM on sm_80 is tensorized, verified and compiles, and computes what the GMM computes; other
// architectures, dtypes and shapes take the SIMT path. No GPU needed.
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/check.h"
#include "codegen/codegen_cuda.h"
#include "codegen/verify_gpu.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "rules/annotations.h"
#include "rules/default/default_rule.h"
#include "schedule/tensor_intrin.h"
#include "schedule/trace.h"
#include "tests/rules/default_schedule_testing.h"
#include "tests/testing/schedule_testing.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/host.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

using default_schedule_testing::Applied;
using default_schedule_testing::ApplyFirst;
using default_schedule_testing::CudaTarget;
using default_schedule_testing::HalfGmm;

// Intrinsic names of the Tensorize instructions of `sch`'s trace.
std::multiset<std::string> TensorizedIntrins(const Schedule& sch) {
  std::multiset<std::string> out;
  for (const Instruction& inst : sch.trace().insts()) {
    if (std::string(inst.kind->name) == "Tensorize") out.insert(inst.attrs[0].as_string());
  }
  return out;
}

TEST(DefaultScheduleTensorCoreTest, Float16GmmOnSm80IsTensorizedVerifiedAndCompiles) {
  const PrimFunc func = HalfGmm(256, 256, 256);
  const Target target = CudaTarget("sm_80");
  Applied applied = ApplyFirst(func, target);
  ASSERT_EQ(applied.rule, "Matmul");
  ASSERT_TRUE(applied.sch.has_value());
  // fill, mma, store, load A, load B (each tensorized once: the loops around repeat them).
  EXPECT_EQ(TensorizedIntrins(*applied.sch),
            (std::multiset<std::string>{kWmmaFillF16, kWmmaSyncF16, kWmmaStoreF16, kWmmaLoadA,
                                        kWmmaLoadB}))
      << PrintFunc(applied.sch->func());
  absl::Status verified = VerifyGpuCode(applied.sch->func(), target);
  ASSERT_TRUE(verified.ok()) << verified << "\n" << PrintFunc(applied.sch->func());
  absl::StatusOr<CudaModule> module = GenerateCuda(applied.sch->func(), target);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_NE(module->source.find("wmma::mma_sync"), std::string::npos);
  for (const CudaKernel& kernel : module->kernels) EXPECT_EQ(kernel.block[0], 32) << kernel.name;
  absl::StatusOr<std::string> cubin = CompileCudaSource(module->source, "sm_80");
  if (cubin.status().code() == absl::StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << "no NVRTC: " << cubin.status();
  }
  ASSERT_TRUE(cubin.ok()) << cubin.status() << "\n" << module->source;
}

TEST(DefaultScheduleTensorCoreTest, TensorizedScheduleComputesWhatTheGmmComputes) {
  for (const auto& [m, n, k] :
       {std::make_tuple(32, 32, 32), std::make_tuple(64, 64, 64), std::make_tuple(16, 48, 32)}) {
    SCOPED_TRACE(absl::StrCat(m, "x", n, "x", k));
    const PrimFunc func = HalfGmm(m, n, k);
    Applied applied = ApplyFirst(func, CudaTarget("sm_80"));
    ASSERT_EQ(applied.rule, "Matmul");
    EXPECT_EQ(TensorizedIntrins(*applied.sch).size(), 5u);
    absl::Status correct = testing::CheckTensorizedScheduleCorrect(*applied.sch, func);
    EXPECT_TRUE(correct.ok()) << correct;
  }
}

TEST(DefaultScheduleTensorCoreTest, OtherArchitecturesDtypesAndShapesTakeTheSimtPath) {
  struct Case {
    PrimFunc func;
    std::string arch;
  };
  for (const Case& c : {Case{HalfGmm(64, 64, 64), "sm_61"}, Case{HalfGmm(24, 32, 32), "sm_80"},
                        Case{testing::SmallWorkload("GMM"), "sm_80"}}) {
    Applied applied = ApplyFirst(c.func, CudaTarget(c.arch));
    ASSERT_EQ(applied.rule, "Matmul") << c.arch;
    EXPECT_TRUE(TensorizedIntrins(*applied.sch).empty()) << c.arch;
    absl::Status correct = testing::CheckScheduleCorrect(*applied.sch, c.func);
    EXPECT_TRUE(correct.ok()) << correct;
  }
}

}  // namespace
}  // namespace tessera
