// MutateThreadBinding (docs/reference/metaschedule.md §3.6): redraws a sampled thread extent, i.e.
// the SampleCategorical v of the pattern
//   v = SampleCategorical(...); l_out, l_in = Split(l, [None, v]); Bind(l_in, "threadIdx.x")
// that CrossThreadReduction and AutoBind emit.
#include <memory>
#include <set>
#include <vector>

#include "base/status_macros.h"
#include "rules/rule/params.h"
#include "tuner/mutator.h"
#include "tuner/mutator/util.h"

namespace tessera {
namespace {

constexpr char kThreadBindingName[] = "MutateThreadBinding";

class MutateThreadBinding : public Mutator {
 public:
  std::string name() const override { return kThreadBindingName; }

  std::optional<Trace> Apply(const Trace& trace, const PrimFunc& workload,
                             Random* rng) const override {
    (void)workload;
    const std::map<int64_t, size_t> producers = mutator::CategoricalProducers(trace);
    std::map<int64_t, size_t> split_inner;  // inner loop RV id -> its sample instruction
    std::set<size_t> samples;
    for (size_t i = 0; i < trace.PostprocStart(); ++i) {
      const Instruction& inst = trace.insts()[i];
      if (mutator::IsKind(inst, "Split") && inst.inputs.size() == 3 && inst.inputs[1].is_none() &&
          inst.outputs.size() == 2) {
        std::optional<size_t> producer = mutator::CategoricalProducerOf(producers, inst.inputs[2]);
        if (producer) split_inner[inst.outputs[1].rv_id()] = *producer;
      } else if (mutator::IsKind(inst, "Bind") && inst.inputs.size() == 1 &&
                 inst.inputs[0].is_rv() && inst.inputs[0].rv_kind() == RVKind::kLoop &&
                 mutator::StringAttr(inst, 0) == "threadIdx.x") {
        auto it = split_inner.find(inst.inputs[0].rv_id());
        if (it != split_inner.end() && mutator::CanRedrawCategorical(trace, it->second)) {
          samples.insert(it->second);
        }
      }
    }
    return mutator::RedrawOneCategorical(trace, {samples.begin(), samples.end()}, rng);
  }
};

}  // namespace

absl::StatusOr<MutatorPtr> NewMutateThreadBinding(const Target& target,
                                                  const nlohmann::json& params) {
  (void)target;
  TESSERA_RETURN_IF_ERROR(RuleParams::Parse(kThreadBindingName, params, {}).status());
  return std::make_shared<MutateThreadBinding>();
}

}  // namespace tessera
