// The tensor-intrinsic registry, the built-in intrinsics (16x16x16 tensor-core fragments of the
// WMMA API and of Tessera's own mma.sync, after TVM's tir/tensor_intrin/cuda.py, dp4a, and the
// CPU's bfloat16 and int8 dot products), and the matching of a block against a description (after
// TVM's TensorizeComparator).
#include "schedule/tensor_intrin.h"

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "ir/arith/int_set.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "ir/tensor_core_fragments.h"

namespace tessera {
namespace {

absl::Status Invalid(const std::string& name, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat("tensor intrinsic ", name, ": ", message));
}

// ---- Building descriptions -------------------------------------------------------------

// The BlockRealize of a root block over `body` accessing `reads` / `writes`.
Stmt Root(Stmt body, std::vector<BufferRegion> reads, std::vector<BufferRegion> writes) {
  BlockNode node;
  node.name = "root";
  node.reads = std::move(reads);
  node.writes = std::move(writes);
  node.body = std::move(body);
  return BlockRealize({}, True(), MakeBlock(node));
}

// for i, j, ... in grid(extents): block `name` with iteration variables vi, vj, ... bound to
// the loops, of kinds `kinds` ("SSR"), computing `body(iteration variables)`.
Stmt GridBlock(const std::string& name, const std::vector<int64_t>& extents,
               const std::string& kinds,
               const std::function<Stmt(const std::vector<Expr>&)>& body) {
  TESSERA_CHECK_EQ(extents.size(), kinds.size());
  static const char* const kNames[] = {"i", "j", "k", "l"};
  TESSERA_CHECK(extents.size() <= 4);
  std::vector<Var> loops;
  std::vector<Expr> ivs;
  BlockNode node;
  node.name = name;
  for (size_t d = 0; d < extents.size(); ++d) {
    loops.push_back(Var(kNames[d]));
    Var iv(absl::StrCat("v", kNames[d]));
    ivs.push_back(iv);
    node.iter_vars.push_back(IterVar{iv, Range{Expr(0), Expr(extents[d])},
                                     kinds[d] == 'R' ? IterKind::kReduction : IterKind::kSpatial});
  }
  node.body = body(ivs);
  arith::BufferAccessRegions regions = arith::DetectBlockAccessRegions(MakeBlock(node));
  node.reads = regions.reads;
  node.writes = regions.writes;
  Stmt s = BlockRealize(std::vector<Expr>(loops.begin(), loops.end()), True(), MakeBlock(node));
  for (size_t d = extents.size(); d-- > 0;)
    s = For(loops[d], Expr(extents[d]), ForKind::kSerial, s);
  return s;
}

PrimFunc Func(const std::string& name, std::vector<Buffer> params, Stmt body,
              std::vector<BufferRegion> reads, std::vector<BufferRegion> writes) {
  return PrimFunc::Make(name, std::move(params),
                        Root(std::move(body), std::move(reads), std::move(writes)));
}

Buffer Buf(const std::string& name, DataType dtype, std::vector<Expr> shape,
           const std::string& scope) {
  return Buffer::Make(name, dtype, std::move(shape), scope);
}

Expr At00(const Buffer& b) { return b.Load({Expr(0), Expr(0)}); }

// A 16x16 copy between `src` and `dst` whose impl calls `callee`(dst[0, 0], src[0, 0], 16, 16,
// 16) (the element arguments are addresses).
TensorIntrin WmmaCopy(const std::string& name, const Buffer& src, const Buffer& dst,
                      const std::string& callee) {
  Stmt body = GridBlock("copy", {16, 16}, "SS", [&](const std::vector<Expr>& v) {
    return BufferStore(dst, src.Load({v[0], v[1]}), {v[0], v[1]});
  });
  PrimFunc desc =
      Func(name + "_desc", {src, dst}, body, {BufferRegion::Full(src)}, {BufferRegion::Full(dst)});
  Buffer isrc = src.WithName(src.name()), idst = dst.WithName(dst.name());
  Stmt call = Evaluate(CallExtern(DataType::Int32(), callee,
                                  {At00(idst), At00(isrc), Expr(16), Expr(16), Expr(16)}));
  PrimFunc impl = Func(name + "_impl", {isrc, idst}, call, {BufferRegion::Full(isrc)},
                       {BufferRegion::Full(idst)});
  return TensorIntrin{name, desc, impl};
}

std::vector<TensorIntrin> BuiltinIntrins() {
  const std::vector<Expr> tile = {Expr(16), Expr(16)};
  std::vector<TensorIntrin> out;
  std::set<std::string> made;  // groups share their loads, fills and stores
  for (const TensorCoreIntrins& g : TensorCoreIntrinGroups()) {
    const std::string ns = FragmentNamespace(g.Scope("matrix_a"));
    auto call = [&](const char* operation) { return absl::StrCat(ns, "::", operation); };
    // Loads of shared-memory tiles into matrix_a / matrix_b fragments.
    if (made.insert(g.load_a).second) {
      out.push_back(WmmaCopy(g.load_a, Buf("A", g.in, tile, "shared"),
                             Buf("A_frag", g.in, tile, g.Scope("matrix_a")),
                             call("load_matrix_sync")));
      out.push_back(WmmaCopy(g.load_b, Buf("B", g.in, tile, "shared"),
                             Buf("B_frag", g.in, tile, g.Scope("matrix_b")),
                             call("load_matrix_sync")));
    }
    // The store of an accumulator to global or shared memory.
    if (made.insert(g.store).second) {
      out.push_back(WmmaCopy(g.store, Buf("C_frag", g.acc, tile, g.Scope("accumulator")),
                             Buf("C", g.acc, tile, "global"), call("store_matrix_sync")));
    }
    // Fill: the init of an accumulator. impl: fill_fragment(C[0, 0], 0, 16, 16, 16).
    if (made.insert(g.fill).second) {
      Buffer c = Buf("C_frag", g.acc, tile, g.Scope("accumulator"));
      Stmt body = GridBlock("fill", {16, 16}, "SS", [&](const std::vector<Expr>& v) {
        return BufferStore(c, FloatImm(g.acc, 0.0), {v[0], v[1]});
      });
      Buffer ic = c.WithName(c.name());
      Stmt fill =
          Evaluate(CallExtern(DataType::Int32(), call("fill_fragment"),
                              {At00(ic), FloatImm(g.acc, 0.0), Expr(16), Expr(16), Expr(16)}));
      out.push_back(TensorIntrin{g.fill,
                                 Func("wmma_fill_desc", {c}, body, {}, {BufferRegion::Full(c)}),
                                 Func("wmma_fill_impl", {ic}, fill, {}, {BufferRegion::Full(ic)})});
    }
    {  // C += A * B (products widened to the accumulator).
       // impl: mma_sync(C[0, 0], A[0, 0], B[0, 0], C[0, 0], 16, 16, 16).
      Buffer a = Buf("A_frag", g.in, tile, g.Scope("matrix_a"));
      Buffer b = Buf("B_frag", g.in, tile, g.Scope("matrix_b"));
      Buffer c = Buf("C_frag", g.acc, tile, g.Scope("accumulator"));
      Stmt body = GridBlock("update", {16, 16, 16}, "SSR", [&](const std::vector<Expr>& v) {
        Expr prod =
            g.in == DataType::Float32() ? Call(CallOp::kRoundTf32, {a.Load({v[0], v[2]})}) *
                                              Call(CallOp::kRoundTf32, {b.Load({v[2], v[1]})})
            : g.acc == g.in ? a.Load({v[0], v[2]}) * b.Load({v[2], v[1]})
                            : Cast(g.acc, a.Load({v[0], v[2]})) * Cast(g.acc, b.Load({v[2], v[1]}));
        return BufferStore(c, c.Load({v[0], v[1]}) + prod, {v[0], v[1]});
      });
      Buffer ia = a.WithName(a.name()), ib = b.WithName(b.name()), ic = c.WithName(c.name());
      Stmt mma = Evaluate(
          CallExtern(DataType::Int32(), call("mma_sync"),
                     {At00(ic), At00(ia), At00(ib), At00(ic), Expr(16), Expr(16), Expr(16)}));
      std::vector<BufferRegion> reads = {BufferRegion::Full(c), BufferRegion::Full(a),
                                         BufferRegion::Full(b)};
      std::vector<BufferRegion> ireads = {BufferRegion::Full(ic), BufferRegion::Full(ia),
                                          BufferRegion::Full(ib)};
      out.push_back(TensorIntrin{
          g.sync, Func("wmma_sync_desc", {a, b, c}, body, reads, {BufferRegion::Full(c)}),
          Func("wmma_sync_impl", {ia, ib, ic}, mma, ireads, {BufferRegion::Full(ic)})});
    }
  }
  for (const WgmmaIntrins& g : WgmmaIntrinGroups()) {
    const std::vector<Expr> acc_tile = {Expr(kWgmmaM), Expr(g.n)};
    auto call = [&](const char* operation) {
      return absl::StrCat(kWgmmaNamespace, "::", operation);
    };
    const std::string acc_scope = "wgmma.accumulator";
    if (made.insert(g.store).second) {  // impl: store_matrix_sync(C[0, 0], C_frag[0, 0])
      Buffer frag = Buf("C_frag", g.acc, acc_tile, acc_scope);
      Buffer mem = Buf("C", g.acc, acc_tile, "global");
      Stmt body = GridBlock("copy", {kWgmmaM, g.n}, "SS", [&](const std::vector<Expr>& v) {
        return BufferStore(mem, frag.Load({v[0], v[1]}), {v[0], v[1]});
      });
      Buffer ifrag = frag.WithName(frag.name()), imem = mem.WithName(mem.name());
      Stmt store = Evaluate(
          CallExtern(DataType::Int32(), call("store_matrix_sync"), {At00(imem), At00(ifrag)}));
      out.push_back(TensorIntrin{g.store,
                                 Func(g.store + "_desc", {frag, mem}, body,
                                      {BufferRegion::Full(frag)}, {BufferRegion::Full(mem)}),
                                 Func(g.store + "_impl", {ifrag, imem}, store,
                                      {BufferRegion::Full(ifrag)}, {BufferRegion::Full(imem)})});
    }
    if (made.insert(g.fill).second) {  // impl: fill_fragment(C_frag[0, 0], 0)
      Buffer c = Buf("C_frag", g.acc, acc_tile, acc_scope);
      Stmt body = GridBlock("fill", {kWgmmaM, g.n}, "SS", [&](const std::vector<Expr>& v) {
        return BufferStore(c, FloatImm(g.acc, 0.0), {v[0], v[1]});
      });
      Buffer ic = c.WithName(c.name());
      Stmt fill = Evaluate(
          CallExtern(DataType::Int32(), call("fill_fragment"), {At00(ic), FloatImm(g.acc, 0.0)}));
      out.push_back(TensorIntrin{g.fill,
                                 Func(g.fill + "_desc", {c}, body, {}, {BufferRegion::Full(c)}),
                                 Func(g.fill + "_impl", {ic}, fill, {}, {BufferRegion::Full(ic)})});
    }
    {  // C += A * B, products widened. impl: mma_async(C_frag[0, 0], A[0, 0], B[0, 0]).
      Buffer a = Buf("A", g.in, {Expr(kWgmmaM), Expr(kWgmmaK)}, kTmaSharedScope);
      Buffer b = Buf("B", g.in, {Expr(kWgmmaK), Expr(g.n)}, kTmaSharedScope);
      Buffer c = Buf("C_frag", g.acc, acc_tile, acc_scope);
      Stmt body =
          GridBlock("update", {kWgmmaM, g.n, kWgmmaK}, "SSR", [&](const std::vector<Expr>& v) {
            Expr prod = Cast(g.acc, a.Load({v[0], v[2]})) * Cast(g.acc, b.Load({v[2], v[1]}));
            return BufferStore(c, c.Load({v[0], v[1]}) + prod, {v[0], v[1]});
          });
      Buffer ia = a.WithName(a.name()), ib = b.WithName(b.name()), ic = c.WithName(c.name());
      Stmt mma = Evaluate(
          CallExtern(DataType::Int32(), call("mma_async"), {At00(ic), At00(ia), At00(ib)}));
      std::vector<BufferRegion> reads = {BufferRegion::Full(c), BufferRegion::Full(a),
                                         BufferRegion::Full(b)};
      std::vector<BufferRegion> ireads = {BufferRegion::Full(ic), BufferRegion::Full(ia),
                                          BufferRegion::Full(ib)};
      out.push_back(TensorIntrin{
          g.sync, Func(g.sync + "_desc", {a, b, c}, body, reads, {BufferRegion::Full(c)}),
          Func(g.sync + "_impl", {ia, ib, ic}, mma, ireads, {BufferRegion::Full(ic)})});
    }
  }
  {  // C[0] += sum_k int32(A[k]) * int32(B[k]) over 4 int8 lanes.
    // impl: C[0] = __dp4a(A[0], B[0], C[0]) (A and B by address: four packed int8 each).
    const DataType i8 = DataType::Int8(), i32 = DataType::Int32();
    Buffer a = Buf("A", i8, {Expr(4)}, "global");
    Buffer b = Buf("B", i8, {Expr(4)}, "global");
    Buffer c = Buf("C", i32, {Expr(1)}, "global");
    Stmt body = GridBlock("update", {4}, "R", [&](const std::vector<Expr>& v) {
      Expr prod = Cast(i32, a.Load({v[0]})) * Cast(i32, b.Load({v[0]}));
      return BufferStore(c, c.Load({Expr(0)}) + prod, {Expr(0)});
    });
    Buffer ia = a.WithName(a.name()), ib = b.WithName(b.name()), ic = c.WithName(c.name());
    Stmt call = BufferStore(
        ic, CallExtern(i32, "__dp4a", {ia.Load({Expr(0)}), ib.Load({Expr(0)}), ic.Load({Expr(0)})}),
        {Expr(0)});
    std::vector<BufferRegion> reads = {BufferRegion::Full(c), BufferRegion::Full(a),
                                       BufferRegion::Full(b)};
    std::vector<BufferRegion> ireads = {BufferRegion::Full(ic), BufferRegion::Full(ia),
                                        BufferRegion::Full(ib)};
    out.push_back(
        TensorIntrin{kDp4a, Func("dp4a_desc", {a, b, c}, body, reads, {BufferRegion::Full(c)}),
                     Func("dp4a_impl", {ia, ib, ic}, call, ireads, {BufferRegion::Full(ic)})});
  }
  // C[j] += acc(A[k]) * acc(B[j, k]) over 16 columns and a group of k side by side in B: the CPU's
  // dot products (ir/cpu_intrinsics.h). A lane holds `lane_group` k; a group of more k holds
  // several lanes' groups one after another, B [group / lane_group, 16, lane_group]. impl:
  // CALL(C[0], A[0], B[0, ..]) (addresses).
  struct CpuDot {
    const char* name;
    const char* call;
    DataType in, acc;
    int64_t group, lane_group;
    bool shifted = false;  // A[k] + 128 (ShiftInt8Product's form)
  };
  const DataType i8 = DataType::Int8(), i32 = DataType::Int32();
  for (const CpuDot& dot :
       {CpuDot{kCpuDotBf16, kCpuDotBf16Call, DataType::BFloat16(), DataType::Float32(), 2, 2},
        CpuDot{kCpuDotInt8, kCpuDotInt8Call, i8, i32, 4, 4},
        CpuDot{kCpuDotInt8x8, kCpuDotInt8x8Call, i8, i32, 8, 4},
        CpuDot{kCpuDotInt8Shifted, kCpuDotInt8ShiftedCall, i8, i32, 4, 4, true},
        CpuDot{kCpuDotInt8x8Shifted, kCpuDotInt8x8ShiftedCall, i8, i32, 8, 4, true}}) {
    const bool split = dot.group > dot.lane_group;
    Buffer a = Buf("A", dot.in, {Expr(dot.group)}, "global");
    Buffer b = Buf("B", dot.in,
                   split ? std::vector<Expr>{Expr(dot.group / dot.lane_group), Expr(kCpuDotLanes),
                                             Expr(dot.lane_group)}
                         : std::vector<Expr>{Expr(kCpuDotLanes), Expr(dot.group)},
                   "global");
    Buffer c = Buf("C", dot.acc, {Expr(kCpuDotLanes)}, "global");
    Stmt body =
        GridBlock("update", {kCpuDotLanes, dot.group}, "SR", [&](const std::vector<Expr>& v) {
          Expr b_element = split ? b.Load({FloorDiv(v[1], Expr(dot.lane_group)), v[0],
                                           FloorMod(v[1], Expr(dot.lane_group))})
                                 : b.Load({v[0], v[1]});
          Expr a_element = Cast(dot.acc, a.Load({v[1]}));
          if (dot.shifted) a_element = a_element + MakeConst(dot.acc, 128);
          Expr prod = a_element * Cast(dot.acc, b_element);
          return BufferStore(c, c.Load({v[0]}) + prod, {v[0]});
        });
    Buffer ia = a.WithName(a.name()), ib = b.WithName(b.name()), ic = c.WithName(c.name());
    Expr b_first = split ? ib.Load({Expr(0), Expr(0), Expr(0)}) : At00(ib);
    Stmt call = Evaluate(
        CallExtern(DataType::Int32(), dot.call, {ic.Load({Expr(0)}), ia.Load({Expr(0)}), b_first}));
    std::vector<BufferRegion> reads = {BufferRegion::Full(c), BufferRegion::Full(a),
                                       BufferRegion::Full(b)};
    std::vector<BufferRegion> ireads = {BufferRegion::Full(ic), BufferRegion::Full(ia),
                                        BufferRegion::Full(ib)};
    const std::string name = dot.name;
    out.push_back(
        TensorIntrin{name, Func(name + "_desc", {a, b, c}, body, reads, {BufferRegion::Full(c)}),
                     Func(name + "_impl", {ia, ib, ic}, call, ireads, {BufferRegion::Full(ic)})});
  }
  return out;
}

}  // namespace

const std::vector<TensorCoreIntrins>& TensorCoreIntrinGroups() {
  const DataType f16 = DataType::Float16(), f32 = DataType::Float32(), bf16 = DataType::BFloat16();
  static const std::vector<TensorCoreIntrins>* groups = new std::vector<TensorCoreIntrins>{
      {f16, f32, "wmma", 70, kWmmaFill, kWmmaLoadA, kWmmaLoadB, kWmmaSync, kWmmaStore},
      {f16, f16, "wmma", 70, kWmmaFillF16, kWmmaLoadA, kWmmaLoadB, kWmmaSyncF16, kWmmaStoreF16},
      {bf16, f32, "wmma", 80, kWmmaFill, kWmmaLoadABf16, kWmmaLoadBBf16, kWmmaSyncBf16, kWmmaStore},
      {f16, f32, "mma", 80, kMmaFill, kMmaLoadA, kMmaLoadB, kMmaSync, kMmaStore},
      {f16, f16, "mma", 80, kMmaFillF16, kMmaLoadA, kMmaLoadB, kMmaSyncF16, kMmaStoreF16},
      {bf16, f32, "mma", 80, kMmaFill, kMmaLoadABf16, kMmaLoadBBf16, kMmaSyncBf16, kMmaStore},
      {f32, f32, "mma", 80, kMmaFill, kMmaLoadATf32, kMmaLoadBTf32, kMmaSyncTf32, kMmaStore},
  };
  return *groups;
}

const std::vector<WgmmaIntrins>& WgmmaIntrinGroups() {
  static const std::vector<WgmmaIntrins>* groups = [] {
    auto* out = new std::vector<WgmmaIntrins>;
    for (DataType in : {DataType::Float16(), DataType::BFloat16()}) {
      const std::string in_name = in == DataType::Float16() ? "f16" : "bf16";
      for (int64_t n = 8; n <= 256; n += 8) {
        const std::string shape = absl::StrCat("m64n", n);
        out->push_back({in, DataType::Float32(), n, absl::StrCat("wgmma_fill_", shape, "_f32"),
                        absl::StrCat("wgmma_sync_", shape, "k16_", in_name, in_name, "f32"),
                        absl::StrCat("wgmma_store_", shape, "_f32")});
      }
    }
    return out;
  }();
  return *groups;
}

const WgmmaIntrins* FindWgmmaIntrins(DataType in, DataType acc, int64_t n) {
  for (const WgmmaIntrins& g : WgmmaIntrinGroups()) {
    if (g.in == in && g.acc == acc && g.n == n) return &g;
  }
  return nullptr;
}

const TensorCoreIntrins* FindTensorCoreIntrins(DataType in, DataType acc,
                                               const std::string& family) {
  for (const TensorCoreIntrins& g : TensorCoreIntrinGroups()) {
    if (g.in == in && g.acc == acc && g.family == family) return &g;
  }
  return nullptr;
}

namespace {

// Whether the update of reduction block `block` multiplies round_tf32 of both its operands.
bool MultipliesAtTf32(const Block& block) {
  const auto* store = block->body.as<BufferStoreNode>();
  const auto* sum = store != nullptr ? store->value.as<BinaryNode>() : nullptr;
  const auto* product = sum != nullptr ? sum->b.as<BinaryNode>() : nullptr;
  auto rounded = [](const Expr& e) {
    const auto* call = e.as<CallNode>();
    return call != nullptr && call->op == CallOp::kRoundTf32;
  };
  return product != nullptr && product->op == BinaryOp::kMul && rounded(product->a) &&
         rounded(product->b);
}

}  // namespace

const TensorCoreIntrins* FindTensorCoreIntrins(const Block& block, DataType in, DataType acc,
                                               const std::string& family) {
  if (in == DataType::Float32() && !MultipliesAtTf32(block)) return nullptr;
  return FindTensorCoreIntrins(in, acc, family);
}

namespace {

// ---- Validation and the registry ---------------------------------------------------------

absl::Status CheckRoot(const std::string& name, const char* which, const PrimFunc& f) {
  if (!f.defined()) return Invalid(name, absl::StrCat(which, " is missing"));
  const auto* realize = f.body().as<BlockRealizeNode>();
  if (realize == nullptr) {
    return Invalid(name, absl::StrCat("the body of ", which, " is not a root BlockRealize"));
  }
  if (!realize->block->iter_vars.empty() || realize->block->init.defined()) {
    return Invalid(
        name, absl::StrCat("the root block of ", which, " has iteration variables or an init"));
  }
  return absl::OkStatus();
}

absl::Status Validate(const TensorIntrin& intrin) {
  const std::string& name = intrin.name;
  if (name.empty()) return Invalid("''", "needs a name");
  TESSERA_RETURN_IF_ERROR(CheckRoot(name, "desc", intrin.desc));
  TESSERA_RETURN_IF_ERROR(CheckRoot(name, "impl", intrin.impl));
  const std::vector<Buffer>& d = intrin.desc.params();
  const std::vector<Buffer>& i = intrin.impl.params();
  if (d.size() != i.size()) {
    return Invalid(name, absl::StrCat("desc has ", d.size(), " parameters, impl ", i.size()));
  }
  for (size_t p = 0; p < d.size(); ++p) {
    if (d[p]->dtype != i[p]->dtype || d[p]->scope != i[p]->scope || d[p].ndim() != i[p].ndim()) {
      return Invalid(name, absl::StrCat("parameter ", p, " differs between desc (", d[p].name(),
                                        ") and impl (", i[p].name(), ") in dtype, scope or rank"));
    }
    for (int k = 0; k < d[p].ndim(); ++k) {
      const int64_t* a = AsConstInt(d[p].shape()[k]);
      const int64_t* b = AsConstInt(i[p].shape()[k]);
      if (a == nullptr || b == nullptr || *a != *b) {
        return Invalid(name, absl::StrCat("parameter ", p, " (", d[p].name(),
                                          ") needs the same constant shape in desc and impl"));
      }
    }
  }
  return absl::OkStatus();
}

struct Registry {
  std::mutex mu;
  std::map<std::string, TensorIntrin> intrins;  // guarded by mu
};

Registry& GetRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    for (TensorIntrin& intrin : BuiltinIntrins()) {
      absl::Status valid = Validate(intrin);
      TESSERA_CHECK(valid.ok()) << valid.message();
      std::string key = intrin.name;
      r->intrins.emplace(std::move(key), std::move(intrin));
    }
    return r;
  }();
  return *registry;
}

Var AsVar(const Expr& e) { return Var(std::static_pointer_cast<const VarNode>(e.node_ptr())); }

// ---- Matching a block against a description
// -----------------------------------------------------------------

// Where a description buffer lies in the block: a buffer and a region of it whose trailing
// dimensions have the description's extents (leading ones extent 1).
struct BufferBinding {
  Buffer buffer;
  std::vector<Range> region;
  std::vector<Range> desc_region;
};
using BindingMap =
    std::unordered_map<Buffer, BufferBinding, BufferIdentityHash, BufferIdentityEqual>;

bool ScopeCompatible(const std::string& desc_scope, const std::string& scope) {
  if (desc_scope == "global") return scope == "global" || scope == "shared" || scope == "local";
  return desc_scope == scope;
}

const char* StmtKindText(StmtKind kind) {
  switch (kind) {
    case StmtKind::kBufferStore:
      return "a store";
    case StmtKind::kSeq:
      return "a sequence";
    case StmtKind::kIfThenElse:
      return "an if";
    case StmtKind::kEvaluate:
      return "an evaluate";
    case StmtKind::kFor:
      return "a loop";
    case StmtKind::kBlock:
      return "a block";
    case StmtKind::kBlockRealize:
      return "a block";
    case StmtKind::kAllocate:
      return "an allocation";
  }
  return "a statement";
}

bool HasLoadOrCall(const Expr& e) {
  bool found = false;
  PostOrderVisitExprs(e, [&](const Expr& x) {
    found = found || x.kind() == ExprKind::kBufferLoad || x.kind() == ExprKind::kCall;
  });
  return found;
}

// Compares a block with an intrinsic's description root block. Target loop and iteration
// variables are rewritten into the description's loop variables (tmap_), description
// iteration variables into their bindings (dmap_), so indices compare as integers.
class Matcher {
 public:
  Matcher(const Block& target, const Block& desc_root, const std::vector<Buffer>& desc_params)
      : target_(target), desc_root_(desc_root), desc_params_(desc_params) {
    for (const IterVar& iv : target->iter_vars) analyzer_.Bind(iv.var, iv.dom);
  }

  // OK, or the first difference.
  absl::Status Match() {
    TESSERA_RETURN_IF_ERROR(Stmts(target_->body, desc_root_->body));
    for (const Buffer& p : desc_params_) {
      if (bindings_.count(p) == 0)
        return Diff(absl::StrCat("buffer ", p.name(), " is not accessed"));
    }
    return absl::OkStatus();
  }

  const BindingMap& bindings() const { return bindings_; }

 private:
  static absl::Status Diff(const std::string& what) { return absl::InvalidArgumentError(what); }

  Expr T(const Expr& e) { return analyzer_.Simplify(Substitute(e, tmap_)); }
  Expr D(const Expr& e) { return analyzer_.Simplify(Substitute(e, dmap_)); }

  absl::Status Stmts(const Stmt& t, const Stmt& d) {
    if (const auto* f = t.as<ForNode>(); f != nullptr && IsConstInt(f->extent, 1)) {
      tmap_[f->loop_var] = Expr(0);  // unit loops are transparent
      return Stmts(f->body, d);
    }
    if (const auto* g = d.as<ForNode>(); g != nullptr && IsConstInt(g->extent, 1)) {
      dmap_[g->loop_var] = Expr(0);
      return Stmts(t, g->body);
    }
    if (t.defined() != d.defined()) return Diff("a statement is missing on one side");
    if (!t.defined()) return absl::OkStatus();
    if (t.kind() != d.kind()) {
      return Diff(absl::StrCat("found ", StmtKindText(t.kind()), " where the description has ",
                               StmtKindText(d.kind())));
    }
    switch (t.kind()) {
      case StmtKind::kFor: {
        const auto* f = t.as<ForNode>();
        const auto* g = d.as<ForNode>();
        const int64_t* a = AsConstInt(f->extent);
        const int64_t* b = AsConstInt(g->extent);
        if (a == nullptr || b == nullptr || *a != *b) {
          return Diff(absl::StrCat("loop ", f->loop_var.name(), " has extent ",
                                   PrintExpr(f->extent), ", the description's loop ",
                                   g->loop_var.name(), " has ", PrintExpr(g->extent)));
        }
        analyzer_.Bind(g->loop_var, Range{Expr(0), g->extent});
        tmap_[f->loop_var] = g->loop_var;
        desc_loops_.insert(g->loop_var.get());
        return Stmts(f->body, g->body);
      }
      case StmtKind::kBlockRealize:
        return Realizes(t.as<BlockRealizeNode>(), d.as<BlockRealizeNode>());
      case StmtKind::kBufferStore: {
        const auto* x = t.as<BufferStoreNode>();
        const auto* y = d.as<BufferStoreNode>();
        TESSERA_RETURN_IF_ERROR(Access(x->buffer, x->indices, y->buffer, y->indices));
        return Exprs(x->value, y->value);
      }
      case StmtKind::kSeq: {
        const auto& x = t.as<SeqStmtNode>()->seq;
        const auto& y = d.as<SeqStmtNode>()->seq;
        if (x.size() != y.size()) {
          return Diff(absl::StrCat("a sequence of ", x.size(),
                                   " statements where the "
                                   "description has ",
                                   y.size()));
        }
        for (size_t i = 0; i < x.size(); ++i) TESSERA_RETURN_IF_ERROR(Stmts(x[i], y[i]));
        return absl::OkStatus();
      }
      case StmtKind::kIfThenElse: {
        const auto* x = t.as<IfThenElseNode>();
        const auto* y = d.as<IfThenElseNode>();
        TESSERA_RETURN_IF_ERROR(Exprs(x->condition, y->condition));
        TESSERA_RETURN_IF_ERROR(Stmts(x->then_case, y->then_case));
        return Stmts(x->else_case, y->else_case);
      }
      case StmtKind::kEvaluate:
        return Exprs(t.as<EvaluateNode>()->value, d.as<EvaluateNode>()->value);
      default:
        return Diff(absl::StrCat("unsupported statement: ", StmtKindText(t.kind())));
    }
  }

  absl::Status Realizes(const BlockRealizeNode* t, const BlockRealizeNode* d) {
    const Block& x = t->block;
    const Block& y = d->block;
    if (!IsConstInt(T(t->predicate), 1) || !IsConstInt(D(d->predicate), 1)) {
      return Diff(
          absl::StrCat("block ", x->name, " or the description's ", y->name, " has a predicate"));
    }
    if (!x->alloc_buffers.empty() || !y->alloc_buffers.empty()) {
      return Diff(
          absl::StrCat("block ", x->name, " or the description's ", y->name, " allocates buffers"));
    }
    // Iteration kinds of the variables that vary with the loops being matched, in order.
    auto varies = [&](const Expr& e) {
      return UsesVar(e, [&](const VarNode* v) { return desc_loops_.count(v) != 0; });
    };
    std::string tkinds, dkinds;
    for (size_t i = 0; i < x->iter_vars.size(); ++i) {
      Expr value = T(t->iter_values[i]);
      tmap_[x->iter_vars[i].var] = value;
      if (varies(value)) tkinds += IterKindName(x->iter_vars[i].kind);
    }
    for (size_t i = 0; i < y->iter_vars.size(); ++i) {
      Expr value = D(d->iter_values[i]);
      dmap_[y->iter_vars[i].var] = value;
      if (varies(value)) dkinds += IterKindName(y->iter_vars[i].kind);
    }
    if (tkinds != dkinds) {
      return Diff(absl::StrCat("block ", x->name, " iterates ", tkinds.empty() ? "nothing" : tkinds,
                               " where the description's ", y->name, " iterates ",
                               dkinds.empty() ? "nothing" : dkinds));
    }
    if (x->init.defined() != y->init.defined()) {
      return Diff(absl::StrCat("block ", x->name, x->init.defined() ? " has" : " has no",
                               " init, the description's ", y->name,
                               y->init.defined() ? " has one" : " has none"));
    }
    if (x->init.defined()) TESSERA_RETURN_IF_ERROR(Stmts(x->init, y->init));
    return Stmts(x->body, y->body);
  }

  absl::Status Exprs(const Expr& t, const Expr& d) {
    if (t.dtype() != d.dtype()) {
      return Diff(absl::StrCat(PrintExpr(t), " is ", t.dtype().ToString(), ", the description's ",
                               PrintExpr(d), " is ", d.dtype().ToString()));
    }
    if (!t.dtype().is_float() && !HasLoadOrCall(t) && !HasLoadOrCall(d)) {
      if (analyzer_.CanProveEqual(T(t), D(d))) return absl::OkStatus();
      return Diff(absl::StrCat(PrintExpr(t), " differs from the description's ", PrintExpr(d)));
    }
    if (t.kind() != d.kind()) {
      return Diff(
          absl::StrCat(PrintExpr(t), " differs in kind from the description's ", PrintExpr(d)));
    }
    auto differ = [&]() {
      return Diff(absl::StrCat(PrintExpr(t), " differs from the description's ", PrintExpr(d)));
    };
    switch (t.kind()) {
      case ExprKind::kIntImm:
        return t.as<IntImmNode>()->value == d.as<IntImmNode>()->value ? absl::OkStatus() : differ();
      case ExprKind::kFloatImm:
        return t.as<FloatImmNode>()->value == d.as<FloatImmNode>()->value ? absl::OkStatus()
                                                                          : differ();
      case ExprKind::kVar:
        return differ();  // float variables do not occur in blocks
      case ExprKind::kBinary: {
        const auto* x = t.as<BinaryNode>();
        const auto* y = d.as<BinaryNode>();
        if (x->op != y->op) return differ();
        TESSERA_RETURN_IF_ERROR(Exprs(x->a, y->a));
        return Exprs(x->b, y->b);
      }
      case ExprKind::kNot:
        return Exprs(t.as<NotNode>()->a, d.as<NotNode>()->a);
      case ExprKind::kSelect: {
        const auto* x = t.as<SelectNode>();
        const auto* y = d.as<SelectNode>();
        TESSERA_RETURN_IF_ERROR(Exprs(x->condition, y->condition));
        TESSERA_RETURN_IF_ERROR(Exprs(x->true_value, y->true_value));
        return Exprs(x->false_value, y->false_value);
      }
      case ExprKind::kCast:
        return Exprs(t.as<CastNode>()->value, d.as<CastNode>()->value);
      case ExprKind::kBufferLoad: {
        const auto* x = t.as<BufferLoadNode>();
        const auto* y = d.as<BufferLoadNode>();
        return Access(x->buffer, x->indices, y->buffer, y->indices);
      }
      case ExprKind::kCall: {
        const auto* x = t.as<CallNode>();
        const auto* y = d.as<CallNode>();
        if (x->op != y->op || x->name != y->name || x->args.size() != y->args.size()) {
          return differ();
        }
        for (size_t i = 0; i < x->args.size(); ++i)
          TESSERA_RETURN_IF_ERROR(Exprs(x->args[i], y->args[i]));
        return absl::OkStatus();
      }
    }
    return differ();
  }

  // The region of `buffer` the target block declares (writes first).
  const BufferRegion* TargetRegion(const Buffer& buffer) const {
    for (const BufferRegion& r : target_->writes) {
      if (r.buffer.same_as(buffer)) return &r;
    }
    for (const BufferRegion& r : target_->reads) {
      if (r.buffer.same_as(buffer)) return &r;
    }
    return nullptr;
  }

  std::vector<Range> DescRegion(const Buffer& buffer) const {
    for (const auto* list : {&desc_root_->writes, &desc_root_->reads}) {
      for (const BufferRegion& r : *list) {
        if (r.buffer.same_as(buffer)) return r.region;
      }
    }
    return BufferRegion::Full(buffer).region;
  }

  absl::Status Bind(const Buffer& d, const Buffer& t) {
    auto it = bindings_.find(d);
    if (it != bindings_.end()) {
      if (it->second.buffer.same_as(t)) return absl::OkStatus();
      return Diff(absl::StrCat("the description's buffer ", d.name(), " stands for both ",
                               it->second.buffer.name(), " and ", t.name()));
    }
    for (const auto& entry : bindings_) {
      if (entry.second.buffer.same_as(t)) {
        return Diff(absl::StrCat("buffer ", t.name(), " stands for both ", entry.first.name(),
                                 " and ", d.name(), " of the description"));
      }
    }
    if (t.dtype() != d.dtype()) {
      return Diff(absl::StrCat("buffer ", t.name(), " is ", t.dtype().ToString(),
                               ", the description's ", d.name(), " is ", d.dtype().ToString()));
    }
    if (!ScopeCompatible(d.scope(), t.scope())) {
      return Diff(absl::StrCat("buffer ", t.name(), " has scope ", t.scope(),
                               ", the description's ", d.name(), " needs ", d.scope()));
    }
    if (t.ndim() < d.ndim()) {
      return Diff(absl::StrCat("buffer ", t.name(), " has fewer dimensions than ", d.name()));
    }
    const BufferRegion* region = TargetRegion(t);
    if (region == nullptr) {
      return Diff(absl::StrCat("buffer ", t.name(), " is not among the block's reads and writes"));
    }
    for (const BufferRegion& r : target_->reads) {
      if (!r.buffer.same_as(t)) continue;
      for (size_t j = 0; j < r.region.size(); ++j) {
        if (!analyzer_.CanProveEqual(r.region[j].min, region->region[j].min) ||
            !analyzer_.CanProveEqual(r.region[j].extent, region->region[j].extent)) {
          return Diff(
              absl::StrCat("buffer ", t.name(), " is read and written in different regions"));
        }
      }
    }
    std::vector<Range> desc_region = DescRegion(d);
    const int lead = t.ndim() - d.ndim();
    for (int j = 0; j < t.ndim(); ++j) {
      Expr want = j < lead ? Expr(1) : desc_region[j - lead].extent;
      if (!analyzer_.CanProveEqual(region->region[j].extent, want)) {
        return Diff(absl::StrCat("the region of ", t.name(), " has extent ",
                                 PrintExpr(region->region[j].extent), " in dimension ", j,
                                 " where the description's ", d.name(), " needs ",
                                 PrintExpr(want)));
      }
    }
    bindings_[d] = BufferBinding{t, region->region, desc_region};
    return absl::OkStatus();
  }

  absl::Status Access(const Buffer& tb, const std::vector<Expr>& ti, const Buffer& db,
                      const std::vector<Expr>& di) {
    TESSERA_RETURN_IF_ERROR(Bind(db, tb));
    const BufferBinding& b = bindings_.at(db);
    const size_t lead = ti.size() - di.size();
    for (size_t j = 0; j < ti.size(); ++j) {
      Expr t = analyzer_.Simplify(T(ti[j]) - b.region[j].min);
      Expr d = j < lead ? Expr(0) : D(di[j - lead]) - b.desc_region[j - lead].min;
      if (!analyzer_.CanProveEqual(t, d)) {
        return Diff(absl::StrCat("index ", j, " of ", tb.name(), " is ", PrintExpr(t),
                                 " within the block's region, the description's ", db.name(),
                                 " has ", PrintExpr(analyzer_.Simplify(d))));
      }
    }
    return absl::OkStatus();
  }

  const Block& target_;
  const Block& desc_root_;
  const std::vector<Buffer>& desc_params_;
  arith::Analyzer analyzer_;
  VarMap tmap_, dmap_;
  std::set<const VarNode*> desc_loops_;
  BindingMap bindings_;
};

// ---- Instantiating the implementation ---------------------------------------------------

// Copies the implementation's body with fresh loop/iteration variables and unique block
// names, its parameters replaced by the bound regions of the block's buffers.
class ImplBinder : public IRMutator {
 public:
  ImplBinder(BindingMap params, std::set<std::string> taken_names)
      : params_(std::move(params)), taken_(std::move(taken_names)) {}

 protected:
  Expr VisitExpr_(const VarNode*, const Expr& self) override {
    auto it = vars_.find(AsVar(self));
    return it == vars_.end() ? self : it->second;
  }
  Expr VisitExpr_(const BufferLoadNode* op, const Expr& self) override {
    bool changed = false;
    std::vector<Expr> indices = VisitExprs(op->indices, &changed);
    auto it = params_.find(op->buffer);
    if (it == params_.end()) return changed ? op->buffer.Load(std::move(indices)) : self;
    return it->second.buffer.Load(Offset(it->second, indices));
  }
  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    bool changed = false;
    Expr value = VisitExpr(op->value);
    std::vector<Expr> indices = VisitExprs(op->indices, &changed);
    auto it = params_.find(op->buffer);
    if (it == params_.end()) {
      if (!changed && value.same_as(op->value)) return self;
      return BufferStore(op->buffer, value, std::move(indices));
    }
    return BufferStore(it->second.buffer, value, Offset(it->second, indices));
  }
  Stmt VisitStmt_(const ForNode* op, const Stmt&) override {
    Var fresh = op->loop_var.Copy();
    vars_[op->loop_var] = fresh;
    return For(fresh, VisitExpr(op->extent), op->for_kind, VisitStmt(op->body), op->thread_tag,
               op->annotations);
  }
  Stmt VisitStmt_(const BlockNode* op, const Stmt&) override {
    auto node = std::make_shared<BlockNode>(*op);
    node->name = FreshName(op->name);
    bool unused = false;
    for (IterVar& iv : node->iter_vars) {
      Var fresh = iv.var.Copy();
      vars_[iv.var] = fresh;
      iv = IterVar{fresh, VisitRange(iv.dom, &unused), iv.kind};
    }
    for (auto* list : {&node->reads, &node->writes}) {
      for (BufferRegion& r : *list) r = BindRegion(r);
    }
    if (op->init.defined()) node->init = VisitStmt(op->init);
    node->body = VisitStmt(op->body);
    return Block(std::move(node));
  }

 private:
  std::vector<Expr> Offset(const BufferBinding& b, const std::vector<Expr>& indices) {
    const size_t lead = b.region.size() - indices.size();
    std::vector<Expr> out;
    for (size_t j = 0; j < b.region.size(); ++j) {
      if (j < lead) {
        out.push_back(b.region[j].min);
      } else {
        out.push_back(
            analyzer_.Simplify(b.region[j].min + indices[j - lead] - b.desc_region[j - lead].min));
      }
    }
    return out;
  }
  BufferRegion BindRegion(const BufferRegion& r) {
    bool unused = false;
    std::vector<Range> ranges;
    for (const Range& range : r.region) ranges.push_back(VisitRange(range, &unused));
    auto it = params_.find(r.buffer);
    if (it == params_.end()) return BufferRegion{r.buffer, ranges};
    const BufferBinding& b = it->second;
    std::vector<Expr> mins;
    for (const Range& range : ranges) mins.push_back(range.min);
    std::vector<Expr> new_mins = Offset(b, mins);
    const size_t lead = b.region.size() - ranges.size();
    std::vector<Range> out;
    for (size_t j = 0; j < b.region.size(); ++j) {
      out.push_back(Range{new_mins[j], j < lead ? Expr(1) : ranges[j - lead].extent});
    }
    return BufferRegion{b.buffer, out};
  }
  std::string FreshName(const std::string& base) {
    std::string name = base;
    for (int i = 1; taken_.count(name) != 0; ++i) name = absl::StrCat(base, "_", i);
    taken_.insert(name);
    return name;
  }

  BindingMap params_;
  std::set<std::string> taken_;
  VarMap vars_;
  arith::Analyzer analyzer_;
};

}  // namespace

absl::Status RegisterTensorIntrin(TensorIntrin intrin) {
  TESSERA_RETURN_IF_ERROR(Validate(intrin));
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.intrins.count(intrin.name) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("tensor intrinsic ", intrin.name, " is already registered"));
  }
  std::string key = intrin.name;
  r.intrins.emplace(std::move(key), std::move(intrin));
  return absl::OkStatus();
}

absl::StatusOr<TensorIntrin> GetTensorIntrin(const std::string& name) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.intrins.find(name);
  if (it == r.intrins.end()) {
    std::vector<std::string> names;
    for (const auto& entry : r.intrins) names.push_back(entry.first);
    return absl::NotFoundError(
        absl::StrCat("unknown tensor intrinsic ", name, "; known: ", absl::StrJoin(names, ", ")));
  }
  return it->second;
}

std::vector<std::string> ListTensorIntrins() {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& entry : r.intrins) names.push_back(entry.first);
  return names;
}

absl::StatusOr<Stmt> InstantiateTensorIntrin(const Block& block, const TensorIntrin& intrin,
                                             std::set<std::string> taken_block_names) {
  const Block& desc_root = intrin.desc.body().as<BlockRealizeNode>()->block;
  Matcher matcher(block, desc_root, intrin.desc.params());
  TESSERA_RETURN_IF_ERROR(matcher.Match());
  BindingMap impl_params;
  for (size_t p = 0; p < intrin.impl.params().size(); ++p) {
    impl_params[intrin.impl.params()[p]] = matcher.bindings().at(intrin.desc.params()[p]);
  }
  ImplBinder binder(std::move(impl_params), std::move(taken_block_names));
  return binder.VisitStmt(intrin.impl.body().as<BlockRealizeNode>()->block->body);
}

}  // namespace tessera
