// Blockize and Tensorize, after TVM's schedule/primitive/blockize_tensorize.cc.
//
// Blockize(loop) wraps the single block under `loop` into an outer block `<name>_o`. Each
// binding of the inner block is divided into `outer * extent + inner`, where `inner` uses only
// the loops under `loop` and covers [0, extent), and `outer` only the loops outside; the outer
// block iterates the outer parts and the inner block is rebound to `vo * extent + inner`. The
// reduction init moves to the outer block (as a block `<name>_init` under a loop nest over the
// inner spatial parts), so that the inner block is a pure update, which is what tensor
// intrinsics describe; DecomposeReduction of the outer block then yields an init block of the
// loops-over-a-block form that a fill intrinsic describes.
//
// Tensorize(block) compares the block with an intrinsic's description (loops by extent,
// blocks by iteration kinds, statements and expressions by structure, buffer accesses
// relative to the block's regions) and replaces its body by the intrinsic's implementation
// with the description's parameters bound to the block's buffer regions. The block keeps its
// iteration variables, regions and init, and gets the annotation "tensor_intrin".
#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "ir/arith/int_set.h"
#include "ir/arith/iter_map.h"
#include "ir/arith/linear.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "schedule/instruction_kinds.h"
#include "schedule/primitive/apply_util.h"
#include "schedule/primitive/util.h"
#include "schedule/schedule.h"
#include "schedule/tensor_intrin.h"

namespace tessera {
namespace {

using primitive::Invalid;
using primitive::WithPrimitive;

constexpr const char* kBlockizeName = "blockize";
constexpr const char* kTensorizeName = "tensorize";

// ---- Blockize ----------------------------------------------------------------------------

// A binding divided as outer * extent + inner.
struct Division {
  Expr outer;  // Uses only loops outside the blockized loop.
  Expr inner;  // Uses only loops under it; covers [0, extent).
  int64_t extent = 1;
};

// Divides every binding of `realize` (under `inner_loops`, which are under `outer_loops`).
absl::StatusOr<std::vector<Division>> DivideBindings(
    const BlockRealizeNode* realize, const std::vector<Stmt>& outer_loops,
    const std::vector<const ForNode*>& inner_loops) {
  const Block& block = realize->block;
  const std::string& loop_name = inner_loops.front()->loop_var.name();
  arith::Analyzer analyzer;
  primitive::BindLoopRanges(outer_loops, &analyzer);
  std::vector<Var> inner_vars;
  arith::VarRangeMap inner_ranges;
  for (const ForNode* f : inner_loops) {
    inner_vars.push_back(f->loop_var);
    inner_ranges[f->loop_var] = Range{Expr(0), f->extent};
    analyzer.Bind(f->loop_var, Range{Expr(0), f->extent});
  }
  std::vector<Division> out;
  std::vector<Expr> inners;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const IterVar& iv = block->iter_vars[k];
    auto fail = [&](const std::string& why) {
      return Invalid(kBlockizeName,
                     absl::StrCat("binding of ", iv.var.name(), " in block ", block->name,
                                  " is not divisible into inner/outer parts: ", why));
    };
    Expr value = analyzer.Simplify(realize->iter_values[k]);
    std::optional<arith::LinearEquation> eq =
        arith::DetectLinearEquation(value, inner_vars, &analyzer);
    if (!eq.has_value()) {
      return fail(absl::StrCat(PrintExpr(value), " is not affine in the loops under ", loop_name));
    }
    Expr inner = Expr(0);
    for (size_t v = 0; v < inner_vars.size(); ++v) {
      const int64_t* c = AsConstInt(eq->coeffs[v]);
      if (c == nullptr) return fail(absl::StrCat(PrintExpr(value), " has a non-constant scale"));
      if (*c != 0) inner = analyzer.Simplify(inner + inner_vars[v] * Expr(*c));
    }
    absl::StatusOr<std::vector<arith::IterSumExpr>> sum =
        arith::DetectIterMap({inner}, inner_ranges, Expr(), arith::IterMapLevel::kSurjective);
    if (!sum.ok()) return fail(std::string(sum.status().message()));
    Division d;
    d.inner = inner;
    if (!(*sum)[0].args.empty()) {
      const arith::IterSplitExpr& split = (*sum)[0].args[0];
      if ((*sum)[0].args.size() != 1 || split.scale != 1 || !IsConstInt((*sum)[0].base, 0)) {
        return fail(absl::StrCat("its inner part ", PrintExpr(inner),
                                 " does not cover a contiguous range"));
      }
      d.extent = split.extent;
    }
    const int64_t* dom_min = AsConstInt(iv.dom.min);
    const int64_t* dom_extent = AsConstInt(iv.dom.extent);
    if (dom_min == nullptr || *dom_min != 0 || dom_extent == nullptr) {
      return fail("its domain does not start at 0 with a constant extent");
    }
    if (*dom_extent % d.extent != 0) {
      return fail(absl::StrCat("its extent ", *dom_extent,
                               " is not a multiple of the inner extent ", d.extent));
    }
    if (!analyzer.CanProveEqual(FloorMod(eq->base, Expr(d.extent)), Expr(0))) {
      return fail(
          absl::StrCat("the outer part ", PrintExpr(eq->base), " is not a multiple of ", d.extent));
    }
    d.outer = analyzer.Simplify(FloorDiv(eq->base, Expr(d.extent)));
    inners.push_back(inner);
    out.push_back(d);
  }
  // Jointly, the inner parts must map the inner loops one to one onto their ranges: otherwise
  // the outer block's regions and the moved init would cover points the block never touches,
  // or the block would repeat.
  absl::StatusOr<std::vector<arith::IterSumExpr>> joint =
      arith::DetectIterMap(inners, inner_ranges, Expr(), arith::IterMapLevel::kBijective);
  if (!joint.ok()) {
    return Invalid(
        kBlockizeName,
        absl::StrCat("the bindings of block ", block->name, " do not map the loops under ",
                     loop_name, " one to one onto their inner parts: ", joint.status().message()));
  }
  return out;
}

Expr Conjoin(const Expr& a, const Expr& b) {
  if (IsConstInt(a, 1)) return b;
  if (IsConstInt(b, 1)) return a;
  return And(a, b);
}

struct Predicates {
  Expr outer = True();  // over the loops outside the blockized loop
  Expr inner = True();  // over all loops; kept on the inner block
};

// Divides the predicate of `realize` between the outer and the inner block. Conjuncts over
// the outer loops only go to the outer block. A predicate over the inner loops (an imperfect
// split) may let an outer part leave its range [0, dom / extent): those iterations are wholly
// predicated off, so the outer block gets `0 <= outer < dom / extent` as well, which keeps
// its bindings in their domains; the rest stays on the inner block unless it follows from
// the outer predicate.
Predicates DividePredicate(const BlockRealizeNode* realize, const std::vector<Stmt>& outer_loops,
                           const std::vector<const ForNode*>& inner_loops,
                           const std::vector<Division>& divs,
                           const std::function<bool(const VarNode*)>& is_inner) {
  Predicates out;
  std::vector<Expr> conjuncts;
  SplitConjuncts(realize->predicate, &conjuncts);
  if (conjuncts.empty()) return out;
  const Block& block = realize->block;
  arith::Analyzer analyzer;
  primitive::BindLoopRanges(outer_loops, &analyzer);
  std::vector<Expr> inner_conjuncts;
  for (const Expr& c : conjuncts) {
    if (UsesVar(c, is_inner)) {
      inner_conjuncts.push_back(c);
    } else {
      out.outer = Conjoin(out.outer, c);
    }
  }
  if (inner_conjuncts.empty()) return out;
  for (size_t k = 0; k < divs.size(); ++k) {
    const int64_t outer_extent = *AsConstInt(block->iter_vars[k].dom.extent) / divs[k].extent;
    const Expr& outer = divs[k].outer;
    if (!analyzer.CanProveGreaterEqual(outer, Expr(0))) {
      out.outer = Conjoin(out.outer, GE(outer, Expr(0)));
    }
    if (!analyzer.CanProveLess(outer, Expr(outer_extent))) {
      out.outer = Conjoin(out.outer, LT(outer, Expr(outer_extent)));
    }
  }
  for (const ForNode* f : inner_loops) analyzer.Bind(f->loop_var, Range{Expr(0), f->extent});
  arith::ConstraintScope assume = analyzer.EnterConstraint(out.outer);
  for (const Expr& c : inner_conjuncts) {
    if (!analyzer.CanProve(c)) out.inner = Conjoin(out.inner, c);
  }
  return out;
}

// Intersects the constant dimensions of `regions` with their buffers' extents. The inner parts
// relaxed over the inner loops can over-cover a buffer where the inner block guards its
// accesses (a padding select reads A[i - 3] only for 3 <= i < 19); a region outside the
// buffer would make a cache of it copy out of bounds.
std::vector<BufferRegion> ClipToBuffers(std::vector<BufferRegion> regions) {
  for (BufferRegion& r : regions) {
    for (size_t d = 0; d < r.region.size(); ++d) {
      const int64_t* min = AsConstInt(r.region[d].min);
      const int64_t* extent = AsConstInt(r.region[d].extent);
      const int64_t* size = AsConstInt(r.buffer.shape()[d]);
      if (min == nullptr || extent == nullptr || size == nullptr) continue;
      const int64_t lo = std::max<int64_t>(*min, 0);
      const int64_t hi = std::min<int64_t>(*min + *extent, *size);
      if (lo == *min && hi == *min + *extent) continue;
      r.region[d] = Range{Expr(lo), Expr(std::max<int64_t>(hi - lo, 0))};
    }
  }
  return regions;
}

struct BlockizeResult {
  PrimFunc func;
  std::string outer_name;
};

// Blockizes the loop at the end of `path` in `func`. Does not touch any schedule state.
absl::StatusOr<BlockizeResult> BlockizeImpl(const PrimFunc& func, const StmtPath& path,
                                            bool preserve_unit_iters) {
  const Stmt& loop_stmt = path.back();
  const std::string& loop_name = loop_stmt.as<ForNode>()->loop_var.name();
  std::vector<Stmt> children = ChildBlockRealizes(loop_stmt);
  if (children.size() != 1) {
    std::vector<std::string> names;
    for (const Stmt& c : children) names.push_back(c.as<BlockRealizeNode>()->block->name);
    return Invalid(kBlockizeName,
                   absl::StrCat("loop ", loop_name, " must contain exactly one block, found ",
                                children.size(), names.empty() ? "" : " (",
                                absl::StrJoin(names, ", "), names.empty() ? "" : ")"));
  }
  std::vector<const ForNode*> inner_loops;
  Stmt s = loop_stmt;
  while (const auto* f = s.as<ForNode>()) {
    inner_loops.push_back(f);
    s = f->body;
  }
  const auto* realize = children[0].as<BlockRealizeNode>();
  const Block& block = realize->block;
  if (!s.same_as(children[0])) {
    return Invalid(kBlockizeName,
                   absl::StrCat("the statements between loop ", loop_name, " and block ",
                                block->name, " are not a chain of loops"));
  }
  const std::vector<Stmt> outer_loops = LoopsOnPath(path);
  TESSERA_ASSIGN_OR_RETURN(std::vector<Division> divs,
                           DivideBindings(realize, outer_loops, inner_loops));

  auto is_inner_var = [&](const VarNode* v) {
    for (const ForNode* f : inner_loops) {
      if (f->loop_var.get() == v) return true;
    }
    return false;
  };
  const bool has_init = block->init.defined();
  const Predicates preds = DividePredicate(realize, outer_loops, inner_loops, divs, is_inner_var);
  const Expr& outer_pred = preds.outer;
  const Expr& inner_pred = preds.inner;
  if (has_init && !IsConstInt(inner_pred, 1)) {
    return Invalid(kBlockizeName,
                   absl::StrCat("block ", block->name, " has the predicate ", PrintExpr(inner_pred),
                                " over the loops under ", loop_name,
                                ", so its init cannot move to the outer block"));
  }

  // Outer iteration variables. With an init, reduction ones are kept even at extent 1 so that
  // the outer block is a reduction block (its init runs at the first reduction step).
  std::vector<IterVar> outer_ivs;
  std::vector<Expr> outer_values, inner_values;
  std::vector<Expr> outer_base(divs.size());  // vo * extent, or 0
  for (size_t k = 0; k < divs.size(); ++k) {
    const IterVar& iv = block->iter_vars[k];
    const Division& d = divs[k];
    const int64_t outer_extent = *AsConstInt(iv.dom.extent) / d.extent;
    const bool keep = outer_extent > 1 || (preserve_unit_iters && AsConstInt(d.outer) == nullptr) ||
                      (has_init && iv.kind == IterKind::kReduction);
    if (keep) {
      Var vo = iv.var.Copy(iv.var.name() + "_o");
      outer_ivs.push_back(IterVar{vo, Range{Expr(0), Expr(outer_extent)}, iv.kind});
      outer_values.push_back(d.outer);
      outer_base[k] = d.extent == 1 ? Expr(vo) : vo * Expr(d.extent);
    } else {
      outer_base[k] = Expr(0);
    }
    inner_values.push_back(keep ? (d.extent == 1 ? outer_base[k] : outer_base[k] + d.inner)
                                : d.inner);
  }

  // The init, moved out: loops over the inner parts of the spatial iteration variables.
  Stmt outer_init;
  if (has_init) {
    std::string reduction_var;
    PostOrderVisitExprs(block->init, [&](const Expr& e) {
      const auto* v = e.as<VarNode>();
      for (const IterVar& iv : block->iter_vars) {
        if (v != nullptr && iv.var.get() == v && iv.kind == IterKind::kReduction) {
          reduction_var = v->name;
        }
      }
    });
    if (!reduction_var.empty()) {
      return Invalid(kBlockizeName, absl::StrCat("the init of block ", block->name,
                                                 " uses the reduction variable ", reduction_var));
    }
    // A nested block `<name>_init` under loops over the inner parts of the spatial
    // iteration variables, bound like the inner block (`vo * extent + loop`), as TVM's
    // blockize makes it: after DecomposeReduction the init block then has the
    // loops-over-a-block form that an init intrinsic (a fill) describes.
    BlockNode init_node;
    init_node.name = UniqueBlockName(func, block->name + "_init");
    VarMap init_map;
    std::vector<Expr> init_values;
    std::vector<std::pair<Var, int64_t>> init_loops;
    for (size_t k = 0; k < divs.size(); ++k) {
      const IterVar& iv = block->iter_vars[k];
      if (iv.kind != IterKind::kSpatial) continue;
      Expr value = outer_base[k];
      if (divs[k].extent > 1) {
        Var l = iv.var.Copy(iv.var.name() + "_init");
        init_loops.emplace_back(l, divs[k].extent);
        value = IsConstInt(value, 0) ? Expr(l) : value + l;
      }
      Var v = iv.var.Copy();
      init_node.iter_vars.push_back(IterVar{v, iv.dom, IterKind::kSpatial});
      init_values.push_back(value);
      init_map[iv.var] = v;
    }
    init_node.body = Substitute(block->init, init_map);
    arith::BufferAccessRegions init_regions = arith::DetectBlockAccessRegions(MakeBlock(init_node));
    init_node.reads = init_regions.reads;
    init_node.writes = init_regions.writes;
    outer_init = BlockRealize(init_values, True(), MakeBlock(init_node));
    for (auto it = init_loops.rbegin(); it != init_loops.rend(); ++it) {
      outer_init = For(it->first, Expr(it->second), ForKind::kSerial, outer_init);
    }
  }

  std::shared_ptr<BlockNode> inner_node = block.CopyNode();
  inner_node->init = Stmt();
  Stmt body = BlockRealize(inner_values, inner_pred, Block(inner_node));
  for (auto it = inner_loops.rbegin(); it != inner_loops.rend(); ++it) {
    const ForNode* f = *it;
    body = For(f->loop_var, f->extent, f->for_kind, body, f->thread_tag, f->annotations);
  }
  BlockNode outer;
  outer.name = UniqueBlockName(func, block->name + "_o");
  outer.iter_vars = outer_ivs;
  outer.init = outer_init;
  outer.body = body;
  arith::Analyzer analyzer;
  for (const IterVar& iv : outer_ivs) analyzer.Bind(iv.var, iv.dom);
  arith::BufferAccessRegions regions = arith::DetectBlockAccessRegions(MakeBlock(outer), &analyzer);
  outer.reads = ClipToBuffers(regions.reads);
  outer.writes = ClipToBuffers(regions.writes);
  Stmt outer_realize = BlockRealize(outer_values, outer_pred, MakeBlock(outer));
  outer_realize = primitive::SimplifyBindings(outer_realize, outer_loops);
  return BlockizeResult{ReplaceStmt(func, loop_stmt, outer_realize), outer.name};
}

// Tensorizes block `block_name` of `func` with `intrin`.
absl::StatusOr<PrimFunc> TensorizeImpl(const PrimFunc& func, const std::string& block_name,
                                       const TensorIntrin& intrin) {
  TESSERA_ASSIGN_OR_RETURN(StmtPath path, FindBlockPath(func, block_name));
  const auto* realize = path.back().as<BlockRealizeNode>();
  const Block& block = realize->block;
  std::vector<std::string> names = AllBlockNames(func);
  absl::StatusOr<Stmt> impl_body =
      InstantiateTensorIntrin(block, intrin, std::set<std::string>(names.begin(), names.end()));
  if (!impl_body.ok()) {
    return Invalid(kTensorizeName, absl::StrCat("block ", block->name, " does not match intrinsic ",
                                                intrin.name, ": ", impl_body.status().message()));
  }
  std::shared_ptr<BlockNode> node = block.CopyNode();
  node->body = *impl_body;
  node->annotations["tensor_intrin"] = intrin.name;
  Stmt new_realize = BlockRealize(realize->iter_values, realize->predicate, Block(node));
  return ReplaceStmt(func, path.back(), new_realize);
}

// ---- Replay --------------------------------------------------------------------------------

using namespace apply_util;  // NOLINT: decoding helpers

Outputs ApplyBlockize(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 1));
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, AsLoop(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t preserve, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, sch->Blockize(loop, preserve != 0));
  return Values{InstValue::Of(block)};
}

Outputs ApplyTensorize(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 2));
  TESSERA_ASSIGN_OR_RETURN(std::string intrin, AsString(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t preserve, AsInt(attrs[1]));
  if (IsLoop(inputs[0])) {
    TESSERA_RETURN_IF_ERROR(sch->Tensorize(LoopRV{inputs[0].rv_id()}, intrin, preserve != 0));
  } else {
    TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
    TESSERA_RETURN_IF_ERROR(sch->Tensorize(block, intrin, preserve != 0));
  }
  return Values{};
}

const InstructionKind kBlockize = {"Blockize", false, &ApplyBlockize};
const InstructionKind kTensorize = {"Tensorize", false, &ApplyTensorize};

}  // namespace

absl::StatusOr<BlockRV> Schedule::Blockize(LoopRV loop, bool preserve_unit_iters) {
  absl::StatusOr<StmtPath> path = GetPath(loop);
  if (!path.ok()) return WithPrimitive(kBlockizeName, path.status());
  TESSERA_ASSIGN_OR_RETURN(BlockizeResult result, BlockizeImpl(func_, *path, preserve_unit_iters));
  func_ = result.func;
  BlockRV block = NewBlockRV(result.outer_name);
  Record(kBlockize, {InstValue::Of(loop)}, {InstValue::Int(preserve_unit_iters ? 1 : 0)},
         {InstValue::Of(block)});
  return block;
}

absl::Status Schedule::Tensorize(LoopRV loop, const std::string& intrin_name,
                                 bool preserve_unit_iters) {
  absl::StatusOr<TensorIntrin> intrin = GetTensorIntrin(intrin_name);
  if (!intrin.ok()) return WithPrimitive(kTensorizeName, intrin.status());
  absl::StatusOr<StmtPath> path = GetPath(loop);
  if (!path.ok()) return WithPrimitive(kTensorizeName, path.status());
  absl::StatusOr<BlockizeResult> blockized = BlockizeImpl(func_, *path, preserve_unit_iters);
  if (!blockized.ok()) return WithPrimitive(kTensorizeName, blockized.status());
  TESSERA_ASSIGN_OR_RETURN(PrimFunc func,
                           TensorizeImpl(blockized->func, blockized->outer_name, *intrin));
  func_ = func;
  Record(kTensorize, {InstValue::Of(loop)},
         {InstValue::String(intrin_name), InstValue::Int(preserve_unit_iters ? 1 : 0)}, {});
  return absl::OkStatus();
}

absl::Status Schedule::Tensorize(BlockRV block, const std::string& intrin_name,
                                 bool preserve_unit_iters) {
  absl::StatusOr<TensorIntrin> intrin = GetTensorIntrin(intrin_name);
  if (!intrin.ok()) return WithPrimitive(kTensorizeName, intrin.status());
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return WithPrimitive(kTensorizeName, name.status());
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive(kTensorizeName, path.status());
  TESSERA_ASSIGN_OR_RETURN(PrimFunc func, TensorizeImpl(func_, *name, *intrin));
  func_ = func;
  Record(kTensorize, {InstValue::Of(block)},
         {InstValue::String(intrin_name), InstValue::Int(preserve_unit_iters ? 1 : 0)}, {});
  return absl::OkStatus();
}

const std::vector<const InstructionKind*>& BlockizeTensorizeInstructionKinds() {
  static const std::vector<const InstructionKind*> kinds = {&kBlockize, &kTensorize};
  return kinds;
}

}  // namespace tessera
