// Reduction primitives: DecomposeReduction and RFactor.
//
// DecomposeReduction moves the init statement of a reduction block into its own block (spatial
// iteration variables only) placed right before a loop of the block; the loops between that loop
// and the block that bind spatial variables are replicated above the init block, the others are
// not. The original block keeps only its update.
//
// RFactor factorizes a reduction `C[s] = C[s] (+) x` over a loop `l` bound only in reduction
// variables: an rfactor block `<C>_rf` (under the original loops, where the block was) computes
// partial results `C_rf[.., l, ..] (+)= x` with l as a new spatial variable, and a write-back
// block (the original name and init, under fresh copies of the spatial loops and of l) reduces
// C_rf over l into C. Reducers recognised: +, *, min, max with the accumulator as one operand.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "ir/arith/analyzer.h"
#include "ir/arith/int_set.h"
#include "ir/functor.h"
#include "ir/prepack.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "schedule/instruction_kinds.h"
#include "schedule/primitive/apply_util.h"
#include "schedule/primitive/util.h"
#include "schedule/schedule.h"

namespace tessera {
namespace {

using primitive::HasReduction;
using primitive::Invalid;
using primitive::WithPrimitive;

constexpr const char* kDecompose = "decompose_reduction";
constexpr const char* kRFactorName = "rfactor";

const Var& LoopVarOf(const Stmt& loop) { return loop.as<ForNode>()->loop_var; }

bool Uses(const Expr& e, const Var& v) {
  return UsesVar(e, [&](const VarNode* n) { return n == v.get(); });
}

bool Uses(const Expr& e, const std::set<const VarNode*>& vars) {
  return UsesVar(e, [&](const VarNode* n) { return vars.count(n) != 0; });
}

// True if loop variable `v` appears in the binding of a variable of `kind`.
bool BindsKind(const BlockRealizeNode* realize, const Var& v, IterKind kind) {
  const Block& block = realize->block;
  for (size_t i = 0; i < block->iter_vars.size(); ++i) {
    if (block->iter_vars[i].kind == kind && Uses(realize->iter_values[i], v)) return true;
  }
  return false;
}

bool InitUsesReductionIter(const Block& block) {
  bool uses = false;
  PostOrderVisitExprs(block->init, [&](const Expr& e) {
    for (const IterVar& iv : block->iter_vars) {
      if (iv.kind == IterKind::kReduction && e.same_as(iv.var)) uses = true;
    }
  });
  return uses;
}

// A block predicate: the conjunction, or true for none.
Expr Conjoin(const std::vector<Expr>& conjuncts) {
  Expr result = Conjunction(conjuncts);
  return result.defined() ? result : True();
}

// Recomputes the read and write regions of a block built by a primitive.
Block WithAccessRegions(BlockNode node) {
  arith::BufferAccessRegions regions = arith::DetectBlockAccessRegions(MakeBlock(node));
  node.reads = std::move(regions.reads);
  node.writes = std::move(regions.writes);
  return MakeBlock(node);
}

// `body` under a copy of `loop` with loop variable `var`.
Stmt WrapInLoop(Stmt body, const ForNode& loop, const Var& var) {
  return For(var, loop.extent, loop.for_kind, std::move(body), loop.thread_tag, loop.annotations);
}

// Replaces the BlockRealize of block `scope_name` by one whose block also allocates `buffer`.
PrimFunc AddAllocation(const PrimFunc& func, const std::string& scope_name, const Buffer& buffer) {
  absl::StatusOr<StmtPath> path = FindBlockPath(func, scope_name);
  TESSERA_CHECK(path.ok()) << path.status();
  const auto* realize = path->back().as<BlockRealizeNode>();
  std::shared_ptr<BlockNode> node = realize->block.CopyNode();
  node->alloc_buffers.push_back(buffer);
  return ReplaceStmt(func, path->back(),
                     BlockRealize(realize->iter_values, realize->predicate, MakeBlock(*node)));
}

// ---- Reducer recognition --------------------------------------------------------------

// `C[idx] = C[idx] (op) x` (or `x (op) C[idx]`) with init `C[idx] = ...`.
struct Reducer {
  const BufferStoreNode* store = nullptr;
  BinaryOp op = BinaryOp::kAdd;
  bool accumulator_first = true;
  Expr update;    // x
  Expr identity;  // of op in the buffer's dtype
  Expr Combine(const Expr& acc, const Expr& value) const {
    return accumulator_first ? MakeBinary(op, acc, value) : MakeBinary(op, value, acc);
  }
};

bool SameIndices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!StructuralEqual(a[i], b[i])) return false;
  }
  return true;
}

bool IsAccumulatorLoad(const Expr& e, const BufferStoreNode* store) {
  const auto* load = e.as<BufferLoadNode>();
  return load != nullptr && load->buffer.same_as(store->buffer) &&
         SameIndices(load->indices, store->indices);
}

bool LoadsBuffer(const Expr& e, const Buffer& buffer) {
  bool found = false;
  PostOrderVisitExprs(e, [&](const Expr& sub) {
    const auto* load = sub.as<BufferLoadNode>();
    if (load != nullptr && load->buffer.same_as(buffer)) found = true;
  });
  return found;
}

absl::StatusOr<Reducer> MatchReducer(const Block& block) {
  const std::string where = absl::StrCat("block ", block->name);
  if (block->writes.size() != 1) {
    return Invalid(kRFactorName, absl::StrCat(where, " writes ", block->writes.size(),
                                              " buffers; rfactor needs exactly one"));
  }
  Reducer r;
  r.store = block->body.as<BufferStoreNode>();
  if (r.store == nullptr || !r.store->buffer.same_as(block->writes[0].buffer)) {
    return Invalid(kRFactorName,
                   absl::StrCat("the body of ", where, " is not a single store to its output"));
  }
  const auto* init = block->init.as<BufferStoreNode>();
  if (init == nullptr || !init->buffer.same_as(r.store->buffer) ||
      !SameIndices(init->indices, r.store->indices)) {
    return Invalid(kRFactorName, absl::StrCat("the init of ", where, " is not a store to ",
                                              r.store->buffer.name(), " at the updated element"));
  }
  const auto* bin = r.store->value.as<BinaryNode>();
  const std::string text = PrintStmt(block->body);
  if (bin == nullptr || (bin->op != BinaryOp::kAdd && bin->op != BinaryOp::kMul &&
                         bin->op != BinaryOp::kMin && bin->op != BinaryOp::kMax)) {
    return Invalid(kRFactorName, absl::StrCat("cannot recognise a commutative reducer (+, *, min, "
                                              "max) in the body of ",
                                              where, ": ", text));
  }
  r.op = bin->op;
  if (IsAccumulatorLoad(bin->a, r.store)) {
    r.update = bin->b;
  } else if (IsAccumulatorLoad(bin->b, r.store)) {
    r.accumulator_first = false;
    r.update = bin->a;
  } else {
    return Invalid(kRFactorName, absl::StrCat("the body of ", where, " does not combine ",
                                              r.store->buffer.name(), " with a value: ", text));
  }
  if (LoadsBuffer(r.update, r.store->buffer)) {
    return Invalid(kRFactorName, absl::StrCat("the update of ", where, " reads ",
                                              r.store->buffer.name(), " again: ", text));
  }
  DataType dtype = r.store->buffer.dtype();
  switch (r.op) {
    case BinaryOp::kAdd:
      r.identity = MakeConst(dtype, 0);
      break;
    case BinaryOp::kMul:
      r.identity = MakeConst(dtype, 1);
      break;
    case BinaryOp::kMax:
      r.identity = MinValue(dtype);
      break;
    default:
      r.identity = MaxValue(dtype);
      break;
  }
  return r;
}

// ---- RFactor planning and construction ---------------------------------------------------

// What RFactor found valid about a loop and its block.
struct RFactorPlan {
  Stmt realize_stmt;
  const BlockRealizeNode* realize = nullptr;
  Block block;
  std::string scope_name;     // the block allocating the rf buffer
  std::vector<Stmt> loops;    // the block's loops, outermost first
  size_t rf_index = 0;        // of the rfactor loop in `loops`
  size_t top = 0;             // outermost loop holding only this block
  std::vector<bool> touched;  // reduction variables the rfactor loop drives
  Reducer reducer;
  size_t axis = 0;                 // normalized factor_axis
  std::vector<Stmt> wb_loops;      // loops (from `top`) the write-back copies
  std::vector<Expr> wb_conjuncts;  // predicate conjuncts over shared and copied loops
};

absl::Status RFactorError(const std::string& message) { return Invalid(kRFactorName, message); }

// Validates rfactor of `rf_loop` (see the file comment) and plans the rewrite.
absl::StatusOr<RFactorPlan> PlanRFactor(const PrimFunc& func, const Stmt& rf_loop,
                                        int factor_axis) {
  RFactorPlan plan;
  const Var& rf_var = LoopVarOf(rf_loop);
  const std::string& loop_name = rf_var.name();
  std::vector<Stmt> children = ChildBlockRealizes(rf_loop);
  if (children.size() != 1) {
    return RFactorError(absl::StrCat("loop ", loop_name, " encloses ", children.size(),
                                     " blocks; rfactor needs exactly one"));
  }
  plan.realize_stmt = children[0];
  plan.realize = plan.realize_stmt.as<BlockRealizeNode>();
  plan.block = plan.realize->block;
  const BlockNode* block = plan.block.get();
  const std::vector<Expr>& bindings = plan.realize->iter_values;
  const std::string& name = block->name;
  if (!block->init.defined() || !HasReduction(plan.block)) {
    return RFactorError(absl::StrCat("block ", name, " under loop ", loop_name,
                                     " is not a reduction block with an init statement"));
  }
  absl::StatusOr<StmtPath> path = FindBlockPath(func, name);
  TESSERA_CHECK(path.ok()) << path.status();
  plan.scope_name = EnclosingBlockRealize(*path).as<BlockRealizeNode>()->block->name;
  plan.loops = LoopsOnPath(*path);
  const std::vector<Stmt>& loops = plan.loops;
  while (plan.rf_index < loops.size() && !loops[plan.rf_index].same_as(rf_loop)) ++plan.rf_index;
  if (plan.rf_index == loops.size()) {
    return RFactorError(absl::StrCat("loop ", loop_name, " is not a loop of block ", name,
                                     " (the block is nested in another block)"));
  }

  // Which variables the rfactor loop drives, and which loops bind spatial variables.
  const size_t n_iters = block->iter_vars.size();
  plan.touched.assign(n_iters, false);
  std::set<const VarNode*> spatial_loops;
  for (size_t i = 0; i < n_iters; ++i) {
    const IterVar& iv = block->iter_vars[i];
    if (Uses(bindings[i], rf_var)) {
      if (iv.kind == IterKind::kSpatial) {
        return RFactorError(absl::StrCat("loop ", loop_name, " binds spatial variable ",
                                         iv.var.name(), " of block ", name,
                                         "; rfactor needs a reduction loop"));
      }
      plan.touched[i] = true;
    } else if (iv.kind == IterKind::kSpatial) {
      for (const Stmt& l : loops) {
        if (Uses(bindings[i], LoopVarOf(l))) spatial_loops.insert(LoopVarOf(l).get());
      }
    }
  }
  if (std::find(plan.touched.begin(), plan.touched.end(), true) == plan.touched.end()) {
    return RFactorError(absl::StrCat("loop ", loop_name,
                                     " does not appear in the bindings "
                                     "of block ",
                                     name));
  }
  for (size_t i = 0; i < n_iters; ++i) {
    if (!plan.touched[i]) continue;
    for (const Stmt& l : loops) {
      if (Uses(bindings[i], LoopVarOf(l)) && spatial_loops.count(LoopVarOf(l).get())) {
        return RFactorError(absl::StrCat("loop ", LoopVarOf(l).name(),
                                         " binds both spatial "
                                         "and reduction variables of block ",
                                         name));
      }
    }
  }
  TESSERA_ASSIGN_OR_RETURN(plan.reducer, MatchReducer(plan.block));
  const Buffer& out = plan.reducer.store->buffer;
  const int ndim = out.ndim();
  if (factor_axis < -(ndim + 1) || factor_axis > ndim) {
    return RFactorError(absl::StrCat("factor_axis ", factor_axis, " is out of range [", -(ndim + 1),
                                     ", ", ndim, "] for buffer ", out.name(), " of block ", name));
  }
  plan.axis = static_cast<size_t>(factor_axis < 0 ? factor_axis + ndim + 1 : factor_axis);
  if (InitUsesReductionIter(plan.block)) {
    return RFactorError(absl::StrCat("the init of block ", name, " uses a reduction variable"));
  }

  // The loops above `top` are shared with other blocks and must not drive reductions.
  while (ChildBlockRealizes(loops[plan.top]).size() != 1) ++plan.top;
  for (size_t q = 0; q < plan.top; ++q) {
    for (size_t i = 0; i < n_iters; ++i) {
      if (block->iter_vars[i].kind == IterKind::kReduction &&
          Uses(bindings[i], LoopVarOf(loops[q]))) {
        return RFactorError(absl::StrCat(
            "loop ", LoopVarOf(loops[q]).name(), " binds reduction variable ",
            block->iter_vars[i].var.name(), " of block ", name, " and also encloses other blocks"));
      }
    }
  }
  // From `top` down, the write-back copies the spatial loops and the rfactor loop; the others
  // are reduction-only ("dropped").
  std::set<const VarNode*> dropped;
  VarMap zero_dropped;
  for (size_t q = plan.top; q < loops.size(); ++q) {
    const Var& v = LoopVarOf(loops[q]);
    if (q == plan.rf_index || spatial_loops.count(v.get())) {
      plan.wb_loops.push_back(loops[q]);
    } else {
      dropped.insert(v.get());
      zero_dropped[v] = Expr(0);
    }
  }
  // Every partial result the write-back reads must be initialized by the rfactor block, whose
  // init runs when the dropped loops are all 0: there the predicate must hold and the
  // remaining reduction variables must be at their minimum.
  arith::Analyzer analyzer;
  primitive::BindLoopRanges(loops, &analyzer);
  std::vector<Expr> conjuncts;
  SplitConjuncts(plan.realize->predicate, &conjuncts);
  for (const Expr& c : conjuncts) {
    if (!Uses(c, dropped)) {
      plan.wb_conjuncts.push_back(c);
    } else if (!analyzer.CanProve(Substitute(c, zero_dropped))) {
      return RFactorError(absl::StrCat("cannot prove that the predicate ", PrintExpr(c),
                                       " of block ", name,
                                       " lets every partial result be initialized"));
    }
  }
  for (size_t i = 0; i < n_iters; ++i) {
    const IterVar& iv = block->iter_vars[i];
    if (iv.kind != IterKind::kReduction || plan.touched[i]) continue;
    if (!analyzer.CanProveEqual(Substitute(bindings[i], zero_dropped), iv.dom.min)) {
      return RFactorError(absl::StrCat("cannot prove that reduction variable ", iv.var.name(),
                                       " of block ", name,
                                       " starts at its minimum when the "
                                       "partial results are initialized"));
    }
  }
  return plan;
}

// The rfactor block, under the original loops: the rfactor loop binds a new spatial variable
// (first); each reduction variable the loop drove becomes its binding over that variable and
// new reduction variables, one per other loop of the binding.
Stmt MakeRFactorRealize(const RFactorPlan& plan, const Buffer& rf_buf, const std::string& name) {
  const BlockNode* block = plan.block.get();
  const std::vector<Expr>& bindings = plan.realize->iter_values;
  const auto* rf_op = plan.loops[plan.rf_index].as<ForNode>();
  BlockNode rf;
  rf.name = name;
  rf.alloc_buffers = block->alloc_buffers;
  std::vector<Expr> values;
  const Var rf_iter = rf_op->loop_var.Copy(absl::StrCat("v_", rf_op->loop_var.name()));
  rf.iter_vars.push_back(IterVar{rf_iter, Range{Expr(0), rf_op->extent}, IterKind::kSpatial});
  values.push_back(rf_op->loop_var);
  VarMap loop_to_iter;
  loop_to_iter[rf_op->loop_var] = rf_iter;
  VarMap body_map;
  for (size_t i = 0; i < block->iter_vars.size(); ++i) {
    const IterVar& iv = block->iter_vars[i];
    if (!plan.touched[i]) {
      Var nv = iv.var.Copy();
      rf.iter_vars.push_back(IterVar{nv, iv.dom, iv.kind});
      values.push_back(bindings[i]);
      body_map[iv.var] = nv;
      continue;
    }
    for (const Stmt& l : plan.loops) {
      const Var& lv = LoopVarOf(l);
      if (!Uses(bindings[i], lv) || loop_to_iter.count(lv)) continue;
      Var nv = lv.Copy(absl::StrCat("v_", lv.name()));
      rf.iter_vars.push_back(
          IterVar{nv, Range{Expr(0), l.as<ForNode>()->extent}, IterKind::kReduction});
      values.push_back(lv);
      loop_to_iter[lv] = nv;
    }
    body_map[iv.var] = Substitute(bindings[i], loop_to_iter);
  }
  const Reducer& reducer = plan.reducer;
  std::vector<Expr> indices;
  for (const Expr& index : reducer.store->indices) indices.push_back(Substitute(index, body_map));
  indices.insert(indices.begin() + static_cast<long>(plan.axis), rf_iter);
  Expr update = Substitute(reducer.update, body_map);
  if (HasReduction(MakeBlock(rf))) {
    rf.init = BufferStore(rf_buf, reducer.identity, indices);
    rf.body = BufferStore(rf_buf, reducer.Combine(rf_buf.Load(indices), update), indices);
  } else {
    // The rfactor loop was the only reduction loop: each partial result is one update.
    rf.body = BufferStore(rf_buf, update, indices);
  }
  return BlockRealize(std::move(values), plan.realize->predicate, WithAccessRegions(rf));
}

// Gives `out` fresh copies of `block`'s spatial iteration variables, in order, and appends their
// bindings (`iter_values`, the block's own, with `loop_map` applied) to `values`; `iter_map`
// maps each variable to its copy. The write-back block of rfactor and the init block of
// decompose-reduction both start so.
void CopySpatialIterVars(const BlockNode& block, const std::vector<Expr>& iter_values,
                         const VarMap& loop_map, BlockNode* out, std::vector<Expr>* values,
                         VarMap* iter_map) {
  for (size_t i = 0; i < block.iter_vars.size(); ++i) {
    const IterVar& iv = block.iter_vars[i];
    if (iv.kind != IterKind::kSpatial) continue;
    Var nv = iv.var.Copy();
    out->iter_vars.push_back(IterVar{nv, iv.dom, IterKind::kSpatial});
    values->push_back(Substitute(iter_values[i], loop_map));
    (*iter_map)[iv.var] = nv;
  }
}

// The write-back block (the original name, init and annotations) reducing the rf buffer over
// its rfactor dimension, under copies of the write-back loops (the rfactor loop made serial
// unless thread-bound).
Stmt MakeWriteBackNest(const RFactorPlan& plan, const Buffer& rf_buf) {
  const BlockNode* block = plan.block.get();
  const Var& rf_var = LoopVarOf(plan.loops[plan.rf_index]);
  VarMap loop_map;
  std::vector<Var> new_loop_vars;
  for (const Stmt& l : plan.wb_loops) {
    new_loop_vars.push_back(LoopVarOf(l).Copy());
    loop_map[LoopVarOf(l)] = new_loop_vars.back();
  }
  BlockNode wb;
  wb.name = block->name;
  wb.annotations = block->annotations;
  std::vector<Expr> values;
  VarMap iter_map;
  CopySpatialIterVars(*block, plan.realize->iter_values, loop_map, &wb, &values, &iter_map);
  const Var wb_rf_iter = rf_var.Copy(absl::StrCat("v_", rf_var.name()));
  wb.iter_vars.push_back(IterVar{wb_rf_iter,
                                 Range{Expr(0), plan.loops[plan.rf_index].as<ForNode>()->extent},
                                 IterKind::kReduction});
  values.push_back(loop_map.at(rf_var));
  const Buffer& out = plan.reducer.store->buffer;
  std::vector<Expr> indices;
  for (const Expr& index : plan.reducer.store->indices)
    indices.push_back(Substitute(index, iter_map));
  std::vector<Expr> partial = indices;
  partial.insert(partial.begin() + static_cast<long>(plan.axis), wb_rf_iter);
  wb.init = Substitute(block->init, iter_map);
  wb.body =
      BufferStore(out, plan.reducer.Combine(out.Load(indices), rf_buf.Load(partial)), indices);
  std::vector<Expr> conjuncts;
  for (const Expr& c : plan.wb_conjuncts) conjuncts.push_back(Substitute(c, loop_map));
  Stmt nest = BlockRealize(std::move(values), Conjoin(conjuncts), WithAccessRegions(wb));
  for (size_t i = plan.wb_loops.size(); i-- > 0;) {
    const auto* op = plan.wb_loops[i].as<ForNode>();
    if (op->loop_var.same_as(rf_var) && op->for_kind != ForKind::kThreadBinding) {
      nest = For(new_loop_vars[i], op->extent, ForKind::kSerial, nest);
    } else {
      nest = WrapInLoop(nest, *op, new_loop_vars[i]);
    }
  }
  std::vector<Stmt> shared(plan.loops.begin(), plan.loops.begin() + static_cast<long>(plan.top));
  return primitive::SimplifyBindings(nest, shared);
}

// ---- Replay ---------------------------------------------------------------------------

using namespace apply_util;  // NOLINT: decoding helpers

Outputs ApplyDecomposeReduction(Schedule* sch, const Values& inputs, const Values& attrs,
                                const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 2, attrs, 0));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, AsLoop(inputs[1]));
  TESSERA_ASSIGN_OR_RETURN(BlockRV init, sch->DecomposeReduction(block, loop));
  return Values{InstValue::Of(init)};
}

Outputs ApplyRFactor(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 1));
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, AsLoop(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t factor_axis, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(BlockRV rf, sch->RFactor(loop, static_cast<int>(factor_axis)));
  return Values{InstValue::Of(rf)};
}

const InstructionKind kDecomposeReduction = {"DecomposeReduction", false, &ApplyDecomposeReduction};
const InstructionKind kRFactor = {"RFactor", false, &ApplyRFactor};

}  // namespace

// ---- DecomposeReduction -----------------------------------------------------------------

absl::StatusOr<BlockRV> Schedule::DecomposeReduction(BlockRV block_rv, LoopRV loop_rv) {
  absl::StatusOr<StmtPath> path = GetPath(block_rv);
  if (!path.ok()) return WithPrimitive(kDecompose, path.status());
  absl::StatusOr<StmtPath> loop_path = GetPath(loop_rv);
  if (!loop_path.ok()) return WithPrimitive(kDecompose, loop_path.status());
  const Stmt& realize_stmt = path->back();
  const auto* realize = realize_stmt.as<BlockRealizeNode>();
  const Block& block = realize->block;
  const std::string& name = block->name;
  if (!block->init.defined() || !HasReduction(block)) {
    return Invalid(kDecompose, absl::StrCat("block ", name,
                                            " is not a reduction block with an init statement"));
  }
  if (InitUsesReductionIter(block)) {
    return Invalid(kDecompose,
                   absl::StrCat("the init of block ", name, " uses a reduction variable"));
  }
  const Stmt& loop = loop_path->back();
  std::vector<Stmt> loops = LoopsOnPath(*path);
  size_t pos = 0;
  while (pos < loops.size() && !loops[pos].same_as(loop)) ++pos;
  if (pos == loops.size()) {
    return Invalid(kDecompose,
                   absl::StrCat("loop ", LoopVarOf(loop).name(), " is not a loop of block ", name));
  }
  // Every loop that drives a reduction variable must be `loop` or inside it, or the init
  // would run again for each of its iterations.
  for (size_t q = 0; q < pos; ++q) {
    for (size_t i = 0; i < block->iter_vars.size(); ++i) {
      if (block->iter_vars[i].kind == IterKind::kReduction &&
          Uses(realize->iter_values[i], LoopVarOf(loops[q]))) {
        return Invalid(kDecompose, absl::StrCat("loop ", LoopVarOf(loops[q]).name(),
                                                " binds reduction variable ",
                                                block->iter_vars[i].var.name(), " of block ", name,
                                                " and lies outside loop ", LoopVarOf(loop).name()));
      }
    }
  }
  // Loops from `loop` down that the spatial bindings need are replicated above the init.
  std::vector<Stmt> replicated;
  std::vector<Var> replicated_copies;
  std::set<const VarNode*> discarded;
  VarMap zero_discarded;
  VarMap loop_map;
  for (size_t q = pos; q < loops.size(); ++q) {
    const Var& v = LoopVarOf(loops[q]);
    const bool spatial_use = BindsKind(realize, v, IterKind::kSpatial);
    const bool reduction_use = BindsKind(realize, v, IterKind::kReduction);
    const Expr& extent = loops[q].as<ForNode>()->extent;
    if (!spatial_use && !reduction_use && !IsConstInt(extent, 1)) {
      // The block recomputes its reduction for each iteration of this loop, re-running the
      // init each time; with the init hoisted out, the updates would pile up.
      return Invalid(kDecompose, absl::StrCat("loop ", v.name(), " (extent ", PrintExpr(extent),
                                              ") under loop ", LoopVarOf(loop).name(),
                                              " binds no variable of block ", name,
                                              ", which recomputes its reduction for each of its "
                                              "iterations"));
    }
    if (spatial_use) {
      replicated.push_back(loops[q]);
      replicated_copies.push_back(v.Copy(absl::StrCat(v.name(), "_init")));
      loop_map[v] = replicated_copies.back();
    } else {
      discarded.insert(v.get());
      zero_discarded[v] = Expr(0);
    }
  }
  // In the block, the init ran at the first iteration of the reduction loops (all 0) if the
  // predicate held there. A conjunct over reduction loops alone holds there (the first
  // iteration is in range); one over both kinds, such as the tail guard `k_0 * 16 + k_1 < 77`
  // of a lane split in its rfactor block, guards the init with the reduction loops at 0.
  arith::Analyzer analyzer;
  primitive::BindLoopRanges(loops, &analyzer);
  std::set<const VarNode*> replicated_vars;
  for (const Stmt& l : replicated) replicated_vars.insert(LoopVarOf(l).get());
  std::vector<Expr> kept;
  std::vector<Expr> conjuncts;
  SplitConjuncts(realize->predicate, &conjuncts);
  for (const Expr& c : conjuncts) {
    if (!Uses(c, discarded)) {
      kept.push_back(Substitute(c, loop_map));
    } else if (Uses(c, replicated_vars)) {
      Expr at_first = Substitute(c, zero_discarded);
      if (!analyzer.CanProve(at_first)) kept.push_back(Substitute(at_first, loop_map));
    }
  }

  BlockNode init;
  init.name = UniqueBlockName(func_, absl::StrCat(name, "_init"));
  std::vector<Expr> values;
  VarMap iter_map;
  CopySpatialIterVars(*block.get(), realize->iter_values, loop_map, &init, &values, &iter_map);
  init.body = Substitute(block->init, iter_map);
  // The init of a block that packs weights (ir/prepack.h: ShiftInt8Product's sums of a weight)
  // runs once with it, in the packing, not in every call of the kernel.
  auto preproc = block->annotations.find(kLayoutRewritePreproc);
  if (preproc != block->annotations.end()) init.annotations.insert(*preproc);
  Stmt init_nest = BlockRealize(std::move(values), Conjoin(kept), WithAccessRegions(init));
  for (size_t q = replicated.size(); q-- > 0;) {
    init_nest = WrapInLoop(init_nest, *replicated[q].as<ForNode>(), replicated_copies[q]);
  }
  init_nest = primitive::SimplifyBindings(init_nest, LoopsOnPath(*loop_path));

  std::shared_ptr<BlockNode> update = block.CopyNode();
  update->init = Stmt();
  PrimFunc func =
      ReplaceStmt(func_, realize_stmt,
                  BlockRealize(realize->iter_values, realize->predicate, MakeBlock(*update)));
  absl::StatusOr<StmtPath> new_loop_path = FindLoopPath(func, LoopVarOf(loop));
  TESSERA_CHECK(new_loop_path.ok()) << new_loop_path.status();
  func = ReplaceStmt(func, new_loop_path->back(), SeqStmt({init_nest, new_loop_path->back()}));
  func_ = func;

  BlockRV result = NewBlockRV(init.name);
  Record(kDecomposeReduction, {InstValue::Of(block_rv), InstValue::Of(loop_rv)}, {},
         {InstValue::Of(result)});
  return result;
}

// ---- RFactor ----------------------------------------------------------------------------

absl::StatusOr<BlockRV> Schedule::RFactor(LoopRV loop_rv, int factor_axis) {
  absl::StatusOr<StmtPath> loop_path = GetPath(loop_rv);
  if (!loop_path.ok()) return WithPrimitive(kRFactorName, loop_path.status());
  TESSERA_ASSIGN_OR_RETURN(RFactorPlan plan, PlanRFactor(func_, loop_path->back(), factor_axis));
  const Buffer& out = plan.reducer.store->buffer;
  std::vector<Expr> rf_shape = out.shape();
  rf_shape.insert(rf_shape.begin() + static_cast<long>(plan.axis),
                  plan.loops[plan.rf_index].as<ForNode>()->extent);
  Buffer rf_buf =
      Buffer::Make(UniqueName(func_, absl::StrCat(out.name(), "_rf"), NameScope::kBuffers),
                   out.dtype(), rf_shape, out.scope());
  const std::string rf_name = UniqueBlockName(func_, absl::StrCat(plan.block->name, "_rf"));
  Stmt rf_realize = MakeRFactorRealize(plan, rf_buf, rf_name);
  Stmt wb_nest = MakeWriteBackNest(plan, rf_buf);

  // The write-back nest goes right after the top loop; the buffer into the scope block.
  const Var top_var = LoopVarOf(plan.loops[plan.top]);
  PrimFunc func = ReplaceStmt(func_, plan.realize_stmt, rf_realize);
  absl::StatusOr<StmtPath> top_path = FindLoopPath(func, top_var);
  TESSERA_CHECK(top_path.ok()) << top_path.status();
  func = ReplaceStmt(func, top_path->back(), SeqStmt({top_path->back(), wb_nest}));
  func_ = AddAllocation(func, plan.scope_name, rf_buf);

  BlockRV result = NewBlockRV(rf_name);
  Record(kRFactor, {InstValue::Of(loop_rv)}, {InstValue::Int(factor_axis)},
         {InstValue::Of(result)});
  return result;
}

const std::vector<const InstructionKind*>& ReductionInstructionKinds() {
  static const std::vector<const InstructionKind*> kinds = {&kDecomposeReduction, &kRFactor};
  return kinds;
}

}  // namespace tessera
