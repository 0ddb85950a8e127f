// Analysis shared by the default (DLight-style) rules (docs/reference/metaschedule.md §10.1): the
// blocks of a normalized function with their iteration kinds, inlining of what can be inlined, the
// dominant read of a block, epilogue tests, and the final GPU check every GPU rule makes.
#ifndef TESSERA_RULES_DEFAULT_ANALYSIS_H_
#define TESSERA_RULES_DEFAULT_ANALYSIS_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/function.h"
#include "ir/target.h"
#include "schedule/schedule.h"

namespace tessera {
namespace dlight {

// A block directly under the root, in a function whose every such block has exactly one loop
// per iteration variable, iteration variable i bound to loop i.
struct BlockInfo {
  std::string name;
  BlockRV rv;
  std::vector<LoopRV> loops;     // loops[i] binds iteration variable i
  std::vector<int64_t> extents;  // constant extent per iteration variable (-1: not constant)
  std::string kinds;             // "S" / "R" per iteration variable, e.g. "SSR"

  bool IsInjective() const { return kinds.find('R') == std::string::npos; }
  bool IsReduction() const { return !IsInjective(); }
  // `kinds` without the iteration variables of extent 1 ("SRR" for b=1, i, j, k: "RR" -> as in
  // DLight, which drops unit iterators).
  std::string NonUnitKinds() const;
};

// The blocks under the root of `sch`'s function in program order (looked up through `sch`, so
// GetBlock/GetLoops are recorded), or nullopt if the function is not in the normal form above
// (a block nested in another block, a binding that is not its own loop variable, a block
// without loops).
std::optional<std::vector<BlockInfo>> NormalizeBlocks(Schedule* sch);

// Repeatedly inlines blocks of `blocks` (ComputeInline, else ReverseComputeInline; the first
// success restarts the scan) until none can be; returns the blocks that remain, re-normalized.
// nullopt if the function stops being normal. With `into_reductions` false a block is inlined
// only into elementwise blocks (CPU: a padding step inlined into a convolution puts its bounds
// tests into the innermost loop).
std::optional<std::vector<BlockInfo>> TryInline(Schedule* sch, const std::vector<BlockInfo>& blocks,
                                                bool into_reductions = true);
// TryInline restricted to runs of consecutive injective blocks; other blocks stay.
std::optional<std::vector<BlockInfo>> TryInlineContiguousSpatial(
    Schedule* sch, const std::vector<BlockInfo>& blocks);

// `block` (`node`) as a BlockInfo, for schedule rules that reuse a default's loop nest on one
// block of a design space: nullopt unless it sits directly under the root, not yet tiled by
// MultiLevelTiling, one loop per iteration variable bound trivially, every extent constant.
std::optional<BlockInfo> UntiledRootBlockInfo(Schedule* sch, BlockRV block, const Block& node);

// Iteration-variable indices that the accesses to `buffer` in `block`'s body use, per access
// dimension: -1 for a constant index, -2 for an index that is not a single iteration variable
// or a constant. Empty if `block` does not access `buffer` (all accesses must agree; if they do
// not, every dimension is -2).
std::vector<int> AccessIters(const Block& block, const Buffer& buffer);

// The iteration variables of `block` whose extent is not 1 and, of those, the ones that index
// `buffer`: a unit iterator (a batch of 1) says nothing about an operand's shape.
std::set<int> NonUnitIters(const Block& block);
std::set<int> NonUnitAccessIters(const Block& block, const Buffer& buffer);

// True if some read of `block` other than of its output does not use iteration variable `v`:
// an operand broadcast over v (a convolution's input pixel, read once per output channel
// vector; GEMV's x, read by every row).
bool HasReadBroadcastOver(const Block& block, int v);

// The index in block->reads of the read using the most iteration variables (first on ties),
// -1 if the block reads nothing.
int DominantRead(const Block& block);

// True if the innermost dimension of `block`'s dominant read is indexed by a reduction
// iteration variable (the reduction runs along contiguous memory).
bool IsInnerReduction(const Block& block);

// True if `block` is a reduction with a single write of the form X[idx] = X[idx] + Y.
bool IsSumReduction(const Block& block);

// True if `epilogue` reads `block`'s output with fewer iteration variables than `epilogue` has
// non-unit ones (e.g. a per-row statistic used by every element of the row).
bool IsBroadcastEpilogue(const Block& block, const Block& epilogue);

// The block named `name` in `sch`'s function.
absl::StatusOr<Block> BlockByName(const Schedule& sch, const std::string& name);

// The constant extent of `loop` (-1 if not constant or unknown).
int64_t LoopExtent(const Schedule& sch, LoopRV loop);

// The largest power of two <= min(n, limit) (at least 1).
int64_t FloorPowerOfTwo(int64_t n, int64_t limit);

// A reduction block computing the GEMM C[S,I,J] += A[S,I,K] * B[S,J,K]
// (docs/reference/metaschedule.md §10.3): `a` and `b` index block->reads; groups[kGemmS..kGemmK]
// list the iteration variables of each kind (unit ones go to S, or K if reductions). J is the group
// C is contiguous along.
enum GemmGroup { kGemmS = 0, kGemmI = 1, kGemmJ = 2, kGemmK = 3 };
struct GemmMatch {
  int a = -1;
  int b = -1;
  std::vector<int> groups[4];
};
// The match, or nullopt unless `block` reads exactly two buffers (besides its output) and writes
// one, every index is a single iterator or a constant, and I, J and K have non-unit members
// (with `one_row`, I may have none: a product of one row, its unit loops in S).
// `extents` as in BlockInfo.
std::optional<GemmMatch> MatchGemm(const Block& block, const std::vector<int64_t>& extents,
                                   bool one_row = false);
// The product of the extents of `g`'s iterators of kind `group` (a GemmGroup); `extents` as in
// BlockInfo.
int64_t GroupExtent(const std::vector<int64_t>& extents, const GemmMatch& g, int group);

// True if the GEMM `g` of `block` is laid out as tensor cores take it: C[S.., I, J] +=
// A[S.., I, K] * B[S.., K, J] with one iterator each for I, J and K (unit iterators aside), I and
// K multiples of 16, J of `column_multiple` (16; wgmma's N steps by 8), the leading dimensions
// batch iterators or constants.
bool IsTensorCoreGemm(const Block& block, const GemmMatch& g, const std::vector<int64_t>& extents,
                      int64_t column_multiple = 16);

// ---- Schedule steps shared by several rules ------------------------------------------------

// Moves the last `ndim` loops of the copy block `cache` onto threads_y x threads_x threads:
// copies them with every thread, in vectors of `lanes` (or fewer, down to 4) where the tile
// divides evenly.
absl::Status CooperativeFetch(Schedule* sch, BlockRV cache, size_t ndim, int64_t threads_y,
                              int64_t threads_x, int64_t lanes = 4);

// Reverse-inlines the consumers of `write_back`'s output into it as long as one can be
// (elementwise epilogues). Errors from GetConsumers only.
absl::Status InlineEpilogues(Schedule* sch, BlockRV write_back);

// Makes `block` accumulate in a `scope` (e.g. "local") copy of its output, reverse-inlines the
// consumers of that output into the write-back copy as long as one can be (elementwise
// epilogues), and computes the write-back under `loop` (unit loops kept). Returns the
// write-back block. Errors from the primitives (the caller treats them as "does not apply").
absl::StatusOr<BlockRV> WriteBackUnder(Schedule* sch, BlockRV block, LoopRV loop,
                                       const std::string& scope);

// Copies the read `read` of `block` (a layout-free parameter, ir/prepack.h, or a padded copy of
// one that the caller inlines into the packing next: the caller checks) into strips: its
// dimension `strip_dim` split by `lanes`, the strip index first and the lanes last, the other
// dimensions between in their order ([K, N] -> [N / 16, K, 16]), in a block directly under the
// root annotated kLayoutRewritePreproc, which a deployment runs once per weight. A vector of
// lanes along `strip_dim` then reads its strip contiguously along every other dimension, and the
// layout does not depend on the tile decisions (a mutated trace keeps reading it well).
// With `group_dim` (K's dimension, else -1) K is taken in groups of `group`, the group last:
// [K, N] -> [N / 16, K / 2, 16, 2] for pairs, the layout the CPU's dot products read
// (ir/cpu_intrinsics.h); a group of several lanes' groups of `lane_group` k holds those one after
// another ([N / 16, K / 8, 2, 16, 4] for int8 eights). kFailedPrecondition when `lanes` does not
// divide the strip dimension (or `group` the group dimension); other errors from the primitives.
// Returns the packing block.
absl::StatusOr<BlockRV> PrepackIntoStrips(Schedule* sch, BlockRV block, int read, int strip_dim,
                                          int64_t lanes, int group_dim = -1, int64_t group = 1,
                                          int64_t lane_group = 1);

// The loops of a GEMM block after FuseGemmLoops.
struct GemmLoops {
  bool has_batch = false;
  LoopRV batch, i, j, k;
  int64_t extent_i = 1, extent_j = 1, extent_k = 1;
};
// Reorders `main`'s loops to (S, I, J, K) and fuses each group.
absl::StatusOr<GemmLoops> FuseGemmLoops(Schedule* sch, const BlockInfo& main, const GemmMatch& g);
// Binds the outermost row tile loop `rows` (fused with the batch loop, if any) to blockIdx.y and
// the column tile loop `cols` to blockIdx.x.
absl::Status BindGemmThreadBlocks(Schedule* sch, const GemmLoops& loops, LoopRV rows, LoopRV cols);

// One thread block per row of a reduction `main` (iteration kinds S...S R...R): the spatial loops
// fused on blockIdx.x, the reduction loops fused and split [None, len_tx] with the inner part on
// threadIdx.x (a cross-thread reduction, see codegen/lower_gpu.h) and the serial part annotated
// for unrolling by `unroll` steps. An `epilogue` (if given) reads main's output from shared
// memory, computed at the row loop on the same threadIdx.x extent. Returns the row loop.
absl::StatusOr<LoopRV> ScheduleRowReduction(Schedule* sch, const BlockInfo& main,
                                            const std::optional<BlockInfo>& epilogue,
                                            int64_t len_tx, int64_t unroll);

// A sum reduction along contiguous memory (IsSumReduction, IsInnerReduction), optionally
// followed by one elementwise epilogue: what the GEMV and Reduction rules schedule with
// ScheduleRowReduction.
struct InnerSumReduction {
  BlockInfo main;
  Block block;  // main's block
  std::optional<BlockInfo> epilogue;
};
// Normalizes `sch`'s function and inlines runs of elementwise blocks (NormalizeBlocks,
// TryInlineContiguousSpatial); nullopt unless what remains is one such reduction and at most
// one elementwise block after it. `sch` keeps the inlining either way.
std::optional<InnerSumReduction> FindInnerSumReduction(Schedule* sch);

// Fuses the loops `loops` (one loop is returned as is; none: a new unit loop above `block`),
// splits the result [None, len_tx] and binds the inner part to threadIdx.x; the outer part
// gets the unroll annotations when `unroll` > 0. Returns {outer, inner}.
absl::StatusOr<std::vector<LoopRV>> SpreadOverThreads(Schedule* sch, BlockRV block,
                                                      const std::vector<LoopRV>& loops,
                                                      int64_t len_tx, int64_t unroll);

// `sch` when its function passes the GPU checks (codegen/verify_gpu.h) on `target`, else
// nullopt: a default GPU rule only claims functions it turns into valid kernels.
std::optional<Schedule> IfValidOnGpu(Schedule sch, const Target& target);

}  // namespace dlight
}  // namespace tessera

#endif  // TESSERA_RULES_DEFAULT_ANALYSIS_H_
