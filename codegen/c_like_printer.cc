#include "codegen/c_like_printer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

#include "absl/strings/str_cat.h"
#include "codegen/lower_internal.h"
#include "ir/functor.h"

namespace tessera {
namespace codegen_internal {

std::string StripParens(const std::string& s) {
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return s;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && --depth == 0 && i + 1 != s.size()) return s;
  }
  return s.substr(1, s.size() - 2);
}

namespace {

// The double-precision libm function computing `op` on one argument.
std::string MathFunction(CallOp op) {
  switch (op) {
    case CallOp::kExp:
      return "exp";
    case CallOp::kLog:
      return "log";
    case CallOp::kSqrt:
      return "sqrt";
    case CallOp::kTanh:
      return "tanh";
    case CallOp::kErf:
      return "erf";
    case CallOp::kAbs:
      return "fabs";
    case CallOp::kFloor:
      return "floor";
    case CallOp::kCeil:
      return "ceil";
    default:
      return "";  // not a one-argument math function
  }
}

}  // namespace

CLikePrinter::CLikePrinter(CLikeOptions options, std::string* out)
    : options_(std::move(options)), out_(out) {}

// ---- names, errors, loop ranges ------------------------------------------------------------

std::string CLikePrinter::Define(const void* key, const std::string& hint) {
  std::string base;
  for (char c : hint) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0])) || base[0] == '_' ||
      base.rfind("tessera_", 0) == 0 || base.rfind("TESSERA_", 0) == 0) {
    base = "v_" + base;
  }
  std::string name = base;
  for (int n = 1; options_.reserved->count(name) || used_.count(name); ++n) {
    name = absl::StrCat(base, "_", n);
  }
  used_.insert(name);
  names_[key] = name;
  return name;
}

std::string CLikePrinter::NameOf(const void* key, const std::string& what) {
  auto it = names_.find(key);
  if (it != names_.end()) return it->second;
  Fail(absl::StrCat(options_.backend, " codegen: free variable ", what,
                    options_.free_variable_note));
  return what;
}

void CLikePrinter::Fail(const std::string& message) {
  if (status_.ok()) status_ = absl::InvalidArgumentError(message);
}

absl::Status CLikePrinter::CheckDType(DataType t, const std::string& where) const {
  return lower_internal::CheckEmittableDType(t, options_.backend, where);
}

int64_t CLikePrinter::AllocationElements(const Buffer& buffer) {
  if (absl::Status s = CheckDType(buffer.dtype(), buffer.name()); !s.ok()) {
    Fail(std::string(s.message()));
    return -1;
  }
  int64_t elements = buffer.NumElements();
  if (elements < 0) {
    Fail(absl::StrCat(options_.backend, " codegen: allocation ", buffer.name(),
                      " has a non-constant size"));
    return -1;
  }
  return std::max<int64_t>(elements, 1);
}

void CLikePrinter::BindLoopVar(const Var& var, const Expr& extent) {
  analyzer_.Bind(var, Range{Expr(0), extent});
}

// ---- lines ---------------------------------------------------------------------------------

void CLikePrinter::Line(const std::string& text) {
  out_->append(2 * indent_, ' ');
  *out_ += text;
  *out_ += '\n';
}

void CLikePrinter::EmitNested(const Stmt& s) {
  ++indent_;
  EmitStmt(s);
  --indent_;
}

void CLikePrinter::EmitStmt(const Stmt& s) {
  if (!s.defined() || !status_.ok()) return;
  switch (s.kind()) {
    case StmtKind::kBufferStore:
      EmitStore(s.as<BufferStoreNode>());
      return;
    case StmtKind::kSeq:
      for (const Stmt& c : s.as<SeqStmtNode>()->seq) EmitStmt(c);
      return;
    case StmtKind::kIfThenElse: {
      const auto* op = s.as<IfThenElseNode>();
      Line("if (" + StripParens(PrintExpr(op->condition)) + ") {");
      EmitNested(op->then_case);
      if (op->else_case.defined()) {
        Line("} else {");
        EmitNested(op->else_case);
      }
      Line("}");
      return;
    }
    case StmtKind::kEvaluate: {
      const Expr& value = s.as<EvaluateNode>()->value;
      const auto* call = value.as<CallNode>();
      bool is_extern = call != nullptr && call->op == CallOp::kExtern;
      Line((is_extern ? "" : "(void)") + PrintExpr(value) + ";");
      return;
    }
    case StmtKind::kFor:
      EmitFor(s.as<ForNode>());
      return;
    case StmtKind::kAllocate:
      EmitAllocate(s.as<AllocateNode>());
      return;
    case StmtKind::kBlock:
    case StmtKind::kBlockRealize:
      Fail(absl::StrCat(options_.backend, " codegen: ", options_.blocks_message));
      return;
  }
}

// ---- expressions ---------------------------------------------------------------------------

std::string CLikePrinter::IntLiteral(DataType t, int64_t v) const {
  if (t.is_bool()) return BoolLiteral(v != 0);
  if (v == std::numeric_limits<int64_t>::min()) return WideIntLiteral(t, v);
  std::string s = std::to_string(v);
  if (v > std::numeric_limits<int32_t>::max() || v < std::numeric_limits<int32_t>::min()) {
    s = WideIntLiteral(t, v);
  }
  return v < 0 ? "(" + s + ")" : s;
}

std::string CLikePrinter::FloatLiteral(DataType t, double v) const {
  if (std::isnan(v) || std::isinf(v)) return SpecialFloatLiteral(t, v);
  bool is_double = t.bits() == 64;
  char buf[64];
  std::snprintf(buf, sizeof(buf), is_double ? "%.17g" : "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (!is_double) s += "f";
  return v < 0 ? "(" + s + ")" : s;
}

std::string CLikePrinter::PrintExpr(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kIntImm:
      return IntLiteral(e.dtype(), e.as<IntImmNode>()->value);
    case ExprKind::kFloatImm:
      return FloatLiteral(e.dtype(), e.as<FloatImmNode>()->value);
    case ExprKind::kVar:
      return PrintVar(e.as<VarNode>());
    case ExprKind::kBinary:
      return PrintBinary(e.as<BinaryNode>());
    case ExprKind::kNot:
      return "(!" + PrintExpr(e.as<NotNode>()->a) + ")";
    case ExprKind::kSelect: {
      const auto* s = e.as<SelectNode>();
      return absl::StrCat("(", PrintExpr(s->condition), " ? ", PrintExpr(s->true_value), " : ",
                          PrintExpr(s->false_value), ")");
    }
    case ExprKind::kCast:
      return PrintCast(e.dtype(), e.as<CastNode>()->value);
    case ExprKind::kBufferLoad: {
      const auto* load = e.as<BufferLoadNode>();
      return LoadValue(load->buffer.dtype(), PrintLoadAccess(load));
    }
    case ExprKind::kCall:
      return PrintCall(e.as<CallNode>());
  }
  return "0";
}

std::string CLikePrinter::PrintAccess(const Buffer& buffer, const std::vector<Expr>& indices) {
  if (indices.size() != 1) {
    Fail(
        absl::StrCat(options_.backend, " codegen: access to ", buffer.name(), " is not flattened"));
    return "0";
  }
  return absl::StrCat(NameOf(buffer.get(), buffer.name()), "[", StripParens(PrintExpr(indices[0])),
                      "]");
}

std::string CLikePrinter::ValueType(DataType t) const {
  if (t.is_float()) return t.bits() == 64 ? "double" : "float";
  return IntegerType(t);
}

std::string CLikePrinter::Narrow(DataType t, const std::string& s) const {
  if (t == DataType::Int64()) return s;
  return "((" + ValueType(t) + ")" + s + ")";
}

bool CLikePrinter::IsNonNegativeDivision(const BinaryNode* op) {
  const int64_t* divisor = AsConstInt(op->b);
  return divisor != nullptr && *divisor > 0 && analyzer_.ConstIntBound(op->a).min >= 0;
}

std::string CLikePrinter::PrintBinary(const BinaryNode* op) {
  DataType t = op->a.dtype();
  std::string a = PrintExpr(op->a);
  std::string b = PrintExpr(op->b);
  // Two int64 literals would be computed (and overflow) in C's int.
  if (t == DataType::Int64() && AsConstInt(op->a) && AsConstInt(op->b)) {
    a = "(" + ValueType(t) + ")" + a;
  }
  switch (op->op) {
    case BinaryOp::kFloorDiv:
    case BinaryOp::kFloorMod: {
      bool div = op->op == BinaryOp::kFloorDiv;
      if (t.is_float()) {
        if (div) return absl::StrCat("floor", t.bits() == 64 ? "" : "f", "(", a, " / ", b, ")");
        return absl::StrCat(HelperName("floormod", t), "(", a, ", ", b, ")");
      }
      if (t.is_int() && !IsNonNegativeDivision(op)) return SignedIntFloorOp(op->op, t, a, b);
      return absl::StrCat("(", a, div ? " / " : " % ", b, ")");
    }
    case BinaryOp::kMin:
      return absl::StrCat(HelperName("min", t), "(", a, ", ", b, ")");
    case BinaryOp::kMax:
      return absl::StrCat(HelperName("max", t), "(", a, ", ", b, ")");
    default:
      return absl::StrCat("(", a, " ", BinaryOpName(op->op), " ", b, ")");
  }
}

std::string CLikePrinter::PrintCast(DataType to, const Expr& value) {
  std::string v = PrintExpr(value);
  if (!CheckDType(to, "a cast").ok()) {
    Fail(absl::StrCat(options_.backend, " codegen: unsupported dtype ", to.ToString(),
                      " in a cast"));
    return v;
  }
  if (to.is_bool()) return "(" + v + " != 0)";
  if (to.code() == DataType::Code::kBFloat || (to.is_float() && to.bits() == 16)) {
    return RoundToHalf(to, value.dtype(), v);
  }
  return "((" + ValueType(to) + ")" + v + ")";
}

std::string CLikePrinter::PrintExtern(const CallNode* op) {
  Fail(absl::StrCat(options_.backend, " codegen: unsupported extern call ", op->name));
  return "0";
}

namespace {

// The exponent of pow(x, e) when it is an immediate 1 to 4 and x computes without calls (so that
// repeating x costs only arithmetic the compiler shares); 0 otherwise.
int SmallIntegerPower(const CallNode* op) {
  if (op->args.size() != 2) return 0;
  double e = 0;
  if (const auto* f = op->args[1].as<FloatImmNode>()) e = f->value;
  if (const auto* i = op->args[1].as<IntImmNode>()) e = static_cast<double>(i->value);
  if (e != 1 && e != 2 && e != 3 && e != 4) return 0;
  bool calls = false;
  PostOrderVisitExprs(op->args[0], [&](const Expr& x) { calls |= x.as<CallNode>() != nullptr; });
  return calls ? 0 : static_cast<int>(e);
}

}  // namespace

std::string CLikePrinter::PrintCall(const CallNode* op) {
  if (op->op == CallOp::kExtern) return PrintExtern(op);
  DataType t = op->dtype;
  std::vector<std::string> args;
  for (const Expr& a : op->args) args.push_back(PrintExpr(a));
  if (!t.is_float()) {
    // Integer arguments: exact where C has it, otherwise computed in double.
    switch (op->op) {
      case CallOp::kAbs:
        return Narrow(t,
                      "((" + ValueType(DataType::Int64()) + ")llabs((long long)" + args[0] + "))");
      case CallOp::kFloor:
      case CallOp::kCeil:
        return args[0];
      default:
        break;
    }
    for (std::string& a : args) a = "(double)" + a;
    t = DataType::Float64();
  }
  const std::string f = t.bits() == 64 ? "" : "f";  // expf for float, exp for double
  const std::string one = t.bits() == 64 ? "1.0" : "1.0f";
  std::string r;
  switch (op->op) {
    case CallOp::kRsqrt:
      r = "(" + one + " / sqrt" + f + "(" + args[0] + "))";
      break;
    case CallOp::kExp:
      r = Exp(t, args[0]);
      break;
    case CallOp::kSigmoid:
      r = "(" + one + " / (" + one + " + " + Exp(t, "-" + args[0]) + "))";
      break;
    case CallOp::kPow:
      if (int power = SmallIntegerPower(op); power > 0) {
        // x * x * x: a vector multiply where powf is a scalar libm call per element (GPT-2's
        // exported GELU, Pow(x, 3): 62% of the block's time), within an ulp of powf.
        r = "(" + args[0];
        for (int i = 1; i < power; ++i) r += " * " + args[0];
        r += ")";
      } else {
        r = "pow" + f + "(" + args[0] + ", " + args[1] + ")";
      }
      break;
    case CallOp::kRoundTf32:  // a prelude helper on float32
      r = "tessera_round_tf32((float)" + args[0] + ")";
      break;
    default:  // one argument, the libm function of the same name
      r = MathFunction(op->op) + f + "(" + args[0] + ")";
      break;
  }
  if (!op->dtype.is_float()) return "((" + ValueType(op->dtype) + ")" + r + ")";
  return r;
}

}  // namespace codegen_internal
}  // namespace tessera
