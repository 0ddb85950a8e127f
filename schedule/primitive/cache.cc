// Caching and buffer primitives: CacheRead, CacheWrite (cache_read_write.cc), ReIndex
// (reindex.cc), SetScope (set_scope.cc), StorageAlign (storage_align.cc). This file holds what
// they share (cache_internal.h) and their instruction kinds.
//
// The first three add a copy stage: a loop nest `ax0, ax1, ...` around a block `v0, v1, ...`
// of spatial iteration variables that copies one buffer into another, placed at the top level
// of the scope block (the block enclosing the target), so that ComputeAt can later move it
// under a tile loop. The new buffer is allocated by the scope block and named after the
// original buffer (`A_shared`, `C_local`, `A_reindex`); the copy block has the same name.
// Placement is checked, never assumed: a copy that another block could interleave with
// (writing what is cached before the copy has run, or reading what is written back before
// the write-back) is an error. SetScope and StorageAlign replace an intermediate buffer by a
// variant with another scope / padded strides everywhere it appears.
#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "ir/arith/analyzer.h"
#include "ir/arith/int_set.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "schedule/instruction_kinds.h"
#include "schedule/primitive/apply_util.h"
#include "schedule/primitive/cache_internal.h"
#include "schedule/primitive/util.h"
#include "schedule/schedule.h"

namespace tessera {
namespace primitive {
namespace {

// TVM's storage scopes: a rank (global, shared, local, warp) optionally tagged
// ("shared.dyn", "global.texture"), or a tensor-core fragment scope.
bool IsValidScope(const std::string& scope) {
  static const std::set<std::string> kFragments = {
      "wmma.matrix_a",   "wmma.matrix_b",    "wmma.accumulator", "mma.matrix_a",
      "mma.matrix_b",    "mma.accumulator",  "m16n8k8.matrixA",  "m16n8k8.matrixB",
      "m16n8k8.matrixC", "wgmma.accumulator"};
  if (kFragments.count(scope)) return true;
  size_t dot = scope.find('.');
  std::string rank = scope.substr(0, dot);
  if (rank != "global" && rank != "shared" && rank != "local" && rank != "warp") return false;
  if (dot == std::string::npos) return true;
  std::string tag = scope.substr(dot + 1);
  if (tag.empty()) return false;
  return std::all_of(tag.begin(), tag.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  });
}

}  // namespace

absl::Status CheckScope(const char* primitive, const std::string& scope) {
  if (IsValidScope(scope)) return absl::OkStatus();
  return Invalid(primitive, absl::StrCat("invalid storage scope '", scope,
                                         "' (expected global, shared, local, warp, optionally "
                                         "tagged like shared.dyn, or a wmma/m16n8k8 fragment)"));
}

absl::StatusOr<ScopeContext> Locate(const Schedule& sch, BlockRV rv, const char* primitive) {
  ScopeContext ctx;
  absl::StatusOr<StmtPath> path = sch.GetPath(rv);
  if (!path.ok()) return WithPrimitive(primitive, path.status());
  ctx.path = std::move(*path);
  ctx.block = ctx.path.back().as<BlockRealizeNode>()->block;
  if (ctx.path.size() == 1) return Invalid(primitive, "cannot apply to the root block");
  ctx.scope_realize = EnclosingBlockRealize(ctx.path);
  ctx.scope = ctx.scope_realize.as<BlockRealizeNode>()->block;
  const Stmt& body = ctx.scope->body;
  if (const auto* seq = body.as<SeqStmtNode>()) {
    ctx.children = seq->seq;
  } else {
    ctx.children = {body};
  }
  for (size_t c = 0; c < ctx.children.size(); ++c) {
    std::vector<Stmt> realizes;
    if (ctx.children[c].kind() == StmtKind::kBlockRealize) {
      realizes = {ctx.children[c]};
    } else {
      realizes = ChildBlockRealizes(ctx.children[c]);
    }
    for (const Stmt& r : realizes) {
      ctx.siblings.push_back(r.as<BlockRealizeNode>()->block);
      ctx.sibling_child.push_back(static_cast<int>(c));
      if (ctx.siblings.back()->name == ctx.block->name) ctx.block_child = static_cast<int>(c);
    }
  }
  TESSERA_CHECK(ctx.block_child >= 0) << "block " << ctx.block->name << " not under its scope";
  return ctx;
}

PrimFunc RebuildScope(const PrimFunc& func, const ScopeContext& ctx, std::vector<Stmt> children,
                      const Buffer& alloc) {
  BlockNode node = *ctx.scope.get();
  node.body = SeqStmt(std::move(children));
  node.alloc_buffers.push_back(alloc);
  const auto* realize = ctx.scope_realize.as<BlockRealizeNode>();
  Stmt scope = BlockRealize(realize->iter_values, realize->predicate, MakeBlock(node));
  return ReplaceStmt(func, ctx.scope_realize, scope);
}

Stmt MakeCopyStage(const std::string& name, const Block& scope, const std::vector<Range>& doms,
                   const std::vector<Range>& loop_region, const Buffer& src,
                   const IndexFn& src_indices, const Buffer& dst, const IndexFn& dst_indices) {
  arith::Analyzer analyzer;
  for (const IterVar& iv : scope->iter_vars) analyzer.Bind(iv.var, iv.dom);
  std::vector<Var> loops, vars;
  std::vector<Expr> bindings, extents;
  Expr predicate = True();
  BlockNode node;
  node.name = name;
  for (size_t d = 0; d < doms.size(); ++d) {
    loops.push_back(Var(absl::StrCat("ax", d)));
    vars.push_back(Var(absl::StrCat("v", d)));
    node.iter_vars.push_back(IterVar{vars.back(), doms[d], IterKind::kSpatial});
    Range r = loop_region[d];
    const int64_t* min = AsConstInt(r.min);
    const int64_t* extent = AsConstInt(r.extent);
    const int64_t* dom_min = AsConstInt(doms[d].min);
    const int64_t* dom_extent = AsConstInt(doms[d].extent);
    if (extent == nullptr) {
      r = doms[d];
    } else if (min != nullptr && dom_min != nullptr && dom_extent != nullptr) {
      const int64_t lo = std::max(*min, *dom_min);
      const int64_t hi = std::min(*min + *extent, *dom_min + *dom_extent);
      r = Range{Expr(lo), Expr(std::max<int64_t>(hi - lo, 0))};
    }
    extents.push_back(r.extent);
    analyzer.Bind(loops.back(), Range{Expr(0), r.extent});
    bindings.push_back(analyzer.Simplify(r.min + loops.back()));
    for (const Expr& inside :
         {GE(bindings.back(), doms[d].min), LT(bindings.back(), doms[d].min + doms[d].extent)}) {
      if (analyzer.CanProve(inside)) continue;
      Expr c = analyzer.Simplify(inside);
      predicate = IsConstInt(predicate, 1) ? c : And(predicate, c);
    }
  }
  std::vector<Expr> from = src_indices(vars), to = dst_indices(vars);
  auto points = [](const std::vector<Expr>& indices) {
    std::vector<Range> region;
    for (const Expr& e : indices) region.push_back(Range{e, Expr(1)});
    return region;
  };
  node.reads = {BufferRegion{src, points(from)}};
  node.writes = {BufferRegion{dst, points(to)}};
  node.body = BufferStore(dst, src.Load(from), to);
  Stmt stmt = BlockRealize(std::move(bindings), predicate, MakeBlock(node));
  for (size_t d = doms.size(); d-- > 0;) {
    stmt = For(loops[d], extents[d], ForKind::kSerial, stmt);
  }
  return stmt;
}

absl::StatusOr<Buffer> IntermediateWriteBuffer(const PrimFunc& func, const Block& block,
                                               int buffer_index, const char* primitive) {
  if (buffer_index < 0 || buffer_index >= static_cast<int>(block->writes.size())) {
    return Invalid(primitive,
                   absl::StrCat("buffer_index ", buffer_index, " is out of range for block ",
                                block->name, ", which writes ", block->writes.size(), " buffers"));
  }
  const Buffer& buffer = block->writes[buffer_index].buffer;
  for (const Buffer& p : func.params()) {
    if (p.same_as(buffer)) {
      return Invalid(primitive,
                     absl::StrCat("buffer ", buffer.name(), " written by block ", block->name,
                                  " is a function parameter, not an "
                                  "intermediate allocated by a block"));
    }
  }
  return buffer;
}

PrimFunc ReplaceBuffer(const PrimFunc& func, const Buffer& from, const Buffer& to) {
  BufferReplacer replacer(from, to);
  return func.WithBody(replacer.VisitStmt(func.body()));
}

}  // namespace primitive

// ---- Instruction kinds -----------------------------------------------------------------------

namespace {

using namespace apply_util;  // NOLINT: decoding helpers

Outputs ApplyCache(Schedule* sch, const Values& inputs, const Values& attrs, bool write) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 2, attrs, 2));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(std::vector<BlockRV> consumers, AsBlocks(inputs[1]));
  TESSERA_ASSIGN_OR_RETURN(int64_t index, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(std::string scope, AsString(attrs[1]));
  const int i = static_cast<int>(index);
  TESSERA_ASSIGN_OR_RETURN(BlockRV result, write ? sch->CacheWrite(block, i, scope, consumers)
                                                 : sch->CacheRead(block, i, scope, consumers));
  return Values{InstValue::Of(result)};
}

Outputs ApplyCacheRead(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  return ApplyCache(sch, inputs, attrs, /*write=*/false);
}

Outputs ApplyCacheWrite(Schedule* sch, const Values& inputs, const Values& attrs,
                        const InstValue&) {
  return ApplyCache(sch, inputs, attrs, /*write=*/true);
}

Outputs ApplyReIndex(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 2));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t index, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t type, AsInt(attrs[1]));
  TESSERA_ASSIGN_OR_RETURN(BlockRV result,
                           sch->ReIndex(block, static_cast<int>(index), static_cast<int>(type)));
  return Values{InstValue::Of(result)};
}

Outputs ApplySetScope(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 2));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t index, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(std::string scope, AsString(attrs[1]));
  TESSERA_RETURN_IF_ERROR(sch->SetScope(block, static_cast<int>(index), scope));
  return Values{};
}

Outputs ApplyStorageAlign(Schedule* sch, const Values& inputs, const Values& attrs,
                          const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 4));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  std::vector<int> v;
  for (const InstValue& a : attrs) {
    TESSERA_ASSIGN_OR_RETURN(int64_t x, AsInt(a));
    v.push_back(static_cast<int>(x));
  }
  TESSERA_RETURN_IF_ERROR(sch->StorageAlign(block, v[0], v[1], v[2], v[3]));
  return Values{};
}

}  // namespace

const InstructionKind kCacheRead = {"CacheRead", false, &ApplyCacheRead};
const InstructionKind kCacheWrite = {"CacheWrite", false, &ApplyCacheWrite};
const InstructionKind kReIndex = {"ReIndex", false, &ApplyReIndex};
const InstructionKind kSetScope = {"SetScope", false, &ApplySetScope};
const InstructionKind kStorageAlign = {"StorageAlign", false, &ApplyStorageAlign};

const std::vector<const InstructionKind*>& CacheInstructionKinds() {
  static const std::vector<const InstructionKind*> kinds = {&kCacheRead, &kCacheWrite, &kReIndex,
                                                            &kSetScope, &kStorageAlign};
  return kinds;
}

}  // namespace tessera
