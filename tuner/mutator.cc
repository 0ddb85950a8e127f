// The mutator name table and MetaSchedule's default mutator weights per target
// (docs/reference/metaschedule.md §3.7).
#include "tuner/mutator.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace tessera {
namespace {

using MutatorFactory = absl::StatusOr<MutatorPtr> (*)(const Target&, const nlohmann::json&);

struct MutatorEntry {
  const char* name;
  MutatorFactory make;
};

const std::vector<MutatorEntry>& MutatorTable() {
  static const std::vector<MutatorEntry> table = {
      {"MutateComputeLocation", NewMutateComputeLocation},
      {"MutateParallel", NewMutateParallel},
      {"MutateThreadBinding", NewMutateThreadBinding},
      {"MutateTileSize", NewMutateTileSize},
      {"MutateUnroll", NewMutateUnroll},
  };
  return table;
}

}  // namespace

absl::StatusOr<MutatorPtr> NewMutator(const std::string& name, const Target& target,
                                      const nlohmann::json& params) {
  for (const MutatorEntry& e : MutatorTable()) {
    if (name == e.name) return e.make(target, params);
  }
  return absl::NotFoundError(absl::StrCat("unknown mutator '", name,
                                          "' (known: ", absl::StrJoin(MutatorNames(), ", "), ")"));
}

std::vector<std::string> MutatorNames() {
  std::vector<std::string> names;
  for (const MutatorEntry& e : MutatorTable()) names.push_back(e.name);
  return names;
}

absl::StatusOr<std::vector<WeightedMutator>> DefaultMutators(const Target& target) {
  // Mutator::DefaultLLVM / DefaultCUDA (MutateParallel with max_jobs_per_core = 16).
  std::vector<std::pair<const char*, double>> weights;
  if (target.is_cpu()) {
    weights = {{"MutateTileSize", 0.9},
               {"MutateComputeLocation", 0.05},
               {"MutateUnroll", 0.03},
               {"MutateParallel", 0.02}};
  } else {
    weights = {{"MutateTileSize", 0.9}, {"MutateUnroll", 0.08}, {"MutateThreadBinding", 0.02}};
  }
  std::vector<WeightedMutator> mutators;
  for (const auto& [name, weight] : weights) {
    TESSERA_ASSIGN_OR_RETURN(MutatorPtr m, NewMutator(name, target));
    mutators.push_back({std::move(m), weight});
  }
  return mutators;
}

}  // namespace tessera
