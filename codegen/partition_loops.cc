#include "codegen/partition_loops.h"

#include <optional>
#include <utility>
#include <vector>

#include "ir/arith/linear.h"
#include "ir/arith/simplify.h"
#include "ir/functor.h"

namespace tessera {
namespace {

bool ReadsBuffer(const Expr& e) {
  bool reads = false;
  PostOrderVisitExprs(e,
                      [&](const Expr& x) { reads = reads || x.as<BufferLoadNode>() != nullptr; });
  return reads;
}

// B such that `cond` is `v < B`, when cond is `a < b` or `a <= b` with a - b linear in v with
// coefficient 1 (B free of v).
std::optional<Expr> UpperBound(const Expr& cond, const Var& v) {
  const auto* cmp = cond.as<BinaryNode>();
  if (cmp == nullptr || (cmp->op != BinaryOp::kLT && cmp->op != BinaryOp::kLE)) return std::nullopt;
  if (!cmp->a.dtype().is_int() || !cmp->b.dtype().is_int()) return std::nullopt;
  std::optional<arith::LinearEquation> eq = arith::DetectLinearEquation(cmp->a - cmp->b, {v});
  if (!eq || !IsConstInt(eq->coeffs[0], 1)) return std::nullopt;
  // v + base < 0  <=>  v < -base;  v + base <= 0  <=>  v < 1 - base.
  Expr bound = cmp->op == BinaryOp::kLT ? Expr(0) - eq->base : Expr(1) - eq->base;
  return arith::Simplify(bound);
}

class Partitioner : public IRMutator {
 protected:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt body = VisitStmt(op->body);
    const auto* guard = body.as<IfThenElseNode>();
    if (guard == nullptr || guard->else_case.defined()) {
      return body.same_as(op->body) ? self
                                    : For(op->loop_var, op->extent, op->for_kind, body,
                                          op->thread_tag, op->annotations);
    }
    const VarNode* v = op->loop_var.get();
    std::vector<Expr> conds, hoisted, kept;
    std::vector<Expr> bounds;
    SplitConjuncts(guard->condition, &conds);
    for (const Expr& c : conds) {
      if (ReadsBuffer(c)) {
        kept.push_back(c);
      } else if (!UsesVar(c, [&](const VarNode* x) { return x == v; })) {
        hoisted.push_back(c);
      } else if (std::optional<Expr> bound = UpperBound(c, op->loop_var)) {
        bounds.push_back(*bound);
      } else {
        kept.push_back(c);
      }
    }
    Stmt inner = kept.empty() ? guard->then_case : IfThenElse(Conjunction(kept), guard->then_case);
    Stmt loop;
    if (bounds.empty()) {
      loop = For(op->loop_var, op->extent, op->for_kind, inner, op->thread_tag, op->annotations);
    } else {
      Expr bound = bounds[0];
      for (size_t i = 1; i < bounds.size(); ++i) bound = Min(bound, bounds[i]);
      if (AsConstInt(op->extent) != nullptr) {
        Stmt full =
            For(op->loop_var, op->extent, op->for_kind, inner, op->thread_tag, op->annotations);
        Stmt tail = For(op->loop_var, bound, op->for_kind, inner, op->thread_tag, op->annotations);
        loop = IfThenElse(LE(op->extent, bound), full, tail);
      } else {
        loop = For(op->loop_var, Min(op->extent, bound), op->for_kind, inner, op->thread_tag,
                   op->annotations);
      }
    }
    return hoisted.empty() ? loop : IfThenElse(Conjunction(hoisted), loop);
  }
};

}  // namespace

PrimFunc PartitionGuardedLoops(const PrimFunc& f) {
  Partitioner partitioner;
  Stmt body = partitioner.VisitStmt(f->body);
  return body.same_as(f->body) ? f : f.WithBody(body);
}

}  // namespace tessera
