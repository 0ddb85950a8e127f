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
  std::string label;  // "GMM(B=1,M=128,N=128,K=128) float32", or the function's name
  std::string stem;   // a base name for the function: "gmm", "c2d", or the function's name
  PrimFunc func;
};

// "NAME" or "NAME:K=V,..."; `shape` ("K=V,...") is the alternative to the inline shape (not
// both), `dtype` empty for the workload's first. Errors as FindWorkload / MakeWorkload.
absl::StatusOr<SpecFunction> LoadWorkloadSpec(const std::string& spec,
                                              const std::string& shape = "",
                                              const std::string& dtype = "");

// A spec, IR text (starts with "@prim_func" or "def") or IR JSON (starts with '{').
// kInvalidArgument (or kNotFound for an unknown workload name) says what did not parse.
absl::StatusOr<SpecFunction> ParseWorkloadText(const std::string& text);

}  // namespace tessera

#endif  // TESSERA_FRONTEND_WORKLOAD_SPEC_H_
