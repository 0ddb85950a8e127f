// PartitionGuardedLoops: turns loops whose body is guarded by a predicate on the loop's own
// variable into unguarded loops, so that the C compiler vectorizes and unrolls the tiles of a
// padded tiling (a Split whose factors do not divide the extent guards its tail with
// `outer * f + v < extent`, which at -fno-tree-loop-if-convert blocks vectorization).
//
// For a loop `for v in [0, n): if (c1 && ... && ck) S` (children first):
//   - a conjunct that does not use v (and reads no buffer) moves above the loop;
//   - conjuncts `v + rest < bound` / `<=` (v with coefficient 1, rest and bound free of v,
//     no buffer read) bound the loop: with n constant, the loop is partitioned into
//     `if (n <= B) for v in [0, n): S' else for v in [0, B): S'` (B the least bound), the
//     full tile keeping its constant extent; otherwise the extent becomes min(n, B);
//   - the other conjuncts stay as the guard S' of the body.
// A serial loop of constant extent whose body is then `if (c) S1 else S2` with c linear in its
// variable alone (the partitioned tiles of an inner loop, `n <= B - o * f`) becomes a loop of S1
// over the iterations where c holds and one of S2 over the rest; a piece of one iteration is
// that iteration's body, its extents folded to constants (the tail tile peeled off the loop).
// A loop whose body is one store of `select(c1 && ... && ck, x, y)` with conjuncts of the form
// above (PadEinsum's zero padding: `j < extent ? B[..] : 0`) is split at the least bound B:
// `for v in [0, min(n, B)): store x (or select of the other conjuncts)` then
// `for v in [max(B, 0), n): store y` (with n constant: `if (n <= B) <one loop of x> else ..`).
// First, a float store accumulating into the element it stores with a padding term that leaves
// it unchanged, `acc = max(acc, select(c, x, lowest))` (min: the highest value; under a loop
// annotated skip_zero_terms also `acc = acc + select(c, x, 0) * y`), becomes
// `if (c) acc = max(acc, x)`, the guard then moving as above.
// Each step keeps the meaning (predicates are pure), so the pass is safe on any lowered
// function; it only changes loops of that shape.
#ifndef TESSERA_CODEGEN_PARTITION_LOOPS_H_
#define TESSERA_CODEGEN_PARTITION_LOOPS_H_

#include "ir/function.h"

namespace tessera {

// `f` (lowered by LowerForCodegen) with its guarded loops partitioned as described above.
PrimFunc PartitionGuardedLoops(const PrimFunc& f);

}  // namespace tessera

#endif  // TESSERA_CODEGEN_PARTITION_LOOPS_H_
