// Design spaces: PostOrderApply runs the schedule rules over a function's blocks and returns
// the traced schedules whose sampling instructions are the tunable knobs
// (docs/reference/metaschedule.md §4.1). MakeCandidate turns one such trace (or a mutated one) into
// a measurable candidate: replay, EnterPostproc, postprocessors (docs/reference/metaschedule.md
// §2.6).
#ifndef TESSERA_TUNER_SPACE_GENERATOR_H_
#define TESSERA_TUNER_SPACE_GENERATOR_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/random.h"
#include "ir/function.h"
#include "ir/target.h"
#include "rules/postproc.h"
#include "rules/schedule_rule.h"
#include "schedule/schedule.h"
#include "tuner/mutator.h"

namespace tessera {

// What defines a task's search space on a target.
struct SpaceConfig {
  Target target;
  std::vector<ScheduleRulePtr> rules;
  std::vector<PostprocPtr> postprocs;
  std::vector<WeightedMutator> mutators;
};

// The default rules, postprocessors and mutators of `target`'s kind; `rule_params` as for
// DefaultScheduleRules (rules/registry.h): parameters of some default rules by rule name.
absl::StatusOr<SpaceConfig> DefaultSpaceConfig(
    const Target& target, const nlohmann::json& rule_params = nlohmann::json::object());

// PostOrderApply: one GetBlock per block (post-order, children first, the root block
// included), then for each rule in order, each block from last to first (root first): the
// rule's Apply, branching the list of schedules. A block annotated schedule_rule = "None" is
// skipped by every rule; schedule_rule = NAME restricts it to the rule NAME. Blocks a rule
// removed (inlined) are skipped. Errors name the rule and the block.
absl::StatusOr<std::vector<Schedule>> GenerateDesignSpaces(const PrimFunc& func,
                                                           const SpaceConfig& config,
                                                           int64_t seed);

// Why MakeCandidate failed: "replay" when the trace did not apply, else the postprocessor's
// name. Empty on success.
struct CandidateFailure {
  std::string stage;
  std::string message;
};

// A fresh schedule of `workload` (seeded with `seed`), `trace` replayed up to its
// EnterPostproc (with decisions erased first when `erase_decisions`, so every sampling
// instruction draws anew), EnterPostproc, then each postprocessor in order. On failure the
// status message is "<stage>: <reason>" and `failure` (if given) gets both parts.
absl::StatusOr<Schedule> MakeCandidate(const PrimFunc& workload, const Trace& trace,
                                       const std::vector<PostprocPtr>& postprocs, int64_t seed,
                                       bool erase_decisions, CandidateFailure* failure = nullptr);

// One random sample of a search space, drawn as MetaSchedule's ReplayTrace does
// (docs/reference/metaschedule.md §5.6): a design space (trace) chosen uniformly, its decisions
// erased, replayed with a seed forked from `rng`, then postprocessed (MakeCandidate). A draw the
// postprocessors reject is drawn again, up to `max_draws` draws in all (on GPUs most tilings break
// a thread or memory limit, so a sampler that gives up after one draw mostly returns nothing).
// `spaces` must not be empty.
struct SampledCandidate {
  size_t space = 0;  // index into `spaces` of the last draw
  int64_t seed = 0;  // the last draw's schedule seed
  absl::StatusOr<Schedule> schedule;
  CandidateFailure failure;  // why `schedule` is an error (the last draw's failure)
  int draws = 0;             // draws made
  std::vector<CandidateFailure> rejections;  // one per rejected draw
};
SampledCandidate SampleCandidate(const PrimFunc& workload, const std::vector<Trace>& spaces,
                                 const std::vector<PostprocPtr>& postprocs, Random* rng,
                                 int max_draws = 1);

// Draws per sample the tuner and `tessera sample` allow by default.
inline constexpr int kDefaultMaxDraws = 64;

}  // namespace tessera

#endif  // TESSERA_TUNER_SPACE_GENERATOR_H_
