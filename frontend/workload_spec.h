// Workloads as jobs name them: a spec "NAME[:K=V,...]" from the workload library
// (frontend/workloads.h), or a whole function in IR text (docs/ir-text.md) or IR JSON
// (docs/formats.md). Shared by the command line (`tessera tune GMM:M=512,...`) and the tuning
// server (SubmitJobRequest.workloads), so both build the very same function, name and label.
#ifndef TESSERA_FRONTEND_WORKLOAD_SPEC_H_
#define TESSERA_FRONTEND_WORKLOAD_SPEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/function.h"

namespace tessera {

struct SpecFunction {
  // "GMM(B=1,M=128,N=128,K=128) float32" ("... float16->float32" with a wider accumulator), or
  // the function's name
  std::string label;
  std::string stem;   // a base name for the function: "gmm", "c2d", or the function's name
  PrimFunc func;
};

// "NAME" or "NAME:K=V,..."; `shape` ("K=V,...") is the alternative to the inline shape (not
// both), `dtype` empty for the workload's first, `acc` empty for the dtype's own accumulator.
// The shape may also name them ("GMM:M=64,dtype=float16,acc=float32", the form a job's
// workload takes over RPC); given both ways they must agree. Errors as FindWorkload /
// MakeWorkload.
absl::StatusOr<SpecFunction> LoadWorkloadSpec(const std::string& spec,
                                              const std::string& shape = "",
                                              const std::string& dtype = "",
                                              const std::string& acc = "");

// A spec, IR text (starts with "@prim_func" or "def") or IR JSON (starts with '{').
// kInvalidArgument (or kNotFound for an unknown workload name) says what did not parse.
absl::StatusOr<SpecFunction> ParseWorkloadText(const std::string& text);

}  // namespace tessera

#endif  // TESSERA_FRONTEND_WORKLOAD_SPEC_H_
