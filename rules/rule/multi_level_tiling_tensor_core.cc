// MultiLevelTilingTensorCore (docs/reference/metaschedule.md §4.3.9), 16x16x16 tensor-core groups
// (schedule/tensor_intrin.h): float16 inputs (float32 or float16 accumulator) and bfloat16 inputs
// (float32 accumulator), with Tessera's own fragments (ldmatrix and mma.sync, sm_80 and later;
// the default there) or WMMA's (parameter "intrinsics": "wmma"; float16 from sm_70). A block
// computing
// C[batch..., m, n] += A[batch..., m, k] * B[batch..., k, n] with m, n, k multiples of 16 is
// split into 16x16x16 tiles whose inner part is blockized and annotated for RewriteTensorize
// (compute + init intrinsics); the outer block is tiled like MultiLevelTiling, gets a shared
// write cache and an accumulator fragment cache whose 16x16 stores are blockized and annotated, and
// shared input copies whose matrix_a / matrix_b fragment loads are blockized and annotated; on
// sm_80 and later the loop the input copies sit at gets a sampled software-pipeline depth.
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rules/analysis.h"
#include "rules/annotations.h"
#include "rules/rule/multi_level_tiling.h"
#include "rules/schedule_rule.h"
#include "schedule/tensor_intrin.h"

namespace tessera {
namespace {

constexpr char kTensorCoreOwner[] = "MultiLevelTilingTensorCore";
constexpr int64_t kTile = 16;

// Where the matmul roles sit in a block: iterator indices of m, n, k and read indices of A, B.
struct MatmulMatch {
  int m = -1, n = -1, k = -1;
  int read_a = -1, read_b = -1;
  const TensorCoreIntrins* group = nullptr;
};

// The iterator index of each point index of `region` (-1 where not a bare iterator).
std::vector<int> IterIndices(const Block& block, const BufferRegion& region) {
  std::vector<int> out;
  for (const Range& r : region.region) {
    int found = -1;
    for (size_t i = 0; i < block->iter_vars.size(); ++i) {
      if (r.min.as<VarNode>() == block->iter_vars[i].var.get() && IsConstInt(r.extent, 1)) {
        found = static_cast<int>(i);
      }
    }
    out.push_back(found);
  }
  return out;
}

// `compute_capability`: the target's; groups it lacks do not match. `family`: the fragments'.
std::optional<MatmulMatch> MatchMatmul(const Block& block, int compute_capability,
                                       const std::string& family) {
  if (block->writes.size() != 1 || block->reads.size() != 3) return std::nullopt;
  const BufferRegion& c = block->writes[0];
  MatmulMatch match;
  std::vector<int> inputs;
  for (int i = 0; i < 3; ++i) {
    if (!block->reads[i].buffer.same_as(c.buffer)) inputs.push_back(i);
  }
  if (inputs.size() != 2) return std::nullopt;
  const DataType in = block->reads[inputs[0]].buffer.dtype();
  if (block->reads[inputs[1]].buffer.dtype() != in) return std::nullopt;
  match.group = FindTensorCoreIntrins(block, in, c.buffer.dtype(), family);
  if (match.group == nullptr || compute_capability < match.group->min_compute_capability) {
    return std::nullopt;
  }
  const std::vector<int> ci = IterIndices(block, c);
  const size_t rank = ci.size();
  if (rank < 2) return std::nullopt;
  match.m = ci[rank - 2];
  match.n = ci[rank - 1];
  for (int input : inputs) {
    const std::vector<int> ii = IterIndices(block, block->reads[input]);
    if (ii.size() != rank) return std::nullopt;
    if (ii[rank - 2] == match.m) {
      match.read_a = input;
      match.k = ii[rank - 1];
    } else if (ii[rank - 1] == match.n) {
      match.read_b = input;
    }
  }
  if (match.read_a < 0 || match.read_b < 0 || match.m < 0 || match.n < 0 || match.k < 0) {
    return std::nullopt;
  }
  const std::vector<int> ai = IterIndices(block, block->reads[match.read_a]);
  const std::vector<int> bi = IterIndices(block, block->reads[match.read_b]);
  if (bi[rank - 2] != match.k) return std::nullopt;
  // Leading dimensions: the same spatial batch iterators in all three buffers.
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (ci[d] < 0 || ai[d] != ci[d] || bi[d] != ci[d]) return std::nullopt;
  }
  if (block->iter_vars.size() != rank + 1) return std::nullopt;
  for (size_t i = 0; i < block->iter_vars.size(); ++i) {
    const IterVar& iv = block->iter_vars[i];
    const bool is_k = static_cast<int>(i) == match.k;
    if ((iv.kind == IterKind::kReduction) != is_k) return std::nullopt;
  }
  for (int role : {match.m, match.n, match.k}) {
    const int64_t* extent = AsConstInt(block->iter_vars[role].dom.extent);
    if (extent == nullptr || *extent % kTile != 0) return std::nullopt;
  }
  return match;
}

// Splits the last two loops of `block` by 16, moves the 16x16 pair innermost, blockizes it
// and annotates the new outer block auto_tensorize = `intrin`.
absl::StatusOr<BlockRV> BlockizeTile(Schedule* sch, BlockRV block, const std::string& intrin) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(block));
  if (loops.size() < 2) return absl::InvalidArgumentError("copy block has fewer than 2 loops");
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<LoopRV> rows,
      sch->Split(loops[loops.size() - 2], {InstValue(), InstValue::Int(kTile)}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> cols,
                           sch->Split(loops.back(), {InstValue(), InstValue::Int(kTile)}));
  TESSERA_RETURN_IF_ERROR(sch->Reorder({rows[0], cols[0], rows[1], cols[1]}));
  TESSERA_ASSIGN_OR_RETURN(BlockRV outer, sch->Blockize(rows[1]));
  TESSERA_RETURN_IF_ERROR(sch->Annotate(outer, attr::kAutoTensorize, InstValue::String(intrin)));
  return outer;
}

// Tiles the matmul block into 16x16x16 pieces and blockizes them; the state's block becomes
// the outer block, annotated with the compute and init intrinsics.
absl::Status TransformForTensorization(const MatmulMatch& match, TilingState* state) {
  Schedule& sch = state->sch;
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch.GetLoops(state->block));
  std::vector<LoopRV> outer_order;
  std::vector<LoopRV> inner(3);
  for (int i = 0; i < static_cast<int>(loops.size()); ++i) {
    const int role = i == match.m ? 0 : i == match.n ? 1 : i == match.k ? 2 : -1;
    if (role < 0) {
      outer_order.push_back(loops[i]);
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> parts,
                             sch.Split(loops[i], {InstValue(), InstValue::Int(kTile)}));
    outer_order.push_back(parts[0]);
    inner[role] = parts[1];
  }
  outer_order.insert(outer_order.end(), inner.begin(), inner.end());
  TESSERA_RETURN_IF_ERROR(sch.Reorder(outer_order));
  TESSERA_ASSIGN_OR_RETURN(BlockRV outer, sch.Blockize(inner[0]));
  const TensorCoreIntrins& g = *match.group;
  TESSERA_RETURN_IF_ERROR(sch.Annotate(outer, attr::kAutoTensorize, InstValue::String(g.sync)));
  TESSERA_RETURN_IF_ERROR(sch.Annotate(outer, attr::kAutoTensorizeInit, InstValue::String(g.fill)));
  TESSERA_RETURN_IF_ERROR(sch.Annotate(outer, attr::kWarpExecution, InstValue::Int(1)));
  state->block = outer;
  return absl::OkStatus();
}

// Fuses the buffer loops of the copy block `cache` and annotates it for a cooperative fetch.
absl::Status FuseForCooperativeFetch(const TilingConfig& config, Schedule* sch, BlockRV cache) {
  TESSERA_ASSIGN_OR_RETURN(Block block, sch->Get(cache));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(cache));
  const int ndim = block->writes[0].buffer.ndim();
  if (static_cast<int>(loops.size()) >= ndim && ndim >= 2) {
    TESSERA_RETURN_IF_ERROR(
        sch->Fuse(std::vector<LoopRV>(loops.end() - ndim, loops.end())).status());
  }
  return AnnotateCooperativeFetch(config, sch, cache);
}

// The write path block -> accumulator fragments -> shared (config.reuse_write) -> output: the
// accumulator copy under the threadIdx.y slot with blockized 16x16 stores, the shared copy
// under the slot of the write level, fused for a cooperative store. Both caches are made
// before either moves, since a cache copy starts next to the whole loop nest of the block.
absl::Status AddTensorCoreWrite(const TilingConfig& config, const TensorCoreIntrins& g,
                                TilingState* state) {
  Schedule& sch = state->sch;
  TESSERA_ASSIGN_OR_RETURN(BlockRV shared,
                           sch.CacheWrite(state->block, 0, config.reuse_write.scope));
  TESSERA_ASSIGN_OR_RETURN(BlockRV acc, sch.CacheWrite(state->block, 0, g.Scope("accumulator")));
  TESSERA_RETURN_IF_ERROR(
      sch.ReverseComputeAt(acc, state->tiles[2].back(), /*preserve_unit_loops=*/true));
  TESSERA_RETURN_IF_ERROR(BlockizeTile(&sch, acc, g.store).status());
  const int level = config.reuse_write.levels[0];
  TESSERA_RETURN_IF_ERROR(
      sch.ReverseComputeAt(shared, state->tiles[level - 1].back(), /*preserve_unit_loops=*/true));
  TESSERA_RETURN_IF_ERROR(FuseForCooperativeFetch(config, &sch, shared));
  state->write_reuse.emplace(0, shared);
  return absl::OkStatus();
}

// The read path input -> shared (config.reuse_read, first level) -> matrix_a / matrix_b fragments
// -> block: the fragment copies under the second reduction slot with blockized 16x16 loads,
// the shared copies under the slot of the read level, fused for a cooperative fetch, their rows
// padded against ldmatrix's bank conflicts.
absl::Status AddTensorCoreReads(const TilingConfig& config, const MatmulMatch& match,
                                TilingState* state) {
  Schedule& sch = state->sch;
  const LoopRV frag_at = state->tiles[config.ReductionSlots()[1]].back();
  const LoopRV shared_at = state->tiles[config.reuse_read.levels[0] - 1].back();
  const TensorCoreIntrins& g = *match.group;
  for (const auto& [index, scope, intrin] :
       {std::make_tuple(match.read_a, g.Scope("matrix_a"), g.load_a),
        std::make_tuple(match.read_b, g.Scope("matrix_b"), g.load_b)}) {
    TESSERA_ASSIGN_OR_RETURN(
        BlockRV shared,
        sch.CacheRead(state->block, index, config.reuse_read.scope, {state->block}));
    TESSERA_ASSIGN_OR_RETURN(BlockRV frag,
                             sch.CacheRead(state->block, index, scope, {state->block}));
    TESSERA_RETURN_IF_ERROR(sch.ComputeAt(frag, frag_at, /*preserve_unit_loops=*/true));
    TESSERA_RETURN_IF_ERROR(BlockizeTile(&sch, frag, intrin).status());
    TESSERA_RETURN_IF_ERROR(sch.ComputeAt(shared, shared_at, /*preserve_unit_loops=*/true));
    TESSERA_RETURN_IF_ERROR(FuseForCooperativeFetch(config, &sch, shared));
    TESSERA_ASSIGN_OR_RETURN(Block copy, sch.Get(shared));
    TESSERA_RETURN_IF_ERROR(sch.StorageAlign(shared, 0, copy->writes[0].buffer.ndim() - 2,
                                             kTensorCoreRowAlign,
                                             TensorCoreRowPad(copy->writes[0].buffer.dtype())));
    state->read_reuse.emplace(index, shared);
  }
  return absl::OkStatus();
}

class MultiLevelTilingTensorCoreRule final : public ScheduleRule {
 public:
  // `compute_capability`: the target's, 0 where it has no tensor cores. `family`: of the
  // fragments ("wmma" or "mma").
  MultiLevelTilingTensorCoreRule(TilingConfig config, int compute_capability, std::string family)
      : config_(std::move(config)),
        compute_capability_(compute_capability),
        family_(std::move(family)) {}

  std::string name() const override { return kTensorCoreOwner; }

  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const override {
    std::optional<MatmulMatch> match;
    if (compute_capability_ > 0 && NeedsMultiLevelTiling(*sch, block)) {
      absl::StatusOr<Block> b = sch->Get(block);
      if (b.ok()) match = MatchMatmul(*b, compute_capability_, family_);
    }
    if (!match.has_value()) return std::vector<Schedule>{std::move(*sch)};
    TilingState state{sch->Copy(), block, {}, {}, {}, {}};
    if (!TransformForTensorization(*match, &state).ok() ||
        !state.sch
             .Annotate(state.block, attr::kTilingStructure, InstValue::String(config_.structure))
             .ok()) {
      return std::vector<Schedule>{std::move(*sch)};
    }
    std::vector<TilingState> states = TileLoopNest(config_, std::move(state));
    states = ApplySubRule(std::move(states), [&](TilingState s) {
      return AddTensorCoreWrite(config_, *match->group, &s).ok() &&
                     AddTensorCoreReads(config_, *match, &s).ok() &&
                     SamplePipelineStages(config_, &s).ok()
                 ? std::vector<TilingState>{std::move(s)}
                 : std::vector<TilingState>{};
    });
    std::vector<Schedule> result;
    for (TilingState& s : states) result.push_back(std::move(s.sch));
    if (result.empty()) result.push_back(std::move(*sch));
    return result;
  }

 private:
  const TilingConfig config_;
  const int compute_capability_;
  const std::string family_;
};

}  // namespace

absl::StatusOr<ScheduleRulePtr> NewMultiLevelTilingTensorCore(const Target& target,
                                                              const nlohmann::json& params) {
  std::vector<std::string> keys = TilingConfigKeys();
  keys.push_back("intrinsics");
  TESSERA_ASSIGN_OR_RETURN(RuleParams parsed, RuleParams::Parse(kTensorCoreOwner, params, keys));
  // Tessera's own mma.sync where the target has it (sm_80), WMMA's fragments before.
  const std::string default_family =
      target.is_cuda() && target.compute_capability() >= 80 ? "mma" : "wmma";
  TESSERA_ASSIGN_OR_RETURN(std::string family, parsed.String("intrinsics", default_family));
  if (family != "mma" && family != "wmma") {
    return parsed.Error("intrinsics", "must be \"mma\" (sm_80 and later) or \"wmma\"");
  }
  if (family == "mma" && target.is_cuda() && target.compute_capability() < 80) {
    return parsed.Error("intrinsics", absl::StrCat("\"mma\" needs sm_80 or later; the target is ",
                                                   target.ToString()));
  }
  TilingConfig config = DefaultTilingConfig(target);
  config.structure = "SSSRRSRS";
  config.tile_binds = {"blockIdx.y", "blockIdx.x", "threadIdx.y"};
  config.max_innermost_factor = 4;
  config.vector_load_lens = {1, 2, 3, 4, 8, 16};
  config.reuse_read = ReuseConfig{ReuseConfig::Req::kMust, {4}, "shared"};
  config.reuse_write = ReuseConfig{ReuseConfig::Req::kMust, {2}, "shared"};
  TESSERA_RETURN_IF_ERROR(ReadTilingConfig(parsed, &config));
  if (config.structure != "SSSRRSRS") {
    return parsed.Error("structure", "must be \"SSSRRSRS\" (the tensor-core tiling)");
  }
  for (const char* key : {"reuse_read", "reuse_write"}) {
    const ReuseConfig& reuse =
        std::string(key) == "reuse_read" ? config.reuse_read : config.reuse_write;
    if (reuse.req != ReuseConfig::Req::kMust || reuse.levels.size() != 1) {
      return parsed.Error(key, "must be \"must\" at one level for tensor cores");
    }
  }
  for (const std::string& bind : config.tile_binds) {
    if (bind == "threadIdx.x") return parsed.Error("tile_binds", "must not bind threadIdx.x");
  }
  const bool has_tensor_cores = target.is_cuda() && target.compute_capability() >= 70;
  return std::make_shared<const MultiLevelTilingTensorCoreRule>(
      std::move(config), has_tensor_cores ? target.compute_capability() : 0, std::move(family));
}

}  // namespace tessera
