#include "codegen/codegen_cuda.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "codegen/cuda_prelude.h"
#include "codegen/lower_gpu.h"
#include "codegen/lower_gpu_internal.h"
#include "codegen/lower_internal.h"
#include "codegen/verify_gpu.h"
#include "ir/arith/analyzer.h"
#include "ir/functor.h"

namespace tessera {
namespace {

using lower_gpu_internal::IsBlockIdxTag;
using lower_gpu_internal::ThreadDim;

constexpr const char* kDimNames[3] = {"x", "y", "z"};
constexpr const char* kLaneNames[4] = {"x", "y", "z", "w"};

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

bool IsF16(DataType t) { return t.code() == DataType::Code::kFloat && t.bits() == 16; }
bool IsBF16(DataType t) { return t.code() == DataType::Code::kBFloat && t.bits() == 16; }

// A vectorized store the emitter writes with one vector access per operand.
struct VectorPlan {
  int lanes = 0;
  std::string type;             // float4, half2, ...
  Expr store_base;              // element offset of lane 0
  std::vector<const BufferLoadNode*> loads;  // contiguous loads, each with its base
  std::vector<Expr> load_bases;
};

class KernelEmitter {
 public:
  KernelEmitter(const PrimFunc& lowered, const GpuKernelInfo& info, std::string* code)
      : func_(lowered), info_(info), code_(code) {}

  absl::Status Emit() {
    int64_t threads = info_.block[0] * info_.block[1] * info_.block[2];
    std::vector<std::string> params;
    for (int index : info_.param_indices) {
      const Buffer& p = func_.params()[index];
      TESSERA_RETURN_IF_ERROR(CheckDType(p.dtype(), p.name()));
      params.push_back(
          absl::StrCat(StorageType(p.dtype()), "* __restrict__ ", Define(p.get(), p.name())));
    }
    absl::StrAppend(code_, "\nextern \"C\" __global__ void __launch_bounds__(", threads, ") ",
                    info_.name, "(", absl::StrJoin(params, ", "), ") {\n");
    indent_ = 1;
    EmitStmt(info_.body);
    absl::StrAppend(code_, "}\n");
    return status_;
  }

 private:
  // ---- names and types -----------------------------------------------------------------

  std::string Define(const void* key, const std::string& hint) {
    std::string base;
    for (char c : hint) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0])) || base[0] == '_') {
      base = "v_" + base;
    }
    if (base.rfind("tessera_", 0) == 0) base = "v_" + base;
    std::string name = base;
    for (int n = 1; CudaReservedNames().count(name) || used_.count(name); ++n) {
      name = absl::StrCat(base, "_", n);
    }
    used_.insert(name);
    names_[key] = name;
    return name;
  }

  std::string NameOf(const void* key, const std::string& what) {
    auto it = names_.find(key);
    if (it != names_.end()) return it->second;
    Fail(absl::StrCat("cuda codegen: free variable ", what, " in kernel ", info_.name));
    return what;
  }

  void Fail(const std::string& message) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(message);
  }

  absl::Status CheckDType(DataType t, const std::string& where) {
    return lower_internal::CheckEmittableDType(t, "cuda", where);
  }

  // The C type values of `t` are computed in (float16/bfloat16 compute in float).
  static std::string ValueType(DataType t) {
    switch (t.code()) {
      case DataType::Code::kFloat:
        return t.bits() == 64 ? "double" : "float";
      case DataType::Code::kBFloat:
        return "float";
      case DataType::Code::kInt:
        return t.bits() == 8 ? "signed char" : t.bits() == 16 ? "short" : t.bits() == 32 ? "int" : "long long";
      case DataType::Code::kUInt:
        return t.bits() == 8    ? "unsigned char"
               : t.bits() == 16 ? "unsigned short"
               : t.bits() == 32 ? "unsigned int"
                                : "unsigned long long";
      case DataType::Code::kBool:
        return "bool";
    }
    return "int";
  }

  // The C type elements of `t` are stored as.
  static std::string StorageType(DataType t) {
    if (IsF16(t)) return "half";
    if (IsBF16(t)) return "__nv_bfloat16";
    if (t.is_bool()) return "unsigned char";
    return ValueType(t);
  }

  static const char* MathSuffix(DataType t) { return t.bits() == 64 ? "" : "f"; }

  // ---- expressions ---------------------------------------------------------------------

  std::string FloatLiteral(DataType t, double v) {
    bool is_double = t.bits() == 64;
    if (std::isnan(v)) return is_double ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)";
    if (std::isinf(v)) {
      if (is_double) {
        return v > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                     : "__longlong_as_double((long long)0xfff0000000000000ULL)";
      }
      return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float((int)0xff800000u)";
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), is_double ? "%.17g" : "%.9g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    if (!is_double) s += "f";
    return v < 0 ? "(" + s + ")" : s;
  }

  std::string IntLiteral(DataType t, int64_t v) {
    if (t.is_bool()) return v ? "true" : "false";
    if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
    std::string s = std::to_string(v);
    if (v > std::numeric_limits<int32_t>::max() || v < std::numeric_limits<int32_t>::min()) {
      s += t.is_uint() ? "ULL" : "LL";
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
        auto lane = lane_values_.find(v);
        if (lane != lane_values_.end()) return std::to_string(lane->second);
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
        std::string access;
        auto vec = vector_loads_.find(load);
        if (vec != vector_loads_.end()) {
          access = vec->second;
        } else {
          access = Access(load->buffer, load->indices);
        }
        DataType t = load->buffer.dtype();
        if (IsF16(t)) return "__half2float(" + access + ")";
        if (IsBF16(t)) return "__bfloat162float(" + access + ")";
        if (t.is_bool()) return "(" + access + " != 0)";
        return access;
      }
      case ExprKind::kCall:
        return EmitCall(e.as<CallNode>());
    }
    return "0";
  }

  std::string Access(const Buffer& buffer, const std::vector<Expr>& indices) {
    if (indices.size() != 1) {
      Fail(absl::StrCat("cuda codegen: access to ", buffer.name(), " is not flattened"));
      return "0";
    }
    return absl::StrCat(NameOf(buffer.get(), buffer.name()), "[",
                        StripParens(EmitExpr(indices[0])), "]");
  }

  std::string EmitBinary(const BinaryNode* op) {
    DataType t = op->a.dtype();
    std::string a = EmitExpr(op->a);
    std::string b = EmitExpr(op->b);
    // Two int64 literals would be computed (and overflow) in int.
    if (t == DataType::Int64() && AsConstInt(op->a) && AsConstInt(op->b)) a = "(long long)" + a;
    std::string vt = ValueType(t);
    switch (op->op) {
      case BinaryOp::kFloorDiv:
        if (t.is_float()) return absl::StrCat("floor", MathSuffix(t), "(", a, " / ", b, ")");
        if (t.is_int()) return Narrow(t, "tessera_floordiv(" + Widen(t, a) + ", " + Widen(t, b) + ")");
        return "(" + a + " / " + b + ")";
      case BinaryOp::kFloorMod:
        if (t.is_float()) return "tessera_floormod(" + a + ", " + b + ")";
        if (t.is_int()) return Narrow(t, "tessera_floormod(" + Widen(t, a) + ", " + Widen(t, b) + ")");
        return "(" + a + " % " + b + ")";
      case BinaryOp::kMin:
        return absl::StrCat("tessera_min<", vt, ">(", a, ", ", b, ")");
      case BinaryOp::kMax:
        return absl::StrCat("tessera_max<", vt, ">(", a, ", ", b, ")");
      default:
        return absl::StrCat("(", a, " ", BinaryOpName(op->op), " ", b, ")");
    }
  }

  // Signed integers narrower than 32 bits use the int helpers.
  static std::string Widen(DataType t, const std::string& s) {
    if (t.bits() == 64) return "(long long)" + s;
    return "(int)" + s;
  }
  static std::string Narrow(DataType t, const std::string& s) {
    if (t.bits() == 64 || t.bits() == 32) return s;
    return "((" + ValueType(t) + ")" + s + ")";
  }

  std::string EmitCast(DataType to, const Expr& value) {
    std::string v = EmitExpr(value);
    if (!CheckDType(to, "a cast").ok()) {
      Fail(absl::StrCat("cuda codegen: unsupported dtype ", to.ToString(), " in a cast"));
      return v;
    }
    if (to.is_bool()) return "(" + v + " != 0)";
    if (IsF16(to)) return "tessera_round_f16((float)" + v + ")";
    if (IsBF16(to)) return "tessera_round_bf16((float)" + v + ")";
    return "((" + ValueType(to) + ")" + v + ")";
  }

  // The address of a buffer element (an extern call operand).
  std::string Address(const Expr& arg) {
    const auto* load = arg.as<BufferLoadNode>();
    if (load == nullptr) return EmitExpr(arg);
    return "&" + Access(load->buffer, load->indices);
  }

  std::string EmitExtern(const CallNode* op) {
    const std::string& name = op->name;
    std::vector<std::string> args;
    if (name == lower_gpu_internal::kSyncThreads) return "__syncthreads()";
    if (name.rfind(lower_gpu_internal::kBlockReducePrefix, 0) == 0 && op->args.size() == 3) {
      return absl::StrCat(name, "(", EmitExpr(op->args[0]), ", ", Address(op->args[1]), ", ",
                          EmitExpr(op->args[2]), ")");
    }
    if (name == "__dp4a" && op->args.size() == 3) {
      auto packed = [&](const Expr& a) -> std::string {
        const auto* load = a.as<BufferLoadNode>();
        if (load == nullptr || load->buffer.dtype() != DataType::Int8()) {
          Fail("cuda codegen: __dp4a operands must be int8 buffer elements");
          return "0";
        }
        return "tessera_pack_i8x4(" + Address(a) + ")";
      };
      return absl::StrCat("__dp4a(", packed(op->args[0]), ", ", packed(op->args[1]), ", ",
                          EmitExpr(op->args[2]), ")");
    }
    if (name.rfind("wmma::", 0) == 0) {
      uses_wmma_ = true;
      for (const Expr& a : op->args) {
        const auto* load = a.as<BufferLoadNode>();
        if (load != nullptr && load->buffer.scope().rfind("wmma.", 0) == 0) {
          args.push_back(Access(load->buffer, load->indices));  // a fragment
        } else if (load != nullptr) {
          args.push_back(Address(a));
        } else {
          args.push_back(StripParens(EmitExpr(a)));
        }
      }
      if (name == "wmma::store_matrix_sync" && args.size() == 3) {
        args.push_back("wmma::mem_row_major");
      } else if (name == "wmma::fill_fragment" && args.size() == 2) {
        const auto* frag = op->args[0].as<BufferLoadNode>();
        if (frag != nullptr && IsF16(frag->buffer.dtype())) {
          args[1] = "__float2half_rn(" + args[1] + ")";
        }
      } else if (!((name == "wmma::load_matrix_sync" && args.size() == 3) ||
                   (name == "wmma::mma_sync" && args.size() == 4))) {
        Fail(absl::StrCat("cuda codegen: ", name, " with ", args.size(),
                          " arguments (lower it with LowerForGpu first)"));
      }
      return absl::StrCat(name, "(", absl::StrJoin(args, ", "), ")");
    }
    Fail(absl::StrCat("cuda codegen: unsupported extern call ", name));
    return "0";
  }

  std::string EmitCall(const CallNode* op) {
    if (op->op == CallOp::kExtern) return EmitExtern(op);
    DataType t = op->dtype;
    std::vector<std::string> args;
    for (const Expr& a : op->args) args.push_back(EmitExpr(a));
    if (!t.is_float()) {
      switch (op->op) {
        case CallOp::kAbs:
          return Narrow(t, "((long long)llabs((long long)" + args[0] + "))");
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
    std::string r;
    switch (op->op) {
      case CallOp::kExp: r = "exp" + f + "(" + args[0] + ")"; break;
      case CallOp::kLog: r = "log" + f + "(" + args[0] + ")"; break;
      case CallOp::kSqrt: r = "sqrt" + f + "(" + args[0] + ")"; break;
      case CallOp::kRsqrt: r = "(" + one + " / sqrt" + f + "(" + args[0] + "))"; break;
      case CallOp::kTanh: r = "tanh" + f + "(" + args[0] + ")"; break;
      case CallOp::kErf: r = "erf" + f + "(" + args[0] + ")"; break;
      case CallOp::kPow: r = "pow" + f + "(" + args[0] + ", " + args[1] + ")"; break;
      case CallOp::kAbs: r = "fabs" + f + "(" + args[0] + ")"; break;
      case CallOp::kSigmoid:
        r = "(" + one + " / (" + one + " + exp" + f + "(-" + args[0] + ")))";
        break;
      case CallOp::kFloor: r = "floor" + f + "(" + args[0] + ")"; break;
      case CallOp::kCeil: r = "ceil" + f + "(" + args[0] + ")"; break;
      case CallOp::kExtern: break;
    }
    if (!op->dtype.is_float()) return "((" + ValueType(op->dtype) + ")" + r + ")";
    return r;
  }

  // ---- statements ----------------------------------------------------------------------

  void Line(const std::string& text) {
    code_->append(2 * indent_, ' ');
    *code_ += text;
    *code_ += '\n';
  }

  void EmitStmt(const Stmt& s) {
    if (!s.defined() || !status_.ok()) return;
    switch (s.kind()) {
      case StmtKind::kBufferStore: {
        const auto* store = s.as<BufferStoreNode>();
        const auto* copy = store->value.as<BufferLoadNode>();
        if (copy != nullptr && copy->buffer.dtype() == store->buffer.dtype()) {
          // A plain copy moves the stored bits (no float round trip for half / bfloat16).
          Line(absl::StrCat(Access(store->buffer, store->indices), " = ",
                            Access(copy->buffer, copy->indices), ";"));
          return;
        }
        Line(absl::StrCat(Access(store->buffer, store->indices), " = ",
                          StoreValue(store->buffer.dtype(), EmitExpr(store->value)), ";"));
        return;
      }
      case StmtKind::kSeq:
        for (const Stmt& c : s.as<SeqStmtNode>()->seq) EmitStmt(c);
        return;
      case StmtKind::kIfThenElse: {
        const auto* ite = s.as<IfThenElseNode>();
        Line("if (" + StripParens(EmitExpr(ite->condition)) + ") {");
        EmitNested(ite->then_case);
        if (ite->else_case.defined()) {
          Line("} else {");
          EmitNested(ite->else_case);
        }
        Line("}");
        return;
      }
      case StmtKind::kEvaluate: {
        std::string v = EmitExpr(s.as<EvaluateNode>()->value);
        const auto* call = s.as<EvaluateNode>()->value.as<CallNode>();
        Line((call != nullptr && call->op == CallOp::kExtern ? "" : "(void)") + v + ";");
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
        Fail("cuda codegen: the kernel still has blocks (lower it with LowerForGpu first)");
        return;
    }
  }

  static std::string StoreValue(DataType t, const std::string& value) {
    std::string v = StripParens(value);
    if (IsF16(t)) return "__float2half_rn(" + v + ")";
    if (IsBF16(t)) return "__float2bfloat16_rn(" + v + ")";
    if (t.is_bool()) return "(unsigned char)(" + v + ")";
    return v;
  }

  void EmitNested(const Stmt& s) {
    ++indent_;
    EmitStmt(s);
    --indent_;
  }

  void EmitFor(const ForNode* op) {
    const std::string& var_name = op->loop_var.name();
    if (op->for_kind == ForKind::kParallel) {
      Fail(absl::StrCat("cuda codegen: loop ", var_name,
                        " is parallel (bind it to blockIdx/threadIdx instead)"));
      return;
    }
    if (op->for_kind == ForKind::kThreadBinding) {
      EmitThreadLoop(op);
      return;
    }
    const int64_t* extent = AsConstInt(op->extent);
    int64_t saved_budget = unroll_budget_;
    analyzer_.Bind(op->loop_var, Range{Expr(0), op->extent});
    if (op->for_kind == ForKind::kVectorized && extent != nullptr && TryEmitVector(op, *extent)) {
      return;
    }
    int64_t inner = lower_internal::InnerIterations(op->body);
    if (extent != nullptr && *extent > 1 &&
        (op->for_kind == ForKind::kUnrolled || op->for_kind == ForKind::kVectorized ||
         (unroll_budget_ > 0 && inner >= 0 && *extent * inner <= unroll_budget_))) {
      Line("#pragma unroll");
    }
    auto it = op->annotations.find("pragma_auto_unroll_max_step");
    if (it != op->annotations.end()) {
      if (const auto* step = std::get_if<int64_t>(&it->second)) unroll_budget_ = *step;
    }
    std::string extent_text = StripParens(EmitExpr(op->extent));
    std::string var = Define(op->loop_var.get(), var_name);
    std::string type = ValueType(op->loop_var.dtype());
    Line(absl::StrCat("for (", type, " ", var, " = 0; ", var, " < ", extent_text, "; ++", var,
                      ") {"));
    EmitNested(op->body);
    Line("}");
    unroll_budget_ = saved_budget;
  }

  void EmitThreadLoop(const ForNode* op) {
    int dim = ThreadDim(op->thread_tag);
    const int64_t* extent = AsConstInt(op->extent);
    if (dim < 0 || extent == nullptr) {
      Fail(absl::StrCat("cuda codegen: loop ", op->loop_var.name(), " bound to ", op->thread_tag,
                        " cannot be emitted"));
      return;
    }
    bool block = IsBlockIdxTag(op->thread_tag);
    int64_t launched = block ? info_.grid[dim] : info_.block[dim];
    std::string builtin = absl::StrCat(block ? "blockIdx." : "threadIdx.", kDimNames[dim]);
    analyzer_.Bind(op->loop_var, Range{Expr(0), op->extent});
    if (*extent < launched) {
      Line(absl::StrCat("if (", builtin, " < ", *extent, ") {"));
    } else {
      Line("{");
    }
    ++indent_;
    std::string var = Define(op->loop_var.get(), op->loop_var.name());
    Line(absl::StrCat("const ", ValueType(op->loop_var.dtype()), " ", var, " = ", builtin, ";"));
    EmitStmt(op->body);
    --indent_;
    Line("}");
  }

  void EmitAllocate(const AllocateNode* op) {
    const Buffer& b = op->buffer;
    if (absl::Status s = CheckDType(b.dtype(), b.name()); !s.ok()) {
      Fail(std::string(s.message()));
      return;
    }
    int64_t n = b.NumElements();
    if (n < 0) {
      Fail(absl::StrCat("cuda codegen: allocation ", b.name(), " has a non-constant size"));
      return;
    }
    n = std::max<int64_t>(n, 1);
    Line("{");
    ++indent_;
    std::string name = Define(b.get(), b.name());
    const std::string& scope = b.scope();
    if (scope == "shared") {
      // 32 bytes: what wmma::load_matrix_sync needs of a tile's address.
      Line(absl::StrCat("__shared__ __align__(32) ", StorageType(b.dtype()), " ", name, "[", n,
                        "];"));
    } else if (scope == "local") {
      Line(absl::StrCat("__align__(16) ", StorageType(b.dtype()), " ", name, "[", n, "];"));
    } else if (scope.rfind("wmma.", 0) == 0) {
      uses_wmma_ = true;
      std::string elem = StorageType(b.dtype());
      if (b.dtype() == DataType::Int8()) elem = "signed char";
      std::string type;
      if (scope == "wmma.matrix_a" || scope == "wmma.matrix_b") {
        type = absl::StrCat("wmma::fragment<wmma::", scope.substr(5), ", 16, 16, 16, ", elem,
                            ", wmma::row_major>");
      } else if (scope == "wmma.accumulator") {
        type = absl::StrCat("wmma::fragment<wmma::accumulator, 16, 16, 16, ", elem, ">");
      } else {
        Fail(absl::StrCat("cuda codegen: unknown fragment scope ", scope, " of ", b.name()));
        return;
      }
      Line(absl::StrCat(type, " ", name, "[", n, "];"));
    } else {
      Fail(absl::StrCat("cuda codegen: cannot allocate ", b.name(), " in scope ", scope,
                        " inside a kernel"));
      return;
    }
    EmitStmt(op->body);
    --indent_;
    Line("}");
  }

  // ---- vectorized loops ----------------------------------------------------------------

  // The vector type holding `lanes` elements of `t`, or "" if there is none.
  static std::string VectorType(DataType t, int64_t lanes) {
    if (t == DataType::Float32()) return lanes == 2 ? "float2" : lanes == 4 ? "float4" : "";
    if (IsF16(t) && lanes == 2) return "half2";
    if (IsBF16(t) && lanes == 2) return "__nv_bfloat162";
    return "";
  }

  // Rewrites floordiv(X + v, d) into floordiv(X, d) and floormod(X + v, d) into
  // floormod(X, d) + v where X is a multiple of `lanes` that lanes divides d: within one vector,
  // v never carries into the quotient. (Fused-then-split loops produce such indices.)
  class LaneNormalizer : public IRMutator {
   public:
    LaneNormalizer(const Var& v, int64_t lanes, arith::Analyzer* analyzer)
        : v_(v), lanes_(lanes), analyzer_(analyzer) {}

   protected:
    Expr VisitExpr_(const BinaryNode* op, const Expr& self) override {
      Expr e = IRMutator::VisitExpr_(op, self);
      const auto* bin = e.as<BinaryNode>();
      if (bin == nullptr || (bin->op != BinaryOp::kFloorDiv && bin->op != BinaryOp::kFloorMod)) {
        return e;
      }
      const int64_t* d = AsConstInt(bin->b);
      if (d == nullptr || *d <= 0 || *d % lanes_ != 0) return e;
      Expr a = analyzer_->Simplify(bin->a);
      Expr base = analyzer_->Simplify(Substitute(a, VarMap{{v_, Expr(0)}}));
      if (UsesVar(base, [&](const VarNode* x) { return x == v_.get(); }) ||
          !analyzer_->CanProveEqual(a, base + v_) ||
          !analyzer_->CanProve(EQ(FloorMod(base, Expr(lanes_)), Expr(0)))) {
        return e;
      }
      if (bin->op == BinaryOp::kFloorDiv) return FloorDiv(base, bin->b);
      return FloorMod(base, bin->b) + v_;
    }

   private:
    Var v_;
    int64_t lanes_;
    arith::Analyzer* analyzer_;
  };

  // `base` if `index` is base + v with base free of v and aligned to `lanes` elements.
  bool ContiguousBase(const Expr& raw_index, const Var& v, int64_t lanes, Expr* base) {
    LaneNormalizer normalizer(v, lanes, &analyzer_);
    Expr index = analyzer_.Simplify(normalizer.VisitExpr(raw_index));
    VarMap zero{{v, Expr(0)}};
    Expr b = analyzer_.Simplify(Substitute(index, zero));
    if (UsesVar(b, [&](const VarNode* x) { return x == v.get(); })) return false;
    if (!analyzer_.CanProveEqual(index, b + v)) return false;
    if (!analyzer_.CanProve(EQ(FloorMod(b, Expr(lanes)), Expr(0)))) return false;
    *base = b;
    return true;
  }

  bool TryEmitVector(const ForNode* op, int64_t lanes) {
    const auto* store = op->body.as<BufferStoreNode>();
    if (store == nullptr || store->indices.size() != 1) return false;
    VectorPlan plan;
    plan.lanes = static_cast<int>(lanes);
    plan.type = VectorType(store->buffer.dtype(), lanes);
    if (plan.type.empty()) return false;
    if (!ContiguousBase(store->indices[0], op->loop_var, lanes, &plan.store_base)) return false;
    bool ok = true;
    const VarNode* v = op->loop_var.get();
    PostOrderVisitExprs(store->value, [&](const Expr& e) {
      if (!ok) return;
      if (e.as<CallNode>() != nullptr && e.as<CallNode>()->op == CallOp::kExtern) ok = false;
      const auto* load = e.as<BufferLoadNode>();
      if (load == nullptr) return;
      if (!UsesVar(load->indices[0], [&](const VarNode* x) { return x == v; })) return;
      Expr base;
      if (load->indices.size() != 1 || load->buffer.dtype() != store->buffer.dtype() ||
          !ContiguousBase(load->indices[0], op->loop_var, lanes, &base)) {
        ok = false;
        return;
      }
      plan.loads.push_back(load);
      plan.load_bases.push_back(base);
    });
    if (!ok) return false;
    Line(absl::StrCat("{  // vectorized ", op->loop_var.name(), " x", lanes));
    ++indent_;
    for (size_t i = 0; i < plan.loads.size(); ++i) {
      const BufferLoadNode* load = plan.loads[i];
      std::string tmp = absl::StrCat("vec_", vector_counter_++);
      Line(absl::StrCat(plan.type, " ", tmp, " = *(const ", plan.type, "*)(&",
                        NameOf(load->buffer.get(), load->buffer.name()), "[",
                        StripParens(EmitExpr(plan.load_bases[i])), "]);"));
      vector_temps_.push_back({load, tmp});
    }
    std::string result = absl::StrCat("vec_", vector_counter_++);
    Line(absl::StrCat(plan.type, " ", result, ";"));
    for (int lane = 0; lane < plan.lanes; ++lane) {
      lane_values_[v] = lane;
      for (const auto& [load, tmp] : vector_temps_) {
        vector_loads_[load] = absl::StrCat(tmp, ".", kLaneNames[lane]);
      }
      Line(absl::StrCat(result, ".", kLaneNames[lane], " = ",
                        StoreValue(store->buffer.dtype(), EmitExpr(store->value)), ";"));
    }
    lane_values_.erase(v);
    vector_loads_.clear();
    vector_temps_.clear();
    Line(absl::StrCat("*(", plan.type, "*)(&", NameOf(store->buffer.get(), store->buffer.name()),
                      "[", StripParens(EmitExpr(plan.store_base)), "]) = ", result, ";"));
    --indent_;
    Line("}");
    return true;
  }

 public:
  bool uses_wmma() const { return uses_wmma_; }

 private:
  const PrimFunc& func_;
  const GpuKernelInfo& info_;
  std::string* code_;
  int indent_ = 0;
  int64_t unroll_budget_ = 0;
  int vector_counter_ = 0;
  bool uses_wmma_ = false;
  arith::Analyzer analyzer_;
  std::unordered_map<const void*, std::string> names_;
  std::set<std::string> used_;
  std::unordered_map<const VarNode*, int64_t> lane_values_;
  std::unordered_map<const BufferLoadNode*, std::string> vector_loads_;
  std::vector<std::pair<const BufferLoadNode*, std::string>> vector_temps_;
  absl::Status status_;
};

}  // namespace

absl::StatusOr<CudaModule> GenerateCuda(const PrimFunc& func, const Target& target) {
  if (!target.is_cuda()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuda codegen: target ", target.ToString(), " is not a cuda target"));
  }
  TESSERA_ASSIGN_OR_RETURN(PrimFunc lowered, LowerForGpu(func, target));
  TESSERA_ASSIGN_OR_RETURN(std::vector<GpuKernelInfo> kernels, SplitKernels(lowered));
  TESSERA_RETURN_IF_ERROR(VerifyGpuKernels(kernels, target));
  CudaModule module;
  std::string body;
  bool wmma = false;
  for (const GpuKernelInfo& info : kernels) {
    KernelEmitter emitter(lowered, info, &body);
    TESSERA_RETURN_IF_ERROR(emitter.Emit());
    wmma = wmma || emitter.uses_wmma();
    CudaKernel kernel;
    kernel.name = info.name;
    for (int d = 0; d < 3; ++d) {
      kernel.grid[d] = info.grid[d];
      kernel.block[d] = info.block[d];
    }
    kernel.dynamic_shared_bytes = 0;
    kernel.param_indices = info.param_indices;
    module.kernels.push_back(std::move(kernel));
  }
  module.source = std::string(kCudaPrelude) + (wmma ? kCudaWmmaPrelude : "") + body;
  return module;
}

}  // namespace tessera
