// The fixed start of every CUDA translation unit codegen/codegen_cuda.h writes: includes and
// the device helpers generated code calls (floordiv/floormod, typed min/max, float16/bfloat16
// rounding, int8x4 packing for __dp4a, block-wide reductions for cross-thread reductions), and
// the identifiers generated names must avoid.
#ifndef TESSERA_CODEGEN_CUDA_PRELUDE_H_
#define TESSERA_CODEGEN_CUDA_PRELUDE_H_

#include <set>
#include <string>

namespace tessera {

// Every helper's name starts with tessera_. Needs cuda_fp16.h and cuda_bf16.h on the include
// path (NVRTC: -I<cuda>/include).
extern const char kCudaPrelude[];
// Added after the prelude when a kernel uses WMMA fragments.
extern const char kCudaWmmaPrelude[];
// Added after the prelude when a kernel uses Tessera's own fragments (namespace tessera_mma:
// ldmatrix and mma.sync.m16n8k16 behind WMMA's calls; ir/tensor_core_fragments.h).
extern const char kCudaMmaPrelude[];
// Added when a kernel copies by TMA (cp.async.bulk.tensor, mbarriers; sm_90): the tensor-map
// parameter type and the calls of codegen/lower_gpu_internal.h.
extern const char kCudaHopperPrelude[];
// Added after the Hopper prelude when a kernel uses wgmma accumulators (sm_90a): fences, the
// accumulator type, descriptors, fill and store. Each mma_async overload (one per N and input
// type) is generated beside it (codegen_cuda.cc).
extern const char kCudaWgmmaPrelude[];

// C++/CUDA keywords, builtin variables and types, and math functions generated code calls.
const std::set<std::string>& CudaReservedNames();

}  // namespace tessera

#endif  // TESSERA_CODEGEN_CUDA_PRELUDE_H_
