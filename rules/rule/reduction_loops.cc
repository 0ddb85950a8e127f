// Spatial loops outside, one fused reduction loop inside.
#include "rules/rule/reduction_loops.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rules/analysis.h"

namespace tessera {

absl::StatusOr<FusedReduction> ReorderAndFuseReductionLoops(Schedule* sch, BlockRV block) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(block));
  std::vector<std::optional<IterKind>> kinds = LoopIterKinds(*sch, block);
  if (kinds.size() != loops.size()) {
    return absl::InternalError(absl::StrCat("no loop kinds for block ", sch->Describe(block)));
  }
  std::vector<LoopRV> spatial;
  std::vector<LoopRV> reduction;
  for (size_t i = 0; i < loops.size(); ++i) {
    if (!kinds[i].has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("loop ", sch->Describe(loops[i]), " of block ",
                                                     sch->Describe(block),
                                                     " is both spatial and reduction"));
    }
    (*kinds[i] == IterKind::kSpatial ? spatial : reduction).push_back(loops[i]);
  }
  if (reduction.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("block ", sch->Describe(block), " has no reduction loop"));
  }
  std::vector<LoopRV> order = spatial;
  order.insert(order.end(), reduction.begin(), reduction.end());
  for (size_t i = 0; i < loops.size(); ++i) {
    if (order[i].id != loops[i].id) {
      TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
      break;
    }
  }
  FusedReduction result;
  result.num_spatial_loops = static_cast<int>(spatial.size());
  if (reduction.size() == 1) {
    result.reduction_loop = reduction[0];
  } else {
    TESSERA_ASSIGN_OR_RETURN(result.reduction_loop, sch->Fuse(reduction));
  }
  return result;
}

}  // namespace tessera
