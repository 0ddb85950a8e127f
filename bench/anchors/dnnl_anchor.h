// oneDNN (Debian libdnnl-dev 2.6) as an anchor for bench_shapes (issue #13): convolutions
// through its convolution primitive and LINEAR through its inner product (weights reordered
// once, outside the timed calls), the other matrix products through dnnl_sgemm, on Tessera's own
// layouts (frontend/workloads: NHWC activations, HWIO / [K,K,C] conv weights, row-major
// matrices). LINEAR and C2D also in bfloat16 summed in float32 (`dtype` "bfloat16"), and GMM
// (dnnl_gemm_s8s8s32), LINEAR and C2D in int8 summed in int32: the arguments are float32 and
// converted once, outside the timed calls, and int8 products write their int32 results into the
// output's storage. Only
// bench_shapes and its test link it; the column says "not built" without it.
#ifndef TESSERA_BENCH_ANCHORS_DNNL_ANCHOR_H_
#define TESSERA_BENCH_ANCHORS_DNNL_ANCHOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tessera {
namespace anchors {

using ShapeParams = std::map<std::string, int64_t>;

// Whether oneDNN runs `workload` in `dtype` here: in float32 GMM (batch 1), LINEAR,
// DENSE_BIAS_RELU, GEMV, C2D, DEP; in bfloat16 (summed in float32) LINEAR and C2D; in int8 GMM,
// LINEAR and C2D.
bool DnnlSupports(const std::string& workload, const std::string& dtype = "float32");

// Runs `workload` once on `args`, given in the order and layouts of MakeWorkload's parameters
// (the output last). Starts oneDNN's OpenMP threads: only for a process that does not fork
// afterwards (a test, or the child DnnlSeconds starts).
absl::Status DnnlRun(const std::string& workload, const ShapeParams& params,
                     const std::vector<float*>& args, const std::string& dtype = "float32");

// Seconds per call of `workload` on random data: the median of 5 repeats, each a loop of at
// least 200 ms, after a warm-up. Conv weights are reordered to oneDNN's preferred layout once,
// outside the loop (as a framework does at load time). Runs in a child process with `threads`
// OpenMP threads, because OpenMP's thread pool does not survive the forks of the runners.
absl::StatusOr<double> DnnlSeconds(const std::string& workload, const ShapeParams& params,
                                   int threads, const std::string& dtype = "float32");

}  // namespace anchors
}  // namespace tessera

#endif  // TESSERA_BENCH_ANCHORS_DNNL_ANCHOR_H_
