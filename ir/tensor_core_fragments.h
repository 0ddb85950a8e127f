// Tensor-core fragments: buffers whose 16x16 tiles are spread over the registers of a warp's 32
// lanes, accessed only by warp-wide extern calls of their family. Two families:
//   - "wmma.matrix_a" / "wmma.matrix_b" / "wmma.accumulator", accessed by the calls "wmma::..."
//     (CUDA's WMMA API, which chooses the instructions; sm_70 and later);
//   - "mma.matrix_a" / "mma.matrix_b" / "mma.accumulator", accessed by "tessera_mma::..." (the
//     generated code's own ldmatrix and mma.sync.m16n8k16, codegen/cuda_prelude.h; sm_80 and
//     later).
// Both name the same operations (load_matrix_sync, mma_sync, store_matrix_sync, fill_fragment),
// so that lowering and code generation treat them alike.
#ifndef TESSERA_IR_TENSOR_CORE_FRAGMENTS_H_
#define TESSERA_IR_TENSOR_CORE_FRAGMENTS_H_

#include <string>
#include <string_view>

namespace tessera {

inline constexpr char kWmmaNamespace[] = "wmma";
inline constexpr char kMmaNamespace[] = "tessera_mma";

// The namespace of the calls that access fragments of `scope`; "" if `scope` is no fragment's.
inline std::string FragmentNamespace(std::string_view scope) {
  if (scope.rfind("wmma.", 0) == 0) return kWmmaNamespace;
  if (scope.rfind("mma.", 0) == 0) return kMmaNamespace;
  return "";
}

inline bool IsFragmentScope(std::string_view scope) { return !FragmentNamespace(scope).empty(); }

// The operation of a fragment call ("load_matrix_sync" of "tessera_mma::load_matrix_sync"); ""
// if `callee` is no fragment family's.
inline std::string FragmentOperation(std::string_view callee) {
  for (std::string_view ns : {std::string_view(kWmmaNamespace), std::string_view(kMmaNamespace)}) {
    if (callee.size() > ns.size() + 2 && callee.substr(0, ns.size()) == ns &&
        callee.substr(ns.size(), 2) == "::") {
      return std::string(callee.substr(ns.size() + 2));
    }
  }
  return "";
}

inline bool IsFragmentCall(std::string_view callee) { return !FragmentOperation(callee).empty(); }

// The earliest compute capability whose tensor cores take fragments of `scope` holding elements
// of `bfloat16` (true) or float16 / float32 (false).
inline int FragmentMinComputeCapability(std::string_view scope, bool bfloat16) {
  return FragmentNamespace(scope) == kMmaNamespace || bfloat16 ? 80 : 70;
}

}  // namespace tessera

#endif  // TESSERA_IR_TENSOR_CORE_FRAGMENTS_H_
