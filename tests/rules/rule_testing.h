// Targets, workloads and checks shared by the schedule rule tests (tests/rules/rule/*_test.cc,
// tests/rules/registry_test.cc, tests/rules/thread_bind_test.cc).
#ifndef TESSERA_TESTS_RULES_RULE_TESTING_H_
#define TESSERA_TESTS_RULES_RULE_TESTING_H_

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/check.h"
#include "frontend/workloads.h"
#include "rules/analysis.h"
#include "rules/schedule_rule.h"
#include "schedule/schedule.h"
#include "schedule/state.h"

namespace tessera {
namespace rule_testing {

inline Target Cpu() { return *Target::Parse("cpu -cores=4"); }
inline Target Cuda() { return *Target::Parse("cuda -arch=sm_80"); }

// A workload at an explicit (small) shape.
inline PrimFunc Workload(const std::string& name, const std::map<std::string, int64_t>& shape) {
  absl::StatusOr<PrimFunc> func = MakeWorkload(name, shape);
  TESSERA_CHECK(func.ok()) << func.status();
  return *func;
}

// Reductions with much more reduction than spatial extent, where the reduction rules apply.
inline PrimFunc ReductionWorkload(const std::string& name) {
  if (name == "REDUCE_SUM") return Workload(name, {{"M", 8}, {"N", 64}});
  if (name == "GEMV") return Workload(name, {{"M", 8}, {"K", 64}});
  if (name == "SFM") return Workload(name, {{"M", 4}, {"N", 64}});
  if (name == "NRM") return Workload(name, {{"B", 1}, {"M", 8}, {"N", 16}});
  TESSERA_CHECK(false) << "no reduction shape for " << name;
  return PrimFunc();
}

inline ScheduleRulePtr Make(absl::StatusOr<ScheduleRulePtr> rule) {
  TESSERA_CHECK(rule.ok()) << rule.status();
  return *rule;
}

// Applies `rule` to block `block` of `*sch`.
inline std::vector<Schedule> ApplyAt(const ScheduleRule& rule, Schedule* sch,
                                     const std::string& block) {
  absl::StatusOr<BlockRV> rv = sch->GetBlock(block);
  TESSERA_CHECK(rv.ok()) << rv.status();
  absl::StatusOr<std::vector<Schedule>> result = rule.Apply(sch, *rv);
  TESSERA_CHECK(result.ok()) << result.status();
  return *result;
}

inline bool HasBlock(const PrimFunc& func, const std::string& name) {
  return FindBlockPath(func, name).ok();
}

inline int CountInsts(const Schedule& sch, const std::string& kind) {
  int n = 0;
  for (const Instruction& inst : sch.trace().insts()) n += kind == inst.kind->name;
  return n;
}

inline Block GetBlock(const PrimFunc& func, const std::string& name) {
  absl::StatusOr<StmtPath> path = FindBlockPath(func, name);
  TESSERA_CHECK(path.ok()) << path.status();
  return path->back().as<BlockRealizeNode>()->block;
}

// The thread tags of the loops around block `name` (up to its enclosing block), outermost first.
inline std::vector<std::string> LoopTags(const PrimFunc& func, const std::string& name) {
  std::vector<std::string> tags;
  for (const Stmt& loop : LoopsOnPath(*FindBlockPath(func, name))) {
    tags.push_back(loop.as<ForNode>()->thread_tag);
  }
  return tags;
}

inline bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// True when a reduction loop of block `name` in `sch` is bound to threadIdx.x.
inline bool ReductionBoundToThreadX(Schedule* sch, const std::string& name) {
  BlockRV block = *sch->GetBlock(name);
  std::vector<LoopRV> loops = *sch->GetLoops(block);
  std::vector<std::optional<IterKind>> kinds = LoopIterKinds(*sch, block);
  for (size_t i = 0; i < loops.size(); ++i) {
    if (kinds[i] == IterKind::kReduction && (*sch->Get(loops[i]))->thread_tag == "threadIdx.x") {
      return true;
    }
  }
  return false;
}

}  // namespace rule_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_RULES_RULE_TESTING_H_
