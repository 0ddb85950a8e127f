#include "schedule/schedule.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/functor.h"
#include "schedule/instruction_kinds.h"

namespace tessera {

Schedule Schedule::Create(const PrimFunc& func, int64_t seed) { return Schedule(func, seed); }

Schedule Schedule::Copy() {
  Schedule copy = *this;
  copy.rng_ = rng_.Fork();
  return copy;
}

// ---- Resolving ---------------------------------------------------------------------------

absl::StatusOr<std::string> Schedule::BlockName(BlockRV rv) const {
  auto it = blocks_.find(rv.id);
  if (it == blocks_.end()) {
    return absl::NotFoundError(absl::StrCat("b", rv.id, " is not a block of this schedule"));
  }
  return it->second;
}

absl::StatusOr<StmtPath> Schedule::GetPath(BlockRV rv) const {
  TESSERA_ASSIGN_OR_RETURN(std::string name, BlockName(rv));
  absl::StatusOr<StmtPath> path = FindBlockPath(func_, name);
  if (!path.ok()) {
    return absl::NotFoundError(absl::StrCat("block ", name, " (b", rv.id, ") no longer exists"));
  }
  return path;
}

absl::StatusOr<Block> Schedule::Get(BlockRV rv) const {
  TESSERA_ASSIGN_OR_RETURN(StmtPath path, GetPath(rv));
  return path.back().as<BlockRealizeNode>()->block;
}

absl::StatusOr<Var> Schedule::LoopVar(LoopRV rv) const {
  auto it = loops_.find(rv.id);
  if (it == loops_.end()) {
    return absl::NotFoundError(absl::StrCat("l", rv.id, " is not a loop of this schedule"));
  }
  if (it->second.type != LoopEntry::Type::kLoop) {
    return absl::InvalidArgumentError(absl::StrCat(
        "l", rv.id, " is the '",
        it->second.type == LoopEntry::Type::kRootMarker ? "root" : "inline",
        "' marker of a compute location, not a loop"));
  }
  return it->second.loop_var;
}

absl::StatusOr<StmtPath> Schedule::GetPath(LoopRV rv) const {
  TESSERA_ASSIGN_OR_RETURN(Var var, LoopVar(rv));
  absl::StatusOr<StmtPath> path = FindLoopPath(func_, var);
  if (!path.ok()) {
    return absl::NotFoundError(absl::StrCat("loop ", var.name(), " (l", rv.id,
                                            ") no longer exists"));
  }
  return path;
}

absl::StatusOr<const ForNode*> Schedule::Get(LoopRV rv) const {
  TESSERA_ASSIGN_OR_RETURN(StmtPath path, GetPath(rv));
  return path.back().as<ForNode>();
}

absl::StatusOr<int64_t> Schedule::Get(ExprRV rv) const {
  auto it = exprs_.find(rv.id);
  if (it == exprs_.end()) {
    return absl::NotFoundError(absl::StrCat("v", rv.id, " is not an expression of this schedule"));
  }
  return it->second;
}

std::string Schedule::Describe(BlockRV rv) const {
  auto it = blocks_.find(rv.id);
  return it == blocks_.end() ? absl::StrCat("b", rv.id)
                             : absl::StrCat("b", rv.id, " (block ", it->second, ")");
}

std::string Schedule::Describe(LoopRV rv) const {
  auto it = loops_.find(rv.id);
  if (it == loops_.end()) return absl::StrCat("l", rv.id);
  if (it->second.type != LoopEntry::Type::kLoop) return absl::StrCat("l", rv.id, " (marker)");
  return absl::StrCat("l", rv.id, " (loop ", it->second.loop_var.name(), ")");
}

bool Schedule::IsRootMarker(LoopRV rv) const {
  auto it = loops_.find(rv.id);
  return it != loops_.end() && it->second.type == LoopEntry::Type::kRootMarker;
}

bool Schedule::IsInlineMarker(LoopRV rv) const {
  auto it = loops_.find(rv.id);
  return it != loops_.end() && it->second.type == LoopEntry::Type::kInlineMarker;
}

// ---- Symbol table and recording ------------------------------------------------------

BlockRV Schedule::NewBlockRV(const std::string& block_name) {
  BlockRV rv{next_rv_id_++};
  blocks_[rv.id] = block_name;
  return rv;
}

LoopRV Schedule::NewLoopRV(const Var& loop_var) {
  LoopRV rv{next_rv_id_++};
  loops_[rv.id] = LoopEntry{LoopEntry::Type::kLoop, loop_var};
  return rv;
}

ExprRV Schedule::NewExprRV(int64_t value) {
  ExprRV rv{next_rv_id_++};
  exprs_[rv.id] = value;
  return rv;
}

absl::StatusOr<LoopRV> NewMarkerLoopRV(Schedule* sch, bool inline_marker) {
  LoopRV rv{sch->next_rv_id_++};
  Schedule::LoopEntry entry;
  entry.type = inline_marker ? Schedule::LoopEntry::Type::kInlineMarker
                             : Schedule::LoopEntry::Type::kRootMarker;
  sch->loops_[rv.id] = entry;
  return rv;
}

void Schedule::Record(const InstructionKind& kind, std::vector<InstValue> inputs,
                      std::vector<InstValue> attrs, std::vector<InstValue> outputs,
                      InstValue decision) {
  trace_.Append(Instruction{&kind, std::move(inputs), std::move(attrs), std::move(outputs)},
                std::move(decision));
}

// ---- Lookup ----------------------------------------------------------------------------

absl::StatusOr<BlockRV> Schedule::GetBlock(const std::string& name, const std::string& func_name) {
  if (func_name != "main" && func_name != func_.name()) {
    return absl::NotFoundError(absl::StrCat("get_block: no function '", func_name,
                                            "' (the schedule's function is main)"));
  }
  absl::StatusOr<StmtPath> path = FindBlockPath(func_, name);
  if (!path.ok()) return absl::NotFoundError(absl::StrCat("get_block: ", path.status().message()));
  BlockRV rv = NewBlockRV(name);
  Record(kGetBlock, {}, {InstValue::String(name), InstValue::String("main")}, {InstValue::Of(rv)});
  return rv;
}

absl::StatusOr<std::vector<LoopRV>> Schedule::GetLoops(BlockRV block) {
  TESSERA_ASSIGN_OR_RETURN(StmtPath path, GetPath(block));
  std::vector<LoopRV> loops;
  std::vector<InstValue> outputs;
  for (const Stmt& loop : LoopsOnPath(path)) {
    loops.push_back(NewLoopRV(loop.as<ForNode>()->loop_var));
    outputs.push_back(InstValue::Of(loops.back()));
  }
  Record(kGetLoops, {InstValue::Of(block)}, {}, std::move(outputs));
  return loops;
}

namespace {

std::vector<std::string> ChildBlockNames(const Stmt& stmt) {
  std::vector<std::string> names;
  for (const Stmt& realize : ChildBlockRealizes(stmt)) {
    names.push_back(realize.as<BlockRealizeNode>()->block->name);
  }
  return names;
}

bool RegionsShareBuffer(const std::vector<BufferRegion>& a, const std::vector<BufferRegion>& b) {
  for (const BufferRegion& x : a) {
    for (const BufferRegion& y : b) {
      if (x.buffer.same_as(y.buffer)) return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<std::vector<BlockRV>> Schedule::GetChildBlocks(BlockRV block) {
  TESSERA_ASSIGN_OR_RETURN(StmtPath path, GetPath(block));
  std::vector<BlockRV> out;
  std::vector<InstValue> outputs;
  for (const std::string& name : ChildBlockNames(path.back())) {
    out.push_back(NewBlockRV(name));
    outputs.push_back(InstValue::Of(out.back()));
  }
  Record(kGetChildBlocks, {InstValue::Of(block)}, {}, std::move(outputs));
  return out;
}

absl::StatusOr<std::vector<BlockRV>> Schedule::GetChildBlocks(LoopRV loop) {
  TESSERA_ASSIGN_OR_RETURN(StmtPath path, GetPath(loop));
  std::vector<BlockRV> out;
  std::vector<InstValue> outputs;
  for (const std::string& name : ChildBlockNames(path.back())) {
    out.push_back(NewBlockRV(name));
    outputs.push_back(InstValue::Of(out.back()));
  }
  Record(kGetChildBlocks, {InstValue::Of(loop)}, {}, std::move(outputs));
  return out;
}

absl::StatusOr<std::vector<BlockRV>> Schedule::GetProducers(BlockRV block) {
  TESSERA_ASSIGN_OR_RETURN(StmtPath path, GetPath(block));
  const Block target = path.back().as<BlockRealizeNode>()->block;
  Stmt scope = EnclosingBlockRealize(path);
  std::vector<BlockRV> out;
  std::vector<InstValue> outputs;
  // Sibling blocks of the same scope, before the target in program order.
  for (const Stmt& realize : ChildBlockRealizes(scope)) {
    const Block& other = realize.as<BlockRealizeNode>()->block;
    if (other->name == target->name) break;
    if (RegionsShareBuffer(other->writes, target->reads)) {
      out.push_back(NewBlockRV(other->name));
      outputs.push_back(InstValue::Of(out.back()));
    }
  }
  Record(kGetProducers, {InstValue::Of(block)}, {}, std::move(outputs));
  return out;
}

absl::StatusOr<std::vector<BlockRV>> Schedule::GetConsumers(BlockRV block) {
  TESSERA_ASSIGN_OR_RETURN(StmtPath path, GetPath(block));
  const Block target = path.back().as<BlockRealizeNode>()->block;
  Stmt scope = EnclosingBlockRealize(path);
  std::vector<BlockRV> out;
  std::vector<InstValue> outputs;
  bool after = false;
  for (const Stmt& realize : ChildBlockRealizes(scope)) {
    const Block& other = realize.as<BlockRealizeNode>()->block;
    if (other->name == target->name) {
      after = true;
      continue;
    }
    if (after && RegionsShareBuffer(target->writes, other->reads)) {
      out.push_back(NewBlockRV(other->name));
      outputs.push_back(InstValue::Of(out.back()));
    }
  }
  Record(kGetConsumers, {InstValue::Of(block)}, {}, std::move(outputs));
  return out;
}

// ---- Loop kinds and annotations ----------------------------------------------------------

absl::Status Schedule::SetLoopKind(LoopRV loop, ForKind kind, const std::string& thread_tag,
                                   const InstructionKind& inst_kind, const char* primitive) {
  absl::StatusOr<StmtPath> path = GetPath(loop);
  if (!path.ok()) return absl::Status(path.status().code(), absl::StrCat(primitive, ": ", path.status().message()));
  const auto* op = path->back().as<ForNode>();
  if (op->for_kind != ForKind::kSerial) {
    return absl::InvalidArgumentError(absl::StrCat(primitive, ": loop ", op->loop_var.name(),
                                                   " is already ", ForKindName(op->for_kind)));
  }
  if (kind == ForKind::kThreadBinding) {
    static const std::set<std::string> kTags = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                                "threadIdx.x", "threadIdx.y", "threadIdx.z",
                                                "vthread.x",   "vthread.y",   "vthread.z"};
    if (!kTags.count(thread_tag)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bind: unknown thread axis '", thread_tag,
                       "' (expected blockIdx.x/y/z, threadIdx.x/y/z or vthread.x/y/z)"));
    }
  }
  if (kind == ForKind::kVectorized || kind == ForKind::kParallel ||
      kind == ForKind::kThreadBinding) {
    // Parallel execution must not reorder a reduction: every block under the loop must use
    // the loop only in spatial iteration variables.
    std::string offending;
    PostOrderVisitStmts(op->body, [&](const Stmt& s) {
      const auto* realize = s.as<BlockRealizeNode>();
      if (realize == nullptr) return;
      const Block& block = realize->block;
      for (size_t i = 0; i < block->iter_vars.size(); ++i) {
        if (block->iter_vars[i].kind != IterKind::kReduction) continue;
        if (UsesVar(realize->iter_values[i],
                    [&](const VarNode* v) { return v == op->loop_var.get(); })) {
          offending = block->name;
        }
      }
    });
    if (!offending.empty() && kind != ForKind::kThreadBinding) {
      return absl::InvalidArgumentError(absl::StrCat(
          primitive, ": loop ", op->loop_var.name(), " carries the reduction of block ", offending,
          "; running its iterations in parallel would race"));
    }
  }
  if (kind == ForKind::kVectorized && !AsConstInt(op->extent)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "vectorize: loop ", op->loop_var.name(), " has a non-constant extent"));
  }
  Stmt replaced = For(op->loop_var, op->extent, kind, op->body, thread_tag, op->annotations);
  func_ = ReplaceStmt(func_, path->back(), replaced);
  std::vector<InstValue> attrs;
  if (kind == ForKind::kThreadBinding) attrs.push_back(InstValue::String(thread_tag));
  Record(inst_kind, {InstValue::Of(loop)}, std::move(attrs), {});
  return absl::OkStatus();
}

absl::Status Schedule::Parallel(LoopRV loop) {
  return SetLoopKind(loop, ForKind::kParallel, "", kParallel, "parallel");
}
absl::Status Schedule::Vectorize(LoopRV loop) {
  return SetLoopKind(loop, ForKind::kVectorized, "", kVectorize, "vectorize");
}
absl::Status Schedule::Unroll(LoopRV loop) {
  return SetLoopKind(loop, ForKind::kUnrolled, "", kUnroll, "unroll");
}
absl::Status Schedule::Bind(LoopRV loop, const std::string& thread_axis) {
  return SetLoopKind(loop, ForKind::kThreadBinding, thread_axis, kBind, "bind");
}

absl::Status Schedule::AnnotateImpl(const InstValue& target, const std::string& key,
                                    const InstValue& value, bool remove) {
  const char* primitive = remove ? "unannotate" : "annotate";
  AnnotationValue ann;
  if (!remove) {
    switch (value.type()) {
      case InstValue::Type::kInt: ann = value.as_int(); break;
      case InstValue::Type::kFloat: ann = value.as_float(); break;
      case InstValue::Type::kString: ann = value.as_string(); break;
      case InstValue::Type::kRV: {
        if (value.rv_kind() != RVKind::kExpr) {
          return absl::InvalidArgumentError("annotate: only expression RVs can be values");
        }
        TESSERA_ASSIGN_OR_RETURN(int64_t v, Get(ExprRV{value.rv_id()}));
        ann = v;
        break;
      }
      default:
        return absl::InvalidArgumentError("annotate: value must be an int, float, string or ExprRV");
    }
  }
  Stmt old_stmt, new_stmt;
  if (target.rv_kind() == RVKind::kBlock) {
    absl::StatusOr<StmtPath> path = GetPath(BlockRV{target.rv_id()});
    if (!path.ok()) return absl::Status(path.status().code(), absl::StrCat(primitive, ": ", path.status().message()));
    const Block& block = path->back().as<BlockRealizeNode>()->block;
    auto node = block.CopyNode();
    if (remove) {
      if (!node->annotations.erase(key)) {
        return absl::NotFoundError(absl::StrCat("unannotate: block ", block->name,
                                                " has no annotation ", key));
      }
    } else {
      node->annotations[key] = ann;
    }
    old_stmt = block;
    new_stmt = Block(std::move(node));
  } else {
    absl::StatusOr<StmtPath> path = GetPath(LoopRV{target.rv_id()});
    if (!path.ok()) return absl::Status(path.status().code(), absl::StrCat(primitive, ": ", path.status().message()));
    const auto* op = path->back().as<ForNode>();
    Annotations annotations = op->annotations;
    if (remove) {
      if (!annotations.erase(key)) {
        return absl::NotFoundError(absl::StrCat("unannotate: loop ", op->loop_var.name(),
                                                " has no annotation ", key));
      }
    } else {
      annotations[key] = ann;
    }
    old_stmt = path->back();
    new_stmt = For(op->loop_var, op->extent, op->for_kind, op->body, op->thread_tag, annotations);
  }
  func_ = ReplaceStmt(func_, old_stmt, new_stmt);
  if (remove) {
    Record(kUnannotate, {target}, {InstValue::String(key)}, {});
  } else {
    Record(kAnnotate, {target, value}, {InstValue::String(key)}, {});
  }
  return absl::OkStatus();
}

absl::Status Schedule::Annotate(BlockRV block, const std::string& key, const InstValue& value) {
  return AnnotateImpl(InstValue::Of(block), key, value, /*remove=*/false);
}
absl::Status Schedule::Annotate(LoopRV loop, const std::string& key, const InstValue& value) {
  return AnnotateImpl(InstValue::Of(loop), key, value, /*remove=*/false);
}
absl::Status Schedule::Unannotate(BlockRV block, const std::string& key) {
  return AnnotateImpl(InstValue::Of(block), key, InstValue(), /*remove=*/true);
}
absl::Status Schedule::Unannotate(LoopRV loop, const std::string& key) {
  return AnnotateImpl(InstValue::Of(loop), key, InstValue(), /*remove=*/true);
}

void Schedule::EnterPostproc() { Record(kEnterPostproc, {}, {}, {}); }

}  // namespace tessera
