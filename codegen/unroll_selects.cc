#include "codegen/unroll_selects.h"

#include <utility>
#include <vector>

#include "ir/arith/simplify.h"
#include "ir/functor.h"

namespace tessera {
namespace {

// Whether a select of `body` picks a case by an equality on `var` (`var == 3`,
// `floormod(var, 4) == 1`). Selects that compare by order (a convolution's padding tests) do not
// count: their unrolled tiles stay as the C compiler unrolls them.
bool SelectsOn(const Stmt& body, const VarNode* var) {
  bool found = false;
  VisitCaseTests(body, [&](const BinaryNode& eq) {
    auto is_var = [var](const VarNode* v) { return v == var; };
    found = found || UsesVar(eq.a, is_var) || UsesVar(eq.b, is_var);
  });
  return found;
}

// Folds the selects whose condition simplifies to a constant.
class ConstantSelectFolder : public IRMutator {
 protected:
  Expr VisitExpr_(const SelectNode* op, const Expr& self) override {
    const Expr condition = arith::Simplify(op->condition);
    if (const int64_t* value = AsConstInt(condition)) {
      return VisitExpr(*value != 0 ? op->true_value : op->false_value);
    }
    return IRMutator::VisitExpr_(op, self);
  }
};

class Expander : public IRMutator {
 protected:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt body = VisitStmt(op->body);
    const int64_t* extent = AsConstInt(op->extent);
    if (op->for_kind != ForKind::kUnrolled || extent == nullptr ||
        *extent > kMaxExpandedSelectIterations || !SelectsOn(body, op->loop_var.get())) {
      return body.same_as(op->body) ? self
                                    : For(op->loop_var, op->extent, op->for_kind, body,
                                          op->thread_tag, op->annotations);
    }
    std::vector<Stmt> copies;
    for (int64_t i = 0; i < *extent; ++i) {
      VarMap value = {{op->loop_var, Expr(i)}};
      ConstantSelectFolder folder;
      copies.push_back(folder.VisitStmt(Substitute(body, value)));
    }
    return SeqStmt(std::move(copies));
  }
};

}  // namespace

void VisitCaseTests(const Stmt& stmt, const std::function<void(const BinaryNode& eq)>& fn) {
  PostOrderVisitExprs(stmt, [&](const Expr& e) {
    const auto* select = e.as<SelectNode>();
    if (select == nullptr) return;
    std::vector<Expr> conjuncts;
    SplitConjuncts(select->condition, &conjuncts);
    for (const Expr& c : conjuncts) {
      const auto* eq = c.as<BinaryNode>();
      if (eq != nullptr && eq->op == BinaryOp::kEQ) fn(*eq);
    }
  });
}

PrimFunc ExpandUnrolledSelects(const PrimFunc& f) {
  Expander expander;
  Stmt body = expander.VisitStmt(f.body());
  if (body.same_as(f.body())) return f;
  return PrimFunc::Make(f.name(), f.params(), std::move(body), f.attrs());
}

}  // namespace tessera
