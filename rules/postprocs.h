// Factories of the postprocessors (one file each under rules/postproc/). `params` as in
// rules/schedule_rules.h.
#ifndef TESSERA_RULES_POSTPROCS_H_
#define TESSERA_RULES_POSTPROCS_H_

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "ir/target.h"
#include "rules/postproc.h"

namespace tessera {

// Rejects programs with a loop whose extent is not a constant.
absl::StatusOr<PostprocPtr> NewDisallowDynamicLoop(const Target& target,
                                                   const nlohmann::json& params);
// GPU: turns meta_schedule.cooperative_fetch annotations into thread-bound, vectorized copies.
absl::StatusOr<PostprocPtr> NewRewriteCooperativeFetch(const Target& target,
                                                       const nlohmann::json& params);
// GPU: binds every block not yet under blockIdx and threadIdx loops. Keys: max_threadblocks.
absl::StatusOr<PostprocPtr> NewRewriteUnboundBlock(const Target& target,
                                                   const nlohmann::json& params);
// Turns the root block's meta_schedule.parallel / vectorize / unroll_* annotations into
// parallel, vectorized and unroll-annotated loops.
absl::StatusOr<PostprocPtr> NewRewriteParallelVectorizeUnroll(const Target& target,
                                                              const nlohmann::json& params);
// Decomposes reduction blocks into init and update blocks.
absl::StatusOr<PostprocPtr> NewRewriteReductionBlock(const Target& target,
                                                     const nlohmann::json& params);
// Tensorizes blocks annotated meta_schedule.auto_tensorize. Keys: vectorize_init_loop.
absl::StatusOr<PostprocPtr> NewRewriteTensorize(const Target& target, const nlohmann::json& params);
// GPU: rejects programs over the target's thread, shared-memory or vthread limits, or outside
// the thread-extent bounds a rule annotated.
absl::StatusOr<PostprocPtr> NewVerifyGPUCode(const Target& target, const nlohmann::json& params);

}  // namespace tessera

#endif  // TESSERA_RULES_POSTPROCS_H_
