// The instruction kinds of the compute-location primitives (compute_at.cc, compute_inline.cc,
// sample_compute_location.cc): how each is replayed from a trace.

#include <string>

#include "base/status_macros.h"
#include "schedule/instruction_kinds.h"
#include "schedule/primitive/apply_util.h"
#include "schedule/primitive/compute_location_internal.h"
#include "schedule/schedule.h"

namespace tessera {
namespace {

using namespace apply_util;  // NOLINT: decoding helpers

Outputs ApplyComputeAt(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 2, attrs, 2));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, AsLoop(inputs[1]));
  TESSERA_ASSIGN_OR_RETURN(int64_t preserve, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t index, AsInt(attrs[1]));
  TESSERA_RETURN_IF_ERROR(sch->ComputeAt(block, loop, preserve != 0, static_cast<int>(index)));
  return Values{};
}

Outputs ApplyReverseComputeAt(Schedule* sch, const Values& inputs, const Values& attrs,
                              const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 2, attrs, 2));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, AsLoop(inputs[1]));
  TESSERA_ASSIGN_OR_RETURN(int64_t preserve, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t index, AsInt(attrs[1]));
  TESSERA_RETURN_IF_ERROR(
      sch->ReverseComputeAt(block, loop, preserve != 0, static_cast<int>(index)));
  return Values{};
}

Outputs ApplyComputeInline(Schedule* sch, const Values& inputs, const Values& attrs,
                           const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 0));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_RETURN_IF_ERROR(sch->ComputeInline(block));
  return Values{};
}

Outputs ApplyReverseComputeInline(Schedule* sch, const Values& inputs, const Values& attrs,
                                  const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 0));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_RETURN_IF_ERROR(sch->ReverseComputeInline(block));
  return Values{};
}

Outputs ApplySampleComputeLocation(Schedule* sch, const Values& inputs, const Values& attrs,
                                   const InstValue& decision) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 0));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, sch->SampleComputeLocation(block, decision));
  return Values{InstValue::Of(loop)};
}

}  // namespace

const InstructionKind kComputeAt = {"ComputeAt", false, &ApplyComputeAt};
const InstructionKind kReverseComputeAt = {"ReverseComputeAt", false, &ApplyReverseComputeAt};
const InstructionKind kComputeInline = {"ComputeInline", false, &ApplyComputeInline};
const InstructionKind kReverseComputeInline = {"ReverseComputeInline", false,
                                               &ApplyReverseComputeInline};
const InstructionKind kSampleComputeLocation = {"SampleComputeLocation", true,
                                                &ApplySampleComputeLocation};

const std::vector<const InstructionKind*>& ComputeLocationInstructionKinds() {
  static const std::vector<const InstructionKind*> kinds = {&kComputeAt, &kReverseComputeAt,
                                                            &kComputeInline, &kReverseComputeInline,
                                                            &kSampleComputeLocation};
  return kinds;
}

}  // namespace tessera
