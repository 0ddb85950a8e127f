// Mutators change one decision (or one annotation value) of a trace, for the evolutionary
// search. The result is truncated at EnterPostproc: postprocessors run again when the mutated
// trace is replayed (docs/reference/metaschedule.md §3.6). Mutators are immutable once made.
//
// Each mutator is one file under tuner/mutator/, made by a factory below.
#ifndef TESSERA_TUNER_MUTATOR_H_
#define TESSERA_TUNER_MUTATOR_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/random.h"
#include "ir/function.h"
#include "ir/target.h"
#include "schedule/trace.h"

namespace tessera {

class Mutator {
 public:
  virtual ~Mutator() = default;

  // The registered name, e.g. "MutateTileSize".
  virtual std::string name() const = 0;

  // A mutated copy of `trace` (a trace of `workload`, the unscheduled function), or nullopt
  // when the trace has nothing this mutator can change. The mutated trace replays on
  // `workload` (decisions that depend on the IR are chosen so that they stay valid).
  virtual std::optional<Trace> Apply(const Trace& trace, const PrimFunc& workload,
                                     Random* rng) const = 0;
};

using MutatorPtr = std::shared_ptr<const Mutator>;

// A mutator with its relative weight among the mutators of a target.
struct WeightedMutator {
  MutatorPtr mutator;
  double weight = 0;
};

// Factories of the mutators (one file each under tuner/mutator/), and the defaults per target
// (docs/reference/metaschedule.md §3.6, 3.7).

// Moves a factor between two tiles of a SamplePerfectTile decision, or changes the vector
// length of a cooperative fetch.
absl::StatusOr<MutatorPtr> NewMutateTileSize(const Target& target, const nlohmann::json& params);
// Changes the meta_schedule.parallel limit to one giving another fused-loop plan.
// Keys: max_jobs_per_core (default 16).
absl::StatusOr<MutatorPtr> NewMutateParallel(const Target& target, const nlohmann::json& params);
// Changes the sampled unroll step.
absl::StatusOr<MutatorPtr> NewMutateUnroll(const Target& target, const nlohmann::json& params);
// Changes a SampleComputeLocation decision to another valid location.
absl::StatusOr<MutatorPtr> NewMutateComputeLocation(const Target& target,
                                                    const nlohmann::json& params);
// Changes a sampled thread extent (the SampleCategorical feeding a Split bound to threadIdx.x).
absl::StatusOr<MutatorPtr> NewMutateThreadBinding(const Target& target,
                                                  const nlohmann::json& params);

// kNotFound for an unknown name (the message lists the known ones).
absl::StatusOr<MutatorPtr> NewMutator(const std::string& name, const Target& target,
                                      const nlohmann::json& params = nlohmann::json::object());
std::vector<std::string> MutatorNames();

// cpu: TileSize 0.9, ComputeLocation 0.05, Unroll 0.03, Parallel 0.02;
// cuda: TileSize 0.9, Unroll 0.08, ThreadBinding 0.02.
absl::StatusOr<std::vector<WeightedMutator>> DefaultMutators(const Target& target);

}  // namespace tessera

#endif  // TESSERA_TUNER_MUTATOR_H_
