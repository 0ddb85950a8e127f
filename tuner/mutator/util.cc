#include "tuner/mutator/util.h"

#include <cmath>

namespace tessera {
namespace mutator {
namespace {

// The probabilities of a SampleCategorical without the recorded index, and that index;
// nullopt when the instruction or its decision is malformed or nothing else can be drawn.
struct OtherWeights {
  std::vector<double> weights;
  int64_t current = 0;
};

std::optional<OtherWeights> OtherCandidates(const Trace& trace, size_t index) {
  if (index >= trace.size()) return std::nullopt;
  const Instruction& inst = trace.insts()[index];
  const InstValue& decision = trace.decision(index);
  if (!IsKind(inst, "SampleCategorical") || inst.attrs.size() != 2 || !inst.attrs[1].is_array() ||
      !decision.is_int()) {
    return std::nullopt;
  }
  OtherWeights out;
  out.current = decision.as_int();
  const std::vector<InstValue>& probs = inst.attrs[1].items();
  if (out.current < 0 || out.current >= static_cast<int64_t>(probs.size())) return std::nullopt;
  double total = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    const double p = probs[i].as_float();
    if (!std::isfinite(p) || p < 0) return std::nullopt;
    if (static_cast<int64_t>(i) == out.current) continue;
    out.weights.push_back(p);
    total += p;
  }
  if (total <= 0) return std::nullopt;
  return out;
}

}  // namespace

bool IsKind(const Instruction& inst, const char* kind_name) {
  return inst.kind != nullptr && std::string(inst.kind->name) == kind_name;
}

std::string StringAttr(const Instruction& inst, size_t i) {
  if (i >= inst.attrs.size() || inst.attrs[i].type() != InstValue::Type::kString) return "";
  return inst.attrs[i].as_string();
}

std::map<int64_t, size_t> CategoricalProducers(const Trace& trace) {
  std::map<int64_t, size_t> producers;
  for (size_t i = 0; i < trace.PostprocStart(); ++i) {
    const Instruction& inst = trace.insts()[i];
    if (!IsKind(inst, "SampleCategorical")) continue;
    for (const InstValue& out : inst.outputs) {
      if (out.is_rv() && out.rv_kind() == RVKind::kExpr) producers[out.rv_id()] = i;
    }
  }
  return producers;
}

std::optional<size_t> CategoricalProducerOf(const std::map<int64_t, size_t>& producers,
                                            const InstValue& value) {
  if (!value.is_rv() || value.rv_kind() != RVKind::kExpr) return std::nullopt;
  auto it = producers.find(value.rv_id());
  if (it == producers.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> RedrawCategorical(const Trace& trace, size_t index, Random* rng) {
  std::optional<OtherWeights> other = OtherCandidates(trace, index);
  if (!other) return std::nullopt;
  int64_t drawn = rng->SampleCategorical(other->weights);
  return drawn >= other->current ? drawn + 1 : drawn;
}

bool CanRedrawCategorical(const Trace& trace, size_t index) {
  return OtherCandidates(trace, index).has_value();
}

std::optional<Trace> RedrawOneCategorical(const Trace& trace, const std::vector<size_t>& indices,
                                          Random* rng) {
  if (indices.empty()) return std::nullopt;
  const size_t index = indices[rng->UniformInt(0, static_cast<int64_t>(indices.size()))];
  std::optional<int64_t> decision = RedrawCategorical(trace, index, rng);
  if (!decision) return std::nullopt;
  return trace.WithDecision(index, InstValue::Int(*decision), /*remove_postproc=*/true);
}

Trace WithInstruction(const Trace& trace, size_t index, Instruction inst) {
  Trace out;
  for (size_t i = 0; i < trace.PostprocStart(); ++i) {
    out.Append(i == index ? inst : trace.insts()[i], trace.decision(i));
  }
  return out;
}

}  // namespace mutator
}  // namespace tessera
