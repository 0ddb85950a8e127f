// Interval evaluation (TVM's arith/int_set.cc, hull intervals only) and buffer access region
// detection (TVM's tir/analysis/block_access_region_detector.cc, without opaque accesses).
#include "ir/arith/int_set.h"

#include <string>
#include <unordered_set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "ir/arith/simplify.h"
#include "ir/functor.h"

namespace tessera {
namespace arith {
namespace {

bool DefinedBoth(const Expr& a, const Expr& b) { return a.defined() && b.defined(); }

// Interval arithmetic over simplified expressions. Ends are simplified as they are built.
class SetEvaluator {
 public:
  SetEvaluator(const VarIntSetMap& dom, Analyzer* analyzer) : dom_(dom), analyzer_(analyzer) {
    for (const auto& entry : dom) dom_vars_.insert(entry.first.get());
  }

  IntSet Eval(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::kIntImm:
        return IntSet::SinglePoint(e);
      case ExprKind::kVar: {
        auto it = dom_.find(Var(std::static_pointer_cast<const VarNode>(e.node_ptr())));
        return it == dom_.end() ? IntSet::SinglePoint(e) : it->second;
      }
      case ExprKind::kBinary:
        return EvalBinary(e.as<BinaryNode>(), e);
      case ExprKind::kSelect: {
        const auto* op = e.as<SelectNode>();
        if (!UsesDomVar(e)) return IntSet::SinglePoint(e);
        return Union(Eval(op->true_value), Eval(op->false_value), analyzer_);
      }
      case ExprKind::kCast: {
        const auto* op = e.as<CastNode>();
        DataType from = op->value.dtype();
        DataType to = e.dtype();
        bool widening = from.is_integer() && to.is_int() && to.bits() > from.bits();
        if (!UsesDomVar(e)) return IntSet::SinglePoint(e);
        if (!widening && !(from == to)) return IntSet::Everything();
        IntSet v = Eval(op->value);
        return IntSet::Interval(v.HasLowerBound() ? Simp(Cast(to, v.min())) : Expr(),
                                v.HasUpperBound() ? Simp(Cast(to, v.max())) : Expr());
      }
      default:
        return UsesDomVar(e) ? IntSet::Everything() : IntSet::SinglePoint(e);
    }
  }

 private:
  Expr Simp(const Expr& e) { return Simplify(e, analyzer_); }

  bool UsesDomVar(const Expr& e) {
    return UsesVar(e, [this](const VarNode* v) { return dom_vars_.count(v) > 0; });
  }

  // Binary op of two ends; undefined if either is.
  Expr Combine(BinaryOp op, const Expr& a, const Expr& b) {
    return DefinedBoth(a, b) ? Simp(MakeBinary(op, a, b)) : Expr();
  }

  // Interval times a single point `c` whose sign is known.
  IntSet Scale(const IntSet& a, const Expr& c, BinaryOp op) {
    if (analyzer_->CanProveGreaterEqual(c, 0)) {
      return IntSet::Interval(Combine(op, a.min(), c), Combine(op, a.max(), c));
    }
    if (analyzer_->CanProveLessEqual(c, 0) && op == BinaryOp::kMul) {
      return IntSet::Interval(Combine(op, a.max(), c), Combine(op, a.min(), c));
    }
    return IntSet::Everything();
  }

  IntSet EvalBinary(const BinaryNode* op, const Expr& self) {
    if (!UsesDomVar(self)) return IntSet::SinglePoint(self);
    if (BinaryOpIsComparison(op->op) || BinaryOpIsLogical(op->op) || op->a.dtype().is_float()) {
      return IntSet::Everything();
    }
    IntSet a = Eval(op->a);
    IntSet b = Eval(op->b);
    switch (op->op) {
      case BinaryOp::kAdd:
        return IntSet::Interval(Combine(BinaryOp::kAdd, a.min(), b.min()),
                                Combine(BinaryOp::kAdd, a.max(), b.max()));
      case BinaryOp::kSub:
        return IntSet::Interval(Combine(BinaryOp::kSub, a.min(), b.max()),
                                Combine(BinaryOp::kSub, a.max(), b.min()));
      case BinaryOp::kMul:
        if (b.IsSinglePoint()) return Scale(a, b.min(), BinaryOp::kMul);
        if (a.IsSinglePoint()) return Scale(b, a.min(), BinaryOp::kMul);
        return IntSet::Everything();
      case BinaryOp::kDiv:
        if (!a.HasLowerBound() || !analyzer_->CanProveGreaterEqual(a.min(), 0)) {
          return IntSet::Everything();
        }
        [[fallthrough]];
      case BinaryOp::kFloorDiv:
        if (b.IsSinglePoint() && analyzer_->CanProveGreaterEqual(b.min(), 1)) {
          return Scale(a, b.min(), BinaryOp::kFloorDiv);
        }
        return IntSet::Everything();
      case BinaryOp::kFloorMod:
        return EvalFloorMod(a, b);
      case BinaryOp::kMin:
      case BinaryOp::kMax: {
        // The end is undefined (unbounded) where both are; else the defined-or-combined one.
        const bool is_min = op->op == BinaryOp::kMin;
        auto pick = [&](const Expr& x, const Expr& y, bool unbounded_wins) -> Expr {
          if (DefinedBoth(x, y)) return Combine(op->op, x, y);
          if (unbounded_wins) return Expr();
          return x.defined() ? x : y;
        };
        return IntSet::Interval(pick(a.min(), b.min(), is_min), pick(a.max(), b.max(), !is_min));
      }
      default:
        return IntSet::Everything();
    }
  }

  IntSet EvalFloorMod(const IntSet& a, const IntSet& b) {
    if (!b.IsSinglePoint() || !analyzer_->CanProveGreaterEqual(b.min(), 1)) {
      return IntSet::Everything();
    }
    const Expr& c = b.min();
    if (a.IsBounded() && analyzer_->CanProveEqual(FloorDiv(a.min(), c), FloorDiv(a.max(), c))) {
      return IntSet::Interval(Simp(FloorMod(a.min(), c)), Simp(FloorMod(a.max(), c)));
    }
    return IntSet::Interval(IntImm(c.dtype(), 0), Simp(c - 1));
  }

  const VarIntSetMap& dom_;
  std::unordered_set<const VarNode*> dom_vars_;
  Analyzer* analyzer_;
};

// `v in [min, max]` for each bounded domain, as one condition.
Expr DomainCondition(const VarIntSetMap& dom) {
  Expr cond;
  auto conj = [&cond](Expr c) { cond = cond.defined() ? And(cond, c) : c; };
  for (const auto& [var, set] : dom) {
    if (set.HasLowerBound()) conj(GE(var, set.min()));
    if (set.HasUpperBound()) conj(LE(var, set.max()));
  }
  return cond;
}

IntSet EvalSetImpl(const Expr& expr, const VarIntSetMap& dom, Analyzer* analyzer) {
  Expr cond = DomainCondition(dom);
  if (!cond.defined()) return SetEvaluator(dom, analyzer).Eval(Simplify(expr, analyzer));
  Expr simplified;
  {
    ConstraintScope scope = analyzer->EnterConstraint(cond);
    simplified = Simplify(expr, analyzer);
  }
  return SetEvaluator(dom, analyzer).Eval(simplified);
}

VarIntSetMap ToIntSets(const VarRangeMap& dom, Analyzer* analyzer) {
  VarIntSetMap sets;
  for (const auto& [var, range] : dom) sets.emplace(var, IntSet::FromRange(range, analyzer));
  return sets;
}

// Collects accesses while walking a statement, with the loops entered so far as domains.
class AccessCollector : public IRVisitor {
 public:
  AccessCollector(const VarRangeMap& relax, Analyzer* analyzer, const std::vector<Buffer>& exclude,
                  const std::vector<Buffer>& only = {})
      : analyzer_(analyzer), exclude_(exclude), only_(only) {
    dom_ = ToIntSets(relax, analyzer);
  }

  BufferAccessRegions result;

 protected:
  void VisitExpr_(const BufferLoadNode* op) override {
    if (Wanted(op->buffer)) Record(op->buffer, Relax(op->buffer, op->indices), &result.reads);
    IRVisitor::VisitExpr_(op);
  }

  void VisitStmt_(const BufferStoreNode* op) override {
    IRVisitor::VisitStmt_(op);  // value and indices: reads
    if (Wanted(op->buffer)) Record(op->buffer, Relax(op->buffer, op->indices), &result.writes);
  }

  void VisitStmt_(const ForNode* op) override {
    VisitExpr(op->extent);
    dom_[op->loop_var] =
        IntSet::FromRange(Range{IntImm(op->extent.dtype(), 0), op->extent}, analyzer_);
    VisitStmt(op->body);
    dom_.erase(op->loop_var);
  }

  void VisitStmt_(const AllocateNode* op) override {
    exclude_.push_back(op->buffer);
    VisitStmt(op->body);
    exclude_.pop_back();
  }

  void VisitStmt_(const BlockRealizeNode* op) override {
    const BlockNode* block = op->block.get();
    VarMap binding;
    for (size_t i = 0; i < block->iter_vars.size() && i < op->iter_values.size(); ++i) {
      binding[block->iter_vars[i].var] = op->iter_values[i];
    }
    for (const auto* list : {&block->reads, &block->writes}) {
      for (const BufferRegion& region : *list) {
        if (!Wanted(region.buffer)) continue;
        std::vector<Range> ranges;
        for (size_t d = 0; d < region.region.size(); ++d) {
          const Range& r = region.region[d];
          Expr min = Substitute(r.min, binding);
          Expr last = Substitute(r.min + r.extent - 1, binding);
          IntSet lo = EvalSetImpl(min, dom_, analyzer_);
          IntSet hi = EvalSetImpl(last, dom_, analyzer_);
          ranges.push_back(ToRangeOrFull(IntSet::Interval(lo.min(), hi.max()), region.buffer, d));
        }
        Record(region.buffer, std::move(ranges),
               list == &block->reads ? &result.reads : &result.writes);
      }
    }
  }

 private:
  bool Wanted(const Buffer& buffer) const {
    if (only_.empty()) return true;
    for (const Buffer& b : only_) {
      if (b.same_as(buffer)) return true;
    }
    return false;
  }

  Range ToRangeOrFull(const IntSet& set, const Buffer& buffer, size_t dim) {
    if (set.IsBounded()) return set.ToRange(analyzer_);
    return Range{IntImm(DataType::Index(), 0), buffer.shape()[dim]};
  }

  std::vector<Range> Relax(const Buffer& buffer, const std::vector<Expr>& indices) {
    std::vector<Range> ranges;
    for (size_t d = 0; d < indices.size(); ++d) {
      ranges.push_back(ToRangeOrFull(EvalSetImpl(indices[d], dom_, analyzer_), buffer, d));
    }
    return ranges;
  }

  void Record(const Buffer& buffer, std::vector<Range> ranges, std::vector<BufferRegion>* list) {
    for (const Buffer& b : exclude_) {
      if (b.same_as(buffer)) return;
    }
    for (BufferRegion& region : *list) {
      if (region.buffer.same_as(buffer)) {
        region.region = UnionRegion(region.region, ranges, analyzer_);
        return;
      }
    }
    list->push_back(BufferRegion{buffer, std::move(ranges)});
  }

  VarIntSetMap dom_;
  Analyzer* analyzer_;
  std::vector<Buffer> exclude_;
  std::vector<Buffer> only_;
};

}  // namespace

IntSet IntSet::Interval(Expr min, Expr max) {
  IntSet set;
  set.min_ = std::move(min);
  set.max_ = std::move(max);
  return set;
}

IntSet IntSet::FromRange(const Range& range, Analyzer* analyzer) {
  Expr min = Simplify(range.min, analyzer);
  return Interval(min, Simplify(range.min + range.extent - 1, analyzer));
}

bool IntSet::IsSinglePoint() const { return IsBounded() && ExprDeepEqual(min_, max_); }

Range IntSet::ToRange(Analyzer* analyzer) const {
  TESSERA_CHECK(IsBounded()) << "IntSet::ToRange of an unbounded set";
  return Range{min_, Simplify(max_ - min_ + 1, analyzer)};
}

IntSet EvalSet(const Expr& expr, const VarIntSetMap& dom, Analyzer* analyzer) {
  if (analyzer == nullptr) {
    Analyzer local;
    return EvalSetImpl(expr, dom, &local);
  }
  return EvalSetImpl(expr, dom, analyzer);
}

IntSet EvalSet(const Expr& expr, const VarRangeMap& dom, Analyzer* analyzer) {
  Analyzer local;
  Analyzer* a = analyzer != nullptr ? analyzer : &local;
  return EvalSetImpl(expr, ToIntSets(dom, a), a);
}

IntSet Union(const IntSet& a, const IntSet& b, Analyzer* analyzer) {
  auto hull = [analyzer](BinaryOp op, const Expr& x, const Expr& y) {
    return DefinedBoth(x, y) ? Simplify(MakeBinary(op, x, y), analyzer) : Expr();
  };
  return IntSet::Interval(hull(BinaryOp::kMin, a.min(), b.min()),
                          hull(BinaryOp::kMax, a.max(), b.max()));
}

absl::StatusOr<std::vector<Range>> EvalRegion(const std::vector<Expr>& indices,
                                              const VarRangeMap& dom, Analyzer* analyzer) {
  Analyzer local;
  Analyzer* a = analyzer != nullptr ? analyzer : &local;
  VarIntSetMap sets = ToIntSets(dom, a);
  std::vector<Range> region;
  for (size_t d = 0; d < indices.size(); ++d) {
    IntSet set = EvalSetImpl(indices[d], sets, a);
    if (!set.IsBounded()) {
      return absl::InvalidArgumentError(
          absl::StrCat("eval region: index ", d, " of ", indices.size(),
                       " has no finite bound over the given domains"));
    }
    region.push_back(set.ToRange(a));
  }
  return region;
}

std::vector<Range> UnionRegion(const std::vector<Range>& a, const std::vector<Range>& b,
                               Analyzer* analyzer) {
  TESSERA_CHECK_EQ(a.size(), b.size()) << "union of regions of different rank";
  std::vector<Range> out;
  for (size_t d = 0; d < a.size(); ++d) {
    IntSet x = IntSet::FromRange(a[d], analyzer);
    IntSet y = IntSet::FromRange(b[d], analyzer);
    out.push_back(Union(x, y, analyzer).ToRange(analyzer));
  }
  return out;
}

BufferAccessRegions DetectBufferAccessRegions(const Stmt& stmt, const VarRangeMap& relax,
                                              Analyzer* analyzer,
                                              const std::vector<Buffer>& exclude,
                                              const std::vector<Buffer>& only) {
  Analyzer local;
  AccessCollector collector(relax, analyzer != nullptr ? analyzer : &local, exclude, only);
  collector.VisitStmt(stmt);
  return std::move(collector.result);
}

BufferAccessRegions DetectBlockAccessRegions(const Block& block, Analyzer* analyzer) {
  Analyzer local;
  AccessCollector collector({}, analyzer != nullptr ? analyzer : &local, block->alloc_buffers);
  if (block->init.defined()) collector.VisitStmt(block->init);
  collector.VisitStmt(block->body);
  return std::move(collector.result);
}

}  // namespace arith
}  // namespace tessera
