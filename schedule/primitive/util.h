// Helpers shared by schedule primitives.
#ifndef TESSERA_SCHEDULE_PRIMITIVE_UTIL_H_
#define TESSERA_SCHEDULE_PRIMITIVE_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
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

}  // namespace primitive
}  // namespace tessera

#endif  // TESSERA_SCHEDULE_PRIMITIVE_UTIL_H_
