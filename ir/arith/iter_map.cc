// Iteration-map detection: rewrite each index into an IterSumExpr (affine in splits of marks),
// fuse each index into a single split, then check that the splits used on every mark tile it
// without overlap (and, for bijective maps, cover it and every input iterator).
#include "ir/arith/iter_map.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/arith/simplify.h"
#include "ir/functor.h"

namespace tessera {
namespace arith {
namespace {

absl::Status Error(const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat("iter map: ", message));
}

std::string SplitName(const IterSplitExpr& split) {
  std::string s = IterMarkName(split.source);
  if (split.lower_factor != 1) s = absl::StrCat("floordiv(", s, ", ", split.lower_factor, ")");
  if (split.lower_factor * split.extent != split.source->extent) {
    s = absl::StrCat("floormod(", s, ", ", split.extent, ")");
  }
  if (split.scale != 1) s = absl::StrCat(s, "*", split.scale);
  return s;
}

bool SameSplit(const IterSplitExpr& a, const IterSplitExpr& b) {
  return a.source == b.source && a.lower_factor == b.lower_factor && a.extent == b.extent &&
         a.scale == b.scale;
}

class IterMapRewriter {
 public:
  IterMapRewriter(const VarRangeMap& input_iters, Analyzer* analyzer) : analyzer_(analyzer) {
    for (const auto& [var, range] : input_iters) analyzer_->Bind(var, range);
  }

  absl::Status Init(const VarRangeMap& input_iters) {
    // Deterministic order of input marks: by name, then by declaration order in the map is not
    // stable, so names decide (ties keep map order, which only affects error wording).
    std::vector<Var> vars;
    for (const auto& entry : input_iters) vars.push_back(entry.first);
    std::stable_sort(vars.begin(), vars.end(),
                     [](const Var& a, const Var& b) { return a.name() < b.name(); });
    for (const Var& var : vars) {
      const Range& range = input_iters.at(var);
      if (!analyzer_->CanProveEqual(range.min, 0)) {
        return Error(absl::StrCat("iterator ", var.name(), " does not start at 0"));
      }
      const std::optional<int64_t> extent = ConstValue(range.extent);
      if (!extent || *extent <= 0) {
        return Error(absl::StrCat("iterator ", var.name(), " needs a constant positive extent"));
      }
      auto mark = std::make_shared<IterMarkNode>();
      mark->var = var;
      mark->extent = *extent;
      input_marks_[var] = mark;
      input_order_.push_back(mark);
    }
    return absl::OkStatus();
  }

  // Applies `predicate` conjuncts of the form `iterator expression < constant`.
  absl::Status ApplyPredicate(const Expr& predicate) {
    if (!predicate.defined() || IsConstInt(predicate, 1)) return absl::OkStatus();
    const auto* op = predicate.as<BinaryNode>();
    if (op != nullptr && op->op == BinaryOp::kAnd) {
      TESSERA_RETURN_IF_ERROR(ApplyPredicate(op->a));
      return ApplyPredicate(op->b);
    }
    if (op == nullptr || (op->op != BinaryOp::kLT && op->op != BinaryOp::kLE)) {
      return Error("unsupported predicate: only conjunctions of `expr < constant` are handled");
    }
    const std::optional<int64_t> bound = ConstValue(op->b);
    if (!bound) return Error("predicate bound is not a constant");
    int64_t limit = *bound + (op->op == BinaryOp::kLE ? 1 : 0);
    TESSERA_ASSIGN_OR_RETURN(IterSumExpr sum, Rewrite(op->a));
    TESSERA_ASSIGN_OR_RETURN(sum, Fuse(sum, "predicate"));
    const std::optional<int64_t> base = ConstValue(sum.base);
    if (sum.args.size() != 1 || !base || sum.args[0].scale != 1 || sum.args[0].lower_factor != 1 ||
        sum.args[0].extent != sum.args[0].source->extent) {
      return Error("predicate must bound a whole (fused) iterator");
    }
    const IterMark& mark = sum.args[0].source;
    int64_t extent = limit - *base;
    if (extent <= 0) return Error("predicate leaves an empty domain");
    if (extent >= mark->extent) return absl::OkStatus();  // no restriction
    auto constrained = std::make_shared<IterMarkNode>(*mark);
    constrained->extent = extent;
    Replace(mark, constrained);
    return absl::OkStatus();
  }

  // Rewrites an index expression into a sum of splits.
  absl::StatusOr<IterSumExpr> Rewrite(const Expr& e) {
    if (!UsesInputIter(e)) return IterSumExpr{{}, e};
    if (e.as<VarNode>() != nullptr) {
      const IterMark& mark =
          input_marks_.at(Var(std::static_pointer_cast<const VarNode>(e.node_ptr())));
      if (mark->extent == 1) return IterSumExpr{{}, Expr(0)};
      return IterSumExpr{{IterSplitExpr{mark, 1, mark->extent, 1}}, Expr(0)};
    }
    const auto* op = e.as<BinaryNode>();
    if (op == nullptr || !e.dtype().is_int()) {
      return Error("only + - * floordiv floormod of integer iterators are affine");
    }
    switch (op->op) {
      case BinaryOp::kAdd:
      case BinaryOp::kSub: {
        TESSERA_ASSIGN_OR_RETURN(IterSumExpr a, Rewrite(op->a));
        TESSERA_ASSIGN_OR_RETURN(IterSumExpr b, Rewrite(op->b));
        int64_t sign = op->op == BinaryOp::kAdd ? 1 : -1;
        for (IterSplitExpr split : b.args) {
          split.scale *= sign;
          AddSplit(split, &a);
        }
        a.base = MakeBinary(op->op, a.base, b.base);
        return a;
      }
      case BinaryOp::kMul: {
        bool a_iter = UsesInputIter(op->a);
        bool b_iter = UsesInputIter(op->b);
        if (a_iter && b_iter) return Error("product of two iterator expressions is not affine");
        const Expr& scale_expr = a_iter ? op->b : op->a;
        const std::optional<int64_t> scale = ConstValue(scale_expr);
        if (!scale) return Error("iterator scaled by a non-constant");
        TESSERA_ASSIGN_OR_RETURN(IterSumExpr sum, Rewrite(a_iter ? op->a : op->b));
        IterSumExpr out{{}, sum.base * *scale};
        for (IterSplitExpr split : sum.args) {
          split.scale *= *scale;
          AddSplit(split, &out);
        }
        return out;
      }
      case BinaryOp::kFloorDiv:
      case BinaryOp::kFloorMod: {
        if (UsesInputIter(op->b)) return Error("division by an iterator expression");
        const std::optional<int64_t> c = ConstValue(op->b);
        if (!c || *c <= 0) return Error("division by a non-constant or non-positive");
        TESSERA_ASSIGN_OR_RETURN(IterSumExpr sum, Rewrite(op->a));
        TESSERA_ASSIGN_OR_RETURN(
            sum, Fuse(sum, op->op == BinaryOp::kFloorDiv ? "floordiv" : "floormod"));
        return op->op == BinaryOp::kFloorDiv ? SplitDiv(sum, *c) : SplitMod(sum, *c);
      }
      default:
        return Error(
            absl::StrCat("operation ", BinaryOpName(op->op), " on iterators is not affine"));
    }
  }

  // Turns a sum into a single split (creating or reusing a fused mark) plus base.
  absl::StatusOr<IterSumExpr> Fuse(const IterSumExpr& sum, const std::string& where) {
    if (sum.args.size() <= 1) return sum;
    int64_t base_scale = sum.args[0].scale;
    for (const IterSplitExpr& split : sum.args) {
      if (split.scale <= 0) {
        return Error(absl::StrCat(where, ": ", SplitName(split), " has a non-positive scale"));
      }
      base_scale = std::min(base_scale, split.scale);
    }
    // Innermost first: each next split's scale is the previous scale times its extent.
    std::vector<IterSplitExpr> inner_first;
    std::vector<bool> used(sum.args.size(), false);
    int64_t expected = base_scale;
    for (size_t n = 0; n < sum.args.size(); ++n) {
      int found = -1;
      for (size_t i = 0; i < sum.args.size(); ++i) {
        if (used[i] || sum.args[i].scale != expected) continue;
        if (found >= 0) {
          return Error(absl::StrCat(where, ": ", SplitName(sum.args[found]), " and ",
                                    SplitName(sum.args[i]), " have the same scale and overlap"));
        }
        found = static_cast<int>(i);
      }
      if (found < 0) {
        return Error(absl::StrCat(where, ": no iterator has scale ", expected,
                                  "; the terms overlap or leave gaps, so they do not fuse"));
      }
      used[found] = true;
      inner_first.push_back(sum.args[found]);
      expected *= sum.args[found].extent;
    }
    const int64_t extent = expected / base_scale;
    // Contiguous splits of one mark collapse into one split of it.
    bool same_mark = true;
    for (size_t i = 1; i < inner_first.size(); ++i) {
      const IterSplitExpr& prev = inner_first[i - 1];
      same_mark = same_mark && inner_first[i].source == prev.source &&
                  inner_first[i].lower_factor == prev.lower_factor * prev.extent;
    }
    if (same_mark) {
      const IterSplitExpr& inner = inner_first[0];
      return IterSumExpr{{IterSplitExpr{inner.source, inner.lower_factor, extent, base_scale}},
                         sum.base};
    }
    IterSumExpr fused{{}, Expr(0)};
    for (auto it = inner_first.rbegin(); it != inner_first.rend(); ++it) {
      IterSplitExpr split = *it;
      split.scale /= base_scale;
      fused.args.push_back(split);
    }
    IterMark mark = FindOrMakeFused(fused, extent);
    return IterSumExpr{{IterSplitExpr{mark, 1, mark->extent, base_scale}}, sum.base};
  }

  // Checks that the splits used on each mark tile it without overlap (and cover it, for
  // bijective maps).
  absl::Status CheckMapping(const std::vector<IterSumExpr>& sums, IterMapLevel level) {
    std::vector<IterMark> order;
    std::unordered_map<const IterMarkNode*, std::vector<IterSplitExpr>> uses;
    std::vector<IterSplitExpr> pending;
    for (const IterSumExpr& sum : sums)
      pending.insert(pending.end(), sum.args.begin(), sum.args.end());
    for (size_t i = 0; i < pending.size(); ++i) {
      IterSplitExpr split = pending[i];
      auto [it, inserted] = uses.try_emplace(split.source.get());
      if (inserted) {
        order.push_back(split.source);
        const IterSumExpr& inner = split.source->sum;
        pending.insert(pending.end(), inner.args.begin(), inner.args.end());
      }
      it->second.push_back(split);
    }
    for (const IterMark& mark : order) {
      std::vector<IterSplitExpr>& list = uses[mark.get()];
      std::sort(list.begin(), list.end(), [](const IterSplitExpr& a, const IterSplitExpr& b) {
        return a.lower_factor < b.lower_factor;
      });
      int64_t covered = 1;  // Product of lower factor and extent of the splits so far.
      for (const IterSplitExpr& split : list) {
        bool ok = level == IterMapLevel::kBijective ? split.lower_factor == covered
                                                    : split.lower_factor % covered == 0;
        if (!ok) {
          return Error(absl::StrCat("iterator ", IterMarkName(mark), " is ",
                                    split.lower_factor < covered
                                        ? "used more than once (overlapping splits)"
                                        : "not fully used (a split leaves a gap)"));
        }
        covered = split.lower_factor * split.extent;
      }
      bool complete =
          level == IterMapLevel::kBijective ? covered == mark->extent : mark->extent % covered == 0;
      if (!complete) {
        return Error(absl::StrCat("splits of iterator ", IterMarkName(mark), " cover ", covered,
                                  " of its extent ", mark->extent));
      }
    }
    if (level == IterMapLevel::kBijective) {
      for (const IterMark& mark : input_order_) {
        if (mark->extent > 1 && uses.count(mark.get()) == 0) {
          return Error(absl::StrCat("iterator ", mark->var.name(),
                                    " is not used, so the map is not bijective"));
        }
      }
    }
    return absl::OkStatus();
  }

  Expr SimplifyBase(const Expr& base) { return analyzer_->Simplify(base); }

 private:
  bool UsesInputIter(const Expr& e) const {
    return UsesVar(e, [this](const VarNode* v) {
      for (const IterMark& mark : input_order_) {
        if (mark->var.get() == v) return true;
      }
      return false;
    });
  }

  // Adds a split to a sum, merging it with an equal split of the same mark.
  static void AddSplit(const IterSplitExpr& split, IterSumExpr* sum) {
    for (auto it = sum->args.begin(); it != sum->args.end(); ++it) {
      if (it->source == split.source && it->lower_factor == split.lower_factor &&
          it->extent == split.extent) {
        it->scale += split.scale;
        if (it->scale == 0) sum->args.erase(it);
        return;
      }
    }
    if (split.scale != 0) sum->args.push_back(split);
  }

  // floordiv(split * scale + base, c) for a fused (single-split) sum.
  absl::StatusOr<IterSumExpr> SplitDiv(const IterSumExpr& sum, int64_t c) {
    if (sum.args.empty()) return IterSumExpr{{}, FloorDiv(sum.base, c)};
    IterSplitExpr split = sum.args[0];
    if (split.scale <= 0) return Error(absl::StrCat("floordiv of a negatively scaled iterator"));
    if (split.scale % c == 0) {
      split.scale /= c;
      return IterSumExpr{{split}, FloorDiv(sum.base, c)};
    }
    TESSERA_ASSIGN_OR_RETURN(int64_t base, ConstBaseMultipleOf(sum.base, c, "floordiv"));
    if (c % split.scale != 0) {
      return Error(absl::StrCat("floordiv by ", c, " does not align with ", SplitName(split)));
    }
    int64_t n = c / split.scale;
    if (split.extent % n != 0) {
      return Error(absl::StrCat("floordiv by ", c, ": extent ", split.extent, " of ",
                                SplitName(split), " is not divisible by ", n));
    }
    IterSumExpr out{{}, Expr(base / c)};
    if (split.extent / n > 1) {
      out.args.push_back(IterSplitExpr{split.source, split.lower_factor * n, split.extent / n, 1});
    }
    return out;
  }

  // floormod(split * scale + base, c) for a fused (single-split) sum.
  absl::StatusOr<IterSumExpr> SplitMod(const IterSumExpr& sum, int64_t c) {
    if (sum.args.empty()) return IterSumExpr{{}, FloorMod(sum.base, c)};
    IterSplitExpr split = sum.args[0];
    if (split.scale <= 0) return Error(absl::StrCat("floormod of a negatively scaled iterator"));
    if (split.scale % c == 0) return IterSumExpr{{}, FloorMod(sum.base, c)};
    TESSERA_RETURN_IF_ERROR(ConstBaseMultipleOf(sum.base, c, "floormod").status());
    if (c % split.scale != 0) {
      return Error(absl::StrCat("floormod by ", c, " does not align with ", SplitName(split)));
    }
    int64_t n = c / split.scale;
    if (split.extent % n != 0) {
      return Error(absl::StrCat("floormod by ", c, ": extent ", split.extent, " of ",
                                SplitName(split), " is not divisible by ", n));
    }
    return IterSumExpr{{IterSplitExpr{split.source, split.lower_factor, n, split.scale}}, Expr(0)};
  }

  // The value of `e` after simplification if that is a constant. (Not a pointer from
  // AsConstInt: it would point into the temporary simplified expression.)
  std::optional<int64_t> ConstValue(const Expr& e) {
    const Expr simplified = analyzer_->Simplify(e);
    const int64_t* v = AsConstInt(simplified);
    return v == nullptr ? std::nullopt : std::optional<int64_t>(*v);
  }

  absl::StatusOr<int64_t> ConstBaseMultipleOf(const Expr& base, int64_t c, const char* op) {
    const std::optional<int64_t> v = ConstValue(base);
    if (!v || *v % c != 0) {
      return Error(absl::StrCat(op, " by ", c,
                                " of an iterator plus an offset that is not a "
                                "constant multiple of ",
                                c));
    }
    return *v;
  }

  IterMark FindOrMakeFused(const IterSumExpr& fused, int64_t extent) {
    for (const IterMark& mark : fused_marks_) {
      const IterSumExpr& s = mark->sum;
      if (s.args.size() != fused.args.size()) continue;
      bool same = true;
      for (size_t i = 0; i < s.args.size() && same; ++i) same = SameSplit(s.args[i], fused.args[i]);
      if (same) return mark;
    }
    auto mark = std::make_shared<IterMarkNode>();
    mark->sum = fused;
    mark->extent = extent;
    fused_marks_.push_back(mark);
    return mark;
  }

  // Swaps a mark for its predicate-constrained version wherever the rewriter keeps it.
  void Replace(const IterMark& old_mark, const IterMark& new_mark) {
    for (IterMark& mark : fused_marks_) {
      if (mark == old_mark) mark = new_mark;
    }
    for (IterMark& mark : input_order_) {
      if (mark == old_mark) mark = new_mark;
    }
    for (auto& entry : input_marks_) {
      if (entry.second == old_mark) entry.second = new_mark;
    }
  }

  Analyzer* analyzer_;
  std::unordered_map<Var, IterMark, VarIdentityHash, VarIdentityEqual> input_marks_;
  std::vector<IterMark> input_order_;
  std::vector<IterMark> fused_marks_;
};

}  // namespace

absl::StatusOr<std::vector<IterSumExpr>> DetectIterMap(const std::vector<Expr>& indices,
                                                       const VarRangeMap& input_iters,
                                                       const Expr& predicate, IterMapLevel level,
                                                       Analyzer* analyzer) {
  Analyzer local;
  IterMapRewriter rewriter(input_iters, analyzer != nullptr ? analyzer : &local);
  TESSERA_RETURN_IF_ERROR(rewriter.Init(input_iters));
  TESSERA_RETURN_IF_ERROR(rewriter.ApplyPredicate(predicate));
  std::vector<IterSumExpr> sums;
  for (size_t i = 0; i < indices.size(); ++i) {
    const std::string where = absl::StrCat("index ", i);
    absl::StatusOr<IterSumExpr> sum = rewriter.Rewrite(indices[i]);
    if (sum.ok()) sum = rewriter.Fuse(*sum, where);
    if (!sum.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(sum.status().message(), " (", where, ")"));
    }
    sum->base = rewriter.SimplifyBase(sum->base);
    sums.push_back(std::move(*sum));
  }
  TESSERA_RETURN_IF_ERROR(rewriter.CheckMapping(sums, level));
  return sums;
}

std::vector<Expr> IterMapSimplify(const std::vector<Expr>& indices, const VarRangeMap& input_iters,
                                  const Expr& predicate, IterMapLevel level, Analyzer* analyzer) {
  Analyzer local;
  Analyzer* a = analyzer != nullptr ? analyzer : &local;
  a->Bind(input_iters);
  absl::StatusOr<std::vector<IterSumExpr>> sums =
      DetectIterMap(indices, input_iters, predicate, level, a);
  std::vector<Expr> out;
  for (size_t i = 0; i < indices.size(); ++i) {
    out.push_back(a->Simplify(sums.ok() ? IterSumToExpr((*sums)[i]) : indices[i]));
  }
  return out;
}

Expr IterMarkToExpr(const IterMark& mark) {
  return mark->is_input() ? Expr(mark->var) : IterSumToExpr(mark->sum);
}

Expr IterSplitToExpr(const IterSplitExpr& split) {
  Expr e = IterMarkToExpr(split.source);
  if (split.lower_factor != 1) e = FloorDiv(e, split.lower_factor);
  if (split.lower_factor * split.extent != split.source->extent) e = FloorMod(e, split.extent);
  if (split.scale != 1) e = e * split.scale;
  return e;
}

Expr IterSumToExpr(const IterSumExpr& sum) {
  Expr e;
  for (const IterSplitExpr& split : sum.args) {
    Expr term = IterSplitToExpr(split);
    e = e.defined() ? e + term : term;
  }
  Expr base = sum.base.defined() ? sum.base : Expr(0);
  if (!e.defined()) return base;
  return IsConstInt(base, 0) ? e : e + base;
}

std::string IterMarkName(const IterMark& mark) {
  if (mark->is_input()) return mark->var.name();
  std::string s = "(";
  for (size_t i = 0; i < mark->sum.args.size(); ++i) {
    absl::StrAppend(&s, i > 0 ? " + " : "", SplitName(mark->sum.args[i]));
  }
  return absl::StrCat(s, ")");
}

}  // namespace arith
}  // namespace tessera
