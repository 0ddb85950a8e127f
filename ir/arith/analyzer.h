// The arithmetic analyzer: what is known about variables (ranges, bound values, scoped
// predicates) and the questions schedule primitives ask about index expressions: constant
// integer bounds, simplification, and provability of comparisons.
//
// An Analyzer is a cheap, single-threaded context object; create one per transformation.
// Knowledge is keyed by variable identity. Proofs are sound but incomplete: CanProve()
// returning false means "could not prove", never "is false".
#ifndef TESSERA_IR_ARITH_ANALYZER_H_
#define TESSERA_IR_ARITH_ANALYZER_H_

#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "ir/expr.h"
#include "ir/stmt.h"

namespace tessera {
namespace arith {

// Inclusive integer interval [min, max]. kNegInf / kPosInf stand for unbounded ends;
// arithmetic on bounds saturates at them.
struct ConstIntBound {
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();

  int64_t min = kNegInf;
  int64_t max = kPosInf;

  static ConstIntBound Everything() { return ConstIntBound{kNegInf, kPosInf}; }
  static ConstIntBound Point(int64_t v) { return ConstIntBound{v, v}; }
  bool is_const() const { return min == max && min != kNegInf && min != kPosInf; }
  bool is_everything() const { return min == kNegInf && max == kPosInf; }
  // True if every value of the interval lies in [lo, hi].
  bool within(int64_t lo, int64_t hi) const { return min >= lo && max <= hi; }
};

// Variables (by identity) to ranges; the domains of loop or iteration variables.
using VarRangeMap = std::unordered_map<Var, Range, VarIdentityHash, VarIdentityEqual>;

class Analyzer;

// Undoes an Analyzer::EnterConstraint when destroyed. Movable, not copyable; scopes must be
// destroyed in reverse order of creation (stack discipline).
class ConstraintScope {
 public:
  ConstraintScope(ConstraintScope&& other) noexcept;
  ConstraintScope(const ConstraintScope&) = delete;
  ConstraintScope& operator=(const ConstraintScope&) = delete;
  ConstraintScope& operator=(ConstraintScope&&) = delete;
  ~ConstraintScope();

 private:
  friend class Analyzer;
  ConstraintScope(Analyzer* analyzer, size_t depth) : analyzer_(analyzer), depth_(depth) {}
  Analyzer* analyzer_;
  size_t depth_;
};

class Analyzer {
 public:
  Analyzer() = default;
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  // `var` ranges over [range.min, range.min + range.extent). Symbolic ends are reduced to
  // their constant bounds. Rebinding replaces the previous knowledge (outside of scopes).
  void Bind(const Var& var, const Range& range);
  // Every variable of `domains`, as above.
  void Bind(const VarRangeMap& domains);
  // `var` equals `value`: Simplify substitutes it, bounds use the value's bound.
  void Bind(const Var& var, const Expr& value);

  // Constant bounds of an integer (or bool) expression under what is known; the full range of
  // the dtype where nothing better is known. Floats give Everything().
  arith::ConstIntBound ConstIntBound(const Expr& expr);

  // Simplified, equivalent expression (see ir/arith/simplify.h for the rewrite set).
  Expr Simplify(const Expr& expr);

  // True if `cond` (a bool expression) holds for all values consistent with the knowledge.
  bool CanProve(const Expr& cond);
  bool CanProveEqual(const Expr& a, const Expr& b);
  // a < b, a <= b, a >= b for integer expressions.
  bool CanProveLess(const Expr& a, const Expr& b);
  bool CanProveLessEqual(const Expr& a, const Expr& b);
  bool CanProveGreaterEqual(const Expr& a, const Expr& b);

  // Assumes `cond` until the returned scope is destroyed: conjunctions are split; comparisons
  // of a variable with a constant-bounded expression tighten that variable's bound; every
  // conjunct is also remembered as a fact that CanProve (and Simplify) treat as true.
  [[nodiscard]] ConstraintScope EnterConstraint(const Expr& cond);

  // Knowledge lookups used by the simplifier. nullptr / undefined when unknown.
  const arith::ConstIntBound* VarBound(const Var& var) const;
  Expr VarValue(const Var& var) const;
  // True if `cond` is structurally one of the facts assumed by EnterConstraint.
  bool IsKnownFact(const Expr& cond) const;

 private:
  friend class ConstraintScope;
  using BoundMap = std::unordered_map<Var, arith::ConstIntBound, VarIdentityHash, VarIdentityEqual>;

  // Saved state to restore when a ConstraintScope at that depth ends.
  struct Frame {
    std::vector<std::pair<Var, bool>> previous_present;
    std::vector<arith::ConstIntBound> previous_bound;
    size_t facts_size = 0;
  };

  void ExitConstraint(size_t depth);
  // Intersects the bound of `var` with `bound`, recording the old one in frames_[frame].
  // Frames are addressed by index: simplifying a condition may push and pop nested frames.
  void Tighten(const Var& var, arith::ConstIntBound bound, size_t frame);
  void AddConstraint(const Expr& cond, size_t frame);

  BoundMap bounds_;
  std::unordered_map<Var, Expr, VarIdentityHash, VarIdentityEqual> values_;
  std::vector<Expr> facts_;
  std::vector<Frame> frames_;
};

// floor(a / b) and a - b * floor(a / b); b != 0 (TESSERA_CHECK). INT64_MIN / -1 wraps.
int64_t FloorDivInt(int64_t a, int64_t b);
int64_t FloorModInt(int64_t a, int64_t b);

// Bound arithmetic on the extended integers (saturating at the infinities), exposed for the
// simplifier and for tests.
int64_t BoundAdd(int64_t a, int64_t b);
int64_t BoundMul(int64_t a, int64_t b);
// The [min, max] range of values representable in an integer or bool dtype.
arith::ConstIntBound DTypeBound(DataType dtype);

}  // namespace arith
}  // namespace tessera

#endif  // TESSERA_IR_ARITH_ANALYZER_H_
