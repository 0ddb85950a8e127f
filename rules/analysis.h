// Block and loop predicates shared by the schedule rules and postprocessors: which blocks
// need multi-level tiling, rfactor or a cross-thread reduction, which blocks look like a
// write cache, how a block reads relative to how it writes (docs/reference/metaschedule.md §4.3).
//
// The kinds of block iterators are the IR's own IterKind (ir/stmt.h: kSpatial, kReduction);
// the IR has no opaque iterators, so a loop used by iterators of both kinds is the only
// "other" case (LoopIterKinds).
#ifndef TESSERA_RULES_ANALYSIS_H_
#define TESSERA_RULES_ANALYSIS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/function.h"
#include "ir/stmt.h"
#include "schedule/schedule.h"

namespace tessera {

// The kind of each iteration variable of `block`, in order.
std::vector<IterKind> BlockIterKinds(const Block& block);

// True when every iteration variable of `block` is spatial (a block without iteration
// variables is spatial).
bool IsSpatialBlock(const Block& block);

// True when no block of `func` has a reduction iteration variable.
bool IsSpatialFunc(const PrimFunc& func);

// The kind of each loop of `block` (outermost first, up to the enclosing block): spatial or
// reduction when every iterator of the blocks under the loop whose binding uses it has that
// kind (a loop no binding uses is spatial), nullopt when mixed. Empty on a stale RV.
std::vector<std::optional<IterKind>> LoopIterKinds(const Schedule& sch, BlockRV block);

// True when `block` has exactly as many enclosing loops (up to its enclosing block) as
// iteration variables and iterator i is bound to exactly the i-th loop variable.
bool HasTrivialBinding(const Schedule& sch, BlockRV block);

// True when `block` carries the meta_schedule.tiling_structure annotation.
bool IsMultiLevelTiled(const Block& block);

// The MultiLevelTiling match (docs/reference/metaschedule.md §4.3.4): not yet tiled, one write and
// at least one read, some reduction iterator, trivial binding, no buffer read twice, constant read
// extents and data reuse (some non-output read buffer is not indexed by a non-unit spatial
// iterator).
bool NeedsMultiLevelTiling(const Schedule& sch, BlockRV block);

// The AddRFactor / CrossThreadReduction match (docs/reference/metaschedule.md §4.3.6): a reduction
// block with trivial binding, not tiled, directly inside a perfect nest of spatial/reduction loops
// with constant extents and at least one reduction loop. A block that also needs multi-level tiling
// matches only when its spatial extent is below its reduction extent and at most
// `max_parallel_extent`; any other block when its reduction extent exceeds 1.
bool NeedsRFactorOrCrossThreadReduction(const Schedule& sch, BlockRV block,
                                        int64_t max_parallel_extent);

// Products of the constant extents of the spatial and of the reduction loops of `block`;
// nullopt when an extent is not constant or a loop is of mixed kind.
struct SpaceReductionExtents {
  int64_t space = 1;
  int64_t reduction = 1;
};
std::optional<SpaceReductionExtents> CumulativeExtents(const Schedule& sch, BlockRV block);

// How a read region's point indices relate to a write region's (TVM's
// AnalyzeReadWritePattern). `exists` is false unless every write index is a block variable
// and every read index is a constant or `write variable [+ constant]`, all extents constant.
// injective: no write variable is used twice; surjective: every write variable is used;
// ordered: the write variables appear in the read in their write order.
struct ReadWritePattern {
  bool exists = false;
  bool surjective = false;
  bool injective = false;
  bool ordered = false;
  bool no_const_read = false;
  bool no_shift_read = false;
};
ReadWritePattern AnalyzeReadWritePattern(const BufferRegion& read, const BufferRegion& write);

// True when `block` writes one buffer and every read maps injectively and in order onto the
// write (a copy such as a cache-write block; docs/reference/metaschedule.md §4.3.4 AddWriteReuse).
bool IsWriteCache(const Block& block);
bool IsWriteCache(const Schedule& sch, BlockRV block);

}  // namespace tessera

#endif  // TESSERA_RULES_ANALYSIS_H_
