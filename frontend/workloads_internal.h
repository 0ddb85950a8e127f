// Internal to the workload library: the table entry of one workload and helpers shared by
// the files that define them (workloads_{conv,matmul,norm}.cc).
#ifndef TESSERA_FRONTEND_WORKLOADS_INTERNAL_H_
#define TESSERA_FRONTEND_WORKLOADS_INTERNAL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "frontend/workloads.h"
#include "ir/dtype.h"
#include "ir/function.h"

namespace tessera {
namespace workloads_internal {

// Every parameter of the workload, defaults filled in and checked positive (padding may
// be 0) by MakeWorkload before a builder runs.
using ShapeMap = std::map<std::string, int64_t>;
// Builds the function; `dtype` is one of the workload's supported dtypes and `acc` what its
// reductions sum in: `dtype` itself, int32 for integers, or one of WorkloadInfo::accumulators
// the caller chose (MakeWorkload checks it; builders that list none ignore it). Consistency
// checks between parameters (kernel vs input, divisibility) are the builder's:
// kInvalidArgument with a message starting with the workload's name.
using Builder = absl::StatusOr<PrimFunc> (*)(const ShapeMap& shape, DataType dtype, DataType acc);

// `x` as `acc` (a cast where its dtype differs): a product's operands widened to the
// accumulator.
Expr Widened(const Expr& x, DataType acc);

// WorkloadInfo::accumulators of the products and convolutions: 16-bit floats may sum in float32,
// float32 may multiply at TF32 precision (MakeWorkload rounds the operands of their products).
inline const std::vector<std::string> kFloat32Accumulation = {"float32", "tf32"};

struct WorkloadDef {
  WorkloadInfo info;
  Builder build;
};

std::vector<WorkloadDef> ConvWorkloads();
std::vector<WorkloadDef> MatmulWorkloads();
std::vector<WorkloadDef> NormWorkloads();

// The name every workload's function carries (TVM's convention for single functions).
inline constexpr char kFunctionName[] = "main";

// `f` with the parameters `params` (indices) declared layout-free: a layer's weights, constant
// between calls, which a schedule may pack once (ir/prepack.h).
absl::StatusOr<PrimFunc> WithLayoutFree(absl::StatusOr<PrimFunc> f, std::vector<int64_t> params);

}  // namespace workloads_internal
}  // namespace tessera

#endif  // TESSERA_FRONTEND_WORKLOADS_INTERNAL_H_
