// Buffer compaction, shared by the CPU and GPU lowerings: an intermediate buffer allocated by
// the root block but only touched inside some loop nest shrinks to the region one iteration of
// the innermost loop enclosing all its accesses touches, and is allocated in that loop's body.
// (TVM's CompactBufferAllocation.) A write cache of a tile thus becomes a small local array that
// the C compiler keeps in registers, instead of a whole-output temporary in memory.
#ifndef TESSERA_CODEGEN_COMPACT_BUFFERS_H_
#define TESSERA_CODEGEN_COMPACT_BUFFERS_H_

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/functor.h"
#include "ir/stmt.h"

namespace tessera {
namespace lower_internal {

// Where each tracked buffer is accessed: the common prefix of the loop stacks of its accesses
// (loads, stores and the declared regions of blocks). A buffer never accessed has no entry; an
// empty prefix means some access is outside every loop.
class AccessLcaFinder : public IRVisitor {
 public:
  explicit AccessLcaFinder(const std::vector<Buffer>& tracked);
  const std::unordered_map<const BufferNode*, std::vector<const ForNode*>>& lca() const {
    return lca_;
  }
  // Whether some access of `b` is inside a block realize with a predicate.
  bool AccessedUnderPredicate(const BufferNode* b) const { return predicated_.count(b) > 0; }
  // The loop variables that the block realizes enclosing accesses of `b` bind through
  // floordiv / floormod (a split of fused loops); empty when there are none.
  const std::unordered_set<const VarNode*>& FusedVars(const BufferNode* b) const;
  // Whether some block realize enclosing an access of `b` binds through floordiv / floormod of
  // a compound expression (a split of a fused loop, e.g. floormod(f0 * 118 + f1, 32)) rather
  // than of one loop variable (a plain fuse, whose quotient and remainder never leave their
  // ranges): an imperfect such split wraps its tail onto elements other iterations own.
  bool AccessedThroughFusedSplit(const BufferNode* b) const {
    return through_fused_split_.count(b) > 0;
  }

 protected:
  void VisitStmt_(const ForNode* op) override;
  void VisitStmt_(const BlockRealizeNode* op) override;
  void VisitExpr_(const BufferLoadNode* op) override;
  void VisitStmt_(const BufferStoreNode* op) override;

 private:
  void Record(const BufferNode* b);

  std::unordered_set<const BufferNode*> tracked_;
  std::vector<const ForNode*> stack_;
  int predicated_depth_ = 0;
  std::unordered_set<const BufferNode*> predicated_;
  // Per enclosing block realize, the loop variables its bindings use under floordiv/floormod.
  std::vector<std::unordered_set<const VarNode*>> fused_vars_stack_;
  int fused_split_depth_ = 0;
  std::unordered_set<const BufferNode*> through_fused_split_;
  std::unordered_map<const BufferNode*, std::unordered_set<const VarNode*>> fused_;
  std::unordered_map<const BufferNode*, std::vector<const ForNode*>> lca_;
};

// Compacts `buffers` (root allocations) within `body`, which is still in block form (block
// regions give the extent of tile accesses). Shared memory is relaxed over threadIdx loops: it
// belongs to the whole thread block. A buffer accessed outside every loop cannot be compacted,
// nor, with `keep_predicated`, one accessed by a predicated block and by some block that binds
// a loop inside the compaction site through floordiv/floormod (a split of fused loops gives
// the other side of the cache a box of whole rows, predicated to the buffer's bounds, so one
// iteration reads what another one wrote), or binds through floordiv/floormod of a split of a
// fused loop anywhere (an imperfect split wraps: a reader's guard can hold where its writer's
// does not, and it would read an element no iteration of its site wrote). It is left as it is
// and appended to `*kept`. Predicated blocks with affine bindings, the tail
// guards of padded tiles (docs/design-spaces.md, "Odd extents"), are compacted: the region
// ignores the guard, so the buffer has the padded tile's size, and the guard clips its
// accesses as it clips the loops'. Buffers not accessed in `body` are ignored. The caller
// allocates the kept buffers (they keep their full shape).
absl::StatusOr<Stmt> CompactBuffers(const Stmt& body, const std::vector<Buffer>& buffers,
                                    bool keep_predicated, std::vector<Buffer>* kept);

}  // namespace lower_internal
}  // namespace tessera

#endif  // TESSERA_CODEGEN_COMPACT_BUFFERS_H_
