// BindBlockThreadIdx after MetaSchedule's schedule/cuda/thread_bind.cc.
#include "rules/thread_bind.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rules/analysis.h"

namespace tessera {
namespace {

bool IsSingleStmt(const Stmt& stmt) {
  const SeqStmtNode* seq = stmt.as<SeqStmtNode>();
  return seq == nullptr || seq->seq.size() == 1;
}

bool HasPrefix(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

ThreadExtentSampler MakeThreadExtentSampler(std::vector<int64_t> thread_extents) {
  return [thread_extents = std::move(thread_extents)](
             Schedule* sch, int64_t max_extent) -> absl::StatusOr<InstValue> {
    std::vector<int64_t> candidates;
    for (int64_t e : thread_extents) {
      if (e <= max_extent) candidates.push_back(e);
    }
    if (candidates.empty()) return InstValue::Int(max_extent);
    if (candidates.size() == 1) return InstValue::Int(candidates[0]);
    std::vector<double> probs(candidates.size(), 1.0 / static_cast<double>(candidates.size()));
    TESSERA_ASSIGN_OR_RETURN(ExprRV factor, sch->SampleCategorical(candidates, probs));
    return InstValue::Of(factor);
  };
}

ThreadExtentSampler MakeFixedThreadExtentSampler() {
  return [](Schedule*, int64_t max_extent) -> absl::StatusOr<InstValue> {
    return InstValue::Int(max_extent);
  };
}

absl::Status BindBlockThreadIdx(Schedule* sch, BlockRV block, int64_t max_threadblocks,
                                int64_t max_threads_per_block, const ThreadExtentSampler& sampler) {
  TESSERA_ASSIGN_OR_RETURN(StmtPath path, sch->GetPath(block));
  if (!EnclosingBlockRealize(path).defined()) return absl::OkStatus();  // the root block
  TESSERA_ASSIGN_OR_RETURN(Block b, sch->Get(block));
  if (IsMultiLevelTiled(b)) return absl::OkStatus();
  // Thread loops around an enclosing block count too: a nested block inside a kernel's grid.
  bool under_block_idx = false, under_thread_idx = false;
  for (const Stmt& s : path) {
    const auto* loop = s.as<ForNode>();
    if (loop == nullptr || loop->for_kind != ForKind::kThreadBinding) continue;
    under_block_idx = under_block_idx || HasPrefix(loop->thread_tag, "blockIdx");
    under_thread_idx = under_thread_idx || HasPrefix(loop->thread_tag, "threadIdx");
  }
  if (under_block_idx && under_thread_idx) return absl::OkStatus();

  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(block));
  std::vector<std::optional<IterKind>> kinds = LoopIterKinds(*sch, block);
  const int n = static_cast<int>(loops.size());
  if (static_cast<int>(kinds.size()) != n) {
    return absl::InternalError(
        absl::StrCat("bind block thread index: no loop kinds for block ", sch->Describe(block)));
  }
  int i_block_idx = -1;
  int i_thread_idx = -1;
  int i_multi_child = -1;
  int i_spatial_loop = -1;  // the last loop of the leading run of spatial loops
  for (int i = 0; i < n; ++i) {
    TESSERA_ASSIGN_OR_RETURN(const ForNode* loop, sch->Get(loops[i]));
    if (i_block_idx == -1 && HasPrefix(loop->thread_tag, "blockIdx")) i_block_idx = i;
    if (i_thread_idx == -1 && HasPrefix(loop->thread_tag, "threadIdx")) i_thread_idx = i;
    if (i_multi_child == -1 && loop->for_kind != ForKind::kSerial) i_multi_child = i;
    if (i_multi_child == -1 && !IsSingleStmt(loop->body)) i_multi_child = i + 1;
    if (kinds[i] == IterKind::kSpatial && i_spatial_loop == i - 1) ++i_spatial_loop;
  }
  if (i_multi_child == -1) i_multi_child = n;
  if (i_block_idx != -1 && i_thread_idx != -1) return absl::OkStatus();
  if (i_block_idx != -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("bind block thread index: block ", sch->Describe(block),
                     " is under a blockIdx loop but no threadIdx loop"));
  }
  if (i_spatial_loop == -1) {
    // No spatial loop to bind: put a unit loop on top of the nest.
    LoopRV unit;
    if (loops.empty()) {
      TESSERA_ASSIGN_OR_RETURN(unit, sch->AddUnitLoop(block));
    } else {
      TESSERA_ASSIGN_OR_RETURN(unit, sch->AddUnitLoop(loops[0]));
    }
    loops.insert(loops.begin(), unit);
    i_spatial_loop = 0;
    if (i_thread_idx != -1) ++i_thread_idx;
    ++i_multi_child;
  }
  if (i_thread_idx != -1) {
    int num_fuse = std::min({i_multi_child, i_thread_idx, i_spatial_loop + 1});
    TESSERA_ASSIGN_OR_RETURN(
        LoopRV fused, sch->Fuse(std::vector<LoopRV>(loops.begin(), loops.begin() + num_fuse)));
    return sch->Bind(fused, "blockIdx.x");
  }
  int num_fuse = std::min(i_multi_child, i_spatial_loop + 1);
  TESSERA_ASSIGN_OR_RETURN(LoopRV fused,
                           sch->Fuse(std::vector<LoopRV>(loops.begin(), loops.begin() + num_fuse)));
  TESSERA_ASSIGN_OR_RETURN(const ForNode* fused_loop, sch->Get(fused));
  const int64_t* const_extent = AsConstInt(fused_loop->extent);
  int64_t extent = const_extent ? *const_extent : std::numeric_limits<int64_t>::max();
  if (extent <= max_threadblocks * max_threads_per_block) {
    TESSERA_ASSIGN_OR_RETURN(InstValue factor,
                             sampler(sch, std::min(extent, max_threads_per_block)));
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> split, sch->Split(fused, {InstValue(), factor}));
    TESSERA_RETURN_IF_ERROR(sch->Bind(split[0], "blockIdx.x"));
    return sch->Bind(split[1], "threadIdx.x");
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> split,
                           sch->Split(fused, {InstValue(), InstValue::Int(max_threadblocks),
                                              InstValue::Int(max_threads_per_block)}));
  TESSERA_RETURN_IF_ERROR(sch->Reorder({split[1], split[2], split[0]}));
  TESSERA_RETURN_IF_ERROR(sch->Bind(split[1], "blockIdx.x"));
  return sch->Bind(split[2], "threadIdx.x");
}

}  // namespace tessera
