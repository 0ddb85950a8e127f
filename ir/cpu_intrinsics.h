// Extern calls of CPU kernels that the C prelude defines (codegen/c_prelude.cc), named here so that
// the tensor intrinsics (schedule/tensor_intrin.h) and the C printer agree on them.
#ifndef TESSERA_IR_CPU_INTRINSICS_H_
#define TESSERA_IR_CPU_INTRINSICS_H_

#include <cstdint>

namespace tessera {

// tessera_dot_bf16_16x2(float* c, const uint16_t* a, const uint16_t* b): c[j] += a[0] b[2j] +
// a[1] b[2j + 1] for the 16 columns j, b holding each column's pair of bfloat16s side by side:
// one AVX-512 BF16 vdpbf16ps. Its arguments are BufferLoads standing for their addresses.
inline constexpr char kCpuDotBf16Call[] = "tessera_dot_bf16_16x2";
inline constexpr int64_t kCpuDotBf16Lanes = 16;

}  // namespace tessera

#endif  // TESSERA_IR_CPU_INTRINSICS_H_
