// Mutators change one decision (or one annotation value) of a trace, for the evolutionary
// search. The result is truncated at EnterPostproc: postprocessors run again when the mutated
// trace is replayed (docs/reference/metaschedule.md §3.6). Mutators are immutable once made.
//
// Each mutator is one file under tuner/mutator/, made by a factory in tuner/mutators.h.
#ifndef TESSERA_TUNER_MUTATOR_H_
#define TESSERA_TUNER_MUTATOR_H_

#include <memory>
#include <optional>
#include <string>

#include "base/random.h"
#include "ir/function.h"
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

}  // namespace tessera

#endif  // TESSERA_TUNER_MUTATOR_H_
