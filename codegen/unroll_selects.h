// ExpandUnrolledSelects: a loop marked unrolled whose body selects a case by an equality on its
// variable (`select(e == 3, .., ..)`, `select(floormod(h, 4) == 1, .., ..)`; not the order tests
// of a convolution's padding) is unrolled here, in the IR: each copy has
// the variable replaced by its value and its selects folded, so that the C compiler sees one
// branch per copy (with its own constants) instead of a chain it would evaluate in every vector
// lane. The Winograd transforms (frontend/winograd.h) are written this way: one expression per
// transform point, each with only its nonzero coefficients.
#ifndef TESSERA_CODEGEN_UNROLL_SELECTS_H_
#define TESSERA_CODEGEN_UNROLL_SELECTS_H_

#include <functional>

#include "ir/function.h"

namespace tessera {

// Loops unrolled by ExpandUnrolledSelects have at most this many iterations.
inline constexpr int64_t kMaxExpandedSelectIterations = 64;

// Calls `fn` on every equality `a == b` that is a conjunct of the condition of a select under
// `stmt`: the case tests ExpandUnrolledSelects (and the CPU default, which unrolls their loops)
// look for.
void VisitCaseTests(const Stmt& stmt, const std::function<void(const BinaryNode& eq)>& fn);

// `f` (lowered by LowerForCodegen) with such loops expanded; other loops unchanged.
PrimFunc ExpandUnrolledSelects(const PrimFunc& f);

}  // namespace tessera

#endif  // TESSERA_CODEGEN_UNROLL_SELECTS_H_
