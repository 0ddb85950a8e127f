// ShiftInt8Product: a product of two int8 operands summed in int32,
//   init C[c] = 0;  C[c] = C[c] + int32(A[a]) * int32(B[b])
// becomes one whose first operand is shifted into the unsigned range, its sums starting from the
// shift's share, which a new block before it computes from B alone:
//   S[s] = sum over the reduction of int32(B[b]) * -128
//   init C[c] = S[s];  C[c] = C[c] + (int32(A[a]) + 128) * int32(B[b])
// (s: the spatial variables B's indices use). Exact in int32's wrapping arithmetic, like the
// product's own sums. The shifted product is what x86's vpdpbusd multiplies (unsigned by signed
// bytes), so a kernel of these dot products needs no correction per call, and S of a model's
// weight is computed once, with their packing (docs/cpu-backend.md "int8 without the correction").
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "ir/arith/int_set.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "schedule/instruction_kinds.h"
#include "schedule/primitive/apply_util.h"
#include "schedule/primitive/cache_internal.h"
#include "schedule/primitive/util.h"
#include "schedule/schedule.h"

namespace tessera {

extern const InstructionKind kShiftInt8Product;

namespace {

using primitive::Invalid;
using primitive::WithPrimitive;

constexpr const char* kPrimitive = "shift_int8_product";
constexpr int64_t kShift = 128;

// The operands of `int32(x) * int32(y)`, y the int8 load of `summed`; nullptr where the update
// is not C = C + that product.
struct Int8Product {
  Expr shifted;  // x, int8
  const BufferLoadNode* summed = nullptr;
};

Int8Product MatchInt8Product(const BlockNode& block, const Buffer& summed) {
  Int8Product out;
  const auto* store = block.body.as<BufferStoreNode>();
  if (store == nullptr || store->buffer.dtype() != DataType::Int32()) return out;
  const auto* add = store->value.as<BinaryNode>();
  if (add == nullptr || add->op != BinaryOp::kAdd) return out;
  auto is_output = [&](const Expr& e) {
    const auto* load = e.as<BufferLoadNode>();
    return load != nullptr && load->buffer.same_as(store->buffer);
  };
  const Expr product = is_output(add->a) ? add->b : is_output(add->b) ? add->a : Expr();
  const auto* mul = product.defined() ? product.as<BinaryNode>() : nullptr;
  if (mul == nullptr || mul->op != BinaryOp::kMul) return out;
  const auto* lhs = mul->a.as<CastNode>();
  const auto* rhs = mul->b.as<CastNode>();
  if (lhs == nullptr || rhs == nullptr || lhs->dtype != DataType::Int32() ||
      rhs->dtype != DataType::Int32() || lhs->value.dtype() != DataType::Int8() ||
      rhs->value.dtype() != DataType::Int8()) {
    return out;
  }
  const auto* rhs_load = rhs->value.as<BufferLoadNode>();
  const auto* lhs_load = lhs->value.as<BufferLoadNode>();
  if (rhs_load != nullptr && rhs_load->buffer.same_as(summed)) {
    out = {lhs->value, rhs_load};
  } else if (lhs_load != nullptr && lhs_load->buffer.same_as(summed)) {
    out = {rhs->value, lhs_load};
  }
  return out;
}

}  // namespace

absl::StatusOr<BlockRV> Schedule::ShiftInt8Product(BlockRV block_rv, int summed_read) {
  absl::StatusOr<primitive::ScopeContext> located = primitive::Locate(*this, block_rv, kPrimitive);
  if (!located.ok()) return WithPrimitive(kPrimitive, located.status());
  const primitive::ScopeContext& ctx = *located;
  const Block& block = ctx.block;
  const std::string& name = block->name;
  if (summed_read < 0 || summed_read >= static_cast<int>(block->reads.size())) {
    return Invalid(kPrimitive,
                   absl::StrCat("summed_read ", summed_read, " is out of range for block ", name,
                                ", which reads ", block->reads.size(), " buffers"));
  }
  const Buffer summed = block->reads[summed_read].buffer;
  const Int8Product product = MatchInt8Product(*block.get(), summed);
  if (product.summed == nullptr) {
    return Invalid(
        kPrimitive,
        absl::StrCat("block ", name, " is not C = C + int32(x) * int32(", summed.name(),
                     "[..]) with int8 operands and int32 sums: ", PrintStmt(block->body)));
  }
  const auto* init = block->init.defined() ? block->init.as<BufferStoreNode>() : nullptr;
  const auto* zero = init != nullptr ? init->value.as<IntImmNode>() : nullptr;
  if (zero == nullptr || zero->value != 0) {
    return Invalid(kPrimitive, absl::StrCat("block ", name,
                                            " has no init statement storing 0 (decomposed "
                                            "reductions start from what C holds)"));
  }
  // S's dimensions: the spatial variables B's indices use, in the block's order.
  std::set<const VarNode*> b_vars;
  for (const Expr& index : product.summed->indices) {
    PostOrderVisitExprs(index, [&](const Expr& e) {
      if (const auto* v = e.as<VarNode>()) b_vars.insert(v);
    });
  }
  BlockNode sums;
  sums.name = UniqueName(func_, absl::StrCat(name, "_shift"), NameScope::kBlocksAndBuffers);
  std::vector<Expr> s_shape, s_at_product, s_at_sums;
  std::vector<Var> loop_vars;
  std::vector<Expr> extents;
  VarMap to_sums;
  // The reduction's variables first: their loops outside, so that each step of the reduction
  // adds a row of B to the sums (vectors along B's rows).
  std::vector<IterVar> ordered;
  for (IterKind kind : {IterKind::kReduction, IterKind::kSpatial}) {
    for (const IterVar& iv : block->iter_vars) {
      if (iv.kind == kind) ordered.push_back(iv);
    }
  }
  for (const IterVar& iv : ordered) {
    const bool spatial = iv.kind == IterKind::kSpatial;
    if (spatial && !b_vars.count(iv.var.get())) continue;
    if (!IsConstInt(iv.dom.min, 0) || AsConstInt(iv.dom.extent) == nullptr) {
      return Invalid(kPrimitive, absl::StrCat("iteration variable ", iv.var.name(), " of block ",
                                              name, " does not range over [0, constant)"));
    }
    Var v = iv.var.Copy(iv.var.name());
    sums.iter_vars.push_back(IterVar{v, iv.dom, iv.kind});
    to_sums[iv.var] = v;
    loop_vars.push_back(Var(absl::StrCat(iv.var.name(), "_shift")));
    extents.push_back(iv.dom.extent);
    if (spatial) {
      s_shape.push_back(iv.dom.extent);
      s_at_product.push_back(iv.var);
      s_at_sums.push_back(v);
    }
  }
  if (s_shape.empty()) {
    return Invalid(kPrimitive, absl::StrCat("the indices of ", summed.name(), " in block ", name,
                                            " use none of its spatial variables"));
  }
  const DataType i32 = DataType::Int32();
  const Buffer s = Buffer::Make(sums.name, i32, s_shape, "global");
  const Expr b_load = product.summed->buffer.Load(product.summed->indices);
  const Expr b_at_sums = Substitute(b_load, to_sums);
  sums.init = BufferStore(s, MakeConst(i32, 0), s_at_sums);
  sums.body =
      BufferStore(s, s.Load(s_at_sums) + Cast(i32, b_at_sums) * MakeConst(i32, -kShift), s_at_sums);
  arith::BufferAccessRegions regions = arith::DetectBlockAccessRegions(MakeBlock(sums));
  sums.reads = std::move(regions.reads);
  sums.writes = std::move(regions.writes);
  Stmt nest =
      BlockRealize(std::vector<Expr>(loop_vars.begin(), loop_vars.end()), True(), MakeBlock(sums));
  for (size_t d = loop_vars.size(); d-- > 0;) {
    nest = For(loop_vars[d], extents[d], ForKind::kSerial, nest);
  }

  // The product: its init the shift's share, its first operand shifted.
  std::shared_ptr<BlockNode> shifted = block.CopyNode();
  shifted->init = BufferStore(init->buffer, s.Load(s_at_product), init->indices);
  const auto* store = block->body.as<BufferStoreNode>();
  const Expr shifted_product =
      (Cast(i32, product.shifted) + MakeConst(i32, kShift)) * Cast(i32, b_load);
  shifted->body = BufferStore(store->buffer, store->buffer.Load(store->indices) + shifted_product,
                              store->indices);
  std::vector<Range> point;
  for (const Expr& e : s_at_product) point.push_back(Range{e, Expr(1)});
  shifted->reads.push_back(BufferRegion{s, point});
  const Stmt& old_realize = ctx.path.back();
  const auto* realize = old_realize.as<BlockRealizeNode>();

  std::vector<Stmt> children = ctx.children;
  children.insert(children.begin() + ctx.block_child, nest);
  PrimFunc func = primitive::RebuildScope(func_, ctx, std::move(children), s);
  func_ = ReplaceStmt(func, old_realize,
                      BlockRealize(realize->iter_values, realize->predicate, MakeBlock(*shifted)));
  BlockRV result = NewBlockRV(sums.name);
  Record(kShiftInt8Product, {InstValue::Of(block_rv)}, {InstValue::Int(summed_read)},
         {InstValue::Of(result)});
  return result;
}

namespace {

using namespace apply_util;  // NOLINT: decoding helpers

Outputs ApplyShiftInt8Product(Schedule* sch, const Values& inputs, const Values& attrs,
                              const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 1));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t summed_read, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(BlockRV sums,
                           sch->ShiftInt8Product(block, static_cast<int>(summed_read)));
  return Values{InstValue::Of(sums)};
}

}  // namespace

const InstructionKind kShiftInt8Product = {"ShiftInt8Product", false, &ApplyShiftInt8Product};

const std::vector<const InstructionKind*>& ShiftInt8ProductInstructionKinds() {
  static const std::vector<const InstructionKind*> kinds = {&kShiftInt8Product};
  return kinds;
}

}  // namespace tessera
