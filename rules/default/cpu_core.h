// What a CPU register tile is sized by, read from a cpu target (ir/target.h): the vector length,
// the vector registers the tile's accumulators share with its operands, and the L2 a packed panel
// must stay in. The GEMM and convolution tiles (tiled_matmul.h, tiled_conv.h) are counted in
// these vectors, so an AVX2 core (8 floats, 16 ymm registers) gets tiles that fit its registers
// instead of the AVX-512 ones (docs/cpu-backend.md "Micro-kernels by core").
#ifndef TESSERA_RULES_DEFAULT_CPU_CORE_H_
#define TESSERA_RULES_DEFAULT_CPU_CORE_H_

#include <cstdint>

#include "ir/target.h"

namespace tessera {
namespace dlight {

struct CpuCore {
  // Floats in one vector register: -vector_bits / 32.
  int64_t lanes = 16;
  // Vector registers: 32 with AVX-512 (zmm, or ymm under AVX512VL), 16 without (AVX2's ymm).
  int64_t registers = 32;
  // One core's L2 (-l2_kb).
  int64_t l2_bytes = int64_t{1} << 20;
  // AVX-512 BF16 (-isa=...+avx512bf16) with 16 lanes: bfloat16 products summed in float32 take
  // pairs of k a vdpbf16ps (ir/cpu_intrinsics.h), at twice the float32 FMA's flops on Zen 4.
  bool dot_bf16 = false;
  // AVX-512 VNNI (+avx512vnni, +avx512bw) with 16 lanes: int8 products summed in int32 take four
  // k a vpdpbusd, where they were widened to int32 and multiplied one by one.
  bool dot_int8 = false;

  // The core a cpu target describes; a target of another kind gets the default above (the
  // AVX-512 core the rules' constants were first measured on).
  static CpuCore Of(const Target& target);
};

// Whether a register tile's write-back loop is marked vectorized (`#pragma omp simd`). With 16
// registers gcc 12 did not keep the whole tile in registers beside such a write-back inside an
// OpenMP region: it left one accumulator on the stack, loaded and stored every k, and that one
// chain bounded the loop (LINEAR 128x768x768 on Zen 3: 56.8 GFLOP/s on 2 cores with the pragma,
// 112.7 without, where -O3 vectorizes the write-back all the same). Kept with 32 registers,
// where the tiles were measured at the FMA peak with it (Zen 4).
inline bool VectorizeWriteBack(const CpuCore& core) { return core.registers >= 32; }

}  // namespace dlight
}  // namespace tessera

#endif  // TESSERA_RULES_DEFAULT_CPU_CORE_H_
