// The simplifier: one bottom-up pass. Every integer + - * by a constant is parsed into a
// LinearSum (atoms in first-appearance order), normalized, and rendered back; floordiv and
// floormod by positive constants split a sum into its divisible part and a remainder whose
// bound often decides the result (TVM's canonical simplifier, arith/canonical_simplify.cc,
// reduced to the index arithmetic schedules produce).
#include "ir/arith/simplify.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "base/check.h"
#include "ir/arith/analyzer.h"
#include "ir/arith/const_fold.h"

namespace tessera {
namespace arith {
namespace {

using Bound = arith::ConstIntBound;

bool IsIndexType(DataType t) { return t.is_int() && t.bits() == 64; }
bool IsUInt64Type(DataType t) { return t.is_uint() && t.bits() == 64; }

// Coefficients are kept in signed form even for unsigned types, so `a - b` stays readable.
int64_t WrapCoeff(DataType t, int64_t v) {
  return t.is_uint() ? WrapToDType(DataType(DataType::Code::kInt, t.bits()), v) : WrapToDType(t, v);
}

Expr TypedConst(DataType t, int64_t v) { return IntImm(t, WrapToDType(t, v)); }
Expr BoolImm(bool v) { return IntImm(DataType::Bool(), v ? 1 : 0); }

BinaryOp Negate(BinaryOp cmp) {
  switch (cmp) {
    case BinaryOp::kEQ:
      return BinaryOp::kNE;
    case BinaryOp::kNE:
      return BinaryOp::kEQ;
    case BinaryOp::kLT:
      return BinaryOp::kGE;
    case BinaryOp::kLE:
      return BinaryOp::kGT;
    case BinaryOp::kGT:
      return BinaryOp::kLE;
    default:
      return BinaryOp::kLT;  // kGE
  }
}

bool IsFloatConst(const Expr& e, double v) {
  const auto* f = e.as<FloatImmNode>();
  return f != nullptr && f->value == v;
}

// A constant divisor or modulus > 0 of an index-typed floordiv/floormod atom.
const BinaryNode* AsDivModByConst(const Expr& e, BinaryOp op, int64_t* c) {
  const auto* b = e.as<BinaryNode>();
  if (b == nullptr || b->op != op) return nullptr;
  const int64_t* v = AsConstInt(b->b);
  if (v == nullptr || *v <= 0) return nullptr;
  *c = *v;
  return b;
}

struct Term {
  Expr atom;
  int64_t coeff;
};

// sum(coeff_i * atom_i) + constant, in dtype arithmetic.
struct LinearSum {
  DataType dtype;
  std::vector<Term> terms;
  int64_t constant = 0;
};

class Simplifier {
 public:
  explicit Simplifier(Analyzer* analyzer) : analyzer_(analyzer) {}

  Expr Visit(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::kIntImm:
      case ExprKind::kFloatImm:
        return e;
      case ExprKind::kVar:
        return VisitVar(e);
      case ExprKind::kBinary:
        return VisitBinary(e.as<BinaryNode>(), e);
      case ExprKind::kNot:
        return VisitNot(e.as<NotNode>(), e);
      case ExprKind::kSelect:
        return VisitSelect(e.as<SelectNode>(), e);
      case ExprKind::kCast:
        return VisitCast(e.as<CastNode>(), e);
      case ExprKind::kBufferLoad: {
        const auto* op = e.as<BufferLoadNode>();
        bool changed = false;
        std::vector<Expr> indices = VisitAll(op->indices, &changed);
        return changed ? op->buffer.Load(std::move(indices)) : e;
      }
      case ExprKind::kCall:
        return VisitCall(e.as<CallNode>(), e);
    }
    return e;
  }

 private:
  std::vector<Expr> VisitAll(const std::vector<Expr>& exprs, bool* changed) {
    std::vector<Expr> out;
    out.reserve(exprs.size());
    for (const Expr& x : exprs) {
      out.push_back(Visit(x));
      if (!out.back().same_as(x)) *changed = true;
    }
    return out;
  }

  Expr VisitVar(const Expr& e) {
    Var var(std::static_pointer_cast<const VarNode>(e.node_ptr()));
    Expr value = analyzer_->VarValue(var);
    if (!value.defined() || value.dtype() != e.dtype() || depth_ > 16) return e;
    ++depth_;
    Expr result = Visit(value);
    --depth_;
    return result;
  }

  Bound BoundOf(const Expr& e) { return analyzer_->ConstIntBound(e); }

  // ---- Linear sums ----------------------------------------------------------------------

  // Adds scale * e to `sum`, decomposing + - and multiplication by constants.
  void AddToSum(const Expr& e, int64_t scale, LinearSum* sum) {
    DataType t = sum->dtype;
    if (const int64_t* v = AsConstInt(e)) {
      sum->constant = WrapAdd(t, sum->constant, WrapMul(t, *v, scale));
      return;
    }
    if (const auto* op = e.as<BinaryNode>()) {
      if (op->op == BinaryOp::kAdd || op->op == BinaryOp::kSub) {
        AddToSum(op->a, scale, sum);
        AddToSum(op->b, op->op == BinaryOp::kAdd ? scale : WrapMul(t, scale, -1), sum);
        return;
      }
      if (op->op == BinaryOp::kMul) {
        if (const int64_t* c = AsConstInt(op->b))
          return AddToSum(op->a, WrapMul(t, scale, *c), sum);
        if (const int64_t* c = AsConstInt(op->a))
          return AddToSum(op->b, WrapMul(t, scale, *c), sum);
      }
    }
    for (Term& term : sum->terms) {
      if (ExprDeepEqual(term.atom, e)) {
        term.coeff = WrapCoeff(t, WrapAdd(t, term.coeff, scale));
        return;
      }
    }
    sum->terms.push_back(Term{e, WrapCoeff(t, scale)});
  }

  LinearSum SumOf(const Expr& e, int64_t scale = 1) {
    LinearSum sum;
    sum.dtype = e.dtype();
    AddToSum(e, scale, &sum);
    return sum;
  }

  // Drops zero terms and folds floordiv(x, c) * (k * c) + floormod(x, c) * k into x * k, also
  // where x is floordiv(y, c1) and the quotient is written floordiv(y, c1 * c): the inverse of a
  // fuse of three loops, floordiv(v, 192) * 192 + floormod(floordiv(v, 64), 3) * 64 +
  // floormod(v, 64), folds to floordiv(v, 64) * 64 + floormod(v, 64), then to v.
  void Normalize(LinearSum* sum) {
    bool again = true;
    while (again) {
      again = false;
      for (size_t i = 0; i < sum->terms.size() && !again; ++i) {
        int64_t c;
        const BinaryNode* div = AsDivModByConst(sum->terms[i].atom, BinaryOp::kFloorDiv, &c);
        if (div == nullptr || sum->terms[i].coeff == 0) continue;
        for (size_t j = 0; j < sum->terms.size(); ++j) {
          int64_t c2;
          const BinaryNode* mod = AsDivModByConst(sum->terms[j].atom, BinaryOp::kFloorMod, &c2);
          int64_t k = sum->terms[j].coeff;
          if (mod == nullptr || k == 0) continue;
          int64_t c1 = 0;
          const BinaryNode* inner = AsDivModByConst(mod->a, BinaryOp::kFloorDiv, &c1);
          const bool same = c2 == c && ExprDeepEqual(div->a, mod->a);
          const bool nested = !same && inner != nullptr && WrapMul(sum->dtype, c1, c2) == c &&
                              ExprDeepEqual(div->a, inner->a);
          if (!same && !nested) continue;
          if (WrapMul(sum->dtype, k, c2) != sum->terms[i].coeff) continue;
          Expr x = mod->a;
          sum->terms[i].coeff = 0;
          sum->terms[j].coeff = 0;
          AddToSum(x, k, sum);
          again = true;
          break;
        }
      }
    }
    std::vector<Term> kept;
    for (Term& term : sum->terms) {
      if (term.coeff != 0) kept.push_back(std::move(term));
    }
    sum->terms = std::move(kept);
  }

  Expr TermExpr(DataType t, const Expr& atom, int64_t coeff) {
    if (coeff == 1) return atom;
    return MakeBinary(BinaryOp::kMul, atom, TypedConst(t, coeff));
  }

  // Positive terms in order, then subtracted ones, then the constant.
  Expr Render(LinearSum sum) {
    Normalize(&sum);
    const DataType t = sum.dtype;
    const int64_t kMin = std::numeric_limits<int64_t>::min();
    Expr result;
    for (const Term& term : sum.terms) {
      if (term.coeff < 0 && term.coeff != kMin) continue;
      Expr e = TermExpr(t, term.atom, term.coeff);
      result = result.defined() ? MakeBinary(BinaryOp::kAdd, result, e) : e;
    }
    bool constant_used = false;
    for (const Term& term : sum.terms) {
      if (term.coeff >= 0 || term.coeff == kMin) continue;
      if (!result.defined()) {
        result = TypedConst(t, sum.constant);
        constant_used = true;
      }
      result = MakeBinary(BinaryOp::kSub, result, TermExpr(t, term.atom, -term.coeff));
    }
    if (!constant_used && sum.constant != 0) {
      if (!result.defined()) {
        result = TypedConst(t, sum.constant);
      } else if (sum.constant > 0 || sum.constant == kMin) {
        result = MakeBinary(BinaryOp::kAdd, result, TypedConst(t, sum.constant));
      } else {
        result = MakeBinary(BinaryOp::kSub, result, TypedConst(t, -sum.constant));
      }
    }
    return result.defined() ? result : TypedConst(t, 0);
  }

  // ---- floordiv / floormod by a positive constant (index type) -----------------------------

  // Splits sum into quotient terms (coefficients divisible by c, divided) and the remainder,
  // then divides the remainder by the gcd of c and its coefficients. Returns the new divisor.
  int64_t SplitByDivisor(const LinearSum& sum, int64_t c, LinearSum* quot, LinearSum* rem) {
    quot->dtype = rem->dtype = sum.dtype;
    for (const Term& term : sum.terms) {
      if (term.coeff % c == 0) {
        quot->terms.push_back(Term{term.atom, term.coeff / c});
      } else {
        rem->terms.push_back(term);
      }
    }
    quot->constant = FloorDivInt(sum.constant, c);
    rem->constant = FloorModInt(sum.constant, c);
    int64_t g = c;
    for (const Term& term : rem->terms) g = std::gcd(g, term.coeff);
    g = std::gcd(g, rem->constant);
    if (g > 1) {
      for (Term& term : rem->terms) term.coeff /= g;
      rem->constant /= g;
    }
    return c / g;
  }

  // rem = g * big + small with small in [0, g) for a divisor g > 1 of c (the largest such): then
  // floordiv(rem, c) = floordiv(big, c / g) and floormod(rem, c) = floormod(big, c / g) * g +
  // small. A K step of 16 over taps of 16 channels: floordiv(16 t + f, 48) = floordiv(t, 3) for
  // f in [0, 16).
  bool SplitSmallPart(const LinearSum& rem, int64_t c, LinearSum* big, LinearSum* small,
                      int64_t* g) {
    std::set<int64_t> candidates;
    for (const Term& term : rem.terms) {
      const int64_t d = std::gcd(c, term.coeff);
      if (d > 1 && d < c) candidates.insert(d);
    }
    for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
      const int64_t d = *it;
      LinearSum b, sm;
      b.dtype = sm.dtype = rem.dtype;
      for (const Term& term : rem.terms) {
        if (term.coeff % d == 0) {
          b.terms.push_back(Term{term.atom, term.coeff / d});
        } else {
          sm.terms.push_back(term);
        }
      }
      b.constant = FloorDivInt(rem.constant, d);
      sm.constant = FloorModInt(rem.constant, d);
      if (b.terms.empty() || sm.terms.empty()) continue;
      const Bound bound = BoundOf(Render(sm));
      if (bound.min >= 0 && bound.max < d) {
        *big = std::move(b);
        *small = std::move(sm);
        *g = d;
        return true;
      }
    }
    return false;
  }

  // The single atom of `sum` if it is exactly 1 * atom + 0.
  static const Expr* SingleAtom(const LinearSum& sum) {
    if (sum.terms.size() != 1 || sum.terms[0].coeff != 1 || sum.constant != 0) return nullptr;
    return &sum.terms[0].atom;
  }

  Expr DivByConst(const Expr& a, int64_t c) {
    if (c == 1) return a;
    LinearSum quot, rem;
    int64_t c2 = SplitByDivisor(SumOf(a), c, &quot, &rem);
    if (!rem.terms.empty()) {
      Expr r = Render(rem);
      Bound b = BoundOf(r);
      int64_t k;
      if (SamePeriod(b, c2, &k)) {
        quot.constant += k;
      } else if (const Expr* atom = SingleAtom(rem);
                 atom != nullptr && IsNested(*atom, BinaryOp::kFloorDiv, c2)) {
        const auto* inner = atom->as<BinaryNode>();
        AddToSum(DivByConst(inner->a, *AsConstInt(inner->b) * c2), 1, &quot);
      } else if (LinearSum big, small; SplitSmallPart(rem, c2, &big, &small, &k)) {
        AddToSum(DivByConst(Render(std::move(big)), c2 / k), 1, &quot);
      } else {
        AddToSum(MakeBinary(BinaryOp::kFloorDiv, r, TypedConst(r.dtype(), c2)), 1, &quot);
      }
    }
    return Render(std::move(quot));
  }

  Expr ModByConst(const Expr& a, int64_t c) {
    if (c == 1) return TypedConst(a.dtype(), 0);
    LinearSum quot, rem;
    int64_t c2 = SplitByDivisor(SumOf(a), c, &quot, &rem);
    const int64_t g = c / c2;
    if (rem.terms.empty()) return TypedConst(a.dtype(), rem.constant * g);
    Expr r = Render(rem);
    Bound b = BoundOf(r);
    int64_t k;
    LinearSum out;
    out.dtype = a.dtype();
    if (SamePeriod(b, c2, &k)) {
      rem.constant -= k * c2;
      AddToSum(Render(std::move(rem)), g, &out);
    } else if (const Expr* atom = SingleAtom(rem);
               atom != nullptr && IsNested(*atom, BinaryOp::kFloorMod, 0) &&
               *AsConstInt(atom->as<BinaryNode>()->b) % c2 == 0) {
      AddToSum(ModByConst(atom->as<BinaryNode>()->a, c2), g, &out);
    } else if (LinearSum big, small; SplitSmallPart(rem, c2, &big, &small, &k)) {
      AddToSum(ModByConst(Render(std::move(big)), c2 / k), g * k, &out);
      AddToSum(Render(std::move(small)), g, &out);
    } else {
      AddToSum(MakeBinary(BinaryOp::kFloorMod, r, TypedConst(r.dtype(), c2)), g, &out);
    }
    return Render(std::move(out));
  }

  // True if every value of `b` has the same floordiv by c; *k is that quotient.
  static bool SamePeriod(Bound b, int64_t c, int64_t* k) {
    if (b.min == Bound::kNegInf || b.max == Bound::kPosInf) return false;
    *k = FloorDivInt(b.min, c);
    return FloorDivInt(b.max, c) == *k;
  }

  // `e` is op(x, c1) with a constant c1 > 0 whose product with `c` does not overflow.
  static bool IsNested(const Expr& e, BinaryOp op, int64_t c) {
    int64_t c1;
    if (AsDivModByConst(e, op, &c1) == nullptr) return false;
    int64_t product;
    return c == 0 || !__builtin_mul_overflow(c1, c, &product);
  }

  // ---- Binary operations ------------------------------------------------------------------

  Expr VisitBinary(const BinaryNode* op, const Expr& self) {
    Expr a = Visit(op->a);
    Expr b = Visit(op->b);
    const DataType t = a.dtype();
    auto rebuild = [&]() {
      return a.same_as(op->a) && b.same_as(op->b) ? self : MakeBinary(op->op, a, b);
    };
    const int64_t* ca = AsConstInt(a);
    const int64_t* cb = AsConstInt(b);
    if (Expr folded = FoldBinary(op->op, a, b); folded.defined()) return folded;
    if ((ca != nullptr && cb != nullptr) || (a.as<FloatImmNode>() && b.as<FloatImmNode>())) {
      return rebuild();  // not foldable (division by zero, 16-bit floats)
    }
    if (BinaryOpIsLogical(op->op)) return SimplifyLogic(op->op, a, b, rebuild);
    if (BinaryOpIsComparison(op->op)) return SimplifyCompare(op->op, a, b, rebuild());
    if (t.is_float()) return SimplifyFloat(op->op, a, b, rebuild);
    if (!t.is_integer()) return rebuild();
    switch (op->op) {
      case BinaryOp::kAdd:
      case BinaryOp::kSub: {
        LinearSum sum = SumOf(a);
        AddToSum(b, op->op == BinaryOp::kAdd ? 1 : -1, &sum);
        return Render(std::move(sum));
      }
      case BinaryOp::kMul:
        if (cb != nullptr) return Render(SumOf(a, *cb));
        if (ca != nullptr) return Render(SumOf(b, *ca));
        return rebuild();
      case BinaryOp::kDiv:
        if (cb != nullptr && *cb == 1) return a;
        if (cb != nullptr && *cb > 0 && IsIndexType(t) && BoundOf(a).min >= 0) {
          return DivByConst(a, *cb);
        }
        return DivModByBound(op->op, a, b, rebuild);
      case BinaryOp::kFloorDiv:
        if (cb != nullptr && *cb == 1) return a;
        if (cb != nullptr && *cb > 0 && IsIndexType(t)) return DivByConst(a, *cb);
        return DivModByBound(op->op, a, b, rebuild);
      case BinaryOp::kFloorMod:
        if (cb != nullptr && *cb == 1) return TypedConst(t, 0);
        if (cb != nullptr && *cb > 0 && IsIndexType(t)) return ModByConst(a, *cb);
        return DivModByBound(op->op, a, b, rebuild);
      case BinaryOp::kMin:
      case BinaryOp::kMax:
        return SimplifyMinMax(op->op, a, b, rebuild);
      default:
        return rebuild();
    }
  }

  // x / y, floordiv(x, y) -> 0 and floormod(x, y) -> x when 0 <= x < y.
  template <typename Rebuild>
  Expr DivModByBound(BinaryOp op, const Expr& a, const Expr& b, const Rebuild& rebuild) {
    Bound ba = BoundOf(a);
    Bound bb = BoundOf(b);
    if (bb.min > 0 && ba.min >= 0 && ba.max < bb.min) {
      return op == BinaryOp::kFloorMod ? a : TypedConst(a.dtype(), 0);
    }
    return rebuild();
  }

  // Bound of a - b. For the index type through the simplified difference (cancelling common
  // terms); for narrower types from the operands' own bounds, which account for wrap-around.
  Bound DiffBound(const Expr& a, const Expr& b) {
    if (IsIndexType(a.dtype())) {
      LinearSum diff = SumOf(a);
      AddToSum(b, -1, &diff);
      return BoundOf(Render(std::move(diff)));
    }
    Bound ba = BoundOf(a);
    Bound bb = BoundOf(b);
    int64_t neg_max = bb.max == Bound::kPosInf ? Bound::kNegInf : -bb.max;
    int64_t neg_min = bb.min == Bound::kNegInf ? Bound::kPosInf : -bb.min;
    return Bound{BoundAdd(ba.min, neg_max), BoundAdd(ba.max, neg_min)};
  }

  template <typename Rebuild>
  Expr SimplifyMinMax(BinaryOp op, const Expr& a, const Expr& b, const Rebuild& rebuild) {
    if (ExprDeepEqual(a, b)) return a;
    Bound d = DiffBound(a, b);
    const bool is_min = op == BinaryOp::kMin;
    if (d.max <= 0) return is_min ? a : b;
    if (d.min >= 0) return is_min ? b : a;
    return rebuild();
  }

  Expr SimplifyCompare(BinaryOp op, const Expr& a, const Expr& b, const Expr& rebuilt) {
    if (a.dtype().is_integer()) {
      if (ExprDeepEqual(a, b)) {
        return BoolImm(op == BinaryOp::kEQ || op == BinaryOp::kLE || op == BinaryOp::kGE);
      }
      if (!IsUInt64Type(a.dtype())) {
        Bound d = DiffBound(a, b);
        switch (op) {
          case BinaryOp::kLT:
            if (d.max < 0 || d.min >= 0) return BoolImm(d.max < 0);
            break;
          case BinaryOp::kLE:
            if (d.max <= 0 || d.min > 0) return BoolImm(d.max <= 0);
            break;
          case BinaryOp::kGT:
            if (d.min > 0 || d.max <= 0) return BoolImm(d.min > 0);
            break;
          case BinaryOp::kGE:
            if (d.min >= 0 || d.max < 0) return BoolImm(d.min >= 0);
            break;
          case BinaryOp::kEQ:
          case BinaryOp::kNE:
            if (d.is_const() && d.min == 0) return BoolImm(op == BinaryOp::kEQ);
            if (d.min > 0 || d.max < 0) return BoolImm(op == BinaryOp::kNE);
            break;
          default:
            break;
        }
      }
    }
    if (analyzer_->IsKnownFact(rebuilt)) return BoolImm(true);
    return rebuilt;
  }

  template <typename Rebuild>
  Expr SimplifyLogic(BinaryOp op, const Expr& a, const Expr& b, const Rebuild& rebuild) {
    const bool is_and = op == BinaryOp::kAnd;
    for (const auto& [x, y] : {std::pair<Expr, Expr>{a, b}, std::pair<Expr, Expr>{b, a}}) {
      if (const int64_t* c = AsConstInt(x)) {
        // true && y -> y, false && y -> false; false || y -> y, true || y -> true.
        return ((*c != 0) == is_and) ? y : BoolImm(!is_and);
      }
    }
    if (ExprDeepEqual(a, b)) return a;
    return rebuild();
  }

  template <typename Rebuild>
  Expr SimplifyFloat(BinaryOp op, const Expr& a, const Expr& b, const Rebuild& rebuild) {
    switch (op) {
      case BinaryOp::kAdd:
        if (IsFloatConst(b, 0.0)) return a;
        if (IsFloatConst(a, 0.0)) return b;
        break;
      case BinaryOp::kSub:
        if (IsFloatConst(b, 0.0)) return a;
        break;
      case BinaryOp::kMul:
        if (IsFloatConst(b, 1.0)) return a;
        if (IsFloatConst(a, 1.0)) return b;
        break;
      case BinaryOp::kDiv:
        if (IsFloatConst(b, 1.0)) return a;
        break;
      default:
        break;
    }
    return rebuild();
  }

  // ---- Other nodes ------------------------------------------------------------------------

  Expr VisitNot(const NotNode* op, const Expr& self) {
    Expr a = Visit(op->a);
    if (const int64_t* c = AsConstInt(a)) return BoolImm(*c == 0);
    if (const auto* inner = a.as<NotNode>()) return inner->a;
    if (const auto* cmp = a.as<BinaryNode>();
        cmp != nullptr && BinaryOpIsComparison(cmp->op) && cmp->a.dtype().is_integer()) {
      Expr inverted = MakeBinary(Negate(cmp->op), cmp->a, cmp->b);
      return SimplifyCompare(Negate(cmp->op), cmp->a, cmp->b, inverted);
    }
    return a.same_as(op->a) ? self : Not(a);
  }

  Expr VisitSelect(const SelectNode* op, const Expr& self) {
    Expr cond = Visit(op->condition);
    if (const int64_t* c = AsConstInt(cond))
      return Visit(*c != 0 ? op->true_value : op->false_value);
    Expr t, f;
    {
      ConstraintScope scope = analyzer_->EnterConstraint(cond);
      t = Visit(op->true_value);
    }
    {
      ConstraintScope scope = analyzer_->EnterConstraint(Visit(Not(cond)));
      f = Visit(op->false_value);
    }
    if (ExprDeepEqual(t, f)) return t;
    if (cond.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
      return self;
    }
    return Select(cond, t, f);
  }

  Expr VisitCast(const CastNode* op, const Expr& self) {
    Expr v = Visit(op->value);
    if (v.dtype() == op->dtype) return v;
    if (Expr folded = FoldCast(op->dtype, v); folded.defined()) return folded;
    return v.same_as(op->value) ? self : Cast(op->dtype, v);
  }

  Expr VisitCall(const CallNode* op, const Expr& self) {
    bool changed = false;
    std::vector<Expr> args = VisitAll(op->args, &changed);
    if (op->op == CallOp::kExtern) {  // opaque: only its arguments simplify
      return changed ? CallExtern(op->dtype, op->name, std::move(args)) : self;
    }
    if (Expr folded = FoldCall(op->op, op->dtype, args); folded.defined()) return folded;
    return changed ? Call(op->op, std::move(args)) : self;
  }

  Analyzer* analyzer_;
  int depth_ = 0;
};

bool ExprsDeepEqual(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!ExprDeepEqual(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

Expr Simplify(const Expr& expr, Analyzer* analyzer) {
  if (!expr.defined()) return expr;
  if (analyzer == nullptr) {
    Analyzer local;
    return Simplifier(&local).Visit(expr);
  }
  return Simplifier(analyzer).Visit(expr);
}

bool ExprDeepEqual(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  switch (a.kind()) {
    case ExprKind::kIntImm:
      return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case ExprKind::kFloatImm: {
      double x = a.as<FloatImmNode>()->value;
      double y = b.as<FloatImmNode>()->value;
      return x == y || (std::isnan(x) && std::isnan(y));
    }
    case ExprKind::kVar:
      return false;  // identity only, checked above
    case ExprKind::kBinary: {
      const auto* x = a.as<BinaryNode>();
      const auto* y = b.as<BinaryNode>();
      return x->op == y->op && ExprDeepEqual(x->a, y->a) && ExprDeepEqual(x->b, y->b);
    }
    case ExprKind::kNot:
      return ExprDeepEqual(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case ExprKind::kSelect: {
      const auto* x = a.as<SelectNode>();
      const auto* y = b.as<SelectNode>();
      return ExprDeepEqual(x->condition, y->condition) &&
             ExprDeepEqual(x->true_value, y->true_value) &&
             ExprDeepEqual(x->false_value, y->false_value);
    }
    case ExprKind::kCast:
      return ExprDeepEqual(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case ExprKind::kBufferLoad: {
      const auto* x = a.as<BufferLoadNode>();
      const auto* y = b.as<BufferLoadNode>();
      return x->buffer.same_as(y->buffer) && ExprsDeepEqual(x->indices, y->indices);
    }
    case ExprKind::kCall: {
      const auto* x = a.as<CallNode>();
      const auto* y = b.as<CallNode>();
      return x->op == y->op && x->name == y->name && ExprsDeepEqual(x->args, y->args);
    }
  }
  return false;
}

}  // namespace arith
}  // namespace tessera
