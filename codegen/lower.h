// Lowering of scheduled TensorIR to the loop-and-pointer form that code emitters print.
//
// LowerForCodegen is an IR -> IR pass (design principle P0):
//   1. Blocks disappear. Every use of a block iteration variable is replaced by the value
//      its BlockRealize binds; a non-trivial predicate becomes an IfThenElse around the block;
//      `init` runs under `if (every reduction iter var == its dom.min)` before the body; the
//      block's alloc_buffers become Allocate nodes at the block's position.
//   2. Buffers become one-dimensional. Every parameter and allocation is replaced by a 1-D
//      buffer of the same name, dtype and scope, and every access index becomes
//      sum(index[d] * stride[d]) with BufferNode::strides when set, row-major otherwise,
//      simplified with ir/arith (loop variables known to lie in [0, extent)).
//   3. Loops stay as they are (kind, thread tag, annotations).
// The pass is idempotent: lowering a lowered function gives an equivalent function.
#ifndef TESSERA_CODEGEN_LOWER_H_
#define TESSERA_CODEGEN_LOWER_H_

#include "absl/status/statusor.h"
#include "ir/function.h"

namespace tessera {

// Lowers `f` as described above. kInvalidArgument when a load or store refers to a buffer
// that is neither a parameter nor allocated by an enclosing block, or when a buffer has
// strides of another rank than its shape.
absl::StatusOr<PrimFunc> LowerForCodegen(const PrimFunc& f);

}  // namespace tessera

#endif  // TESSERA_CODEGEN_LOWER_H_
