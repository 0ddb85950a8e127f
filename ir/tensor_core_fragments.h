// Tensor-core fragments: buffers whose 16x16 tiles are spread over the registers of a warp's 32
// lanes, accessed only by warp-wide extern calls of their family. Two families:
//   - "wmma.matrix_a" / "wmma.matrix_b" / "wmma.accumulator", accessed by the calls "wmma::..."
//     (CUDA's WMMA API, which chooses the instructions; sm_70 and later);
//   - "mma.matrix_a" / "mma.matrix_b" / "mma.accumulator", accessed by "tessera_mma::..." (the
//     generated code's own ldmatrix and mma.sync.m16n8k16, codegen/cuda_prelude.h; sm_80 and
//     later);
//   - "wgmma.accumulator", a Hopper warpgroup's 64xN accumulator spread over the registers of its
//     128 threads, accessed by "tessera_wgmma::..." (wgmma.mma_async, whose operands A and B are
//     read from shared memory, sm_90a only). It has no matrix_a / matrix_b fragments.
// They name the same operations (load_matrix_sync, mma_sync, store_matrix_sync, fill_fragment;
// wgmma's product is mma_async), so that lowering and code generation treat them alike.
#ifndef TESSERA_IR_TENSOR_CORE_FRAGMENTS_H_
#define TESSERA_IR_TENSOR_CORE_FRAGMENTS_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

inline constexpr char kWmmaNamespace[] = "wmma";
inline constexpr char kMmaNamespace[] = "tessera_mma";
inline constexpr char kWgmmaNamespace[] = "tessera_wgmma";
// wgmma.mma_async.m64nNk16: a warpgroup's product of 64 rows over a k step of 16.
inline constexpr int64_t kWgmmaM = 64, kWgmmaK = 16;

// The namespace of the calls that access fragments of `scope`; "" if `scope` is no fragment's.
inline std::string FragmentNamespace(std::string_view scope) {
  if (scope.rfind("wmma.", 0) == 0) return kWmmaNamespace;
  if (scope.rfind("mma.", 0) == 0) return kMmaNamespace;
  if (scope.rfind("wgmma.", 0) == 0) return kWgmmaNamespace;
  return "";
}

inline bool IsFragmentScope(std::string_view scope) { return !FragmentNamespace(scope).empty(); }

// The operation of a fragment call ("load_matrix_sync" of "tessera_mma::load_matrix_sync"); ""
// if `callee` is no fragment family's.
inline std::string FragmentOperation(std::string_view callee) {
  for (std::string_view ns : {std::string_view(kWmmaNamespace), std::string_view(kMmaNamespace),
                              std::string_view(kWgmmaNamespace)}) {
    if (callee.size() > ns.size() + 2 && callee.substr(0, ns.size()) == ns &&
        callee.substr(ns.size(), 2) == "::") {
      return std::string(callee.substr(ns.size() + 2));
    }
  }
  return "";
}

inline bool IsFragmentCall(std::string_view callee) { return !FragmentOperation(callee).empty(); }

// The earliest compute capability whose tensor cores take fragments of `scope` holding elements
// of `bfloat16` (true) or float16 / float32 (false). wgmma's also need the arch-specific target
// (sm_90a, FragmentNeedsArchSpecificTarget).
inline int FragmentMinComputeCapability(std::string_view scope, bool bfloat16) {
  if (FragmentNamespace(scope) == kWgmmaNamespace) return 90;
  return FragmentNamespace(scope) == kMmaNamespace || bfloat16 ? 80 : 70;
}
inline bool FragmentNeedsArchSpecificTarget(std::string_view scope) {
  return FragmentNamespace(scope) == kWgmmaNamespace;
}

// Shared memory that TMA fills (cp.async.bulk.tensor) and wgmma reads: a tile [.., R, C] is
// stored as C x bytes / 128 blocks of R rows of 128 bytes, each block in TMA's 128-byte swizzle
// (codegen/lower_gpu_internal.h TmaTileOffset). Nothing else may read or write it.
inline constexpr char kTmaSharedScope[] = "shared.tma";

}  // namespace tessera

#endif  // TESSERA_IR_TENSOR_CORE_FRAGMENTS_H_
