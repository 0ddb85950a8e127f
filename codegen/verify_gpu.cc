#include "codegen/verify_gpu.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/functor.h"
#include "ir/tensor_core_fragments.h"

namespace tessera {
namespace {

// CUDA's per-dimension limits (all current architectures).
constexpr int64_t kMaxBlockDim[3] = {1024, 1024, 64};
constexpr int64_t kMaxGridDim[3] = {2147483647, 65535, 65535};
constexpr const char* kDims[3] = {"x", "y", "z"};

absl::Status Invalid(const std::string& message) {
  return absl::InvalidArgumentError("verify_gpu: " + message);
}

// Tensor-core fragments the target's architecture lacks: float16 WMMA ones need sm_70 (Volta),
// bfloat16 ones and Tessera's own mma.sync fragments sm_80 (Ampere), wgmma's accumulators
// sm_90a (Hopper's arch-specific target: later architectures lack wgmma) and TMA tiles sm_90.
absl::Status CheckFragmentsRunOn(const PrimFunc& func, const Target& target) {
  absl::Status status = absl::OkStatus();
  PostOrderVisitStmts(func.body(), [&](const Stmt& stmt) {
    const auto* realize = stmt.as<BlockRealizeNode>();
    if (realize == nullptr || !status.ok()) return;
    for (const Buffer& b : realize->block->alloc_buffers) {
      if (b.scope() == kTmaSharedScope && target.compute_capability() < 90) {
        status = Invalid(absl::StrCat("the TMA tile ", b.name(), " (", b.scope(),
                                      ") needs sm_90 or later; the target is ", target.ToString()));
        return;
      }
      if (!IsFragmentScope(b.scope())) continue;
      if (FragmentNeedsArchSpecificTarget(b.scope()) &&
          (!target.arch_specific() || target.compute_capability() != 90)) {
        status = Invalid(absl::StrCat("the warpgroup accumulator ", b.name(), " (", b.scope(),
                                      ") needs wgmma, which only sm_90a has; the target is ",
                                      target.ToString()));
        return;
      }
      const int needs = FragmentMinComputeCapability(b.scope(), b.dtype() == DataType::BFloat16());
      if (target.compute_capability() < needs) {
        status = Invalid(absl::StrCat("the ", b.dtype().ToString(), " tensor-core fragment ",
                                      b.name(), " (", b.scope(), ") needs sm_", needs,
                                      " or later; the target is ", target.ToString()));
        return;
      }
    }
  });
  return status;
}

}  // namespace

absl::Status VerifyGpuKernels(const std::vector<GpuKernelInfo>& kernels, const Target& target) {
  if (!target.is_cuda()) {
    return Invalid(absl::StrCat("target ", target.ToString(), " is not a cuda target"));
  }
  const int64_t max_threads = target.max_threads_per_block();
  const int64_t max_shared = target.max_shared_memory_per_block();
  for (const GpuKernelInfo& k : kernels) {
    int64_t threads = k.block[0] * k.block[1] * k.block[2];
    if (threads > max_threads) {
      return Invalid(absl::StrCat(threads, " threads per block exceed max_threads_per_block=",
                                  max_threads, " in kernel ", k.name));
    }
    for (int d = 0; d < 3; ++d) {
      if (k.block[d] > kMaxBlockDim[d]) {
        return Invalid(absl::StrCat("threadIdx.", kDims[d], " extent ", k.block[d],
                                    " exceeds the cuda limit ", kMaxBlockDim[d], " in kernel ",
                                    k.name));
      }
      if (k.grid[d] > kMaxGridDim[d]) {
        return Invalid(absl::StrCat("blockIdx.", kDims[d], " extent ", k.grid[d],
                                    " exceeds the cuda limit ", kMaxGridDim[d], " in kernel ",
                                    k.name));
      }
    }
    if (k.shared_bytes > max_shared) {
      return Invalid(absl::StrCat(k.shared_bytes,
                                  " bytes of shared memory exceed max_shared_memory_per_block=",
                                  max_shared, " in kernel ", k.name));
    }
    if (k.vthreads > kMaxVirtualThreads) {
      return Invalid(absl::StrCat(k.vthreads, " virtual threads exceed the limit ",
                                  kMaxVirtualThreads, " in kernel ", k.name));
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyGpuCode(const PrimFunc& lowered_or_scheduled, const Target& target) {
  if (!target.is_cuda()) {
    return Invalid(absl::StrCat("target ", target.ToString(), " is not a cuda target"));
  }
  TESSERA_RETURN_IF_ERROR(CheckFragmentsRunOn(lowered_or_scheduled, target));
  TESSERA_ASSIGN_OR_RETURN(PrimFunc lowered, LowerForGpu(lowered_or_scheduled, target));
  TESSERA_ASSIGN_OR_RETURN(std::vector<GpuKernelInfo> kernels, SplitKernels(lowered));
  return VerifyGpuKernels(kernels, target);
}

}  // namespace tessera
