// AutoInline (docs/reference/metaschedule.md §4.3.3): inline elementwise blocks into their
// consumers, or (GPU) a consumer into its single producer.
// Legality is the primitives' own: ComputeInline / ReverseComputeInline validate and leave
// the schedule unchanged when they fail, so the rule simply tries them in order.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/functor.h"
#include "rules/analysis.h"
#include "rules/annotations.h"
#include "rules/rule/params.h"
#include "rules/schedule_rule.h"

namespace tessera {
namespace {

struct AutoInlineConfig {
  bool into_producer = false;
  bool into_consumer = true;
  bool inline_const_tensor = true;
  bool disallow_if_then_else = true;
  bool require_injective = true;
  bool require_ordered = true;
  std::vector<CallOp> disallow_op;
};

// True when the block (with its realize) calls one of `ops`.
bool CallsAnyOf(const Stmt& realize, const std::vector<CallOp>& ops) {
  bool found = false;
  PostOrderVisitExprs(realize, [&](const Expr& e) {
    if (const CallNode* call = e.as<CallNode>()) {
      for (CallOp op : ops) found |= call->op == op && op != CallOp::kExtern;
    }
  });
  return found;
}

// True when the block contains an IfThenElse, a Select, or has a non-trivial predicate.
bool HasIfThenElse(const Stmt& realize) {
  const BlockRealizeNode* op = realize.as<BlockRealizeNode>();
  if (op->predicate.defined() && !IsConstInt(op->predicate, 1)) return true;
  bool found = false;
  PostOrderVisitStmts(op->block,
                      [&](const Stmt& s) { found |= s.as<IfThenElseNode>() != nullptr; });
  PostOrderVisitExprs(op->block, [&](const Expr& e) { found |= e.as<SelectNode>() != nullptr; });
  return found;
}

bool InlineDisabled(const Block& block) {
  auto it = block->annotations.find(attr::kInlineRule);
  if (it == block->annotations.end()) return false;
  const std::string* value = std::get_if<std::string>(&it->second);
  return value != nullptr && *value == "disable";
}

class AutoInline : public ScheduleRule {
 public:
  explicit AutoInline(AutoInlineConfig config) : config_(std::move(config)) {}
  std::string name() const override { return "AutoInline"; }

  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block_rv) const override {
    TESSERA_ASSIGN_OR_RETURN(Block block, sch->Get(block_rv));
    TESSERA_ASSIGN_OR_RETURN(StmtPath path, sch->GetPath(block_rv));
    if (path.size() == 1 || block->writes.size() != 1) return std::vector<Schedule>{*sch};
    TESSERA_ASSIGN_OR_RETURN(std::vector<BlockRV> consumers, sch->GetConsumers(block_rv));
    // A constant tensor: inline into its consumers regardless of the other conditions.
    if (config_.inline_const_tensor && block->reads.empty() && !consumers.empty() &&
        sch->ComputeInline(block_rv).ok()) {
      return std::vector<Schedule>{*sch};
    }
    if (!Allowed(*sch, block, path.back())) return std::vector<Schedule>{*sch};
    if (config_.into_consumer && !consumers.empty() && sch->ComputeInline(block_rv).ok()) {
      return std::vector<Schedule>{*sch};
    }
    if (config_.into_producer) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<BlockRV> producers, sch->GetProducers(block_rv));
      if (producers.size() == 1) {
        TESSERA_ASSIGN_OR_RETURN(Block producer, sch->Get(producers[0]));
        if (IsSpatialBlock(producer) && producer->annotations.count(attr::kAutoTensorize) == 0) {
          // Fails (leaving the schedule unchanged) when the consumer cannot be inlined.
          (void)sch->ReverseComputeInline(block_rv);
        }
      }
    }
    return std::vector<Schedule>{*sch};
  }

 private:
  // Conditions 3 (skipped for purely spatial functions) and 4 of docs/reference/metaschedule.md
  // §4.3.3.
  bool Allowed(const Schedule& sch, const Block& block, const Stmt& realize) const {
    if (InlineDisabled(block)) return false;
    if (IsSpatialFunc(sch.func())) return true;
    if (!config_.disallow_op.empty() && CallsAnyOf(realize, config_.disallow_op)) return false;
    if (config_.disallow_if_then_else && HasIfThenElse(realize)) return false;
    if (config_.require_injective || config_.require_ordered) {
      for (const BufferRegion& read : block->reads) {
        ReadWritePattern pattern = AnalyzeReadWritePattern(read, block->writes[0]);
        if (config_.require_injective && !pattern.injective) return false;
        if (config_.require_ordered && !pattern.ordered) return false;
      }
    }
    return true;
  }

  AutoInlineConfig config_;
};

}  // namespace

absl::StatusOr<ScheduleRulePtr> NewAutoInline(const Target& target, const nlohmann::json& params) {
  TESSERA_ASSIGN_OR_RETURN(
      RuleParams p, RuleParams::Parse("AutoInline", params,
                                      {"into_producer", "into_consumer", "inline_const_tensor",
                                       "disallow_if_then_else", "require_injective",
                                       "require_ordered", "disallow_op"}));
  const bool cpu = target.is_cpu();
  AutoInlineConfig c;
  TESSERA_ASSIGN_OR_RETURN(c.into_producer, p.Bool("into_producer", !cpu));
  TESSERA_ASSIGN_OR_RETURN(c.into_consumer, p.Bool("into_consumer", true));
  TESSERA_ASSIGN_OR_RETURN(c.inline_const_tensor, p.Bool("inline_const_tensor", true));
  TESSERA_ASSIGN_OR_RETURN(c.disallow_if_then_else, p.Bool("disallow_if_then_else", cpu));
  TESSERA_ASSIGN_OR_RETURN(c.require_injective, p.Bool("require_injective", cpu));
  TESSERA_ASSIGN_OR_RETURN(c.require_ordered, p.Bool("require_ordered", cpu));
  std::vector<std::string> default_ops;
  if (cpu) default_ops.push_back("exp");
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> ops, p.StringList("disallow_op", default_ops));
  for (const std::string& name : ops) {
    CallOp op;
    if (!ParseCallOp(name, &op)) {
      return p.Error("disallow_op", absl::StrCat("names an unknown operator '", name, "'"));
    }
    c.disallow_op.push_back(op);
  }
  return std::make_shared<const AutoInline>(std::move(c));
}

}  // namespace tessera
