// PostOrderApply and candidate construction (docs/reference/metaschedule.md §4.1, 2.6).
#include "tuner/space_generator.h"

#include <functional>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "rules/annotations.h"
#include "rules/registry.h"
#include "schedule/state.h"
#include "tuner/mutator.h"

namespace tessera {
namespace {

// Block names children first, program order among siblings, the root block last.
std::vector<std::string> PostOrderBlockNames(const PrimFunc& func) {
  std::vector<std::string> names;
  std::function<void(const Stmt&)> walk = [&](const Stmt& stmt) {
    for (const Stmt& child : ChildBlockRealizes(stmt)) {
      walk(child);
      names.push_back(child.as<BlockRealizeNode>()->block->name);
    }
  };
  walk(func.body());
  names.push_back(func.root_block()->name);
  return names;
}

// Whether `rule` may touch `block`: its schedule_rule annotation, if any, must name the rule
// ("None", naming no rule, leaves the block to none).
bool RuleMayApply(const Block& block, const ScheduleRule& rule) {
  auto it = block->annotations.find(attr::kScheduleRule);
  if (it == block->annotations.end()) return true;
  const std::string* only = std::get_if<std::string>(&it->second);
  return only != nullptr && *only == rule.name();
}

}  // namespace

absl::StatusOr<SpaceConfig> DefaultSpaceConfig(const Target& target,
                                               const nlohmann::json& rule_params) {
  SpaceConfig config;
  config.target = target;
  TESSERA_ASSIGN_OR_RETURN(config.rules, DefaultScheduleRules(target, rule_params));
  TESSERA_ASSIGN_OR_RETURN(config.postprocs, DefaultPostprocs(target));
  TESSERA_ASSIGN_OR_RETURN(config.mutators, DefaultMutators(target));
  return config;
}

absl::StatusOr<std::vector<Schedule>> GenerateDesignSpaces(const PrimFunc& func,
                                                           const SpaceConfig& config,
                                                           int64_t seed) {
  Schedule sch = Schedule::Create(func, seed);
  std::vector<BlockRV> blocks;
  for (const std::string& name : PostOrderBlockNames(func)) {
    TESSERA_ASSIGN_OR_RETURN(BlockRV rv, sch.GetBlock(name));
    blocks.push_back(rv);
  }
  // Every schedule shares the RV ids of `blocks` (Copy keeps the symbol table), so a work
  // item is a schedule and how many blocks of the list it has left, processed last first.
  std::vector<Schedule> result;
  result.push_back(std::move(sch));
  for (const ScheduleRulePtr& rule : config.rules) {
    std::vector<std::pair<Schedule, size_t>> stack;
    for (Schedule& s : result) stack.emplace_back(std::move(s), blocks.size());
    result.clear();
    while (!stack.empty()) {
      auto [s, left] = std::move(stack.back());
      stack.pop_back();
      if (left == 0) {
        result.push_back(std::move(s));
        continue;
      }
      const BlockRV block = blocks[left - 1];
      absl::StatusOr<Block> node = s.Get(block);
      if (!node.ok() || !RuleMayApply(*node, *rule)) {  // gone (inlined) or not for this rule
        stack.emplace_back(std::move(s), left - 1);
        continue;
      }
      const std::string block_name = (*node)->name;
      absl::StatusOr<std::vector<Schedule>> applied = rule->Apply(&s, block);
      if (!applied.ok()) {
        return absl::Status(applied.status().code(),
                            absl::StrCat("schedule rule ", rule->name(), " on block ", block_name,
                                         ": ", applied.status().message()));
      }
      for (Schedule& next : *applied) stack.emplace_back(std::move(next), left - 1);
    }
  }
  return result;
}

absl::StatusOr<Schedule> MakeCandidate(const PrimFunc& workload, const Trace& trace,
                                       const std::vector<PostprocPtr>& postprocs, int64_t seed,
                                       bool erase_decisions, CandidateFailure* failure) {
  auto fail = [&](const std::string& stage, const absl::Status& status) {
    if (failure != nullptr) *failure = {stage, std::string(status.message())};
    return absl::Status(status.code(), absl::StrCat(stage, ": ", status.message()));
  };
  Schedule sch = Schedule::Create(workload, seed);
  Trace::DecisionProvider erase = nullptr;
  if (erase_decisions) {
    erase = [](size_t, const Instruction&, const InstValue&) { return InstValue(); };
  }
  absl::Status replayed = trace.ApplyTo(&sch, /*remove_postproc=*/true, erase);
  if (!replayed.ok()) return fail("replay", replayed);
  sch.EnterPostproc();
  for (const PostprocPtr& postproc : postprocs) {
    absl::Status applied = postproc->Apply(&sch);
    if (!applied.ok()) return fail(postproc->name(), applied);
  }
  if (failure != nullptr) *failure = {};
  return sch;
}

SampledCandidate SampleCandidate(const PrimFunc& workload, const std::vector<Trace>& spaces,
                                 const std::vector<PostprocPtr>& postprocs, Random* rng,
                                 int max_draws) {
  TESSERA_CHECK(!spaces.empty()) << "SampleCandidate needs at least one design space";
  SampledCandidate sample;
  do {
    sample.space = static_cast<size_t>(rng->UniformInt(0, static_cast<int64_t>(spaces.size())));
    sample.seed = rng->ForkSeed();
    sample.failure = CandidateFailure();
    sample.schedule = MakeCandidate(workload, spaces[sample.space], postprocs, sample.seed,
                                    /*erase_decisions=*/true, &sample.failure);
    ++sample.draws;
    if (!sample.schedule.ok()) sample.rejections.push_back(sample.failure);
  } while (!sample.schedule.ok() && sample.draws < max_draws);
  return sample;
}

}  // namespace tessera
