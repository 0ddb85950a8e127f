// Loop transformations: Split, Fuse, Reorder, AddUnitLoop. Each rewrites a loop nest and
// substitutes the old loop variables in the bindings of the blocks below, which stay affine:
// split gives `i_0 * f + i_1`, fuse gives `floordiv(f, e)` / `floormod(f, e)`.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "ir/functor.h"
#include "schedule/instruction_kinds.h"
#include "schedule/primitive/apply_util.h"
#include "schedule/primitive/util.h"
#include "schedule/schedule.h"

namespace tessera {
namespace {

using primitive::Invalid;
using primitive::WithPrimitive;

absl::StatusOr<int64_t> ConstExtent(const char* primitive, const ForNode* loop) {
  const int64_t* extent = AsConstInt(loop->extent);
  if (extent == nullptr) {
    return Invalid(primitive, absl::StrCat("loop ", loop->loop_var.name(),
                                           " has a non-constant extent"));
  }
  return *extent;
}

// Buffers written and read by the blocks directly under `stmt`.
bool BlocksDependOnEachOther(const Stmt& stmt, std::string* first, std::string* second) {
  // Only the outermost blocks under `stmt`: a block's regions cover the blocks nested in it
  // (e.g. the inner block of a blockized computation).
  std::vector<Stmt> realizes =
      stmt.kind() == StmtKind::kBlockRealize ? std::vector<Stmt>{stmt} : ChildBlockRealizes(stmt);
  for (const Stmt& a : realizes) {
    for (const Stmt& b : realizes) {
      if (a.same_as(b)) continue;
      const Block& wa = a.as<BlockRealizeNode>()->block;
      const Block& rb = b.as<BlockRealizeNode>()->block;
      for (const BufferRegion& w : wa->writes) {
        for (const BufferRegion& r : rb->reads) {
          if (w.buffer.same_as(r.buffer)) {
            *first = wa->name;
            *second = rb->name;
            return true;
          }
        }
      }
    }
  }
  return false;
}

// The block that binds `loop_var` into both a spatial and a reduction iteration variable
// under `body`, or "" if none. Reordering such a loop could move a reduction step of one output
// element before its init, so it is refused (TVM treats these loops as opaque).
std::string BlockMixingIterKinds(const Stmt& body, const Var& loop_var) {
  std::string offending;
  PostOrderVisitStmts(body, [&](const Stmt& s) {
    const auto* realize = s.as<BlockRealizeNode>();
    if (realize == nullptr) return;
    bool spatial = false, reduction = false;
    for (size_t i = 0; i < realize->iter_values.size(); ++i) {
      if (!UsesVar(realize->iter_values[i],
                   [&](const VarNode* v) { return v == loop_var.get(); })) {
        continue;
      }
      (realize->block->iter_vars[i].kind == IterKind::kSpatial ? spatial : reduction) = true;
    }
    if (spatial && reduction) offending = realize->block->name;
  });
  return offending;
}

}  // namespace

absl::StatusOr<std::vector<LoopRV>> Schedule::Split(LoopRV loop,
                                                    const std::vector<InstValue>& factors,
                                                    bool preserve_unit_iters) {
  constexpr const char* kPrimitive = "split";
  absl::StatusOr<StmtPath> path = GetPath(loop);
  if (!path.ok()) return WithPrimitive(kPrimitive, path.status());
  const auto* op = path->back().as<ForNode>();
  const std::string& name = op->loop_var.name();
  if (op->for_kind != ForKind::kSerial) {
    return Invalid(kPrimitive, absl::StrCat("loop ", name, " is ", ForKindName(op->for_kind),
                                            "; split it while it is serial"));
  }
  TESSERA_ASSIGN_OR_RETURN(int64_t extent, ConstExtent(kPrimitive, op));
  if (factors.size() < 2) return Invalid(kPrimitive, "needs at least two factors");
  std::vector<int64_t> values;
  int inferred = -1;
  int64_t product = 1;
  for (size_t i = 0; i < factors.size(); ++i) {
    const InstValue& f = factors[i];
    int64_t v;
    if (f.is_none()) {
      if (inferred != -1) return Invalid(kPrimitive, "at most one factor may be None");
      inferred = static_cast<int>(i);
      v = 1;
    } else if (f.is_int()) {
      v = f.as_int();
    } else if (f.is_rv() && f.rv_kind() == RVKind::kExpr) {
      absl::StatusOr<int64_t> value = Get(ExprRV{f.rv_id()});
      if (!value.ok()) return WithPrimitive(kPrimitive, value.status());
      v = *value;
    } else {
      return Invalid(kPrimitive, "factors must be integers, ExprRVs or None");
    }
    if (!f.is_none() && v <= 0) {
      return Invalid(kPrimitive, absl::StrCat("factor ", i, " is ", v, "; factors must be positive"));
    }
    values.push_back(v);
    product *= v;
  }
  if (inferred != -1) values[inferred] = (extent + product - 1) / product;
  int64_t total = 1;
  for (int64_t v : values) total *= v;
  if (total < extent) {
    return Invalid(kPrimitive, absl::StrCat("factors ", absl::StrJoin(values, "*"), "=", total,
                                            " do not cover extent ", extent, " of loop ", name));
  }

  std::vector<Var> vars;
  Expr fused;
  for (size_t i = 0; i < values.size(); ++i) {
    vars.push_back(op->loop_var.Copy(absl::StrCat(name, "_", i)));
    Expr term = (!preserve_unit_iters && values[i] == 1) ? Expr(0) : Expr(vars.back());
    fused = fused.defined() ? fused * Expr(values[i]) + term : term;
  }
  VarMap vmap;
  vmap[op->loop_var] = fused;
  Stmt body = Substitute(op->body, vmap);
  if (total > extent) body = primitive::AddPredicate(body, LT(fused, Expr(extent)));
  for (size_t i = values.size(); i-- > 0;) body = For(vars[i], Expr(values[i]), ForKind::kSerial, body);
  body = primitive::SimplifyBindings(body, LoopsOnPath(*path));
  func_ = ReplaceStmt(func_, path->back(), body);

  std::vector<LoopRV> result;
  for (const Var& v : vars) result.push_back(NewLoopRV(v));
  std::vector<InstValue> inputs = {InstValue::Of(loop)};
  inputs.insert(inputs.end(), factors.begin(), factors.end());
  Record(kSplit, std::move(inputs), {InstValue::Int(preserve_unit_iters ? 1 : 0)},
         apply_util::ToValues(result));
  return result;
}

absl::StatusOr<LoopRV> Schedule::Fuse(const std::vector<LoopRV>& loops, bool preserve_unit_iters) {
  constexpr const char* kPrimitive = "fuse";
  if (loops.empty()) return Invalid(kPrimitive, "needs at least one loop");
  std::vector<Stmt> stmts;
  std::vector<const ForNode*> ops;
  StmtPath outer_path;
  for (size_t i = 0; i < loops.size(); ++i) {
    absl::StatusOr<StmtPath> path = GetPath(loops[i]);
    if (!path.ok()) return WithPrimitive(kPrimitive, path.status());
    if (i == 0) outer_path = *path;
    stmts.push_back(path->back());
    ops.push_back(path->back().as<ForNode>());
    if (ops.back()->for_kind != ForKind::kSerial) {
      return Invalid(kPrimitive, absl::StrCat("loop ", ops.back()->loop_var.name(), " is ",
                                              ForKindName(ops.back()->for_kind)));
    }
    if (i > 0 && !ops[i - 1]->body.same_as(stmts[i])) {
      return Invalid(kPrimitive, absl::StrCat("loop ", ops[i]->loop_var.name(),
                                              " is not the only statement in the body of loop ",
                                              ops[i - 1]->loop_var.name()));
    }
  }
  std::vector<int64_t> extents;
  std::vector<std::string> names;
  int64_t product = 1;
  for (const ForNode* op : ops) {
    TESSERA_ASSIGN_OR_RETURN(int64_t e, ConstExtent(kPrimitive, op));
    extents.push_back(e);
    names.push_back(op->loop_var.name());
    product *= e;
  }
  Var fused_var = ops[0]->loop_var.Copy(absl::StrCat(absl::StrJoin(names, "_"), "_fused"));
  VarMap vmap;
  int64_t inner = 1;  // product of the extents inside loop i
  for (size_t i = loops.size(); i-- > 0;) {
    Expr value = fused_var;
    if (inner > 1) value = FloorDiv(value, Expr(inner));
    if (i > 0) value = FloorMod(value, Expr(extents[i]));
    if (!preserve_unit_iters && extents[i] == 1) value = Expr(0);
    vmap[ops[i]->loop_var] = value;
    inner *= extents[i];
  }
  Stmt body = For(fused_var, Expr(product), ForKind::kSerial, Substitute(ops.back()->body, vmap));
  body = primitive::SimplifyBindings(body, LoopsOnPath(outer_path));
  func_ = ReplaceStmt(func_, stmts[0], body);
  LoopRV result = NewLoopRV(fused_var);
  Record(kFuse, apply_util::ToValues(loops), {InstValue::Int(preserve_unit_iters ? 1 : 0)},
         {InstValue::Of(result)});
  return result;
}

absl::Status Schedule::Reorder(const std::vector<LoopRV>& ordered_loops) {
  constexpr const char* kPrimitive = "reorder";
  if (ordered_loops.empty()) return absl::OkStatus();
  std::vector<StmtPath> paths;
  std::set<const StmtNode*> seen;
  for (LoopRV rv : ordered_loops) {
    absl::StatusOr<StmtPath> path = GetPath(rv);
    if (!path.ok()) return WithPrimitive(kPrimitive, path.status());
    if (!seen.insert(path->back().get()).second) {
      return Invalid(kPrimitive, absl::StrCat("loop ", path->back().as<ForNode>()->loop_var.name(),
                                              " is given twice"));
    }
    paths.push_back(std::move(*path));
  }
  // The deepest loop's path must contain all others; the chain runs from the outermost given
  // loop down to the deepest one.
  size_t deepest = 0, outermost = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (paths[i].size() > paths[deepest].size()) deepest = i;
    if (paths[i].size() < paths[outermost].size()) outermost = i;
  }
  const StmtPath& bottom = paths[deepest];
  const size_t top_depth = paths[outermost].size() - 1;
  for (const StmtPath& p : paths) {
    const Stmt& loop = p.back();
    if (p.size() > bottom.size() || !bottom[p.size() - 1].same_as(loop)) {
      return Invalid(kPrimitive, absl::StrCat("loop ", loop.as<ForNode>()->loop_var.name(),
                                              " is not on the same loop nest as the others"));
    }
  }
  std::vector<Stmt> chain(bottom.begin() + static_cast<long>(top_depth), bottom.end());
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    const auto* op = chain[i].as<ForNode>();
    if (op == nullptr || !op->body.same_as(chain[i + 1])) {
      return Invalid(kPrimitive,
                     absl::StrCat("the loops between ",
                                  chain.front().as<ForNode>()->loop_var.name(), " and ",
                                  chain.back().as<ForNode>()->loop_var.name(),
                                  " are not a single-branch chain of loops"));
    }
  }
  for (const StmtPath& p : paths) {
    const auto* loop = p.back().as<ForNode>();
    std::string block = BlockMixingIterKinds(loop->body, loop->loop_var);
    if (!block.empty()) {
      return Invalid(kPrimitive, absl::StrCat("loop ", loop->loop_var.name(),
                                              " binds both spatial and reduction iteration "
                                              "variables of block ", block));
    }
  }
  std::string producer, consumer;
  if (BlocksDependOnEachOther(chain.back().as<ForNode>()->body, &producer, &consumer)) {
    return Invalid(kPrimitive, absl::StrCat("block ", consumer, " reads what block ", producer,
                                            " writes under these loops; reordering could change "
                                            "what it reads"));
  }
  // Positions in the chain that the given loops occupy, filled in the given order.
  std::vector<size_t> positions;
  for (const StmtPath& p : paths) positions.push_back(p.size() - 1 - top_depth);
  std::sort(positions.begin(), positions.end());
  std::vector<const ForNode*> order;
  for (const Stmt& s : chain) order.push_back(s.as<ForNode>());
  for (size_t i = 0; i < positions.size(); ++i) {
    order[positions[i]] = paths[i].back().as<ForNode>();
  }
  Stmt body = chain.back().as<ForNode>()->body;
  for (size_t i = order.size(); i-- > 0;) {
    const ForNode* op = order[i];
    body = For(op->loop_var, op->extent, op->for_kind, body, op->thread_tag, op->annotations);
  }
  func_ = ReplaceStmt(func_, chain.front(), body);
  Record(kReorder, apply_util::ToValues(ordered_loops), {}, {});
  return absl::OkStatus();
}

absl::StatusOr<LoopRV> Schedule::AddUnitLoop(BlockRV block) {
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive("add_unit_loop", path.status());
  if (path->size() == 1) return Invalid("add_unit_loop", "cannot add a loop above the root block");
  Var u("u");
  func_ = ReplaceStmt(func_, path->back(), For(u, Expr(1), ForKind::kSerial, path->back()));
  LoopRV result = NewLoopRV(u);
  Record(kAddUnitLoop, {InstValue::Of(block)}, {}, {InstValue::Of(result)});
  return result;
}

absl::StatusOr<LoopRV> Schedule::AddUnitLoop(LoopRV loop) {
  absl::StatusOr<StmtPath> path = GetPath(loop);
  if (!path.ok()) return WithPrimitive("add_unit_loop", path.status());
  Var u("u");
  func_ = ReplaceStmt(func_, path->back(), For(u, Expr(1), ForKind::kSerial, path->back()));
  LoopRV result = NewLoopRV(u);
  Record(kAddUnitLoop, {InstValue::Of(loop)}, {}, {InstValue::Of(result)});
  return result;
}

namespace {

using namespace apply_util;  // NOLINT: decoding helpers

Outputs ApplySplit(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  if (inputs.size() < 3 || attrs.size() != 1) {
    return absl::InvalidArgumentError("expected a loop, at least two factors and one attr");
  }
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, AsLoop(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t preserve, AsInt(attrs[0]));
  std::vector<InstValue> factors(inputs.begin() + 1, inputs.end());
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->Split(loop, factors, preserve != 0));
  return ToValues(loops);
}

Outputs ApplyFuse(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  if (attrs.size() != 1) return absl::InvalidArgumentError("expected one attr");
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, AsLoops(inputs));
  TESSERA_ASSIGN_OR_RETURN(int64_t preserve, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(LoopRV fused, sch->Fuse(loops, preserve != 0));
  return Values{InstValue::Of(fused)};
}

Outputs ApplyReorder(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  if (!attrs.empty()) return absl::InvalidArgumentError("expected no attrs");
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, AsLoops(inputs));
  TESSERA_RETURN_IF_ERROR(sch->Reorder(loops));
  return Values{};
}

Outputs ApplyAddUnitLoop(Schedule* sch, const Values& inputs, const Values& attrs,
                         const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 0));
  LoopRV result;
  if (IsLoop(inputs[0])) {
    TESSERA_ASSIGN_OR_RETURN(result, sch->AddUnitLoop(LoopRV{inputs[0].rv_id()}));
  } else {
    TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
    TESSERA_ASSIGN_OR_RETURN(result, sch->AddUnitLoop(block));
  }
  return Values{InstValue::Of(result)};
}

}  // namespace

const InstructionKind kSplit = {"Split", false, &ApplySplit};
const InstructionKind kFuse = {"Fuse", false, &ApplyFuse};
const InstructionKind kReorder = {"Reorder", false, &ApplyReorder};
const InstructionKind kAddUnitLoop = {"AddUnitLoop", false, &ApplyAddUnitLoop};

const std::vector<const InstructionKind*>& LoopTransformInstructionKinds() {
  static const std::vector<const InstructionKind*> kinds = {&kSplit, &kFuse, &kReorder,
                                                            &kAddUnitLoop};
  return kinds;
}

}  // namespace tessera
