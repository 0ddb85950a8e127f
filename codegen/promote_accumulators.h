// PromoteAccumulators: a sum that a loop nest keeps in a buffer at an address that moves with
// outer loops is held in a small array of its own across the serial loop that accumulates it:
//
//   for k in [0, n):  for i (unrolled):  for v (simd):  X[base + i * 64 + v] += f(k, i, v)
// becomes
//   acc[8 * 16];
//   for i:  for v:  acc[i * 16 + v] = X[base + i * 64 + v]
//   for k in [0, n):  for i:  for v:  acc[i * 16 + v] += f(k, i, v)
//   for i:  for v:  X[base + i * 64 + v] = acc[i * 16 + v]
//
// GCC keeps an array indexed by unrolled constants in registers, but not a buffer at an address
// that varies with outer loops: the K-blocked GEMM nest (its C block accumulated across K blocks,
// each register tile at an offset of the row and column tile) loaded and stored every
// accumulator at every k, 57-61 GFLOP/s against 167-170 for the default nest on GMM 128 x 768 x
// 3072 (Zen 4, two threads). The loop k (serial) qualifies for a buffer X allocated outside it
// when X is touched in k's body only by one store `X[e] = ...` (through loops, no branch) and by
// loads of X[e] inside that store's value; e does not use k, is linear with constant
// coefficients in the loops between k and the store that it uses (each of constant extent), maps
// their box one-to-one onto X, and has a base that is not a constant (a constant base, or one of
// loops of extent 1 only, is a tile GCC already keeps in registers); the box is a tile (one of its
// loops is unrolled) and holds at most kMaxPromotedBytes. The outermost such loop is promoted. The
// meaning does not change: acc holds exactly X's elements of the box while k runs, and nothing else
// in k reads or writes them.
#ifndef TESSERA_CODEGEN_PROMOTE_ACCUMULATORS_H_
#define TESSERA_CODEGEN_PROMOTE_ACCUMULATORS_H_

#include <cstdint>

#include "ir/function.h"

namespace tessera {

// A register file of 32 vectors of 64 bytes: a larger box would live in memory anyway.
constexpr int64_t kMaxPromotedBytes = 2048;

// `f` (lowered by LowerForCodegen, its buffers flat) with its accumulators promoted as above.
PrimFunc PromoteAccumulators(const PrimFunc& f);

}  // namespace tessera

#endif  // TESSERA_CODEGEN_PROMOTE_ACCUMULATORS_H_
