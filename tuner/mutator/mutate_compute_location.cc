// MutateComputeLocation (docs/reference/metaschedule.md §3.6): replays the trace on the workload
// and, at every SampleComputeLocation, asks the schedule as it is at that point which locations are
// valid; one instruction with an alternative to its recorded decision is picked uniformly, and
// one of its alternatives uniformly. Unlike the reference, a choice whose trace no longer
// replays (later instructions depend on the moved block) is replaced by another one.
#include <memory>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "rules/rule/params.h"
#include "schedule/schedule.h"
#include "tuner/mutator.h"
#include "tuner/mutator/util.h"

namespace tessera {
namespace {

constexpr char kName[] = "MutateComputeLocation";

struct Candidate {
  size_t index;                       // the SampleComputeLocation instruction
  std::vector<int64_t> alternatives;  // valid decisions other than the recorded one
};

class MutateComputeLocation : public Mutator {
 public:
  std::string name() const override { return kName; }

  std::optional<Trace> Apply(const Trace& trace, const PrimFunc& workload,
                             Random* rng) const override {
    std::optional<std::vector<Candidate>> candidates = FindCandidates(trace, workload, rng);
    if (!candidates) return std::nullopt;
    // A new location can change what later instructions see (an inlined block has no loops,
    // GetConsumers finds other blocks): a choice whose trace does not replay is dropped and
    // another drawn.
    while (!candidates->empty()) {
      const int64_t ci = rng->UniformInt(0, static_cast<int64_t>(candidates->size()));
      Candidate& c = (*candidates)[ci];
      const int64_t li = rng->UniformInt(0, static_cast<int64_t>(c.alternatives.size()));
      Trace mutated =
          trace.WithDecision(c.index, InstValue::Int(c.alternatives[li]), /*remove_postproc=*/true);
      Schedule check = Schedule::Create(workload, rng->ForkSeed());
      if (mutated.ApplyTo(&check, /*remove_postproc=*/true).ok()) return mutated;
      c.alternatives.erase(c.alternatives.begin() + li);
      if (c.alternatives.empty()) candidates->erase(candidates->begin() + ci);
    }
    return std::nullopt;
  }

 private:
  // nullopt when the trace does not replay on `workload`.
  static std::optional<std::vector<Candidate>> FindCandidates(const Trace& trace,
                                                              const PrimFunc& workload,
                                                              Random* rng) {
    // Where each RV of `trace` was created: (instruction, output position).
    std::map<std::pair<RVKind, int64_t>, std::pair<size_t, size_t>> origin;
    for (size_t i = 0; i < trace.PostprocStart(); ++i) {
      const std::vector<InstValue>& outputs = trace.insts()[i].outputs;
      for (size_t k = 0; k < outputs.size(); ++k) {
        origin[{outputs[k].rv_kind(), outputs[k].rv_id()}] = {i, k};
      }
    }
    Schedule sch = Schedule::Create(workload, rng->ForkSeed());
    std::vector<Candidate> candidates;
    bool lost_track = false;
    auto provider = [&](size_t index, const Instruction& inst,
                        const InstValue& decision) -> InstValue {
      if (!mutator::IsKind(inst, "SampleComputeLocation") || !decision.is_int() ||
          inst.inputs.size() != 1 || !inst.inputs[0].is_rv()) {
        return decision;
      }
      // The replay records one instruction per instruction replayed, so the block RV in `sch`
      // is the output at the same position of the re-recorded trace.
      auto it = origin.find({inst.inputs[0].rv_kind(), inst.inputs[0].rv_id()});
      if (sch.trace().size() != index || it == origin.end()) {
        lost_track = true;
        return decision;
      }
      const InstValue& block = sch.trace().insts()[it->second.first].outputs[it->second.second];
      absl::StatusOr<std::vector<int64_t>> locations =
          sch.ComputeLocationCandidates(BlockRV{block.rv_id()});
      if (!locations.ok()) return decision;  // the replay of this instruction fails next
      Candidate c{index, {}};
      for (int64_t loc : *locations) {
        if (loc != decision.as_int()) c.alternatives.push_back(loc);
      }
      if (!c.alternatives.empty()) candidates.push_back(std::move(c));
      return decision;
    };
    if (!trace.ApplyTo(&sch, /*remove_postproc=*/true, provider).ok() || lost_track) {
      return std::nullopt;
    }
    return candidates;
  }
};

}  // namespace

absl::StatusOr<MutatorPtr> NewMutateComputeLocation(const Target& target,
                                                    const nlohmann::json& params) {
  (void)target;
  TESSERA_RETURN_IF_ERROR(RuleParams::Parse(kName, params, {}).status());
  return std::make_shared<MutateComputeLocation>();
}

}  // namespace tessera
