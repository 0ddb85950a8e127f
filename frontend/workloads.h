// The workload library: named tensor programs with default shapes, every shape parameter
// settable, in the dtypes each supports. Names follow the MetaSchedule paper (GMM, C1D, C2D,
// C3D, DEP, DIL, GRP, T2D, CAP, NRM, SFM, CBR, TBG) plus GEMV, DENSE_BIAS_RELU, LAYER_NORM,
// RMS_NORM, TRANSPOSE, REDUCE_SUM and ELEMENTWISE.
#ifndef TESSERA_FRONTEND_WORKLOADS_H_
#define TESSERA_FRONTEND_WORKLOADS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/function.h"

namespace tessera {

struct WorkloadParam {
  std::string name;       // e.g. "M", "batch", "stride"
  int64_t default_value;
  std::string doc;        // one line
};

struct WorkloadInfo {
  std::string name;         // "GMM"
  std::string description;  // one line, e.g. "batched matrix multiply C[b,i,j] = sum_k A*B"
  std::vector<WorkloadParam> params;
  std::vector<std::string> dtypes;  // supported; the first is the default
  // What its reductions may sum in instead of the dtype, for float16 and bfloat16 (e.g.
  // "float32": the operands widened before multiplying, the result in float32), or for float32
  // "tf32" (kTf32); empty: the dtype itself (int32 for int8).
  std::vector<std::string> accumulators = {};
};

// All workloads, in a fixed order.
const std::vector<WorkloadInfo>& ListWorkloads();

// kNotFound for an unknown name (listing the known ones); kInvalidArgument for an unknown
// shape parameter, a non-positive or inconsistent value (e.g. a kernel larger than its
// padded input), a dtype the workload does not support, or an accumulator `acc` (empty: the
// dtype's own) that is neither the dtype nor one of its accumulators for a 16-bit float dtype
// (nor "tf32" for a float32 product or convolution). Names are case-insensitive.
absl::StatusOr<WorkloadInfo> FindWorkload(const std::string& name);
absl::StatusOr<PrimFunc> MakeWorkload(const std::string& name,
                                      const std::map<std::string, int64_t>& shape = {},
                                      const std::string& dtype = "", const std::string& acc = "");

// The accumulator name of float32 products and convolutions multiplied at TF32 precision: both
// operands of each product rounded to TF32 (round_tf32, ir/expr.h), summed in float32 (what
// tensor cores do with float32 inputs; an explicit choice, never made for plain float32).
inline constexpr char kTf32[] = "tf32";

// How labels and tables name a dtype with its accumulator: "float16->float32" where `acc` is
// set and differs from `dtype`, "tf32" for float32 multiplied at TF32, else `dtype`.
std::string PrecisionName(const std::string& dtype, const std::string& acc);

// Parses "M=64,N=32" into a map. kInvalidArgument on malformed text.
absl::StatusOr<std::map<std::string, int64_t>> ParseShapeOverrides(const std::string& text);

}  // namespace tessera

#endif  // TESSERA_FRONTEND_WORKLOADS_H_
