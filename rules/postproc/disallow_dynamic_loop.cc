// DisallowDynamicLoop (docs/reference/metaschedule.md §4.4): rejects a program with a loop whose
// extent is not a constant. Tiling, vectorization and thread binding all need constant extents, and
// the measured kernel would only be valid for one value of the symbolic extent anyway.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "rules/postproc.h"
#include "rules/rule/params.h"
#include "schedule/state.h"

namespace tessera {
namespace {

// Finds the first loop (in program order) with a non-constant extent and the first block
// under it.
class DynamicLoopFinder : public IRVisitor {
 public:
  std::string loop;
  std::string extent;
  std::string block;

 protected:
  void VisitStmt_(const ForNode* op) override {
    if (loop.empty() && AsConstInt(op->extent) == nullptr) {
      loop = op->loop_var.name();
      extent = PrintExpr(op->extent);
      std::vector<Stmt> blocks = op->body.as<BlockRealizeNode>() != nullptr
                                     ? std::vector<Stmt>{op->body}
                                     : ChildBlockRealizes(op->body);
      block = blocks.empty() ? "" : blocks[0].as<BlockRealizeNode>()->block->name;
    }
    IRVisitor::VisitStmt_(op);
  }
};

class DisallowDynamicLoop final : public Postproc {
 public:
  std::string name() const override { return "DisallowDynamicLoop"; }

  absl::Status Apply(Schedule* sch) const override {
    DynamicLoopFinder finder;
    finder.VisitStmt(sch->func().body());
    if (finder.loop.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("loop ", finder.loop, " (above block ",
                                                   finder.block, ") has the non-constant extent ",
                                                   finder.extent));
  }
};

}  // namespace

absl::StatusOr<PostprocPtr> NewDisallowDynamicLoop(const Target& /*target*/,
                                                   const nlohmann::json& params) {
  TESSERA_RETURN_IF_ERROR(RuleParams::Parse("DisallowDynamicLoop", params, {}).status());
  return std::make_shared<const DisallowDynamicLoop>();
}

}  // namespace tessera
