// Internals of the compute-location primitives, shared by compute_at.cc (ComputeAt,
// ReverseComputeAt), compute_inline.cc (ComputeInline, ReverseComputeInline),
// sample_compute_location.cc (SampleComputeLocation) and compute_location.cc (their instruction
// kinds): the IR-to-IR cores and the kinds the primitives record.
#ifndef TESSERA_SCHEDULE_PRIMITIVE_COMPUTE_LOCATION_INTERNAL_H_
#define TESSERA_SCHEDULE_PRIMITIVE_COMPUTE_LOCATION_INTERNAL_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/function.h"
#include "schedule/instruction.h"

namespace tessera {

// Defined with their replay functions in compute_location.cc.
extern const InstructionKind kComputeAt;
extern const InstructionKind kReverseComputeAt;
extern const InstructionKind kComputeInline;
extern const InstructionKind kReverseComputeInline;
extern const InstructionKind kSampleComputeLocation;

namespace primitive {

// Moves block `block_name` under the loop of `loop_var`: compute_at (a producer under a loop of
// its consumers) or, with `reverse`, reverse_compute_at (a consumer under a loop of its
// producers). kInvalidArgument naming the primitive when the move is not legal.
absl::StatusOr<PrimFunc> ComputeAtImpl(const PrimFunc& func, const std::string& block_name,
                                       const Var& loop_var, bool reverse, bool preserve_unit_loops,
                                       int index);

// Inlines the elementwise block `block_name` into its consumers (compute_inline).
absl::StatusOr<PrimFunc> ComputeInlineImpl(const PrimFunc& func, const std::string& block_name);

// Inlines the elementwise block `block_name` into its single producer (reverse_compute_inline).
absl::StatusOr<PrimFunc> ReverseComputeInlineImpl(const PrimFunc& func,
                                                  const std::string& block_name);

}  // namespace primitive
}  // namespace tessera

#endif  // TESSERA_SCHEDULE_PRIMITIVE_COMPUTE_LOCATION_INTERNAL_H_
