// SampleComputeLocation and the candidate locations it samples from (TVM's
// CollectComputeLocation): inline, root, or a loop around the first consumer where compute_at
// is legal (docs/reference/metaschedule.md §3.5).

#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/arith/int_set.h"
#include "ir/arith/iter_map.h"
#include "ir/arith/linear.h"
#include "ir/functor.h"
#include "schedule/instruction_kinds.h"
#include "schedule/primitive/apply_util.h"
#include "schedule/primitive/compute_location_internal.h"
#include "schedule/primitive/util.h"
#include "schedule/schedule.h"

namespace tessera {

using primitive::BlockOf;
using primitive::ComputeAtImpl;
using primitive::ComputeInlineImpl;
using primitive::Invalid;
using primitive::SharedBuffer;
using primitive::UsesAnyOf;
using primitive::WithPrimitive;

namespace {

enum class LoopIterType { kDataPar, kReduce, kOpaque };

// TVM's GetLoopIterType: how the blocks directly under `loop` use its variable.
LoopIterType GetLoopIterType(const Stmt& loop) {
  const auto* op = loop.as<ForNode>();
  int n_spatial = 0, n_reduce = 0;
  for (const Stmt& s : ChildBlockRealizes(loop)) {
    const auto* realize = s.as<BlockRealizeNode>();
    for (size_t i = 0; i < realize->iter_values.size(); ++i) {
      if (!UsesAnyOf(realize->iter_values[i], {op->loop_var.get()})) continue;
      if (realize->block->iter_vars[i].kind == IterKind::kSpatial) {
        ++n_spatial;
      } else {
        ++n_reduce;
      }
    }
  }
  if (n_spatial > 0 && n_reduce > 0) return LoopIterType::kOpaque;
  return n_reduce > 0 ? LoopIterType::kReduce : LoopIterType::kDataPar;
}

// The candidate decisions of docs/reference/metaschedule.md §3.5 and the loops of the first
// consumer.
std::vector<int64_t> CollectComputeLocation(const PrimFunc& func, const std::string& block_name,
                                            std::vector<Stmt>* consumer_loops) {
  std::vector<int64_t> candidates;
  if (ComputeInlineImpl(func, block_name).ok()) candidates.push_back(-2);
  candidates.push_back(-1);
  const StmtPath path = *FindBlockPath(func, block_name);
  if (path.size() == 1) return candidates;
  const Block& block = BlockOf(path.back());
  std::vector<StmtPath> consumers;
  for (const Stmt& s : ChildBlockRealizes(EnclosingBlockRealize(path))) {
    const Block& other = BlockOf(s);
    if (other->name != block_name && SharedBuffer(block->writes, other->reads).defined()) {
      consumers.push_back(*FindBlockPath(func, other->name));
    }
  }
  if (consumers.empty()) return candidates;
  // The boundary: the deepest loop around every consumer (the innermost loop of a single one).
  std::vector<Stmt> loops = LoopsOnPath(consumers[0]);
  size_t depth = loops.size();
  for (const StmtPath& c : consumers) {
    const std::vector<Stmt> other = LoopsOnPath(c);
    size_t common = 0;
    while (common < std::min(depth, other.size()) && other[common].same_as(loops[common])) ++common;
    depth = common;
  }
  if (depth == 0) return candidates;  // the boundary is not a loop
  loops.resize(depth);
  *consumer_loops = loops;
  std::vector<LoopIterType> types;
  for (const Stmt& l : loops) types.push_back(GetLoopIterType(l));
  int last_data_par = -1, first_reduce = static_cast<int>(depth);
  for (int i = 0; i < static_cast<int>(depth); ++i) {
    if (types[i] == LoopIterType::kDataPar) last_data_par = i;
    if (types[i] == LoopIterType::kReduce && first_reduce == static_cast<int>(depth))
      first_reduce = i;
  }
  for (int i = 0; i < static_cast<int>(depth); ++i) {
    const auto* op = loops[i].as<ForNode>();
    if (IsConstInt(op->extent, 1)) continue;
    if (types[i] == LoopIterType::kDataPar && i > first_reduce) break;
    if (types[i] == LoopIterType::kReduce && i > last_data_par) break;
    if (ComputeAtImpl(func, block_name, op->loop_var, /*reverse=*/false,
                      /*preserve_unit_loops=*/true, /*index=*/-1)
            .ok()) {
      candidates.push_back(i);
    }
  }
  return candidates;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> Schedule::ComputeLocationCandidates(BlockRV block) const {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return WithPrimitive("compute_location_candidates", name.status());
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive("compute_location_candidates", path.status());
  std::vector<Stmt> loops;
  return CollectComputeLocation(func_, *name, &loops);
}

absl::StatusOr<LoopRV> Schedule::SampleComputeLocation(BlockRV block, const InstValue& decision) {
  constexpr const char* kPrimitive = "sample_compute_location";
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return WithPrimitive(kPrimitive, name.status());
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive(kPrimitive, path.status());
  std::vector<Stmt> loops;
  const std::vector<int64_t> candidates = CollectComputeLocation(func_, *name, &loops);
  int64_t chosen;
  if (decision.is_none()) {
    chosen = candidates[rng_.UniformInt(0, static_cast<int64_t>(candidates.size()))];
  } else if (decision.is_int()) {
    // A stale decision snaps to the largest candidate below it, else to root.
    bool found = false;
    chosen = -1;
    for (int64_t c : candidates) {
      if (c <= decision.as_int() && (!found || c > chosen)) {
        chosen = c;
        found = true;
      }
    }
    if (!found) chosen = -1;
  } else {
    return Invalid(kPrimitive, "decision must be an integer");
  }
  LoopRV result;
  if (chosen >= 0) {
    result = NewLoopRV(loops[chosen].as<ForNode>()->loop_var);
  } else {
    TESSERA_ASSIGN_OR_RETURN(result, NewMarkerLoopRV(this, /*inline_marker=*/chosen == -2));
  }
  Record(kSampleComputeLocation, {InstValue::Of(block)}, {}, {InstValue::Of(result)},
         InstValue::Int(chosen));
  return result;
}

}  // namespace tessera
