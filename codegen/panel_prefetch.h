// InsertPanelPrefetches: under a loop L annotated kPrefetchNextPanel (ir/loop_annotations.h),
// each iteration first asks the cache for the elements that the same iteration of the next
// panel will read:
//
//   for k in [0, n):  body
// becomes
//   for k in [0, n):  tessera_prefetch(W[d0 + S, d1, ...]); ...; body
//
// for every load W[d0, d1, ...] under L of a buffer outside registers ("global" scope) whose
// first index d0 is picked by floordiv(t, n), n >= 2, of a loop t above L (a packed panel that
// n tiles in a row read) and depends on no serial loop of L's body. The loops of L's body that
// the load's indices use are enumerated (vectorized ones at their first lane: one prefetch per
// vector), and S is d0's step from tile t to tile t + n (the panel's extent along the first
// dimension, which may span the vectors of several tiles side by side). The n tiles share the
// next panel out: iteration k of tile t issues its prefetches
// when k % n == t % n. Loads whose first index is a constant (an image's batch), picked
// otherwise (floormod(t, n): panels that stay cached) or whose span is not a constant are left
// alone.
//
// Why: a convolution's packed weights are read once from memory by the first tile of each panel
// and from the cache by the others; on a 2-core Intel VM ResNet-18's 7x7x512 convolutions ran
// 25% slower inside the model than alone, the 9.4 MB of weights arriving while the tile waited.
// Prefetches do not fault, so the last panel's run past the buffer's end is harmless.
//
// InsertPrefetchesAhead: under a loop annotated kPrefetchAhead = D, each iteration first asks
// L1 for what iteration k + D will read, for every vector load of a buffer outside registers
// whose address moves by at least a cache line per iteration (a GEMM tile's packed strips, one
// line per k each; vectors enumerated as above). Loads that move less (the broadcasts of A's
// rows, 4 bytes a step) are left alone: each of their lines serves many iterations.
//
// Why: a tile waits for its strips' lines from L2, and inside a model (its weights cold) from
// memory, faster than the hardware prefetcher brings them. On the 2-core Emerald Rapids VM a
// 128 x 768 x 3072 tile loop ran 319 -> 330 GFLOP/s with its strips cached and 267 -> 302 with
// them cold, LLaMA's 128 x 2048 x 5632 245 -> 290 cold (D = 64, docs/cpu-backend.md).
#ifndef TESSERA_CODEGEN_PANEL_PREFETCH_H_
#define TESSERA_CODEGEN_PANEL_PREFETCH_H_

#include "ir/stmt.h"

namespace tessera {

// The extern call that stands for a prefetch: the BufferLoad whose address is fetched, and
// optionally the locality (__builtin_prefetch's: 3 is L1; without it 2, L2). Only the C backend
// prints it.
inline constexpr char kPrefetchCall[] = "tessera_prefetch";

// `body` (blocks removed, buffers not yet flattened: LowerForCodegen's step between the two)
// with prefetches at the start of each annotated loop's body, as described above.
Stmt InsertPanelPrefetches(const Stmt& body);

// `body` (as for InsertPanelPrefetches) with prefetches at the start of each loop annotated
// kPrefetchAhead, as described above.
Stmt InsertPrefetchesAhead(const Stmt& body);

// `body` if it is not `prefetches; if (c) S` (no else), else `if (c) { prefetches; S }`: the
// guard whole again, for PartitionGuardedLoops to hoist it (a convolution tile's test of its
// kernel row, constant in the loops below). A tile then skips the prefetches where it skips
// the taps; the panel's other tiles fetch the same lines.
Stmt PrefetchesIntoGuard(const Stmt& body);

}  // namespace tessera

#endif  // TESSERA_CODEGEN_PANEL_PREFETCH_H_
