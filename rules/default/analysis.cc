// Shared analysis of the default rules: normal form, inlining, access patterns, GPU check.
#include "rules/default/analysis.h"

#include <algorithm>
#include <utility>

#include "base/status_macros.h"
#include "codegen/verify_gpu.h"
#include "ir/functor.h"
#include "ir/prepack.h"
#include "rules/analysis.h"
#include "rules/annotations.h"
#include "schedule/index_map.h"
#include "schedule/state.h"

namespace tessera {
namespace dlight {
namespace {

// The iteration variable index of `index` (a plain iteration variable), -1 for a constant,
// -2 otherwise.
int IterOf(const Block& block, const Expr& index) {
  if (AsConstInt(index) != nullptr) return -1;
  const auto* var = index.as<VarNode>();
  if (var == nullptr) return -2;
  for (size_t i = 0; i < block->iter_vars.size(); ++i) {
    if (block->iter_vars[i].var.get() == var) return static_cast<int>(i);
  }
  return -2;
}

int NumIters(const std::vector<int>& iters) {
  std::set<int> used;
  for (int i : iters) {
    if (i >= 0) used.insert(i);
  }
  return static_cast<int>(used.size());
}

}  // namespace

std::string BlockInfo::NonUnitKinds() const {
  std::string out;
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (extents[i] != 1) out += kinds[i];
  }
  return out;
}

std::optional<std::vector<BlockInfo>> NormalizeBlocks(Schedule* sch) {
  std::vector<BlockInfo> infos;
  for (const Stmt& s : ChildBlockRealizes(sch->func().root_block()->body)) {
    const auto* realize = s.as<BlockRealizeNode>();
    const Block& block = realize->block;
    if (!ChildBlockRealizes(block->body).empty()) return std::nullopt;
    absl::StatusOr<BlockRV> rv = sch->GetBlock(block->name);
    if (!rv.ok()) return std::nullopt;
    absl::StatusOr<std::vector<LoopRV>> loops = sch->GetLoops(*rv);
    if (!loops.ok() || loops->size() != block->iter_vars.size()) return std::nullopt;
    BlockInfo info{block->name, *rv, *loops, {}, ""};
    for (size_t i = 0; i < loops->size(); ++i) {
      absl::StatusOr<const ForNode*> loop = sch->Get((*loops)[i]);
      if (!loop.ok() || realize->iter_values[i].as<VarNode>() != (*loop)->loop_var.get()) {
        return std::nullopt;
      }
      const IterVar& iv = block->iter_vars[i];
      const int64_t* extent = AsConstInt(iv.dom.extent);
      info.extents.push_back(extent != nullptr ? *extent : -1);
      info.kinds += iv.kind == IterKind::kReduction ? 'R' : 'S';
    }
    infos.push_back(std::move(info));
  }
  return infos;
}

// True if every block in `blocks` is elementwise.
bool AllInjective(const Schedule& sch, const std::vector<BlockRV>& blocks) {
  for (BlockRV rv : blocks) {
    absl::StatusOr<Block> block = sch.Get(rv);
    if (!block.ok()) return false;
    for (const IterVar& iv : (*block)->iter_vars) {
      if (iv.kind == IterKind::kReduction) return false;
    }
  }
  return true;
}

std::optional<std::vector<BlockInfo>> TryInline(Schedule* sch, const std::vector<BlockInfo>& blocks,
                                                bool into_reductions) {
  std::set<std::string> candidates;
  for (const BlockInfo& b : blocks) candidates.insert(b.name);
  bool changed = true;
  while (changed) {
    changed = false;
    for (const std::string& name : candidates) {
      absl::StatusOr<BlockRV> rv = sch->GetBlock(name);
      if (!rv.ok()) continue;
      if (!into_reductions) {
        absl::StatusOr<std::vector<BlockRV>> consumers = sch->GetConsumers(*rv);
        absl::StatusOr<std::vector<BlockRV>> producers = sch->GetProducers(*rv);
        if (!consumers.ok() || !producers.ok()) continue;
        if ((AllInjective(*sch, *consumers) && sch->ComputeInline(*rv).ok()) ||
            (AllInjective(*sch, *producers) && sch->ReverseComputeInline(*rv).ok())) {
          candidates.erase(name);
          changed = true;
          break;
        }
        continue;
      }
      if (sch->ComputeInline(*rv).ok() || sch->ReverseComputeInline(*rv).ok()) {
        candidates.erase(name);
        changed = true;
        break;
      }
    }
  }
  return NormalizeBlocks(sch);
}

std::optional<std::vector<BlockInfo>> TryInlineContiguousSpatial(
    Schedule* sch, const std::vector<BlockInfo>& blocks) {
  std::vector<BlockInfo> run;
  auto flush = [&]() {
    if (run.size() > 0) TryInline(sch, run);
    run.clear();
  };
  for (const BlockInfo& b : blocks) {
    if (b.IsInjective()) {
      run.push_back(b);
    } else {
      flush();
    }
  }
  flush();
  return NormalizeBlocks(sch);
}

std::optional<BlockInfo> UntiledRootBlockInfo(Schedule* sch, BlockRV block, const Block& node) {
  absl::StatusOr<StmtPath> path = sch->GetPath(block);
  if (!path.ok() || path->size() < 2 || !EnclosingBlockRealize(*path).same_as(path->front()) ||
      IsMultiLevelTiled(node) || !HasTrivialBinding(*sch, block)) {
    return std::nullopt;
  }
  absl::StatusOr<std::vector<LoopRV>> loops = sch->GetLoops(block);
  if (!loops.ok() || loops->size() != node->iter_vars.size()) return std::nullopt;
  BlockInfo info{node->name, block, *loops, {}, ""};
  for (const IterVar& iv : node->iter_vars) {
    const int64_t* extent = AsConstInt(iv.dom.extent);
    if (extent == nullptr) return std::nullopt;
    info.extents.push_back(*extent);
    info.kinds += iv.kind == IterKind::kReduction ? 'R' : 'S';
  }
  return info;
}

std::vector<int> AccessIters(const Block& block, const Buffer& buffer) {
  std::vector<std::vector<Expr>> accesses;
  PostOrderVisitExprs(block->body, [&](const Expr& e) {
    const auto* load = e.as<BufferLoadNode>();
    if (load != nullptr && load->buffer.same_as(buffer)) accesses.push_back(load->indices);
  });
  PostOrderVisitStmts(block->body, [&](const Stmt& s) {
    const auto* store = s.as<BufferStoreNode>();
    if (store != nullptr && store->buffer.same_as(buffer)) accesses.push_back(store->indices);
  });
  if (accesses.empty()) return {};
  std::vector<int> iters;
  for (const Expr& index : accesses[0]) iters.push_back(IterOf(block, index));
  for (const std::vector<Expr>& other : accesses) {
    for (size_t d = 0; d < iters.size(); ++d) {
      if (other.size() != iters.size() || IterOf(block, other[d]) != iters[d]) {
        return std::vector<int>(iters.size(), -2);
      }
    }
  }
  return iters;
}

bool HasReadBroadcastOver(const Block& block, int v) {
  for (const BufferRegion& read : block->reads) {
    if (read.buffer.same_as(block->writes[0].buffer)) continue;
    std::vector<int> iters = AccessIters(block, read.buffer);
    if (std::find(iters.begin(), iters.end(), v) == iters.end()) return true;
  }
  return false;
}

int DominantRead(const Block& block) {
  int best = -1, best_count = -1;
  for (size_t r = 0; r < block->reads.size(); ++r) {
    const int count = NumIters(AccessIters(block, block->reads[r].buffer));
    if (count > best_count) {
      best = static_cast<int>(r);
      best_count = count;
    }
  }
  return best;
}

std::set<int> NonUnitIters(const Block& block) {
  std::set<int> iters;
  for (size_t i = 0; i < block->iter_vars.size(); ++i) {
    if (!IsConstInt(block->iter_vars[i].dom.extent, 1)) iters.insert(static_cast<int>(i));
  }
  return iters;
}

std::set<int> NonUnitAccessIters(const Block& block, const Buffer& buffer) {
  const std::set<int> non_unit = NonUnitIters(block);
  std::set<int> used;
  for (int i : AccessIters(block, buffer)) {
    if (non_unit.count(i) > 0) used.insert(i);
  }
  return used;
}

bool IsInnerReduction(const Block& block) {
  // The input read by the most non-unit iterators (not the accumulator: a batch-1 classifier's
  // y[0, n] += x[0, k] * W[n, k] reads y by as many iterators as W, counting the batch).
  int read = -1, most = -1;
  for (size_t r = 0; r < block->reads.size(); ++r) {
    const Buffer& b = block->reads[r].buffer;
    if (!block->writes.empty() && b.same_as(block->writes[0].buffer)) continue;
    const int used = static_cast<int>(NonUnitAccessIters(block, b).size());
    if (used > most) {
      read = static_cast<int>(r);
      most = used;
    }
  }
  if (read < 0) return false;
  const Buffer& buffer = block->reads[read].buffer;
  // The innermost dimension's index, which may be an affine expression (conv windows).
  bool found = false, inner_is_reduction = false;
  PostOrderVisitExprs(block->body, [&](const Expr& e) {
    const auto* load = e.as<BufferLoadNode>();
    if (found || load == nullptr || !load->buffer.same_as(buffer) || load->indices.empty()) {
      return;
    }
    found = true;
    inner_is_reduction = UsesVar(load->indices.back(), [&](const VarNode* v) {
      for (const IterVar& iv : block->iter_vars) {
        if (iv.var.get() == v) return iv.kind == IterKind::kReduction;
      }
      return false;
    });
  });
  return inner_is_reduction;
}

bool IsSumReduction(const Block& block) {
  if (block->writes.size() != 1 || !block->init.defined()) return false;
  const auto* store = block->body.as<BufferStoreNode>();
  if (store == nullptr) return false;
  const auto* add = store->value.as<BinaryNode>();
  if (add == nullptr || add->op != BinaryOp::kAdd) return false;
  const auto* load = add->a.as<BufferLoadNode>();
  if (load == nullptr || !load->buffer.same_as(store->buffer)) return false;
  for (size_t d = 0; d < store->indices.size(); ++d) {
    const int iter = IterOf(block, store->indices[d]);
    if (!load->indices[d].same_as(store->indices[d]) &&
        (iter == -2 || IterOf(block, load->indices[d]) != iter)) {
      return false;
    }
  }
  return true;
}

bool IsBroadcastEpilogue(const Block& block, const Block& epilogue) {
  int non_unit = 0;
  for (const IterVar& iv : epilogue->iter_vars) {
    if (!IsConstInt(iv.dom.extent, 1)) ++non_unit;
  }
  for (const BufferRegion& w : block->writes) {
    std::vector<int> iters = AccessIters(epilogue, w.buffer);
    if (!iters.empty() && NumIters(iters) < non_unit) return true;
  }
  return false;
}

absl::StatusOr<Block> BlockByName(const Schedule& sch, const std::string& name) {
  absl::StatusOr<StmtPath> path = FindBlockPath(sch.func(), name);
  if (!path.ok()) return path.status();
  return path->back().as<BlockRealizeNode>()->block;
}

int64_t LoopExtent(const Schedule& sch, LoopRV loop) {
  absl::StatusOr<const ForNode*> node = sch.Get(loop);
  if (!node.ok()) return -1;
  const int64_t* extent = AsConstInt((*node)->extent);
  return extent != nullptr ? *extent : -1;
}

int64_t GroupExtent(const std::vector<int64_t>& extents, const GemmMatch& g, int group) {
  int64_t extent = 1;
  for (int v : g.groups[group]) extent *= extents[v];
  return extent;
}

int64_t FloorPowerOfTwo(int64_t n, int64_t limit) {
  int64_t p = 1;
  while (p * 2 <= std::min(n, limit)) p *= 2;
  return p;
}

std::optional<GemmMatch> MatchGemm(const Block& block, const std::vector<int64_t>& extents,
                                   bool one_row) {
  if (block->writes.size() != 1 || !block->init.defined()) return std::nullopt;
  const Buffer& c = block->writes[0].buffer;
  GemmMatch g;
  for (size_t r = 0; r < block->reads.size(); ++r) {
    if (block->reads[r].buffer.same_as(c)) continue;
    int* slot = g.a < 0 ? &g.a : g.b < 0 ? &g.b : nullptr;
    if (slot == nullptr) return std::nullopt;
    *slot = static_cast<int>(r);
  }
  if (g.b < 0) return std::nullopt;
  std::vector<int> acc[3] = {AccessIters(block, block->reads[g.a].buffer),
                             AccessIters(block, block->reads[g.b].buffer), AccessIters(block, c)};
  std::set<int> used[3];
  for (int t = 0; t < 3; ++t) {
    for (int i : acc[t]) {
      if (i == -2) return std::nullopt;
      if (i >= 0) used[t].insert(i);
    }
  }
  for (size_t v = 0; v < block->iter_vars.size(); ++v) {
    const bool in_a = used[0].count(v), in_b = used[1].count(v), in_c = used[2].count(v);
    const bool spatial = block->iter_vars[v].kind == IterKind::kSpatial;
    int group = -1;
    if (extents[v] == 1) {
      group = spatial ? kGemmS : kGemmK;
    } else if (spatial && in_a && in_b && in_c) {
      group = kGemmS;
    } else if (spatial && in_a && !in_b && in_c) {
      group = kGemmI;
    } else if (spatial && !in_a && in_b && in_c) {
      group = kGemmJ;
    } else if (!spatial && in_a && in_b && !in_c) {
      group = kGemmK;
    }
    if (group < 0) return std::nullopt;
    g.groups[group].push_back(static_cast<int>(v));
  }
  for (int group : {kGemmI, kGemmJ, kGemmK}) {
    bool non_unit = false;
    for (int v : g.groups[group]) non_unit = non_unit || extents[v] != 1;
    if (!non_unit && !(one_row && group == kGemmI)) return std::nullopt;
  }
  // J is the group C's innermost dimension uses.
  if (!acc[2].empty() && acc[2].back() >= 0 &&
      std::count(g.groups[kGemmI].begin(), g.groups[kGemmI].end(), acc[2].back()) > 0) {
    std::swap(g.a, g.b);
    std::swap(g.groups[kGemmI], g.groups[kGemmJ]);
  }
  return g;
}

absl::StatusOr<BlockRV> PrepackIntoStrips(Schedule* sch, BlockRV block, int read, int strip_dim,
                                          int64_t lanes, int group_dim, int64_t group,
                                          int64_t lane_group) {
  TESSERA_ASSIGN_OR_RETURN(Block node, sch->Get(block));
  if (read < 0 || read >= static_cast<int>(node->reads.size())) {
    return absl::FailedPreconditionError("prepack: no such read");
  }
  const Buffer& weight = node->reads[read].buffer;
  if (strip_dim < 0 || strip_dim >= weight.ndim() || lanes <= 1 || group_dim == strip_dim ||
      group_dim >= weight.ndim() || group < 1 || lane_group < 1 ||
      (group > lane_group && group % lane_group != 0)) {
    return absl::FailedPreconditionError("prepack: no such strip dimension");
  }
  const auto* extent = weight.shape()[strip_dim].as<IntImmNode>();
  if (extent == nullptr || extent->value % lanes != 0) {
    return absl::FailedPreconditionError("prepack: the lanes do not divide the strip dimension");
  }
  const auto* grouped = group_dim >= 0 ? weight.shape()[group_dim].as<IntImmNode>() : nullptr;
  if (group_dim >= 0 && (grouped == nullptr || grouped->value % group != 0)) {
    return absl::FailedPreconditionError("prepack: the group does not divide its dimension");
  }
  std::vector<Var> vars;
  for (int d = 0; d < weight.ndim(); ++d) vars.push_back(Var("d" + std::to_string(d)));
  std::vector<Expr> strips = {FloorDiv(vars[strip_dim], Expr(lanes))};
  for (int d = 0; d < weight.ndim(); ++d) {
    if (d != strip_dim) strips.push_back(d == group_dim ? FloorDiv(vars[d], Expr(group)) : vars[d]);
  }
  if (group_dim >= 0 && group > lane_group) {
    strips.push_back(FloorDiv(FloorMod(vars[group_dim], Expr(group)), Expr(lane_group)));
  }
  strips.push_back(FloorMod(vars[strip_dim], Expr(lanes)));
  if (group_dim >= 0) {
    strips.push_back(FloorMod(vars[group_dim], Expr(std::min(group, lane_group))));
  }
  TESSERA_ASSIGN_OR_RETURN(IndexMap map, IndexMap::Make(vars, strips));
  TESSERA_ASSIGN_OR_RETURN(BlockRV packed, sch->CacheRead(block, read, "global"));
  TESSERA_RETURN_IF_ERROR(sch->TransformLayout(packed, 0, /*buffer_index_type=*/1, map));
  TESSERA_RETURN_IF_ERROR(sch->Annotate(packed, kLayoutRewritePreproc, InstValue::Int(1)));
  return packed;
}

absl::StatusOr<GemmLoops> FuseGemmLoops(Schedule* sch, const BlockInfo& main, const GemmMatch& g) {
  std::vector<LoopRV> order;
  for (int group : {kGemmS, kGemmI, kGemmJ, kGemmK}) {
    for (int v : g.groups[group]) order.push_back(main.loops[v]);
  }
  TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
  GemmLoops out;
  LoopRV* fused[4] = {&out.batch, &out.i, &out.j, &out.k};
  int64_t extents[4] = {1, 1, 1, 1};
  for (int group : {kGemmS, kGemmI, kGemmJ, kGemmK}) {
    std::vector<LoopRV> loops;
    for (int v : g.groups[group]) {
      loops.push_back(main.loops[v]);
      extents[group] *= main.extents[v];
    }
    if (loops.empty()) continue;
    *fused[group] = loops[0];
    if (loops.size() > 1) {
      TESSERA_ASSIGN_OR_RETURN(*fused[group], sch->Fuse(loops));
    }
  }
  out.has_batch = !g.groups[kGemmS].empty();
  out.extent_i = extents[kGemmI];
  out.extent_j = extents[kGemmJ];
  out.extent_k = extents[kGemmK];
  return out;
}

absl::Status BindGemmThreadBlocks(Schedule* sch, const GemmLoops& loops, LoopRV rows, LoopRV cols) {
  if (loops.has_batch) {
    TESSERA_ASSIGN_OR_RETURN(rows, sch->Fuse({loops.batch, rows}));
  }
  TESSERA_RETURN_IF_ERROR(sch->Bind(rows, "blockIdx.y"));
  return sch->Bind(cols, "blockIdx.x");
}

bool IsTensorCoreGemm(const Block& block, const GemmMatch& g, const std::vector<int64_t>& extents,
                      int64_t column_multiple) {
  constexpr int64_t kFragment = 16;
  if (g.groups[kGemmI].size() != 1 || g.groups[kGemmJ].size() != 1) return false;
  int k = -1;
  for (int v : g.groups[kGemmK]) {
    if (extents[v] == 1) continue;
    if (k >= 0) return false;
    k = v;
  }
  const int i = g.groups[kGemmI][0], j = g.groups[kGemmJ][0];
  for (int v : {i, j, k}) {
    const int64_t multiple = v == j ? column_multiple : kFragment;
    if (v < 0 || extents[v] <= 0 || extents[v] % multiple != 0) return false;
  }
  // Trailing dimensions in the intrinsics' order; leading ones batch iterators or constants.
  auto laid_out = [&](const Buffer& buffer, int row, int col) {
    std::vector<int> iters = AccessIters(block, buffer);
    const size_t n = iters.size();
    if (n < 2 || iters[n - 2] != row || iters[n - 1] != col) return false;
    for (size_t d = 0; d + 2 < n; ++d) {
      const std::vector<int>& s = g.groups[kGemmS];
      if (iters[d] != -1 && std::count(s.begin(), s.end(), iters[d]) == 0) return false;
    }
    return true;
  };
  return laid_out(block->reads[g.a].buffer, i, k) && laid_out(block->reads[g.b].buffer, k, j) &&
         laid_out(block->writes[0].buffer, i, j);
}

absl::Status CooperativeFetch(Schedule* sch, BlockRV cache, size_t ndim, int64_t threads_y,
                              int64_t threads_x, int64_t lanes) {
  constexpr int64_t kVector = 4;
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(cache));
  if (loops.size() < ndim) return absl::InvalidArgumentError("unexpected copy loops");
  std::vector<LoopRV> copy(loops.end() - ndim, loops.end());
  int64_t elements = 1;
  for (LoopRV l : copy) elements *= LoopExtent(*sch, l);
  LoopRV fused = copy[0];
  if (copy.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(fused, sch->Fuse(copy));
  }
  while (lanes > kVector && elements % (threads_y * threads_x * lanes) != 0) lanes /= 2;
  const bool vector = elements > 0 && elements % (threads_y * threads_x * lanes) == 0;
  std::vector<InstValue> factors = {InstValue(), InstValue::Int(threads_y),
                                    InstValue::Int(threads_x)};
  if (vector) factors.push_back(InstValue::Int(lanes));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> parts, sch->Split(fused, factors));
  TESSERA_RETURN_IF_ERROR(sch->Bind(parts[1], "threadIdx.y"));
  TESSERA_RETURN_IF_ERROR(sch->Bind(parts[2], "threadIdx.x"));
  if (vector) TESSERA_RETURN_IF_ERROR(sch->Vectorize(parts[3]));
  return absl::OkStatus();
}

absl::Status InlineEpilogues(Schedule* sch, BlockRV write_back) {
  bool inlined = true;
  while (inlined) {
    inlined = false;
    TESSERA_ASSIGN_OR_RETURN(std::vector<BlockRV> consumers, sch->GetConsumers(write_back));
    for (BlockRV consumer : consumers) {
      if (sch->ReverseComputeInline(consumer).ok()) {
        inlined = true;
        break;
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<BlockRV> WriteBackUnder(Schedule* sch, BlockRV block, LoopRV loop,
                                       const std::string& scope) {
  TESSERA_ASSIGN_OR_RETURN(BlockRV write_back, sch->CacheWrite(block, 0, scope));
  TESSERA_RETURN_IF_ERROR(InlineEpilogues(sch, write_back));
  TESSERA_RETURN_IF_ERROR(sch->ReverseComputeAt(write_back, loop, /*preserve_unit_loops=*/true));
  return write_back;
}

absl::StatusOr<std::vector<LoopRV>> SpreadOverThreads(Schedule* sch, BlockRV block,
                                                      const std::vector<LoopRV>& loops,
                                                      int64_t len_tx, int64_t unroll) {
  LoopRV fused;
  if (loops.empty()) {
    TESSERA_ASSIGN_OR_RETURN(fused, sch->AddUnitLoop(block));
  } else if (loops.size() == 1) {
    fused = loops[0];
  } else {
    TESSERA_ASSIGN_OR_RETURN(fused, sch->Fuse(loops));
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> parts,
                           sch->Split(fused, {InstValue(), InstValue::Int(len_tx)}));
  TESSERA_RETURN_IF_ERROR(sch->Bind(parts[1], "threadIdx.x"));
  if (unroll > 0) {
    TESSERA_RETURN_IF_ERROR(
        sch->Annotate(parts[0], attr::kPragmaAutoUnrollMaxStep, InstValue::Int(unroll)));
    TESSERA_RETURN_IF_ERROR(
        sch->Annotate(parts[0], attr::kPragmaUnrollExplicit, InstValue::Int(1)));
  }
  return parts;
}

absl::StatusOr<LoopRV> ScheduleRowReduction(Schedule* sch, const BlockInfo& main,
                                            const std::optional<BlockInfo>& epilogue,
                                            int64_t len_tx, int64_t unroll) {
  std::vector<LoopRV> spatial, reduction;
  for (size_t i = 0; i < main.kinds.size(); ++i) {
    (main.kinds[i] == 'S' ? spatial : reduction).push_back(main.loops[i]);
  }
  if (reduction.empty()) return absl::InvalidArgumentError("not a reduction");
  std::vector<LoopRV> order = spatial;
  order.insert(order.end(), reduction.begin(), reduction.end());
  if (!spatial.empty() && main.kinds.find('R') < spatial.size()) {
    TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
  }
  LoopRV row;
  if (spatial.empty()) {
    TESSERA_ASSIGN_OR_RETURN(row, sch->AddUnitLoop(reduction[0]));
  } else if (spatial.size() == 1) {
    row = spatial[0];
  } else {
    TESSERA_ASSIGN_OR_RETURN(row, sch->Fuse(spatial));
  }
  TESSERA_RETURN_IF_ERROR(sch->Bind(row, "blockIdx.x"));
  TESSERA_RETURN_IF_ERROR(SpreadOverThreads(sch, main.rv, reduction, len_tx, unroll).status());
  if (!epilogue.has_value()) return row;
  // Thread 0 stores the row's result; every thread of the row reads it from shared memory.
  TESSERA_RETURN_IF_ERROR(sch->SetScope(main.rv, 0, "shared"));
  TESSERA_RETURN_IF_ERROR(sch->ReverseComputeAt(epilogue->rv, row, /*preserve_unit_loops=*/true));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(epilogue->rv));
  TESSERA_RETURN_IF_ERROR(
      SpreadOverThreads(sch, epilogue->rv, {loops.begin() + 1, loops.end()}, len_tx, unroll)
          .status());
  return row;
}

std::optional<InnerSumReduction> FindInnerSumReduction(Schedule* sch) {
  std::optional<std::vector<BlockInfo>> blocks = NormalizeBlocks(sch);
  if (blocks.has_value()) blocks = TryInlineContiguousSpatial(sch, *blocks);
  if (!blocks.has_value() || blocks->empty() || blocks->size() > 2) return std::nullopt;
  absl::StatusOr<Block> block = BlockByName(*sch, (*blocks)[0].name);
  if (!block.ok() || !IsSumReduction(*block) || !IsInnerReduction(*block)) return std::nullopt;
  if (blocks->size() == 2 && !(*blocks)[1].IsInjective()) return std::nullopt;
  InnerSumReduction found{(*blocks)[0], *block, std::nullopt};
  if (blocks->size() == 2) found.epilogue = (*blocks)[1];
  return found;
}

std::optional<Schedule> IfValidOnGpu(Schedule sch, const Target& target) {
  if (!VerifyGpuCode(sch.func(), target).ok()) return std::nullopt;
  return sch;
}

}  // namespace dlight
}  // namespace tessera
