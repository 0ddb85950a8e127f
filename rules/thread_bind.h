// Binding the outer spatial loops of a GPU block to blockIdx.x / threadIdx.x
// (docs/reference/metaschedule.md §4.3.11). Shared by the AutoBind rule (sampled thread count), the
// RewriteUnboundBlock postprocessor (fixed thread count) and default schedules.
#ifndef TESSERA_RULES_THREAD_BIND_H_
#define TESSERA_RULES_THREAD_BIND_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "schedule/instruction.h"
#include "schedule/schedule.h"

namespace tessera {

// Chooses a thread extent <= max_extent (max_extent >= 1): returns the factor to split by,
// an int InstValue or an ExprRV (e.g. from a SampleCategorical recorded in `sch`).
using ThreadExtentSampler =
    std::function<absl::StatusOr<InstValue>(Schedule* sch, int64_t max_extent)>;

// The sampler of AutoBind: the candidates <= max_extent; none -> the constant max_extent,
// one -> that constant, several -> SampleCategorical over them with uniform probabilities.
ThreadExtentSampler MakeThreadExtentSampler(std::vector<int64_t> thread_extents);
// The sampler of RewriteUnboundBlock: always the constant max_extent.
ThreadExtentSampler MakeFixedThreadExtentSampler();

// Binds the leading spatial loops of `block` to blockIdx.x and threadIdx.x. The root block
// and blocks annotated meta_schedule.tiling_structure are skipped; a block already under
// both a blockIdx and a threadIdx loop (its own loops or those of the blocks around it, e.g.
// the inner block of a blockized tensor-core block) is left alone; a block under a blockIdx loop
// but no threadIdx loop is kInvalidArgument. A block without spatial loops gets a unit loop. The
// fused loop L of extent E is split [None, sampler(min(E, max_threads_per_block))] when
// E <= max_threadblocks * max_threads_per_block, else [None, max_threadblocks,
// max_threads_per_block] with the serial part moved innermost. On a failing primitive the
// schedule may be partly changed: callers that need rollback work on a Copy().
absl::Status BindBlockThreadIdx(Schedule* sch, BlockRV block, int64_t max_threadblocks,
                                int64_t max_threads_per_block, const ThreadExtentSampler& sampler);

}  // namespace tessera

#endif  // TESSERA_RULES_THREAD_BIND_H_
