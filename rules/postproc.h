// Postprocessors turn a sampled schedule into a buildable one, or reject it. They run after a
// design-space trace is replayed and EnterPostproc is recorded; what they do is recorded in
// the schedule's trace after the marker, so replaying a stored full trace reproduces the
// exact program without running them again (docs/reference/metaschedule.md §2.6, 4.4).
//
// Each postprocessor is one file under rules/postproc/, made by a factory below and
// registered by name in rules/registry.cc.
#ifndef TESSERA_RULES_POSTPROC_H_
#define TESSERA_RULES_POSTPROC_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/target.h"
#include "schedule/schedule.h"

namespace tessera {

class Postproc {
 public:
  virtual ~Postproc() = default;

  // The registered name, e.g. "VerifyGPUCode".
  virtual std::string name() const = 0;

  // Rewrites `*sch` in place. A non-OK status rejects the candidate and says why, naming the
  // block or loop ("2048 threads per block in block C exceed max_threads_per_block 1024");
  // the caller prefixes the postprocessor's name. After a rejection `*sch` is discarded.
  virtual absl::Status Apply(Schedule* sch) const = 0;
};

using PostprocPtr = std::shared_ptr<const Postproc>;

// Factories of the postprocessors (one file each under rules/postproc/). `params` as for the
// schedule rules (rules/schedule_rule.h).

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

#endif  // TESSERA_RULES_POSTPROC_H_
