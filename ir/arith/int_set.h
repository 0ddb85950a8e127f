// Integer interval sets and buffer region analysis.
//
// An IntSet is an inclusive interval [min, max] whose ends are expressions (symbolic where the
// set depends on variables that are not relaxed, e.g. [i0*8, i0*8 + 7]) or absent (unbounded).
// EvalSet relaxes variables over their domains with interval arithmetic after simplifying the
// expression (so `floordiv(i*8 + j, 8)` relaxes like `i`). Region analysis builds on it: the
// rectangular region that a list of indices covers, hulls of regions, and the read/write
// regions of a statement or block, which is how a block's reads and writes are recomputed
// after a schedule primitive changes it.
//
// Limits: intervals are hulls (no strides, no unions of disjoint pieces); a variable whose
// domain depends on another relaxed variable is relaxed with its symbolic ends as given;
// conditions of if/select do not narrow regions.
#ifndef TESSERA_IR_ARITH_INT_SET_H_
#define TESSERA_IR_ARITH_INT_SET_H_

#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/arith/analyzer.h"
#include "ir/expr.h"
#include "ir/stmt.h"

namespace tessera {
namespace arith {

class IntSet {
 public:
  // The whole integer line.
  IntSet() = default;
  static IntSet Everything() { return IntSet(); }
  // [min, max], inclusive; an undefined end is unbounded.
  static IntSet Interval(Expr min, Expr max);
  static IntSet SinglePoint(Expr value) { return Interval(value, value); }
  // [range.min, range.min + range.extent - 1], simplified.
  static IntSet FromRange(const Range& range, Analyzer* analyzer = nullptr);

  const Expr& min() const { return min_; }
  const Expr& max() const { return max_; }
  bool HasLowerBound() const { return min_.defined(); }
  bool HasUpperBound() const { return max_.defined(); }
  bool IsBounded() const { return min_.defined() && max_.defined(); }
  bool IsEverything() const { return !min_.defined() && !max_.defined(); }
  // Both ends are the same expression (structurally).
  bool IsSinglePoint() const;

  // Range{min, max - min + 1} with the extent simplified. Requires IsBounded().
  Range ToRange(Analyzer* analyzer = nullptr) const;

 private:
  Expr min_;
  Expr max_;
};

using VarIntSetMap = std::unordered_map<Var, IntSet, VarIdentityHash, VarIdentityEqual>;

// The set of values `expr` takes when each variable of `dom` ranges over its set; variables
// not in `dom` stay symbolic. `analyzer` (may be null) supplies knowledge about the others.
IntSet EvalSet(const Expr& expr, const VarIntSetMap& dom, Analyzer* analyzer = nullptr);
IntSet EvalSet(const Expr& expr, const VarRangeMap& dom, Analyzer* analyzer = nullptr);

// The hull of two sets, ends simplified; unbounded where either is.
IntSet Union(const IntSet& a, const IntSet& b, Analyzer* analyzer = nullptr);

// The rectangular region (min, extent per dimension, simplified) that `indices` cover when the
// variables of `dom` range over their domains. kInvalidArgument if some index is unbounded.
absl::StatusOr<std::vector<Range>> EvalRegion(const std::vector<Expr>& indices,
                                              const VarRangeMap& dom, Analyzer* analyzer = nullptr);

// Dimension-wise hull of two regions of equal rank (TESSERA_CHECK).
std::vector<Range> UnionRegion(const std::vector<Range>& a, const std::vector<Range>& b,
                               Analyzer* analyzer = nullptr);

struct BufferAccessRegions {
  std::vector<BufferRegion> reads;   // Buffers in order of first read.
  std::vector<BufferRegion> writes;  // Buffers in order of first write.
};

// Read and write regions of the buffers accessed in `stmt`: loads are reads, stores writes.
// Variables of `relax` and the loop variables of loops inside `stmt` are relaxed over their
// domains; all other variables stay symbolic. A nested BlockRealize contributes its block's
// declared reads/writes with iteration variables replaced by their bindings; buffers allocated
// by nested blocks or listed in `exclude` are left out, and so, when `only` is not empty, are
// all buffers not in `only` (their regions are not evaluated: the cost of region detection is
// in the evaluation). A dimension whose bound cannot be found covers the whole buffer
// dimension.
BufferAccessRegions DetectBufferAccessRegions(const Stmt& stmt, const VarRangeMap& relax,
                                              Analyzer* analyzer = nullptr,
                                              const std::vector<Buffer>& exclude = {},
                                              const std::vector<Buffer>& only = {});

// The reads and writes of `block` (its init and body) in terms of its iteration variables,
// relaxing only loops inside the block and leaving out the block's own alloc_buffers.
BufferAccessRegions DetectBlockAccessRegions(const Block& block, Analyzer* analyzer = nullptr);

}  // namespace arith
}  // namespace tessera

#endif  // TESSERA_IR_ARITH_INT_SET_H_
