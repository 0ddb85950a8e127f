// Linear coefficient extraction by structural recursion over + - * (TVM's
// arith/detect_linear_equation.cc without its symbolic-coefficient simplifier).
#include "ir/arith/linear.h"

#include <utility>

#include "ir/arith/simplify.h"
#include "ir/functor.h"

namespace tessera {
namespace arith {
namespace {

class LinearDetector {
 public:
  explicit LinearDetector(const std::vector<Var>& vars) : vars_(vars) {}

  // Coefficients (undefined meaning 0) and base of `e`; false if not linear.
  bool Detect(const Expr& e, LinearEquation* out) {
    out->coeffs.assign(vars_.size(), Expr());
    out->base = Expr(0);
    if (!UsesAny(e)) {
      out->base = e;
      return true;
    }
    for (size_t i = 0; i < vars_.size(); ++i) {
      if (e.same_as(vars_[i])) {
        out->coeffs[i] = Expr(1);
        return true;
      }
    }
    const auto* op = e.as<BinaryNode>();
    if (op == nullptr || !e.dtype().is_integer()) return false;
    LinearEquation a, b;
    switch (op->op) {
      case BinaryOp::kAdd:
      case BinaryOp::kSub:
        if (!Detect(op->a, &a) || !Detect(op->b, &b)) return false;
        for (size_t i = 0; i < vars_.size(); ++i) {
          out->coeffs[i] = Combine(op->op, a.coeffs[i], b.coeffs[i]);
        }
        out->base = MakeBinary(op->op, a.base, b.base);
        return true;
      case BinaryOp::kMul: {
        bool a_uses = UsesAny(op->a);
        if (a_uses && UsesAny(op->b)) return false;
        const Expr& scale = a_uses ? op->b : op->a;
        if (!Detect(a_uses ? op->a : op->b, &a)) return false;
        for (size_t i = 0; i < vars_.size(); ++i) {
          if (a.coeffs[i].defined()) out->coeffs[i] = a.coeffs[i] * scale;
        }
        out->base = a.base * scale;
        return true;
      }
      default:
        return false;
    }
  }

 private:
  static Expr Combine(BinaryOp op, const Expr& a, const Expr& b) {
    if (!b.defined()) return a;
    if (!a.defined()) return op == BinaryOp::kAdd ? b : Expr(0) - b;
    return MakeBinary(op, a, b);
  }

  bool UsesAny(const Expr& e) const {
    return UsesVar(e, [this](const VarNode* v) {
      for (const Var& var : vars_) {
        if (var.get() == v) return true;
      }
      return false;
    });
  }

  const std::vector<Var>& vars_;
};

}  // namespace

std::optional<LinearEquation> DetectLinearEquation(const Expr& expr, const std::vector<Var>& vars,
                                                   Analyzer* analyzer) {
  LinearEquation eq;
  if (!LinearDetector(vars).Detect(expr, &eq)) return std::nullopt;
  for (Expr& c : eq.coeffs) c = c.defined() ? Simplify(c, analyzer) : Expr(0);
  eq.base = Simplify(eq.base, analyzer);
  return eq;
}

bool IsAffine(const Expr& expr, const std::vector<Var>& vars) {
  LinearEquation eq;
  return LinearDetector(vars).Detect(expr, &eq);
}

Expr ProdExtents(const std::vector<Range>& ranges, Analyzer* analyzer) {
  Expr product = Expr(1);
  for (const Range& r : ranges) product = product * r.extent;
  return Simplify(product, analyzer);
}

}  // namespace arith
}  // namespace tessera
