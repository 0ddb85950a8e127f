// Checks that a scheduled (or GPU-lowered) function can run as CUDA kernels on a target:
// TVM's VerifyGPUCode plus the binding checks a GPU backend needs.
#ifndef TESSERA_CODEGEN_VERIFY_GPU_H_
#define TESSERA_CODEGEN_VERIFY_GPU_H_

#include <vector>

#include "absl/status/status.h"
#include "codegen/lower_gpu.h"
#include "ir/function.h"
#include "ir/target.h"

namespace tessera {

// OK if every kernel of `func` (one per top-level thread-bound loop nest, named
// <func>_kernel<i>) respects the target's limits. kInvalidArgument, message starting with
// "verify_gpu: " and naming the limit, the value and the kernel, for:
//   - computation outside thread-bound loops ("block C is not bound to threads");
//   - a thread tag with different extents within one kernel, a blockIdx loop nested in a
//     non-thread loop, a thread extent over the CUDA limit of its dimension;
//   - threads per block over max_threads_per_block;
//   - shared memory (after compaction, see codegen/lower_gpu.h) over
//     max_shared_memory_per_block;
//   - more than kMaxVirtualThreads virtual threads;
//   - a tensor-core fragment (scope wmma.*) the architecture lacks: float16 before sm_70,
//     bfloat16 before sm_80;
//   - a target that is not cuda.
absl::Status VerifyGpuCode(const PrimFunc& lowered_or_scheduled, const Target& target);

// The limit checks of VerifyGpuCode on kernels that SplitKernels returned.
absl::Status VerifyGpuKernels(const std::vector<GpuKernelInfo>& kernels, const Target& target);

// The most virtual threads (product of vthread extents) one kernel may have.
inline constexpr int64_t kMaxVirtualThreads = 8;

}  // namespace tessera

#endif  // TESSERA_CODEGEN_VERIFY_GPU_H_
