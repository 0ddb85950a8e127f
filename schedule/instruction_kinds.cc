// The table of instruction kinds and how each is replayed: decode the instruction's inputs
// and attrs (already translated to the target schedule's RVs), call the primitive, and
// return its outputs. Malformed inputs (a wrong RV kind, a missing attr) are errors that
// Trace::ApplyTo prefixes with the instruction's index and kind.
#include "schedule/instruction_kinds.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "schedule/primitive/apply_util.h"
#include "schedule/schedule.h"

namespace tessera {
namespace {

using namespace apply_util;  // NOLINT: decoding helpers

Outputs ApplyGetBlock(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 0, attrs, 2));
  TESSERA_ASSIGN_OR_RETURN(std::string name, AsString(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(std::string func_name, AsString(attrs[1]));
  TESSERA_ASSIGN_OR_RETURN(BlockRV rv, sch->GetBlock(name, func_name));
  return Values{InstValue::Of(rv)};
}

Outputs ApplyGetLoops(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 0));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(block));
  return ToValues(loops);
}

Outputs ApplyGetChildBlocks(Schedule* sch, const Values& inputs, const Values& attrs,
                            const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 0));
  std::vector<BlockRV> blocks;
  if (inputs[0].is_rv() && inputs[0].rv_kind() == RVKind::kLoop) {
    TESSERA_ASSIGN_OR_RETURN(blocks, sch->GetChildBlocks(LoopRV{inputs[0].rv_id()}));
  } else {
    TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
    TESSERA_ASSIGN_OR_RETURN(blocks, sch->GetChildBlocks(block));
  }
  return ToValues(blocks);
}

Outputs ApplyGetProducers(Schedule* sch, const Values& inputs, const Values& attrs,
                          const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 0));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(std::vector<BlockRV> blocks, sch->GetProducers(block));
  return ToValues(blocks);
}

Outputs ApplyGetConsumers(Schedule* sch, const Values& inputs, const Values& attrs,
                          const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 0));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(std::vector<BlockRV> blocks, sch->GetConsumers(block));
  return ToValues(blocks);
}

Outputs ApplySampleCategorical(Schedule* sch, const Values& inputs, const Values& attrs,
                               const InstValue& decision) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 0, attrs, 2));
  std::vector<int64_t> candidates = attrs[0].AsIntArray();
  std::vector<double> probs;
  if (attrs[1].is_array()) {
    for (const InstValue& p : attrs[1].items()) probs.push_back(p.as_float());
  }
  TESSERA_ASSIGN_OR_RETURN(ExprRV rv, sch->SampleCategorical(candidates, probs, decision));
  return Values{InstValue::Of(rv)};
}

// The product limits of a SamplePerfectTile: inputs[1] holds each limit's prior factors
// ([[v, ...], ...]), attrs[2] each limit's [[positions], min, max, [later extents]].
absl::StatusOr<std::vector<TileProductLimit>> DecodeTileProductLimits(const InstValue& priors,
                                                                      const InstValue& bounds) {
  const absl::Status malformed = absl::InvalidArgumentError(
      "expected product limits as inputs [[prior v, ...], ...] and attrs "
      "[[[positions], min, max, [later extents]], ...] of the same length");
  if (!priors.is_array() || !bounds.is_array() || priors.items().size() != bounds.items().size()) {
    return malformed;
  }
  std::vector<TileProductLimit> limits;
  for (size_t k = 0; k < bounds.items().size(); ++k) {
    const InstValue& prior = priors.items()[k];
    const InstValue& bound = bounds.items()[k];
    if (!prior.is_array() || !bound.is_array() || bound.items().size() != 4 ||
        !bound.items()[0].is_array() || !bound.items()[3].is_array()) {
      return malformed;
    }
    TileProductLimit limit;
    for (const InstValue& v : prior.items()) {
      if (!v.is_rv() || v.rv_kind() != RVKind::kExpr) return malformed;
      limit.prior.push_back(ExprRV{v.rv_id()});
    }
    for (const InstValue& v : bound.items()[0].items()) {
      TESSERA_ASSIGN_OR_RETURN(int64_t position, AsInt(v));
      limit.positions.push_back(static_cast<int>(position));
    }
    TESSERA_ASSIGN_OR_RETURN(limit.min, AsInt(bound.items()[1]));
    TESSERA_ASSIGN_OR_RETURN(limit.max, AsInt(bound.items()[2]));
    for (const InstValue& v : bound.items()[3].items()) {
      TESSERA_ASSIGN_OR_RETURN(int64_t extent, AsInt(v));
      limit.later.push_back(extent);
    }
    limits.push_back(std::move(limit));
  }
  return limits;
}

Outputs ApplySamplePerfectTile(Schedule* sch, const Values& inputs, const Values& attrs,
                               const InstValue& decision) {
  // Without product limits: [loop] and [n, max_innermost_factor]; with them one more of each.
  const bool limited = inputs.size() == 2 && attrs.size() == 3;
  if (!limited) TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 2));
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, AsLoop(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t n, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t max_innermost, AsInt(attrs[1]));
  std::vector<TileProductLimit> limits;
  if (limited) {
    TESSERA_ASSIGN_OR_RETURN(limits, DecodeTileProductLimits(inputs[1], attrs[2]));
  }
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<ExprRV> rvs,
      sch->SamplePerfectTile(loop, static_cast<int>(n), max_innermost, limits, decision));
  return ToValues(rvs);
}

// [loop] and [n, max_innermost_factor, extent]; the extent is informational (the loop's own
// extent is used), it lets MutateTileSize judge padding without the IR.
Outputs ApplySamplePaddedTile(Schedule* sch, const Values& inputs, const Values& attrs,
                              const InstValue& decision) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 3));
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, AsLoop(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t n, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t max_innermost, AsInt(attrs[1]));
  TESSERA_ASSIGN_OR_RETURN(std::vector<ExprRV> rvs, sch->SamplePaddedTile(loop, static_cast<int>(n),
                                                                          max_innermost, decision));
  return ToValues(rvs);
}

template <absl::Status (Schedule::*kMethod)(LoopRV)>
Outputs ApplyLoopKind(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 0));
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, AsLoop(inputs[0]));
  TESSERA_RETURN_IF_ERROR((sch->*kMethod)(loop));
  return Values{};
}

Outputs ApplyBind(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 1));
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, AsLoop(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(std::string axis, AsString(attrs[0]));
  TESSERA_RETURN_IF_ERROR(sch->Bind(loop, axis));
  return Values{};
}

Outputs ApplyAnnotate(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 2, attrs, 1));
  TESSERA_ASSIGN_OR_RETURN(std::string key, AsString(attrs[0]));
  if (inputs[0].is_rv() && inputs[0].rv_kind() == RVKind::kLoop) {
    TESSERA_RETURN_IF_ERROR(sch->Annotate(LoopRV{inputs[0].rv_id()}, key, inputs[1]));
  } else {
    TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
    TESSERA_RETURN_IF_ERROR(sch->Annotate(block, key, inputs[1]));
  }
  return Values{};
}

Outputs ApplyUnannotate(Schedule* sch, const Values& inputs, const Values& attrs,
                        const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 1));
  TESSERA_ASSIGN_OR_RETURN(std::string key, AsString(attrs[0]));
  if (inputs[0].is_rv() && inputs[0].rv_kind() == RVKind::kLoop) {
    TESSERA_RETURN_IF_ERROR(sch->Unannotate(LoopRV{inputs[0].rv_id()}, key));
  } else {
    TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
    TESSERA_RETURN_IF_ERROR(sch->Unannotate(block, key));
  }
  return Values{};
}

Outputs ApplyEnterPostproc(Schedule* sch, const Values& inputs, const Values& attrs,
                           const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 0, attrs, 0));
  sch->EnterPostproc();
  return Values{};
}

}  // namespace

const InstructionKind kGetBlock = {"GetBlock", true, &ApplyGetBlock};
const InstructionKind kGetLoops = {"GetLoops", true, &ApplyGetLoops};
const InstructionKind kGetChildBlocks = {"GetChildBlocks", true, &ApplyGetChildBlocks};
const InstructionKind kGetProducers = {"GetProducers", true, &ApplyGetProducers};
const InstructionKind kGetConsumers = {"GetConsumers", true, &ApplyGetConsumers};
const InstructionKind kSampleCategorical = {"SampleCategorical", true, &ApplySampleCategorical};
const InstructionKind kSamplePerfectTile = {"SamplePerfectTile", true, &ApplySamplePerfectTile};
const InstructionKind kSamplePaddedTile = {"SamplePaddedTile", true, &ApplySamplePaddedTile};
const InstructionKind kParallel = {"Parallel", false, &ApplyLoopKind<&Schedule::Parallel>};
const InstructionKind kVectorize = {"Vectorize", false, &ApplyLoopKind<&Schedule::Vectorize>};
const InstructionKind kUnroll = {"Unroll", false, &ApplyLoopKind<&Schedule::Unroll>};
const InstructionKind kBind = {"Bind", false, &ApplyBind};
const InstructionKind kAnnotate = {"Annotate", false, &ApplyAnnotate};
const InstructionKind kUnannotate = {"Unannotate", false, &ApplyUnannotate};
const InstructionKind kEnterPostproc = {"EnterPostproc", false, &ApplyEnterPostproc};

const std::vector<const InstructionKind*>& AllInstructionKinds() {
  static const std::vector<const InstructionKind*> kinds = [] {
    std::vector<const InstructionKind*> all = {
        &kGetBlock,          &kGetLoops,         &kGetChildBlocks,
        &kGetProducers,      &kGetConsumers,     &kSampleCategorical,
        &kSamplePerfectTile, &kSamplePaddedTile, &kParallel,
        &kVectorize,         &kUnroll,           &kBind,
        &kAnnotate,          &kUnannotate,       &kEnterPostproc,
    };
    for (const auto* group :
         {&LoopTransformInstructionKinds(), &ComputeLocationInstructionKinds(),
          &CacheInstructionKinds(), &ReductionInstructionKinds(), &LayoutInstructionKinds(),
          &BlockizeTensorizeInstructionKinds(), &ShiftInt8ProductInstructionKinds()}) {
      all.insert(all.end(), group->begin(), group->end());
    }
    return all;
  }();
  return kinds;
}

const InstructionKind* FindInstructionKind(const std::string& name) {
  for (const InstructionKind* kind : AllInstructionKinds()) {
    if (name == kind->name) return kind;
  }
  return nullptr;
}

}  // namespace tessera
