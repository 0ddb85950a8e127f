// Structural equality of IR: two functions are equal when they compute the same thing in the
// same way, whatever their variables, buffers and the functions themselves are called.
//
// Variables and buffers are matched by binding position: the first time a variable or buffer
// of one side is met (as a parameter, a loop variable, an iteration variable, an allocated
// buffer, or, where free variables are mapped, at its first use) it is paired with the one at
// the same place on the other side, and every later occurrence must respect that pairing.
// Everything else counts: dtypes, shapes, storage scopes, strides, every index and
// immediate, loop kinds, extents and thread tags, iteration domains and kinds, regions,
// annotations and function attributes (except "global_symbol", which holds the function's
// name), and block names (schedules refer to blocks by name, so two functions whose blocks
// are named differently do not replay the same traces). Floats compare by value with
// -0.0 == 0.0 and NaN == NaN, matching StructuralHash.
//
// StructuralHash (ir/structural_hash.h) is consistent with this: equal => equal hashes.
#ifndef TESSERA_IR_STRUCTURAL_EQUAL_H_
#define TESSERA_IR_STRUCTURAL_EQUAL_H_

#include <string>

#include "ir/function.h"

namespace tessera {

struct StructuralEqualOptions {
  // When true, variables and buffers used without being defined inside the compared
  // expression or statement (free ones) are paired at first use, like definitions. When
  // false they must be the same object on both sides. PrimFunc comparison always pairs
  // parameters and their shape variables.
  bool map_free_vars = false;
};

bool StructuralEqual(const PrimFunc& a, const PrimFunc& b);
// Same keys, and each function structurally equal.
bool StructuralEqual(const IRModule& a, const IRModule& b);
bool StructuralEqual(const Expr& a, const Expr& b, StructuralEqualOptions options = {});
bool StructuralEqual(const Stmt& a, const Stmt& b, StructuralEqualOptions options = {});

// "" if equal; otherwise the path to the first difference and both values, e.g.
// "body.block.body.seq[1].value.b: 3 vs 4". Meant for tests and error messages.
std::string StructuralDiff(const PrimFunc& a, const PrimFunc& b);
std::string StructuralDiff(const Expr& a, const Expr& b, StructuralEqualOptions options = {});
std::string StructuralDiff(const Stmt& a, const Stmt& b, StructuralEqualOptions options = {});

}  // namespace tessera

#endif  // TESSERA_IR_STRUCTURAL_EQUAL_H_
