// RandomComputeLocation (docs/reference/metaschedule.md §4.3.10): samples where a block of the root
// scope is computed (inline, root, or under one of its consumer's loops) and moves it there;
// then does the same for the rfactor producer AddRFactor marked.
#include <string>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "rules/analysis.h"
#include "rules/annotations.h"
#include "rules/rule/params.h"
#include "rules/schedule_rule.h"

namespace tessera {
namespace {

class RandomComputeLocation : public ScheduleRule {
 public:
  std::string name() const override { return "RandomComputeLocation"; }

  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const override {
    TESSERA_ASSIGN_OR_RETURN(bool applies, Applies(sch, block));
    if (!applies) return std::vector<Schedule>{*sch};
    // Collect the producer first: once the block is inlined it cannot be asked any more.
    TESSERA_ASSIGN_OR_RETURN(Block b, sch->Get(block));
    std::vector<BlockRV> producers;
    if (b->annotations.count(attr::kRandomComputeProducer) != 0) {
      TESSERA_ASSIGN_OR_RETURN(producers, sch->GetProducers(block));
      TESSERA_RETURN_IF_ERROR(sch->Unannotate(block, attr::kRandomComputeProducer));
      if (producers.size() != 1) producers.clear();
    }
    RandomlyComputeAt(sch, block);
    for (BlockRV producer : producers) RandomlyComputeAt(sch, producer);
    return std::vector<Schedule>{*sch};
  }

 private:
  // Not the root; a direct child of the root whose outermost loop holds only this block; not
  // multi-level tiled; has a consumer.
  static absl::StatusOr<bool> Applies(Schedule* sch, BlockRV block) {
    TESSERA_ASSIGN_OR_RETURN(StmtPath path, sch->GetPath(block));
    if (path.size() == 1) return false;
    if (!EnclosingBlockRealize(path).same_as(path.front())) return false;
    TESSERA_ASSIGN_OR_RETURN(Block b, sch->Get(block));
    if (IsMultiLevelTiled(b)) return false;
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(block));
    if (loops.empty()) return false;
    TESSERA_ASSIGN_OR_RETURN(std::vector<BlockRV> children, sch->GetChildBlocks(loops[0]));
    if (children.size() > 1) return false;
    TESSERA_ASSIGN_OR_RETURN(std::vector<BlockRV> consumers, sch->GetConsumers(block));
    return !consumers.empty();
  }

  // The sampled location only holds legal candidates; should ComputeAt still refuse, the
  // block stays where it is (the pure sampling instruction is then dead code).
  static void RandomlyComputeAt(Schedule* sch, BlockRV block) {
    absl::StatusOr<LoopRV> location = sch->SampleComputeLocation(block);
    if (location.ok()) {
      (void)sch->ComputeAt(block, *location, /*preserve_unit_loops=*/true);
    }
  }
};

}  // namespace

absl::StatusOr<ScheduleRulePtr> NewRandomComputeLocation(const Target&,
                                                         const nlohmann::json& params) {
  TESSERA_RETURN_IF_ERROR(RuleParams::Parse("RandomComputeLocation", params, {}).status());
  return std::make_shared<const RandomComputeLocation>();
}

}  // namespace tessera
