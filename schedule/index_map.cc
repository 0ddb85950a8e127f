#include "schedule/index_map.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "ir/arith/int_set.h"
#include "ir/arith/iter_map.h"
#include "ir/functor.h"
#include "ir/printer.h"

namespace tessera {
namespace {

// The deepest an index map's expressions may nest: nodes on a root-to-leaf path of a final
// index, and parentheses, unary minus and calls in the text. Every walk over an expression
// (parsing, validation, printing, simplification, substitution, destruction) recurses a few
// frames per level, so this bound keeps hostile input an error long before any walk could
// exhaust an 8 MB stack in any build (sanitizers and -O0 included); real maps nest a few levels.
constexpr int kMaxExprDepth = 64;

// Whether an expression nests deeper than `limit` nodes; the walk stops at the limit, so its own
// recursion is bounded whatever the expression.
class DepthExceeds : public IRVisitor {
 public:
  static bool Check(const Expr& e, int limit) {
    DepthExceeds visitor(limit);
    visitor.VisitExpr(e);
    return visitor.exceeded_;
  }

  void VisitExpr(const Expr& e) override {
    if (exceeded_) return;
    if (++depth_ > limit_) {
      exceeded_ = true;
    } else {
      IRVisitor::VisitExpr(e);
    }
    --depth_;
  }

 private:
  explicit DepthExceeds(int limit) : limit_(limit) {}
  int limit_;
  int depth_ = 0;
  bool exceeded_ = false;
};

const char* const kReserved[] = {"lambda", "floordiv", "floormod", "min", "max"};

bool IsReserved(const std::string& name) {
  return std::find(std::begin(kReserved), std::end(kReserved), name) != std::end(kReserved);
}

// Function-style binary operators of the text form.
bool FunctionOp(const std::string& name, BinaryOp* op) {
  static const std::map<std::string, BinaryOp> kOps = {{"floordiv", BinaryOp::kFloorDiv},
                                                       {"floormod", BinaryOp::kFloorMod},
                                                       {"min", BinaryOp::kMin},
                                                       {"max", BinaryOp::kMax}};
  auto it = kOps.find(name);
  if (it == kOps.end()) return false;
  *op = it->second;
  return true;
}

// Checks that `e` is int64 index arithmetic over `vars` (by identity).
absl::Status CheckIndexExpr(const Expr& e, const std::set<const VarNode*>& vars, size_t k) {
  absl::Status status;
  PostOrderVisitExprs(e, [&](const Expr& sub) {
    if (!status.ok()) return;
    if (sub.dtype() != DataType::Index()) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "index map: final index ", k, " (", PrintExpr(e), ") has a subexpression of type ",
          sub.dtype().ToString(), "; index maps use int64 index arithmetic"));
      return;
    }
    switch (sub.kind()) {
      case ExprKind::kIntImm:
        return;
      case ExprKind::kVar:
        if (!vars.count(sub.as<VarNode>())) {
          status = absl::InvalidArgumentError(
              absl::StrCat("index map: final index ", k, " uses variable ", sub.as<VarNode>()->name,
                           ", which is not an initial index"));
        }
        return;
      case ExprKind::kBinary:
        switch (sub.as<BinaryNode>()->op) {
          case BinaryOp::kAdd:
          case BinaryOp::kSub:
          case BinaryOp::kMul:
          case BinaryOp::kFloorDiv:
          case BinaryOp::kFloorMod:
          case BinaryOp::kMin:
          case BinaryOp::kMax:
            return;
          default:
            break;
        }
        break;
      default:
        break;
    }
    status =
        absl::InvalidArgumentError(absl::StrCat("index map: final index ", k, " (", PrintExpr(e),
                                                ") is not index arithmetic (allowed: integers, "
                                                "variables, + - * floordiv floormod min max)"));
  });
  return status;
}

// ---- Text form: printing ---------------------------------------------------------------

class MapPrinter {
 public:
  // Unique identifiers for the variables, derived from their names.
  explicit MapPrinter(const std::vector<Var>& vars) {
    std::set<std::string> used;
    for (const Var& v : vars) {
      std::string base;
      for (char c : v.name())
        base += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
      if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "v" + base;
      if (IsReserved(base)) base += "_";
      std::string name = base;
      for (int i = 1; used.count(name); ++i) name = absl::StrCat(base, "_", i);
      used.insert(name);
      names_[v.get()] = name;
    }
  }

  const std::string& Name(const Var& v) const { return names_.at(v.get()); }

  // Precedence: 1 sums, 2 products, 3 atoms; parenthesized when below `min_prec`.
  std::string Print(const Expr& e, int min_prec) const {
    int prec = 3;
    std::string out;
    if (const int64_t* v = AsConstInt(e)) {
      out = absl::StrCat(*v);
    } else if (const auto* var = e.as<VarNode>()) {
      out = names_.at(var);
    } else {
      const auto* op = e.as<BinaryNode>();
      TESSERA_CHECK(op != nullptr) << "index map expressions are validated on construction";
      switch (op->op) {
        case BinaryOp::kAdd:
        case BinaryOp::kSub:
          prec = 1;
          out = absl::StrCat(Print(op->a, 1), op->op == BinaryOp::kAdd ? " + " : " - ",
                             Print(op->b, 2));
          break;
        case BinaryOp::kMul:
          prec = 2;
          out = absl::StrCat(Print(op->a, 2), " * ", Print(op->b, 3));
          break;
        default:
          out =
              absl::StrCat(BinaryOpName(op->op), "(", Print(op->a, 1), ", ", Print(op->b, 1), ")");
      }
    }
    return prec < min_prec ? absl::StrCat("(", out, ")") : out;
  }

 private:
  std::unordered_map<const VarNode*, std::string> names_;
};

// ---- Text form: parsing ----------------------------------------------------------------

struct Token {
  enum Kind { kIdent, kInt, kPunct, kEnd } kind;
  std::string text;
  size_t column;  // 1-based
};

class MapParser {
 public:
  explicit MapParser(const std::string& text) : text_(text) {}

  absl::StatusOr<IndexMap> Parse() {
    TESSERA_RETURN_IF_ERROR(Tokenize());
    if (!(Peek().kind == Token::kIdent && Peek().text == "lambda")) {
      return Error(Peek(), "'lambda'");
    }
    ++pos_;
    std::vector<Var> vars;
    while (true) {
      const Token& t = Peek();
      if (t.kind != Token::kIdent || IsReserved(t.text)) return Error(t, "an index variable name");
      if (vars_.count(t.text)) {
        return absl::InvalidArgumentError(
            absl::StrCat("index map: column ", t.column, ": variable ", t.text, " is repeated"));
      }
      vars.push_back(Var(t.text));
      vars_[t.text] = vars.back();
      ++pos_;
      if (Accept(",")) {
        if (Peek().text == ":") break;
        continue;
      }
      break;
    }
    TESSERA_RETURN_IF_ERROR(Expect(":"));
    // A parenthesized tuple covering the rest, else a bare list of expressions.
    const size_t body = pos_;
    std::vector<Expr> finals;
    bool tuple = false;
    if (Accept("(")) {
      absl::StatusOr<std::vector<Expr>> list = ParseList(")");
      if (list.ok() && Accept(")") && Peek().kind == Token::kEnd) {
        finals = std::move(*list);
        tuple = true;
      }
    }
    if (!tuple) {
      pos_ = body;
      TESSERA_ASSIGN_OR_RETURN(finals, ParseList(""));
    }
    if (Peek().kind != Token::kEnd) return Error(Peek(), "',' or the end of the map");
    return IndexMap::Make(std::move(vars), std::move(finals));
  }

 private:
  absl::Status Tokenize() {
    size_t i = 0;
    while (i < text_.size()) {
      const char c = text_[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t j = i;
        while (j < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[j])) || text_[j] == '_')) {
          ++j;
        }
        tokens_.push_back({Token::kIdent, text_.substr(i, j - i), i + 1});
        i = j;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t j = i;
        while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j]))) ++j;
        if (j - i > 18) {
          return absl::InvalidArgumentError(
              absl::StrCat("index map: column ", i + 1, ": integer literal is too large"));
        }
        tokens_.push_back({Token::kInt, text_.substr(i, j - i), i + 1});
        i = j;
      } else if (c == '/' && i + 1 < text_.size() && text_[i + 1] == '/') {
        tokens_.push_back({Token::kPunct, "//", i + 1});
        i += 2;
      } else if (std::string("(),:+-*%").find(c) != std::string::npos) {
        tokens_.push_back({Token::kPunct, std::string(1, c), i + 1});
        ++i;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "index map: column ", i + 1, ": unexpected character '", std::string(1, c), "'"));
      }
    }
    tokens_.push_back({Token::kEnd, "", text_.size() + 1});
    return absl::OkStatus();
  }

  const Token& Peek() const { return tokens_[pos_]; }
  bool Accept(const char* punct) {
    if (Peek().kind == Token::kPunct && Peek().text == punct) {
      ++pos_;
      return true;
    }
    return false;
  }
  absl::Status Expect(const char* punct) {
    if (Accept(punct)) return absl::OkStatus();
    return Error(Peek(), absl::StrCat("'", punct, "'"));
  }
  static absl::Status Error(const Token& t, const std::string& expected) {
    std::string found =
        t.kind == Token::kEnd ? "the end of the text" : absl::StrCat("'", t.text, "'");
    return absl::InvalidArgumentError(
        absl::StrCat("index map: column ", t.column, ": expected ", expected, ", found ", found));
  }

  // An expression with its depth (the nodes on its longest root-to-leaf path).
  struct Parsed {
    Expr expr;
    int depth;
  };

  static absl::Status TooDeep(const Token& at) {
    return absl::InvalidArgumentError(absl::StrCat(
        "index map: column ", at.column, ": expressions nest too deeply (the limit is ",
        kMaxExprDepth, " levels of operators, parentheses and calls)"));
  }

  // `a op b`, rejected (at token `at`) if it would nest deeper than kMaxExprDepth. Bounding the
  // tree as it grows also bounds the recursion of destroying it on an error.
  static absl::StatusOr<Parsed> Combine(const Token& at, BinaryOp op, const Parsed& a,
                                        const Parsed& b) {
    const int depth = 1 + std::max(a.depth, b.depth);
    if (depth > kMaxExprDepth) return TooDeep(at);
    return Parsed{MakeBinary(op, a.expr, b.expr), depth};
  }

  // expr (',' expr)* ','?, stopping before `close` (or the end when `close` is empty).
  absl::StatusOr<std::vector<Expr>> ParseList(const std::string& close) {
    std::vector<Expr> out;
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(Parsed e, ParseSum());
      out.push_back(std::move(e.expr));
      if (!Accept(",")) break;
      if (Peek().kind == Token::kEnd || (!close.empty() && Peek().text == close)) break;
    }
    return out;
  }

  absl::StatusOr<Parsed> ParseSum() {
    TESSERA_ASSIGN_OR_RETURN(Parsed e, ParseProduct());
    while (true) {
      const Token at = Peek();
      BinaryOp op;
      if (Accept("+")) {
        op = BinaryOp::kAdd;
      } else if (Accept("-")) {
        op = BinaryOp::kSub;
      } else {
        return e;
      }
      TESSERA_ASSIGN_OR_RETURN(Parsed b, ParseProduct());
      TESSERA_ASSIGN_OR_RETURN(e, Combine(at, op, e, b));
    }
  }

  absl::StatusOr<Parsed> ParseProduct() {
    TESSERA_ASSIGN_OR_RETURN(Parsed e, ParseUnary());
    while (true) {
      const Token at = Peek();
      BinaryOp op;
      if (Accept("*")) {
        op = BinaryOp::kMul;
      } else if (Accept("//")) {
        op = BinaryOp::kFloorDiv;
      } else if (Accept("%")) {
        op = BinaryOp::kFloorMod;
      } else {
        return e;
      }
      TESSERA_ASSIGN_OR_RETURN(Parsed b, ParseUnary());
      TESSERA_ASSIGN_OR_RETURN(e, Combine(at, op, e, b));
    }
  }

  // Every syntactic nesting (unary minus, parentheses, calls) passes here; bounding it bounds
  // the parser's own recursion even where no operator is built, e.g. `((((i))))`.
  absl::StatusOr<Parsed> ParseUnary() {
    const Token at = Peek();
    if (++depth_ > kMaxExprDepth) {
      --depth_;
      return TooDeep(at);
    }
    absl::StatusOr<Parsed> e;
    if (Accept("-")) {
      e = ParseUnary();
      if (e.ok()) {
        const int64_t* v = AsConstInt(e->expr);
        e = v != nullptr ? absl::StatusOr<Parsed>(Parsed{Expr(-*v), 1})
                         : Combine(at, BinaryOp::kSub, Parsed{Expr(0), 1}, *e);
      }
    } else {
      e = ParsePrimary();
    }
    --depth_;
    return e;
  }

  absl::StatusOr<Parsed> ParsePrimary() {
    const Token t = Peek();
    if (t.kind == Token::kInt) {
      ++pos_;
      return Parsed{Expr(static_cast<int64_t>(std::stoll(t.text))), 1};
    }
    if (Accept("(")) {
      TESSERA_ASSIGN_OR_RETURN(Parsed e, ParseSum());
      TESSERA_RETURN_IF_ERROR(Expect(")"));
      return e;
    }
    if (t.kind != Token::kIdent) return Error(t, "an expression");
    ++pos_;
    BinaryOp op;
    if (FunctionOp(t.text, &op)) {
      TESSERA_RETURN_IF_ERROR(Expect("("));
      TESSERA_ASSIGN_OR_RETURN(Parsed a, ParseSum());
      TESSERA_RETURN_IF_ERROR(Expect(","));
      TESSERA_ASSIGN_OR_RETURN(Parsed b, ParseSum());
      TESSERA_RETURN_IF_ERROR(Expect(")"));
      return Combine(t, op, a, b);
    }
    auto it = vars_.find(t.text);
    if (it == vars_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("index map: column ", t.column, ": unknown name '", t.text,
                       "' (not an index variable nor one of floordiv, floormod, min, max)"));
    }
    return Parsed{Expr(it->second), 1};
  }

  const std::string& text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::map<std::string, Var> vars_;
};

// Constant int64 extents of `shape`, or kInvalidArgument.
absl::StatusOr<std::vector<int64_t>> ConstShape(const std::vector<Expr>& shape, size_t arity) {
  if (shape.size() != arity) {
    return absl::InvalidArgumentError(absl::StrCat(
        "index map: takes ", arity, " indices but the shape has ", shape.size(), " dimensions"));
  }
  std::vector<int64_t> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t* v = AsConstInt(shape[d]);
    if (v == nullptr || *v <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("index map: dimension ", d, " of the shape (",
                                                     PrintExpr(shape[d]),
                                                     ") is not a positive constant"));
    }
    out.push_back(*v);
  }
  return out;
}

}  // namespace

absl::StatusOr<IndexMap> IndexMap::Make(std::vector<Var> initial_indices,
                                        std::vector<Expr> final_indices) {
  if (initial_indices.empty()) {
    return absl::InvalidArgumentError("index map: needs at least one initial index");
  }
  if (final_indices.empty()) {
    return absl::InvalidArgumentError("index map: needs at least one final index");
  }
  std::set<const VarNode*> vars;
  for (const Var& v : initial_indices) {
    if (!v.defined() || v.dtype() != DataType::Index()) {
      return absl::InvalidArgumentError("index map: initial indices must be int64 variables");
    }
    if (!vars.insert(v.get()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("index map: initial index ", v.name(), " is given twice"));
    }
  }
  for (size_t k = 0; k < final_indices.size(); ++k) {
    if (!final_indices[k].defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("index map: final index ", k, " is undefined"));
    }
    if (DepthExceeds::Check(final_indices[k], kMaxExprDepth)) {
      return absl::InvalidArgumentError(absl::StrCat("index map: final index ", k,
                                                     ": expressions nest too deeply (the limit is ",
                                                     kMaxExprDepth, " levels)"));
    }
    TESSERA_RETURN_IF_ERROR(CheckIndexExpr(final_indices[k], vars, k));
  }
  return IndexMap(std::move(initial_indices), std::move(final_indices));
}

absl::StatusOr<IndexMap> IndexMap::Parse(const std::string& text) {
  return MapParser(text).Parse();
}

bool IndexMap::IsIndexMapText(const std::string& text) {
  return text.compare(0, std::string(kTextPrefix).size(), kTextPrefix) == 0;
}

std::vector<Expr> IndexMap::MapIndices(const std::vector<Expr>& indices,
                                       arith::Analyzer* analyzer) const {
  TESSERA_CHECK(indices.size() == initial_.size())
      << "index map takes " << initial_.size() << " indices, got " << indices.size();
  VarMap vmap;
  for (size_t d = 0; d < initial_.size(); ++d) vmap[initial_[d]] = indices[d];
  std::vector<Expr> out;
  for (const Expr& e : final_) {
    Expr mapped = Substitute(e, vmap);
    out.push_back(analyzer != nullptr ? analyzer->Simplify(mapped) : mapped);
  }
  return out;
}

absl::StatusOr<std::vector<Expr>> IndexMap::MapShape(const std::vector<Expr>& shape) const {
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> extents, ConstShape(shape, initial_.size()));
  arith::VarRangeMap dom;
  for (size_t d = 0; d < initial_.size(); ++d) dom[initial_[d]] = Range{Expr(0), Expr(extents[d])};
  arith::Analyzer analyzer;
  analyzer.Bind(dom);
  std::vector<Expr> out;
  for (size_t k = 0; k < final_.size(); ++k) {
    arith::IntSet set = arith::EvalSet(final_[k], dom, &analyzer);
    // Hold the simplified ends: AsConstInt points into them.
    const Expr min = set.HasLowerBound() ? analyzer.Simplify(set.min()) : Expr();
    const Expr max = set.HasUpperBound() ? analyzer.Simplify(set.max()) : Expr();
    const int64_t* lo = min.defined() ? AsConstInt(min) : nullptr;
    const int64_t* hi = max.defined() ? AsConstInt(max) : nullptr;
    if (lo == nullptr || hi == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("index map: final index ", k, " (",
                                                     PrintExpr(final_[k]),
                                                     ") has no constant bounds over the shape"));
    }
    if (*lo < 0) {
      return absl::InvalidArgumentError(absl::StrCat("index map: final index ", k, " (",
                                                     PrintExpr(final_[k]), ") can be negative (",
                                                     *lo, ") over the shape"));
    }
    out.push_back(Expr(*hi + 1));
  }
  return out;
}

absl::StatusOr<IndexMap> IndexMap::Inverse(const std::vector<Expr>& shape) const {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> final_shape, MapShape(shape));
  arith::VarRangeMap dom;
  for (size_t d = 0; d < initial_.size(); ++d) dom[initial_[d]] = Range{Expr(0), shape[d]};
  absl::StatusOr<std::vector<arith::IterSumExpr>> sums =
      arith::DetectIterMap(final_, dom, Expr(), arith::IterMapLevel::kBijective);
  if (!sums.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "index map ", ToString(), " is not bijective over the shape: ", sums.status().message()));
  }
  // Output variables of the inverse, one per final index.
  std::vector<Var> outs;
  for (size_t k = 0; k < final_.size(); ++k) outs.push_back(Var(absl::StrCat("ax", k)));

  // Values of the splits of each mark, as expressions of the output variables; a bijective map
  // tiles every mark with its splits, so a mark is the sum of split value * lower factor.
  std::unordered_map<const arith::IterMarkNode*, std::vector<std::pair<int64_t, Expr>>> parts;
  std::vector<arith::IterMark> roots;
  for (size_t k = 0; k < final_.size(); ++k) {
    const arith::IterSumExpr& sum = (*sums)[k];
    const int64_t extent = *AsConstInt(final_shape[k]);
    if (sum.args.empty()) continue;  // a constant index: MapShape made its extent 1
    const arith::IterSplitExpr& split = sum.args[0];
    if (split.scale != 1 || !IsConstInt(sum.base, 0) || split.extent != extent) {
      return absl::InvalidArgumentError(
          absl::StrCat("index map ", ToString(), " is not bijective over the shape: final index ",
                       k, " does not cover [0, ", extent, ") exactly once"));
    }
    parts[split.source.get()].push_back({split.lower_factor, outs[k]});
    roots.push_back(split.source);
  }
  // Marks in an order where every fused mark comes before the marks it is made of.
  std::vector<arith::IterMark> post_order;
  std::set<const arith::IterMarkNode*> seen;
  std::function<void(const arith::IterMark&)> visit = [&](const arith::IterMark& mark) {
    if (!seen.insert(mark.get()).second) return;
    for (const arith::IterSplitExpr& arg : mark->sum.args) visit(arg.source);
    post_order.push_back(mark);
  };
  for (const arith::IterMark& root : roots) visit(root);
  VarMap values;
  for (auto it = post_order.rbegin(); it != post_order.rend(); ++it) {
    const arith::IterMark& mark = *it;
    Expr value;
    for (const auto& [lower_factor, part] : parts[mark.get()]) {
      Expr term = lower_factor == 1 ? part : part * Expr(lower_factor);
      value = value.defined() ? value + term : term;
    }
    if (!value.defined()) value = Expr(0);
    if (mark->is_input()) {
      values[mark->var] = value;
      continue;
    }
    if (mark->sum.base.defined() && !IsConstInt(mark->sum.base, 0)) value = value - mark->sum.base;
    for (const arith::IterSplitExpr& arg : mark->sum.args) {
      Expr v = arg.scale == 1 ? value : FloorDiv(value, Expr(arg.scale));
      parts[arg.source.get()].push_back({arg.lower_factor, FloorMod(v, Expr(arg.extent))});
    }
  }
  arith::Analyzer analyzer;
  for (size_t k = 0; k < outs.size(); ++k) analyzer.Bind(outs[k], Range{Expr(0), final_shape[k]});
  std::vector<Expr> inverse;
  for (const Var& v : initial_) {
    auto it = values.find(v);
    // Unused initial indices have extent 1 (DetectIterMap checked): always 0.
    inverse.push_back(it == values.end() ? Expr(0) : analyzer.Simplify(it->second));
  }
  return Make(std::move(outs), std::move(inverse));
}

std::string IndexMap::ToString() const {
  MapPrinter printer(initial_);
  std::vector<std::string> vars, finals;
  for (const Var& v : initial_) vars.push_back(printer.Name(v));
  for (const Expr& e : final_) finals.push_back(printer.Print(e, 1));
  return absl::StrCat(kTextPrefix, absl::StrJoin(vars, ", "), ": (", absl::StrJoin(finals, ", "),
                      finals.size() == 1 ? ",)" : ")");
}

}  // namespace tessera
