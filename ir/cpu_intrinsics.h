// Extern calls of CPU kernels that the C prelude defines (codegen/c_prelude.cc), named here so that
// the tensor intrinsics (schedule/tensor_intrin.h) and the C printer agree on them.
#ifndef TESSERA_IR_CPU_INTRINSICS_H_
#define TESSERA_IR_CPU_INTRINSICS_H_

#include <cstdint>
#include <string_view>

namespace tessera {

// tessera_dot_bf16_16x2(float* c, const uint16_t* a, const uint16_t* b): c[j] += a[0] b[2j] +
// a[1] b[2j + 1] for the 16 columns j, b holding each column's pair of bfloat16s side by side:
// one AVX-512 BF16 vdpbf16ps. Its arguments are BufferLoads standing for their addresses.
inline constexpr char kCpuDotBf16Call[] = "tessera_dot_bf16_16x2";
// tessera_dot_i8_16x4(int32_t* c, const int8_t* a, const int8_t* b): c[j] += a[0] b[4j] + ... +
// a[3] b[4j + 3], b holding each column's four int8s side by side: AVX-512 VNNI's vpdpbusd
// (which multiplies unsigned by signed bytes: a is offset by 128 and 128 times b's sums taken
// off again, exact in int32).
inline constexpr char kCpuDotInt8Call[] = "tessera_dot_i8_16x4";
// tessera_dot_i8_16x8(int32_t* c, const int8_t* a, const int8_t* b): two of the above, b's second
// group of four k 64 bytes after the first, with one correction for both (a quarter less work per
// k than two calls of the above).
inline constexpr char kCpuDotInt8x8Call[] = "tessera_dot_i8_16x8";
// tessera_dot_i8_shifted_16x4 and _16x8 (same arguments): c[j] += (a[0] + 128) b[4j] + ... +
// (a[3] + 128) b[4j + 3], and the same over eight k: vpdpbusd alone, a's bytes flipped into the
// unsigned range. The product they tensorize starts its sums from -128 times the column sums of
// b (schedule.h ShiftInt8Product), so there is nothing to correct per call.
inline constexpr char kCpuDotInt8ShiftedCall[] = "tessera_dot_i8_shifted_16x4";
inline constexpr char kCpuDotInt8x8ShiftedCall[] = "tessera_dot_i8_shifted_16x8";
// All work on 16 lanes of 32 bits (one 512-bit vector).
inline constexpr int64_t kCpuDotLanes = 16;

// Whether `name` is one of the dot products above: arguments three addresses, the last a 64-byte
// row (or two) of B.
inline bool IsCpuDotCall(std::string_view name) {
  return name == kCpuDotBf16Call || name == kCpuDotInt8Call || name == kCpuDotInt8x8Call ||
         name == kCpuDotInt8ShiftedCall || name == kCpuDotInt8x8ShiftedCall;
}

}  // namespace tessera

#endif  // TESSERA_IR_CPU_INTRINSICS_H_
