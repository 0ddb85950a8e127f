// CacheRead and CacheWrite, after TVM's schedule/primitive/cache_read_write.cc: a copy stage
// between a buffer and a new one in another storage scope, which the consumers (CacheRead) or
// the writer (CacheWrite) use instead; see cache.cc for how copy stages are placed.

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
using primitive::BufferReplacer;
using primitive::CheckScope;
using primitive::IndexFn;
using primitive::Invalid;
using primitive::Locate;
using primitive::MakeCopyStage;
using primitive::RebuildScope;
using primitive::ScopeContext;
using primitive::WithPrimitive;

namespace {

// "wmma.matrix_a" -> "wmma_matrix_a", for names.
std::string ScopeSuffix(std::string scope) {
  std::replace(scope.begin(), scope.end(), '.', '_');
  return scope;
}

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

}  // namespace tessera
