// MultiLevelTiling (docs/reference/metaschedule.md §4.3.4): tiles reduction blocks with data reuse
// (matmul, convolutions) into the loop structure of the configuration, then adds write and
// read caches and, on cuda sm_80+, a sampled software-pipeline depth for the shared read caches.
// The sub-rules are shared with MultiLevelTilingTensorCore.
#include "rules/rule/multi_level_tiling.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/verify_gpu.h"
#include "ir/loop_annotations.h"
#include "rules/analysis.h"
#include "rules/annotations.h"
#include "rules/schedule_rule.h"
#include "schedule/padded_tile.h"

namespace tessera {
namespace {

constexpr char kOwner[] = "MultiLevelTiling";

std::vector<int> SlotsOf(const std::string& structure, char kind) {
  std::vector<int> slots;
  for (int i = 0; i < static_cast<int>(structure.size()); ++i) {
    if (structure[i] == kind) slots.push_back(i);
  }
  return slots;
}

absl::Status ReadReuseConfig(const RuleParams& params, const std::string& key, int num_slots,
                             ReuseConfig* config) {
  const nlohmann::json* value = params.Get(key);
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_object()) return params.Error(key, "must be an object {req, levels, scope}");
  for (const auto& item : value->items()) {
    if (item.key() != "req" && item.key() != "levels" && item.key() != "scope") {
      return params.Error(
          key, absl::StrCat("has unknown field '", item.key(), "' (known: req, levels, scope)"));
    }
  }
  ReuseConfig parsed;
  if (value->contains("req")) {
    const nlohmann::json& req = (*value)["req"];
    if (!req.is_string())
      return params.Error(key, "field 'req' must be \"no\", \"may\" or \"must\"");
    const std::string text = req.get<std::string>();
    if (text == "no") {
      parsed.req = ReuseConfig::Req::kNo;
    } else if (text == "may") {
      parsed.req = ReuseConfig::Req::kMay;
    } else if (text == "must") {
      parsed.req = ReuseConfig::Req::kMust;
    } else {
      return params.Error(key, "field 'req' must be \"no\", \"may\" or \"must\"");
    }
  }
  if (value->contains("levels")) {
    const nlohmann::json& levels = (*value)["levels"];
    if (!levels.is_array()) return params.Error(key, "field 'levels' must be a list of ints");
    for (const nlohmann::json& level : levels) {
      if (!level.is_number_integer() || level.get<int64_t>() < 1 ||
          level.get<int64_t>() > num_slots) {
        return params.Error(key, absl::StrCat("field 'levels' must hold ints in [1, ", num_slots,
                                              "] (the tile slots)"));
      }
      parsed.levels.push_back(level.get<int>());
    }
  }
  if (value->contains("scope")) {
    const nlohmann::json& scope = (*value)["scope"];
    if (!scope.is_string() || scope.get<std::string>().empty()) {
      return params.Error(key, "field 'scope' must be a storage scope such as \"shared\"");
    }
    parsed.scope = scope.get<std::string>();
  }
  if (parsed.req != ReuseConfig::Req::kNo && parsed.levels.empty()) {
    return params.Error(key, "needs at least one level when req is not \"no\"");
  }
  *config = std::move(parsed);
  return absl::OkStatus();
}

// The last loop of slot level-1, where a cache of `level` goes.
LoopRV CacheLoop(const TilingState& state, int level) { return state.tiles[level - 1].back(); }

// The fused loop of `loops` (the loop itself when there is one).
absl::StatusOr<LoopRV> FuseAll(Schedule* sch, const std::vector<LoopRV>& loops) {
  if (loops.size() == 1) return loops[0];
  return sch->Fuse(loops);
}

// The slots of a GPU tiling bound to one kind of thread axis, and the bounds VerifyGPUCode
// puts on the product of their extents: threads per block (threadIdx.*) within the block's
// thread-extent annotations, virtual threads (vthread.*) at most kMaxVirtualThreads. While the
// loops are tiled one by one, `prior` collects the factors sampled in these slots.
struct BoundSlots {
  std::vector<bool> in_group;  // per slot
  int64_t min = 1;
  int64_t max = -1;
  std::vector<ExprRV> prior;
};

// The groups of `config`'s tile_binds that MultiLevelTiling samples under product limits (cuda
// only: none on cpu). A warp_execution block (tensor cores) runs whole warps, its threadIdx.x
// being the warp, so its threadIdx slots get a warp_size-th of the bounds.
std::vector<BoundSlots> BoundSlotGroups(const TilingConfig& config, const Block& block,
                                        int64_t low_threads) {
  if (config.warp_size == -1) return {};
  const bool warp_execution = block->annotations.count(attr::kWarpExecution) != 0;
  BoundSlots threads, vthreads;
  threads.in_group.assign(config.structure.size(), false);
  vthreads.in_group.assign(config.structure.size(), false);
  for (size_t i = 0; i < config.tile_binds.size() && i < config.structure.size(); ++i) {
    const std::string& axis = config.tile_binds[i];
    if (axis.rfind("threadIdx.", 0) == 0 && !(warp_execution && axis == "threadIdx.x")) {
      threads.in_group[i] = true;
    } else if (axis.rfind("vthread", 0) == 0) {
      vthreads.in_group[i] = true;
    }
  }
  const int64_t warp = warp_execution ? config.warp_size : 1;
  threads.min = std::max<int64_t>(1, (low_threads + warp - 1) / warp);
  threads.max = config.max_threads_per_block / warp;
  vthreads.max = kMaxVirtualThreads;
  return {threads, vthreads};
}

// The product limits of loop `i` of the nest, one per group with a slot of the loop: loop l of
// the nest is split over the slots *slots_of[l] and has extent extents[l].
std::vector<TileProductLimit> LimitsOfLoop(const std::vector<BoundSlots>& groups, size_t i,
                                           const std::vector<const std::vector<int>*>& slots_of,
                                           const std::vector<int64_t>& extents) {
  std::vector<TileProductLimit> limits;
  for (const BoundSlots& g : groups) {
    TileProductLimit limit;
    for (int j = 0; j < static_cast<int>(slots_of[i]->size()); ++j) {
      if (g.in_group[(*slots_of[i])[j]]) limit.positions.push_back(j);
    }
    if (limit.positions.empty()) continue;
    for (size_t later = i + 1; later < slots_of.size(); ++later) {
      const std::vector<int>& slots = *slots_of[later];
      if (std::any_of(slots.begin(), slots.end(), [&](int s) { return g.in_group[s]; })) {
        limit.later.push_back(extents[later]);
      }
    }
    limit.prior = g.prior;
    limit.min = g.min;
    limit.max = g.max;
    limits.push_back(std::move(limit));
  }
  return limits;
}

// `state` with its schedule forked (the RVs stay valid in the copy).
TilingState Fork(TilingState* state) {
  TilingState copy = *state;
  copy.sch = state->sch.Copy();
  return copy;
}

}  // namespace

std::vector<int> TilingConfig::SpatialSlots() const { return SlotsOf(structure, 'S'); }
std::vector<int> TilingConfig::ReductionSlots() const { return SlotsOf(structure, 'R'); }

const std::vector<std::string>& TilingConfigKeys() {
  static const std::vector<std::string> keys = {
      "structure",  "tile_binds",  "max_innermost_factor", "vector_load_lens",
      "reuse_read", "reuse_write", "pad_odd_extents"};
  return keys;
}

TilingConfig DefaultTilingConfig(const Target& target) {
  TilingConfig config;
  config.max_innermost_factor = 64;
  if (target.is_cpu()) {
    config.structure = "SSRSRS";
    config.reuse_write = ReuseConfig{ReuseConfig::Req::kMay, {1, 2}, "global"};
    return config;
  }
  config.structure = "SSSRRSRS";
  config.tile_binds = {"blockIdx.x", "vthread.x", "threadIdx.x"};
  config.vector_load_lens = {1, 2, 3, 4, 8, 16};
  config.reuse_read = ReuseConfig{ReuseConfig::Req::kMust, {4}, "shared"};
  config.reuse_write = ReuseConfig{ReuseConfig::Req::kMust, {3}, "local"};
  config.warp_size = target.warp_size();
  config.max_threads_per_block = target.max_threads_per_block();
  config.sample_pipeline_stages = target.is_cuda() && target.compute_capability() >= 80;
  return config;
}

absl::Status ReadTilingConfig(const RuleParams& params, TilingConfig* config) {
  TESSERA_ASSIGN_OR_RETURN(config->structure, params.String("structure", config->structure));
  if (config->structure.empty() || config->structure.find_first_not_of("SR") != std::string::npos ||
      config->SpatialSlots().empty()) {
    return params.Error("structure", "must be a non-empty string of 'S' and 'R' with an 'S'");
  }
  TESSERA_ASSIGN_OR_RETURN(config->tile_binds, params.StringList("tile_binds", config->tile_binds));
  if (config->tile_binds.size() > config->structure.size()) {
    return params.Error("tile_binds", "must not name more axes than the structure has slots");
  }
  TESSERA_ASSIGN_OR_RETURN(config->max_innermost_factor,
                           params.Int("max_innermost_factor", config->max_innermost_factor));
  if (config->max_innermost_factor < 1 && config->max_innermost_factor != -1) {
    return params.Error("max_innermost_factor", "must be positive (or -1: no limit)");
  }
  TESSERA_ASSIGN_OR_RETURN(config->pad_odd_extents,
                           params.Bool("pad_odd_extents", config->pad_odd_extents));
  TESSERA_ASSIGN_OR_RETURN(config->vector_load_lens,
                           params.IntList("vector_load_lens", config->vector_load_lens));
  for (int64_t len : config->vector_load_lens) {
    if (len < 1) return params.Error("vector_load_lens", "must hold positive ints");
  }
  const int num_slots = static_cast<int>(config->structure.size());
  TESSERA_RETURN_IF_ERROR(ReadReuseConfig(params, "reuse_read", num_slots, &config->reuse_read));
  TESSERA_RETURN_IF_ERROR(ReadReuseConfig(params, "reuse_write", num_slots, &config->reuse_write));
  if (config->reuse_read.req == ReuseConfig::Req::kMay) {
    return params.Error("reuse_read", "supports only req \"no\" or \"must\"");
  }
  for (const ReuseConfig* reuse : {&config->reuse_read, &config->reuse_write}) {
    for (int level : reuse->levels) {
      if (level > num_slots) {
        return params.Error(reuse == &config->reuse_read ? "reuse_read" : "reuse_write",
                            absl::StrCat("level ", level, " is beyond the ", num_slots,
                                         " slots of structure ", config->structure));
      }
    }
  }
  return absl::OkStatus();
}

std::vector<TilingState> TileLoopNest(const TilingConfig& config, TilingState state) {
  Schedule& sch = state.sch;
  absl::StatusOr<Block> block = sch.Get(state.block);
  absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(state.block);
  if (!block.ok() || !loops.ok() || loops->size() != (*block)->iter_vars.size()) return {};
  const std::vector<IterKind> kinds = BlockIterKinds(*block);
  const std::vector<int> s_slots = config.SpatialSlots();
  const std::vector<int> r_slots = config.ReductionSlots();
  // Per loop: its slots and its constant extent (-1 if not constant).
  std::vector<const std::vector<int>*> slots_of;
  std::vector<int64_t> extents;
  bool constant = true;
  int64_t spatial_product = 1;
  for (size_t i = 0; i < loops->size(); ++i) {
    slots_of.push_back(kinds[i] == IterKind::kSpatial ? &s_slots : &r_slots);
    if (slots_of.back()->empty()) return {};  // A reduction loop but no R slot: nowhere to put it.
    absl::StatusOr<const ForNode*> node = sch.Get((*loops)[i]);
    const int64_t* extent = node.ok() ? AsConstInt((*node)->extent) : nullptr;
    extents.push_back(extent != nullptr ? *extent : -1);
    constant = constant && extent != nullptr;
    if (kinds[i] == IterKind::kSpatial && spatial_product != -1) {
      spatial_product = extent != nullptr ? spatial_product * *extent : -1;
    }
  }
  const int64_t low_threads = config.warp_size != -1 && spatial_product > 2 * config.warp_size
                                  ? config.warp_size
                                  : int64_t{1};
  // On cuda, the factors in bound slots are sampled under VerifyGPUCode's limits, so that
  // draws meet them. Not when an extent is unknown, nor when a bound slot holds a loop
  // unsplit (a kind with one slot; custom structures only): VerifyGPUCode alone judges those.
  std::vector<BoundSlots> groups;
  if (constant) groups = BoundSlotGroups(config, *block, low_threads);
  for (size_t i = 0; i < loops->size() && !groups.empty(); ++i) {
    const int slot = (*slots_of[i])[0];
    if (slots_of[i]->size() == 1 && (groups[0].in_group[slot] || groups[1].in_group[slot])) {
      groups.clear();
    }
  }
  std::vector<std::vector<LoopRV>> tiles(config.structure.size());
  std::vector<std::vector<ExprRV>> factors(config.structure.size());
  for (size_t i = 0; i < loops->size(); ++i) {
    const LoopRV loop = (*loops)[i];
    const std::vector<int>& slots = *slots_of[i];
    if (slots.size() == 1) {
      tiles[slots[0]].push_back(loop);
      continue;
    }
    const std::vector<TileProductLimit> limits = LimitsOfLoop(groups, i, slots_of, extents);
    // With pad_odd_extents, on cpu, an extent without a divisor fit for a register tile (a
    // prime such as 127, or 2 * 131) gets a padded tiling: a split whose tail is guarded by a
    // predicate, which the C code generator partitions (docs/design-spaces.md, "Odd extents").
    const bool padded = config.pad_odd_extents && config.warp_size == -1 && extents[i] != -1 &&
                        !padded_tile::HasUsefulDivisor(extents[i], config.max_innermost_factor);
    absl::StatusOr<std::vector<ExprRV>> sampled =
        padded ? sch.SamplePaddedTile(loop, static_cast<int>(slots.size()),
                                      config.max_innermost_factor)
               : sch.SamplePerfectTile(loop, static_cast<int>(slots.size()),
                                       config.max_innermost_factor, limits);
    if (!sampled.ok()) return {};
    for (BoundSlots& g : groups) {
      for (size_t j = 0; j < slots.size(); ++j) {
        if (g.in_group[slots[j]]) g.prior.push_back((*sampled)[j]);
      }
    }
    std::vector<InstValue> split_factors;
    for (ExprRV f : *sampled) split_factors.push_back(InstValue::Of(f));
    absl::StatusOr<std::vector<LoopRV>> pieces = sch.Split(loop, split_factors);
    if (!pieces.ok()) return {};
    for (size_t j = 0; j < slots.size(); ++j) {
      tiles[slots[j]].push_back((*pieces)[j]);
      factors[slots[j]].push_back((*sampled)[j]);
    }
  }
  std::vector<LoopRV> order;
  for (const std::vector<LoopRV>& slot : tiles) order.insert(order.end(), slot.begin(), slot.end());
  if (!sch.Reorder(order).ok()) return {};
  for (size_t i = 0; i < config.tile_binds.size() && i < tiles.size(); ++i) {
    if (tiles[i].empty()) continue;
    absl::StatusOr<LoopRV> fused = FuseAll(&sch, tiles[i]);
    if (!fused.ok() || !sch.Bind(*fused, config.tile_binds[i]).ok()) return {};
    tiles[i] = {*fused};
  }
  if (config.warp_size != -1) {
    if (!sch.Annotate(state.block, attr::kThreadExtentLowInclusive, InstValue::Int(low_threads))
             .ok() ||
        !sch.Annotate(state.block, attr::kThreadExtentHighInclusive,
                      InstValue::Int(config.max_threads_per_block))
             .ok()) {
      return {};
    }
  }
  state.tiles = std::move(tiles);
  state.tile_factors = std::move(factors);
  return {std::move(state)};
}

std::vector<TilingState> AddWriteReuse(const TilingConfig& config, TilingState state) {
  ReuseConfig reuse = config.reuse_write;
  absl::StatusOr<Block> block = state.sch.Get(state.block);
  if (!block.ok()) return {};
  auto forced = (*block)->annotations.find(attr::kWriteCacheLevel);
  if (forced != (*block)->annotations.end()) {
    if (const auto* levels = std::get_if<std::vector<int64_t>>(&forced->second)) {
      reuse.req = ReuseConfig::Req::kMust;
      reuse.levels.assign(levels->begin(), levels->end());
    } else if (const auto* level = std::get_if<int64_t>(&forced->second)) {
      reuse.req = ReuseConfig::Req::kMust;
      reuse.levels = {static_cast<int>(*level)};
    }
  }
  if (reuse.req == ReuseConfig::Req::kNo) return {std::move(state)};
  for (int level : reuse.levels) {
    if (level < 1 || level > static_cast<int>(state.tiles.size()) ||
        state.tiles[level - 1].empty()) {
      return {};
    }
  }
  // Each level: a fork of `state` with `cache` moved under that level's slot.
  auto place_at_levels = [&](TilingState* base, BlockRV cache, std::vector<TilingState>* out) {
    for (int level : reuse.levels) {
      TilingState s = Fork(base);
      if (s.sch.ReverseComputeAt(cache, CacheLoop(s, level), /*preserve_unit_loops=*/true).ok()) {
        out->push_back(std::move(s));
      }
    }
  };
  std::vector<TilingState> results;
  if (reuse.req == ReuseConfig::Req::kMay) {
    absl::StatusOr<std::vector<BlockRV>> consumers = state.sch.GetConsumers(state.block);
    if (consumers.ok() && consumers->size() == 1 && IsWriteCache(state.sch, (*consumers)[0])) {
      const BlockRV consumer = (*consumers)[0];
      state.write_reuse.emplace(0, consumer);
      place_at_levels(&state, consumer, &results);
      results.push_back(std::move(state));
      return results;
    }
    results.push_back(Fork(&state));
  }
  absl::StatusOr<BlockRV> cache = state.sch.CacheWrite(state.block, 0, reuse.scope);
  if (!cache.ok()) return results;
  state.write_reuse.emplace(0, *cache);
  place_at_levels(&state, *cache, &results);
  return results;
}

absl::Status AnnotateCooperativeFetch(const TilingConfig& config, Schedule* sch, BlockRV cache) {
  TESSERA_ASSIGN_OR_RETURN(Block block, sch->Get(cache));
  if (block->writes.empty()) return absl::OkStatus();
  const DataType dtype = block->writes[0].buffer.dtype();
  std::vector<int64_t> lens;
  for (int64_t len : config.vector_load_lens) {
    bool ok = true;
    if (dtype == DataType::Float32()) {
      ok = len <= 4;
    } else if (dtype.is_float() && dtype.bits() == 16) {  // float16, bfloat16: <= 16 bytes
      ok = len <= 8 && (len == 1 || len % 2 == 0);
    } else if (dtype == DataType::Int8()) {
      ok = len <= 16;
    }
    if (ok) lens.push_back(len);
  }
  if (lens.empty()) return absl::OkStatus();
  std::vector<double> probs(lens.size(), 1.0 / static_cast<double>(lens.size()));
  TESSERA_ASSIGN_OR_RETURN(ExprRV len, sch->SampleCategorical(lens, probs));
  return sch->Annotate(cache, attr::kCooperativeFetch, InstValue::Of(len));
}

std::vector<TilingState> AddReadReuse(const TilingConfig& config, TilingState state) {
  const ReuseConfig& reuse = config.reuse_read;
  if (reuse.req == ReuseConfig::Req::kNo) return {std::move(state)};
  absl::StatusOr<Block> block = state.sch.Get(state.block);
  if (!block.ok()) return {};
  // The read buffers that the block does not also write, with their ranks.
  std::vector<std::pair<int, int>> reads;
  for (int i = 0; i < static_cast<int>((*block)->reads.size()); ++i) {
    const Buffer& buffer = (*block)->reads[i].buffer;
    bool written = false;
    for (const BufferRegion& w : (*block)->writes) written = written || w.buffer.same_as(buffer);
    if (!written) reads.emplace_back(i, buffer.ndim());
  }
  std::vector<TilingState> results;
  for (int level : reuse.levels) {
    if (level < 1 || level > static_cast<int>(state.tiles.size()) ||
        state.tiles[level - 1].empty()) {
      continue;
    }
    TilingState s = Fork(&state);
    Schedule& sch = s.sch;
    bool ok = true;
    for (const auto& [index, ndim] : reads) {
      absl::StatusOr<BlockRV> cache = sch.CacheRead(s.block, index, reuse.scope, {s.block});
      ok = cache.ok() &&
           sch.ComputeAt(*cache, CacheLoop(s, level), /*preserve_unit_loops=*/true).ok();
      if (!ok) break;
      absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(*cache);
      ok = loops.ok() && static_cast<int>(loops->size()) >= ndim;
      if (ok && ndim >= 2) {
        ok = sch.Fuse(std::vector<LoopRV>(loops->end() - ndim, loops->end())).ok();
      }
      ok = ok && AnnotateCooperativeFetch(config, &sch, *cache).ok();
      if (!ok) break;
      s.read_reuse.emplace(index, *cache);
    }
    if (ok) results.push_back(std::move(s));
  }
  return results;
}

absl::Status SamplePipelineStages(const TilingConfig& config, TilingState* state) {
  if (!config.sample_pipeline_stages || state->read_reuse.empty() ||
      config.reuse_read.scope != "shared") {
    return absl::OkStatus();
  }
  constexpr int64_t kStages[] = {1, 2, 3, 4};
  Schedule& sch = state->sch;
  const std::vector<int64_t> stages(std::begin(kStages), std::end(kStages));
  const std::vector<double> probs(stages.size(), 1.0 / static_cast<double>(stages.size()));
  TESSERA_ASSIGN_OR_RETURN(ExprRV sampled, sch.SampleCategorical(stages, probs));
  return sch.Annotate(state->tiles[config.reuse_read.levels[0] - 1].back(), kSoftwarePipelineStages,
                      InstValue::Of(sampled));
}

namespace {

class MultiLevelTilingRule final : public ScheduleRule {
 public:
  explicit MultiLevelTilingRule(TilingConfig config) : config_(std::move(config)) {}

  std::string name() const override { return kOwner; }

  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const override {
    if (!NeedsMultiLevelTiling(*sch, block)) return std::vector<Schedule>{std::move(*sch)};
    Schedule original = sch->Copy();
    TilingState state{std::move(*sch), block, {}, {}, {}, {}};
    std::vector<TilingState> states;
    if (state.sch.Annotate(block, attr::kTilingStructure, InstValue::String(config_.structure))
            .ok()) {
      states.push_back(std::move(state));
    }
    states = ApplySubRule(std::move(states),
                          [this](TilingState s) { return TileLoopNest(config_, std::move(s)); });
    states = ApplySubRule(std::move(states),
                          [this](TilingState s) { return AddWriteReuse(config_, std::move(s)); });
    states = ApplySubRule(std::move(states),
                          [this](TilingState s) { return AddReadReuse(config_, std::move(s)); });
    states = ApplySubRule(std::move(states), [this](TilingState s) {
      return SamplePipelineStages(config_, &s).ok() ? std::vector<TilingState>{std::move(s)}
                                                    : std::vector<TilingState>{};
    });
    std::vector<Schedule> result;
    for (TilingState& s : states) result.push_back(std::move(s.sch));
    if (result.empty()) result.push_back(std::move(original));
    return result;
  }

 private:
  const TilingConfig config_;
};

}  // namespace

absl::StatusOr<ScheduleRulePtr> NewMultiLevelTiling(const Target& target,
                                                    const nlohmann::json& params) {
  TESSERA_ASSIGN_OR_RETURN(RuleParams parsed,
                           RuleParams::Parse(kOwner, params, TilingConfigKeys()));
  TilingConfig config = DefaultTilingConfig(target);
  TESSERA_RETURN_IF_ERROR(ReadTilingConfig(parsed, &config));
  return std::make_shared<const MultiLevelTilingRule>(std::move(config));
}

}  // namespace tessera
