#include "codegen/codegen_cuda.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "codegen/c_like_printer.h"
#include "codegen/cuda_prelude.h"
#include "codegen/lower_gpu.h"
#include "codegen/lower_gpu_internal.h"
#include "codegen/lower_internal.h"
#include "codegen/software_pipeline.h"
#include "codegen/verify_gpu.h"
#include "ir/arith/analyzer.h"
#include "ir/functor.h"
#include "ir/loop_annotations.h"
#include "ir/tensor_core_fragments.h"

namespace tessera {
namespace {

using lower_gpu_internal::IsBlockIdxTag;
using lower_gpu_internal::ThreadDim;

constexpr const char* kDimNames[3] = {"x", "y", "z"};
constexpr const char* kLaneNames[4] = {"x", "y", "z", "w"};

using codegen_internal::StripParens;

bool IsF16(DataType t) { return t.code() == DataType::Code::kFloat && t.bits() == 16; }
bool IsBF16(DataType t) { return t.code() == DataType::Code::kBFloat && t.bits() == 16; }

// A vectorized store the emitter writes with one vector access per operand.
struct VectorPlan {
  int lanes = 0;
  std::string type;                          // float4, half2, ...
  Expr store_base;                           // element offset of lane 0
  std::vector<const BufferLoadNode*> loads;  // contiguous loads, each with its base
  std::vector<Expr> load_bases;
};

bool HasTmaTiles(const Stmt& kernel) {
  bool found = false;
  PostOrderVisitStmts(kernel, [&](const Stmt& s) {
    const auto* alloc = s.as<AllocateNode>();
    found = found || (alloc != nullptr && alloc->buffer.scope() == kTmaSharedScope);
  });
  return found;
}

// The overload of tessera_wgmma::mma_async for an accumulator of `n` columns and inputs of
// `dtype` ("float16" or "bfloat16"): one wgmma.mma_async.m64nNk16 with A K-major and B N-major
// (imm-trans-b 1) from their descriptors, accumulating (scale-d 1).
std::string WgmmaProduct(int64_t n, const std::string& dtype) {
  const bool bf16 = dtype == "bfloat16";
  const std::string type = bf16 ? "__nv_bfloat16" : "half";
  const std::string ptx = bf16 ? "bf16" : "f16";
  std::vector<std::string> registers, outputs;
  for (int64_t i = 0; i < n / 2; ++i) {
    registers.push_back(absl::StrCat("%", i));
    outputs.push_back(absl::StrCat("\"+f\"(c.x[", i, "])"));
  }
  return absl::StrCat(
      "namespace tessera_wgmma {\n__device__ __forceinline__ void mma_async(accumulator<", n,
      ">& c, const ", type, "* a, const ", type, "* b, unsigned b_block_bytes) {\n",
      "  asm volatile(\n      \"{\\n.reg .pred p;\\nsetp.ne.b32 p, %", n / 2 + 2,
      ", 0;\\n\"\n      \"wgmma.mma_async.sync.aligned.m64n", n, "k16.f32.", ptx, ".", ptx, " {",
      absl::StrJoin(registers, ", "), "}, %", n / 2, ", %", n / 2 + 1,
      ", p, 1, 1, 0, 1;\\n}\\n\"\n      : ", absl::StrJoin(outputs, ", "),
      "\n      : \"l\"(descriptor(a, 16)), \"l\"(descriptor(b, b_block_bytes)), \"r\"(1));\n}\n}  "
      "// namespace tessera_wgmma\n");
}

class KernelEmitter : public codegen_internal::CLikePrinter {
 public:
  KernelEmitter(const PrimFunc& lowered, const GpuKernelInfo& info, std::string* code)
      : CLikePrinter({"cuda", &CudaReservedNames(), " in kernel " + info.name,
                      "the kernel still has blocks (lower it with LowerForGpu first)"},
                     code),
        func_(lowered),
        info_(info),
        code_(code) {}

  absl::Status Emit() {
    int64_t threads = info_.block[0] * info_.block[1] * info_.block[2];
    std::vector<std::string> params;
    for (int index : info_.param_indices) {
      const Buffer& p = func_.params()[index];
      TESSERA_RETURN_IF_ERROR(CheckDType(p.dtype(), p.name()));
      params.push_back(
          absl::StrCat(StorageType(p.dtype()), "* __restrict__ ", Define(p.get(), p.name())));
    }
    TESSERA_RETURN_IF_ERROR(CollectTensorMaps());
    for (size_t i = 0; i < tensor_maps_.size(); ++i) {
      params.push_back(absl::StrCat("const __grid_constant__ tessera_tensor_map tessera_map", i));
    }
    absl::StrAppend(code_, "\nextern \"C\" __global__ void __launch_bounds__(", threads, ") ",
                    info_.name, "(", absl::StrJoin(params, ", "), ") {\n");
    Indent();
    if (tma_tiles_) {
      // TMA tiles start at 1024-byte boundaries: the base is rounded up within 1 KiB of slack.
      Line("extern __shared__ __align__(1024) unsigned char tessera_shared_raw[];");
      Line("unsigned char* const tessera_shared = reinterpret_cast<unsigned char*>(");
      Line("    (reinterpret_cast<unsigned long long>(tessera_shared_raw) + 1023ull) & ~1023ull);");
    } else if (dynamic_shared_) {
      Line("extern __shared__ __align__(128) unsigned char tessera_shared[];");
    }
    EmitStmt(info_.body);
    absl::StrAppend(code_, "}\n");
    return status();
  }

 private:
  // ---- dialect --------------------------------------------------------------------------

  // The builtin types (NVRTC has no <stdint.h>).
  std::string IntegerType(DataType t) const override {
    if (t.is_bool()) return "bool";
    std::string base = t.bits() == 8    ? "char"
                       : t.bits() == 16 ? "short"
                       : t.bits() == 32 ? "int"
                                        : "long long";
    if (t.is_uint()) return "unsigned " + base;
    return t.bits() == 8 ? "signed char" : base;
  }

  // The C type elements of `t` are stored as.
  std::string StorageType(DataType t) const {
    if (IsF16(t)) return "half";
    if (IsBF16(t)) return "__nv_bfloat16";
    if (t.is_bool()) return "unsigned char";
    return ValueType(t);
  }

  std::string BoolLiteral(bool v) const override { return v ? "true" : "false"; }

  std::string WideIntLiteral(DataType t, int64_t v) const override {
    if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
    return absl::StrCat(v, t.is_uint() ? "ULL" : "LL");
  }

  // By their bits: NVRTC has no <math.h> macros.
  std::string SpecialFloatLiteral(DataType t, double v) const override {
    if (t.bits() == 64) {
      if (std::isnan(v)) return "__longlong_as_double(0x7ff8000000000000LL)";
      return v > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                   : "__longlong_as_double((long long)0xfff0000000000000ULL)";
    }
    if (std::isnan(v)) return "__int_as_float(0x7fc00000)";
    return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float((int)0xff800000u)";
  }

  // Overloads (floormod) and templates (tessera_min<T>) of the prelude.
  std::string HelperName(const std::string& helper, DataType t) const override {
    if (helper == "floormod") return "tessera_floormod";
    return absl::StrCat("tessera_", helper, "<", ValueType(t), ">");
  }

  // The int (up to 32 bits) or long long overloads; narrower types are narrowed back.
  std::string SignedIntFloorOp(BinaryOp op, DataType t, const std::string& a,
                               const std::string& b) const override {
    std::string widen = t.bits() == 64 ? "(long long)" : "(int)";
    std::string call =
        absl::StrCat(op == BinaryOp::kFloorDiv ? "tessera_floordiv(" : "tessera_floormod(", widen,
                     a, ", ", widen, b, ")");
    if (t.bits() == 64 || t.bits() == 32) return call;
    return "((" + ValueType(t) + ")" + call + ")";
  }

  std::string LoadValue(DataType t, const std::string& access) const override {
    if (IsF16(t)) return "__half2float(" + access + ")";
    if (IsBF16(t)) return "__bfloat162float(" + access + ")";
    if (t.is_bool()) return "(" + access + " != 0)";
    return access;
  }

  std::string RoundToHalf(DataType to, DataType, const std::string& v) const override {
    return (IsF16(to) ? "tessera_round_f16((float)" : "tessera_round_bf16((float)") + v + ")";
  }

  // Inside a vectorized loop: the lane's constant.
  std::string PrintVar(const VarNode* v) override {
    auto lane = lane_values_.find(v);
    if (lane != lane_values_.end()) return std::to_string(lane->second);
    return NameOf(v, v->name);
  }

  // Inside a vectorized loop: the lane of the vector a contiguous load was read into.
  std::string PrintLoadAccess(const BufferLoadNode* load) override {
    auto vec = vector_loads_.find(load);
    if (vec != vector_loads_.end()) return vec->second;
    return PrintAccess(load->buffer, load->indices);
  }

  // ---- extern calls --------------------------------------------------------------------

  // The address of a buffer element (an extern call operand).
  std::string Address(const Expr& arg) {
    const auto* load = arg.as<BufferLoadNode>();
    if (load == nullptr) return PrintExpr(arg);
    return "&" + PrintAccess(load->buffer, load->indices);
  }

  std::string PrintExtern(const CallNode* op) override {
    const std::string& name = op->name;
    std::vector<std::string> args;
    if (name == lower_gpu_internal::kSyncThreads) return "__syncthreads()";
    if (name == kCpAsyncCommit && op->args.empty()) return absl::StrCat(kCpAsyncCommit, "()");
    if (name == lower_gpu_internal::kTmaLoad) return PrintTmaLoad(op);
    for (const char* hopper :
         {lower_gpu_internal::kMbarrierInit, lower_gpu_internal::kMbarrierInitFence,
          lower_gpu_internal::kMbarrierExpectTx, lower_gpu_internal::kMbarrierWait,
          lower_gpu_internal::kElectedThread, lower_gpu_internal::kWgmmaFence,
          lower_gpu_internal::kWgmmaCommitWait}) {
      if (name != hopper) continue;
      for (const Expr& a : op->args) args.push_back(Address(a));
      return absl::StrCat(name, "(", absl::StrJoin(args, ", "), ")");
    }
    if (name == kCpAsyncWait && op->args.size() == 1) {
      return absl::StrCat(kCpAsyncWait, "(", PrintExpr(op->args[0]), ")");
    }
    if (name.rfind(lower_gpu_internal::kBlockReducePrefix, 0) == 0 && op->args.size() == 3) {
      return absl::StrCat(name, "(", PrintExpr(op->args[0]), ", ", Address(op->args[1]), ", ",
                          PrintExpr(op->args[2]), ")");
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
                          PrintExpr(op->args[2]), ")");
    }
    if (const std::string operation = FragmentOperation(name); !operation.empty()) {
      const std::string ns = name.substr(0, name.size() - operation.size() - 2);
      if (ns == kWgmmaNamespace) return PrintWgmmaCall(op, operation);
      (ns == kWmmaNamespace ? uses_wmma_ : uses_mma_) = true;
      for (const Expr& a : op->args) {
        const auto* load = a.as<BufferLoadNode>();
        if (load != nullptr && IsFragmentScope(load->buffer.scope())) {
          args.push_back(PrintAccess(load->buffer, load->indices));  // a fragment
        } else if (load != nullptr) {
          args.push_back(Address(a));
        } else {
          args.push_back(StripParens(PrintExpr(a)));
        }
      }
      if (operation == "store_matrix_sync" && args.size() == 3) {
        args.push_back(ns + "::mem_row_major");
      } else if (operation == "fill_fragment" && args.size() == 2) {
        const auto* frag = op->args[0].as<BufferLoadNode>();
        if (frag != nullptr && IsF16(frag->buffer.dtype())) {
          args[1] = "__float2half_rn(" + args[1] + ")";
        }
      } else if (!((operation == "load_matrix_sync" && args.size() == 3) ||
                   (operation == "mma_sync" && args.size() == 4))) {
        Fail(absl::StrCat("cuda codegen: ", name, " with ", args.size(),
                          " arguments (lower it with LowerForGpu first)"));
      }
      return absl::StrCat(name, "(", absl::StrJoin(args, ", "), ")");
    }
    return CLikePrinter::PrintExtern(op);
  }

  // ---- TMA and wgmma ---------------------------------------------------------------------

  // The kTmaLoad calls' tensor maps, in order of first use (one per global buffer and box).
  absl::Status CollectTensorMaps() {
    PostOrderVisitExprs(info_.body, [&](const Expr& e) {
      const auto* call = e.as<CallNode>();
      if (call == nullptr || call->op != CallOp::kExtern ||
          call->name != lower_gpu_internal::kTmaLoad)
        return;
      absl::StatusOr<CudaTensorMap> map = TensorMapOf(call);
      if (!map.ok()) {
        Fail(std::string(map.status().message()));
        return;
      }
      if (std::find(tensor_maps_.begin(), tensor_maps_.end(), *map) == tensor_maps_.end()) {
        tensor_maps_.push_back(*map);
      }
    });
    return status();
  }

  absl::StatusOr<CudaTensorMap> TensorMapOf(const CallNode* call) const {
    const int64_t* rank = call->args.size() > 2 ? AsConstInt(call->args[2]) : nullptr;
    const auto* global = call->args.size() > 1 ? call->args[1].as<BufferLoadNode>() : nullptr;
    if (rank == nullptr || global == nullptr || call->args.size() < 3 + 3 * size_t(*rank)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cuda codegen: malformed ", call->name, " in kernel ", info_.name));
    }
    CudaTensorMap map;
    const auto& params = func_.params();
    auto it = std::find_if(params.begin(), params.end(),
                           [&](const Buffer& p) { return p.same_as(global->buffer); });
    if (it == params.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cuda codegen: TMA copies only from function "
                       "parameters; ",
                       global->buffer.name(), " is none (kernel ", info_.name, ")"));
    }
    map.param = static_cast<int>(it - params.begin());
    map.dtype = global->buffer.dtype().ToString();
    for (int64_t d = 0; d < *rank; ++d) {
      map.box.push_back(*AsConstInt(call->args[3 + d]));
      map.dims.push_back(*AsConstInt(call->args[3 + *rank + d]));
    }
    return map;
  }

  std::string PrintTmaLoad(const CallNode* op) {
    absl::StatusOr<CudaTensorMap> map = TensorMapOf(op);
    const int64_t rank = map.ok() ? static_cast<int64_t>(map->dims.size()) : 0;
    if (!map.ok() || op->args.size() != 4 + 3 * size_t(rank)) {
      Fail(absl::StrCat("cuda codegen: the TMA copy into ", Address(op->args[0]), " in kernel ",
                        info_.name,
                        " has no mbarrier: TMA tiles must be filled in a software-pipelined loop "
                        "(software_pipeline_stages)"));
      return "0";
    }
    const size_t index =
        std::find(tensor_maps_.begin(), tensor_maps_.end(), *map) - tensor_maps_.begin();
    std::vector<std::string> args = {Address(op->args[0]), absl::StrCat("&tessera_map", index),
                                     Address(op->args.back())};
    for (int64_t d = 0; d < rank; ++d) {
      args.push_back("(int)(" + StripParens(PrintExpr(op->args[3 + 2 * rank + d])) + ")");
    }
    return absl::StrCat(lower_gpu_internal::kTmaLoad, "(", absl::StrJoin(args, ", "), ")");
  }

  // A lowered tessera_wgmma call (lower_gpu.cc): its last argument, N, names the overload.
  std::string PrintWgmmaCall(const CallNode* op, const std::string& operation) {
    std::vector<std::string> args;
    for (size_t i = 0; i + 1 < op->args.size(); ++i) {
      const auto* load = op->args[i].as<BufferLoadNode>();
      if (load != nullptr && IsFragmentScope(load->buffer.scope())) {
        args.push_back(PrintAccess(load->buffer, load->indices));
      } else if (load != nullptr) {
        args.push_back(Address(op->args[i]));
      } else {
        args.push_back(StripParens(PrintExpr(op->args[i])));
      }
    }
    const int64_t* n = op->args.empty() ? nullptr : AsConstInt(op->args.back());
    const size_t arity = operation == "mma_async" ? 4 : operation == "store_matrix_sync" ? 3 : 2;
    if (n == nullptr || args.size() != arity) {
      Fail(absl::StrCat("cuda codegen: ", op->name, " with ", op->args.size(),
                        " arguments (lower it with LowerForGpu first)"));
      return "0";
    }
    if (operation == "mma_async") {
      const auto* a = op->args[1].as<BufferLoadNode>();
      wgmma_products_.insert({*n, a->buffer.dtype().ToString()});
    }
    return absl::StrCat(op->name, "(", absl::StrJoin(args, ", "), ")");
  }

  // N of the tessera_wgmma calls on accumulator `b` in `body` (0 if none).
  static int64_t AccumulatorColumns(const Stmt& body, const Buffer& b) {
    int64_t columns = 0;
    PostOrderVisitExprs(body, [&](const Expr& e) {
      const auto* call = e.as<CallNode>();
      if (call == nullptr || call->name.rfind(kWgmmaNamespace, 0) != 0 || call->args.size() < 2)
        return;
      for (const Expr& a : call->args) {
        const auto* load = a.as<BufferLoadNode>();
        const int64_t* n = AsConstInt(call->args.back());
        if (load != nullptr && load->buffer.same_as(b) && n != nullptr) columns = *n;
      }
    });
    return columns;
  }

  // ---- statements ----------------------------------------------------------------------

  void EmitStore(const BufferStoreNode* store) override {
    const auto* copy = store->value.as<BufferLoadNode>();
    if (copy != nullptr && copy->buffer.dtype() == store->buffer.dtype()) {
      // A plain copy moves the stored bits (no float round trip for half / bfloat16).
      Line(absl::StrCat(PrintAccess(store->buffer, store->indices), " = ",
                        PrintAccess(copy->buffer, copy->indices), ";"));
      return;
    }
    Line(absl::StrCat(PrintAccess(store->buffer, store->indices), " = ",
                      StoreValue(store->buffer.dtype(), PrintExpr(store->value)), ";"));
  }

  static std::string StoreValue(DataType t, const std::string& value) {
    std::string v = StripParens(value);
    if (IsF16(t)) return "__float2half_rn(" + v + ")";
    if (IsBF16(t)) return "__float2bfloat16_rn(" + v + ")";
    if (t.is_bool()) return "(unsigned char)(" + v + ")";
    return v;
  }

  void EmitFor(const ForNode* op) override {
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
    BindLoopVar(op->loop_var, op->extent);
    if (extent != nullptr && op->annotations.count(kAsyncCopy) && TryEmitAsyncCopy(op, *extent)) {
      return;
    }
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
    std::string extent_text = StripParens(PrintExpr(op->extent));
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
    BindLoopVar(op->loop_var, op->extent);
    if (*extent < launched) {
      Line(absl::StrCat("if (", builtin, " < ", *extent, ") {"));
    } else {
      Line("{");
    }
    Indent();
    std::string var = Define(op->loop_var.get(), op->loop_var.name());
    Line(absl::StrCat("const ", ValueType(op->loop_var.dtype()), " ", var, " = ", builtin, ";"));
    EmitStmt(op->body);
    Dedent();
    Line("}");
  }

  void EmitAllocate(const AllocateNode* op) override {
    const Buffer& b = op->buffer;
    int64_t n = AllocationElements(b);
    if (n < 0) return;
    Line("{");
    Indent();
    std::string name = Define(b.get(), b.name());
    const std::string& scope = b.scope();
    if (lower_gpu_internal::IsSharedScope(scope) && dynamic_shared_) {
      // Carved from the dynamic buffer in allocation order, as static arrays would be laid out.
      const int64_t align = scope == kTmaSharedScope ? lower_gpu_internal::kTmaAlignment : 32;
      const int64_t offset = (dynamic_offset_ + align - 1) / align * align;
      dynamic_offset_ = offset + n * b.dtype().bytes();
      Line(absl::StrCat(StorageType(b.dtype()), "* const ", name, " = reinterpret_cast<",
                        StorageType(b.dtype()), "*>(tessera_shared + ", offset, ");"));
    } else if (scope == "shared") {
      // 32 bytes: what wmma::load_matrix_sync needs of a tile's address.
      Line(absl::StrCat("__shared__ __align__(32) ", StorageType(b.dtype()), " ", name, "[", n,
                        "];"));
    } else if (scope == "local") {
      Line(absl::StrCat("__align__(16) ", StorageType(b.dtype()), " ", name, "[", n, "];"));
    } else if (FragmentNamespace(scope) == kWgmmaNamespace) {
      const int64_t columns = AccumulatorColumns(op->body, b);
      if (columns <= 0 || b.dtype() != DataType::Float32()) {
        Fail(absl::StrCat("cuda codegen: warpgroup accumulator ", b.name(),
                          " must hold float32 and be accessed by tessera_wgmma calls"));
        return;
      }
      Line(absl::StrCat(kWgmmaNamespace, "::accumulator<", columns, "> ", name, "[", n, "];"));
    } else if (const std::string ns = FragmentNamespace(scope); !ns.empty()) {
      (ns == kWmmaNamespace ? uses_wmma_ : uses_mma_) = true;
      std::string elem = StorageType(b.dtype());
      if (b.dtype() == DataType::Int8()) elem = "signed char";
      const std::string use = scope.substr(scope.find('.') + 1);
      // tessera_mma's fragments are 16x16x16 and row-major only (codegen/cuda_prelude.h).
      const std::string shape = ns == kWmmaNamespace ? "16, 16, 16, " : "";
      const std::string layout = ns == kWmmaNamespace ? ", wmma::row_major" : "";
      std::string type;
      if (use == "matrix_a" || use == "matrix_b") {
        type = absl::StrCat(ns, "::fragment<", ns, "::", use, ", ", shape, elem, layout, ">");
      } else if (use == "accumulator") {
        type = absl::StrCat(ns, "::fragment<", ns, "::accumulator, ", shape, elem, ">");
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
    Dedent();
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
    LaneNormalizer normalizer(v, lanes, analyzer());
    Expr index = analyzer()->Simplify(normalizer.VisitExpr(raw_index));
    VarMap zero{{v, Expr(0)}};
    Expr b = analyzer()->Simplify(Substitute(index, zero));
    if (UsesVar(b, [&](const VarNode* x) { return x == v.get(); })) return false;
    if (!analyzer()->CanProveEqual(index, b + v)) return false;
    if (!analyzer()->CanProve(EQ(FloorMod(b, Expr(lanes)), Expr(0)))) return false;
    *base = b;
    return true;
  }

  // A loop the software pipeline marked kAsyncCopy, `dst[base + v] = src[base' + v]` over
  // `lanes` contiguous elements of 4, 8 or 16 aligned bytes in all: one cp.async.
  bool TryEmitAsyncCopy(const ForNode* op, int64_t lanes) {
    const auto* store = op->body.as<BufferStoreNode>();
    const auto* load = store == nullptr ? nullptr : store->value.as<BufferLoadNode>();
    if (load == nullptr || store->indices.size() != 1 || load->indices.size() != 1) return false;
    const int64_t bytes = lanes * store->buffer.dtype().bytes();
    if (bytes != 4 && bytes != 8 && bytes != 16) return false;
    Expr dst, src;
    if (!ContiguousBase(store->indices[0], op->loop_var, lanes, &dst) ||
        !ContiguousBase(load->indices[0], op->loop_var, lanes, &src)) {
      return false;
    }
    Line(absl::StrCat(
        "tessera_cp_async<", bytes, ">(&", NameOf(store->buffer.get(), store->buffer.name()), "[",
        StripParens(PrintExpr(dst)), "], &", NameOf(load->buffer.get(), load->buffer.name()), "[",
        StripParens(PrintExpr(src)), "]);"));
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
    Indent();
    for (size_t i = 0; i < plan.loads.size(); ++i) {
      const BufferLoadNode* load = plan.loads[i];
      std::string tmp = absl::StrCat("vec_", vector_counter_++);
      Line(absl::StrCat(plan.type, " ", tmp, " = *(const ", plan.type, "*)(&",
                        NameOf(load->buffer.get(), load->buffer.name()), "[",
                        StripParens(PrintExpr(plan.load_bases[i])), "]);"));
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
                        StoreValue(store->buffer.dtype(), PrintExpr(store->value)), ";"));
    }
    lane_values_.erase(v);
    vector_loads_.clear();
    vector_temps_.clear();
    Line(absl::StrCat("*(", plan.type, "*)(&", NameOf(store->buffer.get(), store->buffer.name()),
                      "[", StripParens(PrintExpr(plan.store_base)), "]) = ", result, ";"));
    Dedent();
    Line("}");
    return true;
  }

 public:
  bool uses_wmma() const { return uses_wmma_; }
  bool uses_mma() const { return uses_mma_; }
  bool uses_tma() const { return tma_tiles_ || !tensor_maps_.empty(); }
  // (N, input dtype) of each wgmma.mma_async the kernel issues.
  const std::set<std::pair<int64_t, std::string>>& wgmma_products() const {
    return wgmma_products_;
  }
  const std::vector<CudaTensorMap>& tensor_maps() const { return tensor_maps_; }
  // The bytes of dynamic shared memory the kernel needs at launch (0: static arrays only), with
  // the slack that aligning TMA tiles' base takes.
  int64_t dynamic_shared_bytes() const {
    if (!dynamic_shared_) return 0;
    return dynamic_offset_ + (tma_tiles_ ? lower_gpu_internal::kTmaAlignment : 0);
  }

 private:
  const PrimFunc& func_;
  const GpuKernelInfo& info_;
  std::string* code_;
  int64_t unroll_budget_ = 0;
  int vector_counter_ = 0;
  bool uses_wmma_ = false;
  bool uses_mma_ = false;
  // Static __shared__ arrays may total at most 48 KiB (ptxas: "uses too much shared data");
  // above that a kernel's shared buffers live in dynamic shared memory, which the runner opts
  // into up to the device's limit (worker/cuda_runner.cc).
  static constexpr int64_t kMaxStaticSharedBytes = 48 * 1024;
  // TMA tiles always live in dynamic shared memory, whose base the kernel aligns to 1 KiB.
  const bool tma_tiles_ = HasTmaTiles(info_.body);
  const bool dynamic_shared_ = info_.shared_bytes > kMaxStaticSharedBytes || tma_tiles_;
  std::vector<CudaTensorMap> tensor_maps_;
  std::set<std::pair<int64_t, std::string>> wgmma_products_;
  int64_t dynamic_offset_ = 0;
  std::unordered_map<const VarNode*, int64_t> lane_values_;
  std::unordered_map<const BufferLoadNode*, std::string> vector_loads_;
  std::vector<std::pair<const BufferLoadNode*, std::string>> vector_temps_;
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
  bool wmma = false, mma = false, tma = false;
  std::set<std::pair<int64_t, std::string>> wgmma;
  for (const GpuKernelInfo& info : kernels) {
    KernelEmitter emitter(lowered, info, &body);
    TESSERA_RETURN_IF_ERROR(emitter.Emit());
    wmma = wmma || emitter.uses_wmma();
    mma = mma || emitter.uses_mma();
    tma = tma || emitter.uses_tma();
    wgmma.insert(emitter.wgmma_products().begin(), emitter.wgmma_products().end());
    if (!emitter.wgmma_products().empty() && info.block[0] != 128) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cuda codegen: wgmma needs threadIdx.x of extent 128 (one warpgroup), kernel ", info.name,
          " has ", info.block[0]));
    }
    CudaKernel kernel;
    kernel.name = info.name;
    for (int d = 0; d < 3; ++d) {
      kernel.grid[d] = info.grid[d];
      kernel.block[d] = info.block[d];
    }
    kernel.dynamic_shared_bytes = emitter.dynamic_shared_bytes();
    kernel.param_indices = info.param_indices;
    kernel.tensor_maps = emitter.tensor_maps();
    module.kernels.push_back(std::move(kernel));
  }
  std::string hopper;
  if (tma || !wgmma.empty()) hopper = kCudaHopperPrelude;
  if (!wgmma.empty()) hopper += kCudaWgmmaPrelude;
  for (const auto& [n, dtype] : wgmma) hopper += WgmmaProduct(n, dtype);
  module.source = std::string(kCudaPrelude) + (wmma ? kCudaWmmaPrelude : "") +
                  (mma ? kCudaMmaPrelude : "") + hopper + body;
  return module;
}

}  // namespace tessera
