// Postprocessors turn a sampled schedule into a buildable one, or reject it. They run after a
// design-space trace is replayed and EnterPostproc is recorded; what they do is recorded in
// the schedule's trace after the marker, so replaying a stored full trace reproduces the
// exact program without running them again (docs/reference/metaschedule.md §2.6, 4.4).
//
// Each postprocessor is one file under rules/postproc/, made by a factory in
// rules/postprocs.h and registered by name in rules/registry.cc.
#ifndef TESSERA_RULES_POSTPROC_H_
#define TESSERA_RULES_POSTPROC_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
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

}  // namespace tessera

#endif  // TESSERA_RULES_POSTPROC_H_
