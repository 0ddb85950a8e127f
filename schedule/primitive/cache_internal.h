// Internals of the caching and buffer primitives: cache_read_write.cc (CacheRead, CacheWrite),
// reindex.cc (ReIndex), set_scope.cc (SetScope) and storage_align.cc (StorageAlign). Defined in
// cache.cc with the instruction kinds of the group: the copy stages that CacheRead, CacheWrite
// and ReIndex insert into the scope of a block, and the buffer replacement of SetScope and
// StorageAlign.
#ifndef TESSERA_SCHEDULE_PRIMITIVE_CACHE_INTERNAL_H_
#define TESSERA_SCHEDULE_PRIMITIVE_CACHE_INTERNAL_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/functor.h"
#include "schedule/instruction.h"
#include "schedule/schedule.h"

namespace tessera {

// Defined with their replay functions in cache.cc.
extern const InstructionKind kCacheRead;
extern const InstructionKind kCacheWrite;
extern const InstructionKind kReIndex;
extern const InstructionKind kSetScope;
extern const InstructionKind kStorageAlign;

namespace primitive {

// kInvalidArgument naming `primitive` unless `scope` is one of TVM's storage scopes: a rank
// (global, shared, local, warp) optionally tagged ("shared.dyn", "global.texture"), or a
// tensor-core fragment scope.
absl::Status CheckScope(const char* primitive, const std::string& scope);

// Replaces one buffer by another wherever it is referenced.
class BufferReplacer : public IRMutator {
 public:
  BufferReplacer(Buffer from, Buffer to) : from_(std::move(from)), to_(std::move(to)) {}
  Buffer VisitBuffer(const Buffer& b) override { return b.same_as(from_) ? to_ : b; }

 private:
  Buffer from_;
  Buffer to_;
};

// Where a block sits: its path, the scope block enclosing it and the scope's top-level
// statements, where copy stages are inserted.
struct ScopeContext {
  StmtPath path;
  Block block;
  Stmt scope_realize;
  Block scope;
  std::vector<Stmt> children;      // top-level statements of the scope body
  std::vector<Block> siblings;     // blocks directly under the scope, in program order
  std::vector<int> sibling_child;  // the top-level statement holding each sibling
  int block_child = -1;            // the top-level statement holding `block`

  // Position of `name` among the siblings, -1 if it is not one.
  int SiblingIndex(const std::string& name) const {
    for (size_t i = 0; i < siblings.size(); ++i) {
      if (siblings[i]->name == name) return static_cast<int>(i);
    }
    return -1;
  }
};

// The ScopeContext of block `rv`; kInvalidArgument (naming `primitive`) for the root block or a
// stale RV.
absl::StatusOr<ScopeContext> Locate(const Schedule& sch, BlockRV rv, const char* primitive);

// Rebuilds the scope block with `children` as body and `alloc` appended to its allocations.
PrimFunc RebuildScope(const PrimFunc& func, const ScopeContext& ctx, std::vector<Stmt> children,
                      const Buffer& alloc);

// A copy stage placed in `scope`: loops ax_d around block `name` whose spatial iteration
// variables v_d (domains `doms`) are bound to loop_region[d].min + ax_d, storing
// src[src_indices(v)] into dst[dst_indices(v)]. The copy never leaves the domains (which are
// the buffer's extents for a cache): a region over-covering them (a declared region of a
// guarded access, e.g. padding) is intersected with them where its ends are constant and
// guarded by a predicate where they are not.
using IndexFn = std::function<std::vector<Expr>(const std::vector<Var>&)>;
Stmt MakeCopyStage(const std::string& name, const Block& scope, const std::vector<Range>& doms,
                   const std::vector<Range>& loop_region, const Buffer& src,
                   const IndexFn& src_indices, const Buffer& dst, const IndexFn& dst_indices);

// Write buffer `buffer_index` of the block, checked to be an intermediate allocated by a block.
absl::StatusOr<Buffer> IntermediateWriteBuffer(const PrimFunc& func, const Block& block,
                                               int buffer_index, const char* primitive);

// `func` with `from` replaced by `to` wherever it is referenced.
PrimFunc ReplaceBuffer(const PrimFunc& func, const Buffer& from, const Buffer& to);

}  // namespace primitive
}  // namespace tessera

#endif  // TESSERA_SCHEDULE_PRIMITIVE_CACHE_INTERNAL_H_
