// CUDA C source emitter for the cuda target.
//
// GenerateCuda checks a scheduled function (codegen/verify_gpu.h), lowers it for the GPU
// (codegen/lower_gpu.h: blocks removed, shared/local buffers compacted into the kernels,
// __syncthreads() inserted, virtual threads unrolled, cross-thread reductions expanded) and
// prints one translation unit holding one kernel per top-level thread-bound loop nest:
//
//     extern "C" __global__ void __launch_bounds__(<threads>)
//     <func>_kernel<i>(float* __restrict__ p0, half* __restrict__ p1, ...)
//
// with one pointer per entry of CudaKernel::param_indices (the function parameters the kernel
// touches, in parameter order), each pointing to the first element of that parameter stored
// densely in row-major order (or at the buffer's strides). Element types: float, double, half
// (float16), __nv_bfloat16 (bfloat16), int8_t .. int64_t, uint8_t, uint8_t holding 0/1 (bool).
// Kernels are launched in the order of CudaModule::kernels with the given grid and block
// dimensions and no dynamic shared memory unless dynamic_shared_bytes says so.
//
// Arithmetic follows the interpreter and the C backend: float16/bfloat16 values are computed in
// float and rounded to nearest even on stores and casts; math functions are the accurate ones
// (expf, not __expf). Loops: unroll -> `#pragma unroll`; `pragma_auto_unroll_max_step` = S
// unrolls every loop below whose iteration count (times that of its inner loops) is at most S;
// vectorized loops of constant extent 2 or 4 over contiguous accesses whose alignment can be
// proven become float2/float4/half2 loads and stores, otherwise unrolled scalar loops. Buffers in
// scopes wmma.matrix_a/matrix_b/accumulator become arrays of wmma::fragment.
#ifndef TESSERA_CODEGEN_CODEGEN_CUDA_H_
#define TESSERA_CODEGEN_CODEGEN_CUDA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cuda/module_file.h"
#include "ir/function.h"
#include "ir/target.h"

namespace tessera {

struct CudaModule {
  std::string source;
  std::vector<CudaKernel> kernels;  // launched in order
};

// The CUDA translation unit of `func` (scheduled TensorIR) for `target` (a cuda target).
// kInvalidArgument naming the reason for what the GPU cannot run or what this emitter cannot
// emit correctly: a failed VerifyGpuCode check (the limit and the value), a loop kind or dtype
// the backend does not support, an intermediate buffer in global scope, a cross-thread
// reduction in an unsupported form.
absl::StatusOr<CudaModule> GenerateCuda(const PrimFunc& func, const Target& target);

}  // namespace tessera

#endif  // TESSERA_CODEGEN_CODEGEN_CUDA_H_
