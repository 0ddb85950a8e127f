// Loop-nest preparation shared by the reduction rules (AddRFactor, CrossThreadReduction):
// MetaSchedule's ReorderAndFuseReductionLoops.
#ifndef TESSERA_RULES_RULE_REDUCTION_LOOPS_H_
#define TESSERA_RULES_RULE_REDUCTION_LOOPS_H_

#include "absl/status/statusor.h"
#include "schedule/schedule.h"

namespace tessera {

struct FusedReduction {
  LoopRV reduction_loop;  // the (fused) reduction loop, innermost
  int num_spatial_loops = 0;
};

// Reorders the loops of `block` so that its spatial loops come first (keeping their order),
// then fuses its reduction loops into one. kInvalidArgument when a loop is of mixed kind, the
// block has no reduction loop, or Reorder/Fuse fail (the schedule may then be partly changed:
// callers work on a Copy()).
absl::StatusOr<FusedReduction> ReorderAndFuseReductionLoops(Schedule* sch, BlockRV block);

}  // namespace tessera

#endif  // TESSERA_RULES_RULE_REDUCTION_LOOPS_H_
