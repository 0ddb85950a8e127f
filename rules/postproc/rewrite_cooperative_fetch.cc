// RewriteCooperativeFetch (docs/reference/metaschedule.md §4.4, GPU): turns each
// Annotate(block, meta_schedule.cooperative_fetch, v) of the trace (MultiLevelTiling's
// shared-memory copies) into a copy shared by the threads of the thread block: the annotation
// is removed and the copy's innermost (fused) loop is split [None, ty, tx, lanes], the middle
// parts bound to threadIdx.y / threadIdx.x with the extents in effect when the annotation was
// recorded (the latest Bind of a threadIdx.y / .x loop in the trace; a warp_execution
// annotation means threadIdx.x = the warp size) and the lane loop vectorized. ty is left out
// when nothing was bound to threadIdx.y; lanes = 1 (no lane loop) when v does not divide the
// loop's extent or the copy moves values wider than 4 bytes.
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rules/annotations.h"
#include "rules/postproc.h"
#include "rules/rule/params.h"
#include "schedule/instruction_kinds.h"

namespace tessera {
namespace {

constexpr int64_t kMaxLaneBytes = 4;

// One annotated copy and the thread extents in effect at its annotation (-1: not bound).
struct FetchTask {
  BlockRV block;
  InstValue lanes;  // int or ExprRV
  int64_t thread_x = -1;
  int64_t thread_y = -1;
};

bool TouchesWideValues(const Block& block) {
  for (const auto* regions : {&block->reads, &block->writes}) {
    for (const BufferRegion& r : *regions) {
      if (r.buffer.dtype().bytes() > kMaxLaneBytes) return true;
    }
  }
  return false;
}

class RewriteCooperativeFetch final : public Postproc {
 public:
  explicit RewriteCooperativeFetch(int64_t warp_size) : warp_size_(warp_size) {}

  std::string name() const override { return "RewriteCooperativeFetch"; }

  absl::Status Apply(Schedule* sch) const override {
    std::vector<FetchTask> tasks;
    int64_t thread_x = -1, thread_y = -1;
    for (const Instruction& inst : sch->trace().insts()) {
      if (inst.kind == &kBind) {
        const std::string& axis = inst.attrs[0].as_string();
        if (axis != "threadIdx.x" && axis != "threadIdx.y") continue;
        // A bound loop a later primitive replaced no longer says anything: keep the last value.
        absl::StatusOr<const ForNode*> loop = sch->Get(LoopRV{inst.inputs[0].rv_id()});
        if (!loop.ok()) continue;
        const int64_t* extent = AsConstInt((*loop)->extent);
        (axis == "threadIdx.x" ? thread_x : thread_y) = extent ? *extent : -1;
      } else if (inst.kind == &kAnnotate && inst.inputs[0].rv_kind() == RVKind::kBlock) {
        const std::string& key = inst.attrs[0].as_string();
        if (key == attr::kWarpExecution) thread_x = warp_size_;
        if (key == attr::kCooperativeFetch) {
          tasks.push_back(
              FetchTask{BlockRV{inst.inputs[0].rv_id()}, inst.inputs[1], thread_x, thread_y});
        }
      }
    }
    for (const FetchTask& task : tasks) TESSERA_RETURN_IF_ERROR(Rewrite(sch, task));
    return absl::OkStatus();
  }

 private:
  static absl::Status Rewrite(Schedule* sch, const FetchTask& task) {
    absl::StatusOr<Block> block = sch->Get(task.block);
    // The copy was inlined or the annotation removed since: nothing to do.
    if (!block.ok() || (*block)->annotations.count(attr::kCooperativeFetch) == 0) {
      return absl::OkStatus();
    }
    if (task.thread_x < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "no threadIdx.x loop of constant extent was bound before the cooperative fetch of block ",
          (*block)->name));
    }
    int64_t lanes = 1;
    if (task.lanes.is_int()) {
      lanes = task.lanes.as_int();
    } else {
      TESSERA_ASSIGN_OR_RETURN(lanes, sch->Get(ExprRV{task.lanes.rv_id()}));
    }
    TESSERA_RETURN_IF_ERROR(sch->Unannotate(task.block, attr::kCooperativeFetch));
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(task.block));
    if (loops.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cooperative fetch block ", (*block)->name, " has no loop to split"));
    }
    TESSERA_ASSIGN_OR_RETURN(const ForNode* fused, sch->Get(loops.back()));
    const int64_t* extent = AsConstInt(fused->extent);
    if (lanes < 1 || extent == nullptr || *extent % lanes != 0 || TouchesWideValues(*block)) {
      lanes = 1;
    }
    std::vector<InstValue> factors = {InstValue()};
    std::vector<const char*> binds;
    if (task.thread_y > 0) {
      factors.push_back(InstValue::Int(task.thread_y));
      binds.push_back("threadIdx.y");
    }
    factors.push_back(InstValue::Int(task.thread_x));
    binds.push_back("threadIdx.x");
    if (lanes > 1) factors.push_back(InstValue::Int(lanes));
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> parts, sch->Split(loops.back(), factors));
    for (size_t i = 0; i < binds.size(); ++i) {
      TESSERA_RETURN_IF_ERROR(sch->Bind(parts[i + 1], binds[i]));
    }
    if (lanes > 1) TESSERA_RETURN_IF_ERROR(sch->Vectorize(parts.back()));
    return absl::OkStatus();
  }

  int64_t warp_size_;
};

}  // namespace

absl::StatusOr<PostprocPtr> NewRewriteCooperativeFetch(const Target& target,
                                                       const nlohmann::json& params) {
  TESSERA_RETURN_IF_ERROR(RuleParams::Parse("RewriteCooperativeFetch", params, {}).status());
  if (!target.is_cuda()) {
    return absl::InvalidArgumentError(absl::StrCat("RewriteCooperativeFetch: target ",
                                                   target.ToString(), " is not a cuda target"));
  }
  return std::make_shared<const RewriteCooperativeFetch>(target.warp_size());
}

}  // namespace tessera
