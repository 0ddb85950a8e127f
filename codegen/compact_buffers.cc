#include "codegen/compact_buffers.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "codegen/lower_gpu_internal.h"
#include "ir/arith/analyzer.h"
#include "ir/arith/int_set.h"

namespace tessera {
namespace lower_internal {

AccessLcaFinder::AccessLcaFinder(const std::vector<Buffer>& tracked) {
  for (const Buffer& b : tracked) tracked_.insert(b.get());
}

namespace {

bool IsFloorDivOrMod(const BinaryNode* op) {
  return op->op == BinaryOp::kFloorDiv || op->op == BinaryOp::kFloorMod;
}

// A loop variable, or floordiv/floormod of one (nested): what fusing loops binds.
bool IsFusedLoopVar(const Expr& e) {
  if (e.as<VarNode>() != nullptr) return true;
  const auto* div = e.as<BinaryNode>();
  return div != nullptr && IsFloorDivOrMod(div) && IsFusedLoopVar(div->a);
}

}  // namespace

void AccessLcaFinder::VisitStmt_(const ForNode* op) {
  stack_.push_back(op);
  IRVisitor::VisitStmt_(op);
  stack_.pop_back();
}

const std::unordered_set<const VarNode*>& AccessLcaFinder::FusedVars(const BufferNode* b) const {
  static const std::unordered_set<const VarNode*> kNone;
  auto it = fused_.find(b);
  return it == fused_.end() ? kNone : it->second;
}

void AccessLcaFinder::VisitStmt_(const BlockRealizeNode* op) {
  const bool predicated = op->predicate.defined() && !IsConstInt(op->predicate, 1);
  predicated_depth_ += predicated;
  std::unordered_set<const VarNode*> fused;
  bool fused_split = false;
  for (const Expr& value : op->iter_values) {
    PostOrderVisitExprs(value, [&](const Expr& e) {
      const auto* div = e.as<BinaryNode>();
      if (div == nullptr || !IsFloorDivOrMod(div)) return;
      PostOrderVisitExprs(div->a, [&](const Expr& v) {
        if (const auto* var = v.as<VarNode>()) fused.insert(var);
      });
      fused_split = fused_split || !IsFusedLoopVar(div->a);
    });
  }
  fused_split_depth_ += fused_split;
  fused_vars_stack_.push_back(std::move(fused));
  for (const BufferRegion& r : op->block->reads) Record(r.buffer.get());
  for (const BufferRegion& r : op->block->writes) Record(r.buffer.get());
  IRVisitor::VisitStmt_(op);
  fused_vars_stack_.pop_back();
  fused_split_depth_ -= fused_split;
  predicated_depth_ -= predicated;
}

void AccessLcaFinder::VisitExpr_(const BufferLoadNode* op) {
  Record(op->buffer.get());
  IRVisitor::VisitExpr_(op);
}

void AccessLcaFinder::VisitStmt_(const BufferStoreNode* op) {
  Record(op->buffer.get());
  IRVisitor::VisitStmt_(op);
}

void AccessLcaFinder::Record(const BufferNode* b) {
  if (tracked_.count(b) == 0) return;
  if (predicated_depth_ > 0) predicated_.insert(b);
  if (fused_split_depth_ > 0) through_fused_split_.insert(b);
  for (const auto& vars : fused_vars_stack_) fused_[b].insert(vars.begin(), vars.end());
  auto it = lca_.find(b);
  if (it == lca_.end()) {
    lca_[b] = stack_;
    return;
  }
  std::vector<const ForNode*>& prefix = it->second;
  size_t n = 0;
  while (n < prefix.size() && n < stack_.size() && prefix[n] == stack_[n]) ++n;
  prefix.resize(n);
}

namespace {

struct Compaction {
  Buffer compact;
  std::vector<Expr> mins;
};

// Rewrites accesses of compacted buffers and places their allocations.
class CompactionRewriter : public IRMutator {
 public:
  CompactionRewriter(std::unordered_map<const BufferNode*, Compaction> compactions,
                     std::unordered_map<const ForNode*, std::vector<Buffer>> sites)
      : compactions_(std::move(compactions)), sites_(std::move(sites)) {}

 protected:
  Expr VisitExpr_(const BufferLoadNode* op, const Expr& self) override {
    Expr e = IRMutator::VisitExpr_(op, self);
    const auto* load = e.as<BufferLoadNode>();
    auto it = compactions_.find(load->buffer.get());
    if (it == compactions_.end()) return e;
    return it->second.compact.Load(Rebase(load->indices, it->second.mins));
  }

  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    Stmt s = IRMutator::VisitStmt_(op, self);
    const auto* store = s.as<BufferStoreNode>();
    auto it = compactions_.find(store->buffer.get());
    if (it == compactions_.end()) return s;
    return BufferStore(it->second.compact, store->value, Rebase(store->indices, it->second.mins));
  }

  Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override {
    Stmt s = IRMutator::VisitStmt_(op, self);
    Block block(std::static_pointer_cast<const BlockNode>(s.node_ptr()));
    bool changed = false;
    auto fix = [&](std::vector<BufferRegion>* regions) {
      for (BufferRegion& r : *regions) {
        auto it = compactions_.find(r.buffer.get());
        if (it == compactions_.end()) continue;
        changed = true;
        r.buffer = it->second.compact;
        for (size_t d = 0; d < r.region.size(); ++d) {
          r.region[d].min = r.region[d].min - it->second.mins[d];
        }
      }
    };
    std::shared_ptr<BlockNode> node = block.CopyNode();
    fix(&node->reads);
    fix(&node->writes);
    return changed ? MakeBlock(*node) : s;
  }

  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    auto it = sites_.find(op);
    if (it == sites_.end()) return IRMutator::VisitStmt_(op, self);
    Stmt body = VisitStmt(op->body);
    for (const Buffer& b : it->second) body = Allocate(compactions_.at(b.get()).compact, body);
    return For(op->loop_var, op->extent, op->for_kind, body, op->thread_tag, op->annotations);
  }

 private:
  static std::vector<Expr> Rebase(const std::vector<Expr>& indices, const std::vector<Expr>& mins) {
    std::vector<Expr> out;
    for (size_t d = 0; d < indices.size(); ++d) {
      out.push_back(IsConstInt(mins[d], 0) ? indices[d] : indices[d] - mins[d]);
    }
    return out;
  }

  std::unordered_map<const BufferNode*, Compaction> compactions_;
  std::unordered_map<const ForNode*, std::vector<Buffer>> sites_;
};

// Strides of `compact` keeping the padding each dimension of `original` had (storage_align),
// or none when the original is compact.
std::vector<Expr> CompactStrides(const Buffer& original, const std::vector<int64_t>& extents) {
  const std::vector<Expr>& strides = original->strides;
  if (strides.empty()) return {};
  std::vector<int64_t> out(extents.size(), 1);
  for (size_t d = extents.size(); d-- > 0;) {
    if (d + 1 == extents.size()) {
      const int64_t* s = AsConstInt(strides[d]);
      out[d] = s ? *s : 1;
      continue;
    }
    const int64_t* s = AsConstInt(strides[d]);
    const int64_t* inner = AsConstInt(strides[d + 1]);
    const int64_t* dim = AsConstInt(original.shape()[d + 1]);
    int64_t pad = (s && inner && dim) ? std::max<int64_t>(0, *s - *inner * *dim) : 0;
    out[d] = out[d + 1] * extents[d + 1] + pad;
  }
  std::vector<Expr> exprs;
  for (int64_t s : out) exprs.push_back(Expr(s));
  return exprs;
}

// Whether some of `fused` (loop variables bound through floordiv/floormod) is the variable of a
// loop inside the compaction site, i.e. not one of `path` (the loops enclosing the site, the
// site last): one iteration of the site then covers a fused range that the blocks' boxes
// over-approximate.
bool FusedInside(const std::unordered_set<const VarNode*>& fused,
                 const std::vector<const ForNode*>& path) {
  for (const VarNode* v : fused) {
    bool outside = false;
    for (const ForNode* loop : path) outside = outside || loop->loop_var.get() == v;
    if (!outside) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<Stmt> CompactBuffers(const Stmt& body, const std::vector<Buffer>& buffers,
                                    bool keep_predicated, std::vector<Buffer>* kept) {
  AccessLcaFinder finder(buffers);
  finder.VisitStmt(body);
  std::unordered_map<const BufferNode*, Compaction> compactions;
  std::unordered_map<const ForNode*, std::vector<Buffer>> sites;
  for (const Buffer& b : buffers) {
    auto it = finder.lca().find(b.get());
    if (it == finder.lca().end()) continue;
    const std::vector<const ForNode*>& path = it->second;
    if (path.empty() || (keep_predicated && finder.AccessedUnderPredicate(b.get()) &&
                         (FusedInside(finder.FusedVars(b.get()), path) ||
                          finder.AccessedThroughFusedSplit(b.get())))) {
      kept->push_back(b);
      continue;
    }
    arith::Analyzer analyzer;
    arith::VarRangeMap relax;
    for (const ForNode* loop : path) {
      analyzer.Bind(loop->loop_var, Range{Expr(0), loop->extent});
      // Shared memory belongs to the thread block: its region covers every thread.
      if (lower_gpu_internal::IsSharedScope(b.scope()) &&
          loop->for_kind == ForKind::kThreadBinding &&
          lower_gpu_internal::IsThreadIdxTag(loop->thread_tag)) {
        relax[loop->loop_var] = Range{Expr(0), loop->extent};
      }
    }
    const ForNode* site = path.back();
    arith::BufferAccessRegions regions =
        arith::DetectBufferAccessRegions(site->body, relax, &analyzer, /*exclude=*/{},
                                         /*only=*/{b});
    std::vector<Range> region;
    for (const auto* list : {&regions.reads, &regions.writes}) {
      for (const BufferRegion& r : *list) {
        if (!r.buffer.same_as(b)) continue;
        region = region.empty() ? r.region : arith::UnionRegion(region, r.region, &analyzer);
      }
    }
    if (region.size() != static_cast<size_t>(b.ndim())) {  // no region found: keep it whole
      kept->push_back(b);
      continue;
    }
    Compaction c;
    std::vector<int64_t> extents;
    std::vector<Expr> shape;
    for (int d = 0; d < b.ndim(); ++d) {
      Expr extent = analyzer.Simplify(region[d].extent);
      int64_t size = -1;
      if (const int64_t* v = AsConstInt(extent)) {
        size = *v;
      } else {
        arith::ConstIntBound bound = analyzer.ConstIntBound(extent);
        if (bound.max != arith::ConstIntBound::kPosInf) size = bound.max;
      }
      const int64_t* dim = AsConstInt(b.shape()[d]);
      if (size < 0 || (dim != nullptr && size >= *dim)) {
        if (dim == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat("lower: buffer ", b.name(), " (",
                                                         b.scope(), ") has a non-constant size"));
        }
        c.mins.push_back(Expr(0));
        extents.push_back(*dim);
      } else {
        c.mins.push_back(analyzer.Simplify(region[d].min));
        extents.push_back(std::max<int64_t>(size, 1));
      }
      shape.push_back(Expr(extents.back()));
    }
    c.compact = Buffer::Make(b.name(), b.dtype(), shape, b.scope());
    std::vector<Expr> strides = CompactStrides(b, extents);
    if (!strides.empty()) c.compact = c.compact.WithStrides(strides);
    compactions[b.get()] = c;
    sites[site].push_back(b);
  }
  CompactionRewriter rewriter(std::move(compactions), std::move(sites));
  return rewriter.VisitStmt(body);
}

}  // namespace lower_internal
}  // namespace tessera
