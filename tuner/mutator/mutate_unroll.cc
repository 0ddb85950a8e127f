// MutateUnroll (docs/reference/metaschedule.md §3.6): redraws the SampleCategorical whose value is
// the unroll step of a meta_schedule.unroll_explicit / unroll_implicit annotation.
#include <memory>
#include <set>
#include <vector>

#include "base/status_macros.h"
#include "rules/annotations.h"
#include "rules/rule/params.h"
#include "tuner/mutator.h"
#include "tuner/mutator/util.h"

namespace tessera {
namespace {

constexpr char kUnrollName[] = "MutateUnroll";

class MutateUnroll : public Mutator {
 public:
  std::string name() const override { return kUnrollName; }

  std::optional<Trace> Apply(const Trace& trace, const PrimFunc& workload,
                             Random* rng) const override {
    (void)workload;
    const std::map<int64_t, size_t> producers = mutator::CategoricalProducers(trace);
    std::set<size_t> samples;
    for (size_t i = 0; i < trace.PostprocStart(); ++i) {
      const Instruction& inst = trace.insts()[i];
      if (!mutator::IsKind(inst, "Annotate") || inst.inputs.size() != 2) continue;
      const std::string key = mutator::StringAttr(inst, 0);
      if (key != attr::kUnrollExplicit && key != attr::kUnrollImplicit) continue;
      std::optional<size_t> producer = mutator::CategoricalProducerOf(producers, inst.inputs[1]);
      if (producer && mutator::CanRedrawCategorical(trace, *producer)) samples.insert(*producer);
    }
    return mutator::RedrawOneCategorical(trace, {samples.begin(), samples.end()}, rng);
  }
};

}  // namespace

absl::StatusOr<MutatorPtr> NewMutateUnroll(const Target& target, const nlohmann::json& params) {
  (void)target;
  TESSERA_RETURN_IF_ERROR(RuleParams::Parse(kUnrollName, params, {}).status());
  return std::make_shared<MutateUnroll>();
}

}  // namespace tessera
