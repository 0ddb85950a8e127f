// Affine iteration-map detection, after TVM's arith/iter_affine_map.cc.
//
// Given index expressions over loop variables (the input iterators, each ranging over
// [0, extent)), DetectIterMap decides whether the indices form an affine map that is a
// bijection (or, on request, a surjection) from the iteration domain onto the index domain,
// and describes each index as splits of (possibly fused) iterators:
//
//   IterMark        an iterator of a known extent: an input variable, or a fused iterator whose
//                   value is an IterSumExpr over other marks (e.g. i0*8 + i1, extent 32).
//   IterSplitExpr   floormod(floordiv(mark, lower_factor), extent) * scale.
//   IterSumExpr     sum of splits + base (the base does not use input iterators).
//
// `i0*8 + i1` (i0 < 4, i1 < 8) is one split of the fused mark {i0*8 + i1, 32};
// floordiv(f, 64) and floormod(f, 64) with f < 4096 are splits (64, 64, 1) and (1, 64, 1) of f.
// These structures are what fuse, split, blockize and subspace division reason about.
//
// Limits: input iterators start at 0 and have constant extents; scales, factors and
// predicate bounds are constants; splits must divide extents exactly (no padding); the
// predicate may only bound fused or input iterators from above (`i0*8 + i1 < 30`).
#ifndef TESSERA_IR_ARITH_ITER_MAP_H_
#define TESSERA_IR_ARITH_ITER_MAP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/arith/analyzer.h"
#include "ir/expr.h"

namespace tessera {
namespace arith {

struct IterMarkNode;
// Marks are shared and compared by identity: two splits of the same iterator hold the same
// mark.
using IterMark = std::shared_ptr<const IterMarkNode>;

// floormod(floordiv(source, lower_factor), extent) * scale.
struct IterSplitExpr {
  IterMark source;
  int64_t lower_factor = 1;
  int64_t extent = 1;
  int64_t scale = 1;
};

// sum(args) + base. After DetectIterMap each index has at most one arg.
struct IterSumExpr {
  std::vector<IterSplitExpr> args;  // Largest scale first.
  Expr base;                        // Index-typed; free of input iterators.
};

struct IterMarkNode {
  Var var;          // The input iterator, or undefined for a fused mark.
  IterSumExpr sum;  // The fused value (scales relative to the innermost), for a fused mark.
  int64_t extent = 1;
  bool is_input() const { return var.defined(); }
};

enum class IterMapLevel {
  kBijective,   // Every input point maps to a distinct index point and all are reached.
  kSurjective,  // All index points are reached; input iterators (or parts) may go unused.
};

// Detects the iteration map of `indices` over `input_iters` (each range must start at 0 and
// have a constant positive extent). `predicate` (undefined or true for none) may bound fused or
// input iterators from above. kInvalidArgument, with a message naming the index and
// iterators involved, if the indices are not such a map (e.g. `i0 + i1`, overlapping splits, an
// iterator used twice, a non-affine operation, or, for kBijective, an unused iterator).
// The input iterators' ranges are bound in `analyzer` (may be null).
absl::StatusOr<std::vector<IterSumExpr>> DetectIterMap(
    const std::vector<Expr>& indices, const VarRangeMap& input_iters,
    const Expr& predicate = Expr(), IterMapLevel level = IterMapLevel::kBijective,
    Analyzer* analyzer = nullptr);

// The indices rewritten into their normalized iterator form and simplified (for example
// floordiv(i0*8 + i1, 8) with i1 < 8 becomes i0). Indices that do not form an iteration map are
// returned simplified under the iterators' ranges.
std::vector<Expr> IterMapSimplify(const std::vector<Expr>& indices, const VarRangeMap& input_iters,
                                  const Expr& predicate = Expr(),
                                  IterMapLevel level = IterMapLevel::kSurjective,
                                  Analyzer* analyzer = nullptr);

// Expressions of the structures (not simplified).
Expr IterMarkToExpr(const IterMark& mark);
Expr IterSplitToExpr(const IterSplitExpr& split);
Expr IterSumToExpr(const IterSumExpr& sum);

// Readable form for messages and tests, e.g. "split(fused(i0*8 + i1; 32), 1, 32, 1)".
std::string IterMarkName(const IterMark& mark);

}  // namespace arith
}  // namespace tessera

#endif  // TESSERA_IR_ARITH_ITER_MAP_H_
