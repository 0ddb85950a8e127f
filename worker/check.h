// Checking a built candidate against its reference: both run on the same seeded random
// inputs and every output parameter is compared (ir/ndarray.h Compare: tolerances by dtype,
// for 16-bit floats widened with the length of the reductions, worker/check.cc).
// The reference is the unscheduled function, computed on the host by the interpreter, or,
// above an interpreter budget, by a naive compilation of it (-O2 without contraction, its
// outer data-parallel loops in parallel: the serial results, faster). Used by
// `tessera run|schedule --check`, `tessera sample` and the tuner's verification of new bests.
#ifndef TESSERA_WORKER_CHECK_H_
#define TESSERA_WORKER_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/analysis.h"
#include "ir/function.h"
#include "ir/ndarray.h"
#include "ir/target.h"
#include "worker/builder.h"

namespace tessera {

// The seeded random inputs of a check: one array per parameter of `func` (in order), each
// filled with NDArray::FillRandom from one Random(seed), so the same seed gives the same data
// everywhere. Tests use it for their own seeded arguments.
std::vector<NDArray> RandomArgs(const PrimFunc& func, int64_t seed);

struct CheckOutcome {
  std::string reference;  // "interpreter" or "naive compiled C (-O2 strict, ...)"
  double max_abs_error = 0;
  double max_rel_error = 0;
  int64_t mismatches = 0;
  bool passed = false;
};

// Runs `built` (a build of `func` for `target`: a C artifact, or a CUDA module on GPU 0) once
// on inputs drawn from `seed` and compares its outputs with `reference`'s. A mismatch is a
// CheckOutcome with passed == false; errors are for what kept the check from running:
// different parameters (kInvalidArgument), a failed run of the candidate or the reference
// (kInternal, with the runner's message).
absl::StatusOr<CheckOutcome> CheckAgainstReference(const PrimFunc& func, const PrimFunc& reference,
                                                   const Target& target, const BuildResult& built,
                                                   int64_t seed, double timeout_sec);

// The reference's side of a check, computed once to check many candidates of one function:
// the seeded random inputs, and every parameter after the reference ran on them.
struct ReferenceOutputs {
  std::string reference;          // as CheckOutcome::reference
  std::vector<ArgInfo> params;    // of the reference, which candidates must share
  std::vector<int> written;       // indices of the parameters the reference writes
  double reduction_terms = 1;     // the most terms one of its reductions adds (tolerances)
  std::vector<NDArray> inputs;    // every parameter before the run
  std::vector<NDArray> outputs;   // every parameter after the run
};

// Runs `reference` (interpreter, or naive compiled C above the interpreter budget) on inputs
// drawn from `seed`; the compiled one may run for `timeout_sec` or the time its FLOPs take at
// 0.2 GFLOP/s, whichever is longer. Errors: a failed reference run (kInternal).
absl::StatusOr<ReferenceOutputs> ComputeReference(const PrimFunc& reference, int64_t seed,
                                                  double timeout_sec);

// As above, against outputs computed by ComputeReference (same seed for every candidate).
absl::StatusOr<CheckOutcome> CheckAgainstReference(const PrimFunc& func,
                                                   const ReferenceOutputs& reference,
                                                   const Target& target, const BuildResult& built,
                                                   double timeout_sec);

// Builds `func` with `builder` and checks it as above.
absl::StatusOr<CheckOutcome> BuildAndCheck(Builder* builder, const PrimFunc& func,
                                           const PrimFunc& reference, const Target& target,
                                           int64_t seed, double timeout_sec);

}  // namespace tessera

#endif  // TESSERA_WORKER_CHECK_H_
