// Factories of the mutators (one file each under tuner/mutator/), and the defaults per target
// (docs/reference/metaschedule.md §3.6, 3.7).
#ifndef TESSERA_TUNER_MUTATORS_H_
#define TESSERA_TUNER_MUTATORS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "ir/target.h"
#include "tuner/mutator.h"

namespace tessera {

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

#endif  // TESSERA_TUNER_MUTATORS_H_
