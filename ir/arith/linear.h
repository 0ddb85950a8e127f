// Linear-form utilities over index expressions: coefficient extraction, affinity tests and
// products of extents.
#ifndef TESSERA_IR_ARITH_LINEAR_H_
#define TESSERA_IR_ARITH_LINEAR_H_

#include <optional>
#include <vector>

#include "ir/arith/analyzer.h"
#include "ir/expr.h"
#include "ir/stmt.h"

namespace tessera {
namespace arith {

// expr == sum(coeffs[i] * vars[i]) + base, where neither coeffs nor base use any of vars.
struct LinearEquation {
  std::vector<Expr> coeffs;  // One per variable, simplified; 0 where a variable is absent.
  Expr base;                 // Simplified.
};

// The linear form of `expr` in `vars`, or nullopt if `expr` is not linear in them (a product
// of two terms using them, a division or min/max of them, a load indexed by them...).
// Coefficients may be symbolic (`i * n + j` gives n for i).
std::optional<LinearEquation> DetectLinearEquation(const Expr& expr, const std::vector<Var>& vars,
                                                   Analyzer* analyzer = nullptr);

// True if `expr` is affine in `vars`: DetectLinearEquation succeeds.
bool IsAffine(const Expr& expr, const std::vector<Var>& vars);

// The product of the extents, simplified (1 for no ranges).
Expr ProdExtents(const std::vector<Range>& ranges, Analyzer* analyzer = nullptr);

}  // namespace arith
}  // namespace tessera

#endif  // TESSERA_IR_ARITH_LINEAR_H_
