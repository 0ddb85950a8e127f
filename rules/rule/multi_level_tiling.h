// The pieces of multi-level tiling (docs/reference/metaschedule.md §4.3.4) shared by
// MultiLevelTiling and MultiLevelTilingTensorCore: the configuration, the state a tiling carries
// from one sub-rule to the next, and the sub-rules TileLoopNest, AddWriteReuse and AddReadReuse.
//
// A sub-rule maps one state to the states continuing it (0..k: several branch the design
// space). A primitive that fails inside a sub-rule drops that branch; it never returns a
// half-transformed schedule.
#ifndef TESSERA_RULES_RULE_MULTI_LEVEL_TILING_H_
#define TESSERA_RULES_RULE_MULTI_LEVEL_TILING_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/target.h"
#include "rules/rule/params.h"
#include "schedule/schedule.h"

namespace tessera {

// Whether and where a buffer gets a cache: req "no" / "may" / "must", levels are 1-based tile
// slots (the cache goes under the last loop of slot level-1), scope the cache's storage.
struct ReuseConfig {
  enum class Req { kNo, kMay, kMust };
  Req req = Req::kNo;
  std::vector<int> levels;
  std::string scope = "global";
};

struct TilingConfig {
  // 'S' and 'R' per tile slot, outermost first, e.g. "SSRSRS".
  std::string structure;
  std::vector<std::string> tile_binds;
  int64_t max_innermost_factor = 64;
  // Whether a loop whose extent has no vector-sized divisor gets a padded tiling
  // (SamplePaddedTile) on cpu. Off by default: even with write caches compacted under tail
  // guards, 64-trial tunes of GMM 127x257x509 were slower with it in every sitting measured,
  // though a 50257-row GEMV was faster (docs/design-spaces.md, "Odd extents").
  bool pad_odd_extents = false;
  std::vector<int64_t> vector_load_lens;
  ReuseConfig reuse_read;
  ReuseConfig reuse_write;
  // From a cuda target (-1 on cpu): enables the thread-extent annotations.
  int64_t warp_size = -1;
  int64_t max_threads_per_block = -1;
  // cuda sm_80 and later (cp.async): the loop the shared read caches sit at gets a sampled
  // software-pipeline depth (SamplePipelineStages).
  bool sample_pipeline_stages = false;

  // Slot indices of the 'S' and of the 'R' characters of `structure`.
  std::vector<int> SpatialSlots() const;
  std::vector<int> ReductionSlots() const;
};

// The keys MultiLevelTiling accepts: structure, tile_binds, max_innermost_factor,
// vector_load_lens, reuse_read, reuse_write, pad_odd_extents.
const std::vector<std::string>& TilingConfigKeys();

// The MultiLevelTiling defaults of `target` (docs/reference/metaschedule.md §4.2): cpu "SSRSRS"
// with reuse_write {may, [1, 2], global}; cuda "SSSRRSRS" bound to blockIdx.x / vthread.x /
// threadIdx.x, vector_load_lens [1, 2, 3, 4, 8, 16], reuse_read {must, [4], shared}, reuse_write
// {must, [3], local}, plus the target's warp size and thread limit, and sampled pipeline stages
// from sm_80.
TilingConfig DefaultTilingConfig(const Target& target);

// Overrides the fields of `config` whose keys `params` has. kInvalidArgument naming the key
// for a malformed value (a structure of other letters than S/R or without S, a level outside
// the slots, an unknown req, reuse_read "may", a non-positive max_innermost_factor).
absl::Status ReadTilingConfig(const RuleParams& params, TilingConfig* config);

// A tiling in progress: the schedule, the tiled block, the loops of each tile slot
// (outermost first; one fused loop for a bound slot) and the sampled factors of each slot
// (one per split loop), and the caches added so far by buffer index.
struct TilingState {
  Schedule sch;
  BlockRV block;
  std::vector<std::vector<LoopRV>> tiles;
  std::vector<std::vector<ExprRV>> tile_factors;
  std::map<int, BlockRV> read_reuse;
  std::map<int, BlockRV> write_reuse;
};

// Splits each spatial loop over the S slots and each reduction loop over the R slots
// (SamplePerfectTile + Split; a kind with one slot puts its loops there unsplit; with
// pad_odd_extents, on cpu, an extent without a divisor that is a multiple of 8 and at most
// max_innermost_factor gets SamplePaddedTile, a tiling that covers it with a predicated tail,
// instead), reorders the
// pieces slot by slot, fuses and binds the first tile_binds.size() slots, and on cuda
// annotates the thread extent limits. Requires a trivial binding. On cuda the factors of the
// slots bound to threadIdx (and to vthread) are sampled under product limits matching those
// annotations (and kMaxVirtualThreads), so every draw meets them (docs/design-spaces.md); no
// state when no tiling can.
std::vector<TilingState> TileLoopNest(const TilingConfig& config, TilingState state);

// Per config.reuse_write (or the block's meta_schedule.write_cache_level annotation, a list
// of levels or one level, which forces "must" there): a write cache (or an existing consumer that
// is one) placed under the last loop of each level's slot; "may" also keeps the state without a
// cache.
std::vector<TilingState> AddWriteReuse(const TilingConfig& config, TilingState state);

// Per config.reuse_read "must": for each level, one state in which every read buffer that is
// not written gets a cache computed under the last loop of the level's slot, its buffer loops
// fused and annotated for a cooperative fetch with a sampled vector length.
std::vector<TilingState> AddReadReuse(const TilingConfig& config, TilingState state);

// Where config.sample_pipeline_stages and the state has shared read caches: the number of shared
// buffers of the loop they sit at, sampled from {1, 2, 3, 4} (1: filled in place; 2 to 4:
// software-pipelined, filled by cp.async while the previous tiles compute;
// ir/loop_annotations.h kSoftwarePipelineStages).
absl::Status SamplePipelineStages(const TilingConfig& config, TilingState* state);

// Samples a vector length from config.vector_load_lens that suits the dtype of the buffer
// `cache` writes and annotates `cache` meta_schedule.cooperative_fetch with it (nothing when
// no length suits). Fails only on a stale block RV.
absl::Status AnnotateCooperativeFetch(const TilingConfig& config, Schedule* sch, BlockRV cache);

// Applies `sub_rule` to every state, concatenating the results in order.
template <typename SubRule>
std::vector<TilingState> ApplySubRule(std::vector<TilingState> states, const SubRule& sub_rule) {
  std::vector<TilingState> next;
  for (TilingState& state : states) {
    for (TilingState& s : sub_rule(std::move(state))) next.push_back(std::move(s));
  }
  return next;
}

}  // namespace tessera

#endif  // TESSERA_RULES_RULE_MULTI_LEVEL_TILING_H_
