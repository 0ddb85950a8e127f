// Lowering of scheduled TensorIR for CUDA kernels (IR -> IR, design principle P0), the GPU
// counterpart of codegen/lower.h:
//   1. Cross-thread reductions: a reduction block whose reduction binding uses a loop bound to
//      threadIdx.x (split k -> [ko, ki], bind ki, as the CrossThreadReduction rule does) becomes
//      per-thread partial accumulation in a local register, a block-wide reduction (the extern
//      call tessera_block_reduce_{sum,prod,max,min}: warp shuffles plus a shared-memory stage
//      across warps, result broadcast) and a store by threadIdx.x == 0.
//   2. Blocks disappear (lower.h step 1).
//   3. Virtual threads: loops bound to vthread.* become unrolled serial loops inside the thread
//      (annotated "tessera.vthread" = tag so the checks can still count them).
//   4. Buffer compaction: every intermediate in a non-global scope is allocated inside its
//      kernel at the innermost loop that covers all its accesses, sized to the region accessed
//      there (thread-bound loops above that loop relaxed for "shared"), indices rebased (TVM's
//      CompactBufferAllocation + PlanAndUpdateBufferAllocationLocation). wmma.* fragment
//      buffers become arrays of 16x16 tiles and the wmma extern calls take the leading
//      dimension of their memory operand:
//        wmma::load_matrix_sync(frag, ptr, ld)   wmma::store_matrix_sync(ptr, frag, ld)
//        wmma::fill_fragment(frag, value)        wmma::mma_sync(d, a, b, c)
//   5. Buffers become one-dimensional (lower.h step 2).
//   6. __syncthreads() (Evaluate of the extern call "__syncthreads") is inserted before a
//      statement that reads shared memory written since the last barrier, or writes shared
//      memory read or written since then, including across iterations of enclosing serial
//      loops; two accesses of one thread at the same index do not conflict (TVM's ThreadSync
//      for "shared", at buffer granularity otherwise).
//   7. Serial loops annotated software_pipeline_stages fill later iterations' shared buffers
//      while the current one computes (codegen/software_pipeline.h), with cp.async on sm_80+.
// The result's root body is the sequence of kernels: one per top-level loop nest that is bound
// to blockIdx/threadIdx, thread-bound loops kept (emitters turn them into thread indices).
#ifndef TESSERA_CODEGEN_LOWER_GPU_H_
#define TESSERA_CODEGEN_LOWER_GPU_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/function.h"
#include "ir/target.h"

namespace tessera {

// Lowers `f` as described above. kInvalidArgument naming the block, loop or buffer when the
// function cannot become kernels: computation outside thread-bound loops, an intermediate buffer
// in global scope (no workspace), a shared/local buffer used by two kernels or of non-constant
// size, a cross-thread reduction in another form than the one above, a __syncthreads() needed
// under a thread-dependent condition, a wmma fragment accessed other than by whole tiles.
absl::StatusOr<PrimFunc> LowerForGpu(const PrimFunc& f, const Target& target);

// One kernel of a lowered function.
struct GpuKernelInfo {
  std::string name;            // <func>_kernel<i>
  Stmt body;                   // the top-level loop nest
  int64_t grid[3] = {1, 1, 1};   // blockIdx.{x,y,z} extents
  int64_t block[3] = {1, 1, 1};  // threadIdx.{x,y,z} extents
  int64_t shared_bytes = 0;    // static shared memory (sum of shared allocations)
  int64_t vthreads = 1;        // product of virtual thread extents
  std::vector<int> param_indices;  // function parameters the kernel accesses, in order
};

// The kernels of a function returned by LowerForGpu, in launch order. kInvalidArgument
// ("verify_gpu: ...") for a store outside thread-bound loops, a thread tag with two extents in
// one kernel, a blockIdx loop under a non-thread loop, an allocation of non-constant size.
absl::StatusOr<std::vector<GpuKernelInfo>> SplitKernels(const PrimFunc& lowered);

// True if `f` still has blocks (is scheduled TensorIR rather than the output of LowerForGpu).
bool HasBlocks(const PrimFunc& f);

}  // namespace tessera

#endif  // TESSERA_CODEGEN_LOWER_GPU_H_
