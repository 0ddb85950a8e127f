// Steps of codegen/lower.h's LowerForCodegen, shared with the GPU lowering
// (codegen/lower_gpu.h). Internal to codegen/.
#ifndef TESSERA_CODEGEN_LOWER_INTERNAL_H_
#define TESSERA_CODEGEN_LOWER_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/arith/analyzer.h"
#include "ir/function.h"

namespace tessera {
namespace lower_internal {

// Step 1 of LowerForCodegen: replaces every BlockRealize under `stmt` by its body with the
// block's iteration variables substituted, the predicate as an IfThenElse, the init guarded by
// "every reduction iteration variable at the start of its domain" and alloc_buffers as
// Allocate nodes. kInvalidArgument for a Block that is not under a BlockRealize.
absl::StatusOr<Stmt> RemoveBlocks(const Stmt& stmt);

// Step 2: replaces `params` and every Allocate'd buffer under `body` by 1-D buffers (same name,
// dtype and scope) and every access index by the flattened, simplified offset. `*flat_params`
// receives the replacements of `params`, in order. kInvalidArgument for an access to a buffer
// that is neither in `params` nor allocated, or strides of the wrong rank.
absl::StatusOr<Stmt> FlattenBuffers(const std::vector<Buffer>& params, const Stmt& body,
                                    std::vector<Buffer>* flat_params);

// Product of constant loop extents below `s` along its deepest nest (1 without loops), or -1
// if some extent is not constant. Emitters use it for `pragma_auto_unroll_max_step`.
int64_t InnerIterations(const Stmt& s);
// An upper bound of the iterations `s` runs: as InnerIterations, but the nests of a sequence
// added (a Winograd transform's 16 expanded points, one loop each), and loops whose extent is
// not constant counted with the largest value it takes given the loops above it in `s` and the
// ranges of `enclosing`; -1 when some extent is unbounded.
int64_t MaxWorkIterations(const Stmt& s, const arith::VarRangeMap& enclosing);

// kInvalidArgument "<backend> codegen: unsupported dtype T of <where>" unless the C and CUDA
// emitters can represent `t` (float16/32/64, bfloat16, 8- to 64-bit integers, bool).
absl::Status CheckEmittableDType(DataType t, const std::string& backend, const std::string& where);

}  // namespace lower_internal
}  // namespace tessera

#endif  // TESSERA_CODEGEN_LOWER_INTERNAL_H_
