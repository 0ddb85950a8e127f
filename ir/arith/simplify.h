// The expression simplifier: constant folding, canonical linear sums, and the floordiv /
// floormod / min / max / comparison rules that index arithmetic after split, fuse and
// compute_at needs.
//
// Integer sums are rewritten into the canonical form `sum(coeff_i * atom_i) + c`: atoms (any
// non-sum subexpression: variables, floordiv, floormod, min, products of non-constants, loads)
// are ordered by first appearance in the input, terms with positive coefficients come first,
// then the subtracted ones, then the constant. The result is deterministic, idempotent
// (Simplify(Simplify(e)) is structurally Simplify(e)) and never changes meaning.
//
// Limits: floats are only constant folded (float32/float64) and rid of `x + 0`, `x * 1`,
// `x / 1`, never reassociated. The floordiv/floormod rules that split sums assume 64-bit signed
// index arithmetic does not overflow (as TVM does); narrower integer types get folding with
// wrap-around semantics, canonical sums (valid modulo 2^bits) and bound-based rules only.
#ifndef TESSERA_IR_ARITH_SIMPLIFY_H_
#define TESSERA_IR_ARITH_SIMPLIFY_H_

#include "ir/expr.h"

namespace tessera {
namespace arith {

class Analyzer;

// Simplified, equivalent expression. `analyzer` supplies variable bounds, bound values and
// assumed facts; nullptr means nothing is known about variables.
Expr Simplify(const Expr& expr, Analyzer* analyzer = nullptr);

// Structural equality of expressions: same node kinds, dtypes, operators and immediates,
// identical variables and buffers (by identity). Used to compare simplified forms.
bool ExprDeepEqual(const Expr& a, const Expr& b);

}  // namespace arith
}  // namespace tessera

#endif  // TESSERA_IR_ARITH_SIMPLIFY_H_
