#include "codegen/unswitch_borders.h"

#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/arith/linear.h"
#include "ir/arith/simplify.h"
#include "ir/functor.h"
#include "ir/loop_annotations.h"

namespace tessera {
namespace {

bool IsConstZero(const Expr& e) {
  if (const auto* f = e.as<FloatImmNode>()) return f->value == 0.0;
  return IsConstInt(e, 0);
}

// The variables bound inside a body: its loops' with their constant extents (nullopt: not
// constant, or a block's iteration variable, whose range is not a loop's).
struct InnerLoop {
  Var var;
  std::optional<int64_t> extent;
};
using InnerLoops = std::unordered_map<const VarNode*, InnerLoop>;

InnerLoops CollectInnerLoops(const Stmt& body) {
  InnerLoops loops;
  PostOrderVisitStmts(body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) {
      const int64_t* extent = AsConstInt(loop->extent);
      loops[loop->loop_var.get()] = {
          loop->loop_var, extent != nullptr ? std::optional<int64_t>(*extent) : std::nullopt};
    } else if (const auto* block = s.as<BlockNode>()) {
      for (const IterVar& iv : block->iter_vars) loops[iv.var.get()] = {iv.var, std::nullopt};
    }
  });
  return loops;
}

// For a conjunct `a op b`, the condition on the outer variables under which it holds for every
// value of the inner loops; nullopt when it is not such a comparison.
std::optional<Expr> HoldsEverywhere(const Expr& conjunct, const InnerLoops& loops) {
  const auto* cmp = conjunct.as<BinaryNode>();
  if (cmp == nullptr || !BinaryOpIsComparison(cmp->op) || cmp->op == BinaryOp::kEQ ||
      cmp->op == BinaryOp::kNE || !cmp->a.dtype().is_int() || !cmp->b.dtype().is_int()) {
    return std::nullopt;
  }
  bool reads = false;
  std::vector<Var> vars;
  std::vector<int64_t> extents;
  bool unknown_extent = false;
  PostOrderVisitExprs(conjunct, [&](const Expr& e) {
    reads = reads || e.as<BufferLoadNode>() != nullptr;
    const auto* var = e.as<VarNode>();
    if (var == nullptr) return;
    auto it = loops.find(var);
    if (it == loops.end()) return;
    if (!it->second.extent.has_value()) {
      unknown_extent = true;
      return;
    }
    for (const Var& seen : vars) {
      if (seen.get() == var) return;
    }
    vars.push_back(it->second.var);
    extents.push_back(*it->second.extent);
  });
  if (reads || unknown_extent) return std::nullopt;
  // e = a - b; `a < b` holds everywhere when max(e) < 0, `a > b` when min(e) > 0.
  std::optional<arith::LinearEquation> eq = arith::DetectLinearEquation(cmp->a - cmp->b, vars);
  if (!eq) return std::nullopt;
  const bool upper = cmp->op == BinaryOp::kLT || cmp->op == BinaryOp::kLE;
  int64_t offset = 0;
  for (size_t i = 0; i < vars.size(); ++i) {
    const int64_t* c = AsConstInt(eq->coeffs[i]);
    if (c == nullptr) return std::nullopt;
    const int64_t span = *c * (extents[i] - 1);
    if (upper ? span > 0 : span < 0) offset += span;
  }
  return arith::Simplify(MakeBinary(cmp->op, eq->base + Expr(offset), Expr(0)));
}

// Replaces the padding selects whose every conjunct holds everywhere in the interior by their
// loaded value, and collects those interior conditions.
class InteriorBody : public IRMutator {
 public:
  explicit InteriorBody(InnerLoops loops) : loops_(std::move(loops)) {}
  const std::vector<Expr>& interior() const { return interior_; }

 protected:
  Expr VisitExpr_(const SelectNode* op, const Expr& self) override {
    if (!IsConstZero(op->false_value)) return IRMutator::VisitExpr_(op, self);
    std::vector<Expr> conjuncts, conditions;
    SplitConjuncts(op->condition, &conjuncts);
    for (const Expr& c : conjuncts) {
      std::optional<Expr> everywhere = HoldsEverywhere(c, loops_);
      // A test some iteration fails wherever the loop is (a padding tap of a tile spanning
      // the whole width) leaves no interior.
      if (!everywhere.has_value() || IsConstInt(*everywhere, 0)) {
        return IRMutator::VisitExpr_(op, self);
      }
      conditions.push_back(*everywhere);
    }
    for (const Expr& c : conditions) {
      bool known = false;
      for (const Expr& seen : interior_) known = known || arith::ExprDeepEqual(seen, c);
      if (!known) interior_.push_back(c);
    }
    return VisitExpr(op->true_value);
  }

 private:
  InnerLoops loops_;
  std::vector<Expr> interior_;
};

class Unswitcher : public IRMutator {
 protected:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt body = VisitStmt(op->body);
    if (IntAnnotation(op, kUnswitchBorders) != 0) {
      InteriorBody interior(CollectInnerLoops(body));
      Stmt fast = interior.VisitStmt(body);
      if (!interior.interior().empty()) {
        body = IfThenElse(Conjunction(interior.interior()), fast, body);
      }
    }
    return body.same_as(op->body)
               ? self
               : For(op->loop_var, op->extent, op->for_kind, body, op->thread_tag, op->annotations);
  }
};

}  // namespace

PrimFunc UnswitchBorders(const PrimFunc& f) {
  Unswitcher unswitcher;
  Stmt body = unswitcher.VisitStmt(f->body);
  return body.same_as(f->body) ? f : f.WithBody(body);
}

}  // namespace tessera
