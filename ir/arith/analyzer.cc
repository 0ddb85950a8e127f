// Constant integer bound analysis (interval arithmetic on the extended integers) and the
// Analyzer's knowledge store. The bound rules follow TVM's arith/const_int_bound.cc in a
// reduced form: one recursive pass, saturating arithmetic, and a fallback to the dtype's range
// wherever a narrower-than-64-bit result could wrap.
#include "ir/arith/analyzer.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <utility>

#include "base/check.h"
#include "ir/arith/simplify.h"

namespace tessera {
namespace arith {
namespace {

using Bound = arith::ConstIntBound;
constexpr int64_t kPosInf = Bound::kPosInf;
constexpr int64_t kNegInf = Bound::kNegInf;

bool IsInf(int64_t v) { return v == kPosInf || v == kNegInf; }

int64_t BoundNeg(int64_t a) {
  if (a == kPosInf) return kNegInf;
  if (a == kNegInf) return kPosInf;
  return -a;
}

// floordiv(a, b) for b > 0 on the extended integers.
int64_t BoundFloorDivPos(int64_t a, int64_t b) {
  if (IsInf(a)) return a;
  if (b == kPosInf) return a >= 0 ? 0 : -1;
  return FloorDivInt(a, b);
}

// truncdiv(a, b) for b > 0 on the extended integers.
int64_t BoundTruncDivPos(int64_t a, int64_t b) {
  if (IsInf(a)) return a;
  if (b == kPosInf) return 0;
  return a / b;
}

Bound MinMaxOf(std::initializer_list<int64_t> values) {
  return Bound{std::min(values), std::max(values)};
}

// Intersects with the dtype's range, or returns the dtype's range if `b` may wrap.
Bound FitDType(Bound b, DataType dtype) {
  Bound range = DTypeBound(dtype);
  if (dtype.bits() >= 64 && dtype.is_int()) return b;
  if (b.min < range.min || b.max > range.max) return range;
  return b;
}

Bound Union(Bound a, Bound b) { return Bound{std::min(a.min, b.min), std::max(a.max, b.max)}; }

Bound FloorDivBound(Bound a, Bound b) {
  if (b.min > 0) {
    return MinMaxOf({BoundFloorDivPos(a.min, b.min), BoundFloorDivPos(a.min, b.max),
                     BoundFloorDivPos(a.max, b.min), BoundFloorDivPos(a.max, b.max)});
  }
  if (b.max < 0) {  // floor(a / b) == floor(-a / -b)
    return FloorDivBound(Bound{BoundNeg(a.max), BoundNeg(a.min)},
                         Bound{BoundNeg(b.max), BoundNeg(b.min)});
  }
  return Bound::Everything();
}

Bound TruncDivBound(Bound a, Bound b) {
  if (b.min > 0) {
    return MinMaxOf({BoundTruncDivPos(a.min, b.min), BoundTruncDivPos(a.min, b.max),
                     BoundTruncDivPos(a.max, b.min), BoundTruncDivPos(a.max, b.max)});
  }
  if (b.max < 0) {  // trunc(a / b) == -trunc(a / -b)
    Bound r = TruncDivBound(a, Bound{BoundNeg(b.max), BoundNeg(b.min)});
    return Bound{BoundNeg(r.max), BoundNeg(r.min)};
  }
  return Bound::Everything();
}

Bound FloorModBound(Bound a, Bound b) {
  if (b.is_const() && b.min > 0 && !IsInf(a.min) && !IsInf(a.max)) {
    int64_t c = b.min;
    int64_t k = FloorDivInt(a.min, c);
    if (FloorDivInt(a.max, c) == k) return Bound{a.min - k * c, a.max - k * c};
    return Bound{0, c - 1};
  }
  if (b.min > 0) {
    int64_t hi = b.max == kPosInf ? kPosInf : b.max - 1;
    if (a.min >= 0) hi = std::min(hi, a.max);
    return Bound{0, hi};
  }
  if (b.max < 0) return Bound{b.min == kNegInf ? kNegInf : b.min + 1, 0};
  return Bound::Everything();
}

// Recursive bound computation against an analyzer's knowledge.
class BoundEvaluator {
 public:
  explicit BoundEvaluator(const Analyzer* analyzer) : analyzer_(analyzer) {}

  Bound Eval(const Expr& e) {
    DataType dtype = e.dtype();
    if (dtype.is_float()) return Bound::Everything();
    switch (e.kind()) {
      case ExprKind::kIntImm:
        return Bound::Point(e.as<IntImmNode>()->value);
      case ExprKind::kVar:
        return EvalVar(Var(std::static_pointer_cast<const VarNode>(e.node_ptr())));
      case ExprKind::kBinary:
        return FitDType(EvalBinary(e.as<BinaryNode>()), dtype);
      case ExprKind::kNot:
        return Bound{0, 1};
      case ExprKind::kSelect: {
        const auto* op = e.as<SelectNode>();
        return Union(Eval(op->true_value), Eval(op->false_value));
      }
      case ExprKind::kCast: {
        const auto* op = e.as<CastNode>();
        if (dtype.is_bool()) return Bound{0, 1};
        if (op->value.dtype().is_float()) return DTypeBound(dtype);
        return FitDType(Eval(op->value), dtype);
      }
      default:
        return DTypeBound(dtype);
    }
  }

 private:
  Bound EvalVar(const Var& var) {
    if (const Bound* b = analyzer_->VarBound(var)) return *b;
    if (Expr value = analyzer_->VarValue(var); value.defined() && depth_ < 16) {
      ++depth_;
      Bound b = Eval(value);
      --depth_;
      return b;
    }
    return DTypeBound(var.dtype());
  }

  Bound EvalBinary(const BinaryNode* op) {
    if (BinaryOpIsComparison(op->op) || BinaryOpIsLogical(op->op)) return Bound{0, 1};
    Bound a = Eval(op->a);
    Bound b = Eval(op->b);
    switch (op->op) {
      case BinaryOp::kAdd:
        return Bound{BoundAdd(a.min, b.min), BoundAdd(a.max, b.max)};
      case BinaryOp::kSub: {
        Bound d{BoundAdd(a.min, BoundNeg(b.max)), BoundAdd(a.max, BoundNeg(b.min))};
        std::optional<Bound> q = FloorDivDifference(op->a, op->b);
        if (!q.has_value()) q = FloorModDifference(op->a, op->b);
        if (q.has_value()) d = Bound{std::max(d.min, q->min), std::min(d.max, q->max)};
        return d;
      }
      case BinaryOp::kMul:
        return MinMaxOf({BoundMul(a.min, b.min), BoundMul(a.min, b.max), BoundMul(a.max, b.min),
                         BoundMul(a.max, b.max)});
      case BinaryOp::kDiv:
        return TruncDivBound(a, b);
      case BinaryOp::kFloorDiv:
        return FloorDivBound(a, b);
      case BinaryOp::kFloorMod:
        return FloorModBound(a, b);
      case BinaryOp::kMin:
        return Bound{std::min(a.min, b.min), std::min(a.max, b.max)};
      case BinaryOp::kMax:
        return Bound{std::max(a.min, b.min), std::max(a.max, b.max)};
      default:
        return Bound::Everything();
    }
  }

  // floordiv(x, d1) - floordiv(y, d2) for positive constant divisors, where the quotients move
  // together: over the common divisor D (floordiv(x, d) == floordiv(x * (D / d), D)) the
  // numerators differ by delta in [lo, hi]; where y's is a multiple of g, a divisor of D, the
  // quotients differ by floordiv(m + e, D / g) - floordiv(m, D / g) for some integer m and e in
  // [floordiv(lo, g), floordiv(hi, g)] (and the same with x's as the base, negated). A tile of 32
  // fused pixels, floordiv(32 t + 31, 56) - floordiv(32 t, 56), spans at most 2 image rows where
  // the separate bounds allow 56.
  std::optional<Bound> FloorDivDifference(const Expr& a, const Expr& b) {
    const auto* x = a.as<BinaryNode>();
    const auto* y = b.as<BinaryNode>();
    if (x == nullptr || y == nullptr || x->op != BinaryOp::kFloorDiv ||
        y->op != BinaryOp::kFloorDiv) {
      return std::nullopt;
    }
    const int64_t* d1 = AsConstInt(x->b);
    const int64_t* d2 = AsConstInt(y->b);
    if (d1 == nullptr || d2 == nullptr || *d1 <= 0 || *d2 <= 0) return std::nullopt;
    const int64_t common = std::lcm(*d1, *d2);
    if (common > (int64_t{1} << 30)) return std::nullopt;
    const Bound delta = Eval(Simplify(x->a * Expr(common / *d1) - y->a * Expr(common / *d2)));
    if (IsInf(delta.min) || IsInf(delta.max)) return std::nullopt;
    // floordiv(base + delta, common) - floordiv(base, common), base a multiple of `factor`.
    auto shift = [common](Bound delta, int64_t factor) {
      const int64_t g = std::gcd(factor, common);
      const int64_t step = common / g;
      return Bound{FloorDivInt(FloorDivInt(delta.min, g), step),
                   FloorDivInt(FloorDivInt(delta.max, g) + step - 1, step)};
    };
    const Bound from_y = shift(delta, KnownFactor(y->a) * (common / *d2));
    const Bound from_x = shift(Bound{-delta.max, -delta.min}, KnownFactor(x->a) * (common / *d1));
    return Bound{std::max(from_y.min, -from_x.max), std::min(from_y.max, -from_x.min)};
  }

  // c1 * floormod(x1, d1) - c2 * floormod(x2, d2) where c1 d1 == c2 d2 == M (positive
  // constants): floormod(x, d) = x - d floordiv(x, d), so it is (c1 x1 - c2 x2) - M
  // (floordiv(x1, d1) - floordiv(x2, d2)), the quotients' difference bounded as above. The
  // column of a pixel tile, floormod(32 t + 4 i + 3, 56) - 4 floormod(8 t + i, 14), is 3.
  std::optional<Bound> FloorModDifference(const Expr& a, const Expr& b) {
    struct Term {
      int64_t coeff;
      const BinaryNode* mod;
    };
    auto term = [](const Expr& e) -> std::optional<Term> {
      const auto* op = e.as<BinaryNode>();
      if (op == nullptr) return std::nullopt;
      if (op->op == BinaryOp::kFloorMod) return Term{1, op};
      if (op->op != BinaryOp::kMul) return std::nullopt;
      for (const auto& [factor, c] : {std::pair{op->a, op->b}, std::pair{op->b, op->a}}) {
        const auto* mod = factor.as<BinaryNode>();
        const int64_t* v = AsConstInt(c);
        if (mod != nullptr && mod->op == BinaryOp::kFloorMod && v != nullptr && *v > 0) {
          return Term{*v, mod};
        }
      }
      return std::nullopt;
    };
    const std::optional<Term> x = term(a), y = term(b);
    if (!x.has_value() || !y.has_value()) return std::nullopt;
    const int64_t* d1 = AsConstInt(x->mod->b);
    const int64_t* d2 = AsConstInt(y->mod->b);
    if (d1 == nullptr || d2 == nullptr || *d1 <= 0 || *d2 <= 0) return std::nullopt;
    int64_t m1, m2;
    if (__builtin_mul_overflow(x->coeff, *d1, &m1) || __builtin_mul_overflow(y->coeff, *d2, &m2) ||
        m1 != m2 || m1 > (int64_t{1} << 30)) {
      return std::nullopt;
    }
    const Bound linear = Eval(Simplify(x->mod->a * Expr(x->coeff) - y->mod->a * Expr(y->coeff)));
    const std::optional<Bound> quotients =
        FloorDivDifference(FloorDiv(x->mod->a, x->mod->b), FloorDiv(y->mod->a, y->mod->b));
    if (!quotients.has_value() || IsInf(linear.min) || IsInf(linear.max)) return std::nullopt;
    return Bound{BoundAdd(linear.min, -BoundMul(m1, quotients->max)),
                 BoundAdd(linear.max, -BoundMul(m1, quotients->min))};
  }

  // A positive integer that `e` is known to be a multiple of (1 if none; 0 for the constant 0,
  // a multiple of everything).
  static int64_t KnownFactor(const Expr& e) {
    if (const int64_t* v = AsConstInt(e)) return *v < 0 ? -*v : *v;
    const auto* op = e.as<BinaryNode>();
    if (op == nullptr) return 1;
    switch (op->op) {
      case BinaryOp::kAdd:
      case BinaryOp::kSub:
        return std::gcd(KnownFactor(op->a), KnownFactor(op->b));
      case BinaryOp::kMul: {
        const int64_t f = KnownFactor(op->a), h = KnownFactor(op->b);
        int64_t r;
        if (__builtin_mul_overflow(f, h, &r) || r > (int64_t{1} << 30)) return 1;
        return r;
      }
      default:
        return 1;
    }
  }

  const Analyzer* analyzer_;
  int depth_ = 0;
};

}  // namespace

int64_t FloorDivInt(int64_t a, int64_t b) {
  TESSERA_CHECK(b != 0) << "floordiv by zero";
  if (b == -1) return a == kNegInf ? a : -a;  // INT64_MIN / -1 wraps to itself
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t FloorModInt(int64_t a, int64_t b) {
  TESSERA_CHECK(b != 0) << "floormod by zero";
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int64_t BoundAdd(int64_t a, int64_t b) {
  if (a == kPosInf || b == kPosInf) return (a == kNegInf || b == kNegInf) ? kNegInf : kPosInf;
  if (a == kNegInf || b == kNegInf) return kNegInf;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a > 0 ? kPosInf : kNegInf;
  return r;
}

int64_t BoundMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  bool negative = (a < 0) != (b < 0);
  if (IsInf(a) || IsInf(b)) return negative ? kNegInf : kPosInf;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || IsInf(r)) return negative ? kNegInf : kPosInf;
  return r;
}

arith::ConstIntBound DTypeBound(DataType dtype) {
  if (dtype.is_bool()) return Bound{0, 1};
  if (!dtype.is_integer()) return Bound::Everything();
  int bits = dtype.bits();
  if (dtype.is_uint()) return Bound{0, bits >= 63 ? kPosInf : (int64_t{1} << bits) - 1};
  if (bits >= 64) return Bound::Everything();
  return Bound{-(int64_t{1} << (bits - 1)), (int64_t{1} << (bits - 1)) - 1};
}

// ---- ConstraintScope ---------------------------------------------------------------------

ConstraintScope::ConstraintScope(ConstraintScope&& other) noexcept
    : analyzer_(other.analyzer_), depth_(other.depth_) {
  other.analyzer_ = nullptr;
}

ConstraintScope::~ConstraintScope() {
  if (analyzer_ != nullptr) analyzer_->ExitConstraint(depth_);
}

// ---- Analyzer ----------------------------------------------------------------------------

void Analyzer::Bind(const Var& var, const Range& range) {
  Bound min = ConstIntBound(range.min);
  Bound extent = ConstIntBound(range.extent);
  Bound b{min.min, BoundAdd(BoundAdd(min.max, extent.max), -1)};
  bounds_[var] = b;
}

void Analyzer::Bind(const VarRangeMap& domains) {
  for (const auto& [var, range] : domains) Bind(var, range);
}

void Analyzer::Bind(const Var& var, const Expr& value) {
  Bound b = ConstIntBound(value);
  values_[var] = value;
  bounds_[var] = b;
}

arith::ConstIntBound Analyzer::ConstIntBound(const Expr& expr) {
  return BoundEvaluator(this).Eval(expr);
}

Expr Analyzer::Simplify(const Expr& expr) { return arith::Simplify(expr, this); }

bool Analyzer::CanProve(const Expr& cond) {
  Expr s = Simplify(cond);
  if (IsConstInt(s, 1)) return true;
  if (IsKnownFact(s) || IsKnownFact(cond)) return true;
  if (const auto* op = s.as<BinaryNode>()) {
    if (op->op == BinaryOp::kAnd) return CanProve(op->a) && CanProve(op->b);
    if (op->op == BinaryOp::kOr) return CanProve(op->a) || CanProve(op->b);
  }
  return false;
}

bool Analyzer::CanProveEqual(const Expr& a, const Expr& b) {
  if (!a.dtype().is_integer() || !b.dtype().is_integer()) {
    return ExprDeepEqual(Simplify(a), Simplify(b));
  }
  const Expr difference = Simplify(a - b);
  if (IsConstInt(difference, 0)) return true;
  // Bounds can prove what the rewrite rules do not (floordiv(16 k + 15, 64) == floordiv(k, 4)).
  const arith::ConstIntBound bound = ConstIntBound(difference);
  return bound.min == 0 && bound.max == 0;
}

bool Analyzer::CanProveLess(const Expr& a, const Expr& b) {
  return ConstIntBound(Simplify(a - b)).max < 0;
}

bool Analyzer::CanProveLessEqual(const Expr& a, const Expr& b) {
  return ConstIntBound(Simplify(a - b)).max <= 0;
}

bool Analyzer::CanProveGreaterEqual(const Expr& a, const Expr& b) {
  return ConstIntBound(Simplify(a - b)).min >= 0;
}

ConstraintScope Analyzer::EnterConstraint(const Expr& cond) {
  frames_.emplace_back();
  frames_.back().facts_size = facts_.size();
  const size_t depth = frames_.size() - 1;
  AddConstraint(cond, depth);
  return ConstraintScope(this, depth);
}

void Analyzer::AddConstraint(const Expr& cond, size_t frame) {
  const auto* op = cond.as<BinaryNode>();
  if (op != nullptr && op->op == BinaryOp::kAnd) {
    AddConstraint(op->a, frame);
    AddConstraint(op->b, frame);
    return;
  }
  // Remember the fact in simplified form before tightening (which would make it trivially true).
  facts_.push_back(Simplify(cond));
  if (op == nullptr || !BinaryOpIsComparison(op->op) || op->a.dtype().is_float()) return;
  // Normalize to `var OP rhs` where possible.
  BinaryOp cmp = op->op;
  Expr lhs = op->a;
  Expr rhs = op->b;
  if (lhs.as<VarNode>() == nullptr && rhs.as<VarNode>() != nullptr) {
    std::swap(lhs, rhs);
    switch (cmp) {
      case BinaryOp::kLT:
        cmp = BinaryOp::kGT;
        break;
      case BinaryOp::kLE:
        cmp = BinaryOp::kGE;
        break;
      case BinaryOp::kGT:
        cmp = BinaryOp::kLT;
        break;
      case BinaryOp::kGE:
        cmp = BinaryOp::kLE;
        break;
      default:
        break;
    }
  }
  if (lhs.as<VarNode>() == nullptr) return;
  Var var(std::static_pointer_cast<const VarNode>(lhs.node_ptr()));
  Bound r = ConstIntBound(rhs);
  Bound b = Bound::Everything();
  switch (cmp) {
    case BinaryOp::kLT:
      b.max = BoundAdd(r.max, -1);
      break;
    case BinaryOp::kLE:
      b.max = r.max;
      break;
    case BinaryOp::kGT:
      b.min = BoundAdd(r.min, 1);
      break;
    case BinaryOp::kGE:
      b.min = r.min;
      break;
    case BinaryOp::kEQ:
      b = r;
      break;
    default:
      return;
  }
  Tighten(var, b, frame);
}

void Analyzer::Tighten(const Var& var, arith::ConstIntBound bound, size_t frame_index) {
  Frame* frame = &frames_[frame_index];
  auto it = bounds_.find(var);
  bool present = it != bounds_.end();
  frame->previous_present.emplace_back(var, present);
  frame->previous_bound.push_back(present ? it->second : Bound::Everything());
  Bound old = present ? it->second : DTypeBound(var.dtype());
  bounds_[var] = Bound{std::max(old.min, bound.min), std::min(old.max, bound.max)};
}

void Analyzer::ExitConstraint(size_t depth) {
  TESSERA_CHECK_EQ(depth + 1, frames_.size()) << "constraint scopes must nest";
  Frame& frame = frames_.back();
  for (size_t i = frame.previous_present.size(); i-- > 0;) {
    const auto& [var, present] = frame.previous_present[i];
    if (present) {
      bounds_[var] = frame.previous_bound[i];
    } else {
      bounds_.erase(var);
    }
  }
  facts_.resize(frame.facts_size);
  frames_.pop_back();
}

const arith::ConstIntBound* Analyzer::VarBound(const Var& var) const {
  auto it = bounds_.find(var);
  return it == bounds_.end() ? nullptr : &it->second;
}

Expr Analyzer::VarValue(const Var& var) const {
  auto it = values_.find(var);
  return it == values_.end() ? Expr() : it->second;
}

bool Analyzer::IsKnownFact(const Expr& cond) const {
  for (const Expr& fact : facts_) {
    if (ExprDeepEqual(fact, cond)) return true;
  }
  return false;
}

}  // namespace arith
}  // namespace tessera
