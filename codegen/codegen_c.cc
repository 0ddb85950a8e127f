#include "codegen/codegen_c.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "codegen/c_like_printer.h"
#include "codegen/c_prelude.h"
#include "codegen/lower.h"
#include "codegen/lower_internal.h"
#include "codegen/panel_prefetch.h"
#include "codegen/partition_loops.h"
#include "codegen/promote_accumulators.h"
#include "codegen/unroll_selects.h"
#include "codegen/unrolled_offsets.h"
#include "codegen/unswitch_borders.h"
#include "ir/cpu_intrinsics.h"
#include "ir/functor.h"
#include "ir/ndarray.h"
#include "ir/prepack.h"

namespace tessera {
namespace {

using codegen_internal::StripParens;

constexpr int64_t kMaxStackBytes = 32 * 1024;
constexpr int64_t kMaxUnrollPragma = 65534;  // GCC's limit for `#pragma GCC unroll`
// Iterations of a parallel loop's nest (its deepest) below which it runs on one thread: a few
// microseconds of work on one core, what a fork and join of the team costs (WorthParallel).
// Four times higher, the 2x2 max-pool of the test CNN (196,608 iterations) ran on one thread:
// 12.4 us alone against 8.2 on two, and 30 us inside the model, where half of its input lay
// in the other core's cache (the Intel core, 2026-12-06).
constexpr int64_t kMinParallelIterations = 65536;
// The same where another loop of the function wakes the team anyway (TeamAwake): there a loop
// costs the team only a join. On one thread, the padded copy of a small ResNet stride-2 conv's
// input (34,848 floats, lines the other core had read last) took 7-9 of the kernel's 60 us;
// on both, the kernel ran in 53.
constexpr int64_t kMinParallelIterationsBesideTeam = 8192;

bool IsCIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

class FunctionEmitter : public codegen_internal::CLikePrinter {
 public:
  explicit FunctionEmitter(std::string symbol)
      : CLikePrinter(
            {"cpu", &CReservedNames(), " (only loop variables and parameters can be referenced)",
             "the function still has blocks (lower it first)"},
            &code_),
        symbol_(std::move(symbol)) {}

  absl::Status Emit(const PrimFunc& lowered, std::string* out) {
    absl::StrAppend(&code_, "// ", lowered.name(), "\n");
    absl::StrAppend(&code_, "int32_t ", symbol_, "(void** args) {\n");
    Indent();
    for (size_t i = 0; i < lowered.params().size(); ++i) {
      const Buffer& param = lowered.params()[i];
      TESSERA_RETURN_IF_ERROR(CheckDType(param.dtype(), param.name()));
      std::string type = StorageType(param.dtype());
      std::string name = Define(param.get(), param.name());
      Line(absl::StrCat(type, "* restrict ", name, " = (", type, "*)args[", i, "];"));
    }
    Line("TESSERA_FLUSH_DENORMALS;  // until the function returns (c_prelude.cc)");
    team_awake_ = TeamAwake(lowered.body());
    EmitStmt(lowered.body());
    Line("return 0;");
    code_ += "}\n";
    TESSERA_RETURN_IF_ERROR(status());
    *out += code_;
    return absl::OkStatus();
  }

 private:
  // ---- dialect ---------------------------------------------------------------------------

  std::string IntegerType(DataType t) const override {
    if (t.is_bool()) return "int";
    return absl::StrCat(t.is_uint() ? "uint" : "int", t.bits(), "_t");
  }

  // The C type elements of `t` are stored as.
  std::string StorageType(DataType t) const {
    if (t.code() == DataType::Code::kFloat && t.bits() == 16) return "_Float16";
    if (t.code() == DataType::Code::kBFloat) return "uint16_t";
    if (t.is_bool()) return "uint8_t";
    return ValueType(t);
  }

  std::string BoolLiteral(bool v) const override { return v ? "1" : "0"; }

  std::string WideIntLiteral(DataType t, int64_t v) const override {
    if (v == std::numeric_limits<int64_t>::min()) return "INT64_MIN";
    return absl::StrCat(t.is_uint() ? "UINT64_C(" : "INT64_C(", v, ")");
  }

  std::string SpecialFloatLiteral(DataType t, double v) const override {
    bool is_double = t.bits() == 64;
    if (std::isnan(v)) return is_double ? "((double)NAN)" : "NAN";
    std::string inf = is_double ? "((double)INFINITY)" : "INFINITY";
    return v < 0 ? "(-" + inf + ")" : inf;
  }

  // tessera_<helper>_<f32|f64|i8..i64|u8..u64> (bool uses the i32 helpers). A float min or max
  // outside a vectorized loop is the scalar helper: one minss/maxss, where the keyed one (made
  // for vector loops) puts an integer round trip on every step of a chain, such as a row max's
  // final reduction across lanes (a third of a softmax's time).
  // A float exp (float16 and bfloat16 compute in float) is the prelude's inline
  // tessera_exp_f32, which vectorizes into the loop where glibc's vector expf is a call at twice
  // its cost.
  std::string Exp(DataType t, const std::string& arg) const override {
    if (t.bits() == 64) return CLikePrinter::Exp(t, arg);
    return absl::StrCat("tessera_exp_f32(", arg, ")");
  }

  std::string HelperName(const std::string& helper, DataType t) const override {
    if (t.is_float() && !in_vectorized_ && (helper == "min" || helper == "max")) {
      return HelperName(helper + "_scalar", t);
    }
    std::string suffix = t.is_float()  ? (t.bits() == 64 ? "f64" : "f32")
                         : t.is_bool() ? "i32"
                                       : absl::StrCat(t.is_uint() ? "u" : "i", t.bits());
    return absl::StrCat("tessera_", helper, "_", suffix);
  }

  // The int64 helpers, narrowed back to `t`.
  std::string SignedIntFloorOp(BinaryOp op, DataType t, const std::string& a,
                               const std::string& b) const override {
    const char* helper = op == BinaryOp::kFloorDiv ? "floordiv" : "floormod";
    return Narrow(t, absl::StrCat("tessera_", helper, "_i64(", a, ", ", b, ")"));
  }

  std::string LoadValue(DataType t, const std::string& access) const override {
    if (t.code() == DataType::Code::kBFloat) return "tessera_bf16_to_f32(" + access + ")";
    if (t.code() == DataType::Code::kFloat && t.bits() == 16) return "(float)" + access;
    return access;
  }

  // The prefetch passes' call: a read prefetch of the load's element, into L2 (locality 2)
  // unless a second argument gives another.
  std::string PrintExtern(const CallNode* op) override {
    const BufferLoadNode* load = !op->args.empty() ? op->args[0].as<BufferLoadNode>() : nullptr;
    const int64_t* locality = op->args.size() == 2 ? AsConstInt(op->args[1]) : nullptr;
    if (op->name == kPrefetchCall && load != nullptr && op->args.size() <= 2 &&
        (op->args.size() == 1 || (locality != nullptr && *locality >= 0 && *locality <= 3))) {
      return absl::StrCat("__builtin_prefetch(&", PrintLoadAccess(load), ", 0, ",
                          locality != nullptr ? *locality : 2, ")");
    }
    if (IsCpuDotCall(op->name) && op->args.size() == 3) {
      std::vector<std::string> addresses;
      for (const Expr& arg : op->args) {
        const auto* element = arg.as<BufferLoadNode>();
        if (element == nullptr) break;
        addresses.push_back("&" + PrintLoadAccess(element));
      }
      if (addresses.size() == 3) {
        return absl::StrCat(op->name, "(", absl::StrJoin(addresses, ", "), ")");
      }
    }
    return CLikePrinter::PrintExtern(op);
  }

  std::string RoundToHalf(DataType to, DataType from, const std::string& v) const override {
    if (to.code() == DataType::Code::kBFloat) {
      return "tessera_bf16_round(" + (ValueType(from) == "float" ? v : "(float)" + v) + ")";
    }
    return "((float)(_Float16)" + v + ")";
  }

  // ---- statements -----------------------------------------------------------------------

  // `value` as the 16 bits of a bfloat16 without going through float, where it is a bfloat16
  // element, a constant, or a select between two such; nullopt otherwise.
  std::optional<std::string> Bf16Bits(const Expr& value) {
    if (const auto* load = value.as<BufferLoadNode>()) {
      if (load->buffer.dtype().code() != DataType::Code::kBFloat) return std::nullopt;
      return PrintLoadAccess(load);
    }
    if (const auto* constant = value.as<FloatImmNode>()) {
      return absl::StrFormat("(uint16_t)0x%04x",
                             FloatToBFloatBits(static_cast<float>(constant->value)));
    }
    if (const auto* select = value.as<SelectNode>()) {
      std::optional<std::string> a = Bf16Bits(select->true_value);
      std::optional<std::string> b = Bf16Bits(select->false_value);
      if (!a.has_value() || !b.has_value()) return std::nullopt;
      return absl::StrCat("(", PrintExpr(select->condition), ") ? ", *a, " : ", *b);
    }
    return std::nullopt;
  }

  void EmitStore(const BufferStoreNode* store) override {
    std::string value = StripParens(PrintExpr(store->value));
    DataType t = store->buffer.dtype();
    std::optional<std::string> bits =
        t.code() == DataType::Code::kBFloat ? Bf16Bits(store->value) : std::nullopt;
    if (bits.has_value()) {
      // A copy (or a padding select) moves the bits: through float it was two conversions an
      // element (the packing of a bfloat16 panel took a third of its GEMM's time, a
      // convolution's padded copy a sixth).
      value = *bits;
    } else if (t.code() == DataType::Code::kBFloat) {
      value = "tessera_f32_to_bf16(" + value + ")";
    } else if (t.code() == DataType::Code::kFloat && t.bits() == 16) {
      value = "(_Float16)(" + value + ")";
    } else if (t.is_bool()) {
      value = "(uint8_t)(" + value + ")";
    }
    Line(absl::StrCat(PrintAccess(store->buffer, store->indices), " = ", value, ";"));
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

  // Whether a parallel loop's nest has enough iterations (`min_iterations`) to gain from
  // threads. Below that it runs on one thread: forking and joining the OpenMP team (about 1 us on
  // two cores, milliseconds when another process holds a core the team waits for) costs more than
  // it saves, and the kernel's time would follow the machine's load rather than its schedule (a
  // tuning job's timings of 1-5 us kernels disagreed with their re-timings by up to 3x).
  static bool WorthParallel(const ForNode* op, int64_t min_iterations) {
    const int64_t* extent = AsConstInt(op->extent);
    if (extent == nullptr) return true;
    const int64_t inner =
        lower_internal::MaxWorkIterations(op->body, {{op->loop_var, Range{Expr(0), op->extent}}});
    return *extent > 1 && (inner < 0 || *extent * inner >= min_iterations);
  }

  // Whether some parallel loop of `body` is worth the team on its own.
  static bool TeamAwake(const Stmt& body) {
    bool awake = false;
    PostOrderVisitStmts(body, [&](const Stmt& st) {
      const auto* loop = st.as<ForNode>();
      awake |= loop != nullptr && loop->for_kind == ForKind::kParallel &&
               WorthParallel(loop, kMinParallelIterations);
    });
    return awake;
  }

  void EmitFor(const ForNode* op) override {
    if (op->for_kind == ForKind::kThreadBinding) {
      Fail(absl::StrCat("cpu codegen: loop ", op->loop_var.name(), " bound to ", op->thread_tag));
      return;
    }
    const int64_t* extent = AsConstInt(op->extent);
    std::string extent_text = StripParens(PrintExpr(op->extent));
    bool saved_parallel = in_parallel_, saved_simd = in_simd_, saved_vectorized = in_vectorized_;
    int64_t saved_budget = unroll_budget_;

    int collapse = 0;  // loops of this nest under one `omp parallel for`
    if (op->for_kind == ForKind::kParallel && !in_parallel_ && !in_simd_) {
      collapse = 1;
      for (const ForNode* inner = op->body.as<ForNode>();
           inner != nullptr && inner->for_kind == ForKind::kParallel && AsConstInt(inner->extent);
           inner = inner->body.as<ForNode>()) {
        ++collapse;
      }
      // A nest too small for a team still becomes an OpenMP region, of one thread: outlined,
      // its loop bounds unknown to GCC, as with more threads. Emitted inline instead, GCC
      // unrolled the constant outer loops of some candidates' unrolled tiles and took minutes.
      // The region first flushes denormals in each of its threads (TESSERA_FLUSH_DENORMALS),
      // then shares the loop out; the region's end is the barrier, so the loop needs none.
      Line(absl::StrCat(
          "#pragma omp parallel",
          WorthParallel(op, team_awake_ ? kMinParallelIterationsBesideTeam : kMinParallelIterations)
              ? ""
              : " num_threads(1)"));
      Line("{");
      Indent();
      Line("TESSERA_FLUSH_DENORMALS;");
      Line(absl::StrCat("#pragma omp for",
                        collapse > 1 ? absl::StrCat(" collapse(", collapse, ")") : "", " nowait"));
      in_parallel_ = true;
    } else if (op->for_kind == ForKind::kVectorized && !in_simd_) {
      in_vectorized_ = true;
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
    } else if (extent == nullptr && op->for_kind == ForKind::kUnrolled) {
      // A clipped tail of an unrolled tile (PartitionGuardedLoops: `15 - rw`): unrolled up to
      // its largest extent, so that it unrolls in full where the extent becomes a constant
      // (an unrolled outer loop) and its accumulators stay in registers.
      const int64_t most = analyzer()->ConstIntBound(op->extent).max;
      if (most > 1 && most != arith::ConstIntBound::kPosInf) {
        Line(absl::StrCat("#pragma GCC unroll ", std::min(most, kMaxUnrollPragma)));
      }
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
      std::string text = level == 0 ? extent_text : StripParens(PrintExpr(loop->extent));
      BindLoopVar(loop->loop_var, loop->extent);
      Line(absl::StrCat("for (", ValueType(loop->loop_var.dtype()), " ", var, " = 0; ", var, " < ",
                        text, "; ++", var, ") {"));
      Indent();
      ++opened;
      if (level + 1 < collapse) loop = loop->body.as<ForNode>();
    }
    EmitStmt(loop->body);
    for (int i = 0; i < opened + (collapse > 0 ? 1 : 0); ++i) {  // and the region's block
      Dedent();
      Line("}");
    }
    in_parallel_ = saved_parallel;
    in_simd_ = saved_simd;
    in_vectorized_ = saved_vectorized;
    unroll_budget_ = saved_budget;
  }

  void EmitAllocate(const AllocateNode* op) override {
    const Buffer& buffer = op->buffer;
    int64_t elements = AllocationElements(buffer);
    if (elements < 0) return;
    std::string type = StorageType(buffer.dtype());
    int64_t bytes = elements * buffer.dtype().bytes();
    Line("{");
    Indent();
    std::string name = Define(buffer.get(), buffer.name());
    // A copy (a packed panel of B, a padded input) inside a parallel loop goes on the heap at any
    // size: as a stack array beside the register tile, gcc 12 kept every accumulator of the tile
    // in memory, loaded and stored per k (GMM 127x257x509 on Zen 3, its 32 KiB packed panel:
    // 0.60 ms on the stack, 0.38 ms from tessera_alloc). "local" buffers (the tile itself) stay.
    bool on_heap = bytes > kMaxStackBytes || (in_parallel_ && buffer.scope() != "local");
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
    Dedent();
    Line("}");
  }

  std::string symbol_;
  std::string code_;  // this function's text (the printer's lines go here)
  bool in_parallel_ = false;
  bool team_awake_ = false;  // TeamAwake of the function's body
  bool in_simd_ = false;
  bool in_vectorized_ = false;  // inside a loop marked vectorized, `omp simd` or not
  int64_t unroll_budget_ = 0;
};

// Appends `f` as `int32_t <symbol>(void** args)`.
absl::Status EmitFunction(const PrimFunc& f, const std::string& symbol, std::string* out) {
  TESSERA_ASSIGN_OR_RETURN(PrimFunc lowered, LowerForCodegen(f));
  // Padded tilings guard their tails; unguarded full tiles are what the compiler vectorizes.
  // Interior convolution tiles first get a copy without their padding tests; sums kept at a
  // moving address get an array of their own across their loop; then the unrolled copies of an
  // access share one address plus a displacement.
  lowered = MoveUnrolledTermsLast(
      PromoteAccumulators(PartitionGuardedLoops(UnswitchBorders(ExpandUnrolledSelects(lowered)))));
  *out += "\n";
  FunctionEmitter emitter(symbol);
  return emitter.Emit(lowered, out);
}

// `args[i]` of a split half's argument array, as the whole function's entry passes it.
std::string ArgText(const PrepackArg& arg) {
  return arg.packed ? absl::StrCat("packed[", arg.index, "]")
                    : absl::StrCat("args[", arg.index, "]");
}

std::string ArgArray(const std::string& name, const std::vector<PrepackArg>& args) {
  std::string text = absl::StrCat("void* ", name, "[] = {");
  for (size_t i = 0; i < args.size(); ++i) absl::StrAppend(&text, i ? ", " : "", ArgText(args[i]));
  return text + "};";
}

// The whole function as the composition of its halves: the packed weights in fresh buffers,
// the packing, then the kernel on them (so a check of `<symbol>` checks what was timed).
void EmitComposition(const PrepackSplit& split, const std::string& symbol, std::string* out) {
  const size_t n = split.packed.size();
  absl::StrAppend(out, "\nint32_t ", symbol, "(void** args) {\n");
  absl::StrAppend(out, "  void* packed[", n, "] = {0};\n");
  absl::StrAppend(out, "  int32_t status = -1;\n  int ok = 1;\n");
  for (size_t p = 0; p < n; ++p) {
    const Buffer& buffer = split.packed[p];
    absl::StrAppend(out, "  packed[", p, "] = tessera_alloc(",
                    buffer.NumElements() * buffer.dtype().bytes(), ");  // ", buffer.name(),
                    "\n  ok = ok && packed[", p, "] != NULL;\n");
  }
  absl::StrAppend(out, "  if (ok) {\n    ", ArgArray("prepack_args", split.prepack_args),
                  "\n    status = ", symbol, "_prepack(prepack_args);\n  }\n");
  absl::StrAppend(out, "  if (status == 0) {\n    ", ArgArray("kernel_args", split.prepacked_args),
                  "\n    status = ", symbol, "_prepacked(kernel_args);\n  }\n");
  absl::StrAppend(out, "  for (int p = 0; p < ", n, "; ++p) free(packed[p]);\n");
  absl::StrAppend(out, "  return status;\n}\n");
}

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
    TESSERA_ASSIGN_OR_RETURN(std::optional<PrepackSplit> split, SplitPrepack(fn.func));
    std::vector<std::string> own = {fn.symbol};
    if (split.has_value()) own = {fn.symbol, PrepackSymbol(fn.symbol), PrepackedSymbol(fn.symbol)};
    for (const std::string& symbol : own) {
      if (!symbols.insert(symbol).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("cpu codegen: symbol ", symbol, " appears twice in one module"));
      }
    }
    if (!split.has_value()) {
      TESSERA_RETURN_IF_ERROR(EmitFunction(fn.func, fn.symbol, &out));
      continue;
    }
    TESSERA_RETURN_IF_ERROR(EmitFunction(split->prepack, PrepackSymbol(fn.symbol), &out));
    TESSERA_RETURN_IF_ERROR(EmitFunction(split->prepacked, PrepackedSymbol(fn.symbol), &out));
    EmitComposition(*split, fn.symbol, &out);
  }
  return out;
}

std::string PrepackSymbol(const std::string& symbol) { return symbol + "_prepack"; }
std::string PrepackedSymbol(const std::string& symbol) { return symbol + "_prepacked"; }

absl::StatusOr<std::string> GenerateC(const PrimFunc& f, const std::string& symbol) {
  return GenerateCModule({CFunction{f, symbol}});
}

}  // namespace tessera
