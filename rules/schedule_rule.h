// Schedule rules build design spaces. A rule looks at one block of a schedule and returns the
// schedules that continue it: the input unchanged when the rule does not apply, one schedule
// with new (often sampling) instructions, or several to branch the design space. Rules are
// immutable once made, so one rule object serves every thread.
//
// Each rule is one file under rules/rule/, made by a factory below and
// registered by name in rules/registry.cc. Parameters are a JSON object; keys left out take
// the defaults of the target (docs/reference/metaschedule.md §4.2).
#ifndef TESSERA_RULES_SCHEDULE_RULE_H_
#define TESSERA_RULES_SCHEDULE_RULE_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/target.h"
#include "schedule/schedule.h"

namespace tessera {

class ScheduleRule {
 public:
  virtual ~ScheduleRule() = default;

  // The registered name, e.g. "MultiLevelTiling".
  virtual std::string name() const = 0;

  // The schedules continuing `*sch` at `block`. The rule may consume `*sch` (move it into the
  // result or Copy() it); the caller uses only the returned schedules. A rule that does not
  // apply returns {*sch} unchanged. A primitive failing inside a rule means the rule does not
  // apply in that branch: the branch is dropped or rolled back, never returned half-done.
  // Errors are reserved for broken invariants (a stale block RV, a bug).
  virtual absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const = 0;
};

using ScheduleRulePtr = std::shared_ptr<const ScheduleRule>;

// Factories of the schedule rules (one file each under rules/rule/). `params` is a JSON object;
// keys left out take the defaults for `target` from docs/reference/metaschedule.md §4.2 (CPU: the
// "llvm" column, CUDA: the "cuda" column). An unknown key or a value of the wrong type is
// kInvalidArgument naming the rule and the key.

// Inlines elementwise blocks into their consumers (and, on GPU, into their producer).
// Keys: into_producer, into_consumer, inline_const_tensor, disallow_if_then_else,
// require_injective, require_ordered (bools), disallow_op (list of call names, e.g. ["exp"]).
absl::StatusOr<ScheduleRulePtr> NewAutoInline(const Target& target, const nlohmann::json& params);

// Inlines blocks that write a 0-dimensional buffer from no reads (constant scalars).
absl::StatusOr<ScheduleRulePtr> NewInlineConstantScalars(const Target& target,
                                                         const nlohmann::json& params);

// Multi-level tiling. Keys: structure ("SSRSRS" cpu, "SSSRRSRS" cuda), tile_binds (list of
// thread axes), max_innermost_factor, vector_load_lens (list of ints), reuse_read and
// reuse_write ({"req": "no"|"may"|"must", "levels": [ints], "scope": "global"|"shared"|...}).
absl::StatusOr<ScheduleRulePtr> NewMultiLevelTiling(const Target& target,
                                                    const nlohmann::json& params);

// CPU: the register-tiled, packed-panel GEMM of the default schedule with sampled tiles, one
// design space per loop nest (rules/default/tiled_matmul.h). Keys: layouts (list of "packed",
// "packed_k_blocked", "unpacked"; all three by default), keep_untiled (bool, true: the block
// untouched is one more branch, for MultiLevelTiling). On other targets it never applies.
absl::StatusOr<ScheduleRulePtr> NewPackedPanelGemm(const Target& target,
                                                   const nlohmann::json& params);

// CPU: the register-tiled NHWC convolution of the default schedule (output pixels x output
// channels, rules/default/tiled_conv.h) with its tile sampled. Keys: keep_untiled (bool, true:
// the block untouched is one more branch, for MultiLevelTiling). On other targets it never
// applies.
absl::StatusOr<ScheduleRulePtr> NewPixelTiledConv(const Target& target,
                                                  const nlohmann::json& params);

// Multi-level tiling onto WMMA 16x16x16 float16 tensor cores (cuda, sm_70 and later; on other
// targets the rule never applies). Keys as MultiLevelTiling plus intrin_group.
absl::StatusOr<ScheduleRulePtr> NewMultiLevelTilingTensorCore(const Target& target,
                                                              const nlohmann::json& params);

// sm_90a: the Hopper GEMM of the default (rules/default/wgmma_gemm.h: wgmma from TMA tiles
// through mbarrier stages) with a branch per C tile and its k step and pipeline depth sampled.
// Keys: warpgroups (list of 1, 2), n (list of multiples of 8 up to 256; default every one that
// divides the GEMM's columns), stages (list, default 2 to 5).
// On other targets it never applies.
absl::StatusOr<ScheduleRulePtr> NewMultiLevelTilingWgmma(const Target& target,
                                                         const nlohmann::json& params);

// GPU: binds a reduction loop to threadIdx.x (a cross-thread reduction). Keys: thread_extents.
absl::StatusOr<ScheduleRulePtr> NewCrossThreadReduction(const Target& target,
                                                        const nlohmann::json& params);

// CPU: rfactor of reductions with little spatial parallelism. Keys: max_jobs_per_core,
// max_innermost_factor.
absl::StatusOr<ScheduleRulePtr> NewAddRFactor(const Target& target, const nlohmann::json& params);

// Annotates the root block with parallel / vectorize limits and a sampled unroll step, which
// RewriteParallelVectorizeUnroll turns into loops. Keys: max_jobs_per_core,
// max_vectorize_extent, unroll_max_steps, unroll_explicit.
absl::StatusOr<ScheduleRulePtr> NewParallelizeVectorizeUnroll(const Target& target,
                                                              const nlohmann::json& params);

// Samples where a block is computed (SampleComputeLocation + ComputeAt). No keys.
absl::StatusOr<ScheduleRulePtr> NewRandomComputeLocation(const Target& target,
                                                         const nlohmann::json& params);

// GPU: binds the outer spatial loops of unbound blocks to blockIdx.x / threadIdx.x with a
// sampled thread count. Keys: max_threadblocks, thread_extents.
absl::StatusOr<ScheduleRulePtr> NewAutoBind(const Target& target, const nlohmann::json& params);

}  // namespace tessera

#endif  // TESSERA_RULES_SCHEDULE_RULE_H_
