// Structural hash of IR, consistent with ir/structural_equal.h (structurally equal values
// hash equally): invariant to the names of variables, buffers and functions, sensitive to
// everything StructuralEqual compares (block names included).
//
// The hash identifies workloads in users' databases, so it is stable across machines, builds
// and runs: it is computed from a canonical stream of 64-bit words (tags, dtypes, integers,
// the bit patterns of doubles with -0.0 and NaN normalized, strings byte by byte) combined
// with a fixed mixing function; no pointer values, no std::hash. Variables and buffers enter
// the stream as the index of their first occurrence (definition order: parameters, then
// loop variables, iteration variables and allocated buffers as the body is walked).
// Changing the stream changes every stored hash: tests/ir/structural_test.cc pins a golden
// value.
#ifndef TESSERA_IR_STRUCTURAL_HASH_H_
#define TESSERA_IR_STRUCTURAL_HASH_H_

#include <cstdint>
#include <string>

#include "ir/function.h"

namespace tessera {

uint64_t StructuralHash(const PrimFunc& f);
uint64_t StructuralHash(const Expr& e);
uint64_t StructuralHash(const Stmt& s);
// Independent of the functions' names and order: combines the sorted function hashes.
uint64_t StructuralHash(const IRModule& m);

// StructuralHash(f) as 16 lowercase hex digits.
std::string StructuralHashHex(const PrimFunc& f);

}  // namespace tessera

#endif  // TESSERA_IR_STRUCTURAL_HASH_H_
