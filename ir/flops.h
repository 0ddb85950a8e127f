// Floating-point operation count of a tensor program, for GFLOP/s in reports and logs
// (TVM's EstimateTIRFlops semantics).
#ifndef TESSERA_IR_FLOPS_H_
#define TESSERA_IR_FLOPS_H_

#include "ir/function.h"

namespace tessera {

// Sum over blocks of (arithmetic operations in the block's body and init, the reduction
// update included: a multiply-add counts 2) x (product of the constant extents of the loops
// around it). Counted: + - * / floordiv floormod min max and math calls (exp, sqrt, ...) in
// stored values, of any non-bool type; not counted: index arithmetic inside buffer indices,
// casts, comparisons and logic (conditions), loads. A select or if-then-else counts its
// costlier branch. Loops with non-constant extents count once. Pure data movement is 0.
double EstimateFlops(const PrimFunc& func);

}  // namespace tessera

#endif  // TESSERA_IR_FLOPS_H_
