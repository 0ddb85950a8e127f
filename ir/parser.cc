// The text parser: a tokenizer that turns the text into Python-like tokens (with NEWLINE,
// INDENT and DEDENT, newlines ignored inside brackets), and a recursive-descent parser over
// them that builds the IR directly. The parser validates every precondition of the IR
// builders before calling them (they TESSERA_CHECK, and a parser must never abort), bounds its
// recursion depth, and reports the first error with its line and column.
//
// Names are lexically scoped: a loop variable is visible in its loop body, iteration variables
// and alloc_buffers in their block, an allocate's buffer in its body, parameters everywhere.
// A name may be reused by siblings but not redefined while visible.
#include "ir/parser.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "ir/printer.h"

namespace tessera {
namespace {

constexpr int kMaxNestingDepth = 200;

// ---- Tokens ---------------------------------------------------------------------------

enum class Tok { kIdent, kInt, kFloat, kString, kOp, kNewline, kIndent, kDedent, kEnd };

struct Token {
  Tok kind;
  std::string text;  // identifier, literal digits, decoded string, or operator
  int line;
  int col;
};

absl::Status ErrorAt(int line, int col, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ", column ", col, ": ", message));
}

std::string Describe(const Token& t) {
  switch (t.kind) {
    case Tok::kIdent:
      return absl::StrCat("identifier '", t.text, "'");
    case Tok::kInt:
    case Tok::kFloat:
      return absl::StrCat("number ", t.text);
    case Tok::kString: {
      std::string shown = t.text.size() > 30 ? t.text.substr(0, 30) + "..." : t.text;
      for (char& c : shown) {
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
      }
      return absl::StrCat("string \"", shown, "\"");
    }
    case Tok::kOp:
      return absl::StrCat("'", t.text, "'");
    case Tok::kNewline:
      return "end of line";
    case Tok::kIndent:
      return "an indented line";
    case Tok::kDedent:
      return "the end of an indented block";
    case Tok::kEnd:
      return "end of input";
  }
  return "?";
}

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

class Tokenizer {
 public:
  explicit Tokenizer(const std::string& src) : src_(src) {}

  absl::StatusOr<std::vector<Token>> Run() {
    while (pos_ < src_.size()) {
      if (at_line_start_ && depth_ == 0) {
        TESSERA_RETURN_IF_ERROR(StartLine());
        continue;
      }
      char c = src_[pos_];
      if (c == '\n') {
        if (depth_ == 0) {
          Push(Tok::kNewline, "");
          at_line_start_ = true;
        }
        ++pos_;
        ++line_;
        col_ = 1;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        Advance(1);
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') Advance(1);
      } else if (IsIdentStart(c)) {
        size_t end = pos_;
        while (end < src_.size() && IsIdentChar(src_[end])) ++end;
        Push(Tok::kIdent, src_.substr(pos_, end - pos_));
        Advance(end - pos_);
      } else if (IsDigit(c)) {
        TESSERA_RETURN_IF_ERROR(Number());
      } else if (c == '"') {
        TESSERA_RETURN_IF_ERROR(String());
      } else {
        TESSERA_RETURN_IF_ERROR(Operator());
      }
    }
    if (!tokens_.empty() && tokens_.back().kind != Tok::kNewline) Push(Tok::kNewline, "");
    for (size_t i = 1; i < indents_.size(); ++i) Push(Tok::kDedent, "");
    Push(Tok::kEnd, "");
    return std::move(tokens_);
  }

 private:
  void Push(Tok kind, std::string text) {
    tokens_.push_back(Token{kind, std::move(text), line_, col_});
  }
  void Advance(size_t n) {
    pos_ += n;
    col_ += static_cast<int>(n);
  }

  // Measures the indentation of a new line; blank and comment-only lines are skipped.
  absl::Status StartLine() {
    size_t end = pos_;
    while (end < src_.size() && src_[end] == ' ') ++end;
    int width = static_cast<int>(end - pos_);
    if (end < src_.size() && src_[end] == '\t') {
      return ErrorAt(line_, width + 1, "tabs are not allowed in indentation, use spaces");
    }
    while (end < src_.size() && src_[end] == '\r') ++end;
    if (end >= src_.size() || src_[end] == '\n' || src_[end] == '#') {
      while (end < src_.size() && src_[end] != '\n') ++end;
      pos_ = end < src_.size() ? end + 1 : end;
      ++line_;
      col_ = 1;
      return absl::OkStatus();
    }
    col_ = width + 1;
    pos_ += static_cast<size_t>(width);
    at_line_start_ = false;
    if (width > indents_.back()) {
      indents_.push_back(width);
      Push(Tok::kIndent, "");
    }
    while (width < indents_.back()) {
      indents_.pop_back();
      Push(Tok::kDedent, "");
    }
    if (width != indents_.back()) {
      return ErrorAt(line_, col_, "unindent does not match any outer indentation level");
    }
    return absl::OkStatus();
  }

  absl::Status Number() {
    size_t end = pos_;
    bool is_float = false;
    while (end < src_.size() && IsDigit(src_[end])) ++end;
    if (end < src_.size() && src_[end] == '.') {
      is_float = true;
      ++end;
      while (end < src_.size() && IsDigit(src_[end])) ++end;
    }
    if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      is_float = true;
      ++end;
      if (end < src_.size() && (src_[end] == '+' || src_[end] == '-')) ++end;
      if (end >= src_.size() || !IsDigit(src_[end])) {
        return ErrorAt(line_, col_, "malformed number: expected digits after the exponent");
      }
      while (end < src_.size() && IsDigit(src_[end])) ++end;
    }
    if (end < src_.size() && IsIdentChar(src_[end])) {
      return ErrorAt(line_, col_ + static_cast<int>(end - pos_),
                     absl::StrCat("malformed number: unexpected '", std::string(1, src_[end]),
                                  "' after digits"));
    }
    Push(is_float ? Tok::kFloat : Tok::kInt, src_.substr(pos_, end - pos_));
    Advance(end - pos_);
    return absl::OkStatus();
  }

  absl::Status String() {
    std::string value;
    size_t i = pos_ + 1;
    while (true) {
      if (i >= src_.size() || src_[i] == '\n') {
        return ErrorAt(line_, col_, "unterminated string literal");
      }
      char c = src_[i];
      if (c == '"') break;
      if (c != '\\') {
        value.push_back(c);
        ++i;
        continue;
      }
      char e = i + 1 < src_.size() ? src_[i + 1] : '\0';
      int esc_col = col_ + static_cast<int>(i - pos_);
      switch (e) {
        case '"':
          value.push_back('"');
          break;
        case '\\':
          value.push_back('\\');
          break;
        case 'n':
          value.push_back('\n');
          break;
        case 't':
          value.push_back('\t');
          break;
        case 'r':
          value.push_back('\r');
          break;
        case 'x': {
          int v = 0;
          for (size_t k = i + 2; k < i + 4; ++k) {
            char h = k < src_.size() ? src_[k] : '\0';
            int d = IsDigit(h)               ? h - '0'
                    : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                    : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                             : -1;
            if (d < 0) return ErrorAt(line_, esc_col, "expected two hex digits after \\x");
            v = v * 16 + d;
          }
          value.push_back(static_cast<char>(v));
          i += 2;
          break;
        }
        default:
          return ErrorAt(line_, esc_col, "unknown escape sequence in string literal");
      }
      i += 2;
    }
    Push(Tok::kString, std::move(value));
    Advance(i + 1 - pos_);
    return absl::OkStatus();
  }

  absl::Status Operator() {
    static const char* const kTwo[] = {"<=", ">=", "==", "!=", "&&", "||", "->"};
    for (const char* op : kTwo) {
      if (src_.compare(pos_, 2, op) == 0) {
        Push(Tok::kOp, op);
        Advance(2);
        return absl::OkStatus();
      }
    }
    char c = src_[pos_];
    if (std::string("()[]{},:.=+-*/<>!@").find(c) == std::string::npos) {
      unsigned char u = static_cast<unsigned char>(c);
      std::string shown = u >= 0x20 && u < 0x7f
                              ? std::string(1, c)
                              : absl::StrCat("\\x", absl::Hex(u, absl::kZeroPad2));
      return ErrorAt(line_, col_, absl::StrCat("unexpected character '", shown, "'"));
    }
    if (c == '(' || c == '[' || c == '{') ++depth_;
    if ((c == ')' || c == ']' || c == '}') && depth_ > 0) --depth_;
    Push(Tok::kOp, std::string(1, c));
    Advance(1);
    return absl::OkStatus();
  }

  const std::string& src_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
  int depth_ = 0;  // open brackets; newlines inside them are not tokens
  bool at_line_start_ = true;
  std::vector<int> indents_{0};
  std::vector<Token> tokens_;
};

// ---- Parser ---------------------------------------------------------------------------

bool IsInt64Imm(const Expr& e) {
  return e.as<IntImmNode>() != nullptr && e.dtype() == DataType::Int64();
}

// Whether MakeBinary/Select/Call can convert immediate `imm` to `to` (mirrors MatchTypes).
bool ConvertibleImm(const Expr& imm, DataType to) {
  return imm.as<IntImmNode>() != nullptr || (imm.as<FloatImmNode>() != nullptr && to.is_float());
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  // All functions up to the end of input; with `single`, exactly one.
  absl::StatusOr<std::vector<PrimFunc>> ParseFunctions(bool single);

 private:
  struct Symbol {
    Var var;        // set for variables
    Buffer buffer;  // set for buffers
    int line;
    int col;
  };
  // Counts nesting (expressions and statements) so that no input overflows the stack.
  class DepthGuard {
   public:
    explicit DepthGuard(Parser* p) : p_(p) { ++p_->depth_; }
    ~DepthGuard() { --p_->depth_; }
    bool too_deep() const { return p_->depth_ > kMaxNestingDepth; }

   private:
    Parser* p_;
  };

  // Token access. The token list always ends in kEnd, and Peek never reads past it.
  const Token& Peek(int k = 0) const {
    size_t i = std::min(pos_ + static_cast<size_t>(k), toks_.size() - 1);
    return toks_[i];
  }
  const Token& Next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool IsOp(const char* op, int k = 0) const {
    return Peek(k).kind == Tok::kOp && Peek(k).text == op;
  }
  bool IsWord(const char* word, int k = 0) const {
    return Peek(k).kind == Tok::kIdent && Peek(k).text == word;
  }
  absl::Status Error(const Token& at, const std::string& message) const {
    return ErrorAt(at.line, at.col, message);
  }
  absl::Status Expected(const std::string& what) const {
    return Error(Peek(), absl::StrCat("expected ", what, ", found ", Describe(Peek())));
  }
  absl::Status ExpectOp(const char* op, const std::string& context) {
    if (!IsOp(op)) return Expected(absl::StrCat("'", op, "' ", context));
    Next();
    return absl::OkStatus();
  }
  absl::Status ExpectWord(const char* word, const std::string& context) {
    if (!IsWord(word)) return Expected(absl::StrCat("'", word, "' ", context));
    Next();
    return absl::OkStatus();
  }
  absl::Status ExpectNewline(const std::string& context) {
    if (Peek().kind != Tok::kNewline) return Expected(absl::StrCat("end of line ", context));
    Next();
    return absl::OkStatus();
  }
  absl::StatusOr<Token> ExpectIdent(const std::string& what) {
    if (Peek().kind != Tok::kIdent) return Expected(what);
    return Next();
  }
  absl::StatusOr<std::string> ExpectString(const std::string& what) {
    if (Peek().kind != Tok::kString) return Expected(what);
    return Next().text;
  }

  // Scopes.
  const Symbol* Lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return &found->second;
    }
    return nullptr;
  }
  absl::Status Define(const Token& at, Symbol symbol) {
    if (const Symbol* prev = Lookup(at.text)) {
      return Error(at, absl::StrCat("redefinition of '", at.text, "' (first defined at line ",
                                    prev->line, ", column ", prev->col, ")"));
    }
    symbol.line = at.line;
    symbol.col = at.col;
    scopes_.back().emplace(at.text, std::move(symbol));
    return absl::OkStatus();
  }
  absl::StatusOr<Buffer> LookupBuffer(const Token& at) const;

  // Expressions, from the loosest binding to the tightest.
  absl::StatusOr<Expr> ParseExpr() { return ParseBinaryLevel(1); }
  absl::StatusOr<Expr> ParseBinaryLevel(int level);
  absl::StatusOr<Expr> ParseUnary();
  absl::StatusOr<Expr> ParsePrimary();
  absl::StatusOr<Expr> ParseCallLike(const Token& name);
  absl::StatusOr<Expr> ParseImmediate(DataType dtype);
  absl::StatusOr<std::vector<Expr>> ParseArgs(const Token& name, size_t count);
  absl::StatusOr<Expr> ParseBoolExpr(const std::string& what);
  absl::StatusOr<Expr> Binary(const Token& at, BinaryOp op, Expr a, Expr b);
  absl::Status CheckSameType(const Token& at, const std::string& what, const Expr& a,
                             const Expr& b);
  absl::StatusOr<uint64_t> ParseIntMagnitude(const Token& t, bool negative);
  absl::StatusOr<double> ParseFloatLiteral(const Token& t);
  absl::StatusOr<DataType> ParseDType(const Token& at, const std::string& name);

  // Pieces shared by statements.
  absl::StatusOr<std::vector<Expr>> ParseIndices(const Buffer& buffer, const Token& at);
  absl::StatusOr<Range> ParseRange(bool is_region);
  absl::StatusOr<Range> RangeFromBounds(const Token& at, Expr min, Expr end);
  absl::StatusOr<std::vector<BufferRegion>> ParseRegions(const std::string& what);
  absl::StatusOr<Buffer> ParseBufferArgs(const std::string& name, const Token& at);
  absl::StatusOr<std::vector<Expr>> ParseTuple(const std::string& what);
  absl::StatusOr<Annotations> ParseDict();
  absl::StatusOr<AnnotationValue> ParseAnnotationValue();
  absl::StatusOr<Var> ParseVarDecl(Token* name);

  // Statements.
  absl::StatusOr<PrimFunc> ParseFunction();
  absl::StatusOr<Stmt> ParseSuite();
  absl::StatusOr<Stmt> ParseStmt();
  absl::StatusOr<Stmt> ParseFor();
  absl::StatusOr<Stmt> ParseIf();
  absl::StatusOr<Stmt> ParseBlock();
  absl::StatusOr<Stmt> ParseAllocate();
  absl::StatusOr<Stmt> ParseStore();

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<std::unordered_map<std::string, Symbol>> scopes_;
};

// ---- Expressions ------------------------------------------------------------------------

absl::StatusOr<uint64_t> Parser::ParseIntMagnitude(const Token& t, bool negative) {
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  uint64_t value = 0;
  for (char c : t.text) {
    if (value > (limit - static_cast<uint64_t>(c - '0')) / 10) {
      return Error(t, absl::StrCat("integer literal ", negative ? "-" : "", t.text,
                                   " does not fit in int64"));
    }
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

absl::StatusOr<double> Parser::ParseFloatLiteral(const Token& t) {
  if (t.kind == Tok::kIdent) {
    return t.text == "inf" ? std::numeric_limits<double>::infinity()
                           : std::numeric_limits<double>::quiet_NaN();
  }
  double value = 0;
  auto result = std::from_chars(t.text.data(), t.text.data() + t.text.size(), value);
  if (result.ec != std::errc() || result.ptr != t.text.data() + t.text.size()) {
    return Error(t, absl::StrCat("float literal ", t.text, " is out of range"));
  }
  return value;
}

absl::StatusOr<DataType> Parser::ParseDType(const Token& at, const std::string& name) {
  absl::StatusOr<DataType> dtype = DataType::Parse(name);
  if (!dtype.ok()) return Error(at, std::string(dtype.status().message()));
  return *dtype;
}

absl::Status Parser::CheckSameType(const Token& at, const std::string& what, const Expr& a,
                                   const Expr& b) {
  if (a.dtype() == b.dtype() || ConvertibleImm(b, a.dtype()) || ConvertibleImm(a, b.dtype())) {
    return absl::OkStatus();
  }
  return Error(at, absl::StrCat("operands of ", what, " have different types ",
                                a.dtype().ToString(), " and ", b.dtype().ToString()));
}

absl::StatusOr<Expr> Parser::Binary(const Token& at, BinaryOp op, Expr a, Expr b) {
  TESSERA_RETURN_IF_ERROR(CheckSameType(at, absl::StrCat("'", BinaryOpName(op), "'"), a, b));
  return MakeBinary(op, std::move(a), std::move(b));
}

absl::StatusOr<Expr> Parser::ParseBinaryLevel(int level) {
  // Levels: 1 `||`, 2 `&&`, 3 comparisons, 4 `+ -`, 5 `* /`; all left-associative.
  static const std::vector<std::pair<const char*, BinaryOp>> kOps[] = {
      {},
      {{"||", BinaryOp::kOr}},
      {{"&&", BinaryOp::kAnd}},
      {{"==", BinaryOp::kEQ},
       {"!=", BinaryOp::kNE},
       {"<=", BinaryOp::kLE},
       {">=", BinaryOp::kGE},
       {"<", BinaryOp::kLT},
       {">", BinaryOp::kGT}},
      {{"+", BinaryOp::kAdd}, {"-", BinaryOp::kSub}},
      {{"*", BinaryOp::kMul}, {"/", BinaryOp::kDiv}},
  };
  if (level > 5) return ParseUnary();
  TESSERA_ASSIGN_OR_RETURN(Expr lhs, ParseBinaryLevel(level + 1));
  while (true) {
    const BinaryOp* op = nullptr;
    for (const auto& [text, candidate] : kOps[level]) {
      if (IsOp(text)) op = &candidate;
    }
    if (op == nullptr) return lhs;
    Token at = Next();
    TESSERA_ASSIGN_OR_RETURN(Expr rhs, ParseBinaryLevel(level + 1));
    TESSERA_ASSIGN_OR_RETURN(lhs, Binary(at, *op, std::move(lhs), std::move(rhs)));
  }
}

absl::StatusOr<Expr> Parser::ParseUnary() {
  DepthGuard guard(this);
  if (guard.too_deep()) return Error(Peek(), "expression nested too deeply");
  if (IsOp("!")) {
    Token at = Next();
    TESSERA_ASSIGN_OR_RETURN(Expr operand, ParseUnary());
    if (!operand.dtype().is_bool()) {
      return Error(at,
                   absl::StrCat("operand of '!' must be bool, found ", operand.dtype().ToString()));
    }
    return Not(std::move(operand));
  }
  if (IsOp("-")) {
    Token at = Next();
    // A minus before a literal is part of the literal (`-5` is one immediate).
    if (Peek().kind == Tok::kInt) {
      TESSERA_ASSIGN_OR_RETURN(uint64_t magnitude, ParseIntMagnitude(Next(), true));
      return IntImm(DataType::Int64(), static_cast<int64_t>(0 - magnitude));
    }
    if (Peek().kind == Tok::kFloat || IsWord("inf") || IsWord("nan")) {
      TESSERA_ASSIGN_OR_RETURN(double value, ParseFloatLiteral(Next()));
      return FloatImm(DataType::Float64(), -value);
    }
    TESSERA_ASSIGN_OR_RETURN(Expr operand, ParseUnary());
    Expr zero = MakeConst(operand.dtype(), 0);
    return Binary(at, BinaryOp::kSub, std::move(zero), std::move(operand));
  }
  return ParsePrimary();
}

absl::StatusOr<Expr> Parser::ParsePrimary() {
  const Token& t = Peek();
  switch (t.kind) {
    case Tok::kInt: {
      TESSERA_ASSIGN_OR_RETURN(uint64_t value, ParseIntMagnitude(Next(), false));
      return IntImm(DataType::Int64(), static_cast<int64_t>(value));
    }
    case Tok::kFloat: {
      TESSERA_ASSIGN_OR_RETURN(double value, ParseFloatLiteral(Next()));
      return FloatImm(DataType::Float64(), value);
    }
    case Tok::kIdent:
      break;
    default:
      if (IsOp("(")) {
        Next();
        TESSERA_ASSIGN_OR_RETURN(Expr inner, ParseExpr());
        TESSERA_RETURN_IF_ERROR(ExpectOp(")", "to close the parenthesis"));
        return inner;
      }
      return Expected("an expression");
  }
  Token name = Next();
  if (IsOp("(")) return ParseCallLike(name);
  if (IsOp("[")) {
    TESSERA_ASSIGN_OR_RETURN(Buffer buffer, LookupBuffer(name));
    TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> indices, ParseIndices(buffer, name));
    return buffer.Load(std::move(indices));
  }
  if (name.text == "True" || name.text == "False") {
    return IntImm(DataType::Bool(), name.text == "True" ? 1 : 0);
  }
  if (name.text == "inf" || name.text == "nan") {
    TESSERA_ASSIGN_OR_RETURN(double value, ParseFloatLiteral(name));
    return FloatImm(DataType::Float64(), value);
  }
  const Symbol* symbol = Lookup(name.text);
  if (symbol == nullptr) return Error(name, absl::StrCat("undefined variable '", name.text, "'"));
  if (!symbol->var.defined()) {
    return Error(name, absl::StrCat("'", name.text,
                                    "' is a buffer; expected a variable (a "
                                    "buffer is read as ",
                                    name.text, "[indices])"));
  }
  return symbol->var;
}

absl::StatusOr<std::vector<Expr>> Parser::ParseArgs(const Token& name, size_t count) {
  TESSERA_RETURN_IF_ERROR(ExpectOp("(", absl::StrCat("after '", name.text, "'")));
  std::vector<Expr> args;
  while (!IsOp(")")) {
    if (!args.empty()) {
      TESSERA_RETURN_IF_ERROR(
          ExpectOp(",", absl::StrCat("between arguments of '", name.text, "'")));
    }
    TESSERA_ASSIGN_OR_RETURN(Expr arg, ParseExpr());
    args.push_back(std::move(arg));
  }
  Next();
  if (args.size() != count) {
    return Error(name, absl::StrCat("'", name.text, "' takes ", count, " argument",
                                    count == 1 ? "" : "s", ", found ", args.size()));
  }
  return args;
}

absl::StatusOr<Expr> Parser::ParseImmediate(DataType dtype) {
  // Called at `(`; the caller has checked the shape `( [-] literal )`.
  Next();
  bool negative = IsOp("-");
  if (negative) Next();
  const Token lit = Next();
  Next();  // ')'
  if (dtype.is_float()) {
    double value;
    if (lit.kind == Tok::kInt) {
      TESSERA_ASSIGN_OR_RETURN(uint64_t magnitude, ParseIntMagnitude(lit, negative));
      value = static_cast<double>(magnitude);
    } else {
      TESSERA_ASSIGN_OR_RETURN(value, ParseFloatLiteral(lit));
    }
    return FloatImm(dtype, negative ? -value : value);
  }
  if (lit.kind != Tok::kInt) {
    return Error(lit, absl::StrCat("expected an integer literal for a ", dtype.ToString(),
                                   " immediate, found ", Describe(lit)));
  }
  TESSERA_ASSIGN_OR_RETURN(uint64_t magnitude, ParseIntMagnitude(lit, negative));
  return IntImm(dtype, static_cast<int64_t>(negative ? 0 - magnitude : magnitude));
}

absl::StatusOr<Expr> Parser::ParseBoolExpr(const std::string& what) {
  Token at = Peek();
  TESSERA_ASSIGN_OR_RETURN(Expr e, ParseExpr());
  if (!e.dtype().is_bool()) {
    return Error(at, absl::StrCat(what, " must be bool, found ", e.dtype().ToString()));
  }
  return e;
}

absl::StatusOr<Expr> Parser::ParseCallLike(const Token& name) {
  const std::string& fn = name.text;
  if (DataType::Parse(fn).ok()) {
    DataType dtype = *DataType::Parse(fn);
    // `float32(0.5)`, `int32(-3)`: an immediate; anything else inside is a cast.
    int k = IsOp("-", 1) ? 2 : 1;
    bool literal = Peek(k).kind == Tok::kInt || Peek(k).kind == Tok::kFloat || IsWord("inf", k) ||
                   IsWord("nan", k);
    if (literal && IsOp(")", k + 1)) return ParseImmediate(dtype);
    TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> args, ParseArgs(name, 1));
    return Cast(dtype, args[0]);
  }
  if (fn == "cast") {
    Next();
    TESSERA_ASSIGN_OR_RETURN(Token type_name, ExpectIdent("a dtype as the first argument of "
                                                          "'cast'"));
    TESSERA_ASSIGN_OR_RETURN(DataType dtype, ParseDType(type_name, type_name.text));
    TESSERA_RETURN_IF_ERROR(ExpectOp(",", "after the dtype of 'cast'"));
    TESSERA_ASSIGN_OR_RETURN(Expr value, ParseExpr());
    TESSERA_RETURN_IF_ERROR(ExpectOp(")", "to close 'cast'"));
    return Cast(dtype, std::move(value));
  }
  if (fn == "call_extern") {  // call_extern(dtype, "name", args...)
    Next();
    TESSERA_ASSIGN_OR_RETURN(Token type_name, ExpectIdent("a dtype as the first argument of "
                                                          "'call_extern'"));
    TESSERA_ASSIGN_OR_RETURN(DataType dtype, ParseDType(type_name, type_name.text));
    TESSERA_RETURN_IF_ERROR(ExpectOp(",", "after the dtype of 'call_extern'"));
    TESSERA_ASSIGN_OR_RETURN(std::string callee,
                             ExpectString("the function name of 'call_extern'"));
    if (callee.empty()) return Error(name, "'call_extern' needs a non-empty function name");
    std::vector<Expr> args;
    while (!IsOp(")")) {
      TESSERA_RETURN_IF_ERROR(ExpectOp(",", "between arguments of 'call_extern'"));
      TESSERA_ASSIGN_OR_RETURN(Expr arg, ParseExpr());
      args.push_back(std::move(arg));
    }
    Next();
    return CallExtern(dtype, std::move(callee), std::move(args));
  }
  if (fn == "select") {
    TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> args, ParseArgs(name, 3));
    if (!args[0].dtype().is_bool()) {
      return Error(name, absl::StrCat("condition of 'select' must be bool, found ",
                                      args[0].dtype().ToString()));
    }
    TESSERA_RETURN_IF_ERROR(CheckSameType(name, "'select'", args[1], args[2]));
    return Select(args[0], args[1], args[2]);
  }
  static const std::pair<const char*, BinaryOp> kBinaryFns[] = {{"floordiv", BinaryOp::kFloorDiv},
                                                                {"floormod", BinaryOp::kFloorMod},
                                                                {"min", BinaryOp::kMin},
                                                                {"max", BinaryOp::kMax}};
  for (const auto& [text, op] : kBinaryFns) {
    if (fn != text) continue;
    TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> args, ParseArgs(name, 2));
    return Binary(name, op, args[0], args[1]);
  }
  CallOp op;
  if (ParseCallOp(fn, &op)) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> args,
                             ParseArgs(name, static_cast<size_t>(CallOpArity(op))));
    if (args.size() == 2) {
      TESSERA_RETURN_IF_ERROR(CheckSameType(name, absl::StrCat("'", fn, "'"), args[0], args[1]));
    }
    return Call(op, std::move(args));
  }
  return Error(name, absl::StrCat("unknown function '", fn, "'"));
}

absl::StatusOr<Buffer> Parser::LookupBuffer(const Token& at) const {
  const Symbol* symbol = Lookup(at.text);
  if (symbol == nullptr) return Error(at, absl::StrCat("undefined buffer '", at.text, "'"));
  if (!symbol->buffer.defined()) {
    return Error(at, absl::StrCat("'", at.text, "' is a variable, not a buffer"));
  }
  return symbol->buffer;
}

absl::StatusOr<std::vector<Expr>> Parser::ParseIndices(const Buffer& buffer, const Token& at) {
  Next();  // '['
  std::vector<Expr> indices;
  if (IsOp("(") && IsOp(")", 1)) {  // `A[()]`: a zero-dimensional buffer
    Next();
    Next();
  } else {
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(Expr index, ParseExpr());
      indices.push_back(std::move(index));
      if (!IsOp(",")) break;
      Next();
      if (IsOp("]")) break;
    }
  }
  TESSERA_RETURN_IF_ERROR(ExpectOp("]", absl::StrCat("after the indices of '", at.text, "'")));
  if (static_cast<int>(indices.size()) != buffer.ndim()) {
    return Error(at, absl::StrCat("buffer '", at.text, "' has ", buffer.ndim(),
                                  " dimensions but is indexed with ", indices.size()));
  }
  return indices;
}

// ---- Ranges, regions, buffers, annotations -------------------------------------------

// Inverts the printer's range forms: `min:end` with constants, `0:extent`, and
// `min:min + extent`; any other `min:end` means extent = end - min.
absl::StatusOr<Range> Parser::RangeFromBounds(const Token& at, Expr min, Expr end) {
  if (IsInt64Imm(min) && IsInt64Imm(end)) {
    int64_t extent;
    if (__builtin_sub_overflow(*AsConstInt(end), *AsConstInt(min), &extent)) {
      return Error(at, "range extent does not fit in int64");
    }
    return Range{std::move(min), Expr(extent)};
  }
  if (IsInt64Imm(min) && *AsConstInt(min) == 0) return Range{std::move(min), std::move(end)};
  if (const auto* add = end.as<BinaryNode>()) {
    if (add->op == BinaryOp::kAdd && PrintExpr(add->a) == PrintExpr(min)) {
      return Range{std::move(min), add->b};
    }
  }
  TESSERA_ASSIGN_OR_RETURN(Expr extent, Binary(at, BinaryOp::kSub, end, min));
  return Range{std::move(min), std::move(extent)};
}

absl::StatusOr<Range> Parser::ParseRange(bool is_region) {
  Token at = Peek();
  TESSERA_ASSIGN_OR_RETURN(Expr first, ParseExpr());
  if (!IsOp(":")) {
    if (is_region) return Range{std::move(first), Expr(1)};
    return Range{Expr(0), std::move(first)};
  }
  Next();
  TESSERA_ASSIGN_OR_RETURN(Expr end, ParseExpr());
  return RangeFromBounds(at, std::move(first), std::move(end));
}

absl::StatusOr<std::vector<BufferRegion>> Parser::ParseRegions(const std::string& what) {
  Next();  // reads / writes
  TESSERA_RETURN_IF_ERROR(ExpectOp("(", absl::StrCat("after '", what, "'")));
  std::vector<BufferRegion> regions;
  while (!IsOp(")")) {
    if (!regions.empty()) TESSERA_RETURN_IF_ERROR(ExpectOp(",", "between regions"));
    if (IsOp(")")) break;
    TESSERA_ASSIGN_OR_RETURN(Token name, ExpectIdent(absl::StrCat("a buffer region in ", what)));
    TESSERA_ASSIGN_OR_RETURN(Buffer buffer, LookupBuffer(name));
    TESSERA_RETURN_IF_ERROR(ExpectOp("[", absl::StrCat("after buffer '", name.text, "'")));
    BufferRegion region{buffer, {}};
    if (IsOp("(") && IsOp(")", 1)) {
      Next();
      Next();
    } else {
      while (true) {
        TESSERA_ASSIGN_OR_RETURN(Range r, ParseRange(/*is_region=*/true));
        region.region.push_back(std::move(r));
        if (!IsOp(",")) break;
        Next();
        if (IsOp("]")) break;
      }
    }
    TESSERA_RETURN_IF_ERROR(ExpectOp("]", absl::StrCat("after the region of '", name.text, "'")));
    if (static_cast<int>(region.region.size()) != buffer.ndim()) {
      return Error(name, absl::StrCat("buffer '", name.text, "' has ", buffer.ndim(),
                                      " dimensions but its region has ", region.region.size()));
    }
    regions.push_back(std::move(region));
  }
  Next();
  TESSERA_RETURN_IF_ERROR(ExpectNewline(absl::StrCat("after ", what, "(...)")));
  return regions;
}

absl::StatusOr<std::vector<Expr>> Parser::ParseTuple(const std::string& what) {
  TESSERA_RETURN_IF_ERROR(ExpectOp("(", absl::StrCat("to open the ", what, " tuple")));
  std::vector<Expr> items;
  while (!IsOp(")")) {
    TESSERA_ASSIGN_OR_RETURN(Expr item, ParseExpr());
    items.push_back(std::move(item));
    if (!IsOp(",")) break;
    Next();
  }
  TESSERA_RETURN_IF_ERROR(ExpectOp(")", absl::StrCat("to close the ", what, " tuple")));
  return items;
}

// After the `(` of `Buffer(...)`, `alloc_buffer(...)` or `allocate(...)`; consumes the `)`.
absl::StatusOr<Buffer> Parser::ParseBufferArgs(const std::string& name, const Token& at) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> shape, ParseTuple("shape"));
  TESSERA_RETURN_IF_ERROR(ExpectOp(",", "after the buffer shape"));
  Token dtype_at = Peek();
  TESSERA_ASSIGN_OR_RETURN(std::string dtype_name, ExpectString("a dtype string such as "
                                                                "\"float32\""));
  TESSERA_ASSIGN_OR_RETURN(DataType dtype, ParseDType(dtype_at, dtype_name));
  std::string scope = "global";
  std::vector<Expr> strides;
  std::set<std::string> seen;
  while (IsOp(",")) {
    Next();
    if (IsOp(")")) break;
    TESSERA_ASSIGN_OR_RETURN(Token key, ExpectIdent("'scope' or 'strides'"));
    if (key.text != "scope" && key.text != "strides") {
      return Error(key, absl::StrCat("unknown buffer argument '", key.text,
                                     "' (expected scope or strides)"));
    }
    if (!seen.insert(key.text).second) {
      return Error(key, absl::StrCat("duplicate buffer argument '", key.text, "'"));
    }
    TESSERA_RETURN_IF_ERROR(ExpectOp("=", absl::StrCat("after '", key.text, "'")));
    if (key.text == "scope") {
      TESSERA_ASSIGN_OR_RETURN(scope, ExpectString("a storage scope string"));
    } else {
      TESSERA_ASSIGN_OR_RETURN(strides, ParseTuple("strides"));
    }
  }
  TESSERA_RETURN_IF_ERROR(ExpectOp(")", absl::StrCat("to close the declaration of '", name, "'")));
  if (!strides.empty() && strides.size() != shape.size()) {
    return Error(at, absl::StrCat("buffer '", name, "' has ", shape.size(), " dimensions but ",
                                  strides.size(), " strides"));
  }
  Buffer buffer = Buffer::Make(name, dtype, std::move(shape), std::move(scope));
  if (!strides.empty()) buffer = buffer.WithStrides(std::move(strides));
  return buffer;
}

absl::StatusOr<AnnotationValue> Parser::ParseAnnotationValue() {
  if (Peek().kind == Tok::kString) return AnnotationValue(Next().text);
  if (IsWord("expr") && IsOp("(", 1)) {
    Next();
    Next();
    TESSERA_ASSIGN_OR_RETURN(Expr e, ParseExpr());
    TESSERA_RETURN_IF_ERROR(ExpectOp(")", "to close 'expr'"));
    return AnnotationValue(std::move(e));
  }
  if (IsOp("[")) {
    Next();
    std::vector<int64_t> ints;
    while (!IsOp("]")) {
      bool negative = IsOp("-");
      if (negative) Next();
      if (Peek().kind != Tok::kInt) return Expected("an integer in the list");
      TESSERA_ASSIGN_OR_RETURN(uint64_t magnitude, ParseIntMagnitude(Next(), negative));
      ints.push_back(static_cast<int64_t>(negative ? 0 - magnitude : magnitude));
      if (!IsOp(",")) break;
      Next();
    }
    TESSERA_RETURN_IF_ERROR(ExpectOp("]", "to close the list"));
    return AnnotationValue(std::move(ints));
  }
  bool negative = IsOp("-");
  if (negative) Next();
  if (Peek().kind == Tok::kInt) {
    TESSERA_ASSIGN_OR_RETURN(uint64_t magnitude, ParseIntMagnitude(Next(), negative));
    return AnnotationValue(static_cast<int64_t>(negative ? 0 - magnitude : magnitude));
  }
  if (Peek().kind == Tok::kFloat || IsWord("inf") || IsWord("nan")) {
    TESSERA_ASSIGN_OR_RETURN(double value, ParseFloatLiteral(Next()));
    return AnnotationValue(negative ? -value : value);
  }
  return Expected("an annotation value (number, string, [ints] or expr(...))");
}

absl::StatusOr<Annotations> Parser::ParseDict() {
  TESSERA_RETURN_IF_ERROR(ExpectOp("{", "to open the annotation dict"));
  Annotations annotations;
  while (!IsOp("}")) {
    Token key_at = Peek();
    TESSERA_ASSIGN_OR_RETURN(std::string key, ExpectString("a string key"));
    TESSERA_RETURN_IF_ERROR(ExpectOp(":", "after the annotation key"));
    TESSERA_ASSIGN_OR_RETURN(AnnotationValue value, ParseAnnotationValue());
    if (!annotations.emplace(key, std::move(value)).second) {
      return Error(key_at, absl::StrCat("duplicate annotation key \"", key, "\""));
    }
    if (!IsOp(",")) break;
    Next();
  }
  TESSERA_RETURN_IF_ERROR(ExpectOp("}", "to close the annotation dict"));
  return annotations;
}

// `name` or `name: dtype` (variables are int64 unless declared otherwise).
absl::StatusOr<Var> Parser::ParseVarDecl(Token* name) {
  TESSERA_ASSIGN_OR_RETURN(*name, ExpectIdent("a variable name"));
  DataType dtype = DataType::Index();
  if (IsOp(":")) {
    Next();
    TESSERA_ASSIGN_OR_RETURN(Token type_name, ExpectIdent("a dtype after ':'"));
    TESSERA_ASSIGN_OR_RETURN(dtype, ParseDType(type_name, type_name.text));
  }
  return Var(name->text, dtype);
}

// ---- Statements -------------------------------------------------------------------------

absl::StatusOr<Stmt> Parser::ParseSuite() {
  TESSERA_RETURN_IF_ERROR(ExpectNewline("after ':'"));
  if (Peek().kind != Tok::kIndent) return Expected("an indented block");
  Next();
  std::vector<Stmt> stmts;
  while (Peek().kind != Tok::kDedent) {
    TESSERA_ASSIGN_OR_RETURN(Stmt s, ParseStmt());
    stmts.push_back(std::move(s));
  }
  Next();
  return SeqStmt(std::move(stmts));
}

absl::StatusOr<Stmt> Parser::ParseStmt() {
  DepthGuard guard(this);
  if (guard.too_deep()) return Error(Peek(), "statements nested too deeply");
  if (IsWord("for")) return ParseFor();
  if (IsWord("if")) return ParseIf();
  if (IsWord("with") && IsWord("block", 1)) return ParseBlock();
  if (IsWord("with") && IsWord("allocate", 1)) return ParseAllocate();
  if (IsWord("evaluate") && IsOp("(", 1)) {
    Next();
    Next();
    TESSERA_ASSIGN_OR_RETURN(Expr value, ParseExpr());
    TESSERA_RETURN_IF_ERROR(ExpectOp(")", "to close 'evaluate'"));
    TESSERA_RETURN_IF_ERROR(ExpectNewline("after evaluate(...)"));
    return Evaluate(std::move(value));
  }
  if (IsWord("pass")) {
    Next();
    TESSERA_RETURN_IF_ERROR(ExpectNewline("after 'pass'"));
    return SeqStmt({});
  }
  if (Peek().kind == Tok::kIdent && IsOp("[", 1)) return ParseStore();
  if (IsWord("else")) return Error(Peek(), "'else' without a matching 'if'");
  const Token& t = Peek();
  static const std::set<std::string> kDeclarations = {"where", "reads", "writes", "block_attr",
                                                      "func_attr"};
  if (t.kind == Tok::kIdent &&
      (IsOp("=", 1) || IsOp(":", 1) || (kDeclarations.count(t.text) && IsOp("(", 1)) ||
       (t.text == "with" && IsWord("init", 1)))) {
    return Error(t, absl::StrCat("unexpected ", Describe(t),
                                 ": block declarations (iteration variables, where, reads, "
                                 "writes, block_attr, alloc_buffer, init) must come before the "
                                 "block's statements"));
  }
  return Expected("a statement (for, if, with block/allocate, evaluate, pass or a buffer store)");
}

absl::StatusOr<Stmt> Parser::ParseStore() {
  Token name = Next();
  TESSERA_ASSIGN_OR_RETURN(Buffer buffer, LookupBuffer(name));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> indices, ParseIndices(buffer, name));
  TESSERA_RETURN_IF_ERROR(ExpectOp("=", "in the buffer store"));
  Token at = Peek();
  TESSERA_ASSIGN_OR_RETURN(Expr value, ParseExpr());
  bool immediate = value.as<IntImmNode>() != nullptr || value.as<FloatImmNode>() != nullptr;
  if (value.dtype() != buffer.dtype() && !immediate) {
    return Error(at, absl::StrCat("cannot store a ", value.dtype().ToString(), " value into ",
                                  buffer.dtype().ToString(), " buffer '", name.text, "'"));
  }
  TESSERA_RETURN_IF_ERROR(ExpectNewline("after the buffer store"));
  return BufferStore(buffer, std::move(value), std::move(indices));
}

absl::StatusOr<Stmt> Parser::ParseFor() {
  Next();  // for
  Token name;
  TESSERA_ASSIGN_OR_RETURN(Var var, ParseVarDecl(&name));
  TESSERA_RETURN_IF_ERROR(ExpectWord("in", "after the loop variable"));
  TESSERA_ASSIGN_OR_RETURN(Token kind_name, ExpectIdent("a loop kind (range, parallel, "
                                                        "vectorized, unroll, thread_binding)"));
  ForKind kind;
  if (kind_name.text == "range") {
    kind = ForKind::kSerial;
  } else if (!ParseForKind(kind_name.text, &kind)) {
    return Error(kind_name, absl::StrCat("unknown loop kind '", kind_name.text,
                                         "' (expected range, serial, parallel, vectorized, "
                                         "unroll or thread_binding)"));
  }
  TESSERA_RETURN_IF_ERROR(ExpectOp("(", absl::StrCat("after '", kind_name.text, "'")));
  TESSERA_ASSIGN_OR_RETURN(Expr extent, ParseExpr());
  std::string tag;
  Annotations annotations;
  if (kind == ForKind::kThreadBinding) {
    TESSERA_RETURN_IF_ERROR(ExpectOp(",", "and a thread tag after the extent"));
    Token tag_at = Peek();
    TESSERA_ASSIGN_OR_RETURN(tag, ExpectString("a thread tag such as \"threadIdx.x\""));
    if (tag.empty()) return Error(tag_at, "thread tag must not be empty");
  }
  if (IsOp(",") && IsWord("annotations", 1)) {
    Next();
    Next();
    TESSERA_RETURN_IF_ERROR(ExpectOp("=", "after 'annotations'"));
    TESSERA_ASSIGN_OR_RETURN(annotations, ParseDict());
  }
  TESSERA_RETURN_IF_ERROR(ExpectOp(")", "to close the loop range"));
  TESSERA_RETURN_IF_ERROR(ExpectOp(":", "after the for header"));
  scopes_.emplace_back();
  absl::Status defined = Define(name, Symbol{var, Buffer(), 0, 0});
  absl::StatusOr<Stmt> body = defined.ok() ? ParseSuite() : defined;
  scopes_.pop_back();
  if (!body.ok()) return body.status();
  return For(var, std::move(extent), kind, *std::move(body), std::move(tag),
             std::move(annotations));
}

absl::StatusOr<Stmt> Parser::ParseIf() {
  Next();  // if
  TESSERA_ASSIGN_OR_RETURN(Expr condition, ParseBoolExpr("if condition"));
  TESSERA_RETURN_IF_ERROR(ExpectOp(":", "after the if condition"));
  TESSERA_ASSIGN_OR_RETURN(Stmt then_case, ParseSuite());
  Stmt else_case;
  if (IsWord("else")) {
    Next();
    TESSERA_RETURN_IF_ERROR(ExpectOp(":", "after 'else'"));
    TESSERA_ASSIGN_OR_RETURN(else_case, ParseSuite());
  }
  return IfThenElse(std::move(condition), std::move(then_case), std::move(else_case));
}

absl::StatusOr<Stmt> Parser::ParseAllocate() {
  Next();             // with
  Token at = Next();  // allocate
  TESSERA_RETURN_IF_ERROR(ExpectOp("(", "after 'allocate'"));
  // The name comes after `as`; parse the declaration first, then rename.
  TESSERA_ASSIGN_OR_RETURN(Buffer buffer, ParseBufferArgs("the allocation", at));
  TESSERA_RETURN_IF_ERROR(ExpectWord("as", "after allocate(...)"));
  TESSERA_ASSIGN_OR_RETURN(Token name, ExpectIdent("the allocated buffer's name"));
  TESSERA_RETURN_IF_ERROR(ExpectOp(":", "after the allocate header"));
  buffer = buffer.WithName(name.text);
  scopes_.emplace_back();
  absl::Status defined = Define(name, Symbol{Var(), buffer, 0, 0});
  absl::StatusOr<Stmt> body = defined.ok() ? ParseSuite() : defined;
  scopes_.pop_back();
  if (!body.ok()) return body.status();
  return Allocate(buffer, *std::move(body));
}

absl::StatusOr<Stmt> Parser::ParseBlock() {
  Next();  // with
  Next();  // block
  TESSERA_RETURN_IF_ERROR(ExpectOp("(", "after 'block'"));
  BlockNode node;
  TESSERA_ASSIGN_OR_RETURN(node.name, ExpectString("the block name as a string"));
  TESSERA_RETURN_IF_ERROR(ExpectOp(")", "after the block name"));
  TESSERA_RETURN_IF_ERROR(ExpectOp(":", "after the block header"));
  TESSERA_RETURN_IF_ERROR(ExpectNewline("after ':'"));
  if (Peek().kind != Tok::kIndent) return Expected("the block's indented body");
  Next();
  scopes_.emplace_back();
  std::vector<Expr> bindings;
  Expr predicate = True();
  std::set<std::string> seen;  // single-use declarations
  auto once = [&](const Token& t) -> absl::Status {
    if (seen.insert(t.text).second) return absl::OkStatus();
    return Error(t, absl::StrCat("duplicate '", t.text, "' in block \"", node.name, "\""));
  };
  auto parse = [&]() -> absl::Status {
    while (true) {
      const Token& t = Peek();
      if (t.kind == Tok::kIdent && IsOp("=", 1) && IsWord("alloc_buffer", 2)) {
        Token name = Next();
        Token at = Next();
        Next();
        TESSERA_RETURN_IF_ERROR(ExpectOp("(", "after 'alloc_buffer'"));
        TESSERA_ASSIGN_OR_RETURN(Buffer buffer, ParseBufferArgs(name.text, at));
        TESSERA_RETURN_IF_ERROR(ExpectNewline("after alloc_buffer(...)"));
        TESSERA_RETURN_IF_ERROR(Define(name, Symbol{Var(), buffer, 0, 0}));
        node.alloc_buffers.push_back(buffer);
      } else if (t.kind == Tok::kIdent &&
                 (IsOp("=", 1) || (IsOp(":", 1) && Peek(2).kind == Tok::kIdent && IsOp("=", 3)))) {
        Token name;
        TESSERA_ASSIGN_OR_RETURN(Var var, ParseVarDecl(&name));
        TESSERA_RETURN_IF_ERROR(ExpectOp("=", "after the iteration variable"));
        TESSERA_RETURN_IF_ERROR(ExpectWord("axis",
                                           "(iteration variables are axis.spatial(...) "
                                           "or axis.reduce(...))"));
        TESSERA_RETURN_IF_ERROR(ExpectOp(".", "after 'axis'"));
        TESSERA_ASSIGN_OR_RETURN(Token kind, ExpectIdent("'spatial' or 'reduce'"));
        if (kind.text != "spatial" && kind.text != "reduce") {
          return Error(kind, absl::StrCat("unknown axis kind '", kind.text,
                                          "' (expected spatial or reduce)"));
        }
        TESSERA_RETURN_IF_ERROR(ExpectOp("(", absl::StrCat("after 'axis.", kind.text, "'")));
        TESSERA_ASSIGN_OR_RETURN(Range dom, ParseRange(/*is_region=*/false));
        TESSERA_RETURN_IF_ERROR(
            ExpectOp(",", absl::StrCat("and the binding of '", name.text, "' after its domain")));
        TESSERA_ASSIGN_OR_RETURN(Expr binding, ParseExpr());
        TESSERA_RETURN_IF_ERROR(ExpectOp(")", absl::StrCat("to close axis.", kind.text)));
        TESSERA_RETURN_IF_ERROR(ExpectNewline("after the iteration variable"));
        TESSERA_RETURN_IF_ERROR(Define(name, Symbol{var, Buffer(), 0, 0}));
        IterKind iter_kind = kind.text == "spatial" ? IterKind::kSpatial : IterKind::kReduction;
        node.iter_vars.push_back(IterVar{var, std::move(dom), iter_kind});
        bindings.push_back(std::move(binding));
      } else if (IsWord("where") && IsOp("(", 1)) {
        TESSERA_RETURN_IF_ERROR(once(Next()));
        Next();
        TESSERA_ASSIGN_OR_RETURN(predicate, ParseBoolExpr("block predicate"));
        TESSERA_RETURN_IF_ERROR(ExpectOp(")", "to close 'where'"));
        TESSERA_RETURN_IF_ERROR(ExpectNewline("after where(...)"));
      } else if ((IsWord("reads") || IsWord("writes")) && IsOp("(", 1)) {
        Token what = Peek();
        TESSERA_RETURN_IF_ERROR(once(what));
        TESSERA_ASSIGN_OR_RETURN(std::vector<BufferRegion> regions, ParseRegions(what.text));
        (what.text == "reads" ? node.reads : node.writes) = std::move(regions);
      } else if (IsWord("block_attr") && IsOp("(", 1)) {
        TESSERA_RETURN_IF_ERROR(once(Next()));
        Next();
        TESSERA_ASSIGN_OR_RETURN(node.annotations, ParseDict());
        TESSERA_RETURN_IF_ERROR(ExpectOp(")", "to close 'block_attr'"));
        TESSERA_RETURN_IF_ERROR(ExpectNewline("after block_attr(...)"));
      } else if (IsWord("with") && IsWord("init", 1)) {
        Next();
        TESSERA_RETURN_IF_ERROR(once(Next()));
        TESSERA_RETURN_IF_ERROR(ExpectOp("(", "after 'init'"));
        TESSERA_RETURN_IF_ERROR(ExpectOp(")", "after 'init('"));
        TESSERA_RETURN_IF_ERROR(ExpectOp(":", "after 'with init()'"));
        TESSERA_ASSIGN_OR_RETURN(node.init, ParseSuite());
      } else {
        break;
      }
    }
    std::vector<Stmt> body;
    while (Peek().kind != Tok::kDedent) {
      TESSERA_ASSIGN_OR_RETURN(Stmt s, ParseStmt());
      body.push_back(std::move(s));
    }
    Next();
    node.body = SeqStmt(std::move(body));
    return absl::OkStatus();
  };
  absl::Status status = parse();
  scopes_.pop_back();
  TESSERA_RETURN_IF_ERROR(status);
  return BlockRealize(std::move(bindings), std::move(predicate), MakeBlock(node));
}

absl::StatusOr<PrimFunc> Parser::ParseFunction() {
  std::string name;
  bool named = false;
  if (IsOp("@")) {
    Next();
    TESSERA_RETURN_IF_ERROR(ExpectWord("prim_func", "after '@'"));
    if (IsOp("(")) {
      Next();
      TESSERA_RETURN_IF_ERROR(ExpectWord("name", "in @prim_func(...)"));
      TESSERA_RETURN_IF_ERROR(ExpectOp("=", "after 'name'"));
      TESSERA_ASSIGN_OR_RETURN(name, ExpectString("the function name as a string"));
      TESSERA_RETURN_IF_ERROR(ExpectOp(")", "to close @prim_func(...)"));
      named = true;
    }
    TESSERA_RETURN_IF_ERROR(ExpectNewline("after the decorator"));
  }
  TESSERA_RETURN_IF_ERROR(ExpectWord("def", "to start a function"));
  TESSERA_ASSIGN_OR_RETURN(Token ident, ExpectIdent("the function name"));
  if (!named) name = ident.text;
  TESSERA_RETURN_IF_ERROR(ExpectOp("(", "after the function name"));
  scopes_.assign(1, {});
  std::vector<Buffer> params;
  while (!IsOp(")")) {
    TESSERA_ASSIGN_OR_RETURN(Token param, ExpectIdent("a parameter name"));
    TESSERA_RETURN_IF_ERROR(ExpectOp(":", absl::StrCat("after parameter '", param.text, "'")));
    TESSERA_RETURN_IF_ERROR(ExpectWord("Buffer",
                                       "(parameters are declared as "
                                       "name: Buffer(shape, \"dtype\"))"));
    TESSERA_RETURN_IF_ERROR(ExpectOp("(", "after 'Buffer'"));
    TESSERA_ASSIGN_OR_RETURN(Buffer buffer, ParseBufferArgs(param.text, param));
    TESSERA_RETURN_IF_ERROR(Define(param, Symbol{Var(), buffer, 0, 0}));
    params.push_back(buffer);
    if (!IsOp(",")) break;
    Next();
  }
  TESSERA_RETURN_IF_ERROR(ExpectOp(")", "to close the parameter list"));
  if (IsOp("->")) {
    Next();
    TESSERA_RETURN_IF_ERROR(ExpectWord("None", "after '->'"));
  }
  TESSERA_RETURN_IF_ERROR(ExpectOp(":", "after the function signature"));
  TESSERA_RETURN_IF_ERROR(ExpectNewline("after ':'"));
  if (Peek().kind != Tok::kIndent) return Expected("the function's indented body");
  Next();
  Annotations attrs;
  if (IsWord("func_attr") && IsOp("(", 1)) {
    Next();
    Next();
    TESSERA_ASSIGN_OR_RETURN(attrs, ParseDict());
    TESSERA_RETURN_IF_ERROR(ExpectOp(")", "to close 'func_attr'"));
    TESSERA_RETURN_IF_ERROR(ExpectNewline("after func_attr(...)"));
  }
  std::vector<Stmt> body;
  while (Peek().kind != Tok::kDedent) {
    TESSERA_ASSIGN_OR_RETURN(Stmt s, ParseStmt());
    body.push_back(std::move(s));
  }
  Next();
  return PrimFunc::Make(name, std::move(params), SeqStmt(std::move(body)), std::move(attrs));
}

absl::StatusOr<std::vector<PrimFunc>> Parser::ParseFunctions(bool single) {
  std::vector<PrimFunc> funcs;
  std::set<std::string> names;
  if (Peek().kind == Tok::kEnd) return Expected("a function ('@prim_func' or 'def')");
  while (Peek().kind != Tok::kEnd) {
    if (single && !funcs.empty()) {
      return Expected(absl::StrCat("end of input after function '", funcs[0].name(),
                                   "' (ParseModule reads several functions)"));
    }
    Token start = Peek();
    TESSERA_ASSIGN_OR_RETURN(PrimFunc f, ParseFunction());
    if (!names.insert(f.name()).second) {
      return Error(start, absl::StrCat("duplicate function name '", f.name(), "'"));
    }
    funcs.push_back(std::move(f));
  }
  return funcs;
}

absl::StatusOr<std::vector<PrimFunc>> ParseAll(const std::string& text, bool single) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenizer(text).Run());
  return Parser(std::move(tokens)).ParseFunctions(single);
}

}  // namespace

absl::StatusOr<PrimFunc> ParseFunc(const std::string& text) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<PrimFunc> funcs, ParseAll(text, /*single=*/true));
  return funcs[0];
}

absl::StatusOr<IRModule> ParseModule(const std::string& text) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<PrimFunc> funcs, ParseAll(text, /*single=*/false));
  IRModule mod;
  for (const PrimFunc& f : funcs) mod.Update(f);
  return mod;
}

}  // namespace tessera
