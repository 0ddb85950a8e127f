#include "codegen/partition_loops.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "codegen/panel_prefetch.h"
#include "ir/arith/linear.h"
#include "ir/arith/simplify.h"
#include "ir/functor.h"
#include "ir/loop_annotations.h"

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

// The loop `op` split at `bound` (free of its variable v): `head` for v in [0, min(n, bound)),
// then `tail` for v in [max(bound, 0), n), its loop counting from 0 with v shifted by the start.
// A constant extent stays constant where the bound covers the whole loop (the usual case).
Stmt SplitAt(const ForNode* op, const Expr& bound, const Stmt& head, const Stmt& tail) {
  const Expr start = arith::Simplify(Max(bound, Expr(0)));
  VarMap shift;
  shift[op->loop_var] = op->loop_var + start;
  auto loop = [&](Expr extent, Stmt body) {
    return For(op->loop_var, std::move(extent), op->for_kind, std::move(body), op->thread_tag,
               op->annotations);
  };
  const Stmt split = SeqStmt({loop(arith::Simplify(Min(op->extent, bound)), head),
                              loop(arith::Simplify(op->extent - start), Substitute(tail, shift))});
  const int64_t* n = AsConstInt(op->extent);
  if (n == nullptr) return split;
  if (const int64_t* b = AsConstInt(bound)) return *n <= *b ? loop(op->extent, head) : split;
  return IfThenElse(LE(op->extent, bound), loop(op->extent, head), split);
}

// `cond` as a test below a bound: `a < b` / `a <= b` as they are, `a >= b` as `a < b` and
// `a > b` as `a <= b` with `flipped` set (the select's values then swap).
Expr BelowForm(const Expr& cond, bool* flipped) {
  const auto* cmp = cond.as<BinaryNode>();
  *flipped = cmp != nullptr && (cmp->op == BinaryOp::kGE || cmp->op == BinaryOp::kGT);
  if (!*flipped) return cond;
  return cmp->op == BinaryOp::kGE ? LT(cmp->a, cmp->b) : LE(cmp->a, cmp->b);
}

// The loop `op` with body `store`, a store of select(c1 && ... && ck, x, y), split where the
// conjuncts `v + rest < bound` on its own variable v stop holding: x (under the other conjuncts)
// below the least bound, y from there to the end. nullopt when no conjunct bounds v. The
// zero-filled columns of a padded packing copy (PadEinsum's copy of B inlined into the GEMM's
// cache_read) are such a select: under -fno-tree-loop-if-convert it kept the whole copy scalar
// (GMM 127x257x509: a fifth of the kernel's time), partitioned both loops are plain copies.
// select(a >= b, x, y) is select(a < b, y, x), and a > b is !(a <= b): a Concat along its last
// axis reads its second operand from the bound on (the U-Net block's 96 channels, `c >= 64 ?
// skip[c - 64] : up[c]`, scalar under -fno-tree-loop-if-convert: 593 -> 69 us on Zen 3).
std::optional<Stmt> PartitionSelectStore(const ForNode* op, const BufferStoreNode* store) {
  const auto* select = store->value.as<SelectNode>();
  if (select == nullptr) return std::nullopt;
  bool flipped = false;
  const Expr condition = BelowForm(select->condition, &flipped);
  const Expr& true_value = flipped ? select->false_value : select->true_value;
  const Expr& false_value = flipped ? select->true_value : select->false_value;
  std::vector<Expr> conds, kept, bounds;
  SplitConjuncts(condition, &conds);
  for (const Expr& c : conds) {
    std::optional<Expr> bound;
    if (!ReadsBuffer(c)) bound = UpperBound(c, op->loop_var);
    (bound.has_value() ? bounds : kept).push_back(bound.has_value() ? *bound : c);
  }
  if (bounds.empty()) return std::nullopt;
  Expr bound = bounds[0];
  for (size_t i = 1; i < bounds.size(); ++i) bound = Min(bound, bounds[i]);
  const Expr x = kept.empty() ? true_value : Select(Conjunction(kept), true_value, false_value);
  return SplitAt(op, bound, BufferStore(store->buffer, x, store->indices),
                 BufferStore(store->buffer, false_value, store->indices));
}

// Replaces the selects whose condition, in BelowForm, is `test` by the value they take where
// the test holds (`holds`) or fails.
class SelectFolder : public IRMutator {
 public:
  SelectFolder(Expr test, bool holds) : test_(std::move(test)), holds_(holds) {}

 protected:
  Expr VisitExpr_(const SelectNode* op, const Expr& self) override {
    bool flipped = false;
    if (!arith::ExprDeepEqual(BelowForm(op->condition, &flipped), test_)) {
      return IRMutator::VisitExpr_(op, self);
    }
    return VisitExpr(holds_ != flipped ? op->true_value : op->false_value);
  }

 private:
  Expr test_;
  bool holds_;
};

// The loop `op` with body `store` whose value holds selects below its top (a select at the top
// is PartitionSelectStore's), on a test that reads no buffer:
//  - a test of its own variable v against a bound (`v + rest < bound`, or >=, >, <=): the loop
//    is split at the first such bound, each select on that test folded on each side. LLaMA's
//    rotary embedding (`x * cos + (d >= 64 ? x[d - 64] : -x[d + 64]) * sin`, a Concat of a
//    negated half) kept its loop scalar under -fno-tree-loop-if-convert: 192 us for 2048 rows
//    of 128.
//  - otherwise a test v does not change, of a select between two loads: `if (c) loop(x) else
//    loop(y)`. The keys' rotation, transposed, picks its half by an outer loop (442-641 us on
//    two threads). Selects of a constant (a convolution's zero padding) are left to the passes
//    made for them (GuardIdentityTerm, codegen/unswitch_borders.h).
std::optional<Stmt> PartitionOnNestedSelects(const ForNode* op, const BufferStoreNode* store) {
  if (store->value.as<SelectNode>() != nullptr) return std::nullopt;
  std::optional<Expr> split_test, bound, unswitch_test;
  PostOrderVisitExprs(store->value, [&](const Expr& e) {
    const auto* select = e.as<SelectNode>();
    if (select == nullptr || split_test.has_value() || ReadsBuffer(select->condition)) return;
    bool flipped = false;
    const Expr below = BelowForm(select->condition, &flipped);
    if ((bound = UpperBound(below, op->loop_var))) {
      split_test = below;
    } else if (!unswitch_test.has_value() && ReadsBuffer(select->true_value) &&
               ReadsBuffer(select->false_value) &&
               !UsesVar(below, [&](const VarNode* x) { return x == op->loop_var.get(); })) {
      unswitch_test = below;
    }
  });
  const std::optional<Expr>& test = split_test.has_value() ? split_test : unswitch_test;
  if (!test.has_value()) return std::nullopt;
  auto folded = [&](bool holds) {
    return BufferStore(store->buffer, SelectFolder(*test, holds).VisitExpr(store->value),
                       store->indices);
  };
  if (split_test.has_value()) return SplitAt(op, *bound, folded(true), folded(false));
  auto loop = [&](bool holds) {
    return For(op->loop_var, op->extent, op->for_kind, folded(holds), op->thread_tag,
               op->annotations);
  };
  return IfThenElse(*test, loop(true), loop(false));
}

// Folds loop extents and branch conditions that became constant (after a loop variable was
// replaced by a value), keeping only the branch a constant condition takes.
class ConstantFolder : public IRMutator {
 protected:
  Stmt VisitStmt_(const ForNode* op, const Stmt& /*self*/) override {
    return For(op->loop_var, arith::Simplify(op->extent), op->for_kind, VisitStmt(op->body),
               op->thread_tag, op->annotations);
  }
  Stmt VisitStmt_(const IfThenElseNode* op, const Stmt& /*self*/) override {
    const Expr condition = arith::Simplify(op->condition);
    if (const int64_t* taken = AsConstInt(condition)) {
      if (*taken != 0) return VisitStmt(op->then_case);
      return op->else_case.defined() ? VisitStmt(op->else_case) : SeqStmt({});
    }
    return IfThenElse(condition, VisitStmt(op->then_case),
                      op->else_case.defined() ? VisitStmt(op->else_case) : Stmt());
  }
};

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// A serial loop `for o in [0, n)` (n constant) whose body is `if (c) S1 else S2`, c linear in
// o with constant coefficients (an inner loop partitioned above: `16 <= 77 - o * 16`): c holds
// on a prefix or a suffix of [0, n), so the loop becomes one loop per branch. A piece of one
// iteration is its branch at that constant o, where the inner loop's extent is a constant the
// compiler vectorizes in full (softmax's rows of 77 in 16 lanes: the tail of 13 with extent
// `77 - o * 16` inside the loop took 37 us, peeled to 13 after it 28 us).
std::optional<Stmt> PeelByCondition(const ForNode* op, const Stmt& body) {
  const auto* branch = body.as<IfThenElseNode>();
  const int64_t* n = AsConstInt(op->extent);
  if (branch == nullptr || !branch->else_case.defined() || n == nullptr ||
      (op->for_kind != ForKind::kSerial && op->for_kind != ForKind::kUnrolled)) {
    return std::nullopt;
  }
  const auto* cmp = branch->condition.as<BinaryNode>();
  if (cmp == nullptr || (cmp->op != BinaryOp::kLT && cmp->op != BinaryOp::kLE) ||
      !cmp->a.dtype().is_int() || !cmp->b.dtype().is_int() || ReadsBuffer(branch->condition)) {
    return std::nullopt;
  }
  std::optional<arith::LinearEquation> eq =
      arith::DetectLinearEquation(cmp->a - cmp->b, {op->loop_var});
  if (!eq) return std::nullopt;
  const int64_t* a = AsConstInt(eq->coeffs[0]);
  const Expr base = arith::Simplify(eq->base);
  const int64_t* b = AsConstInt(base);
  if (a == nullptr || b == nullptr || *a == 0) return std::nullopt;
  // c  <=>  a * o + b' <= 0, with b' = b + 1 for `<` over integers.
  const int64_t b1 = *b + (cmp->op == BinaryOp::kLT ? 1 : 0);
  // a > 0: c holds for o <= floor(-b' / a); a < 0: for o >= ceil(b' / -a).
  const bool holds_first = *a > 0;
  int64_t split = holds_first ? FloorDiv(-b1, *a) + 1 : -FloorDiv(-b1, -*a);
  split = std::clamp<int64_t>(split, 0, *n);
  auto piece = [&](int64_t lo, int64_t hi, const Stmt& stmt) -> Stmt {
    VarMap at;
    if (hi - lo == 1) {
      at[op->loop_var] = Expr(lo);
      ConstantFolder folder;
      return folder.VisitStmt(Substitute(stmt, at));
    }
    if (lo != 0) at[op->loop_var] = op->loop_var + Expr(lo);
    return For(op->loop_var, Expr(hi - lo), op->for_kind, lo != 0 ? Substitute(stmt, at) : stmt,
               op->thread_tag, op->annotations);
  };
  const Stmt& first = holds_first ? branch->then_case : branch->else_case;
  const Stmt& second = holds_first ? branch->else_case : branch->then_case;
  std::vector<Stmt> pieces;
  if (split > 0) pieces.push_back(piece(0, split, first));
  if (split < *n) pieces.push_back(piece(split, *n, second));
  return pieces.size() == 1 ? pieces[0] : SeqStmt(std::move(pieces));
}

// A serial loop whose body is `if (c) S1 else S2` with c free of its variable and of loads
// becomes `if (c) loop(S1) else loop(S2)`; bubbling up, a clipped tile's test (an inner loop
// partitioned above, inside the reduction loops of a convolution tile: `6 <= 64 - o * 6`) ends
// above the whole reduction nest, whose full-tile copy is then free of branches and keeps its
// accumulators in registers.
std::optional<Stmt> UnswitchInvariantBranch(const ForNode* op, const Stmt& body) {
  const auto* branch = body.as<IfThenElseNode>();
  if (branch == nullptr || !branch->else_case.defined() ||
      (op->for_kind != ForKind::kSerial && op->for_kind != ForKind::kUnrolled) ||
      ReadsBuffer(branch->condition) ||
      UsesVar(branch->condition, [&](const VarNode* x) { return x == op->loop_var.get(); })) {
    return std::nullopt;
  }
  auto loop = [&](const Stmt& s) {
    return For(op->loop_var, op->extent, op->for_kind, s, op->thread_tag, op->annotations);
  };
  return IfThenElse(branch->condition, loop(branch->then_case), loop(branch->else_case));
}

bool IsZero(const Expr& e) {
  if (const auto* f = e.as<FloatImmNode>()) return f->value == 0.0;
  return IsConstInt(e, 0);
}

// `select(c, x, 0) * y` or `y * select(c, x, 0)`: sets c and returns x * y.
std::optional<Expr> ZeroUnless(const Expr& e, Expr* condition) {
  const auto* mul = e.as<BinaryNode>();
  if (mul == nullptr || mul->op != BinaryOp::kMul) return std::nullopt;
  for (const auto& [maybe_select, other] : {std::pair(mul->a, mul->b), std::pair(mul->b, mul->a)}) {
    const auto* select = maybe_select.as<SelectNode>();
    if (select != nullptr && IsZero(select->false_value)) {
      *condition = select->condition;
      return maybe_select.same_as(mul->a) ? select->true_value * other : other * select->true_value;
    }
  }
  return std::nullopt;
}

// `select(c, x, v)` where v is the identity of `op` on `dtype` (max: its lowest value or -inf;
// min: its highest value or +inf): sets c and returns x.
std::optional<Expr> IdentityUnless(const Expr& e, BinaryOp op, DataType dtype, Expr* condition) {
  const auto* select = e.as<SelectNode>();
  const auto* value = select != nullptr ? select->false_value.as<FloatImmNode>() : nullptr;
  if (value == nullptr) return std::nullopt;
  const auto* extreme =
      (op == BinaryOp::kMax ? MinValue(dtype) : MaxValue(dtype)).as<FloatImmNode>();
  const double infinity = op == BinaryOp::kMax ? -HUGE_VAL : HUGE_VAL;
  if (value->value != infinity && (extreme == nullptr || value->value != extreme->value)) {
    return std::nullopt;
  }
  *condition = select->condition;
  return select->true_value;
}

// A float store that accumulates into the element it stores, `acc = acc <op> term` (either
// order of the operands), as `if (c) acc = acc <op> t` where the term is one that leaves acc as
// it is unless c holds; the guard then moves out of the loops it does not depend on (below).
//  - Under a loop annotated kSkipZeroTerms (ir/loop_annotations.h), `+ select(c, x, 0) * y`:
//    the zero-padding taps of a convolution whose padding is inlined into it, 9% of the
//    multiply-adds of a 3x3 convolution over 14 x 14 pixels, which oneDNN skips too. The one
//    difference: where c fails and y is infinite or NaN, 0 * y made the sum NaN. Not everywhere:
//    a depthwise convolution's taps, each a test around a vector of channels, lost their
//    accumulators' registers to the tests (74 -> 118 us).
//  - Everywhere, `max(acc, select(c, x, lowest))` (min with the highest value): a max-pool's
//    padding taps. Exact, and the select it removes kept the window scalar under
//    -fno-tree-loop-if-convert: ResNet-18's 3x3 stride-2 pool took 507 us on two threads.
std::optional<Stmt> GuardIdentityTerm(const BufferStoreNode* store, bool skip_zero_terms) {
  const auto* update = store->value.as<BinaryNode>();
  const DataType dtype = store->buffer.dtype();
  if (update == nullptr || !dtype.is_float()) return std::nullopt;
  const bool extreme = update->op == BinaryOp::kMax || update->op == BinaryOp::kMin;
  if (!extreme && !(update->op == BinaryOp::kAdd && skip_zero_terms)) return std::nullopt;
  for (const auto& [acc, term] :
       {std::pair(update->a, update->b), std::pair(update->b, update->a)}) {
    const auto* load = acc.as<BufferLoadNode>();
    if (load == nullptr || !load->buffer.same_as(store->buffer) ||
        load->indices.size() != store->indices.size()) {
      continue;
    }
    bool same_element = true;
    for (size_t i = 0; i < load->indices.size(); ++i) {
      same_element = same_element && arith::ExprDeepEqual(load->indices[i], store->indices[i]);
    }
    if (!same_element) continue;
    Expr condition;
    std::optional<Expr> kept = extreme ? IdentityUnless(term, update->op, dtype, &condition)
                                       : ZeroUnless(term, &condition);
    if (!kept.has_value() || ReadsBuffer(condition)) continue;
    const Expr value = update->op == BinaryOp::kAdd   ? acc + *kept
                       : update->op == BinaryOp::kMax ? Max(acc, *kept)
                                                      : Min(acc, *kept);
    return IfThenElse(condition, BufferStore(store->buffer, value, store->indices));
  }
  return std::nullopt;
}

class Partitioner : public IRMutator {
 protected:
  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    std::optional<Stmt> guarded = GuardIdentityTerm(op, skip_zero_terms_);
    return guarded.has_value() ? *guarded : self;
  }
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    const bool saved_skip = skip_zero_terms_;
    if (op->annotations.count(kSkipZeroTerms)) {
      skip_zero_terms_ = IntAnnotation(op, kSkipZeroTerms) != 0;
    }
    Stmt body = VisitStmt(op->body);
    skip_zero_terms_ = saved_skip;
    if (const auto* store = body.as<BufferStoreNode>()) {
      if (std::optional<Stmt> split = PartitionSelectStore(op, store)) return *split;
      if (std::optional<Stmt> split = PartitionOnNestedSelects(op, store)) return *split;
    }
    if (std::optional<Stmt> peeled = PeelByCondition(op, body)) return *peeled;
    if (std::optional<Stmt> unswitched = UnswitchInvariantBranch(op, body)) return *unswitched;
    body = PrefetchesIntoGuard(body);
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

 private:
  bool skip_zero_terms_ = false;  // under a loop annotated kSkipZeroTerms
};

}  // namespace

PrimFunc PartitionGuardedLoops(const PrimFunc& f) {
  Partitioner partitioner;
  Stmt body = partitioner.VisitStmt(f->body);
  return body.same_as(f->body) ? f : f.WithBody(body);
}

}  // namespace tessera
