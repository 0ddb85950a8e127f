// The text printer. One TextPrinter prints one unit (a function, a module's function, a
// statement or an expression) with its own name table, so names are unique within the unit.
// The grammar it writes is docs/ir-text.md; ir/parser.cc reads it and inverts each choice made
// here (which immediates are bare, how ranges are written, when a cast is spelled `cast(...)`).
#include "ir/printer.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tessera {
namespace {

constexpr int kIndentWidth = 4;
constexpr size_t kMaxHeaderWidth = 100;

// Words the grammar gives a meaning; variables and buffers never print as one of them.
constexpr const char* kReservedWords[] = {
    // Keywords and literals.
    "def", "for", "in", "if", "else", "elif", "with", "as", "pass", "and", "or", "not", "None",
    "True", "False", "inf", "nan", "prim_func", "Buffer",
    // Loop kinds and block declarations.
    "range", "serial", "parallel", "vectorized", "unroll", "thread_binding", "block", "axis",
    "where", "reads", "writes", "init", "block_attr", "func_attr", "alloc_buffer", "allocate",
    // Functions and dtypes.
    "evaluate", "expr", "cast", "call_extern", "select", "min", "max", "floordiv", "floormod",
    "exp", "log", "sqrt", "rsqrt", "tanh", "erf", "pow", "abs", "sigmoid", "floor", "ceil", "bool",
    "int8", "int32", "int64", "uint8", "float16", "float32", "float64", "bfloat16"};

bool IsReservedWord(const std::string& name) {
  for (const char* word : kReservedWords) {
    if (name == word) return true;
  }
  return false;
}

bool PrintableIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool PrintableIdentChar(char c) { return PrintableIdentStart(c) || (c >= '0' && c <= '9'); }

// `name` made into an identifier: other characters become '_', a leading digit gets a '_'.
std::string Sanitize(const std::string& name) {
  if (name.empty()) return "v";
  std::string out;
  if (!PrintableIdentStart(name[0])) out.push_back('_');
  for (char c : name) out.push_back(PrintableIdentChar(c) ? c : '_');
  return out;
}

// Assigns each Var/Buffer node one unique identifier, in first-request order.
class NameTable {
 public:
  const std::string& NameOf(const void* node, const std::string& hint) {
    auto it = names_.find(node);
    if (it != names_.end()) return it->second;
    std::string base = Sanitize(hint);
    std::string name = base;
    for (int suffix = 1; used_.count(name) != 0 || IsReservedWord(name); ++suffix) {
      name = absl::StrCat(base, "_", suffix);
    }
    used_.insert(name);
    return names_.emplace(node, std::move(name)).first->second;
  }

 private:
  std::unordered_map<const void*, std::string> names_;
  std::unordered_set<std::string> used_;
};

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          out += absl::StrFormat("\\x%02x", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
  return out;
}

bool IsInt64Const(const Expr& e) {
  return e.defined() && e.as<IntImmNode>() != nullptr && e.dtype() == DataType::Int64();
}

bool IsImm(const Expr& e) {
  return e.defined() && (e.as<IntImmNode>() != nullptr || e.as<FloatImmNode>() != nullptr);
}

// Binding strength of an infix operator: 1 `||`, 2 `&&`, 3 comparisons, 4 `+ -`, 5 `* /`.
int InfixPrecedence(BinaryOp op) {
  switch (op) {
    case BinaryOp::kOr:
      return 1;
    case BinaryOp::kAnd:
      return 2;
    case BinaryOp::kAdd:
    case BinaryOp::kSub:
      return 4;
    case BinaryOp::kMul:
    case BinaryOp::kDiv:
      return 5;
    default:
      return 3;
  }
}

// Binding strength of the expression's outermost syntax: InfixPrecedence for infix operators,
// 6 unary (`!x`, `-5`), 7 atoms (names, calls such as floordiv or min, loads, parentheses).
int Precedence(const Expr& e) {
  if (!e.defined()) return 7;
  if (const auto* b = e.as<BinaryNode>()) {
    return BinaryOpIsInfix(b->op) ? InfixPrecedence(b->op) : 7;
  }
  if (e.as<NotNode>() != nullptr) return 6;
  if (const auto* i = e.as<IntImmNode>()) {
    if (e.dtype() == DataType::Int64() && i->value < 0) return 6;
  }
  return 7;
}

std::string TupleText(const std::vector<std::string>& items) {
  if (items.size() == 1) return absl::StrCat("(", items[0], ",)");
  return absl::StrCat("(", absl::StrJoin(items, ", "), ")");
}

class TextPrinter {
 public:
  std::string out;

  std::string ExprText(const Expr& e);
  void PrintFunction(const PrimFunc& f);
  // Prints `s` as lines at `indent`; a SeqStmt prints one line group per element.
  void PrintStmt(const Stmt& s, int indent);

 private:
  const std::string& VarName(const Var& v) { return names_.NameOf(v.get(), v.name()); }
  const std::string& BufferName(const Buffer& b) { return names_.NameOf(b.get(), b.name()); }

  std::string Operand(const Expr& e, bool parens) {
    std::string text = ExprText(e);
    return parens ? absl::StrCat("(", text, ")") : text;
  }
  std::string InfixText(BinaryOp op, const Expr& a, const Expr& b);
  std::string RangeText(const Range& r, bool is_region);
  std::string IndicesText(const std::vector<Expr>& indices);
  std::string RegionText(const BufferRegion& region);
  std::string AnnotationText(const AnnotationValue& value);
  std::string AnnotationsText(const Annotations& annotations);
  std::string BufferDeclText(const Buffer& b);
  std::string VarDecl(const Var& v);

  void Line(int indent, const std::string& text) {
    out.append(static_cast<size_t>(indent * kIndentWidth), ' ');
    out += text;
    out.push_back('\n');
  }
  // The statements of a suite (block body, loop body, ...): `pass` when there are none.
  void PrintSuite(const Stmt& s, int indent);
  void PrintFor(const ForNode* op, int indent);
  void PrintBlock(const BlockNode* block, const BlockRealizeNode* realize, int indent);

  NameTable names_;
};

std::string TextPrinter::InfixText(BinaryOp op, const Expr& a, const Expr& b) {
  int prec = InfixPrecedence(op);
  bool cmp = BinaryOpIsComparison(op);
  // Left-associative: a left operand of equal strength needs no parentheses, a right one does.
  // Comparisons never chain without parentheses (readers would guess the wrong meaning).
  bool left_parens = Precedence(a) < prec || (cmp && Precedence(a) == 3);
  bool right_parens = Precedence(b) <= prec;
  // Names are assigned in text order, so each piece is built in its own statement (the
  // evaluation order of function arguments is unspecified).
  std::string lhs = Operand(a, left_parens);
  std::string rhs = Operand(b, right_parens);
  return absl::StrCat(lhs, " ", BinaryOpName(op), " ", rhs);
}

std::string TextPrinter::ExprText(const Expr& e) {
  if (!e.defined()) return "<undefined>";
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      int64_t v = e.as<IntImmNode>()->value;
      if (e.dtype() == DataType::Int64()) return absl::StrCat(v);
      if (e.dtype().is_bool() && (v == 0 || v == 1)) return v ? "True" : "False";
      return absl::StrCat(e.dtype().ToString(), "(", v, ")");
    }
    case ExprKind::kFloatImm:
      return absl::StrCat(e.dtype().ToString(), "(", FormatDouble(e.as<FloatImmNode>()->value),
                          ")");
    case ExprKind::kVar:
      return VarName(Var(std::static_pointer_cast<const VarNode>(e.node_ptr())));
    case ExprKind::kBinary: {
      const auto* op = e.as<BinaryNode>();
      if (BinaryOpIsInfix(op->op)) return InfixText(op->op, op->a, op->b);
      std::string lhs = ExprText(op->a);
      std::string rhs = ExprText(op->b);
      return absl::StrCat(BinaryOpName(op->op), "(", lhs, ", ", rhs, ")");
    }
    case ExprKind::kNot: {
      const auto* op = e.as<NotNode>();
      return absl::StrCat("!", Operand(op->a, Precedence(op->a) < 6));
    }
    case ExprKind::kSelect: {
      const auto* op = e.as<SelectNode>();
      std::string condition = ExprText(op->condition);
      std::string true_value = ExprText(op->true_value);
      std::string false_value = ExprText(op->false_value);
      return absl::StrCat("select(", condition, ", ", true_value, ", ", false_value, ")");
    }
    case ExprKind::kCast: {
      const auto* op = e.as<CastNode>();
      // `float32(5)` reads as an immediate, so casts of immediates are spelled out.
      if (IsImm(op->value)) {
        return absl::StrCat("cast(", e.dtype().ToString(), ", ", ExprText(op->value), ")");
      }
      return absl::StrCat(e.dtype().ToString(), "(", ExprText(op->value), ")");
    }
    case ExprKind::kBufferLoad: {
      const auto* op = e.as<BufferLoadNode>();
      std::string name = BufferName(op->buffer);
      return absl::StrCat(name, IndicesText(op->indices));
    }
    case ExprKind::kCall: {
      const auto* op = e.as<CallNode>();
      std::vector<std::string> args;
      for (const Expr& arg : op->args) args.push_back(ExprText(arg));
      if (op->op == CallOp::kExtern) {  // call_extern(int32, "name", args...)
        args.insert(args.begin(), {e.dtype().ToString(), Quote(op->name)});
      }
      return absl::StrCat(CallOpName(op->op), "(", absl::StrJoin(args, ", "), ")");
    }
  }
  return "<unknown expr>";
}

std::string TextPrinter::IndicesText(const std::vector<Expr>& indices) {
  if (indices.empty()) return "[()]";
  std::vector<std::string> parts;
  for (const Expr& index : indices) parts.push_back(ExprText(index));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

// Regions write `min` for a unit range and `min:min + extent` otherwise; domains write
// `extent` for a range starting at 0. The parser undoes exactly these forms (RangeFromBounds).
std::string TextPrinter::RangeText(const Range& r, bool is_region) {
  if (is_region && IsInt64Const(r.extent) && *AsConstInt(r.extent) == 1) return ExprText(r.min);
  if (!is_region && IsInt64Const(r.min) && *AsConstInt(r.min) == 0) return ExprText(r.extent);
  if (IsInt64Const(r.min) && IsInt64Const(r.extent)) {
    int64_t end;
    if (!__builtin_add_overflow(*AsConstInt(r.min), *AsConstInt(r.extent), &end)) {
      return absl::StrCat(*AsConstInt(r.min), ":", end);
    }
  }
  if (IsInt64Const(r.min) && *AsConstInt(r.min) == 0) {
    return absl::StrCat("0:", ExprText(r.extent));
  }
  std::string min = ExprText(r.min);
  return absl::StrCat(min, ":", InfixText(BinaryOp::kAdd, r.min, r.extent));
}

std::string TextPrinter::RegionText(const BufferRegion& region) {
  std::string name = BufferName(region.buffer);
  if (region.region.empty()) return absl::StrCat(name, "[()]");
  std::vector<std::string> parts;
  for (const Range& r : region.region) parts.push_back(RangeText(r, /*is_region=*/true));
  return absl::StrCat(name, "[", absl::StrJoin(parts, ", "), "]");
}

std::string TextPrinter::AnnotationText(const AnnotationValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return absl::StrCat(*i);
  if (const auto* d = std::get_if<double>(&value)) return FormatDouble(*d);
  if (const auto* s = std::get_if<std::string>(&value)) return Quote(*s);
  if (const auto* e = std::get_if<Expr>(&value)) return absl::StrCat("expr(", ExprText(*e), ")");
  const auto& ints = std::get<std::vector<int64_t>>(value);
  return absl::StrCat("[", absl::StrJoin(ints, ", "), "]");
}

std::string TextPrinter::AnnotationsText(const Annotations& annotations) {
  std::vector<std::string> items;
  for (const auto& [key, value] : annotations) {
    items.push_back(absl::StrCat(Quote(key), ": ", AnnotationText(value)));
  }
  return absl::StrCat("{", absl::StrJoin(items, ", "), "}");
}

std::string TextPrinter::BufferDeclText(const Buffer& b) {
  std::vector<std::string> shape;
  for (const Expr& extent : b.shape()) shape.push_back(ExprText(extent));
  std::string text = absl::StrCat(TupleText(shape), ", ", Quote(b.dtype().ToString()));
  if (b.scope() != "global") absl::StrAppend(&text, ", scope=", Quote(b.scope()));
  if (!b->strides.empty()) {
    std::vector<std::string> strides;
    for (const Expr& stride : b->strides) strides.push_back(ExprText(stride));
    absl::StrAppend(&text, ", strides=", TupleText(strides));
  }
  return text;
}

std::string TextPrinter::VarDecl(const Var& v) {
  const std::string& name = VarName(v);
  if (v.dtype() == DataType::Index()) return name;
  return absl::StrCat(name, ": ", v.dtype().ToString());
}

void TextPrinter::PrintSuite(const Stmt& s, int indent) {
  const auto* seq = s.defined() ? s.as<SeqStmtNode>() : nullptr;
  if (!s.defined() || (seq != nullptr && seq->seq.empty())) {
    Line(indent, "pass");
    return;
  }
  PrintStmt(s, indent);
}

void TextPrinter::PrintStmt(const Stmt& s, int indent) {
  if (!s.defined()) {
    Line(indent, "pass");
    return;
  }
  switch (s.kind()) {
    case StmtKind::kBufferStore: {
      const auto* op = s.as<BufferStoreNode>();
      std::string target = BufferName(op->buffer);
      absl::StrAppend(&target, IndicesText(op->indices));
      Line(indent, absl::StrCat(target, " = ", ExprText(op->value)));
      return;
    }
    case StmtKind::kSeq: {
      const auto* op = s.as<SeqStmtNode>();
      if (op->seq.empty()) Line(indent, "pass");
      for (const Stmt& child : op->seq) PrintStmt(child, indent);
      return;
    }
    case StmtKind::kIfThenElse: {
      const auto* op = s.as<IfThenElseNode>();
      Line(indent, absl::StrCat("if ", ExprText(op->condition), ":"));
      PrintSuite(op->then_case, indent + 1);
      if (op->else_case.defined()) {
        Line(indent, "else:");
        PrintSuite(op->else_case, indent + 1);
      }
      return;
    }
    case StmtKind::kEvaluate:
      Line(indent, absl::StrCat("evaluate(", ExprText(s.as<EvaluateNode>()->value), ")"));
      return;
    case StmtKind::kFor:
      PrintFor(s.as<ForNode>(), indent);
      return;
    case StmtKind::kBlock:
      PrintBlock(s.as<BlockNode>(), nullptr, indent);
      return;
    case StmtKind::kBlockRealize: {
      const auto* op = s.as<BlockRealizeNode>();
      PrintBlock(op->block.get(), op, indent);
      return;
    }
    case StmtKind::kAllocate: {
      const auto* op = s.as<AllocateNode>();
      std::string decl = BufferDeclText(op->buffer);
      Line(indent, absl::StrCat("with allocate(", decl, ") as ", BufferName(op->buffer), ":"));
      PrintSuite(op->body, indent + 1);
      return;
    }
  }
}

void TextPrinter::PrintFor(const ForNode* op, int indent) {
  std::string decl = VarDecl(op->loop_var);
  std::string args = ExprText(op->extent);
  const char* kind = op->for_kind == ForKind::kSerial ? "range" : ForKindName(op->for_kind);
  if (op->for_kind == ForKind::kThreadBinding) absl::StrAppend(&args, ", ", Quote(op->thread_tag));
  if (!op->annotations.empty()) {
    absl::StrAppend(&args, ", annotations=", AnnotationsText(op->annotations));
  }
  Line(indent, absl::StrCat("for ", decl, " in ", kind, "(", args, "):"));
  PrintSuite(op->body, indent + 1);
}

void TextPrinter::PrintBlock(const BlockNode* block, const BlockRealizeNode* realize, int indent) {
  Line(indent, absl::StrCat("with block(", Quote(block->name), "):"));
  const int inner = indent + 1;
  for (size_t i = 0; i < block->iter_vars.size(); ++i) {
    const IterVar& iv = block->iter_vars[i];
    std::string decl = VarDecl(iv.var);
    std::string args = RangeText(iv.dom, /*is_region=*/false);
    if (realize != nullptr && i < realize->iter_values.size()) {
      absl::StrAppend(&args, ", ", ExprText(realize->iter_values[i]));
    }
    const char* kind = iv.kind == IterKind::kSpatial ? "spatial" : "reduce";
    Line(inner, absl::StrCat(decl, " = axis.", kind, "(", args, ")"));
  }
  if (realize != nullptr && realize->predicate.defined()) {
    const auto* imm = realize->predicate.as<IntImmNode>();
    if (imm == nullptr || !realize->predicate.dtype().is_bool() || imm->value != 1) {
      Line(inner, absl::StrCat("where(", ExprText(realize->predicate), ")"));
    }
  }
  for (const Buffer& b : block->alloc_buffers) {
    std::string decl = BufferDeclText(b);
    Line(inner, absl::StrCat(BufferName(b), " = alloc_buffer(", decl, ")"));
  }
  for (const auto* regions : {&block->reads, &block->writes}) {
    if (regions->empty()) continue;
    std::vector<std::string> parts;
    for (const BufferRegion& region : *regions) parts.push_back(RegionText(region));
    Line(inner, absl::StrCat(regions == &block->reads ? "reads(" : "writes(",
                             absl::StrJoin(parts, ", "), ")"));
  }
  if (!block->annotations.empty()) {
    Line(inner, absl::StrCat("block_attr(", AnnotationsText(block->annotations), ")"));
  }
  if (block->init.defined()) {
    Line(inner, "with init():");
    PrintSuite(block->init, inner + 1);
  }
  PrintSuite(block->body, inner);
}

void TextPrinter::PrintFunction(const PrimFunc& f) {
  std::string ident = Sanitize(f.name());
  if (ident == f.name()) {
    Line(0, "@prim_func");
  } else {
    Line(0, absl::StrCat("@prim_func(name=", Quote(f.name()), ")"));
  }
  std::vector<std::string> params;
  for (const Buffer& b : f.params()) {
    std::string decl = BufferDeclText(b);
    params.push_back(absl::StrCat(BufferName(b), ": Buffer(", decl, ")"));
  }
  std::string header = absl::StrCat("def ", ident, "(", absl::StrJoin(params, ", "), "):");
  if (header.size() <= kMaxHeaderWidth) {
    Line(0, header);
  } else {
    Line(0, absl::StrCat("def ", ident, "("));
    for (const std::string& p : params) Line(1, absl::StrCat(p, ","));
    Line(0, "):");
  }
  if (!f.attrs().empty()) Line(1, absl::StrCat("func_attr(", AnnotationsText(f.attrs()), ")"));
  PrintSuite(f.body(), 1);
}

}  // namespace

std::string FormatDouble(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), value);  // shortest round-trip form
  std::string text(buf, result.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string PrintFunc(const PrimFunc& f) {
  TextPrinter printer;
  printer.PrintFunction(f);
  return std::move(printer.out);
}

std::string PrintModule(const IRModule& m) {
  std::string out;
  for (const auto& [name, func] : m.functions()) {
    if (!out.empty()) out += "\n";
    out += PrintFunc(func);
  }
  return out;
}

std::string PrintExpr(const Expr& e) {
  TextPrinter printer;
  return printer.ExprText(e);
}

std::string PrintStmt(const Stmt& s) {
  TextPrinter printer;
  printer.PrintStmt(s, 0);
  return std::move(printer.out);
}

}  // namespace tessera
