// The reference a compiled model is checked against (`tessera exec --check`, the tests): the
// model's functions run by the reference interpreter, or, above an interpreter budget, a naive
// build of its unfused, unscheduled graph run by the executor.
#ifndef TESSERA_MODEL_REFERENCE_H_
#define TESSERA_MODEL_REFERENCE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/fuse_ops.h"
#include "frontend/model_graph.h"
#include "ir/ndarray.h"
#include "model/load.h"

namespace tessera {

// Runs `fused` (unscheduled or scheduled functions) with the reference interpreter. `inputs` in
// model order; the outputs likewise. kInvalidArgument for a wrong number of inputs or a
// mismatching one; the interpreter's errors name the function.
absl::StatusOr<std::vector<NDArray>> InterpretModel(const Graph& graph, const FusedGraph& fused,
                                                    const std::vector<NDArray>& inputs);

// Not "ReferenceOutputs": worker/check.h has a struct of that name, and two types of one name in
// one program (absl::StatusOr<ReferenceOutputs> compiled twice with two layouts) break the
// one-definition rule; the unity build of cli/ (cli/CMakeLists.txt) said so first.
struct ModelReferenceOutputs {
  std::vector<NDArray> outputs;  // model order
  std::string how;               // "the interpreter on the unfused graph", or the naive build
};

// The unfused, unscheduled model at `model_path` (imported with `input_shapes`) on `inputs`:
// by the interpreter up to 2e8 FLOP per inference, above by a naive build (-O0, no OpenMP, one
// kernel per operator). Errors as LoadModel and InterpretModel; kInternal naming the operator
// whose naive build failed.
absl::StatusOr<ModelReferenceOutputs> ComputeReference(const std::string& model_path,
                                                       const InputShapes& input_shapes,
                                                       const std::vector<NDArray>& inputs);

}  // namespace tessera

#endif  // TESSERA_MODEL_REFERENCE_H_
