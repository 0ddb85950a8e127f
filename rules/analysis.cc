// Block and loop predicates for the schedule rules (TVM tir/schedule/analysis equivalents).
#include "rules/analysis.h"

#include <unordered_map>
#include <unordered_set>

#include "ir/functor.h"
#include "rules/annotations.h"
#include "schedule/state.h"

namespace tessera {
namespace {

// The BlockRealize at the end of the path of `block`, or nullptr on a stale RV.
struct BlockSite {
  StmtPath path;
  const BlockRealizeNode* realize = nullptr;
};

BlockSite FindSite(const Schedule& sch, BlockRV block) {
  BlockSite site;
  absl::StatusOr<StmtPath> path = sch.GetPath(block);
  if (!path.ok() || path->empty()) return site;
  site.path = *std::move(path);
  site.realize = site.path.back().as<BlockRealizeNode>();
  return site;
}

bool UsesVarNode(const Expr& expr, const VarNode* var) {
  return UsesVar(expr, [var](const VarNode* v) { return v == var; });
}

// `expr` as `var [+/- constant]`; nullptr otherwise. Sets *shifted when a constant is added.
const VarNode* VarWithShift(const Expr& expr, bool* shifted) {
  *shifted = false;
  if (const VarNode* v = expr.as<VarNode>()) return v;
  const BinaryNode* bin = expr.as<BinaryNode>();
  if (bin == nullptr) return nullptr;
  if (bin->op == BinaryOp::kAdd || bin->op == BinaryOp::kSub) {
    if (bin->a.as<VarNode>() != nullptr && AsConstInt(bin->b) != nullptr) {
      *shifted = true;
      return bin->a.as<VarNode>();
    }
    if (bin->op == BinaryOp::kAdd && bin->b.as<VarNode>() != nullptr &&
        AsConstInt(bin->a) != nullptr) {
      *shifted = true;
      return bin->b.as<VarNode>();
    }
  }
  return nullptr;
}

}  // namespace

std::vector<IterKind> BlockIterKinds(const Block& block) {
  std::vector<IterKind> kinds;
  kinds.reserve(block->iter_vars.size());
  for (const IterVar& iv : block->iter_vars) kinds.push_back(iv.kind);
  return kinds;
}

bool IsSpatialBlock(const Block& block) {
  for (const IterVar& iv : block->iter_vars) {
    if (iv.kind != IterKind::kSpatial) return false;
  }
  return true;
}

bool IsSpatialFunc(const PrimFunc& func) {
  bool spatial = true;
  PostOrderVisitStmts(func.body(), [&spatial](const Stmt& s) {
    if (const BlockNode* b = s.as<BlockNode>()) {
      for (const IterVar& iv : b->iter_vars) {
        if (iv.kind != IterKind::kSpatial) spatial = false;
      }
    }
  });
  return spatial;
}

std::vector<std::optional<IterKind>> LoopIterKinds(const Schedule& sch, BlockRV block) {
  BlockSite site = FindSite(sch, block);
  std::vector<std::optional<IterKind>> kinds;
  if (site.realize == nullptr) return kinds;
  for (const Stmt& loop_stmt : LoopsOnPath(site.path)) {
    const ForNode* loop = loop_stmt.as<ForNode>();
    const VarNode* loop_var = loop->loop_var.get();
    bool spatial = false;
    bool reduction = false;
    for (const Stmt& child : ChildBlockRealizes(loop_stmt)) {
      const BlockRealizeNode* realize = child.as<BlockRealizeNode>();
      const std::vector<IterVar>& iters = realize->block->iter_vars;
      for (size_t i = 0; i < iters.size() && i < realize->iter_values.size(); ++i) {
        if (!UsesVarNode(realize->iter_values[i], loop_var)) continue;
        (iters[i].kind == IterKind::kSpatial ? spatial : reduction) = true;
      }
    }
    if (spatial && reduction) {
      kinds.push_back(std::nullopt);
    } else {
      kinds.push_back(reduction ? IterKind::kReduction : IterKind::kSpatial);
    }
  }
  return kinds;
}

bool HasTrivialBinding(const Schedule& sch, BlockRV block) {
  BlockSite site = FindSite(sch, block);
  if (site.realize == nullptr) return false;
  std::vector<Stmt> loops = LoopsOnPath(site.path);
  const std::vector<Expr>& values = site.realize->iter_values;
  if (loops.size() != values.size()) return false;
  for (size_t i = 0; i < loops.size(); ++i) {
    if (values[i].as<VarNode>() != loops[i].as<ForNode>()->loop_var.get()) return false;
  }
  return true;
}

bool IsMultiLevelTiled(const Block& block) {
  return block->annotations.count(attr::kTilingStructure) != 0;
}

bool NeedsMultiLevelTiling(const Schedule& sch, BlockRV block_rv) {
  absl::StatusOr<Block> block_or = sch.Get(block_rv);
  if (!block_or.ok()) return false;
  const Block& block = *block_or;
  if (IsMultiLevelTiled(block) || block->writes.size() != 1 || block->reads.empty() ||
      IsSpatialBlock(block) || !HasTrivialBinding(sch, block_rv)) {
    return false;
  }
  const BufferNode* write_buffer = block->writes[0].buffer.get();
  std::vector<const VarNode*> spatial_vars;
  for (const IterVar& iv : block->iter_vars) {
    if (iv.kind == IterKind::kSpatial && !IsConstInt(iv.dom.extent, 1)) {
      spatial_vars.push_back(iv.var.get());
    }
  }
  int unused_spatial_vars = 0;
  std::unordered_set<const BufferNode*> read_buffers;
  for (const BufferRegion& read : block->reads) {
    if (!read_buffers.insert(read.buffer.get()).second) return false;
    if (read.buffer.get() == write_buffer) continue;
    std::unordered_set<const VarNode*> used;
    for (const Range& range : read.region) {
      if (AsConstInt(range.extent) == nullptr) return false;
      PostOrderVisitExprs(range.min, [&used](const Expr& e) {
        if (const VarNode* v = e.as<VarNode>()) used.insert(v);
      });
    }
    for (const VarNode* v : spatial_vars) unused_spatial_vars += used.count(v) == 0 ? 1 : 0;
  }
  return unused_spatial_vars >= 1;
}

std::optional<SpaceReductionExtents> CumulativeExtents(const Schedule& sch, BlockRV block) {
  BlockSite site = FindSite(sch, block);
  if (site.realize == nullptr) return std::nullopt;
  std::vector<Stmt> loops = LoopsOnPath(site.path);
  std::vector<std::optional<IterKind>> kinds = LoopIterKinds(sch, block);
  SpaceReductionExtents extents;
  for (size_t i = 0; i < loops.size(); ++i) {
    const int64_t* extent = AsConstInt(loops[i].as<ForNode>()->extent);
    if (extent == nullptr || !kinds[i].has_value()) return std::nullopt;
    (*kinds[i] == IterKind::kSpatial ? extents.space : extents.reduction) *= *extent;
  }
  return extents;
}

bool NeedsRFactorOrCrossThreadReduction(const Schedule& sch, BlockRV block_rv,
                                        int64_t max_parallel_extent) {
  BlockSite site = FindSite(sch, block_rv);
  if (site.realize == nullptr) return false;
  const Block& block = site.realize->block;
  if (block->writes.empty() || IsSpatialBlock(block) || IsMultiLevelTiled(block) ||
      !HasTrivialBinding(sch, block_rv)) {
    return false;
  }
  // A reduction block: its outputs are not indexed by reduction iterators.
  for (const IterVar& iv : block->iter_vars) {
    if (iv.kind != IterKind::kReduction) continue;
    for (const BufferRegion& write : block->writes) {
      for (const Range& range : write.region) {
        if (UsesVarNode(range.min, iv.var.get())) return false;
      }
    }
  }
  // A perfect nest directly around the block with at least one reduction loop.
  std::vector<Stmt> loops = LoopsOnPath(site.path);
  std::vector<std::optional<IterKind>> kinds = LoopIterKinds(sch, block_rv);
  bool has_reduction_loop = false;
  for (size_t i = 0; i < loops.size(); ++i) {
    if (!kinds[i].has_value()) return false;
    if (*kinds[i] == IterKind::kReduction) has_reduction_loop = true;
    const Stmt& body = loops[i].as<ForNode>()->body;
    const Stmt& expected = i + 1 < loops.size() ? loops[i + 1] : site.path.back();
    if (!body.same_as(expected)) return false;
  }
  if (!has_reduction_loop) return false;
  std::optional<SpaceReductionExtents> extents = CumulativeExtents(sch, block_rv);
  if (!extents.has_value()) return false;
  if (NeedsMultiLevelTiling(sch, block_rv)) {
    return extents->space < extents->reduction && extents->space <= max_parallel_extent;
  }
  return extents->reduction > 1;
}

ReadWritePattern AnalyzeReadWritePattern(const BufferRegion& read, const BufferRegion& write) {
  ReadWritePattern none;
  std::unordered_map<const VarNode*, int> write_dim_of;
  const int w_dim = static_cast<int>(write.region.size());
  for (int i = 0; i < w_dim; ++i) {
    const Range& range = write.region[i];
    const VarNode* v = range.min.as<VarNode>();
    if (AsConstInt(range.extent) == nullptr || v == nullptr) return none;
    write_dim_of.emplace(v, i);
  }
  ReadWritePattern result;
  result.exists = true;
  result.no_const_read = true;
  result.no_shift_read = true;
  std::vector<int> mapped;
  for (const Range& range : read.region) {
    if (AsConstInt(range.extent) == nullptr) return none;
    if (AsConstInt(range.min) != nullptr) {
      result.no_const_read = false;
      continue;
    }
    bool shifted = false;
    const VarNode* v = VarWithShift(range.min, &shifted);
    auto it = v == nullptr ? write_dim_of.end() : write_dim_of.find(v);
    if (it == write_dim_of.end()) return none;
    mapped.push_back(it->second);
    if (shifted) result.no_shift_read = false;
  }
  std::vector<int> uses(w_dim, 0);
  result.ordered = true;
  int last = -1;
  for (int dim : mapped) {
    ++uses[dim];
    if (last > dim) result.ordered = false;
    last = dim;
  }
  result.surjective = true;
  result.injective = true;
  for (int count : uses) {
    if (count == 0) result.surjective = false;
    if (count >= 2) result.injective = false;
  }
  return result;
}

bool IsWriteCache(const Block& block) {
  if (block->writes.size() != 1) return false;
  for (const BufferRegion& read : block->reads) {
    ReadWritePattern pattern = AnalyzeReadWritePattern(read, block->writes[0]);
    if (!pattern.injective || !pattern.ordered) return false;
  }
  return true;
}

bool IsWriteCache(const Schedule& sch, BlockRV block) {
  absl::StatusOr<Block> b = sch.Get(block);
  return b.ok() && IsWriteCache(*b);
}

}  // namespace tessera
