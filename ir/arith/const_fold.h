// Constant folding of single operations on immediates, with each dtype's semantics (integers
// wrap around in two's complement, float32 results are rounded to float precision, 16-bit
// floats are not folded). Used by the simplifier; usable by any pass that builds expressions.
#ifndef TESSERA_IR_ARITH_CONST_FOLD_H_
#define TESSERA_IR_ARITH_CONST_FOLD_H_

#include <cstdint>
#include <vector>

#include "ir/expr.h"

namespace tessera {
namespace arith {

// `value` wrapped into the range of an integer dtype (two's complement for signed types);
// 0/1 for bool; unchanged for 64-bit types.
int64_t WrapToDType(DataType dtype, int64_t value);
// a + b and a * b in the arithmetic of integer dtype `t`.
int64_t WrapAdd(DataType t, int64_t a, int64_t b);
int64_t WrapMul(DataType t, int64_t a, int64_t b);

// `a op b` for two integer/bool immediates or two float immediates. Undefined where the
// operands are not both immediates or the result must not be folded (division by zero,
// 16-bit floats).
Expr FoldBinary(BinaryOp op, const Expr& a, const Expr& b);
// Cast of an immediate to `to`; undefined if `value` is not an immediate or the conversion
// is undefined (float out of the integer range) or not folded (16-bit floats).
Expr FoldCast(DataType to, const Expr& value);
// A math call whose arguments are float immediates (or abs of an integer immediate).
Expr FoldCall(CallOp op, DataType dtype, const std::vector<Expr>& args);

}  // namespace arith
}  // namespace tessera

#endif  // TESSERA_IR_ARITH_CONST_FOLD_H_
