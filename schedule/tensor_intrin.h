// Tensor intrinsics: what a hardware instruction (or a hand-written micro-kernel) computes, and
// how to call it. `desc` describes the computation as a small PrimFunc in our IR; `impl`
// performs the same computation, usually through an opaque extern call (CallOp::kExtern).
// Tensorize matches a block against `desc` and replaces its body by `impl`, with the
// parameters of both bound to the regions of the block's buffers.
//
// Conventions for desc and impl (checked by RegisterTensorIntrin):
//   - both have the same number of parameters, pairwise of the same dtype, constant shape
//     and scope; parameter i of impl stands for parameter i of desc;
//   - each body is the BlockRealize of a root block without iteration variables or init;
//     the root block of desc lists the regions it reads and writes (a parameter it does not
//     list counts as accessed whole);
//   - a desc scope "global" means "any addressable memory" (global, shared or local); any
//     other scope (e.g. "wmma.matrix_a") must be matched exactly;
//   - in impl, an extern call argument that is a BufferLoad stands for the address of that
//     element (emitters derive leading dimensions from the buffer it is bound to); a call
//     evaluated for its effect has type int32.
//
// The registry holds the built-in intrinsics (registered on first use, from the explicit
// table in tensor_intrin.cc) and any that callers register. It is thread-safe.
#ifndef TESSERA_SCHEDULE_TENSOR_INTRIN_H_
#define TESSERA_SCHEDULE_TENSOR_INTRIN_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/cpu_intrinsics.h"
#include "ir/function.h"
#include "ir/tensor_core_fragments.h"

namespace tessera {

struct TensorIntrin {
  std::string name;
  PrimFunc desc;
  PrimFunc impl;
};

// Names of the built-in intrinsics.
inline constexpr char kWmmaLoadA[] = "wmma_load_16x16x16_f16_a";
inline constexpr char kWmmaLoadB[] = "wmma_load_16x16x16_f16_b";
inline constexpr char kWmmaFill[] = "wmma_fill_16x16x16_f32";
inline constexpr char kWmmaSync[] = "wmma_sync_16x16x16_f16f16f32";
inline constexpr char kWmmaStore[] = "wmma_store_16x16x16_f32";
// The float16-accumulator variants (float16 products summed in float16).
inline constexpr char kWmmaFillF16[] = "wmma_fill_16x16x16_f16";
inline constexpr char kWmmaSyncF16[] = "wmma_sync_16x16x16_f16f16f16";
inline constexpr char kWmmaStoreF16[] = "wmma_store_16x16x16_f16";
// The bfloat16 inputs (sm_80 and later; float32 accumulator: fill and store as above).
inline constexpr char kWmmaLoadABf16[] = "wmma_load_16x16x16_bf16_a";
inline constexpr char kWmmaLoadBBf16[] = "wmma_load_16x16x16_bf16_b";
inline constexpr char kWmmaSyncBf16[] = "wmma_sync_16x16x16_bf16bf16f32";
// The same operations on Tessera's own fragments (scopes "mma.*", sm_80 and later: ldmatrix and
// mma.sync.m16n8k16, ir/tensor_core_fragments.h).
inline constexpr char kMmaLoadA[] = "mma_load_16x16x16_f16_a";
inline constexpr char kMmaLoadB[] = "mma_load_16x16x16_f16_b";
inline constexpr char kMmaFill[] = "mma_fill_16x16x16_f32";
inline constexpr char kMmaSync[] = "mma_sync_16x16x16_f16f16f32";
inline constexpr char kMmaStore[] = "mma_store_16x16x16_f32";
inline constexpr char kMmaFillF16[] = "mma_fill_16x16x16_f16";
inline constexpr char kMmaSyncF16[] = "mma_sync_16x16x16_f16f16f16";
inline constexpr char kMmaStoreF16[] = "mma_store_16x16x16_f16";
inline constexpr char kMmaLoadABf16[] = "mma_load_16x16x16_bf16_a";
inline constexpr char kMmaLoadBBf16[] = "mma_load_16x16x16_bf16_b";
inline constexpr char kMmaSyncBf16[] = "mma_sync_16x16x16_bf16bf16f32";
// float32 inputs multiplied at TF32 precision (round_tf32 of both operands, ir/expr.h), summed in
// float32: mma.sync.m16n8k8.tf32 (float32 fill and store as above).
inline constexpr char kMmaLoadATf32[] = "mma_load_16x16x16_tf32_a";
inline constexpr char kMmaLoadBTf32[] = "mma_load_16x16x16_tf32_b";
inline constexpr char kMmaSyncTf32[] = "mma_sync_16x16x16_tf32tf32f32";
inline constexpr char kDp4a[] = "dp4a";
// CPU dot products of 16 columns, each summing a group of k side by side in B ([.., K / g, N, g]):
// C[16] += float32(A[2]) x float32(B[16, 2]) for bfloat16 by one vdpbf16ps (AVX-512 BF16), and
// C[16] += int32(A[4]) x int32(B[16, 4]) for int8 by vpdpbusd (AVX-512 VNNI), and eight k as two
// such groups, B [2, 16, 4]; the C prelude's calls of ir/cpu_intrinsics.h do them (a scalar loop
// where the compiler targets neither).
inline constexpr char kCpuDotBf16[] = "cpu_dot_bf16_16x2";
inline constexpr char kCpuDotInt8[] = "cpu_dot_i8_16x4";
inline constexpr char kCpuDotInt8x8[] = "cpu_dot_i8_16x8";
// The same int8 products with A shifted by 128 (C[16] += (int32(A[k]) + 128) x int32(B[16, k])),
// for the products ShiftInt8Product rewrote: vpdpbusd with no correction per call.
inline constexpr char kCpuDotInt8Shifted[] = "cpu_dot_i8_shifted_16x4";
inline constexpr char kCpuDotInt8x8Shifted[] = "cpu_dot_i8_shifted_16x8";

// The five intrinsics of one tensor-core product of 16x16x16 tiles: inputs `in` summed in `acc`,
// with fragments of `family` ("wmma" or "mma", the prefix of their scopes). float32 inputs are
// TF32 products.
struct TensorCoreIntrins {
  DataType in, acc;
  std::string family;
  int min_compute_capability;
  const char* fill;
  const char* load_a;
  const char* load_b;
  const char* sync;
  const char* store;
  // The scope of the fragments of `use` ("matrix_a", "matrix_b", "accumulator").
  std::string Scope(const char* use) const { return family + "." + use; }
};

// Shared tiles that feed these fragments get their rows padded by 16 bytes
// (StorageAlign(kTensorCoreRowAlign, TensorCoreRowPad(dtype)); compaction keeps the pad): a tile
// of 16k 16-bit elements then has rows an odd number of 16-byte groups apart, so the eight rows of
// 16 bytes one ldmatrix reads fall on distinct banks.
inline constexpr int kTensorCoreRowAlign = 32;
inline int TensorCoreRowPad(DataType dtype) { return 16 / dtype.bytes(); }

// The built-in products: float16 summed in float32 or float16, bfloat16 summed in float32, each
// with WMMA's fragments and with Tessera's own; TF32 products with Tessera's own.
const std::vector<TensorCoreIntrins>& TensorCoreIntrinGroups();

// The three intrinsics of one Hopper warpgroup product (sm_90a, ir/tensor_core_fragments.h):
// C[64, n] += A[64, 16] x B[16, n], `in` inputs summed in `acc`, by wgmma.mma_async.m64nNk16 with
// A and B read from 128-byte-swizzled shared tiles that TMA fills (scope kTmaSharedScope; A
// K-major, B N-major) and C a warpgroup's accumulator ("wgmma.accumulator"). n is a multiple of
// 8 up to 256 (B's TMA tiles are stored in whole blocks 128 bytes wide, the last one padded).
struct WgmmaIntrins {
  DataType in, acc;
  int64_t n;
  std::string fill;   // C = 0
  std::string sync;   // C += A x B
  std::string store;  // memory = C
};

// float16 and bfloat16 summed in float32, n = 8, 16, ..., 256.
const std::vector<WgmmaIntrins>& WgmmaIntrinGroups();

// The built-in warpgroup product of `in` summed in `acc` with n columns; nullptr if none.
const WgmmaIntrins* FindWgmmaIntrins(DataType in, DataType acc, int64_t n);

// The built-in product of `in` summed in `acc` with fragments of `family`; nullptr if none.
const TensorCoreIntrins* FindTensorCoreIntrins(DataType in, DataType acc,
                                               const std::string& family);

// The built-in product with fragments of `family` for reduction block `block`, whose inputs are
// `in` and whose result is `acc`; nullptr if none. float32 inputs match only where the block's
// update multiplies round_tf32 of both operands (MakeWorkload's "tf32" products).
const TensorCoreIntrins* FindTensorCoreIntrins(const Block& block, DataType in, DataType acc,
                                               const std::string& family);

// Adds `intrin`. kInvalidArgument if it breaks the conventions above (naming what),
// kAlreadyExists if an intrinsic of that name is registered.
absl::Status RegisterTensorIntrin(TensorIntrin intrin);

// The intrinsic `name`. kNotFound listing the registered names.
absl::StatusOr<TensorIntrin> GetTensorIntrin(const std::string& name);

// Registered names, sorted.
std::vector<std::string> ListTensorIntrins();

// Matches `block` against `intrin.desc` and returns the body of `intrin.impl` instantiated for
// it: parameters replaced by the matched regions of the block's buffers, loop and iteration
// variables fresh, nested block names made unique against `taken_block_names`. The match
// compares loops by constant extent in order (unit loops are ignored), nested blocks by the
// kinds of the iteration variables that vary with the matched loops, by init and by body,
// statements and expressions by structure and dtype, integer expressions by provable equality,
// and each buffer access relative to the block's declared region of that buffer (trailing
// extents equal to the description's, leading ones 1; scopes compatible, see above).
// kInvalidArgument naming the first difference otherwise.
absl::StatusOr<Stmt> InstantiateTensorIntrin(const Block& block, const TensorIntrin& intrin,
                                             std::set<std::string> taken_block_names);

}  // namespace tessera

#endif  // TESSERA_SCHEDULE_TENSOR_INTRIN_H_
