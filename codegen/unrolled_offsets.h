// MoveUnrolledTermsLast: in every flat buffer index under an unrolled loop, the summands that use
// an unrolled loop's variable move to the end (`base + rh * 3584 + w * 256 + rc - 3840` becomes
// `base + rh * 3584 + rc - 3840 + w * 256`). Once the C compiler unrolls the loop they are
// constants, and the accesses of all unrolled copies share one address `base + ... - 3840` plus a
// displacement; with the constant in the middle of the sum GCC's induction-variable selection
// gave each copy a register of its own (a dense convolution tile of 14 pixels: 14 index
// registers, spilled to the stack and into a vector register, which in turn spilled a weight
// vector). Integer sums only; the value of every index is unchanged.
#ifndef TESSERA_CODEGEN_UNROLLED_OFFSETS_H_
#define TESSERA_CODEGEN_UNROLLED_OFFSETS_H_

#include "ir/function.h"

namespace tessera {

// `f` (lowered by LowerForCodegen, its buffers flat) with its indices reordered as above.
PrimFunc MoveUnrolledTermsLast(const PrimFunc& f);

}  // namespace tessera

#endif  // TESSERA_CODEGEN_UNROLLED_OFFSETS_H_
