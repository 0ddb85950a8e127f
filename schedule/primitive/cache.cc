// Caching and buffer primitives: CacheRead, CacheWrite, ReIndex, SetScope, StorageAlign.
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
#include "schedule/primitive/util.h"
#include "schedule/schedule.h"

namespace tessera {
namespace {

using primitive::Accesses;
using primitive::Invalid;
using primitive::WithPrimitive;

// TVM's storage scopes: a rank (global, shared, local, warp) optionally tagged
// ("shared.dyn", "global.texture"), or a tensor-core fragment scope.
bool IsValidScope(const std::string& scope) {
  static const std::set<std::string> kFragments = {"wmma.matrix_a",    "wmma.matrix_b",
                                                   "wmma.accumulator", "m16n8k8.matrixA",
                                                   "m16n8k8.matrixB",  "m16n8k8.matrixC"};
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

absl::Status CheckScope(const char* primitive, const std::string& scope) {
  if (IsValidScope(scope)) return absl::OkStatus();
  return Invalid(primitive, absl::StrCat("invalid storage scope '", scope,
                                         "' (expected global, shared, local, warp, optionally "
                                         "tagged like shared.dyn, or a wmma/m16n8k8 fragment)"));
}

// "wmma.matrix_a" -> "wmma_matrix_a", for names.
std::string ScopeSuffix(std::string scope) {
  std::replace(scope.begin(), scope.end(), '.', '_');
  return scope;
}

// Replaces one buffer by another wherever it is referenced.
class BufferReplacer : public IRMutator {
 public:
  BufferReplacer(Buffer from, Buffer to) : from_(std::move(from)), to_(std::move(to)) {}
  Buffer VisitBuffer(const Buffer& b) override { return b.same_as(from_) ? to_ : b; }

 private:
  Buffer from_;
  Buffer to_;
};

// Replaces a buffer only inside the blocks named in `blocks` (and the blocks they nest).
class SelectiveBufferReplacer : public IRMutator {
 public:
  SelectiveBufferReplacer(Buffer from, Buffer to, std::set<std::string> blocks)
      : replacer_(std::move(from), std::move(to)), blocks_(std::move(blocks)) {}

 protected:
  Expr VisitExpr(const Expr& e) override { return e; }
  Stmt VisitStmt_(const BlockRealizeNode* op, const Stmt& self) override {
    if (blocks_.count(op->block->name)) return replacer_.VisitStmt(self);
    return IRMutator::VisitStmt_(op, self);
  }

 private:
  BufferReplacer replacer_;
  std::set<std::string> blocks_;
};

// Where a block sits: its path, the scope block enclosing it and the scope's top-level
// statements, where copy stages are inserted.
struct ScopeContext {
  StmtPath path;
  Block block;
  Stmt scope_realize;
  Block scope;
  std::vector<Stmt> children;      // top-level statements of the scope body
  std::vector<Block> siblings;     // blocks directly under the scope, in program order
  std::vector<int> sibling_child;  // the top-level statement holding each sibling
  int block_child = -1;            // the top-level statement holding `block`

  // Position of `name` among the siblings, -1 if it is not one.
  int SiblingIndex(const std::string& name) const {
    for (size_t i = 0; i < siblings.size(); ++i) {
      if (siblings[i]->name == name) return static_cast<int>(i);
    }
    return -1;
  }
};

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

// Rebuilds the scope block with `children` as body and `alloc` appended to its allocations.
PrimFunc RebuildScope(const PrimFunc& func, const ScopeContext& ctx, std::vector<Stmt> children,
                      const Buffer& alloc) {
  BlockNode node = *ctx.scope.get();
  node.body = SeqStmt(std::move(children));
  node.alloc_buffers.push_back(alloc);
  const auto* realize = ctx.scope_realize.as<BlockRealizeNode>();
  Stmt scope = BlockRealize(realize->iter_values, realize->predicate, MakeBlock(node));
  return ReplaceStmt(func, ctx.scope_realize, scope);
}

// A copy stage placed in `scope`: loops ax_d around block `name` whose spatial iteration
// variables v_d (domains `doms`) are bound to loop_region[d].min + ax_d, storing
// src[src_indices(v)] into dst[dst_indices(v)]. The copy never leaves the domains (which are
// the buffer's extents for a cache): a region over-covering them (a declared region of a
// guarded access, e.g. padding) is intersected with them where its ends are constant and
// guarded by a predicate where they are not.
using IndexFn = std::function<std::vector<Expr>(const std::vector<Var>&)>;
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

std::vector<Expr> AsExprs(const std::vector<Var>& vars) {
  return std::vector<Expr>(vars.begin(), vars.end());
}

std::vector<Range> FullRegion(const Buffer& buffer) {
  std::vector<Range> region;
  for (const Expr& extent : buffer.shape()) region.push_back(Range{Expr(0), extent});
  return region;
}

// The region of `buffer` that `block` writes over its whole iteration domain.
std::vector<Range> WrittenRegion(const Block& block, const Buffer& buffer) {
  arith::Analyzer analyzer;
  arith::VarIntSetMap dom;
  for (const IterVar& iv : block->iter_vars) dom[iv.var] = arith::IntSet::FromRange(iv.dom);
  std::vector<Range> region = FullRegion(buffer);
  for (const BufferRegion& w : block->writes) {
    if (!w.buffer.same_as(buffer)) continue;
    for (size_t d = 0; d < w.region.size(); ++d) {
      const Range& r = w.region[d];
      arith::IntSet set =
          arith::Union(arith::EvalSet(r.min, dom, &analyzer),
                       arith::EvalSet(r.min + r.extent - Expr(1), dom, &analyzer), &analyzer);
      if (set.IsBounded()) region[d] = set.ToRange(&analyzer);
    }
    break;
  }
  return region;
}

// The blocks among `rvs`, by name, checked to be siblings of the target in its scope.
absl::StatusOr<std::set<std::string>> ConsumerNames(const Schedule& sch, const ScopeContext& ctx,
                                                    const std::vector<BlockRV>& rvs,
                                                    const char* primitive) {
  std::set<std::string> names;
  for (BlockRV rv : rvs) {
    absl::StatusOr<std::string> name = sch.BlockName(rv);
    if (!name.ok()) return WithPrimitive(primitive, name.status());
    if (ctx.SiblingIndex(*name) < 0) {
      return Invalid(primitive,
                     absl::StrCat("consumer block ", *name, " is not in the scope of block ",
                                  ctx.block->name, " (", ctx.scope->name, ")"));
    }
    names.insert(*name);
  }
  return names;
}

}  // namespace

// ---- CacheRead / CacheWrite ------------------------------------------------------------------

extern const InstructionKind kCacheRead;
extern const InstructionKind kCacheWrite;
extern const InstructionKind kReIndex;
extern const InstructionKind kSetScope;
extern const InstructionKind kStorageAlign;

absl::StatusOr<BlockRV> Schedule::CacheRead(BlockRV block, int read_buffer_index,
                                            const std::string& scope,
                                            const std::vector<BlockRV>& consumer_blocks) {
  constexpr const char* kPrimitive = "cache_read";
  TESSERA_ASSIGN_OR_RETURN(ScopeContext ctx, Locate(*this, block, kPrimitive));
  const Block& target = ctx.block;
  if (read_buffer_index < 0 || read_buffer_index >= static_cast<int>(target->reads.size())) {
    return Invalid(kPrimitive, absl::StrCat("read_buffer_index ", read_buffer_index,
                                            " is out of range for block ", target->name,
                                            ", which reads ", target->reads.size(), " buffers"));
  }
  TESSERA_RETURN_IF_ERROR(CheckScope(kPrimitive, scope));
  const Buffer buffer = target->reads[read_buffer_index].buffer;
  TESSERA_ASSIGN_OR_RETURN(std::set<std::string> consumers,
                           ConsumerNames(*this, ctx, consumer_blocks, kPrimitive));
  if (consumer_blocks.empty()) {
    for (const Block& b : ctx.siblings) {
      if (Accesses(b->reads, buffer)) consumers.insert(b->name);
    }
  }
  consumers.insert(target->name);
  // The copy goes right before the first consumer; no block may write the buffer between
  // it and the last consumer.
  int first = -1, last = -1;
  for (size_t i = 0; i < ctx.siblings.size(); ++i) {
    const Block& b = ctx.siblings[i];
    if (!consumers.count(b->name)) continue;
    if (Accesses(b->writes, buffer)) {
      return Invalid(kPrimitive, absl::StrCat("block ", b->name, " reads and writes buffer ",
                                              buffer.name(), "; it cannot read a cache of it"));
    }
    if (!Accesses(b->reads, buffer)) {
      return Invalid(kPrimitive, absl::StrCat("consumer block ", b->name, " does not read buffer ",
                                              buffer.name()));
    }
    if (first < 0) first = static_cast<int>(i);
    last = static_cast<int>(i);
  }
  const int pos = ctx.sibling_child[first];
  for (size_t i = 0; i < ctx.siblings.size(); ++i) {
    const Block& b = ctx.siblings[i];
    if (consumers.count(b->name) || !Accesses(b->writes, buffer)) continue;
    if (ctx.sibling_child[i] >= pos && static_cast<int>(i) < last) {
      return Invalid(kPrimitive, absl::StrCat("block ", b->name, " writes buffer ", buffer.name(),
                                              " between the cache copy (placed before block ",
                                              ctx.siblings[first]->name, ") and a consumer"));
    }
  }

  const std::string name = UniqueName(func_, absl::StrCat(buffer.name(), "_", ScopeSuffix(scope)),
                                      NameScope::kBlocksAndBuffers);
  Buffer cache = Buffer::Make(name, buffer.dtype(), buffer.shape(), scope);
  IndexFn same = [](const std::vector<Var>& v) { return AsExprs(v); };
  // The whole buffer, or in a nested scope the region the scope block declares it reads.
  std::vector<Range> region = FullRegion(buffer);
  for (const BufferRegion& r : ctx.scope->reads) {
    if (r.buffer.same_as(buffer)) region = r.region;
  }
  Stmt copy = MakeCopyStage(name, ctx.scope, FullRegion(buffer), region, buffer, same, cache, same);
  SelectiveBufferReplacer redirect(buffer, cache, consumers);
  std::vector<Stmt> children;
  for (size_t c = 0; c < ctx.children.size(); ++c) {
    if (static_cast<int>(c) == pos) children.push_back(copy);
    children.push_back(redirect.VisitStmt(ctx.children[c]));
  }
  func_ = RebuildScope(func_, ctx, std::move(children), cache);
  BlockRV result = NewBlockRV(name);
  Record(kCacheRead,
         {InstValue::Of(block), InstValue::Array(apply_util::ToValues(consumer_blocks))},
         {InstValue::Int(read_buffer_index), InstValue::String(scope)}, {InstValue::Of(result)});
  return result;
}

absl::StatusOr<BlockRV> Schedule::CacheWrite(BlockRV block, int write_buffer_index,
                                             const std::string& scope,
                                             const std::vector<BlockRV>& consumer_blocks) {
  constexpr const char* kPrimitive = "cache_write";
  TESSERA_ASSIGN_OR_RETURN(ScopeContext ctx, Locate(*this, block, kPrimitive));
  const Block& target = ctx.block;
  if (write_buffer_index < 0 || write_buffer_index >= static_cast<int>(target->writes.size())) {
    return Invalid(kPrimitive, absl::StrCat("write_buffer_index ", write_buffer_index,
                                            " is out of range for block ", target->name,
                                            ", which writes ", target->writes.size(), " buffers"));
  }
  TESSERA_RETURN_IF_ERROR(CheckScope(kPrimitive, scope));
  const Buffer buffer = target->writes[write_buffer_index].buffer;
  if (Accesses(target->reads, buffer) && !target->init.defined()) {
    return Invalid(kPrimitive, absl::StrCat("block ", target->name, " reads buffer ", buffer.name(),
                                            " before writing it and has no init; the cache would "
                                            "not hold the values it reads"));
  }
  TESSERA_ASSIGN_OR_RETURN(std::set<std::string> consumers,
                           ConsumerNames(*this, ctx, consumer_blocks, kPrimitive));
  const int self = ctx.SiblingIndex(target->name);
  for (size_t i = 0; i < ctx.siblings.size(); ++i) {
    const Block& b = ctx.siblings[i];
    const bool touches = Accesses(b->reads, buffer) || Accesses(b->writes, buffer);
    if (consumers.count(b->name)) {
      if (static_cast<int>(i) <= self) {
        return Invalid(kPrimitive, absl::StrCat("consumer block ", b->name,
                                                " does not come after block ", target->name));
      }
      if (Accesses(b->writes, buffer) || !Accesses(b->reads, buffer)) {
        return Invalid(kPrimitive, absl::StrCat("consumer block ", b->name, " must read buffer ",
                                                buffer.name(), " without writing it"));
      }
    } else if (static_cast<int>(i) > self && touches && ctx.sibling_child[i] == ctx.block_child) {
      return Invalid(kPrimitive, absl::StrCat("block ", b->name, " accesses buffer ", buffer.name(),
                                              " in the loop nest of block ", target->name,
                                              ", before the write-back could run"));
    }
  }

  const std::string name = UniqueName(func_, absl::StrCat(buffer.name(), "_", ScopeSuffix(scope)),
                                      NameScope::kBlocksAndBuffers);
  Buffer cache = Buffer::Make(name, buffer.dtype(), buffer.shape(), scope);
  IndexFn same = [](const std::vector<Var>& v) { return AsExprs(v); };
  Stmt write_back = MakeCopyStage(name, ctx.scope, FullRegion(buffer),
                                  WrittenRegion(target, buffer), cache, same, buffer, same);
  consumers.insert(target->name);
  SelectiveBufferReplacer redirect(buffer, cache, consumers);
  std::vector<Stmt> children;
  for (size_t c = 0; c < ctx.children.size(); ++c) {
    children.push_back(redirect.VisitStmt(ctx.children[c]));
    if (static_cast<int>(c) == ctx.block_child) children.push_back(write_back);
  }
  func_ = RebuildScope(func_, ctx, std::move(children), cache);
  BlockRV result = NewBlockRV(name);
  Record(kCacheWrite,
         {InstValue::Of(block), InstValue::Array(apply_util::ToValues(consumer_blocks))},
         {InstValue::Int(write_buffer_index), InstValue::String(scope)}, {InstValue::Of(result)});
  return result;
}

// ---- ReIndex ---------------------------------------------------------------------------------

namespace {

// Replaces every access of `from` by `to[indices]` (loads and stores).
class AccessRewriter : public IRMutator {
 public:
  AccessRewriter(Buffer from, Buffer to, std::vector<Expr> indices)
      : from_(std::move(from)), to_(std::move(to)), indices_(std::move(indices)) {}

 protected:
  Expr VisitExpr_(const BufferLoadNode* op, const Expr& self) override {
    if (op->buffer.same_as(from_)) return to_.Load(indices_);
    return IRMutator::VisitExpr_(op, self);
  }
  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    if (op->buffer.same_as(from_)) return BufferStore(to_, VisitExpr(op->value), indices_);
    return IRMutator::VisitStmt_(op, self);
  }

 private:
  Buffer from_;
  Buffer to_;
  std::vector<Expr> indices_;
};

// Replaces one statement (by identity) inside `root`.
class StmtSwapper : public IRMutator {
 public:
  StmtSwapper(Stmt from, Stmt to) : from_(std::move(from)), to_(std::move(to)) {}
  Stmt VisitStmt(const Stmt& s) override {
    return s.same_as(from_) ? to_ : IRMutator::VisitStmt(s);
  }

 protected:
  Expr VisitExpr(const Expr& e) override { return e; }

 private:
  Stmt from_;
  Stmt to_;
};

// The index lists with which `block` (its init and body, not nested blocks) accesses `buffer`.
absl::StatusOr<std::vector<std::vector<Expr>>> CollectAccesses(const Block& block,
                                                               const Buffer& buffer) {
  std::string nested;
  PostOrderVisitStmts(block->body, [&](const Stmt& s) {
    const auto* realize = s.as<BlockRealizeNode>();
    if (realize != nullptr && (Accesses(realize->block->reads, buffer) ||
                               Accesses(realize->block->writes, buffer))) {
      nested = realize->block->name;
    }
  });
  if (!nested.empty()) {
    return Invalid("reindex", absl::StrCat("block ", block->name, " accesses buffer ",
                                           buffer.name(), " through nested block ", nested));
  }
  std::vector<std::vector<Expr>> accesses;
  auto collect = [&](const Stmt& stmt) {
    PostOrderVisitStmts(stmt, [&](const Stmt& s) {
      const auto* store = s.as<BufferStoreNode>();
      if (store != nullptr && store->buffer.same_as(buffer)) accesses.push_back(store->indices);
    });
    PostOrderVisitExprs(stmt, [&](const Expr& e) {
      const auto* load = e.as<BufferLoadNode>();
      if (load != nullptr && load->buffer.same_as(buffer)) accesses.push_back(load->indices);
    });
  };
  if (block->init.defined()) collect(block->init);
  collect(block->body);
  return accesses;
}

std::string IndicesText(const std::vector<Expr>& indices) {
  std::vector<std::string> parts;
  for (const Expr& e : indices) parts.push_back(PrintExpr(e));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

// How a block accesses the buffer to reindex: the one index list of all its accesses, and the
// iteration variables that list uses, in block order.
struct ReIndexAccess {
  std::vector<Expr> indices;
  std::vector<IterVar> used;
};

absl::StatusOr<ReIndexAccess> AnalyzeAccess(const Block& target, const Buffer& buffer,
                                            bool is_write) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::vector<Expr>> accesses,
                           CollectAccesses(target, buffer));
  if (accesses.empty()) {
    return Invalid("reindex", absl::StrCat("block ", target->name, " does not access buffer ",
                                           buffer.name(), " itself"));
  }
  const std::vector<Expr> indices = accesses[0];
  for (const std::vector<Expr>& other : accesses) {
    bool same = other.size() == indices.size();
    for (size_t d = 0; same && d < indices.size(); ++d)
      same = StructuralEqual(other[d], indices[d]);
    if (!same) {
      return Invalid("reindex", absl::StrCat("block ", target->name, " accesses buffer ",
                                             buffer.name(), " at different indices ",
                                             IndicesText(indices), " and ", IndicesText(other)));
    }
  }
  // The iteration variables the access uses, in block order; nothing else may vary.
  std::vector<IterVar> used;
  for (const IterVar& iv : target->iter_vars) {
    for (const Expr& e : indices) {
      if (UsesVar(e, [&](const VarNode* v) { return v == iv.var.get(); })) {
        used.push_back(iv);
        break;
      }
    }
  }
  for (const Expr& e : indices) {
    std::string stray;
    PostOrderVisitExprs(e, [&](const Expr& x) {
      const auto* v = x.as<VarNode>();
      if (v == nullptr) return;
      for (const IterVar& iv : target->iter_vars) {
        if (iv.var.get() == v) return;
      }
      stray = v->name;
    });
    if (!stray.empty()) {
      return Invalid("reindex", absl::StrCat("index ", PrintExpr(e), " of buffer ", buffer.name(),
                                             " in block ", target->name, " uses ", stray,
                                             ", which is not an iteration variable of the block"));
    }
  }
  arith::Analyzer analyzer;
  for (const IterVar& iv : target->iter_vars) analyzer.Bind(iv.var, iv.dom);
  if (is_write) {
    // The write-back must write each element once: every index a distinct iteration variable.
    std::set<const VarNode*> seen;
    for (const Expr& e : indices) {
      const auto* v = e.as<VarNode>();
      if (AsConstInt(e) != nullptr) continue;
      if (v == nullptr || !seen.insert(v).second) {
        return Invalid("reindex", absl::StrCat("block ", target->name, " writes buffer ",
                                               buffer.name(), " at ", IndicesText(indices),
                                               "; each index must be a distinct iteration "
                                               "variable or a constant"));
      }
    }
  } else {
    // The copy reads every point of the domain, also those the block may guard away.
    for (size_t d = 0; d < indices.size(); ++d) {
      if (!analyzer.CanProve(GE(indices[d], Expr(0))) ||
          !analyzer.CanProve(LT(indices[d], buffer.shape()[d]))) {
        return Invalid("reindex", absl::StrCat("read ", buffer.name(), IndicesText(indices),
                                               " of block ", target->name,
                                               " may fall outside the buffer over the block's "
                                               "domain; a copy over the domain would too"));
      }
    }
  }
  return ReIndexAccess{indices, used};
}

}  // namespace

absl::StatusOr<BlockRV> Schedule::ReIndex(BlockRV block, int buffer_index, int buffer_index_type) {
  constexpr const char* kPrimitive = "reindex";
  TESSERA_ASSIGN_OR_RETURN(ScopeContext ctx, Locate(*this, block, kPrimitive));
  const Block& target = ctx.block;
  if (buffer_index_type != 0 && buffer_index_type != 1) {
    return Invalid(kPrimitive, absl::StrCat("buffer_index_type ", buffer_index_type,
                                            " is neither 0 (read) nor 1 (write)"));
  }
  const bool is_write = buffer_index_type == 1;
  const std::vector<BufferRegion>& regions = is_write ? target->writes : target->reads;
  if (buffer_index < 0 || buffer_index >= static_cast<int>(regions.size())) {
    return Invalid(
        kPrimitive,
        absl::StrCat("buffer_index ", buffer_index, " is out of range for block ", target->name,
                     ", which ", is_write ? "writes " : "reads ", regions.size(), " buffers"));
  }
  const Buffer buffer = regions[buffer_index].buffer;
  if (!is_write && Accesses(target->writes, buffer)) {
    return Invalid(kPrimitive, absl::StrCat("block ", target->name, " also writes buffer ",
                                            buffer.name(), "; reindex it as a write buffer"));
  }
  if (is_write && Accesses(target->reads, buffer) && !target->init.defined()) {
    return Invalid(kPrimitive, absl::StrCat("block ", target->name, " reads buffer ", buffer.name(),
                                            " before writing it and has no init"));
  }
  TESSERA_ASSIGN_OR_RETURN(ReIndexAccess access, AnalyzeAccess(target, buffer, is_write));
  const std::vector<Expr>& indices = access.indices;
  const std::vector<IterVar>& used = access.used;
  // Which other blocks of the scope the copy could interleave with.
  const int self = ctx.SiblingIndex(target->name);
  for (size_t i = 0; i < ctx.siblings.size(); ++i) {
    const Block& b = ctx.siblings[i];
    if (ctx.sibling_child[i] != ctx.block_child || static_cast<int>(i) == self) continue;
    const bool conflict = is_write
                              ? (static_cast<int>(i) > self &&
                                 (Accesses(b->reads, buffer) || Accesses(b->writes, buffer)))
                              : (static_cast<int>(i) < self && Accesses(b->writes, buffer));
    if (conflict) {
      return Invalid(kPrimitive, absl::StrCat("block ", b->name, " accesses buffer ", buffer.name(),
                                              " in the loop nest of block ", target->name,
                                              ", where the reindex copy cannot be placed"));
    }
  }

  const std::string name =
      UniqueName(func_, absl::StrCat(buffer.name(), "_reindex"), NameScope::kBlocksAndBuffers);
  arith::Analyzer analyzer;
  std::vector<Expr> shape, block_indices;
  std::vector<Range> copy_doms;
  for (const IterVar& iv : used) {
    shape.push_back(iv.dom.extent);
    block_indices.push_back(analyzer.Simplify(iv.var - iv.dom.min));
    copy_doms.push_back(iv.dom);
  }
  Buffer reindex = Buffer::Make(name, buffer.dtype(), shape, buffer.scope());
  IndexFn compact = [&](const std::vector<Var>& vars) {
    std::vector<Expr> out;
    for (size_t d = 0; d < vars.size(); ++d) {
      out.push_back(analyzer.Simplify(vars[d] - used[d].dom.min));
    }
    return out;
  };
  IndexFn original = [&](const std::vector<Var>& vars) {
    VarMap vmap;
    for (size_t d = 0; d < vars.size(); ++d) vmap[used[d].var] = vars[d];
    std::vector<Expr> out;
    for (const Expr& e : indices) out.push_back(Substitute(e, vmap));
    return out;
  };
  Stmt copy = is_write ? MakeCopyStage(name, ctx.scope, copy_doms, copy_doms, reindex, compact,
                                       buffer, original)
                       : MakeCopyStage(name, ctx.scope, copy_doms, copy_doms, buffer, original,
                                       reindex, compact);

  BlockNode node = *target.get();
  AccessRewriter rewriter(buffer, reindex, block_indices);
  if (node.init.defined()) node.init = rewriter.VisitStmt(node.init);
  node.body = rewriter.VisitStmt(node.body);
  std::vector<Range> points;
  for (const Expr& e : block_indices) points.push_back(Range{e, Expr(1)});
  for (std::vector<BufferRegion>* list : {&node.reads, &node.writes}) {
    for (BufferRegion& r : *list) {
      if (r.buffer.same_as(buffer)) r = BufferRegion{reindex, points};
    }
  }
  const auto* realize = ctx.path.back().as<BlockRealizeNode>();
  Stmt new_realize = BlockRealize(realize->iter_values, realize->predicate, MakeBlock(node));
  StmtSwapper swap(ctx.path.back(), new_realize);
  std::vector<Stmt> children;
  for (size_t c = 0; c < ctx.children.size(); ++c) {
    const bool here = static_cast<int>(c) == ctx.block_child;
    if (here && !is_write) children.push_back(copy);
    children.push_back(here ? swap.VisitStmt(ctx.children[c]) : ctx.children[c]);
    if (here && is_write) children.push_back(copy);
  }
  func_ = RebuildScope(func_, ctx, std::move(children), reindex);
  BlockRV result = NewBlockRV(name);
  Record(kReIndex, {InstValue::Of(block)},
         {InstValue::Int(buffer_index), InstValue::Int(buffer_index_type)},
         {InstValue::Of(result)});
  return result;
}

// ---- SetScope / StorageAlign -----------------------------------------------------------------

namespace {

// Write buffer `buffer_index` of the block, checked to be an intermediate allocated by a block.
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

// Strides padded as TVM's storage flattening does: from the innermost dimension out, the
// stride of an aligned dimension is rounded up to the next value with stride % factor == offset.
std::vector<Expr> AlignedStrides(const std::vector<int64_t>& shape,
                                 const std::vector<int64_t>& annotation, int64_t buffer_index) {
  std::vector<Expr> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    for (size_t a = 0; a + 3 < annotation.size(); a += 4) {
      if (annotation[a] != buffer_index || annotation[a + 1] != static_cast<int64_t>(d)) continue;
      const int64_t factor = annotation[a + 2], offset = annotation[a + 3];
      stride += ((factor + offset - stride % factor) % factor);
    }
    strides[d] = Expr(stride);
    stride *= shape[d];
  }
  return strides;
}

}  // namespace

absl::Status Schedule::SetScope(BlockRV block, int buffer_index, const std::string& scope) {
  constexpr const char* kPrimitive = "set_scope";
  absl::StatusOr<Block> target = Get(block);
  if (!target.ok()) return WithPrimitive(kPrimitive, target.status());
  TESSERA_ASSIGN_OR_RETURN(Buffer buffer,
                           IntermediateWriteBuffer(func_, *target, buffer_index, kPrimitive));
  TESSERA_RETURN_IF_ERROR(CheckScope(kPrimitive, scope));
  if (buffer.scope() != scope) func_ = ReplaceBuffer(func_, buffer, buffer.WithScope(scope));
  Record(kSetScope, {InstValue::Of(block)},
         {InstValue::Int(buffer_index), InstValue::String(scope)}, {});
  return absl::OkStatus();
}

absl::Status Schedule::StorageAlign(BlockRV block, int buffer_index, int axis, int factor,
                                    int offset) {
  constexpr const char* kPrimitive = "storage_align";
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive(kPrimitive, path.status());
  const Block target = path->back().as<BlockRealizeNode>()->block;
  TESSERA_ASSIGN_OR_RETURN(Buffer buffer,
                           IntermediateWriteBuffer(func_, target, buffer_index, kPrimitive));
  const int ndim = buffer.ndim();
  if (axis < -ndim || axis >= ndim) {
    return Invalid(kPrimitive,
                   absl::StrCat("axis ", axis, " is out of range for buffer ", buffer.name(),
                                " of block ", target->name, ", which has ", ndim, " dimensions"));
  }
  if (factor <= 0 || offset < 0 || offset >= factor) {
    return Invalid(kPrimitive,
                   absl::StrCat("factor ", factor, " and offset ", offset, " for buffer ",
                                buffer.name(), " of block ", target->name,
                                " must satisfy factor > 0 and 0 <= offset < factor"));
  }
  std::vector<int64_t> shape;
  for (const Expr& e : buffer.shape()) {
    const int64_t* v = AsConstInt(e);
    if (v == nullptr) {
      return Invalid(kPrimitive, absl::StrCat("buffer ", buffer.name(), " of block ", target->name,
                                              " has a non-constant shape"));
    }
    shape.push_back(*v);
  }
  const int64_t dim = axis < 0 ? axis + ndim : axis;
  // buffer_dim_align: flat [buffer_index, axis, factor, offset] quadruples, one per aligned
  // dimension (TVM nests them per buffer; annotations here hold flat int arrays).
  constexpr const char* kKey = "buffer_dim_align";
  std::vector<int64_t> entries;
  auto it = target->annotations.find(kKey);
  if (it != target->annotations.end()) {
    if (const auto* old = std::get_if<std::vector<int64_t>>(&it->second)) {
      for (size_t a = 0; a + 3 < old->size(); a += 4) {
        if ((*old)[a] == buffer_index && (*old)[a + 1] == dim) continue;
        entries.insert(entries.end(), old->begin() + a, old->begin() + a + 4);
      }
    }
  }
  entries.insert(entries.end(), {buffer_index, dim, factor, offset});
  BlockNode node = *target.get();
  node.annotations[kKey] = entries;
  const auto* realize = path->back().as<BlockRealizeNode>();
  func_ = ReplaceStmt(func_, path->back(),
                      BlockRealize(realize->iter_values, realize->predicate, MakeBlock(node)));
  func_ = ReplaceBuffer(func_, buffer,
                        buffer.WithStrides(AlignedStrides(shape, entries, buffer_index)));
  Record(kStorageAlign, {InstValue::Of(block)},
         {InstValue::Int(buffer_index), InstValue::Int(axis), InstValue::Int(factor),
          InstValue::Int(offset)},
         {});
  return absl::OkStatus();
}

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
