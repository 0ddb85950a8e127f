// RewriteReductionBlock (docs/reference/metaschedule.md §4.4): splits the init statement of every
// reduction block out into its own block with DecomposeReduction, placed before the block's
// first loop that is not purely spatial, so the backends see a plain initialization loop nest
// and a plain update. Blocks whose reduction runs across threads (a reduction variable bound
// through a thread-bound loop) keep their init: the GPU lowering handles them as cross-thread
// reductions. A block with the meta_schedule.auto_tensorize annotation passes its
// meta_schedule.auto_tensorize_init intrinsic (or "" for none) to the init block as its
// meta_schedule.auto_tensorize, for RewriteTensorize.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/functor.h"
#include "rules/analysis.h"
#include "rules/annotations.h"
#include "rules/postproc.h"
#include "rules/rule/params.h"

namespace tessera {
namespace {

// Names of the blocks with an init statement and a reduction variable whose bindings use no
// thread-bound loop variable, in program order.
class DecomposableBlockFinder : public IRVisitor {
 public:
  std::vector<std::string> names;

 protected:
  void VisitStmt_(const ForNode* op) override {
    bool bound = op->for_kind == ForKind::kThreadBinding;
    if (bound) thread_vars_.insert(op->loop_var.get());
    IRVisitor::VisitStmt_(op);
    if (bound) thread_vars_.erase(op->loop_var.get());
  }
  void VisitStmt_(const BlockRealizeNode* op) override {
    const Block& block = op->block;
    if (block->init.defined() && !IsSpatialBlock(block) && !ReducesAcrossThreads(op)) {
      names.push_back(block->name);
    }
    IRVisitor::VisitStmt_(op);
  }

 private:
  bool ReducesAcrossThreads(const BlockRealizeNode* op) const {
    for (size_t i = 0; i < op->block->iter_vars.size(); ++i) {
      if (op->block->iter_vars[i].kind != IterKind::kReduction) continue;
      if (UsesVar(op->iter_values[i],
                  [&](const VarNode* v) { return thread_vars_.count(v) != 0; })) {
        return true;
      }
    }
    return false;
  }

  std::set<const VarNode*> thread_vars_;
};

std::optional<std::string> StringAnnotation(const Block& block, const char* key) {
  auto it = block->annotations.find(key);
  if (it == block->annotations.end()) return std::nullopt;
  const auto* value = std::get_if<std::string>(&it->second);
  return value ? std::optional<std::string>(*value) : std::nullopt;
}

class RewriteReductionBlock final : public Postproc {
 public:
  std::string name() const override { return "RewriteReductionBlock"; }

  absl::Status Apply(Schedule* sch) const override {
    DecomposableBlockFinder finder;
    finder.VisitStmt(sch->func().body());
    for (const std::string& block_name : finder.names) {
      TESSERA_ASSIGN_OR_RETURN(BlockRV block_rv, sch->GetBlock(block_name));
      std::vector<std::optional<IterKind>> kinds = LoopIterKinds(*sch, block_rv);
      size_t point = 0;
      while (point < kinds.size() && kinds[point] == IterKind::kSpatial) ++point;
      // Every loop spatial: the reduction variables are bound to constants, the init stays.
      if (point == kinds.size()) continue;
      TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(block_rv));
      TESSERA_ASSIGN_OR_RETURN(Block block, sch->Get(block_rv));
      TESSERA_ASSIGN_OR_RETURN(BlockRV init_rv, sch->DecomposeReduction(block_rv, loops[point]));
      if (!StringAnnotation(block, attr::kAutoTensorize)) continue;
      std::optional<std::string> init_intrin = StringAnnotation(block, attr::kAutoTensorizeInit);
      TESSERA_RETURN_IF_ERROR(sch->Annotate(init_rv, attr::kAutoTensorize,
                                            InstValue::String(init_intrin.value_or(""))));
      if (init_intrin) {
        TESSERA_RETURN_IF_ERROR(sch->Unannotate(block_rv, attr::kAutoTensorizeInit));
      }
    }
    return absl::OkStatus();
  }
};

}  // namespace

absl::StatusOr<PostprocPtr> NewRewriteReductionBlock(const Target& /*target*/,
                                                     const nlohmann::json& params) {
  TESSERA_RETURN_IF_ERROR(RuleParams::Parse("RewriteReductionBlock", params, {}).status());
  return std::make_shared<const RewriteReductionBlock>();
}

}  // namespace tessera
