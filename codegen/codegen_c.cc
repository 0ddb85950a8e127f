#include "codegen/codegen_c.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/c_prelude.h"
#include "codegen/lower.h"
#include "codegen/lower_internal.h"
#include "ir/functor.h"

namespace tessera {
namespace {

constexpr int64_t kMaxStackBytes = 32 * 1024;
constexpr int64_t kMaxUnrollPragma = 65534;  // GCC's limit for `#pragma GCC unroll`

bool IsCIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// Removes one pair of parentheses that encloses all of `s`.
std::string StripParens(const std::string& s) {
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return s;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && --depth == 0 && i + 1 != s.size()) return s;
  }
  return s.substr(1, s.size() - 2);
}

class FunctionEmitter {
 public:
  explicit FunctionEmitter(std::string symbol) : symbol_(std::move(symbol)) {}

  absl::Status Emit(const PrimFunc& lowered, std::string* out) {
    absl::StrAppend(&code_, "// ", lowered.name(), "\n");
    absl::StrAppend(&code_, "int32_t ", symbol_, "(void** args) {\n");
    indent_ = 1;
    for (size_t i = 0; i < lowered.params().size(); ++i) {
      const Buffer& param = lowered.params()[i];
      TESSERA_RETURN_IF_ERROR(CheckDType(param.dtype(), param.name()));
      std::string type = StorageType(param.dtype());
      std::string name = Define(param.get(), param.name());
      Line(absl::StrCat(type, "* restrict ", name, " = (", type, "*)args[", i, "];"));
    }
    EmitStmt(lowered.body());
    Line("return 0;");
    code_ += "}\n";
    TESSERA_RETURN_IF_ERROR(status_);
    *out += code_;
    return absl::OkStatus();
  }

 private:
  // ---- names and types ------------------------------------------------------------------

  std::string Define(const void* key, const std::string& hint) {
    std::string base;
    for (char c : hint) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "v_" + base;
    if (base.rfind("tessera_", 0) == 0 || base.rfind("TESSERA_", 0) == 0) base = "v_" + base;
    std::string name = base;
    for (int n = 1; CReservedNames().count(name) || used_.count(name); ++n) {
      name = absl::StrCat(base, "_", n);
    }
    used_.insert(name);
    names_[key] = name;
    return name;
  }

  std::string NameOf(const void* key, const std::string& what) {
    auto it = names_.find(key);
    if (it != names_.end()) return it->second;
    Fail(absl::StrCat("cpu codegen: free variable ", what,
                      " (only loop variables and parameters can be referenced)"));
    return what;
  }

  absl::Status CheckDType(DataType t, const std::string& where) {
    return lower_internal::CheckEmittableDType(t, "cpu", where);
  }

  // The C type values of `t` are computed in (float16/bfloat16 compute in float).
  static std::string ValueType(DataType t) {
    switch (t.code()) {
      case DataType::Code::kFloat:
        return t.bits() == 64 ? "double" : "float";
      case DataType::Code::kBFloat:
        return "float";
      case DataType::Code::kInt:
        return absl::StrCat("int", t.bits(), "_t");
      case DataType::Code::kUInt:
        return absl::StrCat("uint", t.bits(), "_t");
      case DataType::Code::kBool:
        return "int";
    }
    return "int";
  }

  // The C type elements of `t` are stored as.
  static std::string StorageType(DataType t) {
    if (t.code() == DataType::Code::kFloat && t.bits() == 16) return "_Float16";
    if (t.code() == DataType::Code::kBFloat) return "uint16_t";
    if (t.is_bool()) return "uint8_t";
    return ValueType(t);
  }

  // Suffix of the tessera_min_/max_ helpers for values of `t`.
  static std::string HelperSuffix(DataType t) {
    if (t.is_float()) return t.bits() == 64 ? "f64" : "f32";
    if (t.is_bool()) return "i32";
    return absl::StrCat(t.is_uint() ? "u" : "i", t.bits());
  }

  // "f" for float math functions (expf), "" for double (exp).
  static const char* MathSuffix(DataType t) { return t.bits() == 64 ? "" : "f"; }

  void Fail(const std::string& message) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(message);
  }

  // ---- expressions ----------------------------------------------------------------------

  std::string FloatLiteral(DataType t, double v) {
    bool is_double = t.bits() == 64;
    if (std::isnan(v)) return is_double ? "((double)NAN)" : "NAN";
    if (std::isinf(v)) {
      std::string inf = is_double ? "((double)INFINITY)" : "INFINITY";
      return v < 0 ? "(-" + inf + ")" : inf;
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), is_double ? "%.17g" : "%.9g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    if (!is_double) s += "f";
    return v < 0 ? "(" + s + ")" : s;
  }

  std::string IntLiteral(DataType t, int64_t v) {
    if (t.is_bool()) return v ? "1" : "0";
    if (v == std::numeric_limits<int64_t>::min()) return "INT64_MIN";
    std::string s = std::to_string(v);
    if (v > std::numeric_limits<int32_t>::max() || v < std::numeric_limits<int32_t>::min()) {
      s = absl::StrCat(t.is_uint() ? "UINT64_C(" : "INT64_C(", v, ")");
    }
    return v < 0 ? "(" + s + ")" : s;
  }

  std::string EmitExpr(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::kIntImm:
        return IntLiteral(e.dtype(), e.as<IntImmNode>()->value);
      case ExprKind::kFloatImm:
        return FloatLiteral(e.dtype(), e.as<FloatImmNode>()->value);
      case ExprKind::kVar: {
        const auto* v = e.as<VarNode>();
        return NameOf(v, v->name);
      }
      case ExprKind::kBinary:
        return EmitBinary(e.as<BinaryNode>());
      case ExprKind::kNot:
        return "(!" + EmitExpr(e.as<NotNode>()->a) + ")";
      case ExprKind::kSelect: {
        const auto* s = e.as<SelectNode>();
        return absl::StrCat("(", EmitExpr(s->condition), " ? ", EmitExpr(s->true_value), " : ",
                            EmitExpr(s->false_value), ")");
      }
      case ExprKind::kCast:
        return EmitCast(e.dtype(), e.as<CastNode>()->value);
      case ExprKind::kBufferLoad: {
        const auto* load = e.as<BufferLoadNode>();
        std::string access = Access(load->buffer, load->indices);
        DataType t = load->buffer.dtype();
        if (t.code() == DataType::Code::kBFloat) return "tessera_bf16_to_f32(" + access + ")";
        if (t.code() == DataType::Code::kFloat && t.bits() == 16) return "(float)" + access;
        return access;
      }
      case ExprKind::kCall:
        return EmitCall(e.as<CallNode>());
    }
    return "0";
  }

  std::string Access(const Buffer& buffer, const std::vector<Expr>& indices) {
    if (indices.size() != 1) {
      Fail(absl::StrCat("cpu codegen: access to ", buffer.name(), " is not flattened"));
      return "0";
    }
    return absl::StrCat(NameOf(buffer.get(), buffer.name()), "[", StripParens(EmitExpr(indices[0])),
                        "]");
  }

  std::string EmitBinary(const BinaryNode* op) {
    DataType t = op->a.dtype();
    std::string a = EmitExpr(op->a);
    std::string b = EmitExpr(op->b);
    // Two int64 literals would be multiplied (and overflow) in C's int.
    if (t == DataType::Int64() && AsConstInt(op->a) && AsConstInt(op->b)) a = "(int64_t)" + a;
    bool is_signed_int = t.is_int();
    switch (op->op) {
      case BinaryOp::kFloorDiv:
        if (t.is_float()) return absl::StrCat("floor", MathSuffix(t), "(", a, " / ", b, ")");
        if (is_signed_int) return Narrow(t, "tessera_floordiv_i64(" + a + ", " + b + ")");
        return "(" + a + " / " + b + ")";
      case BinaryOp::kFloorMod:
        if (t.is_float()) {
          return absl::StrCat("tessera_floormod_", t.bits() == 64 ? "f64" : "f32", "(", a, ", ", b,
                              ")");
        }
        if (is_signed_int) return Narrow(t, "tessera_floormod_i64(" + a + ", " + b + ")");
        return "(" + a + " % " + b + ")";
      case BinaryOp::kMin:
        return absl::StrCat("tessera_min_", HelperSuffix(t), "(", a, ", ", b, ")");
      case BinaryOp::kMax:
        return absl::StrCat("tessera_max_", HelperSuffix(t), "(", a, ", ", b, ")");
      default:
        return absl::StrCat("(", a, " ", BinaryOpName(op->op), " ", b, ")");
    }
  }

  // An int64 helper's result as a value of `t`.
  static std::string Narrow(DataType t, const std::string& s) {
    if (t == DataType::Int64()) return s;
    return "((" + ValueType(t) + ")" + s + ")";
  }

  std::string EmitCast(DataType to, const Expr& value) {
    std::string v = EmitExpr(value);
    if (!CheckDType(to, "a cast").ok()) {
      Fail(absl::StrCat("cpu codegen: unsupported dtype ", to.ToString(), " in a cast"));
      return v;
    }
    if (to.is_bool()) return "(" + v + " != 0)";
    bool from_float = ValueType(value.dtype()) == "float";
    if (to.code() == DataType::Code::kBFloat) {
      return "tessera_bf16_round(" + (from_float ? v : "(float)" + v) + ")";
    }
    if (to.code() == DataType::Code::kFloat && to.bits() == 16) {
      return "((float)(_Float16)" + v + ")";
    }
    return "((" + ValueType(to) + ")" + v + ")";
  }

  std::string EmitCall(const CallNode* op) {
    if (op->op == CallOp::kExtern) {  // tensor intrinsics: none has a C implementation
      Fail(absl::StrCat("cpu codegen: unsupported extern call ", op->name));
      return "0";
    }
    DataType t = op->dtype;
    std::vector<std::string> args;
    for (const Expr& a : op->args) args.push_back(EmitExpr(a));
    if (!t.is_float()) {
      // Integer arguments: exact where C has it, otherwise computed in double.
      switch (op->op) {
        case CallOp::kAbs:
          return Narrow(t, "((int64_t)llabs((long long)" + args[0] + "))");
        case CallOp::kFloor:
        case CallOp::kCeil:
          return args[0];
        default:
          break;
      }
      for (std::string& a : args) a = "(double)" + a;
      t = DataType::Float64();
    }
    const std::string f = MathSuffix(t);
    const std::string one = t.bits() == 64 ? "1.0" : "1.0f";
    std::string result;
    switch (op->op) {
      case CallOp::kExp:
        result = "exp" + f + "(" + args[0] + ")";
        break;
      case CallOp::kLog:
        result = "log" + f + "(" + args[0] + ")";
        break;
      case CallOp::kSqrt:
        result = "sqrt" + f + "(" + args[0] + ")";
        break;
      case CallOp::kRsqrt:
        result = "(" + one + " / sqrt" + f + "(" + args[0] + "))";
        break;
      case CallOp::kTanh:
        result = "tanh" + f + "(" + args[0] + ")";
        break;
      case CallOp::kErf:
        result = "erf" + f + "(" + args[0] + ")";
        break;
      case CallOp::kPow:
        result = "pow" + f + "(" + args[0] + ", " + args[1] + ")";
        break;
      case CallOp::kAbs:
        result = "fabs" + f + "(" + args[0] + ")";
        break;
      case CallOp::kSigmoid:
        result = "(" + one + " / (" + one + " + exp" + f + "(-" + args[0] + ")))";
        break;
      case CallOp::kFloor:
        result = "floor" + f + "(" + args[0] + ")";
        break;
      case CallOp::kCeil:
        result = "ceil" + f + "(" + args[0] + ")";
        break;
      case CallOp::kExtern:
        break;  // rejected above
    }
    if (!op->dtype.is_float()) return "((" + ValueType(op->dtype) + ")" + result + ")";
    return result;
  }

  // ---- statements -----------------------------------------------------------------------

  void Line(const std::string& text) {
    code_.append(2 * indent_, ' ');
    code_ += text;
    code_ += '\n';
  }

  void EmitBlock(const Stmt& s) {
    ++indent_;
    EmitStmt(s);
    --indent_;
  }

  void EmitStmt(const Stmt& s) {
    if (!s.defined() || !status_.ok()) return;
    switch (s.kind()) {
      case StmtKind::kBufferStore: {
        const auto* store = s.as<BufferStoreNode>();
        std::string value = StripParens(EmitExpr(store->value));
        DataType t = store->buffer.dtype();
        if (t.code() == DataType::Code::kBFloat) {
          value = "tessera_f32_to_bf16(" + value + ")";
        } else if (t.code() == DataType::Code::kFloat && t.bits() == 16) {
          value = "(_Float16)(" + value + ")";
        } else if (t.is_bool()) {
          value = "(uint8_t)(" + value + ")";
        }
        Line(absl::StrCat(Access(store->buffer, store->indices), " = ", value, ";"));
        return;
      }
      case StmtKind::kSeq:
        for (const Stmt& c : s.as<SeqStmtNode>()->seq) EmitStmt(c);
        return;
      case StmtKind::kIfThenElse: {
        const auto* ite = s.as<IfThenElseNode>();
        Line("if (" + StripParens(EmitExpr(ite->condition)) + ") {");
        EmitBlock(ite->then_case);
        if (ite->else_case.defined()) {
          Line("} else {");
          EmitBlock(ite->else_case);
        }
        Line("}");
        return;
      }
      case StmtKind::kEvaluate:
        Line("(void)" + EmitExpr(s.as<EvaluateNode>()->value) + ";");
        return;
      case StmtKind::kFor:
        EmitFor(s.as<ForNode>());
        return;
      case StmtKind::kAllocate:
        EmitAllocate(s.as<AllocateNode>());
        return;
      case StmtKind::kBlock:
      case StmtKind::kBlockRealize:
        Fail("cpu codegen: the function still has blocks (lower it first)");
        return;
    }
  }

  // True if every store below `loop` writes an index that depends on its variable, so that
  // iterations write distinct elements and `omp simd` is safe.
  static bool StoresDependOn(const ForNode* loop) {
    bool all = true;
    const VarNode* var = loop->loop_var.get();
    PostOrderVisitStmts(loop->body, [&](const Stmt& st) {
      if (const auto* store = st.as<BufferStoreNode>()) {
        bool uses = false;
        for (const Expr& i : store->indices) {
          uses |= UsesVar(i, [&](const VarNode* v) { return v == var; });
        }
        all &= uses;
      }
    });
    return all;
  }

  void EmitFor(const ForNode* op) {
    if (op->for_kind == ForKind::kThreadBinding) {
      Fail(absl::StrCat("cpu codegen: loop ", op->loop_var.name(), " bound to ", op->thread_tag));
      return;
    }
    const int64_t* extent = AsConstInt(op->extent);
    std::string extent_text = StripParens(EmitExpr(op->extent));
    bool saved_parallel = in_parallel_, saved_simd = in_simd_;
    int64_t saved_budget = unroll_budget_;

    int collapse = 0;  // loops of this nest under one `omp parallel for`
    if (op->for_kind == ForKind::kParallel && !in_parallel_ && !in_simd_) {
      collapse = 1;
      for (const ForNode* inner = op->body.as<ForNode>();
           inner != nullptr && inner->for_kind == ForKind::kParallel && AsConstInt(inner->extent);
           inner = inner->body.as<ForNode>()) {
        ++collapse;
      }
      Line(collapse > 1 ? absl::StrCat("#pragma omp parallel for collapse(", collapse, ")")
                        : "#pragma omp parallel for");
      in_parallel_ = true;
    } else if (op->for_kind == ForKind::kVectorized && !in_simd_) {
      if (StoresDependOn(op)) {
        Line("#pragma omp simd");
        in_simd_ = true;
      } else {
        Line("// vectorized: left to the compiler, a store does not depend on " +
             op->loop_var.name());
      }
    } else if (extent != nullptr && *extent > 1 &&
               (op->for_kind == ForKind::kUnrolled ||
                (unroll_budget_ > 0 && op->for_kind == ForKind::kSerial &&
                 lower_internal::InnerIterations(op->body) >= 0 &&
                 *extent * lower_internal::InnerIterations(op->body) <= unroll_budget_))) {
      Line(absl::StrCat("#pragma GCC unroll ", std::min(*extent, kMaxUnrollPragma)));
    }
    auto it = op->annotations.find("pragma_auto_unroll_max_step");
    if (it != op->annotations.end()) {
      if (const auto* step = std::get_if<int64_t>(&it->second)) unroll_budget_ = *step;
    }

    // A collapsed nest is printed as perfectly nested loops with no pragma between them.
    const ForNode* loop = op;
    int opened = 0;
    for (int level = 0; level < std::max(collapse, 1); ++level) {
      std::string var = Define(loop->loop_var.get(), loop->loop_var.name());
      std::string text = level == 0 ? extent_text : StripParens(EmitExpr(loop->extent));
      Line(absl::StrCat("for (", ValueType(loop->loop_var.dtype()), " ", var, " = 0; ", var, " < ",
                        text, "; ++", var, ") {"));
      ++indent_;
      ++opened;
      if (level + 1 < collapse) loop = loop->body.as<ForNode>();
    }
    EmitStmt(loop->body);
    for (int i = 0; i < opened; ++i) {
      --indent_;
      Line("}");
    }
    in_parallel_ = saved_parallel;
    in_simd_ = saved_simd;
    unroll_budget_ = saved_budget;
  }

  void EmitAllocate(const AllocateNode* op) {
    const Buffer& buffer = op->buffer;
    if (absl::Status s = CheckDType(buffer.dtype(), buffer.name()); !s.ok()) {
      Fail(std::string(s.message()));
      return;
    }
    int64_t elements = buffer.NumElements();
    if (elements < 0) {
      Fail(absl::StrCat("cpu codegen: allocation ", buffer.name(), " has a non-constant size"));
      return;
    }
    elements = std::max<int64_t>(elements, 1);
    std::string type = StorageType(buffer.dtype());
    int64_t bytes = elements * buffer.dtype().bytes();
    Line("{");
    ++indent_;
    std::string name = Define(buffer.get(), buffer.name());
    bool on_heap = bytes > kMaxStackBytes;
    if (!on_heap) {
      Line(absl::StrCat(type, " ", name, "[", elements, "] __attribute__((aligned(64)));  // ",
                        buffer.scope()));
    } else {
      Line(absl::StrCat(type, "* restrict ", name, " = (", type, "*)tessera_alloc(", bytes,
                        ");  // ", buffer.scope()));
      // A parallel region cannot be left with return.
      Line(absl::StrCat("if (", name, " == NULL) ",
                        in_parallel_ ? "__builtin_trap();" : "return -1;"));
    }
    EmitStmt(op->body);
    if (on_heap) Line("free(" + name + ");");
    --indent_;
    Line("}");
  }

  std::string symbol_;
  std::string code_;
  int indent_ = 0;
  bool in_parallel_ = false;
  bool in_simd_ = false;
  int64_t unroll_budget_ = 0;
  std::unordered_map<const void*, std::string> names_;
  std::set<std::string> used_;
  absl::Status status_;
};

}  // namespace

absl::StatusOr<std::string> GenerateCModule(const std::vector<CFunction>& functions) {
  std::string out = kCPrelude;
  std::set<std::string> symbols;
  for (const CFunction& fn : functions) {
    if (!IsCIdentifier(fn.symbol) || CReservedNames().count(fn.symbol) ||
        fn.symbol.rfind("tessera_", 0) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cpu codegen: symbol '", fn.symbol,
          "' is not a usable C identifier (the prefix tessera_ is reserved for helpers)"));
    }
    if (!symbols.insert(fn.symbol).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("cpu codegen: symbol ", fn.symbol, " appears twice in one module"));
    }
    TESSERA_ASSIGN_OR_RETURN(PrimFunc lowered, LowerForCodegen(fn.func));
    out += "\n";
    FunctionEmitter emitter(fn.symbol);
    TESSERA_RETURN_IF_ERROR(emitter.Emit(lowered, &out));
  }
  return out;
}

absl::StatusOr<std::string> GenerateC(const PrimFunc& f, const std::string& symbol) {
  return GenerateCModule({CFunction{f, symbol}});
}

}  // namespace tessera
