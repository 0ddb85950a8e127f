// RewriteTensorize (docs/reference/metaschedule.md §4.4): every block annotated
// meta_schedule.auto_tensorize = NAME (by MultiLevelTilingTensorCore, or by RewriteReductionBlock
// for the init block of such a block) loses the annotation and is tensorized with the intrinsic
// NAME (schedule/tensor_intrin.h). A block that no longer matches the intrinsic stays as it is,
// which is correct, only slower, so that is logged rather than rejected. With
// vectorize_init_loop, an init block annotated with an empty NAME gets its innermost loop
// vectorized instead (default: on for cpu, off for cuda, as MetaSchedule's defaults).
#include <string>
#include <vector>

#include "base/logging.h"
#include "base/status_macros.h"
#include "ir/functor.h"
#include "rules/annotations.h"
#include "rules/postproc.h"
#include "rules/rule/params.h"

namespace tessera {
namespace {

struct TensorizeJob {
  std::string block;
  std::string intrin;  // empty: an init block to vectorize
};

std::vector<TensorizeJob> CollectJobs(const PrimFunc& func) {
  std::vector<TensorizeJob> jobs;
  PostOrderVisitStmts(func.body(), [&](const Stmt& s) {
    const auto* realize = s.as<BlockRealizeNode>();
    if (realize == nullptr) return;
    const Annotations& ann = realize->block->annotations;
    auto it = ann.find(attr::kAutoTensorize);
    if (it == ann.end()) return;
    const auto* intrin = std::get_if<std::string>(&it->second);
    jobs.push_back(TensorizeJob{realize->block->name, intrin ? *intrin : ""});
  });
  return jobs;
}

class RewriteTensorize final : public Postproc {
 public:
  explicit RewriteTensorize(bool vectorize_init_loop) : vectorize_init_loop_(vectorize_init_loop) {}

  std::string name() const override { return "RewriteTensorize"; }

  absl::Status Apply(Schedule* sch) const override {
    for (const TensorizeJob& job : CollectJobs(sch->func())) {
      TESSERA_ASSIGN_OR_RETURN(BlockRV block, sch->GetBlock(job.block));
      TESSERA_RETURN_IF_ERROR(sch->Unannotate(block, attr::kAutoTensorize));
      if (!job.intrin.empty()) {
        absl::Status s = sch->Tensorize(block, job.intrin);
        if (!s.ok()) {
          TESSERA_LOG(WARNING) << "RewriteTensorize: block " << job.block << " stays untensorized: "
                               << s.message();
        }
      } else if (vectorize_init_loop_) {
        TESSERA_RETURN_IF_ERROR(VectorizeInitLoop(sch, block));
      }
    }
    return absl::OkStatus();
  }

 private:
  // Vectorizes the innermost loop between the (blockized) init block and its single child.
  static absl::Status VectorizeInitLoop(Schedule* sch, BlockRV block) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<BlockRV> children, sch->GetChildBlocks(block));
    if (children.size() != 1) return absl::OkStatus();
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(children[0]));
    if (loops.empty()) return absl::OkStatus();
    TESSERA_ASSIGN_OR_RETURN(const ForNode* innermost, sch->Get(loops.back()));
    if (innermost->for_kind != ForKind::kSerial) return absl::OkStatus();
    return sch->Vectorize(loops.back());
  }

  bool vectorize_init_loop_;
};

}  // namespace

absl::StatusOr<PostprocPtr> NewRewriteTensorize(const Target& target,
                                                const nlohmann::json& params) {
  TESSERA_ASSIGN_OR_RETURN(RuleParams parsed,
                           RuleParams::Parse("RewriteTensorize", params, {"vectorize_init_loop"}));
  TESSERA_ASSIGN_OR_RETURN(bool vectorize_init_loop,
                           parsed.Bool("vectorize_init_loop", target.is_cpu()));
  return std::make_shared<const RewriteTensorize>(vectorize_init_loop);
}

}  // namespace tessera
