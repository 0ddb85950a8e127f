// Trace reading shared by the mutators (docs/reference/metaschedule.md §3.6): which instructions
// are mutable lie before EnterPostproc, how a SampleCategorical's output feeds other instructions,
// and the "remove the current index, draw among the others" redraw of a categorical decision.
#ifndef TESSERA_TUNER_MUTATOR_UTIL_H_
#define TESSERA_TUNER_MUTATOR_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/random.h"
#include "schedule/instruction.h"
#include "schedule/trace.h"

namespace tessera {
namespace mutator {

// Whether `inst` is of the instruction kind named `kind_name` ("Split", ...).
bool IsKind(const Instruction& inst, const char* kind_name);

// The string attr `i` of `inst`, or "" when absent or not a string.
std::string StringAttr(const Instruction& inst, size_t i);

// For every ExprRV output of a SampleCategorical before EnterPostproc: its id -> the index of
// that instruction.
std::map<int64_t, size_t> CategoricalProducers(const Trace& trace);

// The SampleCategorical that produced `value` (an ExprRV input), or nullopt.
std::optional<size_t> CategoricalProducerOf(const std::map<int64_t, size_t>& producers,
                                            const InstValue& value);

// A new decision for SampleCategorical instruction `index`: an index other than the recorded
// one, drawn proportionally to the other candidates' probabilities. nullopt when the decision
// is missing or no other candidate has a positive probability.
std::optional<int64_t> RedrawCategorical(const Trace& trace, size_t index, Random* rng);

// Whether RedrawCategorical can succeed (consumes no randomness).
bool CanRedrawCategorical(const Trace& trace, size_t index);

// `trace` truncated at EnterPostproc with the decision of one of the SampleCategorical
// instructions `indices` (chosen uniformly) redrawn; nullopt when `indices` is empty or the
// redraw fails.
std::optional<Trace> RedrawOneCategorical(const Trace& trace, const std::vector<size_t>& indices,
                                          Random* rng);

// `trace` truncated at EnterPostproc, with instruction `index` replaced by `inst` (same
// decisions).
Trace WithInstruction(const Trace& trace, size_t index, Instruction inst);

}  // namespace mutator
}  // namespace tessera

#endif  // TESSERA_TUNER_MUTATOR_UTIL_H_
