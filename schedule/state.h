// Navigation and replacement in a function's statement tree, used by every primitive.
// Nodes are immutable, so "where is this block" is answered by a path of ancestors, and a
// change is made by rebuilding the path from the changed node up to the root.
#ifndef TESSERA_SCHEDULE_STATE_H_
#define TESSERA_SCHEDULE_STATE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/function.h"
#include "ir/stmt.h"

namespace tessera {

// The ancestors of a statement, outermost first, starting at the function body; the last
// element is the statement itself.
using StmtPath = std::vector<Stmt>;

// Path to the BlockRealize of block `name`. kNotFound if no such block.
absl::StatusOr<StmtPath> FindBlockPath(const PrimFunc& func, const std::string& name);
// Path to the For whose loop variable is `loop_var`. kNotFound if absent.
absl::StatusOr<StmtPath> FindLoopPath(const PrimFunc& func, const Var& loop_var);

// The For statements on `path` below the innermost enclosing block (excluding the last
// element of the path), outermost first: the loops of a block in TVM's sense.
std::vector<Stmt> LoopsOnPath(const StmtPath& path);
// The BlockRealize of the innermost block strictly enclosing the last element of `path`.
Stmt EnclosingBlockRealize(const StmtPath& path);

// The BlockRealizes directly under `stmt` (not nested inside other blocks), in program order.
std::vector<Stmt> ChildBlockRealizes(const Stmt& stmt);
// Every block name in the function in program order, the root block included.
std::vector<std::string> AllBlockNames(const PrimFunc& func);

// Replaces the node `old_stmt` (by identity) with `new_stmt`, rebuilding its ancestors.
// `new_stmt` may be undefined to remove `old_stmt` from a sequence.
PrimFunc ReplaceStmt(const PrimFunc& func, const Stmt& old_stmt, const Stmt& new_stmt);

// The names a fresh name must not clash with: block names, buffer names (parameters and
// allocations), or both (a cache block and its buffer share one name).
enum class NameScope { kBlocks, kBuffers, kBlocksAndBuffers };

// `base` if no name of `scope` in `func` is taken, else the first free of base_1, base_2, ...
// ("A_shared", "A_shared_1", ...).
std::string UniqueName(const PrimFunc& func, const std::string& base, NameScope scope);

// A block name not used in `func`, derived from `base`: UniqueName(func, base, kBlocks).
std::string UniqueBlockName(const PrimFunc& func, const std::string& base);

}  // namespace tessera

#endif  // TESSERA_SCHEDULE_STATE_H_
