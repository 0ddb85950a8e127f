// ReIndex: a copy stage that gives a block's access to one buffer the block's own iteration
// order, so that layout transformations can then act on it (TVM's reindex).

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

using primitive::Accesses;
using primitive::IndexFn;
using primitive::Invalid;
using primitive::Locate;
using primitive::MakeCopyStage;
using primitive::RebuildScope;
using primitive::ScopeContext;

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
    if (realize != nullptr &&
        (Accesses(realize->block->reads, buffer) || Accesses(realize->block->writes, buffer))) {
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
    const bool conflict = is_write ? (static_cast<int>(i) > self &&
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

}  // namespace tessera
