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

// The loop `op` with body `store`, a store of select(c1 && ... && ck, x, y), split where the
// conjuncts `v + rest < bound` on its own variable v stop holding: x (under the other conjuncts)
// below the least bound, y from there to the end. nullopt when no conjunct bounds v. The
// zero-filled columns of a padded packing copy (PadEinsum's copy of B inlined into the GEMM's
// cache_read) are such a select: under -fno-tree-loop-if-convert it kept the whole copy scalar
// (GMM 127x257x509: a fifth of the kernel's time), partitioned both loops are plain copies.
std::optional<Stmt> PartitionSelectStore(const ForNode* op, const BufferStoreNode* store) {
  const auto* select = store->value.as<SelectNode>();
  if (select == nullptr) return std::nullopt;
  std::vector<Expr> conds, kept, bounds;
  SplitConjuncts(select->condition, &conds);
  for (const Expr& c : conds) {
    std::optional<Expr> bound;
    if (!ReadsBuffer(c)) bound = UpperBound(c, op->loop_var);
    (bound.has_value() ? bounds : kept).push_back(bound.has_value() ? *bound : c);
  }
  if (bounds.empty()) return std::nullopt;
  Expr bound = bounds[0];
  for (size_t i = 1; i < bounds.size(); ++i) bound = Min(bound, bounds[i]);
  const Expr x = kept.empty() ? select->true_value
                              : Select(Conjunction(kept), select->true_value, select->false_value);
  const Stmt head_body = BufferStore(store->buffer, x, store->indices);
  // The tail runs v over [max(bound, 0), n): its loop counts from 0, v shifted by the start.
  const Expr start = arith::Simplify(Max(bound, Expr(0)));
  VarMap shift;
  shift[op->loop_var] = op->loop_var + start;
  const Stmt tail_body =
      Substitute(BufferStore(store->buffer, select->false_value, store->indices), shift);
  auto loop = [&](Expr extent, Stmt body) {
    return For(op->loop_var, std::move(extent), op->for_kind, std::move(body), op->thread_tag,
               op->annotations);
  };
  const Stmt split = SeqStmt({loop(arith::Simplify(Min(op->extent, bound)), head_body),
                              loop(arith::Simplify(op->extent - start), tail_body)});
  const int64_t* n = AsConstInt(op->extent);
  if (n == nullptr) return split;
  if (const int64_t* b = AsConstInt(bound)) return *n <= *b ? loop(op->extent, head_body) : split;
  // A constant extent stays constant where the bound covers the whole loop (the usual case).
  return IfThenElse(LE(op->extent, bound), loop(op->extent, head_body), split);
}

class Partitioner : public IRMutator {
 protected:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt body = VisitStmt(op->body);
    if (const auto* store = body.as<BufferStoreNode>()) {
      if (std::optional<Stmt> split = PartitionSelectStore(op, store)) return *split;
    }
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
