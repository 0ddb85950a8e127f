// Helpers shared by schedule primitives.
#ifndef TESSERA_SCHEDULE_PRIMITIVE_UTIL_H_
#define TESSERA_SCHEDULE_PRIMITIVE_UTIL_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/arith/analyzer.h"
#include "ir/stmt.h"
#include "schedule/state.h"

namespace tessera {
namespace primitive {

// Simplifies the iteration bindings and predicates of every BlockRealize in `stmt`, knowing
// the ranges of `outer_loops` (For statements enclosing `stmt`) and of the loops inside it.
Stmt SimplifyBindings(const Stmt& stmt, const std::vector<Stmt>& outer_loops);

// Adds `predicate` (conjoined) to every BlockRealize in `stmt` that is not nested inside
// another block.
Stmt AddPredicate(const Stmt& stmt, const Expr& predicate);

// Binds the ranges of the loops (For statements) in `loops` in `analyzer`.
void BindLoopRanges(const std::vector<Stmt>& loops, arith::Analyzer* analyzer);

// Prefixes a status message with "<primitive>: " (keeping the code).
absl::Status WithPrimitive(const char* primitive, const absl::Status& status);

// kInvalidArgument with the message "<primitive>: <message>", the form of every primitive's
// errors.
absl::Status Invalid(const char* primitive, const std::string& message);

// The block of a BlockRealize statement.
const Block& BlockOf(const Stmt& realize);

// Whether one of `regions` is of `buffer`.
bool Accesses(const std::vector<BufferRegion>& regions, const Buffer& buffer);

// The first buffer of `a` that `b` also names, or an undefined buffer.
Buffer SharedBuffer(const std::vector<BufferRegion>& a, const std::vector<BufferRegion>& b);

// Whether `block` has a reduction iteration variable.
bool HasReduction(const Block& block);

// Whether `e` uses one of `vars`.
bool UsesAnyOf(const Expr& e, const std::set<const VarNode*>& vars);

// Whether `buffer` is allocated by the scope block `scope` (so not an output of the scope).
bool AllocatedIn(const Block& scope, const Buffer& buffer);

// `func` without the block realize at the end of `path` and the loops that hold nothing else;
// kInvalidArgument (naming `primitive`) if the block is the only statement of its scope.
absl::StatusOr<PrimFunc> RemoveLeaf(const char* primitive, const PrimFunc& func,
                                    const StmtPath& path);

}  // namespace primitive
}  // namespace tessera

#endif  // TESSERA_SCHEDULE_PRIMITIVE_UTIL_H_
